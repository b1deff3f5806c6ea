"""`ttnn.cumsum` (and `ttnn.moreh_cumsum`, a wrapper of it since tt-metal PR #24427,
July 2025: ttnn/cpp/ttnn/operations/moreh/moreh_cumsum/moreh_cumsum.cpp calls
`ttnn::cumsum(input, dim, input.dtype(), ...)` in the input's memory config).

The composite (ttnn/cpp/ttnn/operations/reduction/accumulation/accumulation_common.cpp
`accumulation_invoke`): a tensor of rank below 4 is reshaped to rank 4 with leading 1s
(a view: its last two dimensions keep their tiles); when the axis is among the last
three of the input's rank (`input_rank - cum_axis < 4`) it is swapped with dimension 0
by a `ttnn::permute` in the input's memory config; `prim::accumulation` scans dimension
0; the result is permuted back (and viewed at the input's rank). A long, thin tensor
grows by the permute: `[1, 512]` int32 is 16 tiles, permuted to `[512, 1, 1, 1]` it is
512 (tt-metal #55542: "The permute inflates the tensor 32x").

`prim::accumulation` (device/accumulation_device_operation.cpp: a device tensor, TILE,
interleaved, not sharded; output of the input's logical shape, TILE, the requested or
input data type, the memory config given or the input's) runs
device/accumulation_program_factory.cpp on the first `num_rows` cores of the compute
grid, column by column (`split_work_to_cores(grid, num_rows)`, `CoreCoord{i /
num_cores_y, i % num_cores_y}`), `num_rows = tiles / tiles_per_row`, `tiles_per_row` the
scanned dimension's extent. Its circular buffers, by `Accumulation`:

* `FOUR_TILE` (late 2025, stored commit f3c1ee7e): SRC c_0 4 tiles of the input's data
  type, ACC c_3, START c_2 and DST c_1 4 tiles each of the output's, created in that
  order;
* `ONE_TILE_ACC` (tt-metal PR #41371, "Improve cumsum accuracy", 2026-04): SRC c_0 4
  tiles of the input's, ACC 1 tile (the output's integer format, else float32), DST c_1
  4 tiles of the output's; no START.

Worked example: RoBERTa's position ids, `moreh_cumsum` of int32 [1, 16, 1, 1] over
dimension 1 on a 2025-12 build: permute to [16, 1, 1, 1] (16 tiles), scan one row of 16
tiles on core (0, 0) with 4 x 4 x 4,096 B of circular buffers, permute back.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    CircularBuffer,
    DeviceBuffer,
    OpPlan,
    OpRequest,
    OutputRequest,
    Program,
    cbuf,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import PermuteAttrs, plan_permute
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, padded_height_width
from tileplan.targets.tenstorrent.versions import Accumulation

SOURCE = "ttnn/cpp/ttnn/operations/reduction/accumulation/device/accumulation_program_factory.cpp"
FOUR_DIMENSIONS = 4
INTEGER = frozenset({DataType.INT32, DataType.UINT32, DataType.UINT16, DataType.UINT8})


@dataclass(frozen=True, slots=True)
class CumsumAttrs:
    """The scanned dimension (negative from the end) and the factory's buffers."""

    dim: int
    accumulation: Accumulation = Accumulation.FOUR_TILE


def _tiles(spec: TensorSpec) -> int:
    h, w = padded_height_width(spec.shape, Layout.TILE)
    return h * w // (TILE * TILE)


def _accumulate(x: TensorSpec, out: TensorSpec, req: OpRequest, attrs: CumsumAttrs) -> Program:
    """The scan of dimension 0 of a rank-4 TILE tensor."""
    rows = _tiles(x) // x.shape[0]
    grid_x, grid_y = req.target.grid
    cores = CoreRangeSet.from_count(min(max(rows, 1), grid_x * grid_y), grid_x, grid_y, row_wise=False)
    cbs: tuple[CircularBuffer, ...]
    if attrs.accumulation is Accumulation.FOUR_TILE:
        cbs = (cbuf(0, "src", 4, x.dtype.tile_bytes, cores), cbuf(3, "acc", 4, out.dtype.tile_bytes, cores),
               cbuf(2, "start", 4, out.dtype.tile_bytes, cores), cbuf(1, "dst", 4, out.dtype.tile_bytes, cores))
    else:
        acc = out.dtype if out.dtype in INTEGER else DataType.FLOAT32
        cbs = (cbuf(0, "src", 4, x.dtype.tile_bytes, cores), cbuf(3, "acc", 1, acc.tile_bytes, cores),
               cbuf(1, "dst", 4, out.dtype.tile_bytes, cores))
    return Program("AccumulationProgramFactory", SOURCE, cores, cbs)


def plan_cumsum(kind: OpKind, req: OpRequest, attrs: CumsumAttrs) -> OpPlan:
    """`accumulation_invoke` (see the module docstring): permute, scan, permute back."""
    (x,) = req.inputs
    op = kind.value
    rank = len(x.shape)
    require(attrs.accumulation is not Accumulation.MOREH, op,
            "tt-metal's moreh_cumsum device operation (before PR #24575) is not modelled")
    require(-rank <= attrs.dim < rank, op, f"dimension {attrs.dim} out of range for rank {rank}")
    require(x.layout is Layout.TILE and not x.memory.layout.sharded, op,
            f"prim::accumulation takes a TILE interleaved tensor, found {x.layout.value} {x.memory.text()}")
    require(rank <= FOUR_DIMENSIONS, op, f"a rank-{rank} input is not modelled (rank 4 or less)")
    axis = attrs.dim % rank
    out_dtype = req.out.dtype or x.dtype
    shape4 = (1,) * (FOUR_DIMENSIONS - rank) + x.shape
    axis4 = axis + FOUR_DIMENSIONS - rank
    view = TensorSpec(shape4, x.dtype, Layout.TILE, x.memory)
    out = TensorSpec(x.shape, out_dtype, Layout.TILE, req.out.memory())
    if rank - axis >= FOUR_DIMENSIONS:
        scan_out = TensorSpec(shape4, out_dtype, Layout.TILE, req.out.memory())
        program = _accumulate(view, scan_out, req, attrs)
        return OpPlan(op, (program,), (out,), (tensor_buffer("output0", BufferRole.OUTPUT, out, req.target, (0, 0)),))
    perm = list(range(FOUR_DIMENSIONS))
    perm[0], perm[axis4] = axis4, 0
    there = plan_permute(OpKind.PERMUTE, OpRequest((view,), OutputRequest.of(x.memory), req.target),
                         PermuteAttrs(tuple(perm)))
    (permuted,) = there.outputs
    scanned = TensorSpec(permuted.shape, out_dtype, Layout.TILE, x.memory)
    scan = _accumulate(permuted, scanned, req, attrs)
    back = plan_permute(OpKind.PERMUTE, OpRequest((scanned,), OutputRequest.of(out.memory), req.target),
                        PermuteAttrs(tuple(perm)))
    require(bool(there.programs) and bool(back.programs), op, "the permutes run a program each")
    programs = there.programs + (scan,) + back.programs
    k = len(there.programs)
    buffers: list[DeviceBuffer] = [
        tensor_buffer("permuted", BufferRole.INTERMEDIATE, permuted, req.target, (k - 1, k)),
        tensor_buffer("scanned", BufferRole.INTERMEDIATE, scanned, req.target, (k, len(programs) - 1)),
        tensor_buffer("output0", BufferRole.OUTPUT, out, req.target, (len(programs) - 1, len(programs) - 1))]
    return OpPlan(op, programs, (out,), tuple(buffers))
