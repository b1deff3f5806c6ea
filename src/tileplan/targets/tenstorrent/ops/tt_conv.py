"""conv2d as ttnn runs it: (interleaved-to-sharded) -> halo -> conv -> (sharded-to-
interleaved), each a program of its own.

Sources (tt-metal, read at the 2025 versions near the tt-mlir pin):
- the shard grid: conv2d_utils.cpp `determine_parallel_config` (height sharding: the
  output's N*H*W tiles over `find_closest_largest_divisor_with_num_padding_and_mult`
  cores; block sharding: that along the grid's rows, the output channel tiles over its
  columns; width sharding: the input channel tiles over the grid) and
  `determine_per_core_conv_block_config` (act_block_h = the per-core output height, or the
  override's largest divisor of it; act_block_w = C x kernel_w rounded to a tile for
  height sharding, C / cores_c x kernel_w for block sharding, C x kh x kw / (cores_c x
  act_block_w_div) for width sharding).
- the input channels a stick holds: conv2d_utils.cpp `get_input_channels_alignment` (8
  for a row-major input not sharded, the shard width's 32 / 16 / 8 for a sharded one, 32
  for width sharding), padded to the channel cores (`determine_input_memory_config`,
  which also pads the input's N*H*W rows to a whole tile a core, a row a core for a
  width-sharded row-major input).
- the conv CBs: conv2d_op_program_factory_common.cpp `get_cb_info` (ported CB by CB: the
  weights, partials, activation with the split reader's two halves
  (`is_split_reader_viable`'s transfer-cost comparison, ported with its NOC rate tables),
  tilized activation, bias, row-major activation, output, reader indices, the 64-B L1
  scratch and the sharded activation), `determine_packer_l1_acc` for the partials' format.
- the halo: sliding_window/halo/device/untilize_with_halo_program_factory.cpp (row-major
  input: the input and output CBs bound to their shards, a one-stick padding CB per
  reader; the output shard holds `max_out_nsticks_per_core` sticks: over the cores, the
  longest run of padded-input sticks one core's outputs read, tt_sliding_window.py).
- interleaved_to_sharded_program_factory.cpp: the output CB bound to the shard, a
  one-page scratch CB when a DRAM row is not DRAM-aligned.
conv3d: tt_conv3d.py.
Not modelled (the rule refuses them by name): 1x1 stride-1 convs (tt-metal runs them as a
matmul), 1-D depthwise convs, activation reuse, TILE inputs (the halo's untilize path),
and the automatic choice of a shard layout (this rule takes one: tt_conv_dram.py
`auto_shard_layout` makes tt-metal's choice).
The sliding-window config tensors (the halo's padding and gather configs, the conv's
reader indices) in L1_SMALL or DRAM, their CBs and tt-metal's check of the reader
indices' page: tt_conv_config.py, their sizes tt_sliding_window.py.

Worked example (H3, p150b 11 x 10): 1 x 128 x 128 x 32 bf16, 64 3x3 filters, padding 1,
height sharded: 512 output tiles over 103 cores, 5 x 2 tiles a core; act block 5 x 3
tiles split 3 + 2 rows; CBs weights 6, act 9 + 6, tilized 15, bias 2 tiles and the 64-B
scratch: 77,888 B; the output 10 tiles = 20,480 B a core; the halo 424 sticks x 64 B; in
L1_SMALL the halo's configs 12, 12, 40, 40 B a core and the reader indices 20 B.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
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
    L1_ARRAY_BYTES,
    BufferRole,
    CircularBuffer,
    ComputeConfig,
    DeviceBuffer,
    MathFidelity,
    OpPlan,
    OpRequest,
    OpTarget,
    OutputRequest,
    Program,
    cbuf,
    ceil_div,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_config import ConfigPlacement, halo_configs, reader_indices
from tileplan.targets.tenstorrent.ops.tt_conv_reader import split_reader_viable
from tileplan.targets.tenstorrent.ops.tt_sharding import plan_to_memory_config
from tileplan.targets.tenstorrent.ops.tt_sliding_window import SlidingWindow, max_out_nsticks_per_core
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up

CONV_DIR = "ttnn/cpp/ttnn/operations/conv/conv2d/"
HALO_SOURCE = "ttnn/cpp/ttnn/operations/sliding_window/halo/device/untilize_with_halo_program_factory.cpp"
I2S_SOURCE = "ttnn/cpp/ttnn/operations/data_movement/sharded/device/interleaved_to_sharded_program_factory.cpp"
S2I_SOURCE = "ttnn/cpp/ttnn/operations/data_movement/sharded/device/sharded_to_interleaved_program_factory.cpp"
MOVE_SOURCE = "ttnn/cpp/ttnn/operations/data_movement/move/device/move_sharded_program_factory.cpp"
#: conv2d's default compute config (`init_device_compute_kernel_config(..., HiFi4, true, false, false)`)
CONV_DEFAULT_COMPUTE = ComputeConfig(MathFidelity.HIFI4, True, False, False)


@dataclass(frozen=True, slots=True)
class Conv2dConfig:
    """ttnn `Conv2dConfig`: the fields that change buffers."""

    shard_layout: MemoryLayout | None = None
    weights_dtype: DataType | None = None
    act_block_h_override: int = 0
    act_block_w_div: int = 1
    enable_act_double_buffer: bool = False
    enable_weights_double_buffer: bool = False
    force_split_reader: bool | None = None
    output_layout: Layout = Layout.TILE
    config_tensors_in_dram: bool = False
    transpose_shards: bool = False
    enable_channels_padding: bool = True
    #: move the halo output after the op's own sharded input is freed (conv2d.cpp
    #: `conv2d_L1`: `ttnn::move(halo_output)`); tt-metal's default true since PR #16185
    reallocate_halo_output: bool = True
    #: free the input after the halo (conv_transpose2d keeps its own sharded copy to the
    #: end without it; conv2d drops its copy whatever this says); tt-metal's default false
    deallocate_activation: bool = False


class SliceType(Enum):
    """ttnn `Conv2dSliceConfig::SliceType` (op_slicing `Op2DSliceConfig`)."""

    DRAM_HEIGHT = "dram_height"
    DRAM_WIDTH = "dram_width"
    L1_FULL = "l1_full"


@dataclass(frozen=True, slots=True)
class Conv2dAttrs:
    """ttnn.conv2d arguments (the input is [N, H, W, C] or flattened [1, 1, N*H*W, C])."""

    in_channels: int
    out_channels: int
    batch: int
    input_hw: tuple[int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = False
    config: Conv2dConfig = Conv2dConfig()
    #: (bottom, right) padding when it differs from (top, left) = `padding` (a DRAM
    #: slice's conv, conv2d.cpp `Conv2dSliceAttr::get_input_slice_and_padding`)
    padding_end: tuple[int, int] | None = None
    #: ttnn.conv2d's `slice_config` (None: unset, so a DRAM input takes the DRAM path,
    #: conv2d_utils.cpp `determine_conv2d_execution_path`; tt_conv_dram.py)
    slice_type: SliceType | None = SliceType.L1_FULL

    @property
    def pads(self) -> tuple[int, int, int, int]:
        return padding_n4(self.padding, self.padding_end)

    @property
    def output_hw(self) -> tuple[int, int]:
        (h, w), (kh, kw), (sh, sw), (dh, dw) = self.input_hw, self.kernel, self.stride, self.dilation
        pt, pb, pl, pr = self.pads
        return (h + pt + pb - dh * (kh - 1) - 1) // sh + 1, (w + pl + pr - dw * (kw - 1) - 1) // sw + 1


def is_1d_depthwise(attrs: Conv2dAttrs) -> bool:
    """conv2d_utils.cpp `is_1d_deptwise_conv`: groups equal to both channel counts, a
    kernel and an image one wide (`is_1d_conv`), no bias. tt-metal gives it its own
    depthwise kernels and circular buffers (the weights' CB by `act_block_h_ntiles`),
    which this rule does not model; any other grouped conv takes the regular path."""
    depthwise = attrs.groups == attrs.in_channels == attrs.out_channels
    return depthwise and attrs.kernel[1] == 1 and attrs.input_hw[1] == 1 and not attrs.bias


def padding_n4(padding: tuple[int, int], padding_end: tuple[int, int] | None) -> tuple[int, int, int, int]:
    """(top, bottom, left, right), tt-metal's `padding_n4`, from a convolution's (top,
    left) `padding` and its (bottom, right) `padding_end` where that differs."""
    bottom, right = padding_end if padding_end is not None else padding
    return padding[0], bottom, padding[1], right


def divisor_with_padding(num: int, start: int, mult: int = 1) -> int:
    """conv2d_utils `find_closest_largest_divisor_with_num_padding_and_mult`: from
    `start` down, the first core count whose padding of `num` (to a multiple of cores x
    mult) is less than one core's share."""
    d = start
    padded = round_up(num, d * mult)
    while padded - num >= padded // d and d > 1:
        d -= 1
        padded = round_up(num, d * mult)
    return d


def _divisor_pair_with_padding(num1: int, num2: int, start: int) -> int:
    """`find_closest_largest_divisor_with_num_padding(num1, num2, start)`: the same for
    two counts at once (output and input channel tiles)."""
    d = start
    while d > 1:
        p1, p2 = round_up(num1, d), round_up(num2, d)
        if p1 - num1 < p1 // d and p2 - num2 < p2 // d:
            break
        d -= 1
    return d


def _largest_common_divisor(num1: int, num2: int, start: int) -> int:
    return next((d for d in range(min(start, num1, num2), 0, -1) if num1 % d == 0 and num2 % d == 0), 1)


@dataclass(frozen=True, slots=True)
class ConvParallel:
    """The conv's shard grid (its input's: `cores_nhw` x `cores_c`), its output's grid
    and channel cores, and the per-core output block (tiles). Height and block sharding
    write the output on the input's grid; width sharding on its own
    (`determine_output_parallel_config`)."""

    layout: MemoryLayout
    cores_nhw: int
    cores_c: int
    grid: CoreRange | CoreRangeSet
    per_core_h: int
    per_core_w: int
    out_grid: CoreRange | CoreRangeSet
    out_cores_c: int

    @property
    def program_grid(self) -> CoreRange | CoreRangeSet:
        """The cores the conv program's circular buffers take: the input's grid, or, for
        width sharding, the bounding box of the larger of the input's and the output's
        grids (conv2d_op_width_sharded_program_factory.cpp `multi_core_conv2d_width_
        sharded`: `all_cores` is the output's grid unless the input has more cores,
        `allocate_cbs(..., all_reader_cores = all_cores.bounding_box())`)."""
        if self.layout is not MemoryLayout.WIDTH_SHARDED:
            return self.grid
        larger = self.grid if self.grid.cores > self.out_grid.cores else self.out_grid
        return larger.bounding_box()


def parallel_config(attrs: Conv2dAttrs, layout: MemoryLayout, target: OpTarget) -> ConvParallel:
    """`determine_parallel_config`: the conv's own grid for `layout` (height sharding the
    output's N*H*W tiles over the grid's cores, block sharding them over its rows and
    the channel tiles over its columns, width sharding the input channel tiles over its
    cores), then `parallel_on`."""
    gx, gy = target.grid
    oh, ow = attrs.output_hw
    nhw_t = ceil_div(attrs.batch * oh * ow, TILE)
    out_c_t, in_c_t = ceil_div(attrs.out_channels, TILE), ceil_div(attrs.in_channels, TILE)
    override_t = max(attrs.config.act_block_h_override // TILE, 1)
    grid: CoreRange | CoreRangeSet
    if layout is MemoryLayout.HEIGHT_SHARDED:
        cores_nhw, cores_c = divisor_with_padding(nhw_t, gx * gy, override_t), 1
        grid = CoreRangeSet.from_count(cores_nhw, gx, gy, row_wise=True)
    elif layout is MemoryLayout.BLOCK_SHARDED:
        col = attrs.config.transpose_shards
        cores_nhw = divisor_with_padding(nhw_t, gx if col else gy, override_t)
        start_c = gy if col else gx
        cores_c = (_divisor_pair_with_padding(out_c_t, in_c_t, start_c) if attrs.config.enable_channels_padding
                   else _largest_common_divisor(out_c_t, in_c_t, start_c))
        grid = CoreRange((0, 0), (cores_nhw - 1, cores_c - 1) if col else (cores_c - 1, cores_nhw - 1))
    else:
        require(layout is MemoryLayout.WIDTH_SHARDED, "ttnn.conv2d",
                f"shard layout {layout.value} is not a conv layout")
        cores_nhw, cores_c = 1, divisor_with_padding(in_c_t, gx * gy)
        grid = CoreRangeSet.from_count(cores_c, gx, gy, row_wise=True)
    return parallel_on(attrs, layout, grid, cores_nhw, cores_c, target)


def parallel_on(attrs: Conv2dAttrs, layout: MemoryLayout, grid: CoreRange | CoreRangeSet, cores_nhw: int,
                cores_c: int, target: OpTarget) -> ConvParallel:
    """The conv on an input `grid` of `cores_nhw` x `cores_c`: `determine_output_parallel_
    config` and the per-core block of the output (`determine_conv_op_parallel_config_from_
    conv_output_mem_config`: the output shard's tiles). Height and block sharding write
    the output on the input's grid; a width-sharded output takes
    `find_closest_largest_divisor_with_num_padding(out_channels_ntiles, max_num_cores)`
    cores of its own, row-wise over the device grid (conv2d_utils.cpp, every version
    read), its width a core the output's channel tiles over those."""
    gx, gy = target.grid
    oh, ow = attrs.output_hw
    nhw_t = ceil_div(attrs.batch * oh * ow, TILE)
    out_c_t = ceil_div(attrs.out_channels, TILE)
    if layout is MemoryLayout.WIDTH_SHARDED:
        out_c = divisor_with_padding(out_c_t, gx * gy)
        return ConvParallel(layout, cores_nhw, cores_c, grid, nhw_t, ceil_div(out_c_t, out_c),
                            CoreRangeSet.from_count(out_c, gx, gy, row_wise=True), out_c)
    return ConvParallel(layout, cores_nhw, cores_c, grid, ceil_div(nhw_t, cores_nhw), ceil_div(out_c_t, cores_c),
                        grid, cores_c)


def input_channels_alignment(layout: MemoryLayout, x: TensorSpec, target: OpTarget) -> int:
    """conv2d_utils.cpp `get_input_channels_alignment` (a conv that is not a matmul): for
    a height- or block-sharded conv of a row-major input, the input's shard width's
    largest of 32, 16, 8 dividing it (32 when none does), or, for an input not sharded
    (a DRAM or L1 interleaved one, and a DRAM slice's), half the L1 alignment (8: the
    halo moves 16-B sticks); otherwise a tile's 32."""
    if layout is MemoryLayout.WIDTH_SHARDED or x.layout is not Layout.ROW_MAJOR:
        return TILE
    if x.memory.shard is None:
        return target.l1_alignment // 2
    width = x.memory.shard.shape[1]
    return next((a for a in (TILE, 16, 8) if width % a == 0), TILE)


def padded_in_channels(attrs: Conv2dAttrs, p: ConvParallel, align: int) -> int:
    """The input channels the conv reads a stick of: aligned (`input_channels_alignment`),
    and (block / width sharded) a multiple of the channel cores."""
    if p.layout is MemoryLayout.HEIGHT_SHARDED:
        return round_up(attrs.in_channels, align)
    return round_up(attrs.in_channels, p.cores_c * align)


def block_config(attrs: Conv2dAttrs, p: ConvParallel, c_pad: int) -> tuple[int, int]:
    """`determine_per_core_conv_block_config`: (act_block_h, act_block_w) in tiles."""
    kh, kw = attrs.kernel
    h = p.per_core_h
    override_t = attrs.config.act_block_h_override // TILE
    if override_t > 0:
        h = next(d for d in range(min(override_t, p.per_core_h), 0, -1) if p.per_core_h % d == 0)
    if p.layout is MemoryLayout.HEIGHT_SHARDED:
        w = round_up(c_pad * kw, TILE) // TILE
    elif p.layout is MemoryLayout.BLOCK_SHARDED:
        w = round_up(c_pad // p.cores_c * kw, TILE) // TILE
    else:
        w = max((c_pad * kh * kw) // (p.cores_c * attrs.config.act_block_w_div) // TILE, 1)
    return h, w


def uses_split_reader(attrs: Conv2dAttrs, p: ConvParallel, blocks: tuple[int, int], c_pad: int,
                      in_dtype: DataType, out_dtype: DataType, compute: ComputeConfig, target: OpTarget,
                      weights_dtype: DataType) -> bool:
    """`get_cb_info`'s `split_reader_enabled`: height sharding with an act block over one
    tile, `force_split_reader` or else `is_split_reader_viable` (tt_conv_reader.py)."""
    cfg = attrs.config
    act_h, act_w = blocks
    if p.layout is not MemoryLayout.HEIGHT_SHARDED or act_h < 2:
        return False
    if cfg.force_split_reader is not None:
        return cfg.force_split_reader
    return split_reader_viable(target.arch, act_h, c_pad, attrs.kernel[1], in_dtype, p.per_core_w * act_w,
                               weights_dtype.tile_bytes, attrs.dilation[1], act_w, compute.fp32_dest_acc_en,
                               out_dtype, target.l1_alignment)


def conv_cbs(attrs: Conv2dAttrs, p: ConvParallel, blocks: tuple[int, int], weights_height: int,
             in_dtype: DataType, out_dtype: DataType, compute: ComputeConfig, act_shard: tuple[int, int],
             split: bool, reader_page: int, weights_dtype: DataType) -> list[CircularBuffer]:
    """`get_cb_info` for a 2-D conv (in its order; CBs of zero pages are not created);
    `weights_dtype`: the prepared weights' type (conv2d.cpp: Conv2dConfig.weights_dtype,
    else the weight tensor's own); `split`: `uses_split_reader`; `reader_page`: the
    READER_INDICES CB's page (tt_conv_config.py `reader_indices`: the config tensor's row
    in L1_SMALL; `get_cb_info`'s 2 B an output row with the tensors in DRAM)."""
    cfg, grid = attrs.config, p.program_grid
    act_h, act_w = blocks
    conv_in = DataType.FLOAT32 if in_dtype is DataType.FLOAT32 else DataType.BFLOAT16
    hs = p.layout is MemoryLayout.HEIGHT_SHARDED
    blocks_h = p.per_core_h // act_h
    act_tiles = (act_h - act_h // 2) * act_w if split else act_h * act_w
    act_split = (act_h // 2) * act_w if split else 0
    weights = p.per_core_w * act_w
    if hs and blocks_h > 1:
        weights *= attrs.kernel[0]
    elif cfg.enable_weights_double_buffer:
        weights *= 2
    blocks_w = (weights_height // TILE) // act_w
    in0_blocks_w = blocks_w * ((ceil_div(attrs.out_channels, TILE) // p.per_core_w) if p.layout is
                               MemoryLayout.BLOCK_SHARDED else 1)
    packer = compute.packer_l1_acc and ((attrs.bias and in0_blocks_w > 1) or in0_blocks_w > 2)
    partial = (DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16) if packer else out_dtype
    out_tiles = p.per_core_h * p.per_core_w
    untilize_out = cfg.output_layout is Layout.ROW_MAJOR
    if cfg.enable_act_double_buffer:
        act_tiles, act_split = act_tiles * 2, act_split * 2
    act_tile = conv_in.tile_bytes if hs else out_dtype.tile_bytes
    row_major = act_w * 2 if p.layout is MemoryLayout.WIDTH_SHARDED else 0
    if p.layout is MemoryLayout.BLOCK_SHARDED and conv_in is not out_dtype:
        row_major = act_tiles
    specs = [(0, "weights", weights, weights_dtype.tile_bytes, False),
             (1, "matmul_partials", out_tiles, partial.tile_bytes, not untilize_out and partial is out_dtype),
             (2, "act", act_tiles, act_tile, False), (3, "act_second_reader", act_split, act_tile, False),
             (4, "act_tilized", act_h * act_w, out_dtype.tile_bytes, False),
             (5, "bias", p.per_core_w if attrs.bias else 0, weights_dtype.tile_bytes, False),
             (6, "act_row_major", row_major, conv_in.tile_bytes, False),
             (7, "out", out_tiles, out_dtype.tile_bytes, True),
             (8, "reader_indices", 1, reader_page, not cfg.config_tensors_in_dram),
             (9, "l1_array", 1, L1_ARRAY_BYTES, False),
             (10, "act_sharded", act_shard[0], act_shard[1] * conv_in.element_bytes, True)]
    out: list[CircularBuffer] = []
    for _, name, pages, page, bound in specs:
        if pages > 0:
            out.append(cbuf(len(out), name, pages, page, grid, globally_allocated=bound))
    return out


def conv_window(attrs: Conv2dAttrs, p: ConvParallel) -> SlidingWindow:
    """The conv's `SlidingWindowConfig` (conv2d.cpp `conv2d_L1`: the image, kernel,
    stride, four paddings and dilation, the N x H x W cores, outputs snapped to tiles)."""
    return SlidingWindow(attrs.batch, attrs.input_hw, attrs.kernel, attrs.stride, attrs.pads, attrs.dilation,
                         p.cores_nhw, p.layout)


def config_placement(attrs: Conv2dAttrs, p: ConvParallel) -> ConfigPlacement:
    """Where the conv's and its halo's config tensors go (tt_conv_config.py): L1_SMALL on
    the conv's input grid, or DRAM with `config_tensors_in_dram`."""
    return ConfigPlacement(p.grid, p.cores_nhw, attrs.config.config_tensors_in_dram)


def bypasses_halo(attrs: Conv2dAttrs, layout: MemoryLayout | None) -> bool:
    """conv2d.cpp `conv2d_L1`: `bypass_halo = (shard_scheme == WIDTH_SHARDED && pad_h == 0
    && pad_w == 0)` (every version read, 2024 to 2026): a width-sharded conv without
    padding reads its sharded input directly, with no halo (each core holds every row of
    its channels). conv_transpose2d's halo always runs (conv_transpose2d.cpp)."""
    return layout is MemoryLayout.WIDTH_SHARDED and attrs.pads == (0, 0, 0, 0)


def input_parallel(attrs: Conv2dAttrs, x: TensorSpec, target: OpTarget) -> ConvParallel | None:
    """conv2d_utils.cpp `get_conv_padded_input_shape_and_mem_config` (every version
    read): a sharded input keeps its own grid, layout and orientation (the conv's
    `shard_layout` then unused) unless it needs a reshard: not block sharded yet not
    ROW_MAJOR, or its shard width not a multiple of the input channels' alignment
    (`get_input_channels_alignment` of its own layout); `reshard_if_not_optimal` and
    `override_sharding_config` (both off by default) are not modelled. The output's grid
    follows as `determine_output_parallel_config` makes it (`parallel_config`). None: no
    such input (interleaved, or resharded to the conv's own config)."""
    shard = x.memory.shard
    layout = x.memory.layout
    if shard is None or x.memory.buffer_type is not BufferType.L1:
        return None
    if layout is not MemoryLayout.BLOCK_SHARDED and shard.orientation is not ShardOrientation.ROW_MAJOR:
        return None
    if shard.shape[1] % input_channels_alignment(layout, x, target):
        return None
    box = shard.bounding_box()
    if layout is MemoryLayout.HEIGHT_SHARDED:
        cores_nhw, cores_c = shard.grid.cores, 1
    elif layout is MemoryLayout.BLOCK_SHARDED:
        col = shard.orientation is ShardOrientation.COL_MAJOR
        cores_nhw, cores_c = (box.width, box.height) if col else (box.height, box.width)
    else:
        cores_nhw, cores_c = 1, shard.grid.cores
    return parallel_on(attrs, layout, shard.grid, cores_nhw, cores_c, target)


def plan_conv2d(kind: OpKind, req: OpRequest, attrs: Conv2dAttrs) -> OpPlan:
    """ttnn.conv2d (inputs: the activation and the weights)."""
    kh, kw = attrs.kernel
    require((kh, kw) != (1, 1) or attrs.stride != (1, 1) or attrs.pads != (0, 0, 0, 0), kind.value,
            "a 1x1 stride-1 unpadded conv runs as a matmul: plan it with tt_matmul")
    return plan_sliding_conv(kind.value, req, attrs, attrs.batch * attrs.input_hw[0] * attrs.input_hw[1],
                             move_halo=attrs.config.reallocate_halo_output, bypass_halo=True)


#: the sliding window a halo runs, given the conv's parallel config
HaloWindow = Callable[[ConvParallel], SlidingWindow]


def plan_sliding_conv(op: str, req: OpRequest, attrs: Conv2dAttrs, input_rows: int,
                      move_halo: bool = False, keep_input: bool = False, bypass_halo: bool = False,
                      halo_window: HaloWindow | None = None) -> OpPlan:
    """The programs of a conv2d whose halo reads `input_rows` sticks of input: conv2d's
    own (its input, N x H x W sticks) and conv_transpose2d's (tt_conv_transpose.py: its
    stride-1 unpadded conv over the zero-interleaved, padded input the halo builds from
    the N x H x W sticks of the input it was given).

    `move_halo` (conv2d.cpp `conv2d_L1` with `reallocate_halo_output`): after the halo,
    with the op's own sharded input freed, `ttnn::move` of the halo output, which frees
    the buffer first and allocates it anew, top-down, so it rises into the input's space
    (data_movement/move/move.cpp; `MoveShardedProgramFactory` copies it, both its CBs
    bound to the buffers; it dispatches nothing when the address does not change).
    `keep_input`: the op's own sharded input stays to the end (conv_transpose2d.cpp
    `conv_transpose2d_L1` without `deallocate_activation`: `input_tensor_post_tm` is held
    through the conv and the output's move to its memory config).
    `bypass_halo`: conv2d's L1 path, which skips the halo when `bypasses_halo` (the
    conv's sharded-activation CB then bound to its sharded input, which stays in scope to
    the end as the halo output would); conv_transpose2d's halo always runs.
    A sharded input keeps its grid when tt-metal keeps it (`input_parallel`), else it is
    sharded (interleaved) or resharded (`ttnn.to_memory_config`) to the conv's own.
    `halo_window`: the halo's sliding window when it is not the conv's own
    (`conv_window`): conv_transpose2d's transposed window over its own input."""
    x, w = req.inputs[0], req.inputs[1]
    cfg, target = attrs.config, req.target
    kh, kw = attrs.kernel
    require(cfg.shard_layout is not None, op, "the automatic shard layout choice is not modelled; set "
            "Conv2dConfig.shard_layout")
    assert cfg.shard_layout is not None
    require(not is_1d_depthwise(attrs), op, "1-D depthwise convs are not modelled")
    require(x.layout is Layout.ROW_MAJOR, op, "a TILE conv input (the halo's untilize path) is not modelled")
    compute = req.compute or CONV_DEFAULT_COMPUTE
    out_dtype = req.out.dtype or x.dtype
    own_grid = input_parallel(attrs, x, target)
    p = own_grid if own_grid is not None else parallel_config(attrs, cfg.shard_layout, target)
    c_pad = padded_in_channels(attrs, p, input_channels_alignment(p.layout, x, target))
    blocks = block_config(attrs, p, c_pad)
    # height sharded: one act block per kernel row, the weights padded alike
    weights_height = (kh * blocks[1] * TILE if p.layout is MemoryLayout.HEIGHT_SHARDED
                      else round_up(c_pad * kh * kw, TILE))
    conv_in = DataType.FLOAT32 if x.dtype is DataType.FLOAT32 else DataType.BFLOAT16
    orientation = ShardOrientation.COL_MAJOR if cfg.transpose_shards else ShardOrientation.ROW_MAJOR
    if own_grid is not None and x.memory.shard is not None:
        orientation = x.memory.shard.orientation
    c_core = c_pad // p.cores_c
    # conv2d_utils.cpp determine_input_memory_config: the input's rows padded to a whole
    # tile a core (a row a core for a width-sharded row-major input), its shards that
    # height over the N*H*W cores
    unit = 1 if p.layout is MemoryLayout.WIDTH_SHARDED else TILE
    nhw_in = round_up(input_rows, p.cores_nhw * unit)
    in_shard = ShardSpec(p.grid, (nhw_in // p.cores_nhw, c_core), orientation)
    if own_grid is not None and x.memory.shard is not None:
        in_shard = x.memory.shard
    conv_input = TensorSpec((1, 1, nhw_in, c_pad), conv_in, Layout.ROW_MAJOR,
                            MemoryConfig(BufferType.L1, p.layout, in_shard))
    programs: list[Program] = []
    buffers: list[DeviceBuffer] = []
    if own_grid is None and x.memory.layout.sharded:
        # shard_or_reshard_tensor_if_required: `ttnn::to_memory_config` into the conv's
        # own config (a reshard, tt_sharding.py), the new tensor freed after the halo
        reshard = plan_to_memory_config(OpKind.TO_MEMORY_CONFIG,
                                        OpRequest((x,), OutputRequest.of(conv_input.memory, x.dtype), target))
        programs.extend(reshard.programs)
        buffers.append(tensor_buffer("conv_input_sharded", BufferRole.INTERMEDIATE, conv_input, target,
                                     (0, len(programs))))
    elif not x.memory.layout.sharded:
        stick = c_pad * x.dtype.element_bytes
        cbs = [cbuf(0, "output", in_shard.shape[0], round_up(stick, target.l1_alignment), p.grid,
                    globally_allocated=True)]
        if x.memory.buffer_type is BufferType.DRAM and stick % target.dram_alignment:
            cbs.append(cbuf(1, "scratch", 1, round_up(stick, target.dram_alignment), p.grid))
        programs.append(Program("InterleavedToShardedProgramFactory", I2S_SOURCE, p.grid, tuple(cbs)))
        buffers.append(tensor_buffer("conv_input_sharded", BufferRole.INTERMEDIATE, conv_input, target, (0, 1)))
    if bypass_halo and bypasses_halo(attrs, p.layout):
        # conv2d.cpp conv2d_L1: the conv reads its sharded input; it is the conv's
        # `input_tensor_post_tm`, in scope to the end
        act_shard = in_shard.shape
        held = "conv_input_sharded"
    else:
        window = halo_window(p) if halo_window is not None else conv_window(attrs, p)
        act_shard = _plan_halo(attrs, p, window, in_shard, c_pad, conv_in, move_halo, programs, buffers, target)
        held = "halo_output (moved)" if move_halo else "halo_output"
    oh, ow = attrs.output_hw
    out_c = round_up(attrs.out_channels, TILE * p.out_cores_c)
    out_shard = ShardSpec(p.out_grid, (p.per_core_h * TILE, p.per_core_w * TILE), orientation)
    # the output's logical channels are the conv's (conv2d_op.cpp compute_output_specs);
    # its shards hold the channels padded to the channel cores, which the allocator
    # reserves whole on every core (base.py tensor_buffer)
    conv_out = TensorSpec((1, 1, attrs.batch * oh * ow, attrs.out_channels), out_dtype, cfg.output_layout,
                          MemoryConfig(BufferType.L1, p.layout, out_shard))
    weights_dtype = cfg.weights_dtype or req.inputs[1].dtype
    split = uses_split_reader(attrs, p, blocks, c_pad, x.dtype, out_dtype, compute, target, weights_dtype)
    where = config_placement(attrs, p)
    reader_row = reader_indices(conv_window(attrs, p), blocks[0], split, where, op)
    cbs = conv_cbs(attrs, p, blocks, weights_height, x.dtype, out_dtype, compute, act_shard, split,
                   reader_row if not where.in_dram else p.per_core_h * TILE * 2, weights_dtype)
    programs.append(Program("Conv2dShardedProgramFactory", CONV_DIR + "device/conv2d_op_sharded_program_factory.cpp",
                            p.program_grid, tuple(cbs)))
    conv = len(programs) - 1
    # the conv program's cache key: its attributes and its input (tt-metal hashes the
    # operation's attributes and input tensors)
    buffers.append(where.buffer("conv_reader_indices", reader_row, target, (conv, conv),
                                f"conv {attrs!r} {conv_input!r} {out_dtype.value} {weights_dtype.value}"))
    out = conv_out
    if not req.out.sharded:
        out = TensorSpec(conv_out.shape, out_dtype, cfg.output_layout, req.out.memory())
        page = out_dtype.tile_bytes if cfg.output_layout is Layout.TILE else out_c * out_dtype.element_bytes
        pages = p.per_core_h * p.per_core_w if cfg.output_layout is Layout.TILE else p.per_core_h * TILE
        programs.append(Program("ShardedToInterleavedProgramFactory", S2I_SOURCE, p.out_grid,
                                (cbuf(0, "input", pages, page, p.out_grid, globally_allocated=True),)))
        buffers.append(tensor_buffer("conv_output_sharded", BufferRole.INTERMEDIATE, conv_out, target,
                                     (conv, conv + 1)))
    last = len(programs) - 1
    # conv2d.cpp conv2d_L1: the output's `ttnn::to_memory_config` runs while the conv's
    # input (`input_tensor_post_tm`: the halo output, moved or not, or with no halo the
    # sharded input) is still in scope; it is freed when the function returns.
    # conv_transpose2d keeps its own sharded input too (`keep_input`)
    kept = {held, "conv_input_sharded"} if keep_input else {held}
    buffers = [replace(b, live=(b.live[0], last)) if b.name in kept else b for b in buffers]
    buffers.append(tensor_buffer("output0", BufferRole.OUTPUT, out, target, (last, last)))
    require(w.layout in (Layout.TILE, Layout.ROW_MAJOR), op, "weights expected")
    return OpPlan(op, tuple(programs), (out,), tuple(buffers))


def _plan_halo(attrs: Conv2dAttrs, p: ConvParallel, window: SlidingWindow, in_shard: ShardSpec, c_pad: int,
               conv_in: DataType, move_halo: bool, programs: list[Program], buffers: list[DeviceBuffer],
               target: OpTarget) -> tuple[int, int]:
    """The halo's program (and `ttnn::move`'s) and buffers, appended; returns the shard of
    the conv's input (the halo output: sticks, channels a core)."""
    c_core = c_pad // p.cores_c
    orientation = in_shard.orientation
    sticks = max_out_nsticks_per_core(window)
    halo_out = TensorSpec((1, 1, sticks * p.cores_nhw, c_pad), conv_in, Layout.ROW_MAJOR,
                          MemoryConfig(BufferType.L1, p.layout, ShardSpec(p.grid, (sticks, c_core), orientation)))
    stick_bytes = c_core * conv_in.element_bytes
    halo = len(programs)
    configs, config_buffers = halo_configs(window, in_shard, conv_in, config_placement(attrs, p), 4, target, halo)
    programs.append(Program("UntilizeWithHaloProgramFactory", HALO_SOURCE, p.grid, (
        cbuf(0, "src", in_shard.shape[0], stick_bytes, p.grid, globally_allocated=True),
        cbuf(1, "out", sticks, stick_bytes, p.grid, globally_allocated=True),
        cbuf(2, "pad0", 1, stick_bytes, p.grid), cbuf(3, "pad1", 1, stick_bytes, p.grid), *configs)))
    if move_halo:
        buffers.append(tensor_buffer("halo_output", BufferRole.INTERMEDIATE, halo_out, target, (halo, halo)))
        buffers.extend(config_buffers)
        halo_pages = halo_out.shard_pages()
        programs.append(Program("MoveShardedProgramFactory", MOVE_SOURCE, p.grid, (
            cbuf(0, "src", halo_pages, stick_bytes, p.grid, globally_allocated=True),
            cbuf(1, "dst", halo_pages, stick_bytes, p.grid, globally_allocated=True))))
        moved = len(programs) - 1
        buffers.append(tensor_buffer("halo_output (moved)", BufferRole.INTERMEDIATE, halo_out, target,
                                     (moved, moved + 1)))
    else:
        buffers.append(tensor_buffer("halo_output", BufferRole.INTERMEDIATE, halo_out, target, (halo, halo + 1)))
        buffers.extend(config_buffers)
    return sticks, c_core


def plan_halo(kind: OpKind, req: OpRequest, attrs: Conv2dAttrs) -> OpPlan:
    """The halo alone (ttnn.halo): the conv's halo program for a row-major input already
    sharded on the conv's grid."""
    cfg = attrs.config
    require(cfg.shard_layout is not None, kind.value, "set Conv2dConfig.shard_layout")
    assert cfg.shard_layout is not None
    # the halo op runs whatever the conv after it would do (no `bypasses_halo` here)
    plan = plan_sliding_conv(kind.value, req, attrs, attrs.batch * attrs.input_hw[0] * attrs.input_hw[1],
                             move_halo=cfg.reallocate_halo_output)
    halo = next(i for i, prog in enumerate(plan.programs) if prog.name == "UntilizeWithHaloProgramFactory")
    halo_buf = next(b for b in plan.buffers if b.name == "halo_output")
    assert halo_buf.spec is not None
    out = DeviceBuffer("output0", BufferRole.OUTPUT, halo_buf.buffer_type, halo_buf.pages, halo_buf.page_bytes,
                       halo_buf.banks, halo_buf.alignment, (0, 0), halo_buf.spec)
    return OpPlan(kind.value, (plan.programs[halo],), (halo_buf.spec,), (out,))
