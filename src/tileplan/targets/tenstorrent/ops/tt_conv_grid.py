"""conv2d's shard grid as tt-metal chooses it (tenstorrent/tt-metal
ttnn/cpp/ttnn/operations/conv/conv2d/conv2d_utils.cpp): `determine_parallel_config`,
`determine_output_parallel_config`, a sharded input's own grid
(`get_conv_padded_input_shape_and_mem_config`), the divisor searches they use and the
input channels' alignment (`get_input_channels_alignment`). tt_conv.py plans the
programs on it.

Block sharding by build (`BlockGrids`, devices/software.toml `conv_block_grids`): until
tt-metal PR #27767 ("Conv2d decouple input and output shard grids", described
2025-09-02) one grid served input and output, its channel cores dividing both the
input's and the output's channel tiles; from it the input's channel cores divide the
input's channel blocks of `input_channels_alignment` alone and the output takes
`find_closest_largest_divisor_with_num_padding(out_channels_ntiles, ...)` channel cores
of its own on the input's N*H*W cores (conv2d_utils.cpp @71ff3c1d and @002a3f41
`determine_parallel_config`, `determine_output_parallel_config`), the conv program on
the union of the two grids (conv2d_op_sharded_program_factory.cpp: `all_cores =
input_cores.merge(output_cores)`). Not modelled: @002a3f41's depthwise alignment of 32
(`groups == input_channels == output_channels`), absent from @71ff3c1d and from the later
sliding_window/parallel_config_utils.cpp copy, its date and fate unknown."""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryLayout,
    ShardOrientation,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import OpTarget, ceil_div, require
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dAttrs
from tileplan.targets.tenstorrent.tiles import TILE, Layout, round_up
from tileplan.targets.tenstorrent.versions import BlockGrids


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
    and channel cores, and the per-core output block (tiles). Height sharding writes
    the output on the input's grid, width sharding on its own, block sharding on the
    input's or (`BlockGrids.DECOUPLED`) on the input's N*H*W cores by its own channel
    cores (`determine_output_parallel_config`); `orientation` the shards' (tt-metal's
    `ParallelConfig.shard_orientation`: COL_MAJOR for block sharding under
    `transpose_shards` or a COL_MAJOR input kept, else ROW_MAJOR)."""

    layout: MemoryLayout
    cores_nhw: int
    cores_c: int
    grid: CoreRange | CoreRangeSet
    per_core_h: int
    per_core_w: int
    out_grid: CoreRange | CoreRangeSet
    out_cores_c: int
    orientation: ShardOrientation = ShardOrientation.ROW_MAJOR

    @property
    def program_grid(self) -> CoreRange | CoreRangeSet:
        """The cores the conv program's circular buffers take: the input's grid, or, for
        width sharding, the bounding box of the larger of the input's and the output's
        grids (conv2d_op_width_sharded_program_factory.cpp `multi_core_conv2d_width_
        sharded`: `all_cores` is the output's grid unless the input has more cores,
        `allocate_cbs(..., all_reader_cores = all_cores.bounding_box())`); for block
        sharding the union of the input's and the output's grids
        (conv2d_op_sharded_program_factory.cpp `input_cores.merge(output_cores)`, two
        rectangles from core (0, 0) over the same N*H*W cores: the larger of them)."""
        if self.layout is MemoryLayout.HEIGHT_SHARDED:
            return self.grid
        larger = self.grid if self.grid.cores > self.out_grid.cores else self.out_grid
        return larger.bounding_box() if self.layout is MemoryLayout.WIDTH_SHARDED else larger


def parallel_config(attrs: Conv2dAttrs, layout: MemoryLayout, target: OpTarget, align: int = TILE) -> ConvParallel:
    """`determine_parallel_config`: the conv's own grid for `layout` (height sharding the
    output's N*H*W tiles over the grid's cores, block sharding them over its rows and
    the channels over its columns, width sharding the input channel tiles over its
    cores), then `parallel_on`. Block sharding's channel cores by build
    (`Conv2dConfig.block_grids`): SHARED divides the output's and the input's channel
    tiles together (`find_closest_largest_divisor_with_num_padding(out, in, start)`);
    DECOUPLED the input's channel blocks of `align` (`input_channels_alignment`) alone,
    `div_up(input_channels, input_channels_alignment)` (the common divisor with the
    output's channel tiles when channel padding is off)."""
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
        padding = attrs.config.enable_channels_padding
        if attrs.config.block_grids is BlockGrids.DECOUPLED:
            blocks = ceil_div(attrs.in_channels, align)
            cores_c = (divisor_with_padding(blocks, start_c) if padding
                       else _largest_common_divisor(out_c_t, blocks, start_c))
        else:
            cores_c = (_divisor_pair_with_padding(out_c_t, in_c_t, start_c) if padding
                       else _largest_common_divisor(out_c_t, in_c_t, start_c))
        grid = CoreRange((0, 0), (cores_nhw - 1, cores_c - 1) if col else (cores_c - 1, cores_nhw - 1))
    else:
        require(layout is MemoryLayout.WIDTH_SHARDED, "ttnn.conv2d",
                f"shard layout {layout.value} is not a conv layout")
        cores_nhw, cores_c = 1, divisor_with_padding(in_c_t, gx * gy)
        grid = CoreRangeSet.from_count(cores_c, gx, gy, row_wise=True)
    return parallel_on(attrs, layout, grid, cores_nhw, cores_c, target)


def parallel_on(attrs: Conv2dAttrs, layout: MemoryLayout, grid: CoreRange | CoreRangeSet, cores_nhw: int,
                cores_c: int, target: OpTarget, col_major: bool | None = None) -> ConvParallel:
    """The conv on an input `grid` of `cores_nhw` x `cores_c`: `determine_output_parallel_
    config` and the per-core block of the output (`determine_conv_op_parallel_config_from_
    conv_output_mem_config`: the output shard's tiles). Height sharding writes the output
    on the input's grid; a width-sharded output takes
    `find_closest_largest_divisor_with_num_padding(out_channels_ntiles, max_num_cores)`
    cores of its own, row-wise over the device grid (conv2d_utils.cpp, every version
    read), its width a core the output's channel tiles over those; a block-sharded one
    the input's grid (SHARED) or (DECOUPLED, @002a3f41) the input's `cores_nhw` by
    `find_closest_largest_divisor_with_num_padding(out_channels_ntiles, grid x)` channel
    cores (grid y when `col_major`: the input's orientation, `transpose_shards` when
    None), the output channels padded to them."""
    gx, gy = target.grid
    oh, ow = attrs.output_hw
    nhw_t = ceil_div(attrs.batch * oh * ow, TILE)
    out_c_t = ceil_div(attrs.out_channels, TILE)
    if layout is MemoryLayout.WIDTH_SHARDED:
        out_c = divisor_with_padding(out_c_t, gx * gy)
        return ConvParallel(layout, cores_nhw, cores_c, grid, nhw_t, ceil_div(out_c_t, out_c),
                            CoreRangeSet.from_count(out_c, gx, gy, row_wise=True), out_c)
    # determine_parallel_config: `transpose_shards` orients block sharding only; height
    # sharding is ROW_MAJOR whatever it says
    col = layout is MemoryLayout.BLOCK_SHARDED and (attrs.config.transpose_shards if col_major is None
                                                      else col_major)
    orientation = ShardOrientation.COL_MAJOR if col else ShardOrientation.ROW_MAJOR
    if layout is MemoryLayout.BLOCK_SHARDED and attrs.config.block_grids is BlockGrids.DECOUPLED:
        out_c = divisor_with_padding(out_c_t, gy if col else gx)
        out_grid = CoreRange((0, 0), (cores_nhw - 1, out_c - 1) if col else (out_c - 1, cores_nhw - 1))
        return ConvParallel(layout, cores_nhw, cores_c, grid, ceil_div(nhw_t, cores_nhw), ceil_div(out_c_t, out_c),
                            out_grid, out_c, orientation)
    return ConvParallel(layout, cores_nhw, cores_c, grid, ceil_div(nhw_t, cores_nhw), ceil_div(out_c_t, cores_c),
                        grid, cores_c, orientation)


def input_channels_alignment(layout: MemoryLayout, x: TensorSpec, target: OpTarget, sliced: bool = False) -> int:
    """conv2d_utils.cpp `get_input_channels_alignment` (a conv that is not a matmul): for
    a height- or block-sharded conv of a row-major input, or of any input in a DRAM slice
    (`sliced`: `input_tensor_layout == ROW_MAJOR || sliced_op`), the input's shard
    width's largest of 32, 16, 8 dividing it (32 when none does), or, for an input not
    sharded (a DRAM or L1 interleaved one, and a DRAM slice's), half the L1 alignment (8:
    the halo moves 16-B sticks); otherwise a tile's 32."""
    if layout is MemoryLayout.WIDTH_SHARDED or (x.layout is not Layout.ROW_MAJOR and not sliced):
        return TILE
    if x.memory.shard is None:
        return target.l1_alignment // 2
    width = x.memory.shard.shape[1]
    return next((a for a in (TILE, 16, 8) if width % a == 0), TILE)


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
    return parallel_on(attrs, layout, shard.grid, cores_nhw, cores_c, target,
                       shard.orientation is ShardOrientation.COL_MAJOR)
