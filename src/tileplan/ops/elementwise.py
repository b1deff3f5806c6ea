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

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, Ref, StepKind
from tileplan.kernel.layouts import broadcast_layout
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout
from tileplan.ops.base import (
    Gathered, InputInfo, OpPlan, Shape, activation_layout, always, broadcast_shapes, can_write_in_place, flag,
    gather_operand, linear_output, place, register, same_as, write_result,
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
#: operators whose output is a truth value (`bool`) whatever their inputs
PREDICATES = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not", "isnan", "isinf"})
#: binary operators whose operands may be swapped
COMMUTATIVE = frozenset({"add", "mul", "eq", "ne", "and", "or", "xor", "maximum", "minimum"})


def elementwise_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    return broadcast_shapes(*ins)


@dataclass(frozen=True, slots=True)
class Broadcast:
    """How an elementwise operation reads its inputs: `lead`, the input whose layout
    the output takes (None: the output is spread, no input has its shape), and
    `gathered`, the inputs each tile receives the elements of it needs (as scratch)."""

    lead: int | None
    gathered: tuple[int, ...]


def plan_elementwise(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[Broadcast]:
    """The output in its full-shape input's layout (`Broadcast.lead`), the other
    inputs read broadcast into it or received (`Broadcast.gathered`)."""
    out_shape = op.output_shape
    lead = next((i for i, x in enumerate(ins) if x.shape == out_shape), None)
    if lead is None:  # popops maps it linearly, no minimum a tile (ElementWiseUtil.cpp)
        out = linear_output(k, op.output_precision, min_bytes_per_tile=0)
        return OpPlan(wanted=tuple(None for _ in ins), rest=tuple(None for _ in ins), output=out,
                      detail=Broadcast(None, tuple(range(len(ins)))))
    layout = activation_layout(k, ins[lead])
    wanted: list[Layout | None] = []
    gathered = []
    for i, x in enumerate(ins):
        if x.shape == out_shape:
            wanted.append(layout)
        elif not any(a.axis.is_linear for a in layout.tiling.axes) and len(x.shape) <= len(out_shape):
            wanted.append(broadcast_layout(layout, out_shape, x.shape, k.prefix))
        else:
            wanted.append(None)
            gathered.append(i)
    return OpPlan(wanted=tuple(wanted), rest=tuple(wanted), output=layout, detail=Broadcast(lead, tuple(gathered)))


def _lower(k: Kernel, op: Operation, plan: OpPlan[Broadcast], operands: Sequence[Sequence[Operand]],
           dies: Sequence[bool], kind: StepKind, head: str) -> Fragment:
    lead, gathered = plan.detail.lead, plan.detail.gathered
    b = FragmentBuilder(operands)
    reads: list[Ref] = []
    got = Gathered()
    for i in range(len(operands)):
        if i in gathered:
            x = b.operand(i)
            gather_operand(k, b, op, x, plan.output, op.output_shape, got)
            reads.append(x)
        else:
            reads.extend(place(k, b, op, i, plan.wanted[i]))
    in_place = lead is not None and can_write_in_place(b, reads[lead], dies[lead], plan.output, op)
    out = write_result(b, op, plan.output, in_place_of=reads[lead] if in_place and lead is not None else None)
    broadcast = any(b.shape(v) != op.output_shape for v in reads)
    fields = [head] if head else []
    if len(operands) > 1:
        fields.append(f"broadcast: {flag(broadcast)}")
    fields.append(f"in_place: {flag(in_place)}")
    if got.exchange:
        fields.append("exchange: true")
    b.step(kind, f"{kind.value} {{ {', '.join(fields)} }}", reads, (out,), {"standard": got.scratch},
           exchange=got.exchange)
    return b.done(out)


def lower_binary(k: Kernel, op: Operation, plan: OpPlan[Broadcast], operands: Sequence[Sequence[Operand]],
                 dies: Sequence[bool]) -> Fragment:
    """One `Binary` step (see the module docstring); scratch only for operands
    received from elsewhere."""
    scalar = ", scalar: true" if len(operands) == 1 else ""
    return _lower(k, op, plan, operands, dies, StepKind.BINARY, f"op: {BINARY[op.kind]}{scalar}")


def lower_unary(k: Kernel, op: Operation, plan: OpPlan[Broadcast], operands: Sequence[Sequence[Operand]],
                dies: Sequence[bool]) -> Fragment:
    """One `Unary` step, in place when its input dies and is at least as wide as the
    output. No scratch."""
    if op.kind == "gelu":
        name = "Gelu(Tanh)" if op.attr("approximate") == "tanh" else "Gelu(Erf)"
    elif op.kind == "cast":
        name = f"Cast({op.output_precision.to_text()})"
    else:
        name = UNARY.get(op.kind, op.kind.capitalize())
    return _lower(k, op, plan, operands, dies, StepKind.UNARY, f"op: {name}")


def lower_where(k: Kernel, op: Operation, plan: OpPlan[Broadcast], operands: Sequence[Sequence[Operand]],
                dies: Sequence[bool]) -> Fragment:
    """One `Select` step: condition, then the value where true, then where false (or
    the `scalar` attribute). Scratch only for operands received from elsewhere."""
    return _lower(k, op, plan, operands, dies, StepKind.SELECT, "")


def _scalar_binary(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    if len(ins) == 1 and attrs.get("scalar") is None:
        raise ModelError("a binary operator with one input needs the `scalar` attribute")
    return broadcast_shapes(*ins)


for _kind in BINARY:
    register(_kind, inputs=(1, 2), attrs={"scalar": None}, shape=_scalar_binary, plan=plan_elementwise,
             lower=lower_binary, dtype=always("bool") if _kind in PREDICATES else same_as(0),
             commutative=_kind in COMMUTATIVE)
for _kind in UNARY:
    register(_kind, inputs=(1, 1), attrs={"alpha": None}, shape=elementwise_shape, plan=plan_elementwise,
             lower=lower_unary, dtype=always("bool") if _kind in PREDICATES else same_as(0))
register("gelu", inputs=(1, 1), attrs={"approximate": "none"}, shape=elementwise_shape, plan=plan_elementwise,
         lower=lower_unary)
register("clamp", inputs=(1, 1), attrs={"min": None, "max": None}, shape=elementwise_shape,
         plan=plan_elementwise, lower=lower_unary)
register("where", inputs=(2, 3), attrs={"scalar": None}, shape=_scalar_binary, plan=plan_elementwise,
         lower=lower_where, dtype=same_as(1))
