"""Reductions (`reduce_sum`, `reduce_mean`, `reduce_max`, `reduce_min`, `reduce_prod`,
`reduce_any`, `reduce_all`, `reduce_var`, the norms `reduce_l2` (`torch.linalg.vector_norm`,
ONNX ReduceL2: ConvNeXt-V2's GRN, weight norm) and `reduce_l1`, `reduce_sum_square`,
`reduce_logsumexp`, `argmax`, `argmin`), `histogram` (`torch.histc`), `softmax`,
`log_softmax`, `cumsum`, and the selections `topk` and `sort` (each output, the values
or their indices, one operation: a mixture of experts' routing).

Poplar's reduce: each tile reduces what it holds into partials without exchange, then
stages of fan-in up to 16 bring the partials to the output (spread linearly); half
inputs accumulate in F32 (4 B a partial). Softmax keeps its input's layout (in place
when the input dies): a max and a sum reduction per row, each F32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, Ref, StepKind
from tileplan.model.ir import Operation
from tileplan.ops.base import (
    F32_BYTES, REDUCE_FAN_IN, REQUIRED, InputInfo, OpPlan, Shape, activation_layout, always, axis_of,
    can_write_in_place, copy_if_needed, flag, register, row_split, same_as, shard_elements, spread_layout, write_result,
)

REDUCTIONS = {"reduce_sum": "Sum", "reduce_mean": "Mean", "reduce_max": "Max", "reduce_min": "Min",
              "reduce_prod": "Product", "reduce_any": "Any", "reduce_all": "All", "reduce_var": "Variance",
              "reduce_l2": "L2", "reduce_l1": "L1", "reduce_sum_square": "SumSquare", "reduce_logsumexp": "LogSumExp",
              "argmax": "ArgMax", "argmin": "ArgMin"}


def reduce_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    axes = attrs["axes"]
    axes = tuple(range(len(x))) if axes is None else tuple(axes)
    dims = {axis_of(int(a), len(x)) for a in axes}
    if attrs["keepdims"]:
        return tuple(1 if d in dims else n for d, n in enumerate(x))
    out = tuple(n for d, n in enumerate(x) if d not in dims)
    return out or (1,)


def plan_reduce(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    return OpPlan(wanted=(None,), rest=(None,), output=spread_layout(k, op.output_precision), detail=None)


def histogram_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    bins = int(attrs["bins"])
    if bins < 1:
        raise ModelError(f"histogram needs bins >= 1, found {bins}")
    return (bins,)


def lower_reduce(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                 dies: Sequence[bool]) -> Fragment:
    """One `Reduce` step reading the input where it is. Scratch: each tile's partials,
    p = min(outputs, input shard) x 4 B, plus a stage receiving up to 16 partials for
    each output it holds, min(16, tiles) x output shard x 4 B."""
    b = FragmentBuilder(operands)
    x = b.operand(0)
    outputs = math.prod(op.output_shape)
    partials = min(outputs, shard_elements(k, b.layout(x), b.shape(x), b.label(x, op.name)))
    stage = min(REDUCE_FAN_IN, k.tile_count) * shard_elements(k, plan.output, op.output_shape, op.name)
    out = write_result(b, op, plan.output)
    name = REDUCTIONS.get(op.kind, "Histogram")
    b.step(StepKind.REDUCE, f"Reduce {{ op: {name}, exchange: true }}", (x,), (out,),
           {"standard": (partials + stage) * F32_BYTES}, exchange=True)
    return b.done(out)


def softmax_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    axis_of(int(attrs["axis"]), len(x))
    return x


def plan_softmax(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    layout = activation_layout(k, ins[0])
    return OpPlan(wanted=(layout,), rest=(layout,), output=layout, detail=None)


def _rows(k: Kernel, b: FragmentBuilder, op: Operation, x: Ref, axis: int) -> tuple[int, int]:
    """(rows per tile, partitions of a row) for a reduction along `axis`."""
    layout, shape, name = b.layout(x), b.shape(x), b.label(x, op.name)
    if axis == len(shape) - 1:
        return row_split(k, layout, shape, name)
    rows = math.prod(shape) // shape[axis]
    return min(rows, shard_elements(k, layout, shape, name)), REDUCE_FAN_IN


@dataclass(frozen=True, slots=True)
class RowStep:
    """What softmax and cumsum share: the input where the plan reads it, the axis as a
    negative index, rows per tile, partitions of a row, and the output (in place when
    the input dies)."""

    x: Ref
    axis: int
    rows: int
    parts: int
    in_place: bool
    out: Ref


def along_rows(k: Kernel, b: FragmentBuilder, op: Operation, plan: OpPlan[None], dies: Sequence[bool]) -> RowStep:
    x = copy_if_needed(k, b, op, b.operand(0), plan.wanted[0])
    axis = axis_of(op.int_attr("axis", -1), len(op.output_shape))
    rows, parts = _rows(k, b, op, x, axis)
    in_place = can_write_in_place(b, x, dies[0], plan.output, op)
    out = write_result(b, op, plan.output, in_place_of=x if in_place else None)
    return RowStep(x, axis - len(op.output_shape), rows, parts, in_place, out)


def lower_softmax(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                  dies: Sequence[bool]) -> Fragment:
    """One `Softmax` step, in place when its input dies. Scratch: the row maxima and
    sums in F32 with their reduction tree, (min(partitions of a row, 16) + 1) x rows x
    2 x 4 B."""
    b = FragmentBuilder(operands)
    r = along_rows(k, b, op, plan, dies)
    kind = StepKind.LOG_SOFTMAX if op.kind == "log_softmax" else StepKind.SOFTMAX
    b.step(kind, f"{kind.value} {{ axis: {r.axis}, in_place: {flag(r.in_place)}, exchange: {flag(r.parts > 1)} }}",
           (r.x,), (r.out,), {"standard": (min(r.parts, REDUCE_FAN_IN) + 1) * r.rows * 2 * F32_BYTES},
           exchange=r.parts > 1)
    return b.done(r.out)


def lower_cumsum(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                 dies: Sequence[bool]) -> Fragment:
    """One `Scan` step, in place when its input dies; scratch: each row's running total
    carried between tiles, rows x 4 B."""
    b = FragmentBuilder(operands)
    r = along_rows(k, b, op, plan, dies)
    b.step(StepKind.SCAN, f"Scan {{ op: Sum, in_place: {flag(r.in_place)}, exchange: {flag(r.parts > 1)} }}",
           (r.x,), (r.out,), {"standard": r.rows * F32_BYTES}, exchange=r.parts > 1)
    return b.done(r.out)


def select_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    axis = axis_of(int(attrs["axis"]), len(x))
    k = x[axis] if attrs.get("k") is None else int(attrs["k"])
    if not 1 <= k <= x[axis]:
        raise ModelError(f"topk of {k} along axis {axis} of {list(x)}: expected 1 <= k <= {x[axis]}")
    return (*x[:axis], k, *x[axis + 1:])


def plan_select(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    return OpPlan(wanted=(None,), rest=(None,), output=spread_layout(k, op.output_precision), detail=None)


def lower_select(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                 dies: Sequence[bool]) -> Fragment:
    """One `TopK` step (a sort is a top-k of the whole axis) reading the input where it
    is, the output spread. Each tile keeps the k best of each row it holds, with their
    indices, and the rows' partitions are merged in a tree of fan-in 16: scratch
    (min(partitions of a row, 16) + 1) x rows x k x (element bytes + 4 B of index)."""
    b = FragmentBuilder(operands)
    x = b.operand(0)
    axis = axis_of(op.int_attr("axis", -1), len(b.shape(x)))
    rows, parts = _rows(k, b, op, x, axis)
    kept = op.output_shape[axis]
    out = write_result(b, op, plan.output)
    b.step(StepKind.TOP_K, f"TopK {{ k: {kept}, exchange: true }}", (x,), (out,),
           {"standard": (min(parts, REDUCE_FAN_IN) + 1) * rows * kept * (b.precision(x).bytes + 4)}, exchange=True)
    return b.done(out)


def _index_or_value(classes: list[str], attrs: Mapping[str, Any]) -> str:
    return "int" if attrs["indices"] else (classes[0] if classes else "float")


def _check_keepdims(attrs: Mapping[str, Any]) -> None:
    if not isinstance(attrs["keepdims"], bool):
        raise ModelError(f"keepdims must be true or false, found {attrs['keepdims']!r}")


def _reduce_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    _check_keepdims(attrs)
    return reduce_shape(ins, attrs)


for _kind in REDUCTIONS:
    register(_kind, inputs=(1, 1), attrs={"axes": None, "keepdims": False, "correction": None},
             shape=_reduce_shape, plan=plan_reduce, lower=lower_reduce,
             dtype=always("int") if _kind in ("argmax", "argmin") else same_as(0))
register("softmax", inputs=(1, 1), attrs={"axis": -1}, shape=softmax_shape, plan=plan_softmax, lower=lower_softmax)
register("log_softmax", inputs=(1, 1), attrs={"axis": -1}, shape=softmax_shape, plan=plan_softmax,
         lower=lower_softmax)
register("cumsum", inputs=(1, 1), attrs={"axis": -1}, shape=softmax_shape, plan=plan_softmax, lower=lower_cumsum)
register("histogram", inputs=(1, 1), attrs={"bins": REQUIRED, "min": 0.0, "max": 0.0}, shape=histogram_shape,
         plan=plan_reduce, lower=lower_reduce, dtype=same_as(0))
register("topk", inputs=(1, 1), attrs={"k": REQUIRED, "axis": -1, "largest": True, "indices": False},
         shape=select_shape, plan=plan_select, lower=lower_select, dtype=_index_or_value)
register("sort", inputs=(1, 1), attrs={"k": None, "axis": -1, "descending": False, "indices": False},
         shape=select_shape, plan=plan_select, lower=lower_select, dtype=_index_or_value)
