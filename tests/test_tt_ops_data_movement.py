"""Layout conversion and data movement rules (tileplan.targets.tenstorrent.ops.tt_layout,
tt_data_movement) against tt-mlir's OpModel rows (TestOpModelLib.cpp @78b9ce3, the
fixture's 8x8 grid and 64 L1 banks)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tt_ops_support import DRAM, L1, MLIR, footprint, height_sharded, row_major, sharded, tile

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import CoreRange, MemoryConfig, MemoryLayout
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import (
    ConcatAttrs,
    PermuteAttrs,
    ReshapeAttrs,
    TransposeAttrs,
    _page_map_entries,
    _rank3,
    reshape_mapping_page_bytes,
)
from tileplan.targets.tenstorrent.ops.tt_layout import square_block_side
from tileplan.targets.tenstorrent.tiles import DataType, Layout

I64 = (64, 1024)


@pytest.mark.parametrize(("out", "expected"), [(DRAM, (5_120, 0)), (L1, (5_120, 2_048))],
                         ids=["H2 Reshape {64,1024}->{256,256} DRAM", "H2 Reshape ->L1"])
def test_h2_reshape_tiled(out: MemoryConfig, expected: tuple[int, int]) -> None:
    """tt-mlir OpModel Reshape: ReshapeTiledProgramFactory, a 1,024-B mapping page (64
    segments: 32 output rows x 2 faces over 4 input tiles) and one tile each way."""
    plan = plan_op(OpKind.RESHAPE, OpRequest((tile(I64, DRAM),), OutputRequest.of(out), MLIR), ReshapeAttrs((256, 256)))
    assert footprint(plan) == expected


def test_reshape_keeping_the_width_is_a_view() -> None:
    plan = plan_op(OpKind.RESHAPE, OpRequest((tile((4, 64, 1024), DRAM),), OutputRequest.of(DRAM), MLIR),
                   ReshapeAttrs((256, 1024)))
    assert plan.programs == () and footprint(plan) == (0, 0)


def test_reshape_mapping_page_merges_across_a_face_row_boundary() -> None:
    """A reshape that moves nothing across tiles ({32, 64} seen rank-3 as {1, 32, 64}):
    each output tile reads one input tile, 2 face-row segments per row, but row 15's last
    element (offset 511) and row 16's first (offset 512) are adjacent in both tiles, so
    `reshape_map_output_page` merges them: 63 segments, padded by 63 mod 16 to 78, 16 B
    each."""
    assert reshape_mapping_page_bytes((32, 64), (1, 32, 64), 16) == 78 * 16


@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4))
def test_reshape_mapping_page_covers_every_output_element(h_tiles: int, w_tiles: int, split: int) -> None:
    """At most one segment per output element, at least one per output face row: the
    mapping page lies between those bounds (before its alignment pad)."""
    h, w = h_tiles * 32, w_tiles * 32 * split
    page = reshape_mapping_page_bytes((h, w), (h * split, w // split), 16)
    segments = page // 16
    assert 1 <= segments <= 32 * 32 * 2


def _every_output_page(src: tuple[int, ...], dst: tuple[int, ...], alignment: int) -> int:
    """The mapping page walked over every output tile, no classes (the oracle)."""
    s, d = _rank3(src), _rank3(dst)
    most = max(_page_map_entries(co, ho0, wo0, s, d) for co in range(d[0]) for ho0 in range(0, d[1], 32)
               for wo0 in range(0, d[2], 32))
    return (most + most % alignment) * 16


@given(st.integers(1, 5), st.integers(1, 70), st.integers(1, 4), st.booleans())
def test_reshape_mapping_page_classes_agree_with_every_output_page(batch: int, seq: int, w_tiles: int,
                                                                  merge: bool) -> None:
    """A prefill's [B x S, D] <-> [B, S, D] (D whole tiles, S any): walking one class per
    tile row (and per place in the input's tile rows) gives what walking every output
    tile gives; a reshape that changes the width alike."""
    w = 32 * w_tiles
    pairs = [((batch * seq, w), (batch, seq, w)), ((batch, seq, w), (batch * seq, w))]
    if merge and w_tiles % 2 == 0:
        pairs.append(((batch, seq, w), (batch, seq * 2, w // 2)))
    for src, dst in pairs:
        assert reshape_mapping_page_bytes(src, dst, 16) == _every_output_page(src, dst, 16)


def test_reshape_mapping_page_walks_every_tile_column_when_the_width_changes() -> None:
    """{55, 96} -> {66, 80}: the busiest output page (106 segments) is not in the first
    tile column (at most 102 there): a width that changes keeps a class per column."""
    assert reshape_mapping_page_bytes((55, 96), (66, 80), 16) == _every_output_page((55, 96), (66, 80), 16) \
        == (106 + 106 % 16) * 16


@pytest.mark.parametrize(("out", "expected"), [(DRAM, (8_192, 0)), (L1, (8_192, 2_048))],
                         ids=["H2 Transpose(0,1) DRAM", "H2 Transpose(0,1) ->L1"])
def test_h2_transpose(out: MemoryConfig, expected: tuple[int, int]) -> None:
    """tt-mlir OpModel Transpose: dims (0, 1) of a rank-2 tensor are (H, W) in 4-D:
    transpose_wh, c_0 and c_16 of two tiles."""
    plan = plan_op(OpKind.TRANSPOSE, OpRequest((tile(I64, DRAM),), OutputRequest.of(out), MLIR), TransposeAttrs(0, 1))
    assert footprint(plan) == expected
    assert plan.outputs[0].shape == (1024, 64)


def test_h2_transpose_refuses_a_sharded_output() -> None:
    """tt-mlir OpModel Transpose: L1 interleaved -> width sharded is illegal."""
    ws = sharded(MemoryLayout.WIDTH_SHARDED, CoreRange((0, 0), (7, 0)), (64, 128))
    with pytest.raises(InputError):
        plan_op(OpKind.TRANSPOSE, OpRequest((tile(I64, L1),), OutputRequest.of(ws), MLIR), TransposeAttrs(0, 1))


def test_transpose_hc_pads_a_partial_channel_tile() -> None:
    plan = plan_op(OpKind.TRANSPOSE, OpRequest((tile((1, 3, 64, 64), DRAM),), OutputRequest.of(DRAM), MLIR),
                   TransposeAttrs(1, 2))
    assert [cb.total_bytes for cb in plan.programs[0].circular_buffers] == [4096, 512]


def test_h2_concat() -> None:
    """tt-mlir OpModel Concat: two {64, 1024} L1 tensors along dim 0 to DRAM: c_0 of two
    tiles."""
    x = tile(I64, L1)
    plan = plan_op(OpKind.CONCAT, OpRequest((x, x), OutputRequest.of(DRAM), MLIR), ConcatAttrs(0))
    assert footprint(plan) == (4_096, 0)
    assert plan.outputs[0].shape == (128, 1024)


@pytest.mark.parametrize(("shape", "dims", "factory", "cb"), [
    ((1, 64, 128, 256), (0, 3, 1, 2), "MultiCoreTileRowInvariant", 8_192),
    ((2, 1280, 8, 8), (2, 3, 0, 1), "MultiCoreTiledGeneric", 6 * 2048 + 32),
    ((1, 2, 32, 64), (0, -3, -1, -2), "MultiCoreTileInvariant", 8_192),
], ids=["H2 PermuteTests 1 (> 0 only)", "H2 PermuteTests 2 (> 0 only)", "H2 PermuteTests 3 (> 0 only)"])
def test_permute_factories(shape: tuple[int, ...], dims: tuple[int, ...], factory: str, cb: int) -> None:
    """tt-mlir OpModel PermuteTests assert only cb > 0; the factories
    `select_program_factory` picks and their CBs (permute_tiled_program_factory.cpp)."""
    plan = plan_op(OpKind.PERMUTE, OpRequest((tile(shape, DRAM),), OutputRequest.of(L1), MLIR), PermuteAttrs(dims))
    assert plan.programs[0].name.endswith(factory)
    assert plan.cb_peak == cb and plan.output_bytes_per_core(0) > 0


def test_h2_to_layout_tile_to_row_major() -> None:
    """tt-mlir OpModel ToLayout: {64, 1024} TILE DRAM -> ROW_MAJOR DRAM: untilize, one
    32-tile block per core, c_0 and c_16 of Wt = 32 tiles (131,072 B)."""
    plan = plan_op(OpKind.TO_LAYOUT, OpRequest((tile(I64, DRAM),), OutputRequest.of(DRAM), MLIR))
    assert footprint(plan) == (131_072, 0)
    assert plan.outputs[0].layout is Layout.ROW_MAJOR


@pytest.mark.parametrize(("width", "dtype", "side", "cores", "out_page"), [
    (128256, DataType.BFLOAT8_B, 64, 63, 256_512), (32064, DataType.BFLOAT8_B, 16, 63, 64_128),
    (4096, DataType.BFLOAT16, None, 1, 8_192)])
def test_untilize_of_a_row_too_wide_for_l1_runs_the_block_factory(width: int, dtype: DataType, side: int | None,
                                                                  cores: int, out_page: int) -> None:
    """untilize.cpp `is_enough_space` (2 x in_tile x Wt above the L1 base) and
    split_blocks_for_tilize_wh: a decode's logits [1, 1, 32, 128256] bfloat8_b (4,008 tiles)
    untilize in squares of 64 tiles, 63 cores, c_0 64 x 1,088 and c_16 64 x 2,048 B, into bf16
    rows; 1,002 tiles in squares of 16; 128 bf16 tiles fit: the row factory, one core."""
    x = tile((1, 1, 32, width), L1, dtype)
    plan = plan_op(OpKind.UNTILIZE, OpRequest((x,), OutputRequest.of(L1), MLIR))
    (program,) = plan.programs
    out = plan.outputs[0]
    assert out.dtype is DataType.BFLOAT16 and out.layout is Layout.ROW_MAJOR and out.pages().page_bytes == out_page
    assert program.cores.cores == cores
    if side is None:
        assert program.name == "UntilizeMultiCoreProgramFactory"
    else:
        assert program.name == "UntilizeMultiCoreBlockProgramFactory"
        assert [(cb.pages, cb.page_bytes) for cb in program.circular_buffers] == [(side, dtype.tile_bytes),
                                                                                  (side, 2048)]


def test_the_block_sides_of_closest_square_larger_than_b() -> None:
    """work_split_tilize.hpp: a whole root that leaves fewer blocks than cores is kept;
    otherwise the next side that does."""
    assert square_block_side(16, 1002, 1, 64) == 16 and square_block_side(63, 4008, 1, 64) == 64
    assert square_block_side(4, 8, 8, 64) == 2 and square_block_side(2, 100, 1, 64) == 2


def test_h2_to_layout_refuses_interleaved_to_height_sharded() -> None:
    """tt-mlir OpModel ToLayout: TILE DRAM -> ROW_MAJOR L1 height sharded is illegal."""
    with pytest.raises(InputError, match="interleaved"):
        plan_op(OpKind.TO_LAYOUT, OpRequest((tile(I64, DRAM),), OutputRequest.of(height_sharded(64, 8, 8, (32, 1024))),
                                            MLIR))


def test_tilize_doubles_nothing_and_takes_row_major_input() -> None:
    plan = plan_op(OpKind.TILIZE, OpRequest((row_major(I64, DRAM),), OutputRequest.of(L1), MLIR))
    assert plan.outputs[0].layout is Layout.TILE
    assert plan.cb_peak == 2 * 32 * 2048
