"""Lookups: `gather` (embedding lookup, `index_select`, ONNX Gather along any axis)
and `gather_elements` (`torch.gather`, ONNX GatherElements: the output has the
indices' shape).

Poplar's multi-slice: the table stays where it rests (tileplan never re-lays out a
table for a lookup), each tile holding part of it looks up the indices that land
there and the rows are exchanged into the output, spread linearly.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from tileplan.errors import ModelError
from tileplan.lowering.core import LoweringContext
from tileplan.model.ir import Operation
from tileplan.ops.base import (
    REQUIRED, InputInfo, OpPlan, Shape, axis_of, broadcast_shapes, register, shard_elements, spread_layout,
)


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


def gather_elements_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    data, indices = ins
    axis_of(int(attrs["axis"]), len(data))
    if len(indices) != len(data):
        raise ModelError(f"gather_elements needs indices of the data's rank {len(data)}, found {list(indices)}")
    return indices


def index_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    """Advanced indexing (`x[i, j]` with index tensors): the indices broadcast together
    and take the place of the dimensions they index when those are consecutive, else
    come first (NumPy's rule)."""
    data, *indices = ins
    axes = [axis_of(int(a), len(data)) for a in attrs["axes"]]
    if len(axes) != len(indices) or len(set(axes)) != len(axes):
        raise ModelError(f"index needs one distinct axis per index tensor, found axes {list(axes)} for "
                         f"{len(indices)} indices")
    b = broadcast_shapes(*indices)
    rest = [n for d, n in enumerate(data) if d not in axes]
    if axes == list(range(min(axes), max(axes) + 1)):
        return (*data[:min(axes)], *b, *data[max(axes) + 1:])
    return (*b, *rest)


def lower_index(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
                dies: list[bool]) -> int:
    """One `Gather` step like `lower_gather`, every index tensor received whole (4 B an
    element)."""
    data, *indices = (ids[0] for ids in ins)
    e = shard_elements(ctx, plan.output, op.output_shape, op.name)
    scratch = sum(math.prod(ctx.value(i).shape) for i in indices) * 4 + e * ctx.value(data).precision.bytes
    out = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output)
    ctx.add_step(op, f"Gather {{ axes: {len(indices)}, exchange: true }}", count, (data, *indices), (out,),
                 {"standard": scratch})
    return out


def plan_index(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    none = tuple(None for _ in ins)
    return OpPlan(wanted=none, rest=none, output=spread_layout(ctx, op.output_precision))


register("index", inputs=(2, 9), attrs={"axes": REQUIRED}, shape=index_shape, plan=plan_index, lower=lower_index)
register("gather_elements", inputs=(2, 2), attrs={"axis": 0}, shape=gather_elements_shape, plan=plan_gather,
         lower=lower_gather)
register("gather", inputs=(2, 2), attrs={"axis": 0}, shape=gather_shape, plan=plan_gather, lower=lower_gather)
