"""Collectives on n300's two chips and a T3K's eight (ops/tt_ccl.py): all_gather_async and
reduce_scatter_minimal_async on a Linear line and a Ring, one chip's share, against their
factories' circular buffers, their worker cores (a mux core and two workers a direction)
and the fabric's packet size (4 bfp8 tiles of payload + a 64-B header)."""

from __future__ import annotations

from tt_ops_support import DRAM, MLIR, tile

from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_ccl import CclAttrs, Topology
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
    """[1, 1, 4096, 4096] bf16 scattered on dim 3 over two chips (Linear): an intermediate
    [2, 1, 4096, 4096] in DRAM for the call, the output [1, 1, 4096, 2048]; four workers
    (cores 1, 2, 4, 5: a mux core before each direction's two), each with four CBs of
    3 x min(4 x 2, 8) pages."""
    x = tile((1, 1, 4096, 4096), DRAM)
    plan = plan_op(OpKind.REDUCE_SCATTER_ASYNC, OpRequest((x,), OutputRequest.of(DRAM), MLIR), CclAttrs(dim=3))
    assert plan.outputs[0].shape == (1, 1, 4096, 2048)
    assert plan.cb_peak == 4 * 24 * 2048
    cores = plan.programs[0].cores
    assert sorted(r.start for r in cores.ranges) == [(1, 0), (2, 0), (4, 0), (5, 0)]
    inter = [b for b in plan.buffers if b.name == "intermediate"]
    assert len(inter) == 1 and inter[0].buffer_type is BufferType.DRAM
    assert inter[0].pages * inter[0].page_bytes == 2 * 4096 * 4096 * 2 and inter[0].live == (0, 0)


def test_reduce_scatter_on_a_ring_of_eight_keeps_the_intermediate_at_the_input_size() -> None:
    """A T3K's Ring: the intermediate is the input's shape (not doubled), the output an
    eighth; scatter writes reach 2 NoC addresses, so 4 x 2 = 8 pages a step, 24 a CB."""
    x = tile((1, 1, 4096, 4096), DRAM)
    attrs = CclAttrs(dim=3, ring_size=8, topology=Topology.RING)
    plan = plan_op(OpKind.REDUCE_SCATTER_ASYNC, OpRequest((x,), OutputRequest.of(DRAM), MLIR), attrs)
    assert plan.outputs[0].shape == (1, 1, 4096, 512)
    assert plan.programs[0].name == "RingReduceScatterMinimalAsync"
    assert plan.cb_peak == 4 * 24 * 2048
    inter = [b for b in plan.buffers if b.name == "intermediate"]
    assert inter[0].pages * inter[0].page_bytes == 4096 * 4096 * 2


def test_two_chips_run_linear_whatever_is_asked() -> None:
    x = tile((1, 1, 256, 1024), DRAM)
    attrs = CclAttrs(dim=3, ring_size=2, topology=Topology.RING)
    plan = plan_op(OpKind.REDUCE_SCATTER_ASYNC, OpRequest((x,), OutputRequest.of(DRAM), MLIR), attrs)
    inter = [b for b in plan.buffers if b.name == "intermediate"]
    assert plan.programs[0].name == "LineReduceScatterMinimalAsync"
    assert inter[0].pages * inter[0].page_bytes == 2 * 256 * 1024 * 2


def test_all_gather_over_eight_chips_and_from_an_offset() -> None:
    """Eight chips multiply the gathered dimension by 8; all_gather_matmul_async's offset
    (0, 4) puts the workers on row 4: (1, 4), (2, 4), (4, 4), (5, 4)."""
    x = tile((1, 1, 32, 512), DRAM)
    attrs = CclAttrs(dim=3, ring_size=8, topology=Topology.RING, core_offset=(0, 4))
    plan = plan_op(OpKind.ALL_GATHER_ASYNC, OpRequest((x,), OutputRequest.of(DRAM), MLIR), attrs)
    assert plan.outputs[0].shape == (1, 1, 32, 4096)
    assert sorted(r.start for r in plan.programs[0].cores.ranges) == [(1, 4), (2, 4), (4, 4), (5, 4)]
