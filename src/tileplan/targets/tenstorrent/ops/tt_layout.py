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
Check (tt-mlir OpModel ToLayout row): a {64, 1024} bf16 TILE tensor to ROW_MAJOR on 64
cores: 2 tile rows, one a core, 32 + 32 tiles = 131,072 B.
"""

from __future__ import annotations

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


def untilize_program(x: TensorSpec, out_dtype: DataType, target: OpTarget) -> Program:
    """untilize_multi_core_program_factory.cpp (see the module docstring)."""
    dims = padded_shape4(x)
    rows, wt = dims[0] * dims[1] * dims[2] // TILE, dims[3] // TILE
    shard = x.memory.shard
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
    require(not (layout is Layout.ROW_MAJOR and out_dtype.block_float), op, f"{out_dtype.value} has no ROW_MAJOR form")
    out = TensorSpec(x.shape, out_dtype, layout, req.out.memory())
    program = (tilize_program(x, out_dtype, req.target) if layout is Layout.TILE
               else untilize_program(x, out_dtype, req.target))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def relayout(x: TensorSpec, layout: Layout, memory: MemoryConfig, target: OpTarget) -> tuple[Program, TensorSpec]:
    """The program and result of a to_layout inside a composite operation."""
    out = TensorSpec(x.shape, x.dtype, layout, memory)
    program = tilize_program(x, x.dtype, target) if layout is Layout.TILE else untilize_program(x, x.dtype, target)
    return program, out
