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
  asserts equal to the buffers it creates: the reduce scalar (2 tiles; a second one for
  an average pool with more than one scalar a core), the clear value (1 tile), the two
  readers' input blocks (2 pages each of the kernel rows' tiles padded to 1,024
  elements, at most 8 tiles of channels, 4 for a large average kernel), a pre-tilize CB
  for a TILE output, and, with the config tensors in DRAM (`config_tensors_in_dram`, which
  tt-mlir sets since tt-mlir #6919, 2026-02), their L1 staging: 6 B a output row plus 2
  (and 6 B a row more for the average pool's scalar config). The sharded halo output
  (raw input), the reader indices and the output are bound to their buffers.

Ceil mode (sliding_window.cpp `get_output_shape`, `get_ceil_pad_h` / `get_ceil_pad_w`):
the output size by ceil, a last window starting in the padding dropped, and the input
padded at the bottom and right by stride x (out - 1) + kernel - input - 2 x padding,
which the halo reads as padding; an average pool so padded, like one with padding not
counted, has a scalar per output row, not one per core (pool_utils.cpp
`is_pool_op_one_scalar_per_core`): a second scalar CB and the scalars' config rows.

The halo's config tensors in DRAM and its four CBs for them (tt_conv_config.py, their sizes
tt_sliding_window.py). Not modelled (the rule refuses them by name): config tensors in
L1_SMALL (`config_tensors_in_dram` false: the size of the pool's own reader-indices
tensor, `generate_sliding_window_op_config` for a pool, is not ported; nor are its DRAM
copy's few bytes a core with them in DRAM), a sharded or TILE input (the halo's untilize path), `return_indices`,
dilation, and the DRAM slicing the 2026 op adds for
inputs that do not fit L1 (tileplan plans the L1-resident pool, as for conv2d).

Worked example: max pool 2 x 2 / 2 of a [1, 1, 480 x 640, 32] bf16 input on an 8 x 8
grid: 76,800 output rows height sharded over 64 cores (1,200 a core), the input 4,800
rows a core; pool CBs scalar 4,096 + clear 2,048 + two readers 2 x 2 x 2,048 + config
staging 1,200 x 6 + 2 = 21,506 B.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

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
from tileplan.targets.tenstorrent.ops.tt_sliding_window import SlidingWindow, max_out_nsticks_per_core
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up

POOL_SOURCE = "ttnn/cpp/ttnn/operations/pool/generic/device/pool_multi_core_program_factory.cpp"
#: tt constants: FACE_WIDTH, TILE_HW
FACE, TILE_HW = 16, TILE * TILE
#: get_factory_parameters: `multi_buffering_factor`
BUFFERING = 2
#: calculate_L1_usage: bytes of L1 staging a output row for config tensors in DRAM
CONFIG_BYTES_PER_ROW, CONFIG_EXTRA = 6, 2
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
        window, stride, padding and ceil mode, no dilation, the shards not snapped to
        tiles), for the sizes of its config tensors (tt_sliding_window.py)."""
        (ph, pw) = self.padding
        return SlidingWindow(self.batch, self.input_hw, self.kernel, self.stride, (ph, ph, pw, pw), (1, 1),
                             cores_nhw, layout, snap_to_tile=False, ceil_mode=self.ceil_mode)

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


def pool_cbs(kind: PoolType, attrs: Pool2dAttrs, cores_c: int, out_shard: tuple[int, int],
             in_dtype: DataType) -> list[tuple[str, int, int]]:
    """The pool program's own circular buffers (name, pages, page bytes) in creation
    order, `calculate_L1_usage` and `get_factory_parameters` (module docstring)."""
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
    (ph, pw), (ch, cw) = attrs.padding, attrs.ceil_pads
    # pool_utils.cpp `is_pool_op_one_scalar_per_core` (no divisor override from tt-mlir)
    one_scalar = not avg or ((not attrs.ceil_mode or (ch == 0 and cw == 0))
                             and (attrs.count_include_pad or (ph == 0 and pw == 0)))
    cbs = [("in_scalar_0", BUFFERING, TILE_HW * nbytes)]
    if avg and not one_scalar:
        cbs.append(("in_scalar_1", BUFFERING, TILE_HW * nbytes))
    cbs += [("clear_value", 1, TILE_HW * nbytes), ("in_0", BUFFERING, in_page), ("in_1", BUFFERING, in_page)]
    if attrs.output_layout is Layout.TILE:
        cbs.append(("pre_tilize", 1, in_ntiles_c * TILE_HW * nbytes))
    if attrs.config_tensors_in_dram:
        staging = out_shard[0] * CONFIG_BYTES_PER_ROW + CONFIG_EXTRA
        if not one_scalar:
            staging += out_shard[0] * CONFIG_BYTES_PER_ROW
        cbs.append(("config_tensors", 1, staging))
    return cbs


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
    return sum(pages * page for _, pages, page in cbs) + round_up(out, target.dram_alignment)


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
    require(attrs.config_tensors_in_dram, op, "config tensors in L1_SMALL are not modelled (the size of the "
            "pool's own reader-indices tensor is not ported); tt-mlir sets config_tensors_in_dram")
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
    out_rows = round_up(attrs.output_rows, p.cores_nhw) // p.cores_nhw
    window = attrs.sliding_window(p.cores_nhw, p.layout)
    sticks = max_out_nsticks_per_core(window)
    halo_out = TensorSpec((1, 1, sticks * p.cores_nhw, c_in), halo_dtype, Layout.ROW_MAJOR,
                          MemoryConfig(BufferType.L1, p.layout, ShardSpec(p.grid, (sticks, c_core))))
    halo_stick = c_core * halo_dtype.element_bytes
    configs, config_buffers = halo_configs(window, in_shard, x.dtype,
                                           ConfigPlacement(p.grid, p.cores_nhw, in_dram=True), 4, target, 1)
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
    cbs = [cbuf(i, name, pages, page, p.grid)
           for i, (name, pages, page) in enumerate(pool_cbs(pool, attrs, p.cores_c, out_shard, halo_dtype))]
    n = len(cbs)
    cbs += [cbuf(n, "raw_in", sticks, halo_stick, p.grid, globally_allocated=True),
            cbuf(n + 1, "out", out_shard[0], out_shard[1] * out_dtype.element_bytes, p.grid,
                 globally_allocated=True)]
    programs.append(Program("Pool2D::MultiCore", POOL_SOURCE, p.grid, tuple(cbs)))
    out = pool_out
    if not req.out.sharded:
        out = TensorSpec((1, 1, attrs.output_rows, attrs.channels), out_dtype, attrs.output_layout, req.out.memory())
        programs.append(Program("ShardedToInterleavedProgramFactory", S2I_SOURCE, p.grid,
                                (cbuf(0, "input", out_shard[0], out_shard[1] * out_dtype.element_bytes, p.grid,
                                      globally_allocated=True),)))
        buffers.append(tensor_buffer("pool_output_sharded", BufferRole.INTERMEDIATE, pool_out, target, (2, 3)))
    last = len(programs) - 1
    buffers.append(tensor_buffer("output0", BufferRole.OUTPUT, out, target, (last, last)))
    return OpPlan(op, tuple(programs), (out,), tuple(buffers))
