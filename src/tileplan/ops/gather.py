"""Lookups: `gather` (embedding lookup, `index_select`, ONNX Gather along any axis).

Poplar's multi-slice: the table stays where it rests (tileplan never re-lays out a
table for a lookup), each tile holding part of it looks up the indices that land
there and the rows are exchanged into the output, spread linearly.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from tileplan.lowering.core import LoweringContext
from tileplan.model.ir import Operation
from tileplan.ops.base import InputInfo, OpPlan, Shape, axis_of, register, shard_elements, spread_layout


def gather_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    data, indices = ins
    axis = axis_of(int(attrs["axis"]), len(data))
    return (*data[:axis], *indices, *data[axis + 1:])


def plan_gather(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    return OpPlan(wanted=(None, None), rest=(None, None), output=spread_layout(ctx, op.output_precision))


def lower_gather(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
                 dies: list[bool]) -> int:
    """One `Gather` step. Scratch: every tile receives the indices (4 B each) and
    holds the looked-up elements bound for its output shard before the exchange,
    output shard x element bytes."""
    (data,), (indices,) = ins
    dv, iv = ctx.value(data), ctx.value(indices)
    e = shard_elements(ctx, plan.output, op.output_shape, op.name)
    scratch = math.prod(iv.shape) * 4 + e * dv.precision.bytes
    out = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output)
    ctx.add_step(op, f"Gather {{ axis: {op.attr('axis', 0)}, exchange: true }}", count, (data, indices), (out,),
                 {"standard": scratch})
    return out


register("gather", inputs=(2, 2), attrs={"axis": 0}, shape=gather_shape, plan=plan_gather, lower=lower_gather)
