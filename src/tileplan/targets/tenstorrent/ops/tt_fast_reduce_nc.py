"""ttnn.experimental.fast_reduce_nc: a sum over the batch or channel dimension (dims 0
or 1) of a TILE tensor, one program (tt-metal ttnn/cpp/ttnn/operations/experimental/
reduction/fast_reduce_nc/device/fast_reduce_nc_program_factory.cpp @03725f26, the same
circular buffers in the 2024 `reduce_nc_factory` and the newest descriptor form;
fast_reduce_nc_device_operation.cpp @00b0fa3f; the Python binding's defaults):

- the output: the input's padded shape with the reduced dimension 1 (keepdim), the
  input's data type, DRAM interleaved unless a memory config is given
  (`DEFAULT_OUTPUT_MEMORY_CONFIG`);
- the cores: `split_work_to_cores(compute_with_storage_grid_size, output tiles,
  row_wise=true)`: one output tile a core at least, the first min(tiles, grid) cores
  row by row;
- `input_granularity`: the largest of 8 .. 2 dividing the reduced dimension's size
  (else 1);
- circular buffers on every core used: c_0 the input, granularity x 2 tiles; c_1 a zero
  tile, bf16; c_24 the accumulator, 1 tile (Float32 under fp32_dest_acc_en, else the
  output's format); c_16 the output, 2 tiles. The default compute config
  (`init_device_compute_kernel_config(arch, None, HiFi4)`) has no fp32 accumulation.

Worked example: [1, 2, 6528, 1280] bf16 reduced over dim 1 -> [1, 1, 6528, 1280], 8,160
output tiles on all 64 cores of an 8 x 8 grid; granularity 2: c_0 4 x 2,048, c_1 2,048,
c_24 2,048, c_16 2 x 2,048 = 16,384 B a core.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    output_buffers,
    padded_shape4,
    require,
    split_work,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout

SOURCE = ("ttnn/cpp/ttnn/operations/experimental/reduction/fast_reduce_nc/device/"
          "fast_reduce_nc_program_factory.cpp")
#: the largest input granularity the factory tries
MAX_GRANULARITY = 8


@dataclass(frozen=True, slots=True)
class ReduceNcAttrs:
    """The dimension reduced (0 or 1)."""

    dim: int = 1


def plan_fast_reduce_nc(kind: OpKind, req: OpRequest, attrs: ReduceNcAttrs) -> OpPlan:
    """fast_reduce_nc over one of dims 0, 1 (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE and len(x.shape) == 4, op, "a 4-D TILE input")
    require(attrs.dim in (0, 1), op, f"dims [{attrs.dim}]: fast_reduce_nc reduces dimension 0 or 1")
    padded = padded_shape4(x)
    reduced = padded[attrs.dim]
    granularity = next((g for g in range(MAX_GRANULARITY, 1, -1) if reduced % g == 0), 1)
    shape = tuple(1 if i == attrs.dim else d for i, d in enumerate(x.shape))
    out = TensorSpec(shape, x.dtype, Layout.TILE, req.out.memory())
    o_shape = padded_shape4(out)
    tiles = o_shape[0] * o_shape[1] * (o_shape[2] // TILE) * (o_shape[3] // TILE)
    gx, gy = req.target.grid
    used, _ = split_work(tiles, gx * gy)
    cores = CoreRangeSet.from_count(used, gx, gy, row_wise=True)
    fp32 = req.compute is not None and req.compute.fp32_dest_acc_en
    tile_bytes = out.dtype.tile_bytes
    cbs = (cbuf(0, "input", 2 * granularity, tile_bytes, cores),
           cbuf(1, "zero", 1, DataType.BFLOAT16.tile_bytes, cores),
           cbuf(24, "accumulator", 1, 2 * tile_bytes if fp32 else tile_bytes, cores),
           cbuf(16, "output", 2, tile_bytes, cores))
    program = Program("reduce_nc_factory", SOURCE, cores, cbs)
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
