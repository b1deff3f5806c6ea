"""ttnn.conv_transpose2d's DRAM path (tt_conv_transpose.py), each figure derived by hand
from tt-metal's conv_transpose2d.cpp `ConvT2DSliceAttr::get_input_slice_and_padding`,
`determine_conv_transpose2d_execution_path` and op_slicing.cpp `run_sliced_op`."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tt_ops_support import DRAM, MLIR, row_major

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import BufferType, MemoryConfig, MemoryLayout
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dConfig, SliceType
from tileplan.targets.tenstorrent.ops.tt_conv_dram import auto_shard_layout, determine_slices
from tileplan.targets.tenstorrent.ops.tt_conv_transpose import (
    ConvTranspose2dAttrs,
    conv_transpose2d_sliced,
    conv_transpose_slice,
)
from tileplan.targets.tenstorrent.versions import Stack, software_at

CFG = Conv2dConfig(config_tensors_in_dram=True)
#: UNet's upconv4 (30 x 40 -> 60 x 80) and upconv1 (240 x 320 -> 480 x 640), no slice config
UPCONV4 = ConvTranspose2dAttrs(512, 256, 1, (30, 40), (2, 2), (2, 2), bias=True, config=CFG, slice_type=None)
UPCONV1 = ConvTranspose2dAttrs(64, 32, 1, (240, 320), (2, 2), (2, 2), bias=True, config=CFG, slice_type=None)


def _laid_out(a: ConvTranspose2dAttrs) -> ConvTranspose2dAttrs:
    return replace(a, config=replace(a.config, shard_layout=auto_shard_layout(a.as_conv2d(), MLIR)))


def _req(a: ConvTranspose2dAttrs, memory: MemoryConfig = DRAM) -> OpRequest:
    x = row_major((1, 1, a.batch * a.input_hw[0] * a.input_hw[1], a.in_channels), memory)
    w = row_major((a.in_channels, a.out_channels, *a.kernel), DRAM)
    return OpRequest((x, w), OutputRequest.of(DRAM), MLIR)


def test_a_height_slice_of_upconv4_reads_half_the_input_rows() -> None:
    """k 2, s 2, p 0: base = 1 x (2 - 1) = 1, real padding 1. Output rows [0, 30): input
    from 0 (the top edge: padding 1), expanded end 30 - 1 + 1 = 30, input end (30 - 1) / 2
    + 1 = 15, bottom padding max(0, 30 - 60, (30 - 1) mod 2 = 1) = 1; the transposed
    conv's padding 1 - 1 = 0: (15 - 1) x 2 + 1 + 1 = 30 rows. Rows [30, 60): input from
    div_up(30 - 1, 2) = 15 (offset 2 - 29 mod 2 = 1: top padding 1) to the bottom edge 30.
    The width is whole (real padding 1 a side), 80 columns padded by 32 - 80 mod 32 = 16
    columns of output padding for the TILE output: the slice's conv is 30 x 96 over a
    31 x 97 full input, reading 15 x 40 = 600 sticks."""
    for start, end in ((0, 30), (30, 60)):
        s = conv_transpose_slice(UPCONV4, SliceType.DRAM_HEIGHT, start, end)
        assert (s.rows, s.conv.input_hw, s.conv.output_hw) == (600, (31, 97), (30, 96))


def test_stride_grid_offsets_and_the_output_padding_at_the_far_edge() -> None:
    """k 3, s 2, p 1, output padding 1, 10 input rows: output 9 x 2 - 2 + 2 + 1 + 1 = 20;
    base 2, real padding 1. [0, 7): input 0..(8 - 1) / 2 + 1 = 4, bottom offset 7 mod 2
    = 1, padding (1, 1): 3 x 2 - 2 + 2 + 1 = 7. [7, 14): input div_up(6, 2) = 3 to 8, no
    offsets, padding (2, 2): 4 x 2 - 4 + 2 + 1 = 7. [14, 20): input div_up(13, 2) = 7 to
    the edge 10, top offset 1, the far edge's real padding 1 and output padding 1:
    2 x 2 - 2 + 2 + 1 + 1 = 6."""
    a = ConvTranspose2dAttrs(32, 32, 1, (10, 40), (3, 3), (2, 2), (1, 1), (1, 1), config=CFG, slice_type=None)
    assert a.output_hw == (20, 80)
    got = []
    for start, end in ((0, 7), (7, 14), (14, 20)):
        conv = conv_transpose_slice(a, SliceType.DRAM_HEIGHT, start, end).conv
        got.append((conv.input_hw[0] - 2, conv.output_hw[0]))
    # the slice's full input is its output + base rows
    assert got == [(7, 7), (7, 7), (6, 6)]
    rows = [conv_transpose_slice(a, SliceType.DRAM_HEIGHT, s, e).rows // 40 for s, e in ((0, 7), (7, 14), (14, 20))]
    assert rows == [4, 5, 3]


def test_an_offset_beyond_the_kernel_reach_is_refused() -> None:
    """k 2, s 3: base 1; output [2, ...) starts 1 row into the stride grid, an offset of
    3 - 1 = 2 > 1, which tt-metal's unsigned padding would wrap."""
    a = ConvTranspose2dAttrs(32, 32, 1, (4, 40), (2, 2), (3, 3), config=CFG, slice_type=None)
    with pytest.raises(InputError, match="beyond dilation"):
        conv_transpose_slice(a, SliceType.DRAM_HEIGHT, 2, 5)


def test_upconv1_is_sliced_in_three_width_slices_on_n150() -> None:
    """The input 240 x 320 is wider than 200 and not tall: width slices first
    (best_guess_slice_type). 640 output columns are 20 tiles: 3 slices of 7, 7, 6 tiles
    (224, 224, 192 columns), reading input columns [0, 112), [112, 224), [224, 320)
    (26,880, 26,880 and 23,040 sticks); their full inputs are 481 x 225, 481 x 225,
    481 x 193. Fewer slices do not fit the free L1."""
    a = _laid_out(UPCONV1)
    d = determine_slices("ttnn.conv_transpose2d", _req(a), conv_transpose2d_sliced(a), auto_shard_layout)
    assert d.slice_type is SliceType.DRAM_WIDTH
    assert [(s.out_start, s.out_end, s.rows, s.conv.input_hw) for s in d.slices] == [
        (0, 224, 26880, (481, 225)), (224, 448, 26880, (481, 225)), (448, 640, 23040, (481, 193))]
    assert d.l1_usage <= MLIR.max_l1_space


def test_the_sliced_plan_is_padded_slice_halo_conv_slice_write_per_slice() -> None:
    plan = plan_op(OpKind.CONV_TRANSPOSE2D, _req(_laid_out(UPCONV1)), _laid_out(UPCONV1))
    names = [p.name for p in plan.programs]
    # ConvT2DSliceAttr::run_L1_op: each slice's input freed after the halo, the halo output moved up
    assert names == ["PaddedSliceRMProgramFactory", "UntilizeWithHaloProgramFactory", "MoveShardedProgramFactory",
                     "Conv2dShardedProgramFactory", "SliceWriteTiledShardedInputProgramFactory"] * 3
    out = plan.outputs[0]
    assert out.shape == (1, 1, 480 * 640, 32) and out.memory.buffer_type is BufferType.DRAM
    assert [b.name for b in plan.buffers][:2] == ["output0", "slice0_input"]


def test_the_path_follows_the_slice_config_and_the_input_placement() -> None:
    """determine_conv_transpose2d_execution_path: L1_FULL or (none and an L1 input) run
    conv_transpose2d_L1 (its output sharded in L1 here); none and a DRAM input the DRAM
    path, upconv4 in one slice: the L1 op on the DRAM input, moved to DRAM interleaved."""
    a = _laid_out(UPCONV4)
    one = plan_op(OpKind.CONV_TRANSPOSE2D, _req(a), a)
    assert one.outputs[0].memory.buffer_type is BufferType.DRAM
    assert one.outputs[0].memory.layout is MemoryLayout.INTERLEAVED
    assert "PaddedSliceRMProgramFactory" not in [p.name for p in one.programs]
    l1 = plan_op(OpKind.CONV_TRANSPOSE2D, _req(a, MemoryConfig(BufferType.L1)), a)
    full = plan_op(OpKind.CONV_TRANSPOSE2D, _req(a), replace(a, slice_type=SliceType.L1_FULL))
    assert [p.name for p in l1.programs] == [p.name for p in full.programs]


def test_the_dram_path_arrived_with_tt_metal_078f0f7() -> None:
    """tt-mlir's uplift #6208 (2025-12-08) is the first pin with conv_transpose2d_DRAM."""
    assert not software_at("2025-11-06", Stack.TT_MLIR).conv_transpose2d_dram_path
    assert software_at("2025-12-08", Stack.TT_MLIR).conv_transpose2d_dram_path
