"""2-D max and average pooling (`ttnn.max_pool2d`, `ttnn.avg_pool2d`) as ttnn runs them:
(interleaved-to-sharded) -> halo -> pool2d -> (sharded-to-interleaved), each a program of
its own, as ttnn/cpp/ttnn/operations/pool/generic/generic_pools.cpp `pool2d_invoke`
(the late-2025 version with `dtype` and `output_layout`) runs them.

Sources (tenstorrent/tt-metal):
- the shard layout: pool_utils.cpp `determine_pool_config_for_auto_shard` (no shard
  scheme given, as tt-mlir gives none: TTIRToTTNN.cpp `Pooling2dOpConversionPattern`,
  `applied_shard_scheme = nullptr`): height, width and block sharding each priced by
  `calculate_L1_usage` on the memory config `get_memconfig` makes (shard height the
  output's rows over the cores rounded to 32 rows, width the channels padded to 32 a
  core), the least wins, height on ties, then width;
- each layout's grid: conv2d_utils.cpp `determine_parallel_config` as pooling calls it
  (`determine_valid_parallel_config`: input and output channels the same, channel
  alignment 32, no channel padding, a row-major output: shard height a multiple of 1
  row, shard width of 16 channels): height sharding the output rows over
  `find_closest_largest_divisor_with_num_padding_and_mult` of the grid's cores; block
  sharding that over the grid's rows and `find_closest_largest_divisor(C / 16, C / 32,
  grid x)` columns; width sharding `find_closest_largest_divisor(C / 16, cores)` cores;
- the sharded input (`create_sharded_memory_config_from_parallel_config`, tile size 1 for
  a row-major input): the input rows padded to the cores, the channels padded to the
  channel cores x 8; the pool's output shard: the output rows padded to the cores over
  them, the channels padded to the channel cores x 16;
- the halo: sliding_window/halo/device/untilize_with_halo_program_factory.cpp (as the
  conv's, tt_sliding_window.py `max_out_nsticks_per_core`), its input freed after it (the input was in DRAM:
  `deallocate_input || is_input_tensor_in_dram`);
- the pool program's circular buffers: pool_utils.cpp `calculate_L1_usage`, which
  pool_multi_core_program_factory.cpp (`pool2d_multi_core_sharded_with_halo_v2_impl_new`)
  asserts equal to the buffers it creates, in the factory's order (at 5cd3a453f15f,
  after tt-metal PR #35212; 002a3f412aeb before it has the same CBs, the configs always
  in L1_SMALL): the reduce scalar (2 tiles; a second one for an average pool with more
  than one scalar a core), the clear value (1 tile), the halo output (raw input, bound),
  the reader indices, the two readers' input blocks (2 pages each of the kernel rows'
  tiles padded to 1,024 elements, at most 8 tiles of channels, 4 for a large average
  kernel), a pre-tilize CB for a TILE output, the output (bound) and an average pool's
  scalar config;
- the pool's own config tensors, made by its factory (`Pool2D::MultiCore::create`) after
  the output and held by the cached program (its shared variables `reader_indices_storage`
  and `scalar_config_storage`): the reader indices (tt_sliding_window.py
  `pool_reader_indices_bytes`) and, for an average pool with a scalar per output, the
  scalar config (`avg_pool_scalar_bytes`), UINT16 rows. In L1_SMALL
  (`config_tensor_in_dram` false: always before PR #35212, and tt-mlir builds before
  tt-mlir #6919, 2026-02-06: devices/software.toml `pool_config_tensors_in_dram`),
  HEIGHT_SHARDED one row a core of the pool's grid (sliding_window.cpp
  `construct_on_host_config_tensor` and `move_config_tensor_to_device`: the N x H x W
  rows repeated over the channel cores; the scalar config's rows repeated by the
  factory), the CBs bound to them: the reader indices' page the entry count rounded up
  to 4 (the factory passes `top_left_indices[0].size()`, entries, as bytes), the scalar
  config's its buffer's page. In DRAM (interleaved, a row of each N x H x W core, a page
  a row), the CBs unbound, sized to the worst case of 3 entries an output row: 6 B a row
  + 2 for the reader indices, 6 B a row for the scalar config (`calculate_L1_usage`:
  "Worst case of 6 Bytes per output elem"). The halo's configs go where the pool's go
  (generic_pools.cpp at 465a425e2169 passes `config_tensor_in_dram` to `ttnn::halo`).

Ceil mode (sliding_window.cpp `get_output_shape`, `get_ceil_pad_h` / `get_ceil_pad_w`):
the output size by ceil, a last window starting in the padding dropped, and the input
padded at the bottom and right by stride x (out - 1) + kernel - input - 2 x padding,
which the halo reads as padding; an average pool so padded, like one with padding not
counted, has a scalar per output row, not one per core (pool_utils.cpp
`is_pool_op_one_scalar_per_core`): a second scalar CB and the scalars' config rows.

The halo's config tensors and its four CBs for them: tt_conv_config.py, their sizes
tt_sliding_window.py. Not modelled (the rule refuses them by name): a sharded or TILE
input (the halo's untilize path), `return_indices`, dilation, and the DRAM slicing the
2026 op adds for inputs that do not fit L1 (tileplan plans the L1-resident pool, as for
conv2d). From tt-metal PR #43193 (2026-04-27; undone by #43305, restored by #44064,
described 2026-05-12) the DRAM reader indices' CB takes the tensor's own page, not the
worst case (`Pool2dAttrs.reader_indices_cb`, the build's `reader_indices_cb`; the auto
shard's price keeps the worst case, as tt-metal's does), and a later pool_utils.hpp passes
the scalar config's own page too (its date not established: tileplan keeps the worst case
for it).

Worked example: max pool 2 x 2 / 2 of a [1, 1, 480 x 640, 32] bf16 input on an 8 x 8
grid: 76,800 output rows height sharded over 64 cores (1,200 a core), the input 4,800
rows a core; pool CBs scalar 4,096 + clear 2,048 + reader indices' staging 1,200 x 6 + 2
+ two readers 2 x 2 x 2,048 = 21,538 B, the reader indices 24 B a core (64 rows in DRAM;
in L1_SMALL 32 B a bank).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardOrientation,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    DeviceBuffer,
    OpPlan,
    OpRequest,
    OpTarget,
    Program,
    cbuf,
    ceil_div,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv import (
    HALO_SOURCE,
    I2S_SOURCE,
    S2I_SOURCE,
)
from tileplan.targets.tenstorrent.ops.tt_conv_grid import divisor_with_padding
from tileplan.targets.tenstorrent.ops.tt_conv_config import ConfigPlacement, halo_configs
from tileplan.targets.tenstorrent.ops.tt_sliding_window import (
    ENTRY_BYTES,
    SlidingWindow,
    max_out_nsticks_per_core,
    pool_reader_indices_bytes,
)
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up
from tileplan.targets.tenstorrent.versions import ReaderIndicesCb

POOL_SOURCE = "ttnn/cpp/ttnn/operations/pool/generic/device/pool_multi_core_program_factory.cpp"
#: tt constants: FACE_WIDTH, TILE_HW
FACE, TILE_HW = 16, TILE * TILE
#: get_factory_parameters: `multi_buffering_factor`
BUFFERING = 2
#: calculate_L1_usage and the factory: the L1 staging of config tensors in DRAM, the worst
#: case of 3 UINT16 entries an output row (+ 2 B for the reader indices' segment count)
CONFIG_BYTES_PER_ROW, CONFIG_EXTRA = 6, 2
#: create_scalar_config_tensor: a ScalarInfo entry (start, value, end), 3 UINT16
SCALAR_ENTRY_BYTES = 3 * ENTRY_BYTES
#: generic_pools.cpp: a non-sharded row-major input's channel alignment
INPUT_CHANNEL_ALIGNMENT = 8


class PoolType(Enum):
    """tt-metal `Pool2DType`."""

    MAX = "max"
    AVG = "avg"


@dataclass(frozen=True, slots=True)
class Pool2dAttrs:
    """ttnn.max_pool2d / avg_pool2d arguments (the input flattened [1, 1, N*H*W, C])."""

    batch: int
    input_hw: tuple[int, int]
    channels: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int] = (0, 0)
    count_include_pad: bool = True
    config_tensors_in_dram: bool = True
    output_layout: Layout = Layout.ROW_MAJOR
    ceil_mode: bool = False
    #: not a ttnn field: how the build sizes the reader indices' CB with them in DRAM
    #: (versions.py `ReaderIndicesCb`; the frontend takes the build's)
    reader_indices_cb: ReaderIndicesCb = ReaderIndicesCb.WORST_CASE

    @property
    def output_hw(self) -> tuple[int, int]:
        """sliding_window.cpp `SlidingWindowConfig::get_output_shape`: floor, or in ceil
        mode ceil with a last window that would start in the padding dropped."""
        (h, w), (kh, kw), (sh, sw), (ph, pw) = self.input_hw, self.kernel, self.stride, self.padding
        if not self.ceil_mode:
            return (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
        out = []
        for size, k, s, p in ((h, kh, sh, ph), (w, kw, sw, pw)):
            o = ceil_div(size + 2 * p - k, s) + 1
            out.append(o - 1 if (o - 1) * s >= size + p else o)
        return out[0], out[1]

    @property
    def ceil_pads(self) -> tuple[int, int]:
        """`get_ceil_pad_h` / `get_ceil_pad_w`: the rows and columns ceil mode pads at the
        bottom and right, stride x (out - 1) + kernel - input - 2 x padding, none when that
        is negative (`padding_calc > 0 ? padding_calc : 0`: a last window dropped for
        starting in the padding)."""
        if not self.ceil_mode:
            return 0, 0
        (h, w), (kh, kw), (sh, sw), (ph, pw) = self.input_hw, self.kernel, self.stride, self.padding
        oh, ow = self.output_hw
        return max(0, sh * (oh - 1) + kh - h - 2 * ph), max(0, sw * (ow - 1) + kw - w - 2 * pw)

    def sliding_window(self, cores_nhw: int, layout: MemoryLayout) -> SlidingWindow:
        """The halo's `SlidingWindowConfig` (generic_pools.cpp `pool2d_invoke`: the
        window, stride, padding and ceil mode, no dilation, the shards snapped to tiles
        only for a TILE output: `snap_to_tile = is_out_tiled`, @465a425e), for the sizes
        of its config tensors (tt_sliding_window.py)."""
        (ph, pw) = self.padding
        return SlidingWindow(self.batch, self.input_hw, self.kernel, self.stride, (ph, ph, pw, pw), (1, 1),
                             cores_nhw, layout, snap_to_tile=self.output_layout is Layout.TILE,
                             ceil_mode=self.ceil_mode)

    def output_shard_rows(self, cores_nhw: int) -> int:
        """generic_pools.cpp `pool2d_L1` (@465a425e): the output's N*H*W rows padded to
        the cores, times a tile's 32 rows for a TILE output (`output_nhw_padded`), over
        the cores."""
        unit = TILE if self.output_layout is Layout.TILE else 1
        return round_up(self.output_rows, cores_nhw * unit) // cores_nhw

    @property
    def output_rows(self) -> int:
        oh, ow = self.output_hw
        return self.batch * oh * ow


@dataclass(frozen=True, slots=True)
class PoolParallel:
    """A pooling shard grid: its layout, cores along the rows and the channels."""

    layout: MemoryLayout
    grid: CoreRange | CoreRangeSet
    cores_nhw: int
    cores_c: int


def _largest_divisor(num: int, start: int) -> int:
    """conv2d_utils.cpp `find_closest_largest_divisor(num, start)`."""
    return next(d for d in range(min(start, num), 0, -1) if num % d == 0)


def _largest_common_divisor(num1: int, num2: int, start: int) -> int:
    """`find_closest_largest_divisor(num1, num2, start)`."""
    return next(d for d in range(min(start, num1, num2), 0, -1) if num1 % d == 0 and num2 % d == 0)


def parallel_config(attrs: Pool2dAttrs, layout: MemoryLayout, target: OpTarget) -> PoolParallel:
    """`determine_parallel_config` as pooling calls it (see the module docstring)."""
    gx, gy = target.grid
    rows, c = attrs.output_rows, attrs.channels
    if layout is MemoryLayout.HEIGHT_SHARDED:
        n = divisor_with_padding(rows, gx * gy)
        return PoolParallel(layout, CoreRangeSet.from_count(n, gx, gy, row_wise=True), n, 1)
    if layout is MemoryLayout.BLOCK_SHARDED:
        n = divisor_with_padding(rows, gy)
        cc = _largest_common_divisor(ceil_div(c, FACE), ceil_div(c, TILE), gx)
        return PoolParallel(layout, CoreRange((0, 0), (cc - 1, n - 1)), n, cc)
    require(layout is MemoryLayout.WIDTH_SHARDED, "pool2d", f"shard layout {layout.value} is not a pool layout")
    cc = _largest_divisor(ceil_div(c, FACE), gx * gy)
    return PoolParallel(layout, CoreRangeSet.from_count(cc, gx, gy, row_wise=True), 1, cc)


def one_scalar_per_core(kind: PoolType, attrs: Pool2dAttrs) -> bool:
    """pool_utils.cpp `is_pool_op_one_scalar_per_core` (no divisor override from tt-mlir):
    a max pool, or an average pool whose every window counts the same, one scalar a core;
    else a scalar per output and the scalar config tensor."""
    (ph, pw), (ch, cw) = attrs.padding, attrs.ceil_pads
    return kind is PoolType.MAX or ((not attrs.ceil_mode or (ch == 0 and cw == 0))
                                    and (attrs.count_include_pad or (ph == 0 and pw == 0)))


@dataclass(frozen=True, slots=True)
class BoundCbs:
    """What the pool program's CBs bound to a tensor take from it, (pages, page bytes):
    the halo output (`raw_in`) and the output; and the rows, in bytes, of the reader
    indices and the scalar config, which size their CBs (`pool_cbs`)."""

    raw_in: tuple[int, int]
    out: tuple[int, int]
    reader_row: int
    scalar_config: int


def pool_cbs(kind: PoolType, attrs: Pool2dAttrs, cores_c: int, out_shard: tuple[int, int],
             in_dtype: DataType, bound: BoundCbs | None = None) -> list[tuple[str, int, int, bool]]:
    """The pool program's circular buffers (name, pages, page bytes, bound to a buffer) in
    the factory's creation order, `calculate_L1_usage` and `get_factory_parameters` (module
    docstring); without `bound`, only those taking CB space (the auto shard's price)."""
    dtype = DataType.BFLOAT16 if in_dtype.block_float else in_dtype
    nbytes = dtype.element_bytes
    kernel_hw = attrs.kernel[0] * attrs.kernel[1]
    tilized_rows = kernel_hw if kernel_hw <= FACE else TILE
    per_core_c = attrs.channels // cores_c
    in_ntiles_c = ceil_div(attrs.channels, cores_c * TILE)
    partial = per_core_c % TILE != 0 and per_core_c % TILE <= FACE
    max_rows = TILE // 2 if partial else TILE
    large = kernel_hw > max_rows
    avg = kind is PoolType.AVG
    max_tiles = 4 if avg and large else 8
    wide = in_ntiles_c > max_tiles
    in_cb = (max_tiles if wide else in_ntiles_c) * TILE * tilized_rows
    in_page = nbytes * round_up(in_cb, TILE_HW)
    one_scalar = one_scalar_per_core(kind, attrs)
    dram = attrs.config_tensors_in_dram
    cbs = [("in_scalar_0", BUFFERING, TILE_HW * nbytes, False)]
    if avg and not one_scalar:
        cbs.append(("in_scalar_1", BUFFERING, TILE_HW * nbytes, False))
    cbs.append(("clear_value", 1, TILE_HW * nbytes, False))
    if bound is not None:
        cbs.append(("raw_in", *bound.raw_in, True))
    if dram and bound is not None and attrs.reader_indices_cb is ReaderIndicesCb.ACTUAL:
        # tt-metal PR #43193 (2026-04-27; undone by #43305, restored by #44064, described
        # 2026-05-12): the DRAM tensor's own page; the auto shard's price keeps the worst case
        cbs.append(("reader_indices", 1, bound.reader_row, False))
    elif dram:
        cbs.append(("reader_indices", 1, out_shard[0] * CONFIG_BYTES_PER_ROW + CONFIG_EXTRA, False))
    elif bound is not None:
        # in L1_SMALL the factory passes the row's entry count, rounded up to 4, as the page
        cbs.append(("reader_indices", 1, round_up(bound.reader_row // ENTRY_BYTES, 4), True))
    cbs += [("in_0", BUFFERING, in_page, False), ("in_1", BUFFERING, in_page, False)]
    if attrs.output_layout is Layout.TILE:
        cbs.append(("pre_tilize", 1, in_ntiles_c * TILE_HW * nbytes, False))
    if bound is not None:
        cbs.append(("out", *bound.out, True))
    if not one_scalar and dram:
        cbs.append(("config", 1, out_shard[0] * CONFIG_BYTES_PER_ROW, False))
    elif not one_scalar and bound is not None:
        cbs.append(("config", 1, bound.scalar_config, True))
    return cbs


def avg_pool_scalar_bytes(attrs: Pool2dAttrs, per_core: int, cores_nhw: int) -> int:
    """A core's bytes of an average pool's scalar config, made when one scalar a core will
    not do (`one_scalar_per_core`): pool_multi_core_program_factory.cpp
    `create_scalar_config_tensor` and `get_bf16_avg_pool_config_scalars` (at 5cd3a453f15f
    and 002a3f412aeb alike).

    For each of the `cores_nhw` cores (height and block sharding's N x H x W cores, 1
    for width sharding) the walk takes `per_core` outputs (`max_out_nhw_per_core`, the
    output shard's rows) from its first, the column advancing and the row wrapping modulo
    the output height (a core past the last output walks on from row 0), and keeps one
    ScalarInfo (start, value, end) for each run of outputs of one pool area: the window's
    rows times columns within the input and its leading and trailing padding (with padding
    not counted, within the input only; none when empty), ceil mode's extra rows and
    columns never counted. Core k starts at output k x per_core, except that when that
    count reaches the image after the last (`output_stick_n == n_dim`) the C++ takes it
    back by the images and restarts the row and column at 0. Rows padded with zeros to the
    most ScalarInfos of a core, no even padding: 6 B a ScalarInfo. Worked example: avg
    2 x 2 / 2, padding 1 not counted, of 64 x 64, 18 outputs a core: areas 1 at the
    corners, 2 on the edges, 4 inside; core 1 walks row 0 columns 18 .. 32 and row 1
    columns 0 .. 2, areas 2 (x 14), 1, 2, 4, 4: 4 ScalarInfos, 24 B."""
    (oh, ow), (h, w), (kh, kw), (sh, sw) = attrs.output_hw, attrs.input_hw, attrs.kernel, attrs.stride

    def counted(outputs: int, size: int, k: int, s: int, pad: int) -> np.ndarray:
        start = np.arange(outputs, dtype=np.int64) * s - pad
        end = np.minimum(start + k, size + pad)
        if attrs.count_include_pad:
            return end - start
        return np.maximum(np.minimum(end, size) - np.maximum(start, 0), 0)

    area = np.outer(counted(oh, h, kh, sh, attrs.padding[0]), counted(ow, w, kw, sw, attrs.padding[1])).ravel()
    cycle = len(area)
    changes = np.concatenate(([0], np.cumsum(np.tile(area != np.roll(area, 1), 2))))
    most, linear, first = 0, 0, 0
    for _ in range(cores_nhw):
        full, rest = divmod(per_core - 1, cycle)
        at = (first + 1) % cycle
        most = max(most, 1 + full * int(changes[cycle]) + int(changes[at + rest] - changes[at]))
        linear += per_core
        first = linear % cycle
        if linear // cycle == attrs.batch:
            linear -= attrs.batch * cycle
            first = 0
    return SCALAR_ENTRY_BYTES * most


def _l1_usage(kind: PoolType, attrs: Pool2dAttrs, p: PoolParallel, in_dtype: DataType, out_dtype: DataType,
              target: OpTarget) -> int:
    """`calculate_L1_usage` on `get_memconfig`'s shard (the auto-shard choice's price):
    the circular buffers plus the output CB aligned (`sliding_window::align_buffer`)."""
    shard = (round_up(attrs.output_rows, p.cores_nhw * TILE) // p.cores_nhw,
             round_up(attrs.channels, p.cores_c * TILE) // p.cores_c)
    cbs = pool_cbs(kind, attrs, p.cores_c, shard, in_dtype)
    nbytes = (DataType.BFLOAT16 if in_dtype.block_float else in_dtype).element_bytes
    if attrs.output_layout is Layout.TILE:
        out = out_dtype.tile_bytes * shard[0] * shard[1] // TILE_HW
    else:
        out = min(FACE, shard[1]) * nbytes * shard[0] * ceil_div(attrs.channels, p.cores_c * FACE)
    return sum(pages * page for _, pages, page, _ in cbs) + round_up(out, target.dram_alignment)


def auto_shard(kind: PoolType, attrs: Pool2dAttrs, in_dtype: DataType, out_dtype: DataType,
               target: OpTarget) -> PoolParallel:
    """`determine_pool_config_for_auto_shard`: the layout of least L1 usage."""
    configs = [parallel_config(attrs, layout, target) for layout in
               (MemoryLayout.HEIGHT_SHARDED, MemoryLayout.WIDTH_SHARDED, MemoryLayout.BLOCK_SHARDED)]
    height, width, block = (_l1_usage(kind, attrs, p, in_dtype, out_dtype, target) for p in configs)
    if height > width:
        return configs[2] if width > block else configs[1]
    return configs[2] if height > block else configs[0]


def plan_pool2d(kind: OpKind, req: OpRequest, attrs: Pool2dAttrs) -> OpPlan:
    """ttnn.max_pool2d / ttnn.avg_pool2d (input: [1, 1, N*H*W, C] interleaved, row-major)."""
    op = kind.value
    pool = PoolType.MAX if kind is OpKind.MAX_POOL2D else PoolType.AVG
    (x,) = req.inputs
    target = req.target
    require(x.layout is Layout.ROW_MAJOR and not x.memory.layout.sharded, op,
            "an interleaved row-major input expected (tt-mlir's pool workaround); a sharded or TILE input is not "
            "modelled")
    rows_in = attrs.batch * attrs.input_hw[0] * attrs.input_hw[1]
    require(x.shape[-1] == attrs.channels and x.shape[-2] == rows_in, op,
            f"input {x.shape} is not [1, 1, {rows_in}, {attrs.channels}]")
    require(all(2 * p <= k for p, k in zip(attrs.padding, attrs.kernel)), op,
            f"padding {attrs.padding} over half the kernel {attrs.kernel} (validate_input_params)")
    out_dtype = req.out.dtype or DataType.BFLOAT16
    p = auto_shard(pool, attrs, x.dtype, out_dtype, target)
    halo_dtype = DataType.FLOAT32 if x.dtype is DataType.FLOAT32 else DataType.BFLOAT16
    c_in = round_up(attrs.channels, p.cores_c * INPUT_CHANNEL_ALIGNMENT)
    c_core = c_in // p.cores_c
    in_rows = round_up(rows_in, p.cores_nhw) // p.cores_nhw
    in_shard = ShardSpec(p.grid, (in_rows, c_core), ShardOrientation.ROW_MAJOR)
    sharded_in = TensorSpec((1, 1, rows_in, c_in), x.dtype, Layout.ROW_MAJOR,
                            MemoryConfig(BufferType.L1, p.layout, in_shard))
    stick = c_core * x.dtype.element_bytes
    i2s = [cbuf(0, "output", in_rows, round_up(stick, target.l1_alignment), p.grid, globally_allocated=True)]
    if x.memory.buffer_type is BufferType.DRAM and (c_in * x.dtype.element_bytes) % target.dram_alignment:
        i2s.append(cbuf(1, "scratch", 1, round_up(stick, target.dram_alignment), p.grid))
    programs = [Program("InterleavedToShardedProgramFactory", I2S_SOURCE, p.grid, tuple(i2s))]
    buffers: list[DeviceBuffer] = [tensor_buffer("pool_input_sharded", BufferRole.INTERMEDIATE, sharded_in,
                                                 target, (0, 1))]
    out_rows = attrs.output_shard_rows(p.cores_nhw)
    window = attrs.sliding_window(p.cores_nhw, p.layout)
    sticks = max_out_nsticks_per_core(window)
    halo_out = TensorSpec((1, 1, sticks * p.cores_nhw, c_in), halo_dtype, Layout.ROW_MAJOR,
                          MemoryConfig(BufferType.L1, p.layout, ShardSpec(p.grid, (sticks, c_core))))
    halo_stick = c_core * halo_dtype.element_bytes
    where = ConfigPlacement(p.grid, p.cores_nhw, in_dram=attrs.config_tensors_in_dram)
    configs, config_buffers = halo_configs(window, in_shard, x.dtype, where, 4, target, 1)
    programs.append(Program("UntilizeWithHaloProgramFactory", HALO_SOURCE, p.grid, (
        cbuf(0, "src", in_rows, halo_stick, p.grid, globally_allocated=True),
        cbuf(1, "out", sticks, halo_stick, p.grid, globally_allocated=True),
        cbuf(2, "pad0", 1, halo_stick, p.grid), cbuf(3, "pad1", 1, halo_stick, p.grid), *configs)))
    buffers.append(tensor_buffer("halo_output", BufferRole.INTERMEDIATE, halo_out, target, (1, 2)))
    buffers.extend(config_buffers)
    c_out = round_up(attrs.channels, p.cores_c * (TILE if attrs.output_layout is Layout.TILE else FACE))
    out_shard = (out_rows, c_out // p.cores_c)
    pool_out = TensorSpec((1, 1, attrs.output_rows, c_out), out_dtype, attrs.output_layout,
                          MemoryConfig(BufferType.L1, p.layout, ShardSpec(p.grid, out_shard)))
    reader_row = pool_reader_indices_bytes(window)
    one_scalar = one_scalar_per_core(pool, attrs)
    scalar_row = 0 if one_scalar else avg_pool_scalar_bytes(attrs, out_shard[0], p.cores_nhw)
    bound = BoundCbs((sticks, halo_stick), (out_shard[0], out_shard[1] * out_dtype.element_bytes), reader_row,
                     scalar_row)
    cbs = [cbuf(i, name, pages, page, p.grid, globally_allocated=bound_cb) for i, (name, pages, page, bound_cb)
           in enumerate(pool_cbs(pool, attrs, p.cores_c, out_shard, halo_dtype, bound))]
    pool_index = len(programs)
    programs.append(Program("Pool2D::MultiCore", POOL_SOURCE, p.grid, tuple(cbs)))
    # the factory makes its config tensors after the output; the cached program holds them
    program = f"pool2d {pool.value} {attrs!r} {p!r} {x.dtype.value} {out_dtype.value}"
    own = [where.buffer(name, row, target, (pool_index, pool_index), program)
           for name, row in (("pool_reader_indices", reader_row), ("pool_scalar_config", scalar_row)) if row]
    out = pool_out
    if not req.out.sharded:
        out = TensorSpec((1, 1, attrs.output_rows, attrs.channels), out_dtype, attrs.output_layout, req.out.memory())
        programs.append(Program("ShardedToInterleavedProgramFactory", S2I_SOURCE, p.grid,
                                (cbuf(0, "input", out_shard[0], out_shard[1] * out_dtype.element_bytes, p.grid,
                                      globally_allocated=True),)))
        buffers.append(tensor_buffer("pool_output_sharded", BufferRole.INTERMEDIATE, pool_out, target, (2, 3)))
        buffers.extend(own)
    last = len(programs) - 1
    buffers.append(tensor_buffer("output0", BufferRole.OUTPUT, out, target, (last, last)))
    if req.out.sharded:
        buffers.extend(own)
    return OpPlan(op, tuple(programs), (out,), tuple(buffers))
