"""`ttnn.argmax` (tileplan.targets.tenstorrent.ops.tt_argmax) and CLIP's text pooling
through the tt-mlir frontend: the argmax of the ids by build (`argmax_lowering`), the
advanced indexing as tt-mlir's embedding decomposition (convert_nn.py `convert_index`)."""

from __future__ import annotations

import pytest
import torch
from tt_ops_support import DRAM, MLIR, row_major, tile

from tileplan.errors import InputError, ModelError
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.memory import CoreRange
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_argmax import ArgmaxAttrs
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.tiles import DataType, Layout

BF16 = Precision("BF16")


LAST = ArgmaxAttrs(-1)


def _argmax(x, attrs=LAST):
    return plan_op(OpKind.ARGMAX, OpRequest((x,), OutputRequest.of(DRAM), MLIR), attrs)


def _cbs(program) -> list[tuple[int, int, int]]:
    return [(c.index, c.pages, c.page_bytes) for c in program.circular_buffers]


def test_clips_ids_on_one_core_take_one_input_row_and_the_indices():
    """ArgMaxSingleCoreRowMajorFactory: c_0 77 x 4 B, c_1 output_last_dim (1) x 4 B."""
    plan = _argmax(row_major((1, 1, 1, 77), DRAM, DataType.INT32))
    (program,) = plan.programs
    assert program.name == "ArgMaxSingleCoreRowMajorFactory" and program.cores.cores == 1
    assert _cbs(program) == [(0, 1, 308), (1, 1, 4)]
    out = plan.outputs[0]
    assert (out.shape, out.dtype, out.layout) == ((1, 1, 1), DataType.UINT32, Layout.ROW_MAJOR)


def test_the_multi_core_factory_splits_the_row_in_blocks_of_the_alignment():
    """77 int32 in DRAM (32 B aligned): blocks of 16 elements, 5 blocks on the first 5
    cores of the first column; c_2 and c_3 hold one 32 B slot a core."""
    plan = _argmax(row_major((1, 77), DRAM, DataType.INT32), ArgmaxAttrs(-1, multicore=True))
    (program,) = plan.programs
    assert program.cores.ranges == (CoreRange((0, 0), (0, 4)),)
    assert _cbs(program) == [(0, 1, 64), (1, 1, 32), (2, 1, 160), (3, 1, 160)]


def test_more_blocks_than_cores_make_two_groups_with_their_own_input_buffer():
    """1,168 elements are 73 blocks over 64 cores: 9 cores take 2 blocks, 55 take 1."""
    plan = _argmax(row_major((1, 1168), DRAM, DataType.INT32), ArgmaxAttrs(-1, multicore=True))
    src = [c for c in plan.programs[0].circular_buffers if c.index == 0]
    assert [(c.page_bytes, sum(r.cores for r in c.core_ranges)) for c in src] == [(128, 9), (64, 55)]


def test_a_tile_input_runs_the_single_core_tile_factory():
    (program,) = _argmax(tile((32, 64), DRAM)).programs
    assert program.name == "ArgMaxSingleCoreTileFactory"
    assert _cbs(program) == [(0, 1, 2048), (1, 1, 4096)]


def test_an_argmax_over_another_dimension_is_refused_by_tt_metals_words():
    with pytest.raises(InputError, match="Only argmax on last dim is supported!"):
        _argmax(row_major((4, 77), DRAM, DataType.INT32), ArgmaxAttrs(0))


class Pooled(torch.nn.Module):
    """CLIPTextTransformer's pooled output: the hidden state at each sequence's largest id."""

    def forward(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return hidden[torch.arange(hidden.shape[0]), ids.to(torch.int).argmax(dim=-1)]


def _program():
    from tileplan.importers.torch_export import from_torch

    inputs = (torch.zeros(1, 77, 512, dtype=torch.bfloat16), torch.zeros(1, 77, dtype=torch.long))
    return from_torch(Pooled(), inputs, "pooled").to_program(BF16, BF16, repeat=False)


def _graph(version: str | None):
    return lower_graph(_program(), TtMlirOptions(opt_level=0), load_device("n150", version=version))


def test_before_2026_03_19_the_ids_are_reshaped_to_rank_4_and_scanned_on_one_core():
    graph = _graph("2025-12")
    (node,) = [n for n in graph.nodes if n.kind is OpKind.ARGMAX]
    assert graph.values[node.inputs[0]].shape == (1, 1, 1, 77)
    assert graph.values[node.inputs[0]].layout is Layout.ROW_MAJOR
    assert node.attrs == ArgmaxAttrs(-1, False, multicore=False)


def test_from_2026_03_30_the_argmax_is_multi_core_on_the_ids_as_they_are():
    graph = _graph(None)
    (node,) = [n for n in graph.nodes if n.kind is OpKind.ARGMAX]
    assert graph.values[node.inputs[0]].shape == (1, 77)
    assert node.attrs == ArgmaxAttrs(-1, False, multicore=True)


def test_the_pooling_index_is_an_embedding_of_the_hidden_states_rows():
    graph = _graph(None)
    (node,) = [n for n in graph.nodes if n.kind is OpKind.EMBEDDING]
    assert [(graph.values[t].shape, graph.values[t].dtype) for t in node.inputs] == [
        ((1, 1), DataType.UINT32), ((77, 512), DataType.BFLOAT16)]


@pytest.mark.parametrize("version", [None, "2025-12"])
def test_clips_pooling_plans_on_n150(version):
    device = load_device("n150", version=version)
    assert plan_tt(lower(_program(), TtMlirOptions(opt_level=0), device), device).verdict.fits


def test_two_batches_flatten_their_indices_through_a_float32_matmul():
    """flattenStartIndices: the [2, 2] start indices (the arange and the argmax) cast to
    float32 and multiplied by the strides [77, 1]; the table is both batches' rows."""
    from tileplan.importers.torch_export import from_torch

    inputs = (torch.zeros(2, 77, 512, dtype=torch.bfloat16), torch.zeros(2, 77, dtype=torch.long))
    program = from_torch(Pooled(), inputs, "pooled2").to_program(BF16, BF16, repeat=False)
    device = load_device("n150")
    graph = lower_graph(program, TtMlirOptions(opt_level=0), device)
    (matmul,) = [n for n in graph.nodes if n.kind is OpKind.MATMUL]
    assert [(graph.values[t].shape, graph.values[t].dtype) for t in matmul.inputs] == [
        ((2, 2), DataType.FLOAT32), ((2, 1), DataType.FLOAT32)]
    (embedding,) = [n for n in graph.nodes if n.kind is OpKind.EMBEDDING]
    assert [graph.values[t].shape for t in embedding.inputs] == [(2, 1), (154, 512)]
    assert plan_tt(lower(program, TtMlirOptions(opt_level=0), device), device).verdict.fits


def test_indexing_a_trailing_dimension_is_refused_in_one_line():
    from tileplan.importers.torch_export import from_torch

    class Trailing(torch.nn.Module):
        def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
            return x[:, i, i]

    program = from_torch(Trailing(), (torch.zeros(2, 8, 8), torch.zeros(3, dtype=torch.long)), "trailing").to_program(
        BF16, BF16, repeat=False)
    with pytest.raises(ModelError, match="leading dimensions are modelled"):
        lower_graph(program, TtMlirOptions(opt_level=0), load_device("n150"))
