"""`ttnn.where` (tileplan.targets.tenstorrent.ops.tt_ternary) and how the tt-mlir frontend
lowers `torch.where` to it at each build's `where_broadcast` (convert_basic.py
`convert_where`)."""

from __future__ import annotations

import json

import pytest
import torch
from tt_ops_support import DRAM, L1, MLIR, footprint, tile

import tileplan
from tileplan.errors import InputError, ModelError
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import TtnnGraph
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_ternary import TernaryBroadcast, broadcast_type
from tileplan.targets.tenstorrent.tiles import DataType

BF16 = Precision("BF16")


def test_the_opmodel_rows_where_is_four_double_buffered_tiles():
    """tt-mlir TestOpModelLib.cpp @78b9ce3d03 (tt-metal f4163c25) `OpModelTest.Where`:
    bf16 [64, 1024] DRAM operands, an L1 output: cbSize 16384, outputSize 2048."""
    x = tile((64, 1024), DRAM)
    plan = plan_op(OpKind.WHERE, OpRequest((x, x, x), OutputRequest.of(L1), MLIR))
    assert footprint(plan) == (16_384, 2_048)
    assert [(c.index, c.pages, c.page_bytes) for c in plan.programs[0].circular_buffers] == [
        (0, 2, 2048), (1, 2, 2048), (2, 2, 2048), (3, 2, 2048)]


@pytest.mark.parametrize(("shapes", "expected"), [
    (((1, 4, 64, 64), (1, 4, 64, 64), (1, 4, 64, 64)), TernaryBroadcast.NONE),
    (((1, 1, 64, 64), (1, 4, 64, 64), (1, 4, 64, 64)), TernaryBroadcast.OUTER),
    (((1, 4, 1, 64), (1, 4, 64, 64), (1, 4, 64, 64)), TernaryBroadcast.ROW),
    (((1, 4, 64, 1), (1, 4, 64, 64), (1, 4, 64, 64)), TernaryBroadcast.COL),
    (((1, 4, 64, 64), (1, 1, 1, 1), (1, 4, 64, 64)), TernaryBroadcast.SCALAR),
    (((1, 4, 1, 64), (1, 4, 64, 1), (1, 4, 64, 64)), TernaryBroadcast.INVALID),
], ids=lambda v: v.name if isinstance(v, TernaryBroadcast) else "")
def test_broadcast_types_follow_get_broadcast_type(shapes, expected):
    assert broadcast_type(*shapes) is expected


def test_a_row_broadcast_adds_three_more_double_buffered_operands():
    """ternary_program_factory.cpp: TTT ROW_BCAST creates c_4, c_5 and c_6 before c_3."""
    row, full = tile((1, 4, 1, 64), DRAM), tile((1, 4, 64, 64), DRAM)
    plan = plan_op(OpKind.WHERE, OpRequest((row, full, full), OutputRequest.of(DRAM), MLIR))
    assert [c.index for c in plan.programs[0].circular_buffers] == [0, 1, 2, 4, 5, 6, 3]
    assert plan.cb_peak == 7 * 2 * 2048
    assert plan.outputs[0].shape == (1, 4, 64, 64)


def test_an_invalid_broadcast_is_refused_by_name():
    a, b, c = tile((1, 4, 1, 64), DRAM), tile((1, 4, 64, 1), DRAM), tile((1, 4, 64, 64), DRAM)
    with pytest.raises(InputError, match="INVALID_BCAST.*composite where_impl"):
        plan_op(OpKind.WHERE, OpRequest((a, b, c), OutputRequest.of(DRAM), MLIR))


def test_the_output_takes_the_true_values_data_type():
    p = tile((64, 64), DRAM, DataType.BFLOAT16)
    v = tile((64, 64), DRAM, DataType.FLOAT32)
    plan = plan_op(OpKind.WHERE, OpRequest((p, v, v), OutputRequest.of(DRAM), MLIR))
    assert plan.outputs[0].dtype is DataType.FLOAT32
    assert plan.cb_peak == 2 * 2048 + 3 * 2 * 4096


class Masked(torch.nn.Module):
    """A masked fill (a scalar false value) and a where of two tensors whose predicate
    broadcasts over the heads."""

    def forward(self, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return torch.where(m > 0, x, -1e4) + torch.where(m > 0, x * 2, x)


def _lowered(version: str | None) -> TtnnGraph:
    from tileplan.importers.torch_export import from_torch

    x = torch.zeros(1, 4, 64, 128, dtype=torch.bfloat16)
    m = torch.zeros(1, 1, 64, 128, dtype=torch.bfloat16)
    program = from_torch(Masked(), (x, m), "masked").to_program(BF16, BF16, repeat=False)
    return lower_graph(program, TtMlirOptions(opt_level=0), load_device("n150", version=version))


def _where_inputs(graph: TtnnGraph) -> list[list[tuple[int, ...]]]:
    return [[graph.values[t].shape for t in node.inputs] for node in graph.nodes if node.kind is OpKind.WHERE]


def test_before_2026_03_23_tt_mlir_repeats_every_operand_to_the_result():
    graph = _lowered("2025-12")
    assert [n.kind for n in graph.nodes].count(OpKind.REPEAT) == 2  # each predicate, [1,1,64,128] -> [1,4,64,128]
    assert _where_inputs(graph) == [[(1, 4, 64, 128)] * 3] * 2
    scalar = [graph.values[t].shape for t in graph.uploads if graph.tensors[t].name not in ("x", "m")]
    assert scalar == [(1, 4, 64, 128)]  # the -1e4, a full-size const-eval result


def test_from_2026_03_23_the_operands_keep_their_shapes_and_the_scalar_is_one_element():
    graph = _lowered(None)
    scalar = [graph.values[t].shape for t in graph.uploads if graph.tensors[t].name not in ("x", "m")]
    assert scalar == [(1, 1, 1, 1)]
    assert OpKind.REPEAT not in [n.kind for n in graph.nodes]
    assert _where_inputs(graph) == [[(1, 1, 64, 128), (1, 4, 64, 128), (1, 1, 1, 1)],
                                    [(1, 1, 64, 128), (1, 4, 64, 128), (1, 4, 64, 128)]]


def test_a_masked_fill_plans_on_n150_through_the_python_api():
    x = torch.zeros(1, 4, 64, 128, dtype=torch.bfloat16)
    m = torch.zeros(1, 1, 64, 128, dtype=torch.bfloat16)
    report = json.loads(tileplan.plan(Masked(), (x, m), machine="n150", what_if=False).to_json())
    assert report["verdict"]["fits"] is True
    assert report["operations"]["kind"].count("ttnn.where") == 2


def test_a_build_that_composes_where_is_refused_in_one_line():
    with pytest.raises(ModelError, match="composite of five programs.*--tt-version"):
        _lowered("2025-04")
