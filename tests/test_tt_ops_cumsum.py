"""`ttnn.cumsum` / `ttnn.moreh_cumsum` (tileplan.targets.tenstorrent.ops.tt_accumulation)
and how the tt-mlir frontend lowers `torch.cumsum` at each build's `cumsum_lowering`
(convert_basic.py `convert_cumsum`)."""

from __future__ import annotations

import pytest
import torch
from tt_ops_support import DRAM, MLIR, tile

from tileplan.errors import ModelError
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.memory import CoreRange
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import BufferRole, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_accumulation import CumsumAttrs
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.tiles import DataType
from tileplan.targets.tenstorrent.versions import Accumulation

BF16 = Precision("BF16")


def _cbs(program) -> list[tuple[int, int, int]]:
    return [(c.index, c.pages, c.page_bytes) for c in program.circular_buffers]


def test_a_scan_of_dimension_1_permutes_it_to_0_scans_and_permutes_back():
    """RoBERTa's position ids on a 2025-12 build: moreh_cumsum of int32 [1, 16, 1, 1]
    over dimension 1 (accumulation_invoke: 4 - 1 < 4): the permute makes [16, 1, 1, 1],
    16 tiles, one row of 16 tiles scanned on one core; four CBs of 4 int32 tiles."""
    x = tile((1, 16, 1, 1), DRAM, DataType.INT32)
    plan = plan_op(OpKind.MOREH_CUMSUM, OpRequest((x,), OutputRequest.of(DRAM), MLIR), CumsumAttrs(1))
    names = [p.name for p in plan.programs]
    assert names[1] == "AccumulationProgramFactory" and len(names) == 3
    assert names[0] == names[2] == "PermuteDeviceOperation::MultiCoreTileInvariant"
    scan = plan.programs[1]
    assert _cbs(scan) == [(0, 4, 4096), (3, 4, 4096), (2, 4, 4096), (1, 4, 4096)]
    assert scan.cores.cores == 1
    permuted = next(b for b in plan.buffers if b.name == "permuted")
    assert (permuted.pages, permuted.page_bytes, permuted.live) == (16, 4096, (0, 1))
    assert [b.role for b in plan.buffers].count(BufferRole.OUTPUT) == 1
    assert plan.outputs[0].shape == (1, 16, 1, 1) and plan.outputs[0].dtype is DataType.INT32


def test_dimension_0_of_a_rank_4_tensor_is_scanned_in_place_column_by_column():
    """`input_rank - cum_axis` = 4: no permute; [8, 1, 64, 64] is 32 tiles in rows of 8:
    4 rows on the first 4 cores of the grid's first column (CoreCoord{i / y, i % y})."""
    x = tile((8, 1, 64, 64), DRAM)
    plan = plan_op(OpKind.CUMSUM, OpRequest((x,), OutputRequest.of(DRAM), MLIR), CumsumAttrs(0))
    (scan,) = plan.programs
    assert scan.cores.ranges == (CoreRange((0, 0), (0, 3)),)


def test_from_april_2026_the_accumulator_is_one_float32_tile():
    """tt-metal PR #41371: SRC 4 tiles, ACC 1 float32 tile, DST 4 tiles; no START."""
    x = tile((8, 1, 64, 64), DRAM)
    plan = plan_op(OpKind.CUMSUM, OpRequest((x,), OutputRequest.of(DRAM), MLIR),
                   CumsumAttrs(0, Accumulation.ONE_TILE_ACC))
    assert _cbs(plan.programs[0]) == [(0, 4, 2048), (3, 1, 4096), (1, 4, 2048)]


class Positions(torch.nn.Module):
    """RoBERTa's `create_position_ids_from_input_ids` (padding index 1)."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = ids.ne(1).int()
        return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1


def _program():
    from tileplan.importers.torch_export import from_torch

    return from_torch(Positions(), (torch.zeros(2, 512, dtype=torch.long),), "positions").to_program(
        BF16, BF16, repeat=False)


def _kinds(version: str | None) -> list[tuple[OpKind, tuple[int, ...]]]:
    graph = lower_graph(_program(), TtMlirOptions(opt_level=0), load_device("n150", version=version))
    return [(n.kind, graph.values[n.outputs[0]].shape) for n in graph.nodes
            if n.kind in (OpKind.RESHAPE, OpKind.CUMSUM, OpKind.MOREH_CUMSUM)]


def test_before_2026_03_18_tt_mlir_reshapes_to_rank_4_around_moreh_cumsum():
    assert _kinds("2025-12") == [(OpKind.RESHAPE, (2, 512, 1, 1)), (OpKind.MOREH_CUMSUM, (2, 512, 1, 1)),
                                 (OpKind.RESHAPE, (2, 512))]


def test_from_2026_03_18_it_is_ttnn_cumsum_as_it_is():
    assert _kinds(None) == [(OpKind.CUMSUM, (2, 512))]


@pytest.mark.parametrize("version", [None, "2025-12"])
def test_the_position_ids_plan_on_n150(version):
    device = load_device("n150", version=version)
    assert plan_tt(lower(_program(), TtMlirOptions(opt_level=0), device), device).verdict.fits


def test_a_build_with_the_moreh_device_operation_is_refused_in_one_line():
    with pytest.raises(ModelError, match="moreh device operation.*--tt-version"):
        _kinds("2025-04")
