"""ttnn.conv2d's DRAM path (tt_conv_dram.py), each figure derived from tt-metal's
op_slicing.cpp and conv2d.cpp `Conv2dSliceAttr` by hand."""

from __future__ import annotations

import pytest

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Arch
from tileplan.targets.tenstorrent.memory import BufferType, MemoryConfig, MemoryLayout, TensorSpec
from tileplan.targets.tenstorrent.ops.base import OpRequest, OpTarget, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dAttrs, Conv2dConfig, SliceType
from tileplan.targets.tenstorrent.ops.tt_conv_dram import (
    auto_shard_layout,
    best_guess_slice_type,
    conv2d_sliced,
    conv_slice,
    determine_slices,
    plan_conv2d_routed,
    shard_estimate,
    slice_l1_usage,
    slice_ranges,
)
from tileplan.targets.tenstorrent.tiles import DataType, Layout

N150 = OpTarget(Arch.WORMHOLE_B0, (8, 8), 64, 12, 1499136, 98304)
DRAM = MemoryConfig(BufferType.DRAM, MemoryLayout.INTERLEAVED, None)
CFG = Conv2dConfig(weights_dtype=DataType.BFLOAT16, config_tensors_in_dram=True)


def _conv(c: int, o: int, h: int, w: int, slice_type: SliceType | None = None) -> Conv2dAttrs:
    return Conv2dAttrs(c, o, 1, (h, w), (3, 3), padding=(1, 1), config=CFG, slice_type=slice_type)


def _req(a: Conv2dAttrs, buffer: BufferType = BufferType.DRAM) -> OpRequest:
    h, w = a.input_hw
    mem = DRAM if buffer is BufferType.DRAM else MemoryConfig(BufferType.L1, MemoryLayout.INTERLEAVED, None)
    x = TensorSpec((1, 1, h * w, a.in_channels), DataType.BFLOAT16, Layout.ROW_MAJOR, mem)
    wt = TensorSpec((1, 1, 9 * 32, 64), DataType.BFLOAT16, Layout.TILE, DRAM)
    return OpRequest((x, wt), OutputRequest(dtype=DataType.BFLOAT16), N150)


def test_slice_dimension_guess_follows_op_slicing() -> None:
    # TILE output: height below 200 columns or when taller than wide, else width
    assert best_guess_slice_type((480, 640), Layout.TILE) is SliceType.DRAM_WIDTH
    assert best_guess_slice_type((640, 480), Layout.TILE) is SliceType.DRAM_HEIGHT
    assert best_guess_slice_type((100, 199), Layout.TILE) is SliceType.DRAM_HEIGHT
    # ROW_MAJOR: height only when H > 3 W
    assert best_guess_slice_type((301, 100), Layout.ROW_MAJOR) is SliceType.DRAM_HEIGHT
    assert best_guess_slice_type((300, 100), Layout.ROW_MAJOR) is SliceType.DRAM_WIDTH


def test_slice_ranges_split_units_evenly_first_slices_larger() -> None:
    # 640 columns, TILE width slices: 20 units of 32 over 3 slices -> 7, 7, 6 units
    assert slice_ranges(640, 32, 3) == [(0, 224), (224, 448), (448, 640)]
    # 100 rows by 1 over 3 slices: 34, 33, 33; a last unit past the end is clipped
    assert slice_ranges(100, 1, 3) == [(0, 34), (34, 67), (67, 100)]
    assert slice_ranges(40, 32, 2) == [(0, 32), (32, 40)]


def test_input_slice_and_padding_per_side() -> None:
    a = _conv(32, 32, 480, 640)
    # output columns [0, 320): input from 0*1-1 (clamped, edge: full padding 1) to 319-1+3 = 321
    first = conv_slice(a, SliceType.DRAM_WIDTH, 0, 320, Layout.TILE)
    assert first.conv.input_hw == (480, 321) and first.conv.pads == (1, 1, 1, 0)
    assert first.conv.output_hw == (480, 320)
    # [320, 640): input 319 .. 641 clamped to 640 (edge: right padding 1): 321 columns
    last = conv_slice(a, SliceType.DRAM_WIDTH, 320, 640, Layout.TILE)
    assert last.conv.input_hw == (480, 321) and last.conv.pads == (1, 1, 0, 1)
    # a TILE width slice of 40 columns not at the end: the missing 24 columns x stride padded right
    mid = conv_slice(_conv(32, 32, 480, 640), SliceType.DRAM_WIDTH, 32, 72, Layout.TILE)
    assert mid.conv.input_hw == (480, 42) and mid.conv.pads == (1, 1, 0, 24)
    assert mid.conv.output_hw == (480, 64)


def test_two_width_slices_when_one_does_not_fit() -> None:
    a = _conv(32, 32, 480, 640)
    d = determine_slices("ttnn.conv2d", _req(a), conv2d_sliced(a), auto_shard_layout)
    assert d.slice_type is SliceType.DRAM_WIDTH and len(d.slices) == 2
    assert d.l1_usage <= N150.max_l1_space
    one = conv_slice(a, SliceType.DRAM_WIDTH, 0, 640, Layout.TILE)
    from tileplan.targets.tenstorrent.ops.tt_conv_dram import _slice_conv
    assert slice_l1_usage(_slice_conv("c", _req(a), one, auto_shard_layout, True)[1]) > N150.max_l1_space


def test_the_slices_fit_the_allocator_s_free_l1_not_the_space_above_the_base() -> None:
    """op_slicing.cpp compares each slice count's estimate with `L1_stats.total_free_bytes`
    (BEVDepth's refusal: "Available L1: 1329888 bytes", n150's bank beside 64 KiB of
    L1_SMALL), not with L1 above the allocator's base: a VAE decoder's 512-channel 3x3
    conv over 640 x 360 (bf16, DRAM) needs more slices when the free L1 is the bank."""
    from dataclasses import replace

    a = Conv2dAttrs(512, 512, 1, (640, 360), (3, 3), padding=(1, 1), config=CFG)
    base = 103712
    wide = replace(N150, l1_unreserved_base=base)
    bank = replace(wide, l1_free=1499136 - base - 65536)

    def decide(target: OpTarget):
        req = OpRequest((TensorSpec((1, 1, 640 * 360, 512), DataType.BFLOAT16, Layout.ROW_MAJOR, DRAM),
                         TensorSpec((1, 1, 9 * 512, 512), DataType.BFLOAT16, Layout.TILE, DRAM)),
                        OutputRequest(dtype=DataType.BFLOAT16), target)
        return determine_slices("ttnn.conv2d", req, conv2d_sliced(a), auto_shard_layout)

    loose, tight = decide(wide), decide(bank)
    assert loose.l1_usage <= wide.max_l1_space and loose.l1_usage > bank.free_l1
    assert tight.l1_usage <= bank.free_l1 == 1329888
    assert len(tight.slices) > len(loose.slices)


def test_sliced_plan_programs_and_buffers() -> None:
    a = _conv(32, 32, 480, 640)
    plan = plan_conv2d_routed(OpKind.CONV2D, _req(a), a)
    names = [p.name for p in plan.programs]
    # Conv2dSliceAttr::run_L1_op: the slice's input freed after the halo, the halo output moved up
    per_slice = ["PaddedSliceRMProgramFactory", "UntilizeWithHaloProgramFactory", "MoveShardedProgramFactory",
                 "Conv2dShardedProgramFactory", "SliceWriteTiledShardedInputProgramFactory"]
    assert names == per_slice * 2
    out = plan.buffers[0]
    # the DRAM output [1, 480, 640, 32] TILE: 9,600 x 1 tiles of 2,048 B over 12 banks, alive throughout
    assert out.name == "output0" and out.buffer_type is BufferType.DRAM and out.live == (0, 9)
    assert out.pages == 9600 and out.page_bytes == 2048 and out.bytes_per_bank == 800 * 2048
    assert plan.outputs[0].memory.buffer_type is BufferType.DRAM
    # padded_slice: the output CB bound to the slice's shard, no scratch (64-B rows are aligned, C = 32)
    ps = plan.programs[0]
    assert [cb.name for cb in ps.circular_buffers] == ["output"] and ps.cb_bytes == 0
    # the move and slice_write: CBs bound to the buffers only
    assert plan.programs[2].cb_bytes == 0 and plan.programs[4].cb_bytes == 0
    slice0 = [b for b in plan.buffers if b.name.startswith("slice0_") and b.buffer_type is BufferType.L1]
    assert [(b.name, b.live) for b in slice0] == [("slice0_input", (0, 1)), ("slice0_halo_output", (1, 1)),
                                                  ("slice0_halo_output (moved)", (2, 3)),
                                                  ("slice0_conv_output_sharded", (3, 4))]
    # the config tensors in DRAM (config_tensors_in_dram), a row a core of the slice's 64
    # cores: the halo's four through the halo, the reader indices through the conv; the
    # halo's config CBs are then L1 of its own (24 + 24 + 64 + 56 B), the conv's reader
    # CB keeps get_cb_info's 75 tiles x 32 x 2 = 4,800 B
    configs = [(b.name, b.live, b.pages) for b in plan.buffers
               if b.name.startswith("slice0_") and b.buffer_type is BufferType.DRAM]
    assert configs == [("slice0_halo_padding_config0", (1, 1), 64), ("slice0_halo_padding_config1", (1, 1), 64),
                       ("slice0_halo_gather_config0", (1, 1), 64), ("slice0_halo_gather_config1", (1, 1), 64),
                       ("slice0_conv_reader_indices", (3, 3), 64)]
    halo_cbs = {cb.name: (cb.total_bytes, cb.globally_allocated) for cb in plan.programs[1].circular_buffers}
    assert [halo_cbs[n] for n in ("padding_config0", "padding_config1", "gather_config0", "gather_config1")] == [
        (24, False), (24, False), (64, False), (56, False)]
    reader = next(cb for cb in plan.programs[3].circular_buffers if cb.name == "reader_indices")
    assert (reader.total_bytes, reader.globally_allocated) == (4_800, False)


def test_one_slice_runs_the_l1_path_then_moves_to_dram() -> None:
    a = _conv(3, 64, 224, 224)
    plan = plan_conv2d_routed(OpKind.CONV2D, _req(a), a)
    assert [p.name for p in plan.programs] == ["InterleavedToShardedProgramFactory", "UntilizeWithHaloProgramFactory",
                                               "MoveShardedProgramFactory", "Conv2dShardedProgramFactory",
                                               "ShardedToInterleavedProgramFactory"]
    assert plan.outputs[0].memory.buffer_type is BufferType.DRAM


def test_execution_path() -> None:
    from dataclasses import replace
    a = replace(_conv(32, 32, 480, 640, SliceType.L1_FULL),
                config=replace(CFG, shard_layout=MemoryLayout.HEIGHT_SHARDED))
    plan = plan_conv2d_routed(OpKind.CONV2D, _req(a), a)
    assert "PaddedSliceRMProgramFactory" not in [p.name for p in plan.programs]
    # an explicit DRAM_HEIGHT config slices by rows only
    h = _conv(32, 32, 480, 640, SliceType.DRAM_HEIGHT)
    d = determine_slices("ttnn.conv2d", _req(h), conv2d_sliced(h), auto_shard_layout)
    assert d.slice_type is SliceType.DRAM_HEIGHT and len(d.slices) == 2
    assert [(s.out_start, s.out_end) for s in d.slices] == [(0, 240), (240, 480)]


def test_a_grouped_conv_slices_as_its_dense_twin() -> None:
    """conv2d_DRAM passes `groups` to each slice's conv2d_L1, whose weights are the dense
    grouped layout: the same slices and programs as the conv with groups 1."""
    g = Conv2dAttrs(32, 32, 1, (480, 640), (3, 3), padding=(1, 1), groups=2, config=CFG, slice_type=None)
    dense = Conv2dAttrs(32, 32, 1, (480, 640), (3, 3), padding=(1, 1), config=CFG, slice_type=None)
    grouped_plan, dense_plan = plan_conv2d_routed(OpKind.CONV2D, _req(g), g), plan_conv2d_routed(
        OpKind.CONV2D, _req(dense), dense)
    assert "PaddedSliceRMProgramFactory" in [p.name for p in grouped_plan.programs]
    assert grouped_plan.programs == dense_plan.programs and grouped_plan.outputs == dense_plan.outputs


def test_a_grouped_conv_no_slicing_fits_names_the_channel_chunking_it_does_not_model() -> None:
    # 19,136 B of L1 above the base: no slice of this 512-channel conv fits (16 height
    # slices of it need 74,624 B)
    tight = OpTarget(Arch.WORMHOLE_B0, (8, 8), 64, 12, 1499136, 1480000)
    g = Conv2dAttrs(512, 512, 1, (64, 64), (3, 3), padding=(1, 1), groups=512, config=CFG, slice_type=None)
    x = TensorSpec((1, 1, 64 * 64, 512), DataType.BFLOAT16, Layout.ROW_MAJOR, DRAM)
    req = OpRequest((x, TensorSpec((1, 1, 9 * 512, 512), DataType.BFLOAT16, Layout.TILE, DRAM)),
                    OutputRequest(dtype=DataType.BFLOAT16), tight)
    with pytest.raises(InputError, match=r"could not find valid slice configuration.*channel_chunk_count_if_needed, "
                                         r"groups 512\) is not modelled"):
        plan_conv2d_routed(OpKind.CONV2D, req, g)


@pytest.mark.parametrize(("c", "o", "hw", "k", "s", "expected"), [
    (3, 32, 32, 8, 8, MemoryLayout.HEIGHT_SHARDED),  # a patch embedding: width sharding would hold 24 x the L1
    (512, 512, 14, 3, 1, MemoryLayout.BLOCK_SHARDED),  # weights split over the channel cores
    (64, 64, 112, 3, 1, MemoryLayout.HEIGHT_SHARDED),  # a tall, narrow image
    (2048, 2048, 7, 3, 1, MemoryLayout.WIDTH_SHARDED),  # 49 rows: the channels take the grid
], ids=["patch 3->32", "512 at 14x14", "64 at 112x112", "2048 at 7x7"])
def test_the_automatic_shard_layout_is_the_least_l1_estimate(c, o, hw, k, s, expected) -> None:
    """determine_conv_config_for_auto_shard (tt-metal #17485): height sharding unless block
    costs less L1 a core (on at least a grid row of cores) or width does."""
    pad = (k // 2, k // 2) if s == 1 else (0, 0)
    a = Conv2dAttrs(c, o, 1, (hw, hw), (k, k), (s, s), padding=pad, config=CFG, slice_type=None)
    estimates = {layout: shard_estimate(a, layout, N150) for layout in MemoryLayout if layout.sharded}
    chosen = auto_shard_layout(a, N150)
    assert chosen is expected
    assert estimates[chosen] is not None
    assert all(e is None or estimates[chosen].total <= e.total or
               (layout is MemoryLayout.BLOCK_SHARDED and e.cores < N150.grid[0])
               for layout, e in estimates.items())


def test_unpadded_width_sharded_slices_run_without_a_halo_but_are_estimated_with_one() -> None:
    """conv2d_L1's `bypass_halo` holds in each DRAM slice (run_L1_op calls conv2d_L1):
    1024 -> 1024 channels, 3x3 unpadded on 66 x 66 (output 64 x 64, so no slice is padded
    on the right for its TILE output), width sharded: each slice is padded_slice -> conv ->
    slice_write with no halo, and its sharded input (18 rows x 66 x 32 channels x 2 B =
    76,032 B a core) is held through the conv and slice_write (run_sliced_op's
    `sliced_input_tensor`; conv2d_L1 frees it only after a halo). The slice count still
    comes from `calculate_L1_usage_for_conv_op`, which counts a halo output: 4 slices at
    1,378,624 B a core of the 1,400,832 free."""
    ws = Conv2dConfig(shard_layout=MemoryLayout.WIDTH_SHARDED, weights_dtype=DataType.BFLOAT16,
                      config_tensors_in_dram=True)
    a = Conv2dAttrs(1024, 1024, 1, (66, 66), (3, 3), padding=(0, 0), config=ws, slice_type=None)
    x = TensorSpec((1, 1, 66 * 66, 1024), DataType.BFLOAT16, Layout.ROW_MAJOR, DRAM)
    wt = TensorSpec((1, 1, 9 * 1024, 1024), DataType.BFLOAT16, Layout.TILE, DRAM)
    req = OpRequest((x, wt), OutputRequest(dtype=DataType.BFLOAT16), N150)
    decision = determine_slices("ttnn.conv2d", req, conv2d_sliced(a), auto_shard_layout)
    assert (decision.slice_type, len(decision.slices), decision.l1_usage) == (SliceType.DRAM_HEIGHT, 4, 1_378_624)
    plan = plan_conv2d_routed(OpKind.CONV2D, req, a)
    assert [p.name for p in plan.programs[:3]] * 4 == [p.name for p in plan.programs]
    assert [p.name for p in plan.programs[:3]] == ["PaddedSliceRMProgramFactory", "Conv2dShardedProgramFactory",
                                                   "SliceWriteTiledShardedInputProgramFactory"]
    first = next(b for b in plan.buffers if b.name == "slice0_input")
    assert (first.bytes_per_bank, first.live) == (76_032, (0, 2))


def test_a_transposed_block_sharded_slice_keeps_its_column_major_orientation() -> None:
    """`transpose_shards` on a DRAM slice's block-sharded conv: padded_slice's sharded input
    is COL_MAJOR as determine_parallel_config gives it, so the conv keeps it: N*H*W along
    x (8 columns of an n300's 8 x 7 grid), the 64 channels' 2 tiles along y: (0,0)-(7,1).
    Read ROW_MAJOR, the same grid held 2 N*H*W cores and the halo could not place the
    slice's 16,640 input sticks (the review's finding)."""
    from dataclasses import replace

    from tileplan.targets.tenstorrent.memory import CoreRange
    from tileplan.targets.tenstorrent.ops import plan_op

    n300 = OpTarget(Arch.WORMHOLE_B0, (8, 7), 56, 12, 1_499_136, 103_712)
    cfg = replace(CFG, shard_layout=MemoryLayout.BLOCK_SHARDED, transpose_shards=True)
    a = Conv2dAttrs(64, 64, 1, (256, 256), (3, 3), padding=(1, 1), config=cfg, slice_type=SliceType.DRAM_HEIGHT)
    plan = plan_op(OpKind.CONV2D, replace(_req(a), target=n300), a)
    convs = [p for p in plan.programs if p.name == "Conv2dShardedProgramFactory"]
    assert convs and all(p.cores == CoreRange((0, 0), (7, 1)) for p in convs)
