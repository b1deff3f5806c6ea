"""`ttnn.gather` (torch.gather's semantics: the output takes the index's shape, each
element the input's at the index along `dim`), as ttnn/cpp/ttnn/operations/data_movement/
gather/gather.cpp `ExecuteGather::invoke` runs it along the last dimension (another
dimension transposes input and index first and the output back: not modelled):

1. both viewed at rank 4 (`unsqueeze_to_4D`);
2. the index's implicit tile padding filled in place (`fill_implicit_tile_padding`:
   fill_pad's program when its last two dimensions are not whole tiles);
3. the input sliced to the index's padded leading dimensions (`ttnn::slice` to `[idx[0],
   idx[1], idx_padded[2], input[-1]]`: a slice program unless that is the input's own
   shape), its implicit padding filled likewise;
4. `prim::gather` (device/gather_program_factory.cpp; `select_program_factory`: the
   single-row multi-core factory when the input's or the index's width passes 60 tiles,
   else single-row single-core): c_0 the input's whole tile row (`Wt_input` tiles; 2 in
   the multi-core factory), c_1 one index tile, c_2 one output tile of the input's data
   type, on the first `Ht` cores of the grid row by row (multi-core: the first
   `Wt_index`).

The output (`compute_output_specs`): the index's shape, the input's data type and
layout, the memory config asked for. The index must be UINT32 or UINT16
(`validate_on_program_cache_miss`), the two in one layout (tt-mlir makes both TILE:
TTNNWorkaroundsPass.cpp `createGatherOpOperandsWorkarounds`, tt-metal #41451).

Worked example (RoBERTa's token-type ids, tt-mlir 2026-08): int32 [1, 514] gathered by a
uint32 [1, 128] index: the index fills its padding, the input is sliced to 32 rows
and filled; one core holds c_0 of 17 x 4,096 B, c_1 and c_2 of 4,096 B each.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    DeviceBuffer,
    OpPlan,
    OpRequest,
    OutputRequest,
    Program,
    cbuf,
    output_buffers,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import fill_pad_program
from tileplan.targets.tenstorrent.ops.tt_tm import SliceAttrs, plan_slice
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up

SOURCE = "ttnn/cpp/ttnn/operations/data_movement/gather/device/gather_program_factory.cpp"
#: `GATHER_WT_THRESHOLD`: widths in tiles above which the multi-core factory runs
WT_THRESHOLD = 60


@dataclass(frozen=True, slots=True)
class GatherAttrs:
    """The dimension gathered along (negative from the end)."""

    dim: int


def _rank4(spec: TensorSpec) -> TensorSpec:
    shape = (1,) * (4 - len(spec.shape)) + spec.shape
    return TensorSpec(shape, spec.dtype, spec.layout, spec.memory)


def _whole_tiles(spec: TensorSpec) -> bool:
    return spec.shape[-1] % TILE == 0 and spec.shape[-2] % TILE == 0


def plan_gather(kind: OpKind, req: OpRequest, attrs: GatherAttrs) -> OpPlan:
    """`ExecuteGather::invoke` along the last dimension (see the module docstring)."""
    op = kind.value
    require(len(req.inputs) == 2, op, f"an input and an index expected, found {len(req.inputs)} tensors")
    x, index = req.inputs
    rank = len(x.shape)
    require(len(index.shape) == rank and rank <= 4, op,
            f"an input and an index of one rank up to 4 expected, found {list(x.shape)} and {list(index.shape)}")
    require(index.dtype in (DataType.UINT32, DataType.UINT16), op,
            f"Index tensor must be of type UINT32 or UINT16, found {index.dtype.value}")
    require(x.layout is Layout.TILE and index.layout is Layout.TILE, op,
            "the input and the index TILE expected (tt-mlir's workaround makes them so)")
    require(not x.memory.layout.sharded and not index.memory.layout.sharded, op, "sharded operands are not modelled")
    require(attrs.dim % rank == rank - 1, op,
            "a gather along another dimension than the last (ttnn::gather's transposes) is not modelled")
    require(all(i <= d for i, d in zip(index.shape[:-1], x.shape[:-1])), op,
            f"the index {list(index.shape)} is larger than the input {list(x.shape)} outside the last dimension")
    x4, i4 = _rank4(x), _rank4(index)
    programs: list[Program] = []
    buffers: list[DeviceBuffer] = []
    slice_at = 0
    if not _whole_tiles(i4):
        programs.append(fill_pad_program(i4, req))
    ends = (i4.shape[0], i4.shape[1], round_up(i4.shape[2], TILE), x4.shape[3])
    source = x4
    if ends != x4.shape:
        sliced = plan_slice(OpKind.SLICE, OpRequest((x4,), OutputRequest.of(x.memory), req.target),
                            SliceAttrs((0, 0, 0, 0), ends, (1, 1, 1, 1)))
        programs.extend(sliced.programs)
        source = sliced.outputs[0]
        slice_at = len(programs) - 1
    if not _whole_tiles(source):
        programs.append(fill_pad_program(source, req))
    wt_input = -(-x4.shape[3] // TILE)
    wt_index = -(-i4.shape[3] // TILE)
    ht = i4.shape[0] * i4.shape[1] * round_up(i4.shape[2], TILE) // TILE
    grid_x, grid_y = req.target.grid
    multi = wt_input > WT_THRESHOLD or wt_index > WT_THRESHOLD
    cores = CoreRangeSet.from_count(min(wt_index if multi else ht, grid_x * grid_y), grid_x, grid_y)
    cbs = (cbuf(0, "input", 2 if multi else wt_input, x.dtype.tile_bytes, cores),
           cbuf(1, "index", 1, index.dtype.tile_bytes, cores),
           cbuf(2, "output", 1, x.dtype.tile_bytes, cores))
    name = "GatherSingleRowMultiCoreProgramFactory" if multi else "GatherSingleRowSingleCoreProgramFactory"
    programs.append(Program(name, SOURCE, cores, cbs))
    if source is not x4:
        buffers.append(tensor_buffer("sliced", BufferRole.INTERMEDIATE, source, req.target,
                                     (slice_at, len(programs) - 1)))
    out = TensorSpec(index.shape, x.dtype, Layout.TILE, req.out.memory())
    return OpPlan(op, tuple(programs), (out,), tuple(buffers) + output_buffers((out,), req.target, len(programs) - 1))
