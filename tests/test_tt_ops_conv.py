"""conv2d and halo rules (tileplan.targets.tenstorrent.ops.tt_conv) against the
Blackhole p150b trace of TENSTORRENT-NOTES.md (h) H3 (
tenstorrent/tt-metal tests/ttnn/unit_tests/base_functionality/graph_l1_traces/README.md), and properties of
the shard-grid search."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tt_ops_support import DRAM, MLIR, P150, footprint, height_sharded, row_major, sharded

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardOrientation,
    ShardSpec,
)
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import (
    Conv2dAttrs,
    Conv2dConfig,
)
from tileplan.targets.tenstorrent.ops.tt_conv_grid import divisor_with_padding, input_channels_alignment
from tileplan.targets.tenstorrent.ops.tt_conv3d import Conv3dAttrs, Conv3dConfig
from tileplan.targets.tenstorrent.ops.tt_sliding_window import SlidingWindow, max_out_nsticks_per_core
from tileplan.targets.tenstorrent.versions import ReaderIndicesCb

HS = Conv2dConfig(shard_layout=MemoryLayout.HEIGHT_SHARDED)
H3_ATTRS = Conv2dAttrs(32, 64, 1, (128, 128), (3, 3), (1, 1), (1, 1), bias=True, config=HS)


def _h3() -> OpPlan:
    x = row_major((1, 1, 16384, 32), DRAM)
    w = row_major((64, 32, 3, 3), DRAM)
    return plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest.of(height_sharded(103, 11, 10, (160, 64))), P150),
                   H3_ATTRS)


def test_h3_conv2d_cbs() -> None:
    """H3: conv2d 32 -> 64, 3x3, 128x128, height sharded: conv CBs 12,288 + 18,432 +
    12,288 + 30,720 + 4,096 + 64 = 77,888 B, the op's CB peak (peak inside
    Conv2dDeviceOperation)."""
    plan = _h3()
    conv = next(p for p in plan.programs if p.name.startswith("Conv2d"))
    unbound = [(cb.name, cb.total_bytes) for cb in conv.circular_buffers if not cb.globally_allocated]
    assert unbound == [("weights", 12_288), ("act", 18_432), ("act_second_reader", 12_288),
                       ("act_tilized", 30_720), ("bias", 4_096), ("l1_array", 64)]
    assert plan.cb_peak == 77_888


def test_h3_conv2d_grid_and_buffers() -> None:
    """H3: 103 cores (find_closest_largest_divisor_with_num_padding_and_mult(512, 110, 1));
    activation shard 160 sticks x 64 B = 10,240 B; halo output 424 sticks x 64 B =
    27,136 B; conv output 20,480 B a core; the halo program's only unbound CBs are two
    64-B padding sticks."""
    plan = _h3()
    sizes = {b.name: b.bytes_per_bank for b in plan.buffers}
    assert sizes == {"conv_input_sharded": 10_240, "halo_output": 27_136, "halo_output (moved)": 27_136,
                     "output0": 20_480, "halo_padding_config0": 16, "halo_padding_config1": 16,
                     "halo_gather_config0": 48, "halo_gather_config1": 48, "conv_reader_indices": 32}
    assert plan.output_bytes_per_core(0) == 20_480
    halo = next(p for p in plan.programs if p.name.startswith("UntilizeWithHalo"))
    assert halo.cb_bytes == 2 * 64
    conv = next(p for p in plan.programs if p.name.startswith("Conv2d"))
    assert conv.circular_buffers[0].core_ranges[0].cores + conv.circular_buffers[0].core_ranges[1].cores == 103
    assert footprint(plan) == (77_888, 20_480)


def test_halo_alone() -> None:
    x = row_major((1, 1, 16384, 32), DRAM)
    plan = plan_op(OpKind.HALO, OpRequest((x, row_major((64, 32, 3, 3), DRAM)), OutputRequest.of(DRAM), P150),
                   H3_ATTRS)
    assert footprint(plan) == (128, 27_136)


def test_h3_divisor() -> None:
    assert divisor_with_padding(512, 110) == 103


@given(st.integers(1, 4096), st.integers(1, 130), st.integers(1, 8))
def test_divisor_with_padding_pads_less_than_a_share(num: int, start: int, mult: int) -> None:
    """find_closest_largest_divisor_with_num_padding_and_mult: the count returned is at
    most `start` and (unless 1) pads `num` by less than one core's share."""
    d = divisor_with_padding(num, start, mult)
    assert 1 <= d <= start
    padded = -(-num // (d * mult)) * d * mult
    assert d == 1 or padded - num < padded // d


@given(st.integers(3, 64), st.integers(3, 64), st.integers(1, 3), st.integers(1, 2), st.integers(0, 1),
       st.integers(1, 40))
def test_halo_holds_at_least_its_own_windows(h: int, w: int, k: int, s: int, p: int, cores: int) -> None:
    """A core's halo shard spans at least its outputs' first window and never more than
    the whole padded input."""
    if (h + 2 * p - k) < 0 or (w + 2 * p - k) < 0:
        return
    window = SlidingWindow(1, (h, w), (k, k), (s, s), (p, p, p, p), num_cores_nhw=cores, snap_to_tile=False)
    sticks = max_out_nsticks_per_core(window)
    assert (k - 1) * (w + 2 * p) + k <= sticks <= (h + 2 * p) * (w + 2 * p)


def test_conv_refuses_what_it_does_not_model() -> None:
    x = row_major((1, 1, 16384, 32), DRAM)
    w = row_major((64, 32, 1, 1), DRAM)
    with pytest.raises(InputError, match="shard layout"):
        plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest.of(DRAM), MLIR),
                Conv2dAttrs(32, 64, 1, (128, 128), (3, 3), (1, 1), (1, 1)))
    with pytest.raises(InputError, match="matmul"):
        plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest.of(DRAM), MLIR),
                Conv2dAttrs(32, 64, 1, (128, 128), (1, 1), config=HS))


def test_conv_to_an_interleaved_output_adds_sharded_to_interleaved() -> None:
    x = row_major((1, 1, 16384, 32), DRAM)
    plan = plan_op(OpKind.CONV2D, OpRequest((x, row_major((64, 32, 3, 3), DRAM)), OutputRequest.of(DRAM), P150),
                   H3_ATTRS)
    assert [p.name for p in plan.programs][-1] == "ShardedToInterleavedProgramFactory"
    assert plan.output_bytes_per_core(0) == 0


def test_conv3d_cbs() -> None:
    """conv3d_program_factory.cpp: 3x3x3 kernel, 32 -> 64 channels, a 1x1x32 output block:
    patch 864 (27 tiles), 32 patches (1 tile row): vol2col rows 32 x 1,728 B, tilized 27,
    weights 27 x 2 tiles, partials and result 2 tiles each, bias 2; the 3x3x34 receptive
    field prefetched (306 positions x 64 B)."""
    x = row_major((1, 8, 16, 32, 32), DRAM)
    attrs = Conv3dAttrs(64, (3, 3, 3), padding=(1, 1, 1), bias=True, config=Conv3dConfig(w_out_block=32))
    plan = plan_op(OpKind.CONV3D, OpRequest((x,), OutputRequest.of(DRAM), MLIR), attrs)
    sizes = {cb.name: cb.total_bytes for cb in plan.programs[0].circular_buffers}
    assert sizes == {"vol2col_rm": 32 * 1728, "vol2col_tiled": 27 * 2048, "weight_tiled": 54 * 2048,
                     "matmul_interm": 2 * 2048, "matmul_result_rm": 2 * 2048, "bias": 2 * 2048,
                     "input_shard": 3 * 3 * 34 * 64}
    assert plan.outputs[0].shape == (1, 8, 16, 32, 64)


def test_the_output_keeps_the_convs_logical_channels_and_the_padded_pages() -> None:
    """conv2d_op.cpp gives the output [1, 1, N*OH*OW, O] logically: 16 channels here,
    height sharded (one channel core), in 32-wide tiles: the H3 conv with 16 filters
    writes 512 x 1 tiles, 5 x 1 a core on its 103 cores (10,240 B), and its DRAM output
    holds the 512 tiles over 8 banks (64 x 2,048 = 131,072 B a bank)."""
    x = row_major((1, 1, 16384, 32), DRAM)
    attrs = Conv2dAttrs(32, 16, 1, (128, 128), (3, 3), (1, 1), (1, 1), config=HS)
    plan = plan_op(OpKind.CONV2D, OpRequest((x, row_major((16, 32, 3, 3), DRAM)), OutputRequest.of(DRAM), P150),
                   attrs)
    assert plan.outputs[0].shape == (1, 1, 16384, 16)
    sizes = {b.name: b.bytes_per_bank for b in plan.buffers}
    assert sizes["conv_output_sharded"] == 5 * 2_048 and sizes["output0"] == 64 * 2_048


def test_a_conv_whose_channels_pad_to_its_channel_cores_keeps_its_logical_channels() -> None:
    """conv2d_op.cpp compute_output_specs: the output's logical channels are the conv's
    (208: GoogLeNet's inception4a 3x3 on 14 x 14), its block shards hold them padded to
    the channel cores, and every core reserves a whole shard (Buffer::num_dev_pages)."""
    attrs = Conv2dAttrs(96, 208, 1, (14, 14), (3, 3), padding=(1, 1),
                        config=Conv2dConfig(shard_layout=MemoryLayout.BLOCK_SHARDED))
    x, w = row_major((1, 1, 196, 96), DRAM), row_major((208, 96, 3, 3), DRAM)
    block = sharded(MemoryLayout.BLOCK_SHARDED, CoreRange((0, 0), (7, 6)), (32, 32))
    plan = plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest.of(block), MLIR), attrs)
    out = plan.outputs[0]
    assert out.shape == (1, 1, 196, 208)
    shard = out.memory.shard
    assert shard is not None
    rows, cols = shard.shape
    channel_cores = -(-208 // cols)
    assert cols * channel_cores > 208  # the channels padded to the channel cores
    (buf,) = [b for b in plan.buffers if b.name == "output0"]
    assert buf.bytes_per_bank == (rows // 32) * (cols // 32) * 2048


@pytest.mark.parametrize(("layout", "x", "expected"), [
    (MemoryLayout.HEIGHT_SHARDED, row_major((1, 1, 50176, 3), DRAM), 8),  # an input not sharded: L1 alignment / 2
    (MemoryLayout.BLOCK_SHARDED, row_major((1, 1, 50176, 3), DRAM), 8),
    (MemoryLayout.WIDTH_SHARDED, row_major((1, 1, 50176, 3), DRAM), 32),
    (MemoryLayout.HEIGHT_SHARDED, row_major((1, 1, 1024, 64), height_sharded(8, 8, 1, (128, 64))), 32),
    (MemoryLayout.HEIGHT_SHARDED, row_major((1, 1, 1024, 48), height_sharded(8, 8, 1, (128, 48))), 16),
    (MemoryLayout.HEIGHT_SHARDED, row_major((1, 1, 1024, 24), height_sharded(8, 8, 1, (128, 24))), 8),
], ids=["interleaved HS", "interleaved BS", "interleaved WS", "shard 64", "shard 48", "shard 24"])
def test_the_input_channels_alignment_is_tt_metals(layout, x, expected) -> None:
    """conv2d_utils.cpp get_input_channels_alignment: 8 for a row-major input not sharded
    (a height or block sharded conv), the shard width's largest of 32 / 16 / 8 for a
    sharded one, 32 for a width-sharded conv."""
    assert input_channels_alignment(layout, x, MLIR) == expected


def test_vit_b16s_patch_embedding_pads_its_three_channels_to_eight_and_fits() -> None:
    """ViT-B/16's patch embedding (3 -> 768, 16 x 16 / 16 on 224 x 224, bf16) from a DRAM
    input at level 0: the 3 channels padded to 8, not 32, so one kernel row's activation
    block is 8 x 16 = 128 values (4 tiles) and the conv's weights CB 24 x 4 tiles; the conv
    fits L1 in one slice."""
    attrs = Conv2dAttrs(3, 768, 1, (224, 224), (16, 16), (16, 16), bias=True,
                        config=Conv2dConfig(shard_layout=MemoryLayout.HEIGHT_SHARDED, config_tensors_in_dram=True))
    x, w = row_major((1, 1, 224 * 224, 3), DRAM), row_major((768, 3, 16, 16), DRAM)
    plan = plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest.of(DRAM), MLIR), attrs)
    conv = next(p for p in plan.programs if p.name.startswith("Conv2d"))
    weights = next(cb for cb in conv.circular_buffers if cb.name == "weights")
    assert weights.total_bytes == 24 * 4 * 2048


def test_only_tt_metals_1d_depthwise_conv_is_refused() -> None:
    """conv2d_utils.cpp `is_1d_deptwise_conv`: depthwise, a kernel and an image one wide,
    no bias. A depthwise 3 x 3 conv on a 1 x 1 image (EfficientNet's last stage on a small
    input) is not that case: it takes the regular path."""
    x = row_major((1, 1, 1, 64), DRAM)
    w = row_major((64, 1, 3, 3), DRAM)
    plan = plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest.of(DRAM), MLIR),
                   Conv2dAttrs(64, 64, 1, (1, 1), (3, 3), padding=(1, 1), groups=64, config=HS))
    assert plan.programs
    column = row_major((1, 1, 16, 64), DRAM)
    with pytest.raises(InputError, match="1-D depthwise"):
        plan_op(OpKind.CONV2D, OpRequest((column, row_major((64, 1, 3, 1), DRAM)), OutputRequest.of(DRAM), MLIR),
                Conv2dAttrs(64, 64, 1, (16, 1), (3, 1), padding=(1, 0), groups=64, config=HS))


def test_the_sharded_input_holds_whole_tiles_of_rows_a_core() -> None:
    """conv2d_utils.cpp determine_input_memory_config: the input's N*H*W rows padded to a
    whole tile a core before sharding (a row a core for a width-sharded row-major input):
    a 50 x 50 input, stride 2 (25 x 25 outputs, 20 tiles over 20 cores), 2,500 rows become
    2,560, 128 a core rather than 125."""
    attrs = Conv2dAttrs(256, 64, 1, (50, 50), (3, 3), (2, 2), (1, 1), config=HS)
    plan = plan_op(OpKind.CONV2D, OpRequest((row_major((1, 1, 2500, 256), DRAM), row_major((64, 256, 3, 3), DRAM)),
                                            OutputRequest.of(DRAM), MLIR), attrs)
    staged = next(b for b in plan.buffers if b.name == "conv_input_sharded")
    assert staged.banks == 20 and staged.bytes_per_bank == 128 * 256 * 2


def test_the_halo_output_is_held_while_the_output_moves_to_its_memory_config() -> None:
    """conv2d.cpp conv2d_L1: `ttnn::to_memory_config` of the conv's output runs with the
    halo output still in scope (freed when the function returns): asked for a DRAM
    output, the (moved) halo output lives through the sharded-to-interleaved program."""
    x = row_major((1, 1, 16384, 32), DRAM)
    w = row_major((64, 32, 3, 3), DRAM)
    plan = plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest.of(DRAM), P150), H3_ATTRS)
    names = [p.name for p in plan.programs]
    s2i = names.index("ShardedToInterleavedProgramFactory")
    assert s2i == len(names) - 1
    held = [b for b in plan.buffers if b.name.startswith("halo_output")]
    assert held[-1].live[1] == s2i and all(b.live[1] < s2i for b in held[:-1])


def test_the_weights_take_their_own_type_unless_the_config_names_one() -> None:
    """conv2d.cpp / prepare_conv2d_weights.cpp: `conv_config.weights_dtype.value_or(
    weight_tensor.dtype())`: FP32 weights beside a bfloat16 activation keep FP32 tiles in
    the weights and bias CBs (4,096 B a page); Conv2dConfig.weights_dtype overrides it."""

    from tileplan.targets.tenstorrent.tiles import DataType

    x = row_major((1, 1, 16384, 32), DRAM)
    w = row_major((64, 32, 3, 3), DRAM, DataType.FLOAT32)
    out = OutputRequest.of(height_sharded(103, 11, 10, (160, 64)))

    def pages(attrs: Conv2dAttrs) -> dict[str, int]:
        plan = plan_op(OpKind.CONV2D, OpRequest((x, w), out, P150), attrs)
        conv = next(p for p in plan.programs if p.name == "Conv2dShardedProgramFactory")
        return {cb.name: cb.page_bytes for cb in conv.circular_buffers if cb.name in ("weights", "bias")}

    assert pages(H3_ATTRS) == {"weights": 4096, "bias": 4096}
    named = replace(H3_ATTRS, config=replace(HS, weights_dtype=DataType.BFLOAT16))
    assert pages(named) == {"weights": 2048, "bias": 2048}


def test_a_width_sharded_conv_writes_its_output_on_its_own_channel_cores() -> None:
    """conv2d_utils.cpp `determine_output_parallel_config`: a width-sharded output takes
    `find_closest_largest_divisor_with_num_padding(out_channels_ntiles, 64)` = 16 cores
    for 512 channels (16 tiles), whatever the input's channel cores (2 for 64 channels);
    the weights block is the output's width a core (1 tile) x act_block_w (64 x 9 / 2 /
    32 = 9 tiles); the output shard is 32 x 1 tiles = 65,536 B a core on 16 banks, and
    the conv program's CBs take the larger (output) grid's bounding box, 8 x 2
    (conv2d_op_width_sharded_program_factory.cpp)."""
    ws = Conv2dConfig(shard_layout=MemoryLayout.WIDTH_SHARDED)
    attrs = Conv2dAttrs(64, 512, 1, (32, 32), (3, 3), (1, 1), (1, 1), config=ws)
    x, w = row_major((1, 1, 1024, 64), DRAM), row_major((512, 64, 3, 3), DRAM)
    plan = plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED), MLIR),
                   attrs)
    conv = next(p for p in plan.programs if p.name == "Conv2dShardedProgramFactory")
    weights = next(cb for cb in conv.circular_buffers if cb.name == "weights")
    assert weights.pages == 9 and conv.cores == CoreRange((0, 0), (7, 1))
    out = next(b for b in plan.buffers if b.name == "output0")
    assert (out.banks, out.bytes_per_bank) == (16, 65_536)
    staged = next(b for b in plan.buffers if b.name == "conv_input_sharded")
    assert staged.banks == 2


def _width_sharded_plan(padding: tuple[int, int]) -> OpPlan:
    ws = Conv2dConfig(shard_layout=MemoryLayout.WIDTH_SHARDED)
    attrs = Conv2dAttrs(256, 256, 1, (16, 16), (3, 3), (1, 1), padding, config=ws)
    x, w = row_major((1, 1, 256, 256), DRAM), row_major((256, 256, 3, 3), DRAM)
    return plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED), MLIR),
                   attrs)


def test_an_unpadded_width_sharded_conv_reads_its_input_without_a_halo() -> None:
    """conv2d.cpp `conv2d_L1`: `bypass_halo` for a width-sharded conv with no padding: no
    halo program or buffer; the conv's sharded-activation CB is bound to its sharded input
    (256 rows x 32 channels a core = 16,384 B on 8 cores), which stays allocated to the
    end as the halo output would. With padding 1 the halo runs."""
    plan = _width_sharded_plan((0, 0))
    assert [p.name for p in plan.programs] == ["InterleavedToShardedProgramFactory", "Conv2dShardedProgramFactory"]
    conv = plan.programs[1]
    act = next(cb for cb in conv.circular_buffers if cb.name == "act_sharded")
    assert (act.pages, act.page_bytes, act.globally_allocated) == (256, 64, True)
    staged = next(b for b in plan.buffers if b.name == "conv_input_sharded")
    assert (staged.banks, staged.bytes_per_bank, staged.live) == (8, 16_384, (0, 1))
    assert not any(b.name.startswith("halo") for b in plan.buffers)
    padded = _width_sharded_plan((1, 1))
    assert "UntilizeWithHaloProgramFactory" in [p.name for p in padded.programs]
    assert any(b.name.startswith("halo_output") for b in padded.buffers)


def test_h3_config_tensors_are_the_traces_l1_small_buffers() -> None:
    """H3's graph-capture trace (tt-metal graph_l1_traces/README.md, conv2d.json): the
    halo's four config tensors in L1_SMALL, 1,236, 1,236, 4,120 and 4,120 B over 103 cores
    (16, 16, 48, 48 B a bank), alive through the halo program, its CBs bound to them at
    12, 12, 40 and 40 B; the conv's reader indices 2,060 B (32 B a bank), its CB bound at
    20 B (tt_sliding_window.py ports the sizes)."""
    plan = _h3()
    names = ("halo_padding_config0", "halo_padding_config1", "halo_gather_config0", "halo_gather_config1",
             "conv_reader_indices")
    bufs = {b.name: b for b in plan.buffers if b.name in names}
    assert all(b.buffer_type is BufferType.L1_SMALL and b.banks == 103 for b in bufs.values())
    assert [bufs[n].pages * bufs[n].page_bytes for n in names] == [1_236, 1_236, 4_120, 4_120, 2_060]
    halo = next(i for i, p in enumerate(plan.programs) if p.name == "UntilizeWithHaloProgramFactory")
    conv = next(i for i, p in enumerate(plan.programs) if p.name == "Conv2dShardedProgramFactory")
    assert all(bufs[n].live == (halo, halo) for n in names[:4]) and bufs["conv_reader_indices"].live == (conv, conv)
    cbs = {cb.name: (cb.total_bytes, cb.globally_allocated) for cb in plan.programs[halo].circular_buffers}
    assert [cbs[n[5:]] for n in names[:4]] == [(12, True), (12, True), (40, True), (40, True)]
    reader = next(cb for cb in plan.programs[conv].circular_buffers if cb.name == "reader_indices")
    assert (reader.total_bytes, reader.globally_allocated) == (20, True)


def test_reader_indices_in_dram_that_outgrow_their_cb_page_stop_the_conv() -> None:
    """tt-xla's AudioLDM UNet (tt-metal 3fa4d753, tt-mlir 553c0632: config tensors in
    DRAM), its deepest conv: a 3x3, padding-1 conv with a 16 x 2 output, one tile of 32
    output rows on one core: its reader indices break at each of the 15 new rows, 16
    segments, 2 + 2 x 16 = 34 entries = 68 B, over get_cb_info's page of 32 x 2 = 64 B:
    "CB page size 64 should be greater than the config tensor page size 68"
    (conv2d_op_sharded_program_factory.cpp TT_FATAL, the tt-xla remediation notes)."""
    cfg = Conv2dConfig(shard_layout=MemoryLayout.HEIGHT_SHARDED, config_tensors_in_dram=True)
    attrs = Conv2dAttrs(64, 64, 1, (16, 2), (3, 3), (1, 1), (1, 1), config=cfg)
    x, w = row_major((1, 1, 32, 64), DRAM), row_major((64, 64, 3, 3), DRAM)
    with pytest.raises(InputError, match="CB page size 64 should be greater than the config tensor page size 68"):
        plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED), MLIR),
                attrs)
    # in L1_SMALL the CB takes the tensor's own page: the conv plans, 68 B of reader indices a core
    l1 = plan_op(OpKind.CONV2D, OpRequest((x, w), OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED), MLIR),
                 replace(attrs, config=replace(cfg, config_tensors_in_dram=False)))
    reader = next(b for b in l1.buffers if b.name == "conv_reader_indices")
    assert (reader.buffer_type, reader.page_bytes) == (BufferType.L1_SMALL, 68)


def test_a_sharded_input_keeps_its_grid_unless_it_needs_a_reshard() -> None:
    """conv2d_utils.cpp `get_conv_padded_input_shape_and_mem_config`: a 3x3 conv 32 -> 64
    of 64 x 64 would shard itself on 64 cores (output 2 x 2 tiles = 8,192 B a core, halo
    198 sticks = 12,672 B); an input already height sharded on 32 cores (128 rows x 32
    channels) keeps them: no interleaved-to-sharded program, output 4 x 2 tiles = 16,384 B
    and halo 264 sticks = 16,896 B a core on 32 banks. A height-sharded input in
    COL_MAJOR orientation (only block sharding keeps one) is resharded to the conv's own
    64 cores first (`ttnn::to_memory_config`)."""
    hs = Conv2dConfig(shard_layout=MemoryLayout.HEIGHT_SHARDED)
    w = row_major((64, 32, 3, 3), DRAM)
    out = OutputRequest(BufferType.L1, MemoryLayout.HEIGHT_SHARDED)

    def l1(x, attrs: Conv2dAttrs) -> tuple[list[str], dict[str, tuple[int, int]]]:
        plan = plan_op(OpKind.CONV2D, OpRequest((x, w), out, MLIR), attrs)
        return ([p.name for p in plan.programs],
                {b.name: (b.bytes_per_bank, b.banks) for b in plan.buffers if b.buffer_type is BufferType.L1})

    attrs = Conv2dAttrs(32, 64, 1, (64, 64), (3, 3), (1, 1), (1, 1), config=hs)
    programs, own = l1(row_major((1, 1, 4096, 32), DRAM), attrs)
    assert programs[0] == "InterleavedToShardedProgramFactory" and own["output0"] == (8_192, 64)
    assert own["halo_output"] == (12_672, 64)
    programs, kept = l1(row_major((1, 1, 4096, 32), height_sharded(32, 8, 4, (128, 32))), attrs)
    assert programs == ["UntilizeWithHaloProgramFactory", "MoveShardedProgramFactory", "Conv2dShardedProgramFactory"]
    assert kept == {"halo_output": (16_896, 32), "halo_output (moved)": (16_896, 32), "output0": (16_384, 32)}
    col = MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED,
                       ShardSpec(CoreRangeSet.from_count(32, 8, 4), (128, 32), ShardOrientation.COL_MAJOR))
    programs, resharded = l1(row_major((1, 1, 4096, 32), col), attrs)
    assert programs[0] == "ReshardGenericFactory" and resharded["output0"] == (8_192, 64)
    assert resharded["conv_input_sharded"] == (4_096, 64)


def test_from_pr_43193_reader_indices_past_the_worst_case_stop_the_conv_in_either_placement() -> None:
    """tt-metal PR #43193 (2026-04-27): the READER_INDICES CB takes the tensor's own page,
    checked against get_cb_info's worst case, 2 B an output row, whether the configs are
    in DRAM or L1_SMALL. tt-forge-models' dots.ocr vision tower, its patch embedding a
    3 -> 1536 conv of kernel = stride = 14 over 14 x 14 patches: one output a patch, so
    every output starts a segment; 64 patches on 2 cores of one tile (32 outputs): 2 + 2 x
    32 = 66 entries = 132 B over 32 x 2 = 64: "Reader indices buffer page size 132 exceeds
    worst-case CB size 64" (its loader's note). Before the PR the same conv with its configs
    in L1_SMALL plans (the CB bound to the 132-B tensor)."""
    w = row_major((1536, 3, 14, 14), DRAM)
    x = row_major((1, 1, 64 * 196, 3), DRAM)

    def attrs(rule: ReaderIndicesCb, in_dram: bool) -> Conv2dAttrs:
        cfg = Conv2dConfig(shard_layout=MemoryLayout.HEIGHT_SHARDED, config_tensors_in_dram=in_dram,
                           reader_indices_cb=rule)
        return Conv2dAttrs(3, 1536, 64, (14, 14), (14, 14), (14, 14), config=cfg)

    req = OpRequest((x, w), OutputRequest.of(DRAM), MLIR)
    for in_dram in (True, False):
        with pytest.raises(InputError, match="Reader indices buffer page size 132 exceeds worst-case CB size 64"):
            plan_op(OpKind.CONV2D, req, attrs(ReaderIndicesCb.ACTUAL, in_dram))
    before = plan_op(OpKind.CONV2D, req, attrs(ReaderIndicesCb.WORST_CASE, False))
    reader = next(b for b in before.buffers if b.name == "conv_reader_indices")
    assert (reader.buffer_type, reader.page_bytes) == (BufferType.L1_SMALL, 132)


def test_transpose_shards_orients_block_sharding_only() -> None:
    """conv2d_utils.cpp `determine_parallel_config`: the shard orientation is the block
    orientation (`transpose_shards`) for block sharding, ROW_MAJOR for height and width
    sharding whatever the config says."""
    x, w = row_major((1, 1, 4096, 32), DRAM), row_major((64, 32, 3, 3), DRAM)
    out = OutputRequest(BufferType.L1, MemoryLayout.HEIGHT_SHARDED)
    cfg = Conv2dConfig(shard_layout=MemoryLayout.HEIGHT_SHARDED, transpose_shards=True)
    plan = plan_op(OpKind.CONV2D, OpRequest((x, w), out, MLIR),
                   Conv2dAttrs(32, 64, 1, (64, 64), (3, 3), (1, 1), (1, 1), config=cfg))
    halo = next(b for b in plan.buffers if b.name == "halo_output")
    assert halo.spec is not None and halo.spec.memory.shard is not None
    assert halo.spec.memory.shard.orientation is ShardOrientation.ROW_MAJOR
