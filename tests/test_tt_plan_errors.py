"""The Tenstorrent planner's verdict: the first failure of the run in tt-metal's words,
with the operation and the buffers responsible, and planning stopped there. The
published strings are reproduced end to end by programs that reach the same state
(TENSTORRENT-NOTES.md (h) H4)."""

from __future__ import annotations

import pytest

from tileplan.errors import ModelError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.planned import UPLOAD, FailureKind

from tt_plan_support import Builder, cb_clash, cb_grow, falcon_8044, tile, too_many_shards

N150_2026 = load_device("n150", version="2026-04-21")


def test_tt_mlir_8044_fragmentation_out_of_memory_end_to_end() -> None:
    """tt-mlir #8044 (Falcon3-7B, n150): 417,792 B a bank allocated in two blocks around a
    522,240-B hole (a freed tensor), 389,856 B free at the bottom; a matmul's output of 48
    height shards of 270 tiles (552,960 B) fits in neither though 912,096 B are free."""
    plan = plan_tt(falcon_8044().program(), N150_2026)
    v = plan.verdict
    assert v.message == (
        "Out of Memory: Not enough space to allocate 26542080 B L1 buffer across 48 banks, where each bank needs to "
        "store 552960 B, but bank size is 1329888 B (allocated: 417792 B, free: 912096 B, largest free block: "
        "522240 B)")
    assert (v.kind, v.buffer_type, v.op, v.request_name) == (FailureKind.FRAGMENTATION, BufferType.L1, 1, "lm.matmul")
    assert [plan.buffers[i].name for i in v.responsible] == ["a", "b"]
    assert len(plan.ops) == 2 and plan.ops[1].programs == ()  # stopped before the matmul's program ran
    assert len(plan.programs) == 1


def test_bloom_dram_out_of_memory_in_each_builds_words() -> None:
    """tt-xla #1957 (Bloom): the 250,880 x 2,048 bf16 embedding, 1,027,604,480 B over 12
    DRAM banks, 85,635,072 B a bank; with 102,400,000 B x 10 already uploaded it does not
    fit: capacity. A 2025-10 build prints 'bank size is only', a 2026 one the statistics."""
    def verdict(version: str) -> str | None:
        b = Builder()
        for k in range(10):
            b.upload(f"layer{k}", tile((1, 1, 32 * 50_000, 32 * 12)))
        b.upload("word_embeddings", tile((250880, 2048)))
        plan = plan_tt(b.program(), load_device("n150", version=version))
        assert plan.verdict.kind is FailureKind.CAPACITY and plan.verdict.op == UPLOAD
        assert plan.verdict.responsible == tuple(range(10))
        return plan.verdict.message
    head = ("Out of Memory: Not enough space to allocate 1027604480 B DRAM buffer across 12 banks, where each bank "
            "needs to store 85635072 B")
    assert verdict("2025-10-03") == f"{head}, but bank size is only 1073741792 B"
    assert verdict("2026-04-21") == (f"{head}, but bank size is 1071821792 B (allocated: 1024000000 B, free: "
                                     "47821792 B, largest free block: 47821792 B)")


def test_circular_buffers_beyond_l1_grow() -> None:
    """A 1-D matmul config of 400 tile rows a core: 400 in0 tiles, 400 output tiles and a
    1-tile in1 CB (in1 has one block) above l1_unreserved_base 103,712 end past 1,499,136."""
    plan = plan_tt(cb_grow().program(), N150_2026)
    end = 103_712 + plan.programs[0].cb_bytes
    assert end > 1_499_136
    assert plan.verdict.message == (f"Statically allocated circular buffers on core range [(x=0,y=0) - (x=7,y=0)] "
                                    f"grow to {end} B which is beyond max L1 size of 1499136 B")
    assert (plan.verdict.kind, plan.verdict.program, plan.verdict.op) == (FailureKind.CB_GROW, 0, 0)


def test_circular_buffers_reaching_an_l1_buffer_clash() -> None:
    """649 tiles a bank in L1 leave 736 B above l1_unreserved_base: a unary's 8,192 B of
    CBs reach the tensor (lockstep: on every core)."""
    plan = plan_tt(cb_clash().program(), N150_2026)
    low = 103_712 + 736
    assert plan.verdict.message == (
        "Statically allocated circular buffers in program 0 clash with L1 buffers on core range "
        f"[(x=0,y=0) - (x=7,y=8)]. L1 buffer allocated at {low} and static circular buffer region ends at "
        f"{103_712 + 8192}")
    assert (plan.verdict.kind, plan.verdict.responsible) == (FailureKind.CB_CLASH, (0,))


def test_more_shards_than_cores_is_tt_metals_shard_message() -> None:
    plan = plan_tt(too_many_shards().program(), N150_2026)
    assert plan.verdict.message == ("Expected number of shards 80 to be less than or equal to total number of L1 "
                                    "banks 72 in compute cores")
    assert plan.verdict.kind is FailureKind.SHARDS


def test_an_operation_its_rule_refuses_is_one_line_naming_it() -> None:
    b = Builder()
    x = b.upload("x", tile((1, 1, 32, 32)), Role.INPUT)
    b.op(OpKind.RELU, "relu", (x,), OutputRequest(BufferType.L1, MemoryLayout.HEIGHT_SHARDED))
    with pytest.raises(ModelError, match=r"^operation 0 \(relu, ttnn.relu\): ttnn.relu: the unary factories run "
                                         "interleaved to interleaved or sharded to sharded"):
        plan_tt(b.program(), N150_2026)
