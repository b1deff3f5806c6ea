"""`tt_sliding_window`: the bytes a core holds of the halo's and conv2d's L1_SMALL config
tensors.

Held against the published graph capture of one conv2d (tenstorrent/tt-metal
tests/ttnn/unit_tests/base_functionality/graph_l1_traces/README.md section 8, H3 on a
Blackhole p150b), against cases derived by hand from the ported code, and against
`literal`: a stick-by-stick transcription of sliding_window.cpp (`get_output_shape`,
`get_ceil_pad_hw`, `get_transposed_full_input_shape`, `get_transposed_real_padding`,
`generate_pad_metadata`, `generate_op_trace_metadata`, `generate_shard_boundaries`,
`generate_tensor_metadata`, `generate_halo_kernel_config_tensors` with
`divide_transfers_between_cores`, and `generate_sliding_window_op_config`) run on small
windows: floor and ceil mode, and transposed.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import MemoryLayout
from tileplan.targets.tenstorrent.ops.tt_sliding_window import (
    HaloConfigSizes,
    SlidingWindow,
    conv_reader_indices_bytes,
    halo_config_bytes,
    pool_reader_indices_bytes,
)
from tileplan.targets.tenstorrent.tiles import round_up

H3 = SlidingWindow(1, (128, 128), (3, 3), padding=(1, 1, 1, 1), num_cores_nhw=103)
PAD = 0xFFFF


def _even(n: int) -> int:
    return n + n % 2


def cpp_shapes(w: SlidingWindow) -> tuple[tuple[int, int], tuple[int, int]]:
    """`get_output_shape` and the padded input the halo walks, as the later sliding_window.cpp
    computes them: ceil mode's `get_ceil_pad_hw` (its float ceil, the drop of a last window
    starting in the padding), the transposed output and `get_transposed_full_input_shape`."""
    (h, width), (kh, kw), (sh, sw), (dh, dw) = w.input_hw, w.window_hw, w.stride_hw, w.dilation_hw
    pt, pb, pl, pr = w.padding
    if w.is_transpose:
        oh = (h - 1) * sh - (pt + pb) + dh * (kh - 1) + w.output_padding_hw[0] + 1
        ow = (width - 1) * sw - (pl + pr) + dw * (kw - 1) + w.output_padding_hw[1] + 1
        return (oh, ow), (oh + dh * (kh - 1), ow + dw * (kw - 1))
    ch = cw = 0
    if w.ceil_mode:
        oh = int(np.ceil(np.float32(h + pt + pb - dh * (kh - 1) - 1) / np.float32(sh))) + 1
        ow = int(np.ceil(np.float32(width + pl + pr - dw * (kw - 1) - 1) / np.float32(sw))) + 1
        if (oh - 1) * sh >= h + pt:
            oh -= 1
        if (ow - 1) * sw >= width + pl:
            ow -= 1
        ch = max(sh * (oh - 1) + dh * (kh - 1) + 1 - h - pt - pb, 0)
        cw = max(sw * (ow - 1) + dw * (kw - 1) + 1 - width - pl - pr, 0)
    oh = (h + pt + pb + ch - dh * (kh - 1) - 1) // sh + 1
    ow = (width + pl + pr + cw - dw * (kw - 1) - 1) // sw + 1
    return (oh, ow), (h + pt + pb + ch, width + pl + pr + cw)


def literal_walk(w: SlidingWindow) -> tuple[list[bool], list[int], list[tuple[tuple[int, int], tuple[int, int]]]]:
    """`generate_pad_metadata`, `generate_op_trace_metadata`, `generate_shard_boundaries`."""
    (h, width), (kh, kw), (sh, sw), (dh, dw) = w.input_hw, w.window_hw, w.stride_hw, w.dilation_hw
    (oh, ow), (hp, wp) = cpp_shapes(w)
    pt, _, pl, _ = w.padding
    if w.is_transpose:  # the zero-interleaved input: pad at the borders and off the stride lattice
        top, left = dh * (kh - 1) - pt, dw * (kw - 1) - pl
        strided_h, strided_w = (h - 1) * sh + 1, (width - 1) * sw + 1
        pad = [r < top or r >= strided_h + top or c < left or c >= strided_w + left
               or (r - top) % sh != 0 or (c - left) % sw != 0
               for _ in range(w.batch) for r in range(hp) for c in range(wp)]
        th, tw = 1, 1  # "In Transpose as Conv2d, Stride is always 1"
    else:
        pad = [not (pt <= r < pt + h and pl <= c < pl + width)
               for _ in range(w.batch) for r in range(hp) for c in range(wp)]
        th, tw = sh, sw
    trace = [n * hp * wp + y * th * wp + x * tw for n in range(w.batch) for y in range(oh) for x in range(ow)]
    dkh, dkw = kh + (dh - 1) * (kh - 1), kw + (dw - 1) * (kw - 1)
    reach, shard, last = (dkh - 1) * wp + dkw - 1, w.output_shard_height, len(trace)
    bounds, start = [], 0
    for _ in range(w.num_cores_nhw):
        end = min(start + shard, last) - 1
        lo, hi = trace[min(start, last - 1)], trace[end] + reach
        if lo == 0 and start != 0:
            lo = trace[end] + 1
            hi = lo - 1
        bounds.append(((start, end), (lo, hi)))
        start = end + 1
    return pad, trace, bounds


def literal(w: SlidingWindow, input_shard_height: int) -> tuple[int, ...]:
    """The halo's C++ walk, one stick at a time: (padding_config0, padding_config1,
    gather_config0, gather_config1) in bytes a core and the halo sticks."""
    pad, _, bounds = literal_walk(w)
    meta, core, local = [], 0, 0
    for is_pad in pad:  # generate_tensor_metadata
        meta.append((True, 0, 0) if is_pad else (False, core, local))
        if not is_pad:
            local += 1
            if local == input_shard_height:
                core, local = core + 1, 0
    data: dict[tuple[int, int], list[list[int]]] = {}
    for dst, (_, (lo, hi)) in enumerate(bounds):
        for g in range(lo, hi + 1):
            is_pad, src, src_idx = meta[g]
            key, idx = (PAD if is_pad else src, dst), g - lo
            runs = data.setdefault(key, [])
            if runs and (src_idx == runs[-1][0] + runs[-1][2] or is_pad) and idx == runs[-1][1] + runs[-1][2]:
                runs[-1][2] += 1
            else:
                runs.append([src_idx, idx, 1])
    pads: list[int] = [0] * w.num_cores_nhw
    sends: list[list[int]] = [[] for _ in range(w.num_cores_nhw)]
    for (src, dst), runs in sorted(data.items()):
        if src == PAD:
            pads[dst] += len(runs)
        elif src == dst:
            sends[src][:0] = [dst] * len(runs)  # the local route goes first
        else:
            sends[src] += [dst] * len(runs)
    gathers: list[tuple[int, int]] = []
    for flat in sends:  # divide_transfers_between_cores, reduce_flattened_transfers, serialize
        for part in (flat[0::2], flat[1::2]):
            routes = sum(1 for i, d in enumerate(part) if i == 0 or part[i - 1] != d)
            gathers.append((len(gathers) % 2, 1 + 3 * routes + 3 * len(part)))
    g0, g1 = (max(n for k, n in gathers if k == j) for j in (0, 1))
    p0, p1 = 2 * max(n // 2 for n in pads) + 2, 2 * max(n - n // 2 for n in pads) + 2
    halo = max(hi - lo + 1 for _, (lo, hi) in bounds)
    return tuple(2 * _even(n) for n in (p0, p1, g0, g1)) + (halo,)


def literal_reader(w: SlidingWindow, reader_datums: tuple[int, int], stride_w: int) -> int:
    """`generate_sliding_window_op_config` (is_conv) in bytes a core, segments tested against
    `stride_w` as the factory passes it."""
    _, trace, bounds = literal_walk(w)
    rows, last = [], len(trace)
    for (start, end), _ in bounds:
        row: list[int] = []
        new, first, left, prev, segments, at = True, True, 0, 0, 0, 0
        for i in range(start, end + 1 if start < last else start):
            rel = trace[i] - trace[start]
            if new:
                left = reader_datums[0] if first or not reader_datums[1] else reader_datums[1]
                row += [0, 0, rel]
                at, new = len(row) - 3, False
            elif rel != prev + stride_w:
                row += [prev, rel]
                segments += 1
            left, prev = left - 1, rel
            if left == 0 or i == end:
                row.append(prev)
                row[at], segments, new, first = segments + 1, 0, True, not first
        rows.append(row)
    return 2 * _even(max(len(r) for r in rows))


def literal_pool_reader(w: SlidingWindow) -> int:
    """`generate_sliding_window_op_config(op_trace_metadata, shard_boundaries, stride_w)` as
    pool_multi_core_program_factory.cpp calls it, in bytes a core: is_conv false, reader
    datums 0 (the C++ counter is unsigned: 0 - 1 wraps and never reaches 0 again), the
    rows padded to the longest (pad_cores) and to an even count."""
    _, trace, bounds = literal_walk(w)
    rows, last, stride_w = [], len(trace), w.stride_hw[1]
    for (start, end), _ in bounds:
        row: list[int] = []
        if start < last:  # "this core has no output"
            new, left, prev, segments, at = True, 0, 0, 0, 0
            for i in range(start, end + 1):
                rel = trace[i] - trace[start]
                if new:
                    left = 0  # reader0_datums
                    row += [0, 0, rel]
                    at, new = len(row) - 3, False
                elif rel != prev + stride_w:
                    row += [prev, rel]
                    segments += 1
                left, prev = (left - 1) % 2**32, rel
                if left == 0 or i == end:
                    row.append(prev)
                    row[at], segments = segments + 1, 0  # is_conv false: no new block
        rows.append(row)
    return 2 * _even(max(len(r) for r in rows))


def test_h3_halo_configs_as_the_graph_capture_reports_them():
    # padding 12 + 12 B, gather 40 + 40 B a core (the halo's CBs), buffers x 103 cores
    # 1236 / 4120 B, 16 / 48 B a bank at Blackhole's 16-B L1 alignment; 424 halo sticks
    sizes = halo_config_bytes(H3, input_shard_height=160)
    assert sizes == HaloConfigSizes(12, 12, 40, 40, 424)
    per_core = (sizes.padding_config0, sizes.padding_config1, sizes.gather_config0, sizes.gather_config1)
    assert [103 * b for b in per_core] == [1236, 1236, 4120, 4120]
    assert [round_up(b, 16) for b in per_core] == [16, 16, 48, 48]


def test_h3_reader_indices_as_the_graph_capture_reports_them():
    # 5-tile act block split 3 + 2 tiles: 4 + 6 entries = 20 B a core, 2060 B, 32 B a
    # bank; without the split reader one 160-stick block over a row edge: 6 entries
    assert conv_reader_indices_bytes(H3, 5, split_reader=True) == 20
    assert 103 * 20 == 2060 and round_up(20, 16) == 32
    assert conv_reader_indices_bytes(H3, 5) == 12


def test_an_unpadded_conv_has_only_the_empty_padding_config():
    """1 x 16 x 16, 3x3, no padding, 2 cores. 14 x 14 = 196 outputs round to 256, 128 a
    core; the halo reaches 2 x 16 + 2 = 34 sticks past a core's last window corner: core
    0 reads [0, 9 x 16 + 1 + 34] = [0, 179] (180 sticks), core 1 [146, 255]. No pad
    sticks: each padding config is its null plug, 2 entries = 4 B (the factory's
    EMPTY_PADDING_CONFIG_BUFFER_SIZE, which turns padding off). Input shards of 128:
    the input is one run, cut at 128. Core 0 sends itself [0, 127]; core 1 sends itself
    one run and core 0 one: dealt [local | to 0], each reader 1 route of 1 transfer:
    1 + 3 + 3 = 7 entries, 8 even = 16 B.
    Reader indices, act block 4 tiles split 2 + 2 (64 + 64 outputs): every row start
    jumps 16 - 13 x 1 = 3, not the stride 1, so a segment ends there. Core 0's blocks
    [0, 63] and [64, 127] hold row starts 14 ... 56 (4) and 70 ... 126 (5): 2 + 2 x 5 +
    2 + 2 x 6 = 26 entries = 52 B; core 1 has 16. Unsplit, [0, 127] holds 9: 22 = 44 B."""
    w = SlidingWindow(1, (16, 16), (3, 3), num_cores_nhw=2)
    assert halo_config_bytes(w, 128) == HaloConfigSizes(4, 4, 16, 16, 180)
    assert conv_reader_indices_bytes(w, 4, split_reader=True) == 52
    assert conv_reader_indices_bytes(w, 4) == 44


def test_a_stride_2_conv_over_two_images():
    """2 x 8 x 8, 3x3, stride 2, padding 1, one core: padded 10 x 10, 4 x 4 outputs an
    image, 32 outputs, the last window corner 100 + 3 x 20 + 3 x 2 = 166, the halo
    [0, 166 + 22] = 189 sticks. Pad runs in it: [0, 10] (top row and the first left
    pad), seven right-left pairs [19, 20] ... [79, 80], [89, 110] (image 0's last right
    pad, its bottom row, image 1's top row and first left pad), seven pairs [119, 120]
    ... [179, 180]: 16 runs, 8 + 8: 2 x 8 + 2 = 18 entries = 36 B each. Gather: one
    core owns the 128 input sticks, its 16 real row runs (8 an image) all local, 8 a
    reader in one route: 1 + 3 + 24 = 28 entries = 56 B each.
    Reader indices, one 32-output block: the 7 row starts jump 20 - 6 = 14 (34 into
    the next image), not the stride 2: 8 segments, 2 + 16 = 18 entries = 36 B; a
    one-tile block has no split."""
    w = SlidingWindow(2, (8, 8), (3, 3), stride_hw=(2, 2), padding=(1, 1, 1, 1))
    assert halo_config_bytes(w, 128) == HaloConfigSizes(36, 36, 56, 56, 189)
    assert conv_reader_indices_bytes(w, 1) == conv_reader_indices_bytes(w, 1, split_reader=True) == 36
    width = SlidingWindow(2, (8, 8), (3, 3), (2, 2), (1, 1, 1, 1), layout=MemoryLayout.WIDTH_SHARDED)
    assert halo_config_bytes(width, 128) == halo_config_bytes(w, 128)


def test_a_row_change_that_steps_by_the_stride_keeps_the_segment():
    """1 x 8 x 8, 2x2 window, stride (1, 2), no padding: 7 x 4 outputs; a row start
    jumps 1 x 8 - 3 x 2 = 2, the stride: `relative_index != last + stride_w` never
    holds, so the 28 outputs are one segment: 2 + 2 = 4 entries = 8 B."""
    w = SlidingWindow(1, (8, 8), (2, 2), stride_hw=(1, 2))
    assert conv_reader_indices_bytes(w, 1) == 8


def test_a_ceil_mode_pool_grows_the_padded_input_at_the_bottom_and_right():
    """2x2 stride-2 max pool of 1 x 5 x 5, no padding, ceil mode, one core (snap_to_tile
    false, as pools): ceil((5 - 2) / 2) + 1 = 3 outputs a side, the last window starting
    at 4 < 5 kept; the ceil pad 2 x 2 + 2 - 5 = 1 grows the padded input to 6 x 6 (floor
    mode: 2 outputs over 5 x 5). Window corners 0, 2, 4, 12, ..., 28; the halo reaches
    1 x 6 + 1 = 7 past the last: [0, 35], 36 sticks. Pad runs in it: each real row's
    right column 5, 11, 17, 23, and [29, 35] (row 4's and the bottom row): 5 runs, 2 + 3:
    2 x 2 + 2 = 6 entries = 12 B and 2 x 3 + 2 = 8 entries = 16 B. Gather: the 25 input
    sticks on one core, 5 row runs, all local, dealt 3 + 2: 1 + 3 + 9 = 13 entries, 14
    even = 28 B, and 1 + 3 + 6 = 10 entries = 20 B.
    In floor mode the 2 x 2 outputs read [0, 12 + 6]: no pad stick (the two null plugs,
    4 B each) and one run of the unpadded input: 1 + 3 + 3 = 7, 8 even = 16 B, and the
    second reader's route count alone, 2 entries = 4 B.
    With padding 1 the ceil count ceil((7 - 2) / 2) + 1 = 4 starts its last window at 6,
    past 5 + 1: dropped, 3 outputs, the ceil pad 2 x 2 + 2 - 7 < 0: none (00002df221d9
    took it from the count before the drop: 1), the same as floor mode: 7 x 7, the halo
    [0, 2 x 14 + 4 + 8 = 40]. Pads [0, 7], [13, 14], [20, 21], [27, 28], [34, 35]: 12 and
    16 B; five real row runs: 28 and 20 B."""
    pool = SlidingWindow(1, (5, 5), (2, 2), (2, 2), snap_to_tile=False, ceil_mode=True)
    assert (pool.output_hw, pool.ceil_pad_hw, pool.padded_hw) == ((3, 3), (1, 1), (6, 6))
    assert halo_config_bytes(pool, 25) == HaloConfigSizes(12, 16, 28, 20, 36)
    floor = SlidingWindow(1, (5, 5), (2, 2), (2, 2), snap_to_tile=False)
    assert (floor.output_hw, floor.padded_hw) == ((2, 2), (5, 5))
    assert halo_config_bytes(floor, 25) == HaloConfigSizes(4, 4, 16, 4, 19)
    padded = SlidingWindow(1, (5, 5), (2, 2), (2, 2), (1, 1, 1, 1), snap_to_tile=False, ceil_mode=True)
    assert (padded.output_hw, padded.ceil_pad_hw, padded.padded_hw) == ((3, 3), (0, 0), (7, 7))
    assert halo_config_bytes(padded, 25) == HaloConfigSizes(12, 16, 28, 20, 41)
    assert halo_config_bytes(padded, 25) == halo_config_bytes(SlidingWindow(
        1, (5, 5), (2, 2), (2, 2), (1, 1, 1, 1), snap_to_tile=False), 25)


def test_a_stride_2_transposed_conv_reads_a_zero_interleaved_input():
    """conv_transpose2d of 1 x 3 x 3 by a 2x2 kernel, stride 2, no padding, one core:
    output (3 - 1) x 2 + 1 + 1 = 6 a side, full input 6 + 1 = 7 a side, the input's 9
    sticks at rows and columns 1, 3, 5 (real padding d (k - 1) - p = 1; the strided input
    5 wide): sticks 8, 10, 12, 22, 24, 26, 36, 38, 40. 36 outputs round to a 64-stick
    shard; output (y, x) reads from y x 7 + x (stride 1), the halo reaching 7 + 1 past
    the last: [0, 35 + 8] = 49 sticks. Pad runs: the 10 gaps around the 9 sticks
    ([0, 7], 9, 11, [13, 21], 23, 25, [27, 35], 37, 39, [41, 48]), 5 + 5: 12 entries =
    24 B each. Gather: 9 one-stick local transfers (no two adjacent), dealt 5 + 4: 1 + 3
    + 15 = 19, 20 even = 40 B, and 1 + 3 + 12 = 16 entries = 32 B.
    Reader indices, one 2-tile block (36 outputs): stride_w 1 (tt-metal PR #33465 on):
    a row change jumps 7 - 5 = 2, so 6 segments, 2 + 12 = 14 entries = 28 B; split 1 + 1
    tiles: [0, 31] holds 5 row starts (6 segments, 14 entries) and [32, 35] none (4):
    36 B. Before it, segments tested against the stride 2: every step of 1 breaks, the row
    changes' jumps of 2 do not: 31 segments, 2 + 62 = 64 entries = 128 B; split: [0, 31]
    31 steps less 5 row starts, 27 segments, 56 entries, and [32, 35] 4 segments, 10:
    132 B."""
    w = SlidingWindow(1, (3, 3), (2, 2), (2, 2), is_transpose=True)
    assert (w.output_hw, w.padded_hw, w.lattice) == ((6, 6), (7, 7), ((1, 1), (2, 2)))
    assert halo_config_bytes(w, 9) == HaloConfigSizes(24, 24, 40, 32, 49)
    assert conv_reader_indices_bytes(w, 2) == 28
    assert conv_reader_indices_bytes(w, 2, split_reader=True) == 36
    assert conv_reader_indices_bytes(w, 2, segments_by_transposed_stride=True) == 128
    assert conv_reader_indices_bytes(w, 2, split_reader=True, segments_by_transposed_stride=True) == 132


def test_transposed_shapes_follow_pytorch():
    # UNet's upconv (tt_conv_transpose.py): 30 x 40 by 2x2 / 2 -> 60 x 80, full input 61 x 81;
    # 3x3 / 2, padding 1, output padding 1: 2 x (in - 1) - 2 + 3 + 1 = 2 in; real padding
    # 3 - 1 - 1 = 1 at the top and left, the output padding's extra row and column below and right
    upconv = SlidingWindow(1, (30, 40), (2, 2), (2, 2), is_transpose=True)
    assert (upconv.output_hw, upconv.padded_hw, upconv.lattice) == ((60, 80), (61, 81), ((1, 1), (2, 2)))
    up = SlidingWindow(2, (16, 8), (3, 3), (2, 2), (1, 1, 1, 1), is_transpose=True, output_padding_hw=(1, 1))
    assert (up.output_hw, up.padded_hw, up.lattice) == ((32, 16), (34, 18), ((1, 1), (2, 2)))
    # ceil mode, ResNet's stem pool: 112 -> ceil(111 / 2) + 1 = 57 (floor 56), one pad row
    stem = SlidingWindow(1, (112, 112), (3, 3), (2, 2), (1, 1, 1, 1), snap_to_tile=False, ceil_mode=True)
    assert (stem.output_hw, stem.ceil_pad_hw, stem.padded_hw) == ((57, 57), (1, 1), (115, 115))


@st.composite
def windows(draw: st.DrawFn) -> SlidingWindow:
    """Floor-mode, ceil-mode and transposed windows; a transposed one's padding within
    d (k - 1) (beyond it tileplan refuses it), its input smaller (the full input is about
    the stride times larger)."""
    kind = draw(st.sampled_from(("floor", "ceil", "transpose")))
    kh, kw = draw(st.tuples(st.integers(1, 4), st.integers(1, 4)))
    dh, dw = draw(st.tuples(st.integers(1, 2), st.integers(1, 2)))
    extra: dict[str, Any]
    if kind == "transpose":
        side = st.integers(1, 10)
        padding = (draw(st.integers(0, dh * (kh - 1))), draw(st.integers(0, dh * (kh - 1))),
                   draw(st.integers(0, dw * (kw - 1))), draw(st.integers(0, dw * (kw - 1))))
        extra = {"is_transpose": True, "output_padding_hw": draw(st.tuples(st.integers(0, 2), st.integers(0, 2)))}
    else:
        side = st.integers(1, 24)
        padding = draw(st.tuples(*[st.integers(0, 2)] * 4))
        extra = {"ceil_mode": kind == "ceil"}
    try:
        return SlidingWindow(draw(st.integers(1, 3)), draw(st.tuples(side, side)), (kh, kw),
                             draw(st.tuples(st.integers(1, 3), st.integers(1, 3))), padding, (dh, dw),
                             draw(st.integers(1, 12)), snap_to_tile=draw(st.booleans()), **extra)
    except InputError:
        assume(False)
        raise


@st.composite
def cases(draw: st.DrawFn) -> tuple[SlidingWindow, int, int, bool]:
    w = draw(windows())
    nhw = w.batch * w.input_hw[0] * w.input_hw[1]
    shard = draw(st.integers(-(-nhw // w.num_cores_nhw), nhw))
    return w, shard, draw(st.integers(1, 3)), draw(st.booleans())


@settings(max_examples=400, deadline=None)
@given(cases())
def test_the_vectorised_port_matches_the_stick_by_stick_walk(case):
    w, shard, block, split = case
    assert (w.output_hw, w.padded_hw) == cpp_shapes(w)
    sizes = halo_config_bytes(w, shard)
    got = (sizes.padding_config0, sizes.padding_config1, sizes.gather_config0, sizes.gather_config1, sizes.halo_sticks)
    assert got == literal(w, shard)
    if w.snap_to_tile and not w.ceil_mode and w.output_shard_height % (block * 32) == 0:
        last = block // 2 if split else 0
        datums = ((block - last) * 32, last * 32)
        stride_w = 1 if w.is_transpose else w.stride_hw[1]  # the factories since tt-metal PR #33465
        assert conv_reader_indices_bytes(w, block, split_reader=split) == literal_reader(w, datums, stride_w)
        legacy = conv_reader_indices_bytes(w, block, split_reader=split, segments_by_transposed_stride=True)
        assert legacy == literal_reader(w, datums, w.stride_hw[1])  # before it: the window's own stride


@settings(max_examples=300, deadline=None)
@given(windows())
def test_the_pools_reader_indices_match_the_stick_by_stick_walk(w):
    assume(not w.is_transpose)
    assert pool_reader_indices_bytes(w) == literal_pool_reader(w)


def test_a_pools_reader_indices_are_one_block_a_core():
    """A 2 x 2 / 2 pool of 480 x 640 on 64 cores (snap_to_tile false): 1,200 outputs a
    core, rows of 320. Core 0's outputs hold the row starts 320, 640, 960, core 1's
    (1,200 .. 2,399) 1,280 .. 2,240, four: each a jump of 2 x 640 - 638 = 642, not 2, so
    5 segments, [5, 0, then 5 first / last pairs] = 12 entries, 24 B (the factory's bound
    10 entries + 2 x 1,200 x 3 never binds). A 3 x 3 / 1 pool of 8 x 8, padding 1, on 2
    cores: 32 outputs a core, rows of 8 over a 10-wide padded input: each row start jumps
    by 3, not 1: core 0's 4 rows, 4 segments, 10 entries = 20 B. A 1-wide output of a
    7 x 4 input, kernel and stride 1 x 4: each row start jumps by 4 = stride_w, one
    segment, 4 entries = 8 B; at stride 2 x 4 the jump is 8: (7 - 1) / 2 + 1 = 4 outputs,
    4 segments, 10 entries = 20 B."""
    unet = SlidingWindow(1, (480, 640), (2, 2), (2, 2), num_cores_nhw=64, snap_to_tile=False)
    assert pool_reader_indices_bytes(unet) == 24
    small = SlidingWindow(1, (8, 8), (3, 3), (1, 1), (1, 1, 1, 1), num_cores_nhw=2, snap_to_tile=False)
    assert small.output_shard_height == 32 and pool_reader_indices_bytes(small) == 20
    column = SlidingWindow(1, (7, 4), (1, 4), (1, 4), snap_to_tile=False)
    assert column.output_hw == (7, 1) and pool_reader_indices_bytes(column) == 8
    column = SlidingWindow(1, (7, 4), (1, 4), (2, 4), snap_to_tile=False)
    assert column.output_hw == (4, 1) and pool_reader_indices_bytes(column) == 20
    with pytest.raises(InputError, match="not transposed"):
        pool_reader_indices_bytes(SlidingWindow(1, (8, 8), (2, 2), (2, 2), is_transpose=True))


@settings(max_examples=100, deadline=None)
@given(cases())
def test_sizes_are_whole_even_entry_counts_above_the_empty_configs(case):
    # every config holds at least its null plug or route count (4 B) and a core with
    # outputs at least one block (count, pad, first, last: 8 B)
    w, shard, _, _ = case
    sizes = halo_config_bytes(w, shard)
    for b in (sizes.padding_config0, sizes.padding_config1, sizes.gather_config0, sizes.gather_config1):
        assert isinstance(b, int) and b >= 4 and b % 4 == 0
    assert sizes.padding_config0 <= sizes.padding_config1
    if w.snap_to_tile and not w.ceil_mode:
        got = conv_reader_indices_bytes(w, 1)
        assert isinstance(got, int) and got >= 8 and got % 4 == 0


@settings(max_examples=100, deadline=None)
@given(cases())
def test_a_stride_1_transposed_window_is_the_conv_over_its_padded_input(case):
    """Stride 1 interleaves no zeros: the full input is the input padded by the real
    padding d (k - 1) - p at each side, the output padding below and right of it, and the
    window walks it as a stride-1 conv's."""
    w, shard, block, _ = case
    assume(w.is_transpose)
    (kh, kw), (pt, pb, pl, pr), (oph, opw) = w.dilated_window_hw, w.padding, w.output_padding_hw
    w = SlidingWindow(w.batch, w.input_hw, w.window_hw, (1, 1), w.padding, w.dilation_hw, w.num_cores_nhw,
                      snap_to_tile=w.snap_to_tile, is_transpose=True, output_padding_hw=w.output_padding_hw)
    conv = SlidingWindow(w.batch, w.input_hw, w.window_hw, (1, 1),
                         (kh - 1 - pt, kh - 1 - pb + oph, kw - 1 - pl, kw - 1 - pr + opw), w.dilation_hw,
                         w.num_cores_nhw, snap_to_tile=w.snap_to_tile)
    assert (w.output_hw, w.padded_hw) == (conv.output_hw, conv.padded_hw)
    assert halo_config_bytes(w, shard) == halo_config_bytes(conv, shard)
    if w.snap_to_tile and w.output_shard_height % (block * 32) == 0:
        assert conv_reader_indices_bytes(w, block) == conv_reader_indices_bytes(conv, block)


def test_large_inputs_stay_fast():
    # 1 x 512 x 512 on 64 cores, and 8 x 1024 x 1024 on 64: no per-stick Python loop
    for w in (SlidingWindow(1, (512, 512), (3, 3), padding=(1, 1, 1, 1), num_cores_nhw=64),
              SlidingWindow(8, (1024, 1024), (3, 3), padding=(1, 1, 1, 1), num_cores_nhw=64)):
        shard = w.output_shard_height
        began = time.perf_counter()
        halo_config_bytes(w, shard)
        conv_reader_indices_bytes(w, 4, split_reader=True)
        assert time.perf_counter() - began < 1.0


def test_ceil_and_transposed_inputs_stay_fast():
    # 1 x 512 x 512 on 64 cores: a 3x3 / 2 ceil-mode pool, and 2x2 / 2 and 3x3 / 2 transposed
    # convs (a 1024 x 1024 output over a 1025 x 1025 or 1026 x 1026 zero-interleaved input)
    shard = 4096
    for w in (SlidingWindow(1, (512, 512), (3, 3), (2, 2), (1, 1, 1, 1), num_cores_nhw=64, snap_to_tile=False,
                            ceil_mode=True),
              SlidingWindow(1, (512, 512), (2, 2), (2, 2), num_cores_nhw=64, is_transpose=True),
              SlidingWindow(1, (512, 512), (3, 3), (2, 2), (1, 1, 1, 1), num_cores_nhw=64, is_transpose=True,
                            output_padding_hw=(1, 1))):
        began = time.perf_counter()
        halo_config_bytes(w, shard)
        if w.is_transpose:
            conv_reader_indices_bytes(w, 4, split_reader=True)
            conv_reader_indices_bytes(w, 4, split_reader=True, segments_by_transposed_stride=True)
        assert time.perf_counter() - began < 0.2


def test_the_repr_omits_defaults():
    assert repr(SlidingWindow(1, (8, 8), (3, 3))) == "SlidingWindow(batch=1, input_hw=(8, 8), window_hw=(3, 3))"
    assert repr(SlidingWindow(1, (8, 8), (3, 3), (2, 2), is_transpose=True, output_padding_hw=(1, 1))) == (
        "SlidingWindow(batch=1, input_hw=(8, 8), window_hw=(3, 3), stride_hw=(2, 2), is_transpose=True, "
        "output_padding_hw=(1, 1))")


@pytest.mark.parametrize("make, message", [
    (lambda: SlidingWindow(0, (8, 8), (3, 3)), "SlidingWindow.batch: expected positive integers, found (0,)"),
    (lambda: SlidingWindow(1, (8, 8), (3, 3), padding=(1, -1, 0, 0)),
     "SlidingWindow.padding: expected 4 non-negative integers (top, bottom, left, right), found (1, -1, 0, 0)"),
    (lambda: SlidingWindow(1, (2, 8), (3, 3)),
     "SlidingWindow.window_hw: the dilated window (3, 3) does not fit the padded input (2, 8)"),
    (lambda: SlidingWindow(1, (8, 8), (3, 3), num_cores_nhw=2, layout=MemoryLayout.WIDTH_SHARDED),
     "SlidingWindow.num_cores_nhw: width sharding keeps every stick on each core: num_cores_nhw must be 1, found 2"),
    (lambda: SlidingWindow(1, (8, 8), (3, 3), layout=MemoryLayout.INTERLEAVED),
     "SlidingWindow.layout: the config tensors exist for sharded inputs only; found interleaved"),
    (lambda: halo_config_bytes(H3, 100),
     "halo_config_bytes.input_shard_height: 16384 input sticks at 100 a core need 164 cores, more than the 103 "
     "num_cores_nhw"),
    (lambda: halo_config_bytes(H3, 160, tiled_input=True),
     "halo_config_bytes.tiled_input: a TILE halo input (the untilize path: transfers quantized to 32-stick blocks "
     "and ordered by NOC coordinates) is not modelled"),
    (lambda: conv_reader_indices_bytes(H3, 2),
     "conv_reader_indices_bytes.act_block_h_ntiles: the output shard of 5 tiles is not a multiple of "
     "act_block_h_ntiles 2"),
    (lambda: conv_reader_indices_bytes(SlidingWindow(1, (8, 8), (3, 3), layout=MemoryLayout.WIDTH_SHARDED), 1,
                                       split_reader=True),
     "conv_reader_indices_bytes.split_reader: the width-sharded conv has no split reader"),
    (lambda: SlidingWindow(1, (8, 8), (2, 2), (2, 2), ceil_mode=True, is_transpose=True),
     "SlidingWindow.ceil_mode: ceil_mode is not supported for transposed operation"),
    (lambda: SlidingWindow(1, (8, 8), (3, 3), output_padding_hw=(1, 0)),
     "SlidingWindow.output_padding_hw: an output padding belongs to a transposed window; found (1, 0) with "
     "is_transpose false"),
    (lambda: SlidingWindow(1, (8, 8), (3, 3), output_padding_hw=(-1, 0), is_transpose=True),
     "SlidingWindow.output_padding_hw: expected 2 non-negative integers, found (-1, 0)"),
    (lambda: SlidingWindow(1, (8, 8), (3, 3), padding=(3, 3, 0, 0), is_transpose=True),
     "SlidingWindow.padding: a transposed window's padding (3, 3, 0, 0) exceeds d (k - 1) = (2, 2) (its full "
     "input's real padding would be negative)"),
    (lambda: SlidingWindow(1, (1, 1), (3, 3), padding=(2, 2, 2, 2), is_transpose=True),
     "SlidingWindow.padding: the transposed output (-1, -1) is empty"),
    (lambda: SlidingWindow(1, (2, 8), (3, 3), ceil_mode=True),
     "SlidingWindow.window_hw: the dilated window (3, 3) does not fit the padded input (2, 8)"),
    (lambda: conv_reader_indices_bytes(SlidingWindow(1, (8, 8), (2, 2), (2, 2), ceil_mode=True), 1),
     "conv_reader_indices_bytes.window: conv2d's sliding window has no ceil mode (a pool's)"),
])
def test_refusals_name_the_field_and_the_numbers(make, message):
    with pytest.raises(InputError) as info:
        make()
    assert str(info.value) == message


def test_a_ceil_mode_window_larger_than_its_input_is_one_output():
    """HF EfficientNet's pooler, `nn.AvgPool2d(128, ceil_mode=True)` of a 1 x 1 map:
    `get_output_shape` ceil(-127 / 128) + 1 = 1 output, `get_ceil_pad_h` 127 rows and
    columns, so the window walks a 128 x 128 padded input (floor mode refuses it)."""
    w = SlidingWindow(1, (1, 1), (128, 128), (128, 128), num_cores_nhw=1, snap_to_tile=False, ceil_mode=True)
    assert (w.output_hw, w.ceil_pad_hw, w.padded_hw) == ((1, 1), (127, 127), (128, 128))
    assert halo_config_bytes(w, 1).halo_sticks == 128 * 128
    with pytest.raises(InputError, match="does not fit the padded input"):
        SlidingWindow(1, (1, 1), (128, 128), (128, 128), num_cores_nhw=1, snap_to_tile=False)
