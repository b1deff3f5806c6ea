"""Batch norm and 2-D pooling rules (tileplan.targets.tenstorrent.ops.tt_batch_norm,
tt_pool), each figure derived by hand in the test's docstring from the tt-metal sources
the rules cite (no published per-operation row exists for either)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tt_ops_support import DRAM, MLIR, row_major, tile

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_batch_norm import BatchNormAttrs
from tileplan.targets.tenstorrent.ops.tt_pool import Pool2dAttrs, PoolType, auto_shard, avg_pool_scalar_bytes
from tileplan.targets.tenstorrent.tiles import DataType
from tileplan.targets.tenstorrent.versions import ReaderIndicesCb

F32 = DataType.FLOAT32
STAT = tile((1, 32, 1, 1), DRAM)


def _bn(x_dtype: DataType, attrs: BatchNormAttrs) -> int:
    x = tile((1, 32, 64, 64), DRAM, x_dtype)
    return plan_op(OpKind.BATCH_NORM, OpRequest((x,), OutputRequest(), MLIR), attrs).cb_peak


def test_batch_norm_holds_nine_double_buffered_cbs_in_the_tensors_formats() -> None:
    """bf16 everything: 9 CBs x 2 tiles x 2,048 B. f32 input and statistics, no affine
    parameters: seven f32 CBs (4,096 B tiles) and the absent weight's and bias's Float16_b
    CBs: 7 x 2 x 4,096 + 2 x 2 x 2,048."""
    assert _bn(DataType.BFLOAT16, BatchNormAttrs(STAT, STAT, STAT, STAT)) == 36_864
    f32_stat = tile((1, 32, 1, 1), DRAM, F32)
    assert _bn(F32, BatchNormAttrs(f32_stat, f32_stat)) == 65_536


def test_batch_norm_output_is_the_inputs_shape_in_tile_interleaved() -> None:
    x = tile((1, 32, 64, 64), DRAM)
    plan = plan_op(OpKind.BATCH_NORM, OpRequest((x,), OutputRequest(BufferType.L1), MLIR),
                   BatchNormAttrs(STAT, STAT))
    assert plan.outputs[0].shape == x.shape and plan.output_bytes_per_core(0) == 128 * 2048 // 64


def test_batch_norm_refuses_what_the_factory_refuses() -> None:
    x = tile((1, 32, 64, 64), DRAM)
    with pytest.raises(InputError, match="bfloat16 or float32"):
        _bn(DataType.BFLOAT8_B, BatchNormAttrs(STAT, STAT))
    with pytest.raises(InputError, match="channels"):
        plan_op(OpKind.BATCH_NORM, OpRequest((x,), OutputRequest(), MLIR),
                BatchNormAttrs(tile((1, 64, 1, 1), DRAM), STAT))


def _pool(c: int, h: int, w: int, kind: OpKind = OpKind.MAX_POOL2D, **kw: object) -> tuple[list[int], dict[str, int]]:
    attrs = Pool2dAttrs(1, (h, w), c, (2, 2), (2, 2), **kw)  # type: ignore[arg-type]
    plan = plan_op(kind, OpRequest((row_major((1, 1, h * w, c), DRAM),), OutputRequest(), MLIR), attrs)
    return [p.cb_bytes for p in plan.programs], {b.name: b.bytes_per_bank for b in plan.buffers}


def test_max_pool_2x2_of_a_unet_stage_height_shards_and_prices_the_pool_cbs() -> None:
    """[1, 1, 480 x 640, 32] bf16, 2 x 2 / 2 on the 8 x 8 grid: 76,800 output rows over
    64 cores (1,200 a core), input 4,800 rows a core. Pool CBs: scalar 2 x 2,048, clear
    2,048, the reader indices' DRAM staging 1,200 x 6 + 2, two readers' 2 pages of 1 tile
    x 4 kernel rows padded to 1,024 elements (2,048 B): 4,096 + 2,048 + 7,202 + 8,192 =
    21,538 B. The halo's two one-stick padding CBs: 2 x 64 B, and its four config CBs,
    their tensors in DRAM (tt_sliding_window.py): the padding configs their 4-B empty form
    (an unpadded pool), the gather configs 28 and 16 B: 180 B. Buffers: the sharded input
    4,800 x 64 B; the halo output 5,600 sticks of 64 B (max_out_nsticks_per_core: core 1's
    outputs 1,200 .. 2,399 run from output row 3 column 240 to row 7 column 159, their
    windows from input stick 4,320 to 9,278 + 640 + 1: 5,600 sticks); the halo's config
    tensors a row for each of the 64 cores in DRAM (6 rows a bank, 32-B aligned: 192 B);
    the pool's reader indices (core 1's outputs hold the starts of rows 4 .. 7, each a
    jump of 1,280 - 638 = 642, not the stride 2: 5 segments, 2 + 10 = 12 entries, 24 B a
    core), 64 rows in DRAM: 192 B a bank; the sharded output 1,200 x 64 B; the DRAM
    result 76,800 rows of 64 B over 12 banks."""
    cbs, bufs = _pool(32, 480, 640)
    assert cbs == [0, 180, 21_538, 0]
    assert bufs == {"pool_input_sharded": 307_200, "halo_output": 358_400, "halo_padding_config0": 192,
                    "halo_padding_config1": 192, "halo_gather_config0": 192, "halo_gather_config1": 192,
                    "pool_output_sharded": 76_800, "pool_reader_indices": 192, "output0": 409_600}


def test_from_pr_43193_the_dram_reader_indices_cb_takes_the_tensors_own_page() -> None:
    """The UNet stage above on a build with tt-metal PR #43193 (restored by #44064):
    the reader indices' DRAM staging CB is their row, 24 B, not the worst case of 7,202:
    pool CBs 21,538 - 7,202 + 24 = 14,360 B; the auto shard's price keeps the worst case
    (the same layout is chosen), and the tensors are where they were."""
    cbs, bufs = _pool(32, 480, 640, reader_indices_cb=ReaderIndicesCb.ACTUAL)
    assert cbs == [0, 180, 14_360, 0]
    assert bufs["pool_reader_indices"] == 192 and bufs["output0"] == 409_600


def test_a_tile_output_pads_its_rows_to_whole_tiles_a_core_and_snaps_its_window() -> None:
    """generic_pools.cpp `pool2d_L1` (@465a425e) for a TILE output: the 76,800 output rows
    padded to 64 cores x 32 (77,824), 1,216 a core, and the sliding window snapped to
    tiles (`snap_to_tile = is_out_tiled`): the reader indices' DRAM staging CB 1,216 x 6 +
    2 = 7,298 B (7,202 row-major), the pre-tilize CB of the 32 channels' tile, 2,048 B:
    pool CBs 21,538 - 7,202 + 7,298 + 2,048 = 23,682 B; the sharded output 38 tiles a
    core (77,824 B)."""
    from tileplan.targets.tenstorrent.tiles import Layout

    attrs = Pool2dAttrs(1, (480, 640), 32, (2, 2), (2, 2), output_layout=Layout.TILE)
    row_major = Pool2dAttrs(1, (480, 640), 32, (2, 2), (2, 2))
    assert (attrs.output_shard_rows(64), row_major.output_shard_rows(64)) == (1_216, 1_200)
    cbs, bufs = _pool(32, 480, 640, output_layout=Layout.TILE)
    assert cbs[2] == 23_682
    assert bufs["pool_output_sharded"] == 77_824


def _pool_plan(c: int, h: int, w: int, kind: OpKind = OpKind.MAX_POOL2D, **kw: object) -> OpPlan:
    attrs = Pool2dAttrs(1, (h, w), c, (2, 2), (2, 2), **kw)  # type: ignore[arg-type]
    return plan_op(kind, OpRequest((row_major((1, 1, h * w, c), DRAM),), OutputRequest(), MLIR), attrs)


def test_config_tensors_in_l1_small_are_one_row_a_core_bound_to_their_cbs() -> None:
    """The UNet stage above with `config_tensors_in_dram` false (tt-mlir before #6919):
    the pool's reader indices HEIGHT_SHARDED in L1_SMALL, one 24-B row on each of the 64
    cores (32 B a bank at the 16-B alignment), its CB bound to it with the factory's page,
    the 12 entries rounded up to 4: 12; the halo's four there too (4, 4, 28, 16 B: 16,
    16, 32, 16 B a bank). No staging CB: the pool's CBs 21,538 - 7,202 = 14,336 B, the
    halo's the two padding sticks, 128 B. The cached pool program holds the reader
    indices (a cache key); nothing moves to DRAM."""
    plan = _pool_plan(32, 480, 640, config_tensors_in_dram=False)
    assert [p.cb_bytes for p in plan.programs] == [0, 128, 14_336, 0]
    bufs = {b.name: b for b in plan.buffers}
    reader = bufs["pool_reader_indices"]
    assert (reader.buffer_type, reader.page_bytes, reader.bytes_per_bank) == (BufferType.L1_SMALL, 24, 32)
    assert reader.spec is not None and reader.spec.shape == (64, 12) and reader.cache_key is not None
    assert reader.live == (2, 2)
    assert [(b.buffer_type, b.bytes_per_bank) for n, b in bufs.items() if n.startswith("halo_") and "config" in n] \
        == [(BufferType.L1_SMALL, 16), (BufferType.L1_SMALL, 16), (BufferType.L1_SMALL, 32), (BufferType.L1_SMALL, 16)]
    cb = next(cb for cb in plan.programs[2].circular_buffers if cb.name == "reader_indices")
    assert (cb.index, cb.page_bytes, cb.globally_allocated) == (3, 12, True)


def test_an_average_pool_with_a_scalar_per_output_has_its_scalar_config_in_either_place() -> None:
    """avg 2 x 2 / 2 of 64 x 64, padding 1 not counted: 33 x 33 outputs, 18 a core on 61
    cores. Pool areas 1 at the corners, 2 on the edges, 4 inside: core 1 walks row 0
    columns 18 .. 32 and row 1 columns 0 .. 2, areas 2 (x 14), 1, 2, 4, 4: 4 ScalarInfos
    of 3 entries, 24 B (no core more: 18 outputs cross one row end at most). In DRAM: 61
    rows of 24 B (32-B pages, 6 a bank: 192 B), the CB the worst case 6 x 18 = 108 B,
    unbound, after the output CB; in L1_SMALL: 32 B a bank, the CB bound with the
    buffer's page, 24 B. The reader indices: 18 outputs over at most one row start, 2
    segments, 6 entries = 12 B (in L1_SMALL 16 B a bank, its CB page 8)."""
    dram = _pool_plan(32, 64, 64, OpKind.AVG_POOL2D, padding=(1, 1), count_include_pad=False)
    l1 = _pool_plan(32, 64, 64, OpKind.AVG_POOL2D, padding=(1, 1), count_include_pad=False,
                    config_tensors_in_dram=False)
    for plan, where, per_bank, cb in ((dram, BufferType.DRAM, 192, (1, 108, False)),
                                      (l1, BufferType.L1_SMALL, 32, (1, 24, True))):
        scalars = next(b for b in plan.buffers if b.name == "pool_scalar_config")
        assert (scalars.buffer_type, scalars.page_bytes, scalars.bytes_per_bank) == (where, 24, per_bank)
        config = plan.programs[2].circular_buffers[-1]
        assert (config.name, config.pages, config.page_bytes, config.globally_allocated) == ("config", *cb)
    reader = next(b for b in l1.buffers if b.name == "pool_reader_indices")
    assert (reader.page_bytes, reader.bytes_per_bank) == (12, 16)
    assert next(cb for cb in l1.programs[2].circular_buffers if cb.name == "reader_indices").page_bytes == 8
    assert avg_pool_scalar_bytes(Pool2dAttrs(1, (64, 64), 32, (2, 2), (2, 2), (1, 1), False), 18, 61) == 24


@pytest.mark.parametrize(("c", "h", "w", "layout"), [
    (32, 480, 640, MemoryLayout.HEIGHT_SHARDED), (256, 60, 80, MemoryLayout.BLOCK_SHARDED)])
def test_the_auto_shard_takes_the_least_l1_usage(c: int, h: int, w: int, layout: MemoryLayout) -> None:
    """256 channels, 1,200 output rows: height 64 cores of 32 x 256 (CBs 14,336 + config
    194 + output 16,384 = 30,914 B), width 16 cores of 1,216 x 32 (14,336 + 7,298 +
    38,912 = 60,546 B), block 8 x 8 of 160 x 32 (14,336 + 962 + 10,240 = 25,538 B): block.
    32 channels at 480 x 640: width has 2 cores of 76,800 rows; height wins."""
    attrs = Pool2dAttrs(1, (h, w), c, (2, 2), (2, 2))
    assert auto_shard(PoolType.MAX, attrs, DataType.BFLOAT16, DataType.BFLOAT16, MLIR).layout is layout


def test_an_average_pool_not_counting_padding_adds_the_second_scalar_and_its_config() -> None:
    """avg 2 x 2 / 2 (padding 1, count_include_pad false) needs a scalar per output: a
    second 2-tile scalar CB and 6 B more config staging a row than the max pool."""
    max_cbs, _ = _pool(32, 64, 64, OpKind.MAX_POOL2D, padding=(1, 1))
    avg_cbs, _ = _pool(32, 64, 64, OpKind.AVG_POOL2D, padding=(1, 1), count_include_pad=False)
    # 33 x 33 = 1,089 output rows: find_closest_largest_divisor_with_num_padding_and_mult
    # steps down from 64 to 61 cores (61 x 18 = 1,098 pads 9 < 18), 18 rows a core
    assert avg_cbs[2] - max_cbs[2] == 2 * 2048 + 6 * 18


def test_an_average_pool_that_ceil_mode_pads_has_a_scalar_per_output() -> None:
    """pool_utils.cpp `is_pool_op_one_scalar_per_core`: ceil mode on a 65 x 65 input
    (2 x 2 / 2: 33 x 33 outputs, one row and column of ceil padding) needs a scalar per
    output, as uncounted padding does (1,089 rows on 61 cores, 18 a core); on 64 x 64 it
    pads nothing and keeps one scalar a core, as the max pool."""
    max_cbs, _ = _pool(32, 65, 65, OpKind.MAX_POOL2D, ceil_mode=True)
    avg_cbs, _ = _pool(32, 65, 65, OpKind.AVG_POOL2D, ceil_mode=True)
    assert Pool2dAttrs(1, (65, 65), 32, (2, 2), (2, 2), ceil_mode=True).ceil_pads == (1, 1)
    assert avg_cbs[2] - max_cbs[2] == 2 * 2048 + 6 * 18
    assert _pool(32, 64, 64, OpKind.AVG_POOL2D, ceil_mode=True)[0] == _pool(32, 64, 64, ceil_mode=True)[0]


def test_pool_refuses_what_it_does_not_model() -> None:
    with pytest.raises(InputError, match="row-major input"):
        attrs = Pool2dAttrs(1, (64, 64), 32, (2, 2), (2, 2))
        plan_op(OpKind.MAX_POOL2D, OpRequest((tile((1, 1, 4096, 32), DRAM),), OutputRequest(), MLIR), attrs)


def test_a_ceil_mode_pool_whose_last_window_is_dropped_pads_nothing_more() -> None:
    """sliding_window.cpp `get_ceil_pad_h`: `padding_calc > 0 ? padding_calc : 0`. A 2 x 2
    / 2 ceil-mode pool of 5 x 5 with padding 1: ceil((5 + 2 - 2) / 2) + 1 = 4 outputs, the
    last starting at 6 >= 5 + 1 in the padding, dropped: 3; 2 x (3 - 1) + 2 - 5 - 2 = -1
    rows of ceil padding, so none (not -1)."""
    attrs = Pool2dAttrs(1, (5, 5), 32, (2, 2), (2, 2), padding=(1, 1), ceil_mode=True)
    assert attrs.output_hw == (3, 3) and attrs.ceil_pads == (0, 0)
    assert attrs.sliding_window(1, MemoryLayout.HEIGHT_SHARDED).output_hw == (3, 3)


def literal_scalars(attrs: Pool2dAttrs, per_core: int, cores_nhw: int) -> int:
    """pool_multi_core_program_factory.cpp `create_scalar_config_tensor` and
    `get_bf16_avg_pool_config_scalars`, output by output: the most ScalarInfos of a core
    x 6 B."""
    (oh, ow), (in_h, in_w), (kh, kw), (sh, sw), (ph, pw) = (attrs.output_hw, attrs.input_hw, attrs.kernel,
                                                            attrs.stride, attrs.padding)
    most, nhw, h0, w0 = 0, 0, 0, 0
    for _ in range(cores_nhw):
        x, y, count, last, first = h0, w0, 0, 0, True
        for _ in range(per_core):
            hs, ws = x * sh - ph, y * sw - pw
            he, we = min(hs + kh, in_h + ph), min(ws + kw, in_w + pw)
            if attrs.count_include_pad:
                area = (he - hs) * (we - ws)
            else:
                eh, ew = min(he, in_h) - max(hs, 0), min(we, in_w) - max(ws, 0)
                area = eh * ew if eh > 0 and ew > 0 else 0
            if first or area != last:
                count, first = count + 1, False
            last = area
            y = (y + 1) % ow
            if y == 0:
                x = (x + 1) % oh
        most = max(most, count)
        nhw += per_core
        w0, h0 = nhw % ow, (nhw // ow) % oh
        if nhw // (ow * oh) == attrs.batch:
            nhw -= attrs.batch * ow * oh
            h0 = w0 = 0
    return 6 * most


@st.composite
def avg_pools(draw: st.DrawFn) -> tuple[Pool2dAttrs, int, int]:
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    attrs = Pool2dAttrs(draw(st.integers(1, 3)), (draw(st.integers(1, 14)), draw(st.integers(1, 14))), 32, (kh, kw),
                        (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
                        (draw(st.integers(0, kh // 2)), draw(st.integers(0, kw // 2))),
                        count_include_pad=draw(st.booleans()), ceil_mode=draw(st.booleans()))
    assume(all(size + 2 * p >= k for size, p, k in zip(attrs.input_hw, attrs.padding, attrs.kernel)))
    cores = draw(st.integers(1, 12))
    return attrs, -(-attrs.output_rows // cores), cores


@settings(max_examples=300, deadline=None)
@given(avg_pools())
def test_the_scalar_config_matches_the_output_by_output_walk(case: tuple[Pool2dAttrs, int, int]) -> None:
    attrs, per_core, cores = case
    assert avg_pool_scalar_bytes(attrs, per_core, cores) == literal_scalars(attrs, per_core, cores)


def test_the_scalar_walk_restarts_at_the_origin_when_it_reaches_the_image_past_the_last() -> None:
    """avg 2 x 2 / 2 of 8 x 8, padding 1 not counted: 5 x 5 outputs, window rows (and
    columns) counted 1, 2, 2, 2, 1, so areas 1, 2, 2, 2, 1 / 2, 4, 4, 4, 2 (x 3) / 1, 2, 2,
    2, 1; 4 outputs a core on 8 cores. Most: 3 ScalarInfos (core 1: 1, 2, 4, 4). Core 6
    walks output 24 and wraps to 0 .. 2; after it the count, 28, reaches the image past the
    last (`output_stick_n == n_dim`): the C++ takes it back to 3 but restarts core 7 at
    row 0 column 0 (1, 2, 2, 2: 2 ScalarInfos), where output 3 would give 2, 1, 2, 4 (4).
    3 x 6 = 18 B, not 24."""
    attrs = Pool2dAttrs(1, (8, 8), 32, (2, 2), (2, 2), (1, 1), False)
    assert attrs.output_hw == (5, 5)
    assert avg_pool_scalar_bytes(attrs, 4, 8) == literal_scalars(attrs, 4, 8) == 18
