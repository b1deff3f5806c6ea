"""`ttnn.argmax` along the last dimension (ttnn/cpp/ttnn/operations/reduction/argmax/;
"Only argmax on last dim is supported!" at the builds modelled): the output is UINT32
ROW_MAJOR of the input's shape without that dimension (kept as 1 with `keep_dim`), in
the memory config asked for (`compute_output_specs`). An input must be interleaved;
ROW_MAJOR in bfloat16, float32, int32, uint32 or uint16, TILE in bfloat16 or float32.

Its factory (device/argmax_program_factory.cpp; `select_program_factory`: a TILE input
runs the single-core tile factory; a ROW_MAJOR one the multi-core factory with
`use_multicore`, else the single-core one), each circular buffer one page used as raw
scratch:

* single-core ROW_MAJOR (`ArgMaxSingleCoreRowMajorFactory`, one core): c_0 one input row
  (last padded dimension x element bytes), c_1 `output_last_dim` x 4 B (the dimension
  before the reduced one, 1 with keep_dim or rank 1; unrounded since tt-metal PR #29414);
* single-core TILE: c_0 and c_1 one tile of the input's and the output's data type;
* multi-core ROW_MAJOR (`ArgMaxMultiCoreRowMajorFactory`): the reduced row split in
  blocks of `alignment / 2` elements (the input's buffer alignment over sizeof(bfloat16))
  over the cores `split_work_to_cores` gives, column by column; c_0 each group's share of
  the row rounded up to 32 B (a second CB on the second group), c_1 `output_last_dim` x 4
  rounded to 32 B, c_2 that times the cores (the indices), c_3 `output_last_dim` x the
  element bytes rounded to 32 B times the cores (the values).

Worked example (CLIP's text pooling, tt-mlir 2025-12): int32 [1, 1, 1, 77] row-major on
one core: c_0 308 B, c_1 4 B.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRange, CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    CircularBuffer,
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    output_buffers,
    require,
    split_work,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import DataType, Layout, round_up

SOURCE = "ttnn/cpp/ttnn/operations/reduction/argmax/device/argmax_program_factory.cpp"
ROW_MAJOR_TYPES = frozenset({DataType.BFLOAT16, DataType.FLOAT32, DataType.INT32, DataType.UINT32, DataType.UINT16})


@dataclass(frozen=True, slots=True)
class ArgmaxAttrs:
    """The dimension reduced (negative from the end), keep_dim, and whether tt-mlir asks
    for the multi-core factory (`use_multicore`)."""

    dim: int
    keep_dim: bool = False
    multicore: bool = False


def _column_major(first: int, end: int, grid_y: int) -> CoreRangeSet:
    """Cores `first` to `end - 1` of the grid counted column by column
    (`CoreCoord{i / num_cores_y, i % num_cores_y}`), one range a core."""
    return CoreRangeSet(tuple(CoreRange((i // grid_y, i % grid_y), (i // grid_y, i % grid_y))
                              for i in range(first, end)))


def plan_argmax(kind: OpKind, req: OpRequest, attrs: ArgmaxAttrs) -> OpPlan:
    """The argmax factories (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    rank = len(x.shape)
    require(not x.memory.layout.sharded, op, "the input must be interleaved")
    require(attrs.dim % rank == rank - 1, op, "Only argmax on last dim is supported!")
    allowed = ROW_MAJOR_TYPES if x.layout is Layout.ROW_MAJOR else frozenset({DataType.BFLOAT16, DataType.FLOAT32})
    require(x.dtype in allowed, op, f"a {x.layout.value} {x.dtype.value} input is not supported")
    shape = x.shape[:-1] + ((1,) if attrs.keep_dim else ())
    out = TensorSpec(shape or (1,), DataType.UINT32, Layout.ROW_MAJOR, req.out.memory())
    out_last = 1 if attrs.keep_dim or rank < 2 else x.shape[-2]
    target = req.target
    grid_x, grid_y = target.grid
    if x.layout is Layout.TILE:
        cores = CoreRangeSet.from_count(1, grid_x, grid_y)
        program = Program("ArgMaxSingleCoreTileFactory", SOURCE, cores,
                          (cbuf(0, "src", 1, x.dtype.tile_bytes, cores),
                           cbuf(1, "dst", 1, DataType.UINT32.tile_bytes, cores)))
    elif not attrs.multicore:
        cores = CoreRangeSet.from_count(1, grid_x, grid_y)
        program = Program("ArgMaxSingleCoreRowMajorFactory", SOURCE, cores,
                          (cbuf(0, "src", 1, x.shape[-1] * x.dtype.element_bytes, cores),
                           cbuf(1, "dst", 1, out_last * 4, cores)))
    else:
        elem = x.dtype.element_bytes
        block = target.alignment(x.memory.buffer_type) // DataType.BFLOAT16.element_bytes
        blocks = -(-x.shape[-1] // block)
        n, most = split_work(blocks, grid_x * grid_y)
        more = blocks % n or n  # the cores holding `most` blocks; the rest hold one fewer
        everyone = CoreRangeSet.from_count(n, grid_x, grid_y, row_wise=False)
        cbs: list[CircularBuffer] = [cbuf(0, "src", 1, round_up(most * block * elem, 32),
                                          _column_major(0, more, grid_y))]
        if more < n:
            cbs.append(cbuf(0, "src", 1, round_up((most - 1) * block * elem, 32), _column_major(more, n, grid_y)))
        cbs += [cbuf(1, "dst", 1, round_up(out_last * 4, 32), everyone),
                cbuf(2, "red_idxs", 1, round_up(out_last * 4, 32) * n, everyone),
                cbuf(3, "red_vals", 1, round_up(out_last * elem, 32) * n, everyone)]
        program = Program("ArgMaxMultiCoreRowMajorFactory", SOURCE, everyone, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), target, 0))
