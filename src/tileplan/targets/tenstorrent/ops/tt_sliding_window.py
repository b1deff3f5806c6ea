"""The bytes a core holds of the sliding-window config tensors ttnn puts in L1_SMALL: the
halo's `padding_config0/1` and `gather_config0/1` and conv2d's reader indices.

Each is a UINT16 row-major tensor of one row a core, the rows padded to the longest
core's (then to an even count), moved HEIGHT_SHARDED to L1_SMALL with shard [1, row]:
its page is one row, and the page is what the program's CB is bound to (sliding_window.cpp
`construct_on_host_config_tensor`, `move_config_tensor_to_device`; block and width
sharding replicate the rows over the channel cores, which leaves a core's row as it is).
This module returns that row in bytes; the caller aligns it (`max_size_per_bank`).

Sources (tenstorrent/tt-metal), all ported for the row-major (untilized) halo input:
- ttnn/cpp/ttnn/operations/sliding_window/sliding_window.cpp at 00002df221d9 and at the
  later version whose `generate_shard_boundaries(config)` builds its own op trace (the
  size arithmetic is the same in both for floor-mode untransposed windows; ceil mode and
  transposed windows follow the later one, below): `get_output_shape`,
  `get_ceil_pad_hw`, `get_transposed_full_input_shape`, `get_transposed_real_padding`,
  `get_output_shard_y`,
  `generate_pad_metadata`, `generate_op_trace_metadata`, `generate_shard_boundaries`,
  `generate_tensor_metadata`, `generate_halo_kernel_config_tensors` (its
  `divide_transfers_between_cores`, `reduce_flattened_transfers`,
  `serialize_gather_configs`, `flatten_pad_config`, `align_config`) and
  `generate_sliding_window_op_config`.
- .../sliding_window/halo/device/untilize_with_halo_program_factory.cpp at b844a98d7f6f
  (`UntilizeWithHaloProgramFactory::create`: the four tensors from the input shard height,
  `remote_read` as given, conv2d.cpp's `ttnn::halo` passing false; the CBs one page of
  the config buffer's page size).
- .../conv/conv2d/device/conv2d_op_sharded_program_factory.cpp at 003324fca537: the
  reader indices with reader datums `act_block_h_datums_split` and
  `act_block_h_datums_split_last` under the split reader, else `act_block_h_datums`, 0
  (as conv2d_op_width_sharded_program_factory.cpp always); the READER_INDICES CB page set
  to the buffer's page size.
- .../pool/generic/device/pool_multi_core_program_factory.cpp at 5cd3a453f15f (with
  `config_tensor_in_dram`, tt-metal PR #35212) and 002a3f412aeb (without): the pool's
  reader indices, one block a core (`pool_reader_indices_bytes`).
Older versions give other sizes: before PR #23825 (June 2025) one `pad_config` beside the
two gather configs, before that pad / local / remote configs with null plugs; before PR
#23025 (June 2025) one reader index an output stick, padded to a tile (320 B a core for
H3); the mid-2025 sharded factory passed `act_block_h_datums, 0` without the split (12 B
for H3) and set the CB page to the entry count, not bytes. Builds with the formats before
#23025 and #23825 (devices/software.toml `sliding_window_format`: the 2025-04-25 build) are
refused by the tt-mlir frontend (convert_conv.py `require_sliding_window_format`). Not ported: a TILE halo input
(the blocked gather order, sorted by physical NOC coordinates), bilinear windows, the
`ceil_pad_hw` override of the later SlidingWindowConfig, `remote_read` true, the in-place
halo. Entries past 0xFFFF wrap in the C++ (a debug-only TT_ASSERT); the sizes do not
depend on them.

Ceil mode (pooling; `ceil_mode`), as the later sliding_window.cpp has it
(`get_ceil_pad_hw`, `get_output_shape`): per axis the ceil count c = ceil((in + pads -
dilated k) / s) + 1, less one when its last window starts at or past in + the leading
pad; the ceil pad max(0, s (c - 1) + dilated k - in - pads) grows the padded input at the
bottom and right (pad metadata, op trace and shard boundaries all use the grown width);
the output is the floor count over the grown input (= c unless the bottom or right pad
is at least the dilated window). 00002df221d9 took the ceil pad from c before the drop:
one stride more when the last window is dropped (2x2 / 2, padding 1, 5 rows: 1 row
there, 0 here).

Transposed windows (`is_transpose`, conv_transpose2d's halo and conv), as the later
sliding_window.cpp has them: output (in - 1) s - pads + d (k - 1) + output padding + 1
(`get_output_shape`); the halo's padded input is the full input, output + d (k - 1)
(`get_transposed_full_input_shape`), the input's sticks s apart from (d (k - 1) - top,
d (k - 1) - left) (`get_transposed_real_padding`; the rest, the zeros between them and
the output padding below and right, is pad); output (n, y, x) reads its window from
full-input stick n Hf Wf + y Wf + x (stride 1); `generate_tensor_metadata` deals the real
sticks out in order, `input_shard_height` a core, so the k-th real stick of the full
input is the input's k-th, on core k // input_shard_height. 00002df221d9 put
floor((full - strided) / 2) at the top and left instead: the same for a symmetric
padding and output padding 0 or 1.
How conv_transpose2d.cpp `conv_transpose2d_L1` builds it: SlidingWindow(batch, the
transposed conv's own input (H, W), kernel, its stride, its padding
(`get_pair_n4_padding`: (p_h, p_h, p_w, p_w) from two), dilation, num_cores_nhw of the
parallel config chosen on the output's height and width, layout, snap_to_tile=True,
is_transpose=True, output_padding_hw=output_padding). The halo input is the input's own
N x H x W sticks sharded as conv2d's (`shard_or_reshard_tensor_if_required`):
input_shard_height = round_up(N H W, num_cores_nhw x 32) / num_cores_nhw (x 1 for a
row-major input width sharded or given a non-tile shard height). The same config goes
to `ttnn::prim::conv2d` (with the same num_cores_nhw and snap_to_tile), so the reader
indices are `conv_reader_indices_bytes` of the same window: the trace over the full
input at stride 1, segments tested against stride_w 1 (tt-metal PR #33465 on) or,
before it (the factory at 003324fca537), against the transposed stride
(`segments_by_transposed_stride`: with a stride above 1 about two entries an output,
more than the 2 B an output row `get_cb_info` gives the DRAM page).

Worked example (H3, 1 x 128 x 128 x 32 bf16, 3x3, padding 1, 103 cores): 160 output
sticks a core over the 130 x 130 padded input, the halo reaching (3-1) x 130 + 2 = 262
sticks past the last, 424 sticks a core. Its window crosses up to four row edges: four
pad runs, split 2 + 2, 2 entries a run and a null plug: 6 entries = 12 B each. Core 2
sends 2 runs to itself and 2 each to cores 1 and 3, dealt alternately: 3 routes of one
transfer each a reader, 1 + 3 x 3 + 3 x 3 = 19 entries, 20 even = 40 B. Core 0's
reader indices (act block 5 tiles, split 3 + 2): a 96-stick block over one row (count,
pad, first, last) and a 64-stick block across a row edge (two segments): 4 + 6 = 10
entries = 20 B.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import MemoryLayout
from tileplan.targets.tenstorrent.tiles import TILE

#: bytes of one config entry (UINT16)
ENTRY_BYTES = 2
_I64 = np.int64


@dataclass(frozen=True, slots=True)
class SlidingWindow:
    """sliding_window.hpp `SlidingWindowConfig`, the fields the sizes need. `padding` is
    (top, bottom, left, right); `num_cores_nhw` the cores the N x H x W sticks are split
    over (the grid's rows for block sharding, 1 for width sharding); `ceil_mode` the
    pool's; `is_transpose` and `output_padding_hw` (`output_pad_hw`) conv_transpose2d's."""

    batch: int
    input_hw: tuple[int, int]
    window_hw: tuple[int, int]
    stride_hw: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation_hw: tuple[int, int] = (1, 1)
    num_cores_nhw: int = 1
    layout: MemoryLayout = MemoryLayout.HEIGHT_SHARDED
    snap_to_tile: bool = True
    ceil_mode: bool = False
    is_transpose: bool = False
    output_padding_hw: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        positive = {"batch": (self.batch,), "input_hw": self.input_hw, "window_hw": self.window_hw,
                    "stride_hw": self.stride_hw, "dilation_hw": self.dilation_hw,
                    "num_cores_nhw": (self.num_cores_nhw,)}
        for name, values in positive.items():
            if any(not isinstance(v, int) or v < 1 for v in values):
                raise InputError(f"expected positive integers, found {values}", f"SlidingWindow.{name}")
        if any(not isinstance(p, int) or p < 0 for p in self.padding) or len(self.padding) != 4:
            raise InputError(f"expected 4 non-negative integers (top, bottom, left, right), found {self.padding}",
                             "SlidingWindow.padding")
        if any(not isinstance(p, int) or p < 0 for p in self.output_padding_hw) or len(self.output_padding_hw) != 2:
            raise InputError(f"expected 2 non-negative integers, found {self.output_padding_hw}",
                             "SlidingWindow.output_padding_hw")
        if self.layout is MemoryLayout.INTERLEAVED:
            raise InputError("the config tensors exist for sharded inputs only; found interleaved",
                             "SlidingWindow.layout")
        if self.layout is MemoryLayout.WIDTH_SHARDED and self.num_cores_nhw != 1:
            raise InputError(f"width sharding keeps every stick on each core: num_cores_nhw must be 1, "
                             f"found {self.num_cores_nhw}", "SlidingWindow.num_cores_nhw")
        if self.ceil_mode and self.is_transpose:
            raise InputError("ceil_mode is not supported for transposed operation", "SlidingWindow.ceil_mode")
        if any(self.output_padding_hw) and not self.is_transpose:
            raise InputError(f"an output padding belongs to a transposed window; found {self.output_padding_hw} "
                             "with is_transpose false", "SlidingWindow.output_padding_hw")
        (kh, kw), pt, pb, pl, pr = self.dilated_window_hw, *self.padding
        if self.is_transpose:
            if max(pt, pb) > kh - 1 or max(pl, pr) > kw - 1:
                raise InputError(f"a transposed window's padding {self.padding} exceeds d (k - 1) = {(kh - 1, kw - 1)}"
                                 " (its full input's real padding would be negative)", "SlidingWindow.padding")
            if min(self.output_hw) < 1:
                raise InputError(f"the transposed output {self.output_hw} is empty", "SlidingWindow.padding")
        elif min(self.output_hw) < 1:
            # ceil mode grows the input to the window (HF EfficientNet's pooler: AvgPool2d(128,
            # ceil_mode=True) of a 1 x 1 map: one output)
            raise InputError(f"the dilated window {self.dilated_window_hw} does not fit the padded input "
                             f"{self.padded_hw}", "SlidingWindow.window_hw")

    def __repr__(self) -> str:
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if getattr(self, f.name) != f.default]
        return f"SlidingWindow({', '.join(shown)})"

    @property
    def ceil_pad_hw(self) -> tuple[int, int]:
        """`get_ceil_pad_hw` (the later version): the rows and columns ceil mode adds at
        the bottom and right, from the ceil count after its drop; (0, 0) out of ceil mode."""
        if not self.ceil_mode:
            return 0, 0
        pads = []
        for size, lead, k, s, pad in zip(self.input_hw, self.padding[::2], self.dilated_window_hw, self.stride_hw,
                                         (sum(self.padding[:2]), sum(self.padding[2:]))):
            count = -(-(size + pad - k) // s) + 1  # the C++'s float32 std::ceil, exact below 2**24
            if (count - 1) * s >= size + lead:  # the last window would start in the bottom / right padding
                count -= 1
            pads.append(max(s * (count - 1) + k - size - pad, 0))
        return pads[0], pads[1]

    @property
    def padded_hw(self) -> tuple[int, int]:
        """The input the halo builds and the window walks: padded (and grown by ceil
        mode's pads); transposed, the full input, output + d (k - 1)."""
        (kh, kw) = self.dilated_window_hw
        if self.is_transpose:
            oh, ow = self.output_hw
            return oh + kh - 1, ow + kw - 1
        pt, pb, pl, pr = self.padding
        ch, cw = self.ceil_pad_hw
        return self.input_hw[0] + pt + pb + ch, self.input_hw[1] + pl + pr + cw

    @property
    def dilated_window_hw(self) -> tuple[int, int]:
        (kh, kw), (dh, dw) = self.window_hw, self.dilation_hw
        return dh * (kh - 1) + 1, dw * (kw - 1) + 1

    @property
    def output_hw(self) -> tuple[int, int]:
        """`get_output_shape`: (padded - dilated window) / stride + 1, floored over the
        input ceil mode grew; transposed, (in - 1) s - pads + d (k - 1) + output pad + 1."""
        (dkh, dkw), (sh, sw) = self.dilated_window_hw, self.stride_hw
        if self.is_transpose:
            (h, w), (pt, pb, pl, pr), (oph, opw) = self.input_hw, self.padding, self.output_padding_hw
            return (h - 1) * sh - pt - pb + dkh + oph, (w - 1) * sw - pl - pr + dkw + opw
        hp, wp = self.padded_hw
        return (hp - dkh) // sh + 1 if hp >= dkh else 0, (wp - dkw) // sw + 1 if wp >= dkw else 0

    @property
    def trace_stride_hw(self) -> tuple[int, int]:
        """The op trace's step: the stride; transposed, 1 ("In Transpose as Conv2d,
        Stride is always 1")."""
        return (1, 1) if self.is_transpose else self.stride_hw

    @property
    def lattice(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """Where the input's sticks sit in the padded input: the first one's (row,
        column) and the step between them. (top, left) and (1, 1); transposed, the real
        padding (d (k - 1) - top, d (k - 1) - left) and the stride."""
        if self.is_transpose:
            (kh, kw), (pt, _, pl, _) = self.dilated_window_hw, self.padding
            return (kh - 1 - pt, kw - 1 - pl), self.stride_hw
        return (self.padding[0], self.padding[2]), (1, 1)

    @property
    def output_sticks(self) -> int:
        oh, ow = self.output_hw
        return self.batch * oh * ow

    @property
    def output_shard_height(self) -> int:
        """`get_output_shard_y`: N x OH x OW rounded up to the cores (times a tile when
        snapped), a core's share. H3: 16,384 -> 16,480 / 103 = 160."""
        unit = self.num_cores_nhw * (TILE if self.snap_to_tile else 1)
        return -(-self.output_sticks // unit) * unit // self.num_cores_nhw


@dataclass(frozen=True, slots=True)
class HaloConfigSizes:
    """A core's bytes of the halo's four config tensors (their buffers' page size and
    the CBs bound to them), and `halo_sticks`, `max_out_nsticks_per_core` (the halo
    output shard's sticks). H3: 12, 12, 40, 40 B and 424 sticks."""

    padding_config0: int
    padding_config1: int
    gather_config0: int
    gather_config1: int
    halo_sticks: int


def _op_trace(w: SlidingWindow, out: np.ndarray) -> np.ndarray:
    """`generate_op_trace_metadata`: output stick -> the padded-input stick at its
    window's top-left corner, n x Hp x Wp + y x sh x Wp + x x sw (transposed: stride 1)."""
    (oh, ow), (hp, wp), (sh, sw) = w.output_hw, w.padded_hw, w.trace_stride_hw
    n, rem = np.divmod(out, oh * ow)
    y, x = np.divmod(rem, ow)
    return n * (hp * wp) + y * (sh * wp) + x * sw


def _shard_boundaries(w: SlidingWindow) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`generate_shard_boundaries`: per core its outputs [start, end] and the padded-input
    sticks they read [start, end]; a core past the outputs keeps the last output's range
    (the C++ does), a range starting at stick 0 off core 0 is emptied."""
    total = w.output_sticks
    (dkh, dkw), wp = w.dilated_window_hw, w.padded_hw[1]
    reach = (dkh - 1) * wp + dkw - 1
    out_start = np.minimum(np.arange(w.num_cores_nhw, dtype=_I64) * w.output_shard_height, total)
    out_end = np.minimum(out_start + w.output_shard_height, total) - 1
    in_start = _op_trace(w, np.minimum(out_start, total - 1))
    in_end = _op_trace(w, out_end) + reach
    emptied = (in_start == 0) & (out_start != 0)
    in_start = np.where(emptied, in_end - reach + 1, in_start)
    in_end = np.where(emptied, in_start - 1, in_end)
    return out_start, out_end, in_start, in_end


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint [start, end] intervals -> the maximal runs they make."""
    new = np.ones(len(starts), dtype=bool)
    new[1:] = starts[1:] != ends[:-1] + 1
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(starts) - 1)
    return starts[first], ends[last]


def _pad_and_real_runs(w: SlidingWindow) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """`generate_pad_metadata` as runs: the real sticks' runs (an input row's sticks one
    run, or one a stick when a transposed stride interleaves zeros; merged where rows
    touch) and the pad runs between and around them."""
    (h, width), (hp, wp), ((top, left), (sh, sw)) = w.input_hw, w.padded_hw, w.lattice
    n, i = np.divmod(np.arange(w.batch * h, dtype=_I64), h)
    base = (n * hp + top + i * sh) * wp + left
    if sw == 1:
        real = _merge(base, base + width - 1)
    else:
        sticks = (base[:, None] + np.arange(width, dtype=_I64) * sw).ravel()
        real = _merge(sticks, sticks)
    pad_s = np.append(0, real[1] + 1)
    pad_e = np.append(real[0] - 1, w.batch * hp * wp - 1)
    keep = pad_s <= pad_e
    return (pad_s[keep], pad_e[keep]), real


def _overlaps(starts: np.ndarray, ends: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per range [lo, hi], the index span [first, stop) of the sorted disjoint runs it meets."""
    first = np.searchsorted(ends, lo, side="left")
    stop = np.searchsorted(starts, hi, side="right")
    stop = np.where(hi >= lo, np.maximum(stop, first), first)
    return first, stop


def _row_breaks(w: SlidingWindow, stride_w: int) -> tuple[np.ndarray, np.ndarray]:
    """The outputs that begin a row (or image) and those of them where a segment of
    window corners stepping by `stride_w` breaks (the corner jumps by anything else)."""
    oh, ow = w.output_hw
    row_starts = np.arange(1, w.batch * oh, dtype=_I64) * ow
    jumps = _op_trace(w, row_starts) - _op_trace(w, row_starts - 1)
    return row_starts, row_starts[jumps != stride_w]


def max_out_nsticks_per_core(window: SlidingWindow) -> int:
    """sliding_window.cpp `generate_max_out_nsticks_per_core`: over the cores, the
    padded-input sticks a core's outputs read, first window corner to last window's far
    corner (`generate_shard_boundaries`): the halo output shard's sticks. H3: 424."""
    _, _, lo, hi = _shard_boundaries(window)
    return _longest_span(lo, hi)


def _longest_span(lo: np.ndarray, hi: np.ndarray) -> int:
    """The most sticks any core's [lo, hi] range holds (an emptied range holds none)."""
    return int(np.max(np.maximum(hi - lo + 1, 0)))


def halo_config_bytes(window: SlidingWindow, input_shard_height: int, *, tiled_input: bool = False) -> HaloConfigSizes:
    """A core's bytes of the halo's config tensors (untilize_with_halo_program_factory.cpp
    `UntilizeWithHaloProgramFactory::create`, sliding_window.cpp
    `generate_halo_kernel_config_tensors`), the halo input sharded `input_shard_height`
    sticks a core (its shard spec: `generate_tensor_metadata` deals the real sticks out in
    that many a core).

    Each core walks its padded-input range: a run of pad sticks is a pad entry, a run of
    real sticks from one source core a transfer (src, dst, size). Pad runs: the first half
    to `padding_config0`, the rest to `padding_config1`, 2 entries each plus a 2-entry
    null plug. Transfers: a core's config holds what it sends (`remote_read` false): its
    local runs, then each destination's in core order; dealt alternately to the two
    readers, each reader's consecutive transfers to one core a route: [routes, (noc x,
    noc y, n, n x (src, dst, size))...]. The NOC coordinates are one a core, so only the
    core matters to the grouping. Ceil mode's pads and a transposed window's zeros are pad
    sticks like the others; the input sticks (`input_shard_height` counts) are the
    input's own N x H x W, transposed too."""
    if tiled_input:
        raise InputError("a TILE halo input (the untilize path: transfers quantized to 32-stick blocks and "
                         "ordered by NOC coordinates) is not modelled", "halo_config_bytes.tiled_input")
    nhw = window.batch * window.input_hw[0] * window.input_hw[1]
    if not isinstance(input_shard_height, int) or input_shard_height < 1:
        raise InputError(f"expected a positive integer, found {input_shard_height!r}",
                         "halo_config_bytes.input_shard_height")
    sources = -(-nhw // input_shard_height)
    cores = window.num_cores_nhw
    if sources > cores:
        raise InputError(f"{nhw} input sticks at {input_shard_height} a core need {sources} cores, more than the "
                         f"{cores} num_cores_nhw", "halo_config_bytes.input_shard_height")
    _, _, lo, hi = _shard_boundaries(window)
    halo_sticks = _longest_span(lo, hi)
    (pad_s, pad_e), (real_s, real_e) = _pad_and_real_runs(window)

    # pad runs per core, split in halves (flatten_pad_config over pad_config0 / 1)
    first, stop = _overlaps(pad_s, pad_e, lo, hi)
    runs = stop - first
    pad0 = 2 * int(np.max(runs // 2)) + 2
    pad1 = 2 * int(np.max(runs - runs // 2)) + 2

    # pieces: real runs cut where the input's owning core changes (the k-th real stick is the input's k-th)
    (h, width), (hp, wp), ((top, left), (sh, sw)) = window.input_hw, window.padded_hw, window.lattice
    cuts = np.arange(1, sources, dtype=_I64) * input_shard_height
    n, rem = np.divmod(cuts, h * width)
    cut_global = (n * hp + top + rem // width * sh) * wp + left + rem % width * sw
    at = np.searchsorted(real_s, cut_global)
    fresh = real_s[np.minimum(at, len(real_s) - 1)] != cut_global
    piece_s = np.insert(real_s, at[fresh], cut_global[fresh])
    run = np.searchsorted(real_s, piece_s, side="right") - 1
    piece_e = np.minimum(real_e[run], np.append(piece_s[1:] - 1, np.iinfo(_I64).max))
    n, rem = np.divmod(piece_s, hp * wp)
    row, col = np.divmod(rem, wp)
    owner = (n * (h * width) + (row - top) // sh * width + (col - left) // sw) // input_shard_height

    # transfers: each (destination core, piece it meets) pair, grouped by (source, destination)
    first, stop = _overlaps(piece_s, piece_e, lo, hi)
    count = stop - first
    dst = np.repeat(np.arange(cores, dtype=_I64), count)
    skip = np.repeat(first - (np.cumsum(count) - count), count)
    piece = np.arange(int(count.sum()), dtype=_I64) + skip
    key = owner[piece] * cores + dst  # owners rise along a destination's pieces: a (source, destination) is one run
    first = np.flatnonzero(np.diff(key, prepend=key[:1] - 1))
    sizes = np.diff(np.append(first, len(key)))
    src, dst = np.divmod(key[first], cores)
    order = np.lexsort((dst, src != dst, src))  # local route first, then destinations in core order
    src, sizes = src[order], sizes[order]
    ends = np.cumsum(sizes)
    src_first = np.searchsorted(src, src, side="left")
    offset = ends - sizes - np.where(src_first > 0, ends[src_first - 1], 0)
    several = sizes >= 2
    routes0 = np.bincount(src, weights=several | (offset % 2 == 0), minlength=cores).astype(_I64)
    routes1 = np.bincount(src, weights=several | (offset % 2 == 1), minlength=cores).astype(_I64)
    total = np.bincount(src, weights=sizes, minlength=cores).astype(_I64)
    gather0 = int(np.max(1 + 3 * routes0 + 3 * ((total + 1) // 2)))
    gather1 = int(np.max(1 + 3 * routes1 + 3 * (total // 2)))
    pad0, pad1, gather0, gather1 = (ENTRY_BYTES * (e + e % 2) for e in (pad0, pad1, gather0, gather1))
    return HaloConfigSizes(pad0, pad1, gather0, gather1, halo_sticks)


def conv_reader_indices_bytes(window: SlidingWindow, act_block_h_ntiles: int, *, split_reader: bool = False,
                              segments_by_transposed_stride: bool = False) -> int:
    """A core's bytes of conv2d's reader indices (sliding_window.cpp
    `generate_sliding_window_op_config`, is_conv, from conv2d_op_sharded_program_factory.cpp).

    A core's outputs go in activation blocks of `act_block_h_ntiles` tiles (split reader:
    alternately the first ceil(n/2) and last floor(n/2) tiles); each block is [segments,
    0, then first and last window corner of each run of outputs stepping by stride_w], a
    run broken where an output row (or image) begins unless the jump happens to equal
    stride_w. Rows are padded to the longest core's.

    A transposed window: conv_transpose2d gives `ttnn::prim::conv2d` its halo's config, so
    the trace steps by 1 over the full input. The factories pass stride_w 1 for it since
    tt-metal PR #33465 (Dec 2025, "reader indices compression was broken for stride > 1");
    before it (003324fca537 among them; `segments_by_transposed_stride`) the transposed
    stride: above 1, every step inside a row breaks the run too, 2 + 2 n entries a block
    of n outputs, less 2 for each row change whose jump d (k_w - 1) + 1 equals the stride."""
    if not isinstance(act_block_h_ntiles, int) or act_block_h_ntiles < 1:
        raise InputError(f"expected a positive integer, found {act_block_h_ntiles!r}",
                         "conv_reader_indices_bytes.act_block_h_ntiles")
    if not window.snap_to_tile:
        raise InputError("conv2d's sliding window snaps its output shards to tiles; found snap_to_tile=False",
                         "conv_reader_indices_bytes.window")
    per_core = window.output_shard_height
    if per_core % (act_block_h_ntiles * TILE):
        raise InputError(f"the output shard of {per_core // TILE} tiles is not a multiple of act_block_h_ntiles "
                         f"{act_block_h_ntiles}", "conv_reader_indices_bytes.act_block_h_ntiles")
    if split_reader and window.layout is MemoryLayout.WIDTH_SHARDED:
        raise InputError("the width-sharded conv has no split reader", "conv_reader_indices_bytes.split_reader")
    if window.ceil_mode:
        raise InputError("conv2d's sliding window has no ceil mode (a pool's)", "conv_reader_indices_bytes.window")
    last = act_block_h_ntiles // 2 if split_reader else 0  # is_split_reader_supported: more than one tile
    sizes = [(act_block_h_ntiles - last) * TILE] + ([last * TILE] if last else [])

    # output sticks where a segment breaks: a row start whose window corner jumps by other than stride_w,
    # and every other output when the trace steps inside a row by other than stride_w (transposed)
    stride_w = 1 if window.is_transpose and not segments_by_transposed_stride else window.stride_hw[1]
    row_starts, breaks = _row_breaks(window, stride_w)
    inner_breaks = window.trace_stride_hw[1] != stride_w

    out_start, out_end, _, _ = _shard_boundaries(window)
    has_outputs = out_start < window.output_sticks
    period = sum(sizes)
    pairs = -(-per_core // period)
    rel_start = (np.arange(pairs, dtype=_I64)[:, None] * period + np.cumsum([0] + sizes[:-1])).ravel()
    rel_size = np.tile(np.array(sizes, dtype=_I64), pairs)
    block_start = out_start[:, None] + rel_start[None, :]
    block_end = np.minimum(block_start + rel_size[None, :] - 1, out_end[:, None])
    valid = (block_start <= out_end[:, None]) & has_outputs[:, None]

    def within(marks: np.ndarray) -> np.ndarray:  # marks in (block_start, block_end]
        return np.searchsorted(marks, block_end, side="right") - np.searchsorted(marks, block_start, side="right")

    segments = 1 + within(breaks)
    if inner_breaks:
        segments += block_end - block_start - within(row_starts)
    entries = np.where(valid, 2 + 2 * segments, 0).sum(axis=1)
    longest = int(entries.max())
    return ENTRY_BYTES * (longest + longest % 2)


def pool_reader_indices_bytes(window: SlidingWindow) -> int:
    """A core's bytes of a 2-D pool's reader indices (tenstorrent/tt-metal
    pool/generic/device/pool_multi_core_program_factory.cpp `Pool2D::MultiCore::create`,
    at 5cd3a453f15f and at 002a3f412aeb, before `config_tensor_in_dram`: sliding_window.cpp
    `generate_sliding_window_op_config(op_trace_metadata, shard_boundaries, stride_w)`,
    sliding_window.hpp's defaults is_conv false, reader0_datums = reader1_datums = 0,
    pad_cores true; 00002df221d9).

    No reader datums: the block counter starts at 0 and wraps below it, so a core's
    outputs are one block ending at its last output (is_conv false never starts another):
    [segments, 0, then first and last window corner of each run of outputs stepping by
    stride_w], 2 + 2 x segments entries, a run broken where an output row (or image)
    begins unless the jump equals stride_w. A core without outputs has none; the rows are
    padded to the longest (pad_cores), then to an even count (`construct_on_host_config_tensor`).
    The factory asserts the row within 3 entries an output + 2 B ("Reader indices buffer
    page size {} exceeds max expected size {}"), which 2 + 2 x segments entries always are.
    Worked example: a 2 x 2 / 2 pool of 480 x 640 on 64 cores, 1,200 outputs a core of
    rows of 320: core 1's outputs 1,200 .. 2,399 hold 4 row starts (each a jump of 642,
    not 2): 5 segments, 12 entries = 24 B (core 0's 3: 10 entries)."""
    if window.is_transpose:
        raise InputError("a pool's window is not transposed", "pool_reader_indices_bytes.window")
    _, breaks = _row_breaks(window, window.stride_hw[1])
    out_start, out_end, _, _ = _shard_boundaries(window)
    segments = 1 + np.searchsorted(breaks, out_end, side="right") - np.searchsorted(breaks, out_start, side="right")
    longest = int(np.max(np.where(out_start < window.output_sticks, 2 + 2 * segments, 0)))
    return ENTRY_BYTES * (longest + longest % 2)
