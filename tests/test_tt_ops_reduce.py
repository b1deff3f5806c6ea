"""ttnn's generic reductions over outer dimensions (tileplan.targets.tenstorrent.ops.
tt_reduce): fast_reduce_nc for a bfloat16 sum, `reduce_nd_loop` with HC transposes for
the rest, the tile padding filled first; each build's precision chain and mean scale."""

from __future__ import annotations

import pytest
from tt_ops_support import DRAM, MLIR, tile

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import BufferRole, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_reduce import ReduceAttrs
from tileplan.targets.tenstorrent.tiles import DataType
from tileplan.targets.tenstorrent.versions import MeanScale, SumPrecision

LATE_2025 = dict(sum_precision=SumPrecision.STAGE_DTYPE, mean_scale=MeanScale.FIRST_STEP)


def _cbs(program) -> list[tuple[int, int, int]]:
    return [(c.index, c.pages, c.page_bytes) for c in program.circular_buffers]


def _plan(kind, x, attrs):
    return plan_op(kind, OpRequest((x,), OutputRequest.of(DRAM), MLIR), attrs)


def _intermediates(plan):
    return [(b.name, b.spec.shape, b.spec.dtype, b.live) for b in plan.buffers if b.role is BufferRole.INTERMEDIATE]


def test_a_bf16_sum_over_an_outer_dimension_and_h_runs_fast_reduce_nc_in_a_float32_chain():
    """[1, 56, 56, 384] bf16 over [1, 2] (mid 2026, PR #43367): fill_pad (56 is no whole
    tile: c_0 2 x (2 x 16 + 2) B), fast_reduce_nc of dimension 1 (g = 8: c_0 16 bf16
    tiles, the zero tile, a float32 accumulator, 2 float32 output tiles; 1 x 2 x 12 = 24
    output tiles on 24 cores) to a float32 [1, 1, 64, 384], the slice back to 56 rows
    (2 float32 tiles), the H reduce (input 2 float32 tiles, scaler 1, output 2 bf16)."""
    x = tile((1, 56, 56, 384), DRAM)
    plan = _plan(OpKind.SUM, x, ReduceAttrs((1, 2), True))
    names = [p.name for p in plan.programs]
    assert names == ["FillPadProgramFactory", "FastReduceNCProgramFactory", "SliceTileProgramFactory",
                     "ReduceMultiCoreHProgramFactory"]
    fill, nc, sliced, reduce_h = plan.programs
    assert _cbs(fill) == [(0, 2, 34)]
    assert _cbs(nc) == [(0, 16, 2048), (1, 1, 2048), (24, 1, 4096), (16, 2, 4096)] and nc.cores.cores == 24
    assert _cbs(sliced) == [(0, 2, 4096)]
    assert _cbs(reduce_h) == [(0, 2, 4096), (2, 1, 2048), (3, 2, 2048)]
    assert _intermediates(plan) == [("reduced_1", (1, 1, 64, 384), DataType.FLOAT32, (1, 2)),
                                    ("sliced", (1, 1, 56, 384), DataType.FLOAT32, (2, 3))]
    assert plan.outputs[0].shape == (1, 1, 1, 384) and plan.outputs[0].dtype is DataType.BFLOAT16


def test_before_the_chain_every_stage_writes_bf16():
    """The late-2025 factory (@b9dd0672): c_0 and c_16 in the output's format, c_24 two
    of its tiles (fp32 accumulation); the intermediates bfloat16."""
    plan = _plan(OpKind.SUM, tile((1, 56, 56, 384), DRAM), ReduceAttrs((1, 2), True, **LATE_2025))
    nc = plan.programs[1]
    assert _cbs(nc) == [(0, 16, 2048), (1, 1, 2048), (24, 1, 4096), (16, 2, 2048)]
    assert [i[2] for i in _intermediates(plan)] == [DataType.BFLOAT16, DataType.BFLOAT16]


@pytest.mark.parametrize(("extent", "granularity"), [(56, 8), (7, 7), (12, 6), (11, 1)])
def test_fast_reduce_nc_reads_the_largest_granularity_up_to_8_dividing_the_dimension(extent, granularity):
    """`input_granularity`: from 8 down, the first dividing the reduced extent, else 1;
    whole tiles, so no fill_pad and no slice."""
    plan = _plan(OpKind.SUM, tile((extent, 64, 64), DRAM), ReduceAttrs((0,), True))
    assert [p.name for p in plan.programs] == ["FastReduceNCProgramFactory"]
    assert _cbs(plan.programs[0])[0] == (0, 2 * granularity, 2048)


def test_two_outer_dimensions_chain_float32_between_the_fast_reduce_nc_programs():
    """[4, 6, 64, 64] bf16 over [0, 1]: dimension 1 then 0; with no H / W left the last
    stage writes bfloat16, the one before float32 (`fp32_intermediate_stages`)."""
    plan = _plan(OpKind.SUM, tile((4, 6, 64, 64), DRAM), ReduceAttrs((0, 1), False))
    assert [p.name for p in plan.programs] == ["FastReduceNCProgramFactory"] * 2
    assert _intermediates(plan) == [("reduced_1", (4, 1, 64, 64), DataType.FLOAT32, (0, 1))]
    assert plan.outputs[0].shape == (64, 64) and plan.outputs[0].dtype is DataType.BFLOAT16


def test_a_mean_over_an_outer_dimension_and_w_transposes_it_into_h_and_back():
    """[1, 4096, 32, 10] bf16 mean over [1, 3] (a group norm's statistics): fill_pad, the
    W reduce (2 + 2 + 2 tiles) to [1, 4096, 32, 1], the HC transpose to [1, 32, 4096, 1]
    (2 tiles), the H reduce (2 + 1 + 2) to [1, 32, 1, 1], the transpose back."""
    plan = _plan(OpKind.MEAN, tile((1, 4096, 32, 10), DRAM), ReduceAttrs((1, 3), True))
    names = [p.name for p in plan.programs]
    assert names == ["FillPadProgramFactory", "ReduceMultiCoreWProgramFactory",
                     "TransposeHCTiledInterleavedProgramFactory", "ReduceMultiCoreHProgramFactory",
                     "TransposeHCTiledInterleavedProgramFactory"]
    assert _cbs(plan.programs[1]) == [(0, 2, 2048), (2, 2, 2048), (3, 2, 2048)]
    assert _cbs(plan.programs[2]) == [(0, 2, 2048)]
    assert _cbs(plan.programs[3]) == [(0, 2, 2048), (2, 1, 2048), (3, 2, 2048)]
    assert _intermediates(plan) == [("reduced_w", (1, 4096, 32, 1), DataType.BFLOAT16, (1, 2)),
                                    ("transposed_1", (1, 32, 4096, 1), DataType.BFLOAT16, (2, 3)),
                                    ("reduced_1_h", (1, 32, 1, 1), DataType.BFLOAT16, (3, 4))]
    assert plan.outputs[0].shape == (1, 1, 32, 1)


def test_before_pr_28869_a_mean_over_several_dimensions_rescales_after_the_loop():
    attrs = ReduceAttrs((1, 3), True, SumPrecision.STAGE_DTYPE, MeanScale.RESCALE_AFTER)
    plan = _plan(OpKind.MEAN, tile((1, 4096, 32, 10), DRAM), attrs)
    assert [p.name for p in plan.programs][-1] == "UnaryProgramFactory"
    assert _intermediates(plan)[-1][:2] == ("reduced_1", (1, 1, 32, 1))


@pytest.mark.parametrize(("kind", "dtype"), [(OpKind.MAX, DataType.BFLOAT16), (OpKind.SUM, DataType.FLOAT32)])
def test_a_max_or_a_float32_sum_over_an_outer_dimension_takes_the_transpose_loop(kind, dtype):
    plan = _plan(kind, tile((2, 64, 64, 64), DRAM, dtype), ReduceAttrs((1,), True))
    assert [p.name for p in plan.programs] == ["TransposeHCTiledInterleavedProgramFactory",
                                               "ReduceMultiCoreHProgramFactory",
                                               "TransposeHCTiledInterleavedProgramFactory"]


def test_an_outer_dimension_of_extent_1_is_no_work():
    plan = _plan(OpKind.SUM, tile((1, 64, 64), DRAM), ReduceAttrs((0, 2), True))
    assert [p.name for p in plan.programs] == ["ReduceMultiCoreWProgramFactory"]


def test_an_outer_reduction_of_a_sharded_output_is_refused():
    x = tile((4, 64, 64), DRAM)
    sharded = OutputRequest(BufferType.L1, MemoryLayout.HEIGHT_SHARDED)
    with pytest.raises(InputError, match="outer dimensions of a sharded tensor"):
        plan_op(OpKind.SUM, OpRequest((x,), sharded, MLIR), ReduceAttrs((0,), True))
