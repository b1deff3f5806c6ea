"""Unary and binary eltwise operations: their circular buffers and
outputs, as tt-metal's program factories create them (versions of late 2025, the
tt-metal tt-mlir pinned at f4163c25 for its OpModel tests).

Unary (ttnn/cpp/ttnn/operations/eltwise/unary/device/unary_program_factory.cpp and
unary_sharded_program_factory.cpp): input c_0 and output c_2 of two tiles each when
interleaved; a sharded input and output bind c_0 and c_2 to their shards. HARDSHRINK,
CBRT and LOGIT add a temporary c_1 (two tiles, or one shard's tiles not bound to a
tensor).

Binary (ttnn/cpp/ttnn/operations/eltwise/binary_ng/device/binary_ng_program_factory.cpp,
`BinaryNgDeviceOperation::ProgramFactory::create`; binary_ng_utils.cpp
`is_native_L1_sharding`): a c_0, b c_1, output c_2 of two tiles each (a scalar b: one);
with native L1 sharding (b a tensor of a's shape and memory config, the output sharded,
no DRAM operand, even shards) the three are bound to the shards. An operand with a
pre-activation (`OpConfig::process_lhs` / `process_rhs`) adds a one-tile c_3 / c_4.
(Reductions: ops/tt_reduce.py.)
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import (
    cbuf,
    CircularBuffer,
    OpPlan,
    OpRequest,
    Program,
    output_buffers,
    require,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, padded_height_width

UNARY_SOURCE = "ttnn/cpp/ttnn/operations/eltwise/unary/device/unary_program_factory.cpp"
UNARY_SHARDED_SOURCE = "ttnn/cpp/ttnn/operations/eltwise/unary/device/unary_sharded_program_factory.cpp"
BINARY_SOURCE = "ttnn/cpp/ttnn/operations/eltwise/binary_ng/device/binary_ng_program_factory.cpp"

#: unary ops whose factory creates the temporary c_1 (`HARDSHRINK || CBRT || LOGIT`)
UNARY_WITH_TMP = frozenset({OpKind.HARDSHRINK, OpKind.CBRT, OpKind.LOGIT})

UNARY_KINDS = frozenset({
    OpKind.RELU, OpKind.RELU6, OpKind.SILU, OpKind.GELU, OpKind.SIGMOID, OpKind.HARDSIGMOID, OpKind.CLAMP, OpKind.EXP,
    OpKind.EXPM1, OpKind.LOG, OpKind.LOG1P, OpKind.SQRT, OpKind.RSQRT, OpKind.RECIPROCAL, OpKind.TANH, OpKind.SIN,
    OpKind.COS, OpKind.TAN, OpKind.ATAN, OpKind.ABS, OpKind.NEG, OpKind.SIGN, OpKind.CEIL, OpKind.FLOOR, OpKind.ERF,
    OpKind.ERFC, OpKind.ISFINITE, OpKind.LOGICAL_NOT, OpKind.BITWISE_NOT, OpKind.HARDSHRINK, OpKind.CBRT,
    OpKind.LOGIT, OpKind.TYPECAST, OpKind.LTZ, OpKind.GTZ, OpKind.LEZ, OpKind.MUL_SFPU})

#: binary ops whose `OpConfig` pre-activates (lhs, rhs) (binary_ng_utils.cpp `OpConfig`;
#: the logical ops test their operands with NEZ first, LDEXP raises 2 to b, LOGADDEXP(2)
#: exponentiates both, BIAS_GELU applies GELU to a)
BINARY_PREACTIVATED: dict[OpKind, tuple[bool, bool]] = {
    OpKind.LOGICAL_AND: (True, True), OpKind.LOGICAL_OR: (True, True), OpKind.LOGICAL_XOR: (True, True),
    OpKind.LDEXP: (False, True), OpKind.LOGADDEXP: (True, True), OpKind.LOGADDEXP2: (True, True),
    OpKind.BIAS_GELU: (True, False)}
#: ops whose FPU pre-activation writes its interim in Float16_b (`op_has_exp`)
BINARY_EXP = frozenset({OpKind.LOGADDEXP, OpKind.LDEXP, OpKind.LOGADDEXP2})

BINARY_KINDS = frozenset({
    OpKind.ADD, OpKind.SUBTRACT, OpKind.MULTIPLY, OpKind.DIVIDE, OpKind.MAXIMUM, OpKind.MINIMUM, OpKind.EQ,
    OpKind.NE, OpKind.GT, OpKind.GE, OpKind.LT, OpKind.LE, OpKind.LOGICAL_AND, OpKind.LOGICAL_OR,
    OpKind.LOGICAL_XOR, OpKind.BITWISE_AND, OpKind.BITWISE_OR, OpKind.BITWISE_XOR, OpKind.SQUARED_DIFFERENCE,
    OpKind.LDEXP, OpKind.LOGADDEXP, OpKind.LOGADDEXP2, OpKind.BIAS_GELU, OpKind.POW})



@dataclass(frozen=True, slots=True)
class BinaryAttrs:
    """`scalar`: b is a scalar (one input), not a tensor. `lhs_activation`: an
    activation applied to a first (`input_tensor_a_activations`, as tt-transformers'
    MLP multiplies silu(w1_out) by w3_out), which pre-activates a like the logical ops."""

    scalar: bool = False
    lhs_activation: bool = False


def shard_tiles(shard: ShardSpec) -> int:
    """Tiles of one TILE shard (`shard_spec.numel() / tile_hw`)."""
    return (shard.shape[0] * shard.shape[1]) // (TILE * TILE)


def _same_shape_spec(x: TensorSpec, req: OpRequest, dtype: DataType) -> TensorSpec:
    shard = req.out.shard if req.out.shard is not None else x.memory.shard
    return TensorSpec(x.shape, dtype, x.layout, req.out.memory(shard))


def plan_unary(kind: OpKind, req: OpRequest, attrs: None = None) -> OpPlan:
    """unary_program_factory.cpp `UnaryProgramFactory::create` (interleaved) and
    unary_sharded_program_factory.cpp `UnarySharded...::create` (input and output
    sharded: c_0 and c_2 bound to the shards)."""
    (x,) = req.inputs
    out_dtype = req.out.dtype or x.dtype
    in_sharded, out_sharded = x.memory.layout.sharded, req.out.sharded
    require(in_sharded == out_sharded, kind.value,
            "the unary factories run interleaved to interleaved or sharded to sharded, found "
            f"{x.memory.text()} to {req.out.buffer_type.value.lower()}:{req.out.layout.value}")
    out = _same_shape_spec(x, req, out_dtype)
    cbs: list[CircularBuffer] = []
    if in_sharded:
        assert x.memory.shard is not None and out.memory.shard is not None
        grid: CoreRange | CoreRangeSet = x.memory.shard.grid
        in_pages = x.shard_pages() if x.layout is Layout.TILE else _rm_shard_tiles(x)
        cbs.append(cbuf(0, "src0", in_pages, x.dtype.tile_bytes, grid, globally_allocated=True))
        if kind in UNARY_WITH_TMP:
            cbs.append(cbuf(1, "tmp0", in_pages, x.dtype.tile_bytes, grid))
        cbs.append(cbuf(2, "output", out.shard_pages() if out.layout is Layout.TILE else _rm_shard_tiles(out),
                        out_dtype.tile_bytes, grid, globally_allocated=True))
        program = Program("UnaryShardedProgramFactory", UNARY_SHARDED_SOURCE, grid, tuple(cbs))
    else:
        grid = req.target.grid_range()
        cbs.append(cbuf(0, "src0", 2, x.dtype.tile_bytes, grid))
        if kind in UNARY_WITH_TMP:
            cbs.append(cbuf(1, "tmp0", 2, x.dtype.tile_bytes, grid))
        cbs.append(cbuf(2, "output", 2, out_dtype.tile_bytes, grid))
        program = Program("UnaryProgramFactory", UNARY_SOURCE, grid, tuple(cbs))
    return OpPlan(kind.value, (program,), (out,), output_buffers((out,), req.target, 0))


def _rm_shard_tiles(x: TensorSpec) -> int:
    """A row-major shard in tile-sized CB pages (`shard_bytes / tile_size`)."""
    assert x.memory.shard is not None
    h, w = x.memory.shard.shape
    return (h * w * x.dtype.element_bytes) // x.dtype.tile_bytes


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...], op: str) -> tuple[int, ...]:
    """numpy broadcasting, as binary_ng `compute_broadcasted_output`."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for da, db in zip(pa, pb):
        require(da == db or da == 1 or db == 1, op, f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(max(da, db))
    return tuple(out)


def _is_uneven(x: TensorSpec) -> bool:
    """binary_ng `is_uneven`: the padded tensor is not a whole number of shards."""
    assert x.memory.shard is not None
    h, w = padded_height_width(x.shape, x.layout)
    return h % x.memory.shard.shape[0] != 0 or w % x.memory.shard.shape[1] != 0


def native_l1_sharding(a: TensorSpec, b: TensorSpec | None, req: OpRequest) -> bool:
    """binary_ng_utils.cpp `is_native_L1_sharding` (late 2025): b a tensor of a's shape
    and memory config, the output sharded, shards even, nothing in DRAM, and the
    output's shard grid (when given) a's."""
    if b is None or not req.out.sharded or a.shape != b.shape or a.memory != b.memory:
        return False
    if not a.memory.layout.sharded or _is_uneven(a) or _is_uneven(b):
        return False
    if BufferType.DRAM in (a.memory.buffer_type, b.memory.buffer_type, req.out.buffer_type):
        return False
    assert a.memory.shard is not None
    return req.out.shard is None or req.out.shard.grid == a.memory.shard.grid


def plan_binary(kind: OpKind, req: OpRequest, attrs: BinaryAttrs | None = None) -> OpPlan:
    """binary_ng_program_factory.cpp `BinaryNgDeviceOperation::ProgramFactory::create`:
    a (c_0), b (c_1), output (c_2), two tiles each or bound to the shards under native
    L1 sharding; a pre-activated operand adds a one-tile interim (c_3 for a, c_4 for b)."""
    scalar = attrs is not None and attrs.scalar
    a = req.inputs[0]
    b = None if scalar else req.inputs[1]
    op = kind.value
    shape = a.shape if b is None else broadcast_shape(a.shape, b.shape, op)
    out_dtype = req.out.dtype or a.dtype
    native = native_l1_sharding(a, b, req)
    if req.out.sharded and req.out.shard is None:
        src = a if a.memory.shard is not None else b
        require(src is not None and src.memory.shard is not None, op,
                "a sharded output needs a shard spec or a sharded input to take one from")
        assert src is not None and src.memory.shard is not None
        shard: ShardSpec | None = src.memory.shard
    else:
        shard = req.out.shard
    out = TensorSpec(shape, out_dtype, Layout.TILE, req.out.memory(shard))
    grid: CoreRange | CoreRangeSet = req.target.grid_range()
    lhs, rhs = BINARY_PREACTIVATED.get(kind, (False, False))
    lhs = lhs or (attrs is not None and attrs.lhs_activation)
    interim = DataType.BFLOAT16 if kind in BINARY_EXP else None
    cbs: list[CircularBuffer] = []
    if native:
        assert a.memory.shard is not None and b is not None and out.memory.shard is not None
        grid = a.memory.shard.grid
        cbs.append(cbuf(0, "a", a.shard_pages(), a.dtype.tile_bytes, grid, globally_allocated=True))
    else:
        cbs.append(cbuf(0, "a", 2, a.dtype.tile_bytes, grid))
    if lhs:
        cbs.append(cbuf(3, "a_interim", 1, (interim or a.dtype).tile_bytes, grid))
    b_dtype = b.dtype if b is not None else a.dtype
    if b is None:
        cbs.append(cbuf(1, "b", 1, b_dtype.tile_bytes, grid))
    elif native:
        cbs.append(cbuf(1, "b", b.shard_pages(), b_dtype.tile_bytes, grid, globally_allocated=True))
    else:
        cbs.append(cbuf(1, "b", 2, b_dtype.tile_bytes, grid))
    if rhs:
        cbs.append(cbuf(4, "b_interim", 1, (interim or b_dtype).tile_bytes, grid))
    if native:
        cbs.append(cbuf(2, "c", out.shard_pages(), out_dtype.tile_bytes, grid, globally_allocated=True))
    else:
        cbs.append(cbuf(2, "c", 2, out_dtype.tile_bytes, grid))
    program = Program("BinaryNgProgramFactory", BINARY_SOURCE, grid, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))

