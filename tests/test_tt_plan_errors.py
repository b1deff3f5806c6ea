"""The Tenstorrent planner's verdict: the first failure of the run in tt-metal's words,
with the operation and the buffers responsible, and planning stopped there. The
published strings are reproduced end to end by programs that reach the same state
(TENSTORRENT-NOTES.md (h) H4)."""

from __future__ import annotations

import pytest

from tileplan.errors import ModelError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.memory import L1_INTERLEAVED, BufferType, MemoryLayout, TensorSpec
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.planned import UPLOAD, FailureKind
from tileplan.targets.tenstorrent.tiles import DataType, Layout

from tt_plan_support import Builder, bloom_dram, cb_clash, cb_grow, falcon_8044, tile, too_many_shards, traced

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
        plan = plan_tt(bloom_dram().program(), load_device("n150", version=version))
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


def test_a_trace_beyond_the_trace_region_is_mesh_traces_message() -> None:
    """A 5,000-B command stream in 1,024-B pages (trace.py): 5,120 B of trace buffers; a
    2,048-B trace region (aligned to 2,304 on 2026 builds) cannot take them."""
    plan = plan_tt(traced().program(), load_device("n150", trace_region_size=2048))
    assert plan.verdict.message == ("Creating trace buffers of size 5120B on MeshDevice 0, but only 2304B is "
                                    "allocated for trace region.")
    assert (plan.verdict.kind, plan.verdict.buffer_type, plan.verdict.op) == (FailureKind.TRACE, BufferType.TRACE, 1)


def test_a_trace_goes_to_the_trace_bank_or_top_down_in_dram_when_dynamic() -> None:
    regioned = plan_tt(traced().program(), load_device("n150", trace_region_size=50_000_000))
    (trace,) = [b for b in regioned.buffers if b.use.value == "trace"]
    d = regioned.device
    assert (trace.buffer_type, trace.address, trace.bytes) == (BufferType.TRACE, d.trace_base, 5120)
    dynamic = plan_tt(traced().program(), load_device("n150"))
    (trace,) = [b for b in dynamic.buffers if b.use.value == "trace"]
    top = dynamic.device.dram_unreserved_base + dynamic.device.dram_bank_size
    assert (trace.buffer_type, trace.address) == (BufferType.DRAM, top - 1024)


def test_tt_mlir_8110_fragmentation_on_n300_end_to_end() -> None:
    """tt-mlir #8110 (Qwen3-32B, n300, 64 banks a chip): 323,936 B a bank allocated around
    a 591,872-B hole (289 tiles), 414,080 B free below; an L1-interleaved output of
    19,008 tiles (297 a bank, 608,256 B) fits in neither though 1,005,952 B are free."""
    b = Builder("qwen")
    b.upload("a", tile((1, 1, 32 * 100, 32 * 64), L1_INTERLEAVED))  # 204,800 B a bank
    hole = b.upload("hole", tile((1, 1, 32 * 289, 32 * 64), L1_INTERLEAVED), Role.INPUT)
    b.upload("b", TensorSpec((64, 59568), DataType.BFLOAT16, Layout.ROW_MAJOR, L1_INTERLEAVED))  # one 119,136-B row
    x = b.upload("x", tile((1, 1, 32 * 297, 32 * 64)), Role.INPUT)
    b.op(OpKind.RELU, "hole.to_dram", (hole,), free=(hole,))
    b.op(OpKind.RELU, "mlp.act", (x,), OutputRequest(BufferType.L1))
    plan = plan_tt(b.program(), load_device("n300", version="2026-04-21"))
    assert plan.verdict.message == (
        "Out of Memory: Not enough space to allocate 38928384 B L1 buffer across 64 banks, where each bank needs to "
        "store 608256 B, but bank size is 1329888 B (allocated: 323936 B, free: 1005952 B, largest free block: "
        "591872 B)")
    assert plan.verdict.kind is FailureKind.FRAGMENTATION


def test_bevdepth_l1_out_of_memory_in_a_2025_10_build() -> None:
    """tt-xla's bevdepth test config (n150, 2025-10): 69,599,232 B of L1 over 72 banks,
    966,656 B a bank (472 tiles), bank 1,366,016 B (base 100,352, tt-mlir's 32 KiB of
    L1_SMALL then); with 200 tiles a bank already held it does not fit, in the build's
    'only' form."""
    b = Builder("bevdepth")
    b.upload("resident", tile((1, 1, 32 * 200, 32 * 72), L1_INTERLEAVED))
    x = b.upload("x", tile((1, 1, 32 * 472, 32 * 72)), Role.INPUT)
    b.op(OpKind.RELU, "backbone.act", (x,), OutputRequest(BufferType.L1))
    plan = plan_tt(b.program(), load_device("n150", version="2025-10-03"))
    assert plan.verdict.message == ("Out of Memory: Not enough space to allocate 69599232 B L1 buffer across 72 banks, "
                                    "where each bank needs to store 966656 B, but bank size is only 1366016 B")
    assert plan.verdict.kind is FailureKind.CAPACITY
