"""The model's elementwise, reduction and data-movement operations as the TTNN operations
tt-mlir emits for them (tt-mlir lib/Conversion/TTIRToTTNN/TTIRToTTNN.cpp
`populateTTIRToTTNNPatterns`: ElementwiseUnary / ElementwiseBinary / Reduction /
Reshape / Permute / Concat / Slice / Repeat conversion patterns; `ttir.transpose` is
canonicalised to `ttir.permute`, lib/Dialect/TTIR/IR/TTIROps.cpp; an expand the model
materialises is a `ttir.broadcast`, lowered to `ttnn.repeat`).

Each function takes the lowering's state and one model operation and adds its TTNN
operations. An operator tt-mlir lowers to a TTNN operation tileplan has no rule for is an
error naming both (`no_rule`), never dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from tileplan.errors import ModelError
from tileplan.model.ir import Operation
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import ConcatAttrs, PadAttrs, PermuteAttrs, ReshapeAttrs
from tileplan.targets.tenstorrent.ops.tt_eltwise import BinaryAttrs, broadcast_shape
from tileplan.targets.tenstorrent.ops.tt_reduce import ReduceAttrs
from tileplan.targets.tenstorrent.ops.tt_ternary import TernaryBroadcast, broadcast_type
from tileplan.targets.tenstorrent.ops.tt_tm import RepeatAttrs, RepeatInterleaveAttrs, SliceAttrs
from tileplan.targets.tenstorrent.ops.tt_accumulation import CumsumAttrs
from tileplan.targets.tenstorrent.ops.tt_argmax import ArgmaxAttrs
from tileplan.targets.tenstorrent.ops.tt_power import PowScalarAttrs
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import ArgmaxLowering, CumsumLowering, WhereBroadcast

Converter = Callable[[Lowering, Operation], None]

UNARY = {"relu": OpKind.RELU, "sigmoid": OpKind.SIGMOID, "silu": OpKind.SILU, "gelu": OpKind.GELU,
         "exp": OpKind.EXP, "log": OpKind.LOG, "sqrt": OpKind.SQRT, "rsqrt": OpKind.RSQRT,
         "reciprocal": OpKind.RECIPROCAL, "tanh": OpKind.TANH, "sin": OpKind.SIN, "cos": OpKind.COS,
         "abs": OpKind.ABS, "neg": OpKind.NEG, "sign": OpKind.SIGN, "ceil": OpKind.CEIL, "floor": OpKind.FLOOR,
         "erf": OpKind.ERF, "not": OpKind.LOGICAL_NOT, "hardsigmoid": OpKind.HARDSIGMOID}
BINARY = {"add": OpKind.ADD, "sub": OpKind.SUBTRACT, "mul": OpKind.MULTIPLY, "div": OpKind.DIVIDE,
          "maximum": OpKind.MAXIMUM, "minimum": OpKind.MINIMUM, "eq": OpKind.EQ, "ne": OpKind.NE, "gt": OpKind.GT,
          "ge": OpKind.GE, "lt": OpKind.LT, "le": OpKind.LE, "and": OpKind.LOGICAL_AND, "or": OpKind.LOGICAL_OR,
          "xor": OpKind.LOGICAL_XOR, "pow": OpKind.POW}
#: binary operators whose result is a truth value (their operands keep their own type)
COMPARISONS = frozenset({"eq", "ne", "gt", "ge", "lt", "le", "and", "or", "xor"})
#: `any` is tt-mlir's reduce_or, a `ttnn.sum` (TTIRToTTIRDecomposition.cpp
#: `ReductionOrTTNNPattern`; `ReductionOrPattern` before 2ef91760c8, 2025-12-19, the same sum)
REDUCE = {"reduce_sum": OpKind.SUM, "reduce_mean": OpKind.MEAN, "reduce_max": OpKind.MAX, "reduce_min": OpKind.MIN,
          "reduce_any": OpKind.SUM}
#: model operators tt-mlir lowers to a TTNN operation tileplan has no rule for
NO_RULE = {"elu": "ttnn.elu", "mish": "ttnn.mish",
           "softplus": "ttnn.softplus", "isnan": "ttnn.isnan", "isinf": "ttnn.isinf",
           "round": "ttnn.round", "mod": "ttnn.remainder",
           "tile": "ttnn.repeat", "argmin": "ttnn.argmin",
           "topk": "ttnn.topk", "sort": "ttnn.sort",
           "gather_nd": "ttnn.gather",
           "log_softmax": "ttnn.log_softmax", "reduce_prod": "ttnn.prod", "reduce_l1": "ttnn.sum",
           "reduce_logsumexp": "ttnn.logsumexp", "reduce_sum_square": "ttnn.sum",
           "reduce_var": "ttnn.var", "reduce_all": "ttnn.min",
           "adaptive_avgpool": "ttnn.adaptive_avg_pool2d",
           "histogram": "ttnn.histogram", "grouped_matmul": "ttnn.sparse_matmul",
           "attention": "ttnn.transformer.scaled_dot_product_attention"}


def no_rule(op: Operation, ttnn_name: str) -> ModelError:
    """The one-line error for a model operation whose TTNN operation has no rule."""
    return ModelError(f"no Tenstorrent rule for {ttnn_name}, which tt-mlir lowers the model's {op.kind} to "
                      "(tileplan.targets.tenstorrent.ops has none: the operation cannot be planned)",
                      f"operation {op.index} ({op.name})")


def per_dim(op: Operation, key: str, default: int, count: int) -> tuple[int, ...]:
    """A window attribute (`strides`, `dilations`) for `count` spatial dimensions: its first
    `count` values, one value for all, or `default` when absent."""
    value = op.attr(key)
    if not isinstance(value, (tuple, list)) or not value:
        return (default,) * count
    return tuple(int(v) for v in value[:count]) if len(value) >= count else (int(value[0]),) * count


def _out(lw: Lowering, op: Operation, layout: Layout = Layout.TILE) -> Value:
    return Value(op.output_shape, lw.dtype(op.output), layout)


def convert_unary(lw: Lowering, op: Operation) -> None:
    unary(lw, op, UNARY[op.kind])


def convert_clamp(lw: Lowering, op: Operation) -> None:
    """A clamp by constant bounds (ReLU6, hardtanh, a clamp_min's epsilon): tt-xla's
    `stablehlo.clamp` becomes `ttir.clamp_tensor` (tt-mlir StableHLOToTTIRPatterns.cpp
    `StableHLOToTTIROpClampOpConversionPattern`), canonicalised with constant bounds to
    `ttir.clamp_scalar` (TTIROps.cpp `ClampTensorOp::getCanonicalizationPatterns`; a
    one-sided clamp arrives with both bounds splat constants, TTIRFusing.cpp's L2-norm
    pattern says), lowered to `ttnn.clamp_scalar` (TTIRToTTNN.cpp
    `ClampOpConversionPattern`), which the runtime runs as `ttnn::clamp(in, min, max)`
    (runtime/lib/ttnn/operations/eltwise/unary/unary_composite.cpp): in tt-metal a unary
    op (unary.cpp `Clamp::invoke`: `UnaryOpType::CLAMP_TSS` through `unary_impl`, the
    unary program factories). tt-mlir fuses no clamp into a convolution (TTNNFusing.cpp
    fuses `ttnn.relu6`, which only minimum(relu(x), 6) becomes). Bounds that are tensors
    are the importers' maximum / minimum, not a clamp."""
    unary(lw, op, OpKind.CLAMP)


def held_input(lw: Lowering, op: Operation) -> int:
    """The elementwise operation's one input as it is held: a convolution's flattened
    NHWC output stays flattened, anything else is read in TILE."""
    src = op.inputs[0]
    return lw.flat_tensor(src, at=op) if src in lw.flat else lw.tensor(src, at=op)


def define_like_input(lw: Lowering, op: Operation, tid: int) -> None:
    """The elementwise operation's result `tid`, held as its input was (`held_input`)."""
    src = op.inputs[0]
    if src in lw.flat:
        lw.define_flat(op, tid, lw.flat[src])
    else:
        lw.define(op, tid)


def require_ternary_where(lw: Lowering, op: Operation) -> None:
    """Builds before 2025-08-01 run ttnn.where as tt-metal's composite: refused."""
    if lw.device.software.where_broadcast is WhereBroadcast.COMPOSITE:
        raise ModelError(f"on the {lw.device.version} build ttnn.where is tt-metal's composite of five programs (gtz, "
                         "lez, two multiplies, an add), which is not modelled; builds from 2025-08-01 run the ternary "
                         "program (--tt-version)", f"operation {op.index} ({op.name})")


def unary(lw: Lowering, op: Operation, kind: OpKind) -> None:
    """A unary eltwise TTNN operation `kind` on the model operation's one input."""
    x = held_input(lw, op)
    out = lw.value(x).with_(dtype=lw.dtype(op.output))
    define_like_input(lw, op, lw.builder.one(kind, op.name, (x,), out, out=OutputRequest(dtype=out.dtype),
                                             **lw.where(op)))


def _per_channel(shape: tuple[int, ...], channels: int) -> bool:
    """A constant that broadcasts per channel over [N, C, H, W] (or is a scalar)."""
    dims = [d for d in shape]
    while dims and dims[0] == 1 and len(dims) > 3:
        dims.pop(0)
    return all(d == 1 for d in shape) or (len(dims) == 3 and dims[0] == channels and dims[1:] == [1, 1])


def _binary_flat(lw: Lowering, op: Operation) -> bool:
    """A binary operation on convolution outputs held flattened: the other operand is
    flattened alike, or a per-channel constant taken as [1, 1, 1, C] (tt-mlir commutes the
    TMs through elementwise operations: TTIREraseInverseOps)."""
    flat = [i for i in op.inputs if i in lw.flat]
    if not flat:
        return False
    dims = lw.flat[flat[0]]
    if any(lw.flat[i] != dims for i in flat):
        return False
    others = [i for i in op.inputs if i not in lw.flat]
    if any(not lw.is_constant(i) or not _per_channel(lw.shapes[i], dims[3]) for i in others):
        return False
    out_dtype = lw.dtype(op.output)
    operand = None if op.kind in COMPARISONS else out_dtype
    tids = []
    for name in op.inputs:
        if name in lw.flat:
            tids.append(lw.flat_tensor(name, at=op))
        else:
            size = dims[3] if any(d != 1 for d in lw.shapes[name]) else 1
            tids.append(lw.constant_form(name, Layout.TILE, operand or lw.dtype(name), shape=(1, 1, 1, size)))
    if operand is not None:
        tids = [lw.convert(t, None, operand, op, op.name) for t in tids]
    out = lw.value(tids[0]).with_(dtype=out_dtype)
    attrs = BinaryAttrs(True) if len(tids) == 1 else None
    tid = lw.builder.one(BINARY[op.kind], op.name, tuple(tids), out, out=OutputRequest(dtype=out_dtype), attrs=attrs,
                         **lw.where(op))
    lw.define_flat(op, tid, dims)
    return True


def convert_binary(lw: Lowering, op: Operation) -> None:
    kind = BINARY[op.kind]
    if _binary_flat(lw, op):
        return
    out = _out(lw, op)
    operand = None if op.kind in COMPARISONS else out.dtype
    if len(op.inputs) == 1:
        x = lw.tensor(op.inputs[0], dtype=operand, at=op)
        tid = lw.builder.one(kind, op.name, (x,), out, out=OutputRequest(dtype=out.dtype), attrs=BinaryAttrs(True),
                             **lw.where(op))
    else:
        a = lw.tensor(op.inputs[0], dtype=operand, at=op)
        b = lw.tensor(op.inputs[1], dtype=operand or lw.value(a).dtype, at=op)
        tid = lw.builder.one(kind, op.name, (a, b), out, out=OutputRequest(dtype=out.dtype), **lw.where(op))
    lw.define(op, tid)


def reduce_attrs(lw: Lowering, dims: tuple[int, ...], keepdim: bool) -> ReduceAttrs:
    """A reduction's attributes with the build's behaviour over several dimensions."""
    software = lw.device.software
    return ReduceAttrs(dims, keepdim, software.sum_precision, software.mean_scale)


def convert_reduce(lw: Lowering, op: Operation) -> None:
    x = lw.tensor(op.inputs[0], at=op)
    rank = len(lw.shapes[op.inputs[0]])
    axes = op.attr("axes")
    dims = tuple(axes) if isinstance(axes, (tuple, list)) else tuple(range(rank))
    attrs = reduce_attrs(lw, dims, bool(op.attr("keepdims", False)))
    out = _out(lw, op)
    lw.define(op, lw.builder.one(REDUCE[op.kind], op.name, (x,), out, out=OutputRequest(dtype=out.dtype),
                                 attrs=attrs, compute=lw.options.compute(), **lw.where(op)))


def convert_cast(lw: Lowering, op: Operation) -> None:
    """A cast to the type the value already has in TTNN is nothing; otherwise a typecast
    (consecutive typecasts are canonicalised away by tt-mlir)."""
    src = op.inputs[0]
    want = lw.dtype(op.output)
    if src in lw.tensor_of or not lw.is_constant(src):
        lw.define(op, lw.tensor(src, layout=None, dtype=want, at=op))
    else:
        lw.define(op, lw.tensor(src, dtype=want, at=op))


def convert_alias(lw: Lowering, op: Operation) -> None:
    """identity, alias, restore: the output is the input's tensor."""
    lw.define(op, lw.tensor(op.inputs[0], layout=None, at=op))


def convert_reshape(lw: Lowering, op: Operation) -> None:
    src = lw.tensor(op.inputs[0], layout=None, at=op)
    v = lw.value(src)
    if v.layout is Layout.ROW_MAJOR and (not v.shape or not op.output_shape or v.shape[-1] != op.output_shape[-1]):
        src = lw.convert(src, Layout.TILE, None, op, op.inputs[0])
        v = lw.value(src)
    out = Value(op.output_shape, v.dtype, v.layout)
    lw.define(op, lw.builder.one(OpKind.RESHAPE, op.name, (src,), out, attrs=ReshapeAttrs(op.output_shape),
                                 **lw.where(op)))


def convert_permute(lw: Lowering, op: Operation) -> None:
    x = lw.tensor(op.inputs[0], at=op)
    perm = op.ints_attr("perm")
    if perm == tuple(range(len(perm))):
        lw.define(op, x)
        return
    out = Value(op.output_shape, lw.value(x).dtype)
    lw.define(op, lw.builder.one(OpKind.PERMUTE, op.name, (x,), out, attrs=PermuteAttrs(perm), **lw.where(op)))


def convert_concat(lw: Lowering, op: Operation) -> None:
    dtype = lw.dtype(op.output)
    xs = tuple(lw.tensor(i, dtype=dtype, at=op) for i in op.inputs)
    out = _out(lw, op)
    lw.define(op, lw.builder.one(OpKind.CONCAT, op.name, xs, out, attrs=ConcatAttrs(op.int_attr("axis")),
                                 **lw.where(op)))


def convert_slice(lw: Lowering, op: Operation) -> None:
    x = lw.tensor(op.inputs[0], at=op)
    shape = lw.shapes[op.inputs[0]]
    rank = len(shape)
    axis = op.int_attr("axis") % rank
    start = op.int_attr("start", 0)
    end = op.attr("end")
    stop = shape[axis] if end is None else min(int(end), shape[axis])  # type: ignore[call-overload]
    step = op.int_attr("step", 1)
    begins = tuple(start if d == axis else 0 for d in range(rank))
    ends = tuple(stop if d == axis else shape[d] for d in range(rank))
    steps = tuple(step if d == axis else 1 for d in range(rank))
    out = Value(op.output_shape, lw.value(x).dtype)
    lw.define(op, lw.builder.one(OpKind.SLICE, op.name, (x,), out, attrs=SliceAttrs(begins, ends, steps),
                                 **lw.where(op)))


def convert_expand(lw: Lowering, op: Operation) -> None:
    """A materialised broadcast: `ttnn.repeat` of the input (reshaped to the output's
    rank first when the expand adds dimensions)."""
    x = lw.tensor(op.inputs[0], at=op)
    shape = lw.shapes[op.inputs[0]]
    target = op.output_shape
    if len(shape) < len(target):
        shape = (1,) * (len(target) - len(shape)) + shape
        x = lw.builder.one(OpKind.RESHAPE, f"{op.name}.reshape", (x,), Value(shape, lw.value(x).dtype),
                           attrs=ReshapeAttrs(shape), **lw.where(op))
    repeats = tuple(t // s for s, t in zip(shape, target))
    out = Value(target, lw.value(x).dtype)
    lw.define(op, lw.builder.one(OpKind.REPEAT, op.name, (x,), out, attrs=RepeatAttrs(repeats), **lw.where(op)))


def convert_repeat_interleave(lw: Lowering, op: Operation) -> None:
    """fusion.py's repeat_interleave (grouped-query attention's repeated K / V heads)."""
    x = lw.tensor(op.inputs[0], at=op)
    attrs = RepeatInterleaveAttrs(op.int_attr("repeats"), op.int_attr("dim"))
    out = Value(op.output_shape, lw.value(x).dtype)
    lw.define(op, lw.builder.one(OpKind.REPEAT_INTERLEAVE, op.name, (x,), out, attrs=attrs, **lw.where(op)))


def _shaped(lw: Lowering, name: str, tid: int, shape: tuple[int, ...], op: Operation) -> int:
    """Computed value `tid` (model value `name`) in `shape`: a `ttnn.reshape` to its rank
    (stablehlo.broadcast_in_dim's unsqueeze) and a `ttnn.repeat` to its extent, each
    only where needed."""
    v = lw.value(tid)
    if len(v.shape) != len(shape):
        ranked = (1,) * (len(shape) - len(v.shape)) + v.shape
        tid = lw.builder.one(OpKind.RESHAPE, f"{name}.reshape", (tid,), v.with_(shape=ranked),
                             attrs=ReshapeAttrs(ranked), **lw.where(op))
        v = lw.value(tid)
    if v.shape != shape:
        repeats = tuple(t // s for s, t in zip(v.shape, shape))
        tid = lw.builder.one(OpKind.REPEAT, f"{name}.repeat", (tid,), v.with_(shape=shape),
                             attrs=RepeatAttrs(repeats), **lw.where(op))
    return tid


def convert_where(lw: Lowering, op: Operation) -> None:
    """`torch.where` / `masked_fill`: tt-xla's `stablehlo.select` is `ttir.where`
    (StableHLOToTTIRPatterns.cpp, a one-to-one pattern), `ttnn.where` of three tensors
    (TTIRToTTNN.cpp `ElementwiseOpConversionPattern`; ops/tt_ternary.py). The operands
    reach it at the result's rank (torch-xla broadcasts each with `broadcast_in_dim`:
    a reshape, then a `ttir.broadcast` the implicit-broadcast fold removes). By the
    build's `where_broadcast` (devices/software.toml):

    * `explicit` (2025-08-01 on): tt-mlir's workaround repeats every operand of another
      shape to the result's (`ExplicateOperandBroadcastsRewritePattern`); a scalar is a
      `ttnn.full` of the result's shape, and a constant operand's reshape and repeat are
      const-eval (hoisted: `ConstEvalHoistTransform`), so it is uploaded at full size;
      equal fulls (one value, shape and type) are one, read by every where that needs it
      (MLIR's CSE, TTNNPipelines.cpp `createCSEPass`: a full is pure);
    * `implicit` (2026-03-23 on): the operands keep their shapes and tt-metal
      broadcasts; a scalar is a volume-1 `ttnn.full` (TTIRFoldFullToScalar);
    * `composite` (before): tt-metal's five-program composite, refused here.

    Data types (TTNNWorkaroundsPass.cpp `createWhereOpOperandsWorkarounds`): the
    predicate is cast to the values' type; integer values run in float32, the result
    cast back. The scalar of the importers' `where(c, x, scalar)` is the false value."""
    require_ternary_where(lw, op)
    rule = lw.device.software.where_broadcast
    out_shape = op.output_shape
    out_dtype = lw.dtype(op.output)
    work = out_dtype if out_dtype in (DataType.BFLOAT16, DataType.FLOAT32) or out_dtype.block_float \
        else DataType.FLOAT32
    value = op.attr("scalar")
    scalar = float(value) if isinstance(value, (int, float)) else None
    names = list(op.inputs)
    operands: list[int] = []
    for name in names:
        if lw.is_constant(name) and name not in lw.tensor_of:
            shape = out_shape if rule is WhereBroadcast.EXPLICIT else \
                (1,) * (len(out_shape) - len(lw.shapes[name])) + lw.shapes[name]
            operands.append(lw.constant_form(name, Layout.TILE, work, shape=shape))
            continue
        tid = lw.tensor(name, dtype=work, at=op)
        target = out_shape if rule is WhereBroadcast.EXPLICIT else \
            (1,) * (len(out_shape) - len(lw.value(tid).shape)) + lw.value(tid).shape
        operands.append(_shaped(lw, name, tid, target, op))
    if scalar is not None:
        shape = out_shape if rule is WhereBroadcast.EXPLICIT else (1,) * len(out_shape)
        operands.append(lw.constant_form(f"full={scalar:g}", Layout.TILE, work, shape=shape))
    out = Value(out_shape, work)
    shapes = [lw.value(t).shape for t in operands]
    if rule is WhereBroadcast.IMPLICIT and broadcast_type(*shapes) is TernaryBroadcast.INVALID:
        tid = _where_composite(lw, op, operands, out)
    else:
        tid = lw.builder.one(OpKind.WHERE, op.name, tuple(operands), out, out=OutputRequest(dtype=work),
                             **lw.where(op))
    lw.define(op, lw.convert(tid, None, out_dtype, op, op.name) if work is not out_dtype else tid)


def _where_composite(lw: Lowering, op: Operation, operands: list[int], out: Value) -> int:
    """tt-metal's `where` of three tensors whose shapes make an INVALID_BCAST
    (ternary.cpp `invoke_impl` TTT: `ternary_utils::where_impl`, "Where Legacy"):
    `add(multiply(gtz(p), t), multiply(lez(p), f))`, each a broadcasting binary_ng or
    unary program, evaluated left to right. Its temporaries live to the end of the C++
    expression; here each is freed after its last reader (the two products, the large
    ones, are read by the add)."""
    b = lw.builder
    where = lw.where(op)
    pred, true, false = operands
    req = OutputRequest(dtype=out.dtype)

    def product(tag: str, test: OpKind, value: int) -> int:
        mask = b.one(test, f"{op.name}.{tag}", (pred,), lw.value(pred), **where)
        shape = broadcast_shape(lw.value(mask).shape, lw.value(value).shape, op.name)
        return b.one(OpKind.MULTIPLY, f"{op.name}.{tag}_mul", (mask, value), out.with_(shape=shape), out=req, **where)

    kept = product("gtz", OpKind.GTZ, true)
    dropped = product("lez", OpKind.LEZ, false)
    return b.one(OpKind.ADD, op.name, (kept, dropped), out, out=req, **where)


def convert_cumsum(lw: Lowering, op: Operation) -> None:
    """`torch.cumsum`: tt-xla's `stablehlo.reduce_window` of an add (torch-xla
    `BuildCumulativeComputation`), `ttir.cumsum` (StableHLOToTTIRPatterns.cpp `isCumSum`),
    by the build's `cumsum_lowering` (devices/software.toml):

    * `moreh_rank4` (2025-07 to 2026-03-17): `ttnn.moreh_cumsum` between tt-mlir's
      workarounds (TTNNWorkaroundsPatterns.cpp: `CumSumOpRankRewritePattern` reshapes a
      rank below 4 by appending 1s, `[B, S]` to `[B, S, 1, 1]`, one tile an element;
      `CumSumOpDimRewritePattern` swaps a dimension of 2 or more with 0 by `ttnn.permute`),
      each undone after;
    * `native` (2026-03-18 on): `ttnn.cumsum` of the value as it is, with the result's
      data type;
    * `moreh_device` (before): tt-metal's own moreh device operation, refused here.

    The operand is first cast to the result's type (torch's integer promotion; a
    boolean, held bfloat16, becomes int32). ops/tt_accumulation.py prices the scan."""
    sw = lw.device.software
    if sw.cumsum_lowering is CumsumLowering.MOREH_DEVICE:
        raise ModelError(f"on the {lw.device.version} build ttnn.moreh_cumsum is tt-metal's moreh device operation "
                         "(before tt-metal PR #24427), which is not modelled; builds from 2025-07 run ttnn.cumsum "
                         "(--tt-version)", f"operation {op.index} ({op.name})")
    src = op.inputs[0]
    out_dtype = lw.dtype(op.output)
    x = lw.tensor(src, dtype=out_dtype, at=op)
    shape = lw.value(x).shape
    rank = len(shape)
    axis = op.int_attr("axis") % rank
    where = lw.where(op)
    accumulation = sw.accumulation_cbs
    if sw.cumsum_lowering is CumsumLowering.NATIVE:
        out = Value(shape, out_dtype)
        lw.define(op, lw.builder.one(OpKind.CUMSUM, op.name, (x,), out, out=OutputRequest(dtype=out_dtype),
                                     attrs=CumsumAttrs(axis, accumulation), **where))
        return
    b = lw.builder
    shape4 = shape + (1,) * (4 - rank) if rank < 4 else shape
    if shape4 != shape:
        x = b.one(OpKind.RESHAPE, f"{op.name}.reshape", (x,), Value(shape4, out_dtype), attrs=ReshapeAttrs(shape4),
                  **where)
    perm = list(range(len(shape4)))
    if axis >= 2:
        perm[0], perm[axis] = axis, 0
        x = b.one(OpKind.PERMUTE, f"{op.name}.permute", (x,), Value(tuple(shape4[d] for d in perm), out_dtype),
                  attrs=PermuteAttrs(tuple(perm)), **where)
    dim = 0 if axis >= 2 else axis
    tid = b.one(OpKind.MOREH_CUMSUM, op.name, (x,), lw.value(x), attrs=CumsumAttrs(dim, accumulation), **where)
    if axis >= 2:
        tid = b.one(OpKind.PERMUTE, f"{op.name}.permute_back", (tid,), Value(shape4, out_dtype),
                    attrs=PermuteAttrs(tuple(perm)), **where)
    if shape4 != shape:
        tid = b.one(OpKind.RESHAPE, f"{op.name}.reshape_back", (tid,), Value(shape, out_dtype),
                    attrs=ReshapeAttrs(shape), **where)
    lw.define(op, tid)


def convert_pad(lw: Lowering, op: Operation) -> None:
    """A constant pad: tt-xla's `stablehlo.pad` (no interior padding) is `ttir.pad`, then
    `ttnn.pad` with `use_multicore = true` (StableHLOToTTIRPatterns.cpp
    `StableHLOToTTIROpPadOpConversionPattern`, TTIRToTTNN.cpp `PadOpConversionPattern`);
    tt-mlir folds a pad into a pooling or a 3-D convolution only, never into a conv2d
    (TTIRFusing.cpp `PadPoolingFusionPattern`, `PadConv3dFusionPattern`). Padding in
    front of any dimension makes tt-mlir pad row-major (TTNNWorkaroundsPass.cpp
    `createPadOpOperandsWorkarounds`: "tt-metal does not support front padding for tile
    layout"), a TILE input untilized first; padding behind stays TILE. The pad value
    moves no memory. A reflect or edge pad is refused."""
    mode = op.attr("mode", "constant")
    if mode not in (None, "constant"):
        raise ModelError(f"a {mode} pad: tt-mlir lowers constant pads (ttnn.pad) only",
                         f"operation {op.index} ({op.name})")
    src = op.inputs[0]
    rank = len(lw.shapes[src])
    pads = tuple(int(p) for p in op.ints_attr("pads"))
    before, after = pads[:rank], pads[rank:]
    layout = Layout.ROW_MAJOR if any(before) else Layout.TILE
    x = lw.tensor(src, layout=layout, at=op)
    out = Value(op.output_shape, lw.value(x).dtype, layout)
    lw.define(op, lw.builder.one(OpKind.PAD, op.name, (x,), out, attrs=PadAttrs(tuple(zip(before, after))),
                                 **lw.where(op)))


def convert_argmax(lw: Lowering, op: Operation) -> None:
    """`torch.argmax(x, dim)` (CLIP's text pooling over int32 ids): torch-xla's
    `stablehlo.reduce` of the input and an iota, `ttir.argmax` (StableHLOToTTIRPatterns.cpp
    `isArgMax`), `ttnn.argmax` with its workarounds (TTNNWorkaroundsPass.cpp
    `createArgMaxOpOperandsWorkarounds`): the input row-major, the output UINT32
    row-major, converted back to the model's integer TILE tensor. By the build's
    `argmax_lowering` (devices/software.toml): `rank4_single`, the input first reshaped
    to rank 4 and back after (ArgMaxOpRewritePattern), single-core; `single`; `multi`, the
    multi-core factory. Over another dimension than the last (a permute first) or over
    all, refused."""
    src = op.inputs[0]
    rank = len(lw.shapes[src])
    axes = op.attr("axes")
    if not isinstance(axes, (tuple, list)) or len(axes) != 1 or int(axes[0]) % rank != rank - 1:
        raise ModelError(f"an argmax over {axes if axes is not None else 'every dimension'} of a rank-{rank} value: "
                         "the last dimension alone is modelled (tt-mlir permutes another to it first)",
                         f"operation {op.index} ({op.name})")
    rule = lw.device.software.argmax_lowering
    keep = bool(op.attr("keepdims", False))
    where = lw.where(op)
    b = lw.builder
    x = lw.tensor(src, at=op)
    shape = lw.value(x).shape
    if rule is ArgmaxLowering.RANK4_SINGLE and rank < 4:
        shape = (1,) * (4 - rank) + shape
        x = b.one(OpKind.RESHAPE, f"{op.name}.reshape", (x,), lw.value(x).with_(shape=shape),
                  attrs=ReshapeAttrs(shape), **where)
    x = lw.convert(x, Layout.ROW_MAJOR, None, op, src)
    reduced = shape[:-1] + ((1,) if keep else ())
    attrs = ArgmaxAttrs(-1, keep, multicore=rule is ArgmaxLowering.MULTI)
    tid = b.one(OpKind.ARGMAX, op.name, (x,), Value(reduced, DataType.UINT32, Layout.ROW_MAJOR),
                out=OutputRequest(dtype=DataType.UINT32), attrs=attrs, **where)
    tid = lw.convert(tid, Layout.TILE, lw.dtype(op.output), op, op.name)
    if reduced != op.output_shape:
        tid = b.one(OpKind.RESHAPE, f"{op.name}.reshape_back", (tid,), lw.value(tid).with_(shape=op.output_shape),
                    attrs=ReshapeAttrs(op.output_shape), **where)
    lw.define(op, tid)


def convert_hardswish(lw: Lowering, op: Operation) -> None:
    """`F.hardswish` (MobileNetV3) as tt-xla decomposes it before torch-xla: PyTorch's core
    ATen decompositions (tt-xla python_package/tt_torch/backend/decompositions.py
    `populate_decompositions` starts from `torch._decomp.core_aten_decompositions()`, which
    holds aten.hardswish) give `x * clamp(clamp(x + 3, min=0), max=6) / 6`: a scalar add,
    two one-sided clamps (`ttnn.clamp`, convert_clamp), a multiply and a scalar divide;
    tt-mlir fuses none of it back (TTIRFusing.cpp has no hardswish pattern). A
    convolution's flattened output stays flattened through it."""
    x = held_input(lw, op)
    value = lw.value(x).with_(dtype=lw.dtype(op.output))
    out = OutputRequest(dtype=value.dtype)
    where = lw.where(op)
    b = lw.builder
    t = b.one(OpKind.ADD, f"{op.name}.add", (x,), value, out=out, attrs=BinaryAttrs(True), **where)
    t = b.one(OpKind.CLAMP, f"{op.name}.clamp_min", (t,), value, out=out, **where)
    t = b.one(OpKind.CLAMP, f"{op.name}.clamp_max", (t,), value, out=out, **where)
    t = b.one(OpKind.MULTIPLY, f"{op.name}.mul", (x, t), value, out=out, **where)
    define_like_input(lw, op, b.one(OpKind.DIVIDE, op.name, (t,), value, out=out, attrs=BinaryAttrs(True), **where))


def convert_reduce_l2(lw: Lowering, op: Operation) -> None:
    """`torch.linalg.vector_norm(x, 2, dim)` / `x.norm(p=2, dim)` (SigLIP's and CLIP's
    embedding normalisation): tt-xla decomposes neither (core_aten_decompositions holds no
    linalg_vector_norm), torch-xla lowers it as `Pow(Abs(x), 2)`, a reduce-add and
    `Pow(., 0.5)` in the input's type (torch_xla/csrc/ops/ops.cpp `LinalgVectorNorm`), and
    tt-mlir fuses none of it: `ttnn.abs`, `ttnn.pow_scalar` 2, `ttnn.sum` (keep_dim folded
    in: TTIRFusing.cpp `ReductionWithReshapePattern`), `ttnn.pow_scalar` 0.5
    (ops/tt_power.py: tt-metal's float-exponent composite)."""
    x = lw.tensor(op.inputs[0], at=op)
    value = lw.value(x)
    rank = len(value.shape)
    axes = op.attr("axes")
    dims = tuple(int(a) for a in axes) if isinstance(axes, (tuple, list)) else tuple(range(rank))
    where = lw.where(op)
    b = lw.builder
    t = b.one(OpKind.ABS, f"{op.name}.abs", (x,), value, **where)
    t = b.one(OpKind.POW_SCALAR, f"{op.name}.square", (t,), value, attrs=PowScalarAttrs(2.0), **where)
    reduced = Value(op.output_shape, value.dtype)
    attrs = reduce_attrs(lw, dims, bool(op.attr("keepdims", False)))
    t = b.one(OpKind.SUM, f"{op.name}.sum", (t,), reduced, attrs=attrs, compute=lw.options.compute(), **where)
    t = b.one(OpKind.POW_SCALAR, op.name, (t,), reduced, attrs=PowScalarAttrs(0.5), **where)
    lw.define(op, lw.convert(t, None, lw.dtype(op.output), op, op.name))


def convert_leaky_relu(lw: Lowering, op: Operation) -> None:
    """`F.leaky_relu` as torch-xla lowers it (torch_xla/csrc/elementwise.cpp
    `BuildLeakyRelu` -> `BuildLeakyReluBackward`: `Select(Gt(x, 0), x, slope * x)`; tt-xla
    does not decompose it, and tt-mlir fuses no leaky ReLU): `ttnn.gt` by a scalar (its
    truth values bfloat16, TTIR's boolean normalisation, cast to the values' type when
    they are another), `ttnn.multiply` by the slope, `ttnn.where` of the three (same
    shapes: no broadcast at any build; before 2025-08-01 tt-metal's composite where,
    refused). The slope moves no memory. A convolution's flattened output stays flattened
    through it."""
    require_ternary_where(lw, op)
    x = held_input(lw, op)
    value = lw.value(x).with_(dtype=lw.dtype(op.output))
    out = OutputRequest(dtype=value.dtype)
    where = lw.where(op)
    b = lw.builder
    pred = b.one(OpKind.GT, f"{op.name}.gt", (x,), value.with_(dtype=DataType.BFLOAT16),
                 out=OutputRequest(dtype=DataType.BFLOAT16), attrs=BinaryAttrs(True), **where)
    if value.dtype is not DataType.BFLOAT16:
        pred = lw.convert(pred, None, value.dtype, op, f"{op.name}.gt")
    scaled = b.one(OpKind.MULTIPLY, f"{op.name}.mul", (x,), value, out=out, attrs=BinaryAttrs(True), **where)
    define_like_input(lw, op, b.one(OpKind.WHERE, op.name, (pred, x, scaled), value, out=out, **where))


def convert_unsupported(lw: Lowering, op: Operation) -> None:
    raise no_rule(op, NO_RULE[op.kind])


CONVERTERS: dict[str, Converter] = {
    **{k: convert_unary for k in UNARY}, **{k: convert_binary for k in BINARY},
    **{k: convert_reduce for k in REDUCE}, **{k: convert_unsupported for k in NO_RULE},
    "cast": convert_cast, "identity": convert_alias, "alias": convert_alias, "restore": convert_alias,
    "reshape": convert_reshape, "transpose": convert_permute, "concat": convert_concat, "slice": convert_slice,
    "expand": convert_expand, "repeat_interleave": convert_repeat_interleave, "clamp": convert_clamp,
    "where": convert_where, "cumsum": convert_cumsum, "pad": convert_pad,
    "argmax": convert_argmax, "hardswish": convert_hardswish, "reduce_l2": convert_reduce_l2,
    "leaky_relu": convert_leaky_relu,
}

