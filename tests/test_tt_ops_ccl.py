"""Collectives on n300's two chips (ops/tt_ccl.py): all_gather_async and the Linear
reduce_scatter_minimal_async, one chip's share, against their factories' circular
buffers and the fabric's packet size (4 bfp8 tiles of payload + a 64-B header)."""

from __future__ import annotations

from tt_ops_support import DRAM, MLIR, tile

from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_ccl import CclAttrs
from tileplan.targets.tenstorrent.tiles import DataType


def test_all_gather_worked_example() -> None:
    """A prefill residual [1, 1, 4096, 2048] bf16 gathered on dim 3: [1, 1, 4096, 4096];
    (4,352 + 64) // 2,048 = 2 pages a packet, each worker's c_0 3 x 2 x 2,048 = 12,288 B,
    two workers a direction on one link."""
    x = tile((1, 1, 4096, 2048), DRAM)
    plan = plan_op(OpKind.ALL_GATHER_ASYNC, OpRequest((x,), OutputRequest.of(DRAM), MLIR), CclAttrs(dim=3))
    assert plan.outputs[0].shape == (1, 1, 4096, 4096)
    assert plan.cb_peak == 12_288
    assert plan.programs[0].cores.cores == 4


def test_all_gather_packs_at_most_four_bfp8_pages() -> None:
    x = tile((1, 1, 32, 4096), DRAM, DataType.BFLOAT8_B)
    plan = plan_op(OpKind.ALL_GATHER_ASYNC, OpRequest((x,), OutputRequest.of(DRAM), MLIR), CclAttrs(dim=3))
    assert plan.cb_peak == 3 * 4 * 1088


def test_reduce_scatter_allocates_its_intermediate_and_the_scattered_output() -> None:
    """[1, 1, 4096, 4096] bf16 scattered on dim 3: an intermediate [2, 1, 4096, 4096] in
    DRAM for the call, the output [1, 1, 4096, 2048]; two senders, each with four CBs of
    3 x min(4 x 2, 8) pages and four 64-B packet headers."""
    x = tile((1, 1, 4096, 4096), DRAM)
    plan = plan_op(OpKind.REDUCE_SCATTER_ASYNC, OpRequest((x,), OutputRequest.of(DRAM), MLIR), CclAttrs(dim=3))
    assert plan.outputs[0].shape == (1, 1, 4096, 2048)
    assert plan.cb_peak == 4 * 24 * 2048 + 4 * 64
    inter = [b for b in plan.buffers if b.name == "intermediate"]
    assert len(inter) == 1 and inter[0].buffer_type is BufferType.DRAM
    assert inter[0].pages * inter[0].page_bytes == 2 * 4096 * 4096 * 2 and inter[0].live == (0, 0)
