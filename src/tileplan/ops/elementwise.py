"""Elementwise operators: binary with NumPy broadcasting (add, sub, mul, div, pow,
maximum, minimum, comparisons, logical), unary (neg, exp, log, tanh, sigmoid, relu,
gelu, silu, rsqrt, ...; cast), `where` and `clamp`.

One step each. The output takes the layout of the first input with the output's
shape (Poplar's `createOutputForElementWiseOp` clones an input's layout) and is
written in place when that input dies here. An operand of the output's shape is read
in the same layout (re-laid out by a `Copy` if it is elsewhere); a broadcast operand
of a dimension-tiled output is re-laid out so every tile holds the part its rows
need (`broadcast_layout`); a broadcast operand of a linearly spread output is read
where it is, each tile receiving at most min(operand, output shard) elements as
scratch (the step then says `exchange: true`). With no input of the output's shape
(`[S, 1] * [1, S]`) the output is spread and every operand is received that way.
A binary operator with one input takes its other operand as the `scalar` attribute.
"""

from __future__ import annotations

from typing import Any, Mapping, cast

from tileplan.errors import ModelError
from tileplan.lowering.core import LoweringContext
from tileplan.lowering.layouts import broadcast_layout
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout
from tileplan.ops.base import (
    Gathered, InputInfo, OpPlan, Shape, activation_layout, broadcast_shapes, can_write_in_place, flag,
    gather_operand, place, register, spread_layout,
)

BINARY = {
    "add": "Add", "sub": "Subtract", "mul": "Multiply", "div": "Divide", "pow": "Power", "mod": "Remainder",
    "maximum": "Maximum", "minimum": "Minimum", "eq": "Equal", "ne": "NotEqual", "lt": "Less",
    "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual", "and": "LogicalAnd", "or": "LogicalOr",
    "xor": "LogicalXor",
}
UNARY = {
    "neg": "Negate", "exp": "Exp", "log": "Log", "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu",
    "silu": "Silu", "rsqrt": "Rsqrt", "sqrt": "Sqrt", "reciprocal": "Reciprocal", "abs": "Abs", "sin": "Sin",
    "cos": "Cos", "erf": "Erf", "not": "LogicalNot", "isnan": "IsNan", "isinf": "IsInf", "floor": "Floor",
    "ceil": "Ceil", "round": "Round", "sign": "Sign", "softplus": "Softplus", "elu": "Elu",
    "hardswish": "HardSwish", "hardsigmoid": "HardSigmoid", "mish": "Mish", "leaky_relu": "LeakyRelu",
    "identity": "Identity", "cast": "Cast",
}


def elementwise_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    return broadcast_shapes(*ins)


def plan_elementwise(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    """detail: (index of the input whose layout the output takes or None, the inputs
    received as scratch)."""
    out_shape = op.output_shape
    lead = next((i for i, x in enumerate(ins) if x.shape == out_shape), None)
    if lead is None:
        out = spread_layout(ctx, op.output_precision)
        return OpPlan(wanted=tuple(None for _ in ins), rest=tuple(None for _ in ins), output=out,
                      detail=(None, tuple(range(len(ins)))))
    layout = activation_layout(ctx, ins[lead])
    wanted: list[Layout | None] = []
    gathered = []
    for i, x in enumerate(ins):
        if x.shape == out_shape:
            wanted.append(layout)
        elif not any(a.axis.is_linear for a in layout.tiling.axes) and len(x.shape) <= len(out_shape):
            wanted.append(broadcast_layout(layout, out_shape, x.shape, ctx.prefix))
        else:
            wanted.append(None)
            gathered.append(i)
    return OpPlan(wanted=tuple(wanted), rest=tuple(wanted), output=layout, detail=(lead, tuple(gathered)))


def _lower(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
           dies: list[bool], head: str) -> int:
    lead, gathered = cast("tuple[int | None, tuple[int, ...]]", plan.detail)
    reads: list[int] = []
    got = Gathered()
    for i, ids in enumerate(ins):
        if i in gathered:
            gather_operand(ctx, ids[0], plan.output, op.output_shape, got)
            reads.append(ids[0])
        else:
            name = ctx.copy_name(op, ids[0], source=op.inputs[i])
            reads.extend(place(ctx, op, ids, plan.wanted[i], count, name=name))
    in_place = lead is not None and can_write_in_place(ctx, reads[lead], dies[lead], plan.output, op)
    out = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output,
                        storage_of=reads[lead] if in_place and lead is not None else None)
    broadcast = any(ctx.value(v).shape != op.output_shape for v in reads)
    fields = [head] if head else []
    if len(ins) > 1:
        fields.append(f"broadcast: {flag(broadcast)}")
    fields.append(f"in_place: {flag(in_place)}")
    if got.exchange:
        fields.append("exchange: true")
    kind = "Binary" if op.kind in BINARY else ("Select" if op.kind == "where" else "Unary")
    ctx.add_step(op, f"{kind} {{ {', '.join(fields)} }}", count, tuple(reads), (out,),
                 {"standard": got.scratch} if got.scratch else None)
    return out


def lower_binary(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
                 dies: list[bool]) -> int:
    """One `Binary` step (see the module docstring); scratch only for operands
    received from elsewhere."""
    scalar = ", scalar: true" if len(ins) == 1 else ""
    return _lower(ctx, op, plan, ins, count, dies, f"op: {BINARY[op.kind]}{scalar}")


def lower_unary(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
                dies: list[bool]) -> int:
    """One `Unary` step, in place when its input dies and is at least as wide as the
    output. No scratch."""
    if op.kind == "gelu":
        name = "Gelu(Tanh)" if op.attr("approximate") == "tanh" else "Gelu(Erf)"
    elif op.kind == "cast":
        name = f"Cast({op.output_precision.to_text()})"
    else:
        name = UNARY.get(op.kind, op.kind.capitalize())
    return _lower(ctx, op, plan, ins, count, dies, f"op: {name}")


def lower_where(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
                dies: list[bool]) -> int:
    """One `Select` step: condition, then the value where true, then where false (or
    the `scalar` attribute)."""
    return _lower(ctx, op, plan, ins, count, dies, "")


def _scalar_binary(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    if len(ins) == 1 and attrs.get("scalar") is None:
        raise ModelError("a binary operator with one input needs the `scalar` attribute")
    return broadcast_shapes(*ins)


for _kind in BINARY:
    register(_kind, inputs=(1, 2), attrs={"scalar": None}, shape=_scalar_binary, plan=plan_elementwise,
             lower=lower_binary)
for _kind in UNARY:
    register(_kind, inputs=(1, 1), attrs={"alpha": None}, shape=elementwise_shape, plan=plan_elementwise,
             lower=lower_unary)
register("gelu", inputs=(1, 1), attrs={"approximate": "none"}, shape=elementwise_shape, plan=plan_elementwise,
         lower=lower_unary)
register("clamp", inputs=(1, 1), attrs={"min": None, "max": None}, shape=elementwise_shape,
         plan=plan_elementwise, lower=lower_unary)
register("where", inputs=(2, 3), attrs={"scalar": None}, shape=_scalar_binary, plan=plan_elementwise,
         lower=lower_where)
