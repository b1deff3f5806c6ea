"""Lookups: `gather` (embedding lookup, `index_select`, ONNX Gather along any axis),
`gather_elements` (`torch.gather`, ONNX GatherElements: the output has the indices'
shape), `index` (advanced indexing, `x[i, j]`) and `gather_nd` (ONNX GatherND: each
row of the last index dimension picks a slice; CLIP's text pooling, Falcon's
attention through the dynamo exporter), and the write the other way, `scatter`
(`index_put`: values written at indices into a tensor of the same shape).

Poplar's multi-slice: the table stays where it rests (tileplan never re-lays out a
table for a lookup), each tile holding part of it looks up the indices that land
there and the rows are exchanged into the output, spread linearly.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, StepKind
from tileplan.model.ir import Operation
from tileplan.ops.base import (
    REQUIRED, InputInfo, OpPlan, Shape, activation_layout, axis_of, broadcast_shapes, can_write_in_place,
    copy_if_needed, flag, register, shard_elements, spread_layout, write_result,
)


def gather_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    data, indices = ins
    axis = axis_of(int(attrs["axis"]), len(data))
    return (*data[:axis], *indices, *data[axis + 1:])


def plan_gather(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    return OpPlan(wanted=(None, None), rest=(None, None), output=spread_layout(k, op.output_precision), detail=None)


def lower_gather(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                 dies: Sequence[bool]) -> Fragment:
    """One `Gather` step. Scratch: every tile receives the indices (4 B each) and
    holds the looked-up elements bound for its output shard before the exchange,
    output shard x element bytes."""
    b = FragmentBuilder(operands)
    data, indices = b.operand(0), b.operand(1)
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    scratch = math.prod(b.shape(indices)) * 4 + e * b.precision(data).bytes
    out = write_result(b, op, plan.output)
    b.step(StepKind.GATHER, f"Gather {{ axis: {op.attr('axis', 0)}, exchange: true }}", (data, indices), (out,),
           {"standard": scratch}, exchange=True)
    return b.done(out)


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


def lower_index(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                dies: Sequence[bool]) -> Fragment:
    """One `Gather` step like `lower_gather`; scratch: every index tensor received
    whole (4 B an element) and the output shard's looked-up elements."""
    b = FragmentBuilder(operands)
    data, *indices = (b.operand(i) for i in range(len(operands)))
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    scratch = sum(math.prod(b.shape(i)) for i in indices) * 4 + e * b.precision(data).bytes
    out = write_result(b, op, plan.output)
    b.step(StepKind.GATHER, f"Gather {{ axes: {len(indices)}, exchange: true }}", (data, *indices), (out,),
           {"standard": scratch}, exchange=True)
    return b.done(out)


def plan_index(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    none = tuple(None for _ in ins)
    return OpPlan(wanted=none, rest=none, output=spread_layout(k, op.output_precision), detail=None)


def gather_nd_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    """ONNX's rule: indices [..., k] pick slices of data after its `batch_dims`
    leading dimensions: the output is indices[:-1] + data[batch_dims + k:]. Worked
    example: data [2, 7, 32], indices [2, 1], batch_dims 1 -> [2] + [32] = [2, 32]."""
    data, indices = ins
    b = int(attrs["batch_dims"])
    k = indices[-1] if indices else 0
    if b < 0 or not 1 <= k <= len(data) - b or len(indices) < b + 1 or tuple(indices[:b]) != tuple(data[:b]):
        raise ModelError(f"gather_nd of {list(data)} by indices {list(indices)} with batch_dims {b}: expected "
                         "indices [..., k] with k <= the data's rank - batch_dims and the batch dimensions alike")
    out = (*indices[:-1], *data[b + k:])
    return out or (1,)


def scatter_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    data, *indices, values = ins
    axes = [axis_of(int(a), len(data)) for a in attrs["axes"]]
    if len(axes) != len(indices) or len(set(axes)) != len(axes):
        raise ModelError(f"scatter needs one distinct axis per index tensor, found axes {list(axes)} for "
                         f"{len(indices)} indices")
    return data


def plan_scatter(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    layout = activation_layout(k, ins[0])
    return OpPlan(wanted=(layout, *(None for _ in ins[1:])), rest=tuple(None for _ in ins), output=layout, detail=None)


def lower_scatter(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                  dies: Sequence[bool]) -> Fragment:
    """One `Scatter` step writing values at indices of the data, in place when the
    data dies here (else into a new value of its layout). Scratch: every index tensor
    received whole (4 B an element) and the values a tile writes, at most min(values,
    data shard) elements."""
    b = FragmentBuilder(operands)
    x = copy_if_needed(k, b, op, b.operand(0), plan.wanted[0])
    indices = [b.operand(i) for i in range(1, len(operands) - 1)]
    values = b.operand(len(operands) - 1)
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    scratch = (sum(math.prod(b.shape(i)) for i in indices) * 4
               + min(math.prod(b.shape(values)), e) * b.precision(values).bytes)
    in_place = can_write_in_place(b, x, dies[0], plan.output, op)
    out = write_result(b, op, plan.output, in_place_of=x if in_place else None)
    b.step(StepKind.SCATTER, f"Scatter {{ in_place: {flag(in_place)}, exchange: true }}", (x, *indices, values),
           (out,), {"standard": scratch}, exchange=True)
    return b.done(out)


register("scatter", inputs=(3, 10), attrs={"axes": REQUIRED, "accumulate": False}, shape=scatter_shape,
         plan=plan_scatter, lower=lower_scatter)
register("gather_nd", inputs=(2, 2), attrs={"batch_dims": 0}, shape=gather_nd_shape, plan=plan_index,
         lower=lower_index)
register("index", inputs=(2, 9), attrs={"axes": REQUIRED}, shape=index_shape, plan=plan_index, lower=lower_index)
register("gather_elements", inputs=(2, 2), attrs={"axis": 0}, shape=gather_elements_shape, plan=plan_gather,
         lower=lower_gather)
register("gather", inputs=(2, 2), attrs={"axis": 0}, shape=gather_shape, plan=plan_gather, lower=lower_gather)
