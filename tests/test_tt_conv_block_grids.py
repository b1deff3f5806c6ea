"""A block-sharded conv2d's grids by build: one grid for input and output before
tt-metal PR #27767, the output's own channel cores from it (tt_conv_grid.py
`BlockGrids`; conv2d_utils.cpp @002a3f41 `determine_parallel_config`,
`determine_output_parallel_config`; conv2d_op_sharded_program_factory.cpp's CBs on the
union of the two grids)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tt_ops_support import DRAM, MLIR, row_major, sharded

from tileplan.targets.tenstorrent.memory import BufferType, CoreRange, MemoryLayout, ShardOrientation
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dAttrs, Conv2dConfig
from tileplan.targets.tenstorrent.ops.tt_conv_grid import input_parallel, parallel_config
from tileplan.targets.tenstorrent.versions import BlockGrids

BS = Conv2dConfig(shard_layout=MemoryLayout.BLOCK_SHARDED)
#: 320 -> 640 channels, 3x3, padding 1, on a 64 x 64 image: 128 output tiles of rows
ATTRS = Conv2dAttrs(320, 640, 1, (64, 64), (3, 3), padding=(1, 1), config=BS)


def _decoupled(attrs: Conv2dAttrs) -> Conv2dAttrs:
    return replace(attrs, config=replace(attrs.config, block_grids=BlockGrids.DECOUPLED))


def _plan(attrs: Conv2dAttrs) -> OpPlan:
    x = row_major((1, 1, 64 * 64, attrs.in_channels), DRAM)
    w = row_major((attrs.out_channels, attrs.in_channels, 3, 3), DRAM)
    return plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest(BufferType.L1, MemoryLayout.BLOCK_SHARDED), MLIR),
                   attrs)


def test_before_pr_27767_one_grid_divides_both_channel_counts() -> None:
    """20 output and 10 input channel tiles over at most 8 columns:
    find_closest_largest_divisor_with_num_padding(20, 10, 8) = 5 (8, 7 and 6 pad one of
    them by a share or more); 8 rows of 16 tiles of N*H*W; the output on the same 5 x 8."""
    p = parallel_config(ATTRS, MemoryLayout.BLOCK_SHARDED, MLIR, 8)
    assert (p.cores_nhw, p.cores_c, p.out_cores_c) == (8, 5, 5)
    assert p.grid == p.out_grid == p.program_grid == CoreRange((0, 0), (4, 7))
    assert (p.per_core_h, p.per_core_w) == (16, 4)


def test_from_pr_27767_the_input_and_the_output_take_their_own_channel_cores() -> None:
    """The input's 320 channels in blocks of 8 (a row-major input not sharded): 40 blocks,
    find_closest_largest_divisor_with_num_padding(40, 8) = 8 columns of 40 channels; the
    output's 20 tiles: 8 pads 4 (>= a share of 3), 7 pads 1, so 7 columns of 3 tiles
    (672 channels); the program's CBs on the union, the input's 8 x 8."""
    p = parallel_config(_decoupled(ATTRS), MemoryLayout.BLOCK_SHARDED, MLIR, 8)
    assert (p.cores_nhw, p.cores_c, p.out_cores_c) == (8, 8, 7)
    assert p.grid == CoreRange((0, 0), (7, 7)) and p.out_grid == CoreRange((0, 0), (6, 7))
    assert p.program_grid == p.grid
    assert (p.per_core_h, p.per_core_w) == (16, 3)


def test_the_decoupled_conv_writes_on_the_output_grid_and_reads_on_the_input_grid() -> None:
    """The planned conv: its sharded input 40 channels a core on 8 x 8 (the act block
    40 x 3 = 120 -> 4 tiles wide), its output 16 x 3 tiles a core on 7 x 8 (98,304 B a
    bank on 56 banks), the weights' CB 3 x 4 tiles, the program on 8 x 8."""
    before, after = _plan(ATTRS), _plan(_decoupled(ATTRS))
    staged = next(b for b in after.buffers if b.name == "conv_input_sharded")
    assert staged.spec is not None and staged.spec.memory.shard is not None
    assert staged.spec.memory.shard.shape == (512, 40) and staged.banks == 64
    out = next(b for b in after.buffers if b.name == "output0")
    assert (out.banks, out.bytes_per_bank) == (56, 16 * 3 * 2048)
    conv = next(p for p in after.programs if p.name == "Conv2dShardedProgramFactory")
    assert conv.cores == CoreRange((0, 0), (7, 7))
    cbs = {cb.name: cb for cb in conv.circular_buffers}
    assert cbs["weights"].pages == 3 * 4 and cbs["act_tilized"].pages == 16 * 4
    assert cbs["out"].pages == 16 * 3
    old = next(p for p in before.programs if p.name == "Conv2dShardedProgramFactory")
    assert old.cores == CoreRange((0, 0), (4, 7))
    assert {cb.name: cb for cb in old.circular_buffers}["weights"].pages == 4 * 6  # 64 channels x 3 = 6 tiles


def test_a_column_major_block_sharded_input_takes_its_output_channel_cores_along_y() -> None:
    """determine_output_parallel_config is given the input's orientation: a COL_MAJOR
    input on 8 (N*H*W, x) x 5 (channels, y) keeps its grid (its 64-channel shards align
    to 32) and its output's 20 tiles go over y: 7 rows of 3 tiles."""
    attrs = _decoupled(ATTRS)
    grid = CoreRange((0, 0), (7, 4))
    x = row_major((1, 1, 4096, 320), sharded(MemoryLayout.BLOCK_SHARDED, grid, (512, 64), ShardOrientation.COL_MAJOR))
    p = input_parallel(attrs, x, MLIR)
    assert p is not None
    assert (p.cores_nhw, p.cores_c, p.out_cores_c) == (8, 5, 7)
    assert p.out_grid == CoreRange((0, 0), (7, 6)) and p.program_grid == p.out_grid


@pytest.mark.parametrize("grids", list(BlockGrids))
def test_height_and_width_sharding_are_the_same_in_every_build(grids: BlockGrids) -> None:
    attrs = replace(ATTRS, config=replace(ATTRS.config, block_grids=grids))
    for layout in (MemoryLayout.HEIGHT_SHARDED, MemoryLayout.WIDTH_SHARDED):
        assert parallel_config(attrs, layout, MLIR, 8) == parallel_config(ATTRS, layout, MLIR, 8)


def test_the_knob_is_dated_by_pr_27767_and_the_tt_mlir_frontend_takes_it() -> None:
    """devices/software.toml `conv_block_grids`: SHARED before 2025-09-26, DECOUPLED from
    it; the tt-mlir frontend's Conv2dConfig carries the build's rule. The one modelled
    build before it (2025-04-25) has the older sliding-window config format, so the
    frontend refuses its convolutions in one line (`sliding_window_format`): SHARED is
    the API's."""
    from tileplan.errors import ModelError
    from tileplan.importers.graph import GraphBuilder
    from tileplan.model.precision import Precision
    from tileplan.targets.tenstorrent.device import load_device
    from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
    from tileplan.targets.tenstorrent.versions import Stack, software_at

    assert software_at("2025-09-25", Stack.TT_MLIR).conv_block_grids is BlockGrids.SHARED
    assert software_at("2025-09-26", Stack.TT_MLIR).conv_block_grids is BlockGrids.DECOUPLED
    assert "#27767" in software_at("2025-09-26", Stack.TT_MLIR).source("conv_block_grids")
    b = GraphBuilder("conv")
    x = b.input("x", (1, 320, 64, 64), "float")
    w = b.parameter("w", (640, 320, 3, 3), "float")
    b.output(b.op("conv", [x, w], {"strides": (1, 1), "pads": (1, 1, 1, 1)}, name="conv"))
    graph = b.build().to_program(Precision("BF16"), Precision("BF16"), repeat=False)
    program = lower(graph, TtMlirOptions(opt_level=0), load_device("n150", version="2026-03-20"))
    (conv,) = [op for op in program.ops if op.kind is OpKind.CONV2D]
    assert conv.attrs.config.block_grids is BlockGrids.DECOUPLED  # type: ignore[attr-defined]
    with pytest.raises(ModelError, match=r"operation 0 \(conv\).*2025-04-25 build ttnn.conv2d's sliding-window "
                       r"config tensors are tt-metal's older format.*builds from 2025-10 are"):
        lower(graph, TtMlirOptions(opt_level=0), load_device("n150", version="2025-04-25"))


def test_a_dram_slice_aligns_a_tile_input_as_a_row_major_one() -> None:
    """get_input_channels_alignment: `input_tensor_layout == ROW_MAJOR || sliced_op`: a
    TILE input not sharded aligns to half the L1 alignment (8) in a DRAM slice, a tile's
    32 on the L1 path; so the decoupled block grid of 320 channels takes 8 channel cores
    in a slice (40 blocks of 8), 5 on the L1 path (10 blocks of 32)."""
    from tt_ops_support import tile

    from tileplan.targets.tenstorrent.ops.tt_conv_grid import input_channels_alignment

    x = tile((1, 1, 4096, 320), DRAM)
    sliced, l1 = (input_channels_alignment(MemoryLayout.BLOCK_SHARDED, x, MLIR, sliced=s) for s in (True, False))
    assert (sliced, l1) == (8, 32)
    attrs = _decoupled(ATTRS)
    assert [parallel_config(attrs, MemoryLayout.BLOCK_SHARDED, MLIR, a).cores_c for a in (sliced, l1)] == [8, 5]


def test_a_resharded_input_aligns_its_channels_by_its_own_layout() -> None:
    """get_conv_padded_input_shape_and_mem_config takes the alignment of the input's own
    layout: a WIDTH_SHARDED row-major input of 40-channel shards (its width not a multiple
    of width sharding's 32, so resharded) aligns to 32 for the block-sharded conv it feeds:
    320 channels in 10 blocks of 32, 5 channel cores (by the shard width's 8 they were 40
    blocks, 8 cores)."""
    attrs = _decoupled(ATTRS)
    x = row_major((1, 1, 4096, 320), sharded(MemoryLayout.WIDTH_SHARDED, CoreRange((0, 0), (7, 0)), (4096, 40)))
    w = row_major((640, 320, 3, 3), DRAM)
    plan = plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest(BufferType.L1, MemoryLayout.BLOCK_SHARDED), MLIR),
                   attrs)
    staged = next(b for b in plan.buffers if b.name == "conv_input_sharded")
    assert staged.spec is not None and staged.spec.memory.shard is not None
    assert staged.spec.memory.shard.shape == (512, 64) and staged.banks == 40
