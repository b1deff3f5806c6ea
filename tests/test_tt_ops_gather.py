"""`ttnn.gather` (tileplan.targets.tenstorrent.ops.tt_gather) and torch.gather through the
tt-mlir frontend at each build's `gather_lowering` (convert_nn.py
`convert_gather_elements`): RoBERTa's token-type ids."""

from __future__ import annotations

import pytest
import torch
from tt_ops_support import DRAM, MLIR, tile

from tileplan.errors import InputError, ModelError
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_gather import GatherAttrs
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.tiles import DataType

BF16 = Precision("BF16")


def _gather(x_shape, i_shape, dim=-1, index_dtype=DataType.UINT32):
    x = tile(x_shape, DRAM, DataType.INT32)
    i = tile(i_shape, DRAM, index_dtype)
    return plan_op(OpKind.GATHER, OpRequest((x, i), OutputRequest.of(DRAM), MLIR), GatherAttrs(dim))


def test_robertas_token_types_fill_slice_fill_and_gather_on_one_core():
    """The index [1, 128] and the input [1, 514] have implicit padding (fill_pad each),
    the input is sliced to the index's 32 padded rows; the single-core factory holds the
    input's 17-tile row, one index tile and one output tile."""
    plan = _gather((1, 514), (1, 128))
    assert [p.name for p in plan.programs] == ["FillPadProgramFactory", "SliceTileProgramFactory",
                                               "FillPadProgramFactory", "GatherSingleRowSingleCoreProgramFactory"]
    gather = plan.programs[-1]
    assert [(c.index, c.pages, c.page_bytes) for c in gather.circular_buffers] == [
        (0, 17, 4096), (1, 1, 4096), (2, 1, 4096)]
    assert gather.cores.cores == 1
    assert plan.outputs[0].shape == (1, 128) and plan.outputs[0].dtype is DataType.INT32
    sliced = next(b for b in plan.buffers if b.name == "sliced")
    assert sliced.live == (1, 3)


def test_a_wide_input_runs_the_multi_core_factory_with_two_input_tiles():
    plan = _gather((32, 4096), (32, 64))
    assert [p.name for p in plan.programs] == ["GatherSingleRowMultiCoreProgramFactory"]
    (gather,) = plan.programs
    assert [(c.index, c.pages) for c in gather.circular_buffers] == [(0, 2), (1, 1), (2, 1)]
    assert gather.cores.cores == 2  # the index's two tile columns


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"index_dtype": DataType.INT32}, "UINT32 or UINT16"),
    ({"dim": 0}, "another dimension"),
])
def test_what_the_rule_does_not_take_is_refused_by_name(kwargs, message):
    with pytest.raises(InputError, match=message):
        _gather((32, 64), (32, 64), **kwargs)


class TokenTypes(torch.nn.Module):
    """RobertaEmbeddings' buffered token-type ids: a constant buffer gathered by the
    position ids it computes from the input ids."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("token_type_ids", torch.zeros(1, 514, dtype=torch.long))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = ids.ne(1).int()
        positions = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1
        return torch.gather(self.token_type_ids, 1, positions)


def _program():
    from tileplan.importers.torch_export import from_torch

    return from_torch(TokenTypes(), (torch.zeros(1, 128, dtype=torch.long),), "token_types").to_program(
        BF16, BF16, repeat=False)


def _nodes(version: str | None):
    graph = lower_graph(_program(), TtMlirOptions(opt_level=0), load_device("n150", version=version))
    return graph, [n for n in graph.nodes if n.kind in (OpKind.GATHER, OpKind.EMBEDDING)]


def test_from_2026_04_29_torch_gather_is_ttnn_gather_of_a_uint32_index():
    graph, (node,) = _nodes(None)
    assert node.kind is OpKind.GATHER
    assert [(graph.values[t].shape, graph.values[t].dtype) for t in node.inputs] == [
        ((1, 514), DataType.INT32), ((1, 128), DataType.UINT32)]


def test_before_it_is_an_embedding_of_the_buffer_as_514_rows_of_one():
    graph, (node,) = _nodes("2026-03")
    assert node.kind is OpKind.EMBEDDING
    assert [graph.values[t].shape for t in node.inputs] == [(1, 128), (514, 1)]


@pytest.mark.parametrize("version", [None, "2026-03"])
def test_the_token_types_plan_on_n150(version):
    device = load_device("n150", version=version)
    assert plan_tt(lower(_program(), TtMlirOptions(opt_level=0), device), device).verdict.fits


def test_an_embedding_gather_of_a_computed_input_is_refused_in_one_line():
    from tileplan.importers.torch_export import from_torch

    class Computed(torch.nn.Module):
        def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
            return torch.gather(x * 2, 1, i)

    program = from_torch(Computed(), (torch.zeros(2, 64), torch.zeros(2, 8, dtype=torch.long)), "computed").to_program(
        BF16, BF16, repeat=False)
    with pytest.raises(ModelError, match="float32 matmul of the indices"):
        lower_graph(program, TtMlirOptions(opt_level=0), load_device("n150", version="2026-03"))
