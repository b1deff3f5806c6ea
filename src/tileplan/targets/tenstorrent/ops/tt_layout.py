"""Tilize, untilize and to_layout: the programs that move a tensor between ROW_MAJOR and
TILE layout.

- Tilize, interleaved (ttnn/cpp/ttnn/operations/data_movement/tilize/device/
  tilize_multi_core_interleaved_program_factory.cpp): the input c_0 and the output c_16
  hold one block, a row of Wt tiles, each.
- Untilize, interleaved or sharded input (ttnn/cpp/ttnn/operations/data_movement/untilize/
  device/factories/untilize_multi_core_program_factory.cpp): the input c_0 and output
  c_16 hold one block of Wt tiles, doubled when a core untilizes two blocks or more (the
  tile rows are split over the grid by `split_blocks_for_tilize`); a sharded input binds
  c_0 to its whole shard.
- Untilize of a row too wide for L1 (untilize.cpp: `enough_space_height =
  is_enough_space(input, in_tile, in_tile, Wt)`, common.cpp: true only when the L1 above
  the base, to the lowest occupied address or the top, exceeds 2 x in_tile x Wt), input
  and output interleaved: `UntilizeMultiCoreBlockProgramFactory`
  (untilize_multi_core_block): `split_blocks_for_tilize_wh` (work_split_tilize.hpp) cuts
  the tiles into squares of side b (`closest_square_larger_than_b`: the smallest side
  above sqrt(ceil(tiles / cores)), or that root when it is whole, leaving fewer blocks than
  cores), one a core row-wise, and c_0 / c_16 hold b tiles of the input's and the
  output's type (the cliff cores fewer: planned at b, the per-core worst).
Check (tt-mlir OpModel ToLayout row): a {64, 1024} bf16 TILE tensor to ROW_MAJOR on 64
cores: 2 tile rows, one a core, 32 + 32 tiles = 131,072 B. Block: a decode's logits
[1, 1, 32, 128256] bfloat8_b on 8 x 8 cores: 4,008 tiles, b = 64, 63 cores, c_0 64 x 1,088
and c_16 64 x 2,048 B (bf16 out).
"""

from __future__ import annotations

import math

from tileplan.targets.tenstorrent.memory import CoreRange, CoreRangeSet, MemoryConfig, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    cbuf,
    OpPlan,
    OpRequest,
    OpTarget,
    Program,
    ceil_div,
    output_buffers,
    padded_shape4,
    require,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, padded_height_width

TILIZE_SOURCE = "ttnn/cpp/ttnn/operations/data_movement/tilize/device/tilize_multi_core_interleaved_program_factory.cpp"
UNTILIZE_SOURCE = ("ttnn/cpp/ttnn/operations/data_movement/untilize/device/factories/"
                   "untilize_multi_core_program_factory.cpp")
UNTILIZE_BLOCK_SOURCE = ("ttnn/cpp/ttnn/operations/data_movement/untilize/device/factories/"
                         "untilize_multi_core_block_program_factory.cpp")


def split_blocks(blocks: int, cores: int) -> tuple[int, int]:
    """ttnn `split_blocks_for_tilize`: (cores used, blocks on a full core)."""
    per_core = ceil_div(blocks, cores)
    return ceil_div(blocks, per_core), per_core


def tilize_program(x: TensorSpec, out_dtype: DataType, target: OpTarget) -> Program:
    """tilize_multi_core_interleaved_program_factory.cpp: c_0 and c_16 of one block
    (Wt tiles) each, on the cores the tile rows are split over."""
    require(not x.memory.layout.sharded, "ttnn.tilize", "tilizing a sharded tensor is not modelled")
    h, w = padded_height_width(x.shape, Layout.TILE)
    wt = w // TILE
    used, _ = split_blocks(h // TILE, target.num_cores)
    cores = CoreRangeSet.from_count(max(used, 1), *target.grid)
    return Program("TilizeMultiCoreInterleavedProgramFactory", TILIZE_SOURCE, cores, (
        cbuf(0, "src0", wt, x.dtype.tile_bytes, cores),
        cbuf(16, "output", wt, out_dtype.tile_bytes, cores)))


def enough_space_height(x: TensorSpec, wt: int, target: OpTarget) -> bool:
    """untilize.cpp / common.cpp `is_enough_space` (see the module docstring)."""
    top = target.lowest_occupied_l1 if target.lowest_occupied_l1 is not None else target.l1_size
    return top - target.l1_unreserved_base > 2 * x.dtype.tile_bytes * wt


def square_block_side(blocks_per_core: int, width: int, height: int, cores: int) -> int:
    """work_split_tilize.hpp `closest_square_larger_than_b`: the block side b."""
    root = math.isqrt(blocks_per_core)
    if root * root == blocks_per_core and ceil_div(width, root) * ceil_div(height, root) < cores:
        return root
    for side in range(root + 1, width * height + 1):
        if ceil_div(width, side) * ceil_div(height, side) < cores:
            return side
    return 1


def untilize_block_program(x: TensorSpec, out_dtype: DataType, target: OpTarget) -> Program:
    """untilize_multi_core_block (see the module docstring): c_0 and c_16 of b tiles on the
    cores `split_blocks_for_tilize_wh` assigns row-wise."""
    dims = padded_shape4(x)
    ht, wt = dims[0] * dims[1] * dims[2] // TILE, dims[3] // TILE
    gx, gy = target.grid
    side = square_block_side(ceil_div(wt * ht, gx * gy), wt, ht, gx * gy)
    full_row, full_col = wt // side, ht // side
    cliff_row, cliff_col = full_row < ceil_div(wt, side), full_col < ceil_div(ht, side)
    used = full_col * (full_row + cliff_row) + (full_row + cliff_row if cliff_col else 0)
    cores = CoreRangeSet.from_count(used, gx, gy)
    return Program("UntilizeMultiCoreBlockProgramFactory", UNTILIZE_BLOCK_SOURCE, cores, (
        cbuf(0, "src0", side, x.dtype.tile_bytes, cores),
        cbuf(16, "output", side, out_dtype.tile_bytes, cores)))


def untilize_program(x: TensorSpec, out_dtype: DataType, target: OpTarget, out_sharded: bool = False) -> Program:
    """untilize_multi_core_program_factory.cpp, or the block factory for a row too wide
    for L1 (see the module docstring)."""
    dims = padded_shape4(x)
    rows, wt = dims[0] * dims[1] * dims[2] // TILE, dims[3] // TILE
    shard = x.memory.shard
    if shard is None and not out_sharded and not enough_space_height(x, wt, target):
        return untilize_block_program(x, out_dtype, target)
    cores: CoreRange | CoreRangeSet
    if shard is not None:
        require(shard.shape[1] % TILE == 0, "ttnn.untilize", "a TILE shard is whole tiles")
        tiles_per_block, blocks_per_core = shard.shape[1] // TILE, shard.shape[0] // TILE
        cores = shard.grid
        in0 = tiles_per_block * blocks_per_core
    else:
        used, blocks_per_core = split_blocks(rows, target.num_cores)
        tiles_per_block = wt
        cores = CoreRangeSet.from_count(max(used, 1), *target.grid)
        in0 = tiles_per_block * (2 if blocks_per_core > 1 else 1)
    out = tiles_per_block * (2 if blocks_per_core > 1 else 1)
    return Program("UntilizeMultiCoreProgramFactory", UNTILIZE_SOURCE, cores, (
        cbuf(0, "src0", in0, x.dtype.tile_bytes, cores, globally_allocated=shard is not None),
        cbuf(16, "output", out, out_dtype.tile_bytes, cores)))


def plan_layout(kind: OpKind, req: OpRequest, attrs: None = None) -> OpPlan:
    """ttnn.tilize (ROW_MAJOR to TILE), ttnn.untilize (TILE to ROW_MAJOR) and
    ttnn.to_layout (whichever the target layout asks; the output memory the request's)."""
    (x,) = req.inputs
    op = kind.value
    if kind is OpKind.TILIZE:
        layout = Layout.TILE
    elif kind is OpKind.UNTILIZE:
        layout = Layout.ROW_MAJOR
    else:
        layout = Layout.ROW_MAJOR if x.layout is Layout.TILE else Layout.TILE
    require(x.layout is not layout, op, f"the input is already {layout.value}")
    require(x.memory.layout.sharded or not req.out.sharded, op,
            "an interleaved input converts to an interleaved output (shard it after)")
    out_dtype = req.out.dtype or x.dtype
    if kind is OpKind.UNTILIZE and req.out.dtype is None and x.dtype.block_float:
        out_dtype = DataType.BFLOAT16  # compute_output_specs: BFLOAT8_B untilizes to BFLOAT16
    require(not (layout is Layout.ROW_MAJOR and out_dtype.block_float), op, f"{out_dtype.value} has no ROW_MAJOR form")
    out = TensorSpec(x.shape, out_dtype, layout, req.out.memory())
    program = (tilize_program(x, out_dtype, req.target) if layout is Layout.TILE
               else untilize_program(x, out_dtype, req.target, req.out.sharded))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def relayout(x: TensorSpec, layout: Layout, memory: MemoryConfig, target: OpTarget) -> tuple[Program, TensorSpec]:
    """The program and result of a to_layout inside a composite operation."""
    out = TensorSpec(x.shape, x.dtype, layout, memory)
    program = tilize_program(x, x.dtype, target) if layout is Layout.TILE else untilize_program(x, x.dtype, target)
    return program, out
