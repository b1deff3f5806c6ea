"""ttnn's generic reductions (`ttnn.sum`, `ttnn.mean`, `ttnn.max`, `ttnn.min`) as
tt-metal's ttnn/cpp/ttnn/operations/reduction/generic/generic_reductions.cpp `reduce`
runs them.

A TILE input whose last two logical dimensions are not whole tiles first has its tile
padding filled in place (`ttnn::fill_implicit_tile_padding`, tt-metal PR #16925:
fill_pad_program_factory.cpp, c_0 of two face rows; no new buffer). Then:

* **Over the last two dimensions only** (W: the last, H: the one before): W
  (reduce_op_multi_core_w_program_factory.cpp: input 2 tiles, scaler c_2 2 bf16 tiles,
  output c_3 2 tiles), H (reduce_op_multi_core_h_program_factory.cpp: input 2, scaler 1,
  output 2; a width-sharded input and output add the input shard bound to c_1 and bind
  the output), or W then H into an interleaved tensor of the output's buffer type.
* **A bfloat16 or bfloat8_b sum over outer dimensions** (`call_fast_nc`,
  `non_height_width_reduce`, since PR #18603): `fast_reduce_nc` reduces the outer
  dimensions one program each, from the highest down, each output the input's padded
  shape with that dimension 1
  (experimental/reduction/fast_reduce_nc/device/fast_reduce_nc_program_factory.cpp: c_0
  2 x g input tiles, g the largest of 8..2 dividing the dimension, else 1; c_1 one bf16
  zero tile; c_24 the float32 accumulator; c_16 2 output tiles; on the first
  `split_work_to_cores(grid, output tiles)` cores row-wise). A `ttnn::slice` back to
  the logical shape runs when the padding grew it (SliceTileProgramFactory: every
  tile copied), then the H / W reduce of what is left. By build (`SumPrecision`):
  every stage in the input's type, or (PR #43367) float32 between the stages when the
  sum spans several dimensions but not all, the last stage packing bfloat16.
* **Anything else over outer dimensions** (a mean, a max or min, a float32 sum):
  `reduce_nd_loop` takes the dimensions from the last down, one reduce each (W or H,
  keepdim); an outer dimension is first swapped with H by `ttnn::transpose` (the HC
  factory, or a permute), reduced over H and swapped back. A mean sums so and scales
  once (`MeanScale`): in the first step's scaler (PR #28869), or before it by a
  `ttnn::mul_sfpu(1 / volume)` after the loop.

Every intermediate is interleaved in the output's buffer type and lives from the
program that writes it to the one that reads it. An outer dimension of extent 1 is no
work and is left out. Worked example (mid 2026): the sum of [1, 56, 56, 384] bf16 over
[1, 2] fills the padding (56 -> 64), reduces dimension 1 by fast_reduce_nc (g 8: c_0 16
tiles; 24 output tiles on 24 cores) to a float32 [1, 1, 64, 384], slices it to [1, 1,
56, 384] and reduces H to [1, 1, 1, 384] bf16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import (
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    TensorSpec,
)
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
    split_work,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import TransposeAttrs, fill_pad_program, plan_transpose
from tileplan.targets.tenstorrent.ops.tt_eltwise import plan_unary
from tileplan.targets.tenstorrent.ops.tt_tm import SliceAttrs, plan_slice
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up
from tileplan.targets.tenstorrent.versions import MeanScale, SumPrecision

GENERIC_DIR = "ttnn/cpp/ttnn/operations/reduction/generic/device/"
REDUCE_W_SOURCE = GENERIC_DIR + "reduce_op_multi_core_w_program_factory.cpp"
REDUCE_H_SOURCE = GENERIC_DIR + "reduce_op_multi_core_h_program_factory.cpp"
FAST_NC_SOURCE = ("ttnn/cpp/ttnn/operations/experimental/reduction/fast_reduce_nc/device/"
                  "fast_reduce_nc_program_factory.cpp")
REDUCE_KINDS = frozenset({OpKind.SUM, OpKind.MEAN, OpKind.MAX, OpKind.MIN})
#: generic_reductions.cpp `call_fast_nc`: the data types fast_reduce_nc sums
FAST_NC_TYPES = frozenset({DataType.BFLOAT16, DataType.BFLOAT8_B})
#: fast_reduce_nc_program_factory.cpp: the largest input granularity tried
MAX_GRANULARITY = 8


@dataclass(frozen=True, slots=True)
class ReduceAttrs:
    """The dimensions reduced (negative from the end), keepdim, and the build's
    behaviour over several dimensions."""

    dims: tuple[int, ...]
    keepdim: bool = True
    sum_precision: SumPrecision = SumPrecision.FP32_CHAIN
    mean_scale: MeanScale = MeanScale.FIRST_STEP


@dataclass(frozen=True, slots=True)
class _Stage:
    """Programs of one step, the tensor the step leaves (None: in place) and its name
    as an intermediate."""

    programs: tuple[Program, ...]
    out: TensorSpec | None
    label: str = ""


def _reduce_w(x: TensorSpec, out_dtype: DataType, grid: CoreRange) -> Program:
    """reduce_op_multi_core_w_program_factory.cpp: input 2, scaler (bf16) 2, output 2."""
    return Program("ReduceMultiCoreWProgramFactory", REDUCE_W_SOURCE, grid, (
        cbuf(0, "src0", 2, x.dtype.tile_bytes, grid),
        cbuf(2, "scaler", 2, DataType.BFLOAT16.tile_bytes, grid),
        cbuf(3, "output", 2, out_dtype.tile_bytes, grid)))


def _reduce_h(x: TensorSpec, out: TensorSpec, grid: CoreRange) -> Program:
    """reduce_op_multi_core_h_program_factory.cpp: input 2, scaler (bf16) 1, output 2;
    width-sharded input and output: the input shard bound to c_1 and the output bound."""
    ws = x.memory.layout is MemoryLayout.WIDTH_SHARDED and out.memory.layout is MemoryLayout.WIDTH_SHARDED
    cores: CoreRange | CoreRangeSet = grid
    cbs = [cbuf(0, "src0", 2, x.dtype.tile_bytes, grid)]
    if ws:
        assert x.memory.shard is not None and out.memory.shard is not None
        cores = x.memory.shard.grid
        cbs = [cbuf(0, "src0", 2, x.dtype.tile_bytes, cores),
               cbuf(1, "src1", x.shard_pages(), x.dtype.tile_bytes, cores, globally_allocated=True)]
    cbs.append(cbuf(2, "scaler", 1, DataType.BFLOAT16.tile_bytes, cores))
    cbs.append(cbuf(3, "output", out.shard_pages() if ws else 2, out.dtype.tile_bytes, cores,
                    globally_allocated=ws))
    return Program("ReduceMultiCoreHProgramFactory", REDUCE_H_SOURCE, cores, tuple(cbs))


def _with(shape: tuple[int, ...], dtype: DataType, memory: MemoryConfig) -> TensorSpec:
    return TensorSpec(shape, dtype, Layout.TILE, memory)


def _one(shape: tuple[int, ...], dim: int) -> tuple[int, ...]:
    return shape[:dim] + (1,) + shape[dim + 1:]


def _fast_nc(x: TensorSpec, dim: int, out_dtype: DataType, precision: SumPrecision, req: OpRequest,
             memory: MemoryConfig) -> _Stage:
    """One `prim::fast_reduce_nc` of dimension `dim` (see the module docstring): its
    output is `x`'s padded shape with `dim` 1."""
    padded = x.shape[:-2] + (round_up(x.shape[-2], TILE), round_up(x.shape[-1], TILE))
    extent = padded[dim]
    granularity = next((g for g in range(MAX_GRANULARITY, 1, -1) if extent % g == 0), 1)
    out = _with(_one(padded, dim), out_dtype, memory)
    used, _ = split_work(math.prod(out.shape) // (TILE * TILE), req.target.num_cores)
    gx, gy = req.target.grid
    cores = CoreRangeSet.from_count(used, gx, gy)
    acc = (DataType.FLOAT32.tile_bytes if precision is SumPrecision.FP32_CHAIN
           else 2 * out_dtype.tile_bytes)  # @b9dd0672: `single_tile_size * 2` with fp32 accumulation
    program = Program("FastReduceNCProgramFactory", FAST_NC_SOURCE, cores, (
        cbuf(0, "input", 2 * granularity, x.dtype.tile_bytes, cores),
        cbuf(1, "zero", 1, DataType.BFLOAT16.tile_bytes, cores),
        cbuf(24, "accumulator", 1, acc, cores),
        cbuf(16, "output", 2, out_dtype.tile_bytes, cores)))
    return _Stage((program,), out, f"reduced_{dim}")


def _hw_stages(x: TensorSpec, w: bool, h: bool, out: TensorSpec, mid_dtype: DataType, grid: CoreRange,
               memory: MemoryConfig) -> list[_Stage]:
    """W, H, or W then H (into `mid_dtype`), the last writing `out`."""
    if w and h:
        mid = _with(x.shape[:-1] + (1,), mid_dtype, memory)
        return [_Stage((_reduce_w(x, mid_dtype, grid),), mid, "reduced_w"), _Stage((_reduce_h(mid, out, grid),), out)]
    if w:
        return [_Stage((_reduce_w(x, out.dtype, grid),), out)]
    return [_Stage((_reduce_h(x, out, grid),), out)]


def _sum_fast_nc(x: TensorSpec, dims: set[int], outer: list[int], out: TensorSpec, attrs: ReduceAttrs,
                 req: OpRequest, memory: MemoryConfig) -> list[_Stage]:
    """A bfloat16 / bfloat8_b sum with outer dimensions: fast_reduce_nc, slice, H / W."""
    rank = len(x.shape)
    w, h = rank - 1 in dims, rank - 2 in dims
    chain = (attrs.sum_precision is SumPrecision.FP32_CHAIN and x.dtype is DataType.BFLOAT16
             and 1 < len(dims) < rank)
    final_nc = (DataType.FLOAT32 if (w or h) else DataType.BFLOAT16) if chain else x.dtype
    between = DataType.FLOAT32 if chain and len(outer) > 1 else x.dtype
    stages: list[_Stage] = []
    cur = x
    for i, d in enumerate(sorted(outer, reverse=True)):
        last = i == len(outer) - 1
        stage = _fast_nc(cur, d, final_nc if last else between, attrs.sum_precision, req, memory)
        stages.append(stage)
        assert stage.out is not None
        cur = stage.out
    logical = x.shape
    for d in outer:
        logical = _one(logical, d)
    if cur.shape != logical:
        sliced = plan_slice(OpKind.SLICE, OpRequest((cur,), OutputRequest.of(memory), req.target),
                            SliceAttrs((0,) * rank, logical))
        stages.append(_Stage(sliced.programs, sliced.outputs[0], "sliced"))
        cur = sliced.outputs[0]
    if w or h:
        stages.extend(_hw_stages(cur, w, h, out, DataType.FLOAT32 if chain else out.dtype,
                                 req.target.grid_range(), memory))
    return stages


def _transposed(x: TensorSpec, dim: int, req: OpRequest, memory: MemoryConfig, label: str) -> _Stage:
    plan = plan_transpose(OpKind.TRANSPOSE, OpRequest((x,), OutputRequest.of(memory), req.target),
                          TransposeAttrs(dim, -2))
    return _Stage(plan.programs, plan.outputs[0], label)


def _loop(kind: OpKind, x: TensorSpec, dims: set[int], out: TensorSpec, attrs: ReduceAttrs, req: OpRequest,
          memory: MemoryConfig) -> list[_Stage]:
    """`reduce_nd_loop`: one reduce a dimension, from the last down; an outer one swapped
    with H and back."""
    rank = len(x.shape)
    grid = req.target.grid_range()
    order = sorted(dims, reverse=True)
    rescale = kind is OpKind.MEAN and attrs.mean_scale is MeanScale.RESCALE_AFTER
    stages: list[_Stage] = []
    cur = x
    for i, d in enumerate(order):
        last = i == len(order) - 1 and not rescale
        dtype = out.dtype if last else x.dtype
        if d >= rank - 2:
            step = out if last else _with(_one(cur.shape, d), dtype, memory)
            w = d == rank - 1
            program = _reduce_w(cur, dtype, grid) if w else _reduce_h(cur, step, grid)
            stages.append(_Stage((program,), step, "reduced_w" if w else "reduced_h"))
        else:
            there = _transposed(cur, d, req, memory, f"transposed_{d}")
            assert there.out is not None
            reduced = _with(_one(there.out.shape, rank - 2), x.dtype, memory)
            back = _transposed(reduced, d, req, memory, f"reduced_{d}")
            assert back.out is not None
            stages += [there, _Stage((_reduce_h(there.out, reduced, grid),), reduced, f"reduced_{d}_h"),
                       _Stage(back.programs, out if last else back.out, back.label)]
        stage_out = stages[-1].out
        assert stage_out is not None
        cur = stage_out
    if rescale:
        scaled = plan_unary(OpKind.MUL_SFPU, OpRequest((cur,), OutputRequest.of(out.memory, out.dtype), req.target))
        stages.append(_Stage(scaled.programs, out))
    return stages


def plan_reduce(kind: OpKind, req: OpRequest, attrs: ReduceAttrs) -> OpPlan:
    """ttnn's generic reductions (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    rank = len(x.shape)
    bad = [d for d in attrs.dims if not -rank <= d < rank]
    require(not bad, op, f"dimension(s) {bad} out of range for rank {rank}")
    dims = {d % rank for d in attrs.dims} if attrs.dims else set(range(rank))
    require(x.layout is Layout.TILE, op, "reductions run on TILE tensors")
    dims = {d for d in dims if d >= rank - 2 or x.shape[d] != 1}
    require(bool(dims), op, "no dimension to reduce")
    outer = sorted(d for d in dims if d < rank - 2)
    require(not outer or not (req.out.sharded or x.memory.layout.sharded), op,
            "a reduction over outer dimensions of a sharded tensor is not modelled")
    out_dtype = req.out.dtype or x.dtype
    shape = list(x.shape)
    for d in sorted(dims, reverse=True):
        if attrs.keepdim:
            shape[d] = 1
        else:
            del shape[d]
    out = TensorSpec(tuple(shape) or (1,), out_dtype, Layout.TILE, req.out.memory())
    memory = MemoryConfig(out.memory.buffer_type)
    stages: list[_Stage] = []
    if rank >= 2 and (x.shape[-1] % TILE or x.shape[-2] % TILE):
        stages.append(_Stage((fill_pad_program(x, req),), None))
    if not outer:
        stages += _hw_stages(x, rank - 1 in dims, rank >= 2 and rank - 2 in dims, out, out_dtype,
                             req.target.grid_range(), memory)
    else:
        if kind is OpKind.SUM and x.dtype in FAST_NC_TYPES:
            stages += _sum_fast_nc(x, dims, outer, out, attrs, req, memory)
        else:
            stages += _loop(kind, x, dims, out, attrs, req, memory)
    programs: list[Program] = []
    buffers: list[DeviceBuffer] = []
    written: _Stage | None = None  # the step whose intermediate the next one reads
    start = 0
    for stage in stages:
        programs.extend(stage.programs)
        end = len(programs) - 1
        if written is not None and written.out is not None:
            buffers.append(tensor_buffer(written.label, BufferRole.INTERMEDIATE, written.out, req.target,
                                         (start, end)))
        written, start = (None if stage.out is None or stage.out is out else stage), end
    buffers.extend(output_buffers((out,), req.target, len(programs) - 1))
    return OpPlan(op, tuple(programs), (out,), tuple(buffers))
