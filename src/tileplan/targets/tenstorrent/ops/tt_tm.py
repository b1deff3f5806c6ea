"""Tensor manipulations tt-mlir emits around the compute operations: ttnn.slice,
ttnn.repeat and ttnn.to_memory_config (the optimizer's reshards and L1 spills).

- slice, TILE (ttnn/cpp/ttnn/operations/data_movement/slice/device/
  slice_program_factory_tile.cpp `SliceTileProgramFactory::create_descriptor`): the
  output's tiles split over the grid (`split_work_to_cores`), one CB c_0 of two input
  tiles on the cores that work.
- slice, row-major, contiguous (slice_program_factory_rm.cpp @04d7c1a5
  `SliceRmProgramFactory::create_descriptor`, `compute_cb_size`): the output's rows
  ("sticks") split over the grid; one CB c_0 of `num_read_per_barrier x 2` pages on the
  cores that work, a page one output row rounded up to the larger of the input's and
  the output's alignments (doubled when the first column read is not aligned);
  `num_read_per_barrier` = the busiest core's rows rounded up to 32, divided by
  `merge_num_sticks_to_read`'s reads (tt_metal/common/work_split.cpp: the fewest reads of
  at most 4,096 B dividing the rows' bytes).
- repeat, TILE with whole-tile heights and widths (ttnn/cpp/ttnn/operations/
  data_movement/repeat/repeat.cpp `ttnn::repeat`, `repeat_dim_tile`; codegen/
  repeat_codegen_program_factory.cpp): one program per repeated dimension, innermost
  first, each with a CB of 8 pages (`cb_depth = 2 x max(READ_BATCH, WRITE_BATCH)`) on the
  cores its output pages split over; every program but the last writes an intermediate
  tensor. Any other tensor takes the row-major path: a TILE one is untilized, then one
  program per repeated dimension (repeat_program_factory_higher_dim.cpp /
  repeat_program_factory_last_dim.cpp: two CBs c_0 and c_1 of `2 x READ_ALIGNMENT + page`
  bytes on the whole grid, READ_ALIGNMENT 64, the page one row of the last dimension),
  then tilized back.
- repeat_interleave (ttnn/cpp/ttnn/operations/data_movement/repeat_interleave/
  repeat_interleave.cpp): the composite repeats a unit dimension inserted after `dim`
  (the repeat above) and reshapes the result back (a view): [B, H, S, D] by r at dim 1 is
  the repeat of [B, H, 1, S, D] by r at dim 2.
- to_memory_config (ttnn/cpp/ttnn/operations/core/to_memory_config/
  to_memory_config_op.hpp): interleaved to interleaved is a copy
  (data_movement/copy/device/copy_program_factory.cpp `copy_multi_core`: c_0 of two
  32-B-aligned input pages, and c_16 of two output pages when the dtype changes);
  interleaved to sharded is interleaved_to_sharded (the output CB bound to the shard, a
  one-page scratch CB when a DRAM page is not DRAM-aligned); sharded to interleaved is
  sharded_to_interleaved (the input CB bound to the shard). A reshard between two shard
  specs is refused by name.

Worked example: slicing [1, 32, 128, 64] bf16 to [1, 32, 128, 32] (a rotary half): 128
output tiles over 64 cores (2 each), CB 2 x 2,048 = 4,096 B a core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    DeviceBuffer,
    OpPlan,
    OpRequest,
    OpTarget,
    Program,
    cbuf,
    output_buffers,
    require,
    split_work,
    tensor_buffer,
    tiles_of,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, Layout

DM_DIR = "ttnn/cpp/ttnn/operations/data_movement/"
SLICE_SOURCE = DM_DIR + "slice/device/slice_program_factory_tile.cpp"
REPEAT_SOURCE = DM_DIR + "repeat/codegen/repeat_codegen_program_factory.cpp"
COPY_SOURCE = DM_DIR + "copy/device/copy_program_factory.cpp"
I2S_SOURCE = DM_DIR + "sharded/device/interleaved_to_sharded_program_factory.cpp"
S2I_SOURCE = DM_DIR + "sharded/device/sharded_to_interleaved_program_factory.cpp"
#: repeat_codegen_program_factory.cpp: `cb_depth = 2 * max(READ_BATCH, WRITE_BATCH)`
REPEAT_CB_PAGES = 8
#: copy_program_factory.cpp `round_up_to_mul32`: copy CB pages are 32-B aligned
COPY_PAGE_ALIGNMENT = 32


@dataclass(frozen=True, slots=True)
class SliceAttrs:
    """ttnn.slice: begins and ends per dimension, steps (1: contiguous)."""

    begins: tuple[int, ...]
    ends: tuple[int, ...]
    steps: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class RepeatAttrs:
    """ttnn.repeat: repetitions per dimension (as `repeat_dims`)."""

    repeats: tuple[int, ...]


def _work_cores(units: int, target: OpTarget) -> CoreRangeSet:
    """The cores `split_work_to_cores` gives work to (the grid's first, row-wise)."""
    used, _ = split_work(max(units, 1), target.num_cores)
    gx, gy = target.grid
    return CoreRangeSet.from_count(used, gx, gy)


def plan_slice(kind: OpKind, req: OpRequest, attrs: SliceAttrs) -> OpPlan:
    """ttnn.slice of an interleaved TILE tensor (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    rank = len(x.shape)
    require(len(attrs.begins) == rank == len(attrs.ends), op, f"begins and ends for each of {rank} dimensions")
    steps = attrs.steps or (1,) * rank
    require(all(s >= 1 for s in steps), op, "steps are >= 1")
    require(not x.memory.layout.sharded and not req.out.sharded, op, "sharded slices are not modelled")
    if x.layout is Layout.ROW_MAJOR:
        require(all(s == 1 for s in steps), op, "a strided row-major slice is not modelled "
                "(slice_program_factory_rm_stride.cpp)")
        return _slice_row_major(op, x, attrs, req)
    shape = tuple(max(0, math.ceil((min(e, d) - b) / s))
                  for b, e, s, d in zip(attrs.begins, attrs.ends, steps, x.shape))
    require(all(d >= 1 for d in shape), op, f"the slice {attrs.begins}:{attrs.ends} of {list(x.shape)} is empty")
    out_dtype = req.out.dtype or x.dtype
    out = TensorSpec(shape, out_dtype, Layout.TILE, req.out.memory())
    ht, wt = tiles_of(out)
    cores = _work_cores(ht * wt, req.target)
    program = Program("SliceTileProgramFactory", SLICE_SOURCE, cores,
                      (cbuf(0, "src0", 2, x.dtype.tile_bytes, cores),))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


#: slice_program_factory_rm.cpp MAX_READ_SIZE
RM_SLICE_MAX_READ = 4096


def merge_num_sticks_to_read(sticks: int, stick_bytes: int, max_read: int) -> int:
    """work_split.cpp: the reads of the largest size (a multiple of the stick, at most
    `max_read`) that divides the sticks' bytes."""
    total = sticks * stick_bytes
    reads = sticks
    size = stick_bytes
    while size <= max_read:
        if total % size == 0:
            reads = total // size
        size += stick_bytes
    return reads


def _slice_row_major(op: str, x: TensorSpec, attrs: SliceAttrs, req: OpRequest) -> OpPlan:
    """SliceRmProgramFactory (see the module docstring)."""
    shape = tuple(min(e, d) - b for b, e, d in zip(attrs.begins, attrs.ends, x.shape))
    require(all(d >= 1 for d in shape), op, f"the slice {attrs.begins}:{attrs.ends} of {list(x.shape)} is empty")
    out = TensorSpec(shape, req.out.dtype or x.dtype, Layout.ROW_MAJOR, req.out.memory())
    target = req.target
    sticks = math.prod(shape[:-1])
    used, per_core = split_work(sticks, target.num_cores)
    cores = CoreRangeSet.from_count(max(used, 1), *target.grid)
    src_align = target.alignment(x.memory.buffer_type)
    single = max(src_align, target.alignment(out.memory.buffer_type))
    elem = x.dtype.element_bytes
    row = shape[-1] * elem
    misaligned = (attrs.begins[-1] * elem) % src_align != 0
    page = -(-row // (2 * single if misaligned else single)) * (2 * single if misaligned else single)
    stride = -(-row // single) * single
    padded = -(-per_core // TILE) * TILE
    per_barrier = padded // merge_num_sticks_to_read(padded, stride, RM_SLICE_MAX_READ)
    program = Program("SliceRmProgramFactory", DM_DIR + "slice/device/slice_program_factory_rm.cpp", cores,
                      (cbuf(0, "src0", per_barrier * 2, page, cores),))
    return OpPlan(op, (program,), (out,), output_buffers((out,), target, 0))


def plan_repeat(kind: OpKind, req: OpRequest, attrs: RepeatAttrs) -> OpPlan:
    """ttnn.repeat of an interleaved TILE tensor with whole-tile H and W."""
    (x,) = req.inputs
    op = kind.value
    reps = (1,) * (len(x.shape) - len(attrs.repeats)) + tuple(attrs.repeats)
    require(len(reps) == len(x.shape) and all(r >= 1 for r in reps), op,
            f"repeats {list(attrs.repeats)} for a rank-{len(x.shape)} tensor")
    require(not x.memory.layout.sharded and not req.out.sharded, op, "sharded repeats are not modelled")
    if not (x.layout is Layout.TILE and len(x.shape) >= 2 and x.shape[-1] % TILE == 0 and x.shape[-2] % TILE == 0):
        return _repeat_row_major(op, x, reps, req)
    shape = list(x.shape)
    programs: list[Program] = []
    buffers: list[DeviceBuffer] = []
    current = x
    steps = [d for d in range(len(reps) - 1, -1, -1) if reps[d] != 1]
    if not steps:
        out = TensorSpec(x.shape, x.dtype, x.layout, x.memory)
        return OpPlan(op, (), (out,), ())
    for n, d in enumerate(steps):
        shape[d] *= reps[d]
        last = n == len(steps) - 1
        memory = req.out.memory() if last else x.memory
        spec = TensorSpec(tuple(shape), x.dtype, Layout.TILE, memory)
        ht, wt = tiles_of(spec)
        cores = _work_cores(ht * wt, req.target)
        programs.append(Program("RepeatCodegenProgramFactory", REPEAT_SOURCE, cores,
                                (cbuf(0, "pages", REPEAT_CB_PAGES, current.dtype.tile_bytes, cores),)))
        if not last:
            buffers.append(tensor_buffer(f"repeat{n}", BufferRole.INTERMEDIATE, spec, req.target, (n, n + 1)))
        current = spec
    buffers.append(tensor_buffer("output0", BufferRole.OUTPUT, current, req.target,
                                 (len(programs) - 1, len(programs) - 1)))
    return OpPlan(op, tuple(programs), (current,), tuple(buffers))


@dataclass(frozen=True, slots=True)
class RepeatInterleaveAttrs:
    """ttnn.repeat_interleave: each slice along `dim` repeated `repeats` times."""

    repeats: int
    dim: int


#: repeat_program_factory_common.hpp `READ_ALIGNMENT`
READ_ALIGNMENT = 64
RM_REPEAT_SOURCE = DM_DIR + "repeat/device/repeat_program_factory_higher_dim.cpp"


def _repeat_row_major(op: str, x: TensorSpec, reps: tuple[int, ...], req: OpRequest) -> OpPlan:
    """The row-major path (see the module docstring)."""
    from tileplan.targets.tenstorrent.ops.tt_layout import tilize_program, untilize_program

    require(not x.dtype.block_float, op, f"{x.dtype.value} has no row-major form")
    target = req.target
    grid = target.grid_range()
    programs: list[Program] = []
    buffers: list[DeviceBuffer] = []
    current = x
    if x.layout is Layout.TILE:
        programs.append(untilize_program(x, x.dtype, target))
        current = TensorSpec(x.shape, x.dtype, Layout.ROW_MAJOR, x.memory)
        buffers.append(tensor_buffer("untilized", BufferRole.INTERMEDIATE, current, target, (0, 1)))
    shape = list(x.shape)
    page = x.shape[-1] * x.dtype.element_bytes
    for n, d in enumerate(d for d in range(len(reps) - 1, -1, -1) if reps[d] != 1):
        shape[d] *= reps[d]
        if d == len(shape) - 1:
            page = shape[-1] * x.dtype.element_bytes
        k = len(programs)
        programs.append(Program("RepeatProgramFactory", RM_REPEAT_SOURCE, grid, (
            cbuf(0, "src0", 1, 2 * READ_ALIGNMENT + page, grid), cbuf(1, "src1", 1, 2 * READ_ALIGNMENT + page, grid))))
        current = TensorSpec(tuple(shape), x.dtype, Layout.ROW_MAJOR, x.memory)
        buffers.append(tensor_buffer(f"repeat{n}", BufferRole.INTERMEDIATE, current, target, (k, k + 1)))
    last = len(programs)
    if x.layout is Layout.TILE:
        programs.append(tilize_program(current, x.dtype, target))
        out = TensorSpec(tuple(shape), x.dtype, Layout.TILE, req.out.memory())
    else:
        buffers.pop()  # the last repeat's output is the operation's
        last -= 1
        out = TensorSpec(tuple(shape), x.dtype, Layout.ROW_MAJOR, req.out.memory())
    buffers.append(tensor_buffer("output0", BufferRole.OUTPUT, out, target, (last, last)))
    return OpPlan(op, tuple(programs), (out,), tuple(buffers))


def plan_repeat_interleave(kind: OpKind, req: OpRequest, attrs: RepeatInterleaveAttrs) -> OpPlan:
    """ttnn.repeat_interleave as its composite runs (see the module docstring)."""
    (x,) = req.inputs
    rank = len(x.shape)
    require(-rank <= attrs.dim < rank and attrs.repeats >= 1, kind.value,
            f"dim {attrs.dim} of a rank-{rank} tensor, repeats >= 1")
    d = attrs.dim % rank
    require(d < rank - 1, kind.value, "repeating along the last dimension is not modelled")
    unsqueezed = TensorSpec(x.shape[:d + 1] + (1,) + x.shape[d + 1:], x.dtype, x.layout, x.memory)
    reps = tuple(attrs.repeats if i == d + 1 else 1 for i in range(rank + 1))
    inner = plan_repeat(OpKind.REPEAT, OpRequest((unsqueezed,), req.out, req.target, req.compute),
                        RepeatAttrs(reps))
    shape = x.shape[:d] + (x.shape[d] * attrs.repeats,) + x.shape[d + 1:]
    out = TensorSpec(shape, inner.outputs[0].dtype, inner.outputs[0].layout, inner.outputs[0].memory)
    buffers = tuple(replace(b, spec=out) if b.spec is inner.outputs[0] else b for b in inner.buffers)
    return OpPlan(kind.value, inner.programs, (out,), buffers)
