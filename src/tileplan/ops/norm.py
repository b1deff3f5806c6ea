"""Normalisations: `layernorm` and `rmsnorm` over the last dimension, `batchnorm`
(inference) over the channel axis 1, `groupnorm` over groups of channels (PyTorch's
GroupNorm, ONNX's GroupNormalization; InstanceNormalization is one group a channel:
wav2vec2's feature encoder).

LayerNorm is Poplar's GroupNorm with one group: statistics as F32 reductions into
small tensors, then one full-size output (in place when the input dies). RMSNorm is
the same with one statistic. Inference batch norm is one elementwise step with four
per-channel vectors.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, Ref, StepKind
from tileplan.kernel.layouts import broadcast_layout
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout
from tileplan.ops.base import (
    F32_BYTES, REDUCE_FAN_IN, REQUIRED, Gathered, InputInfo, OpPlan, Shape, activation_layout, can_write_in_place,
    copy_if_needed, flag, gather_operand, place, register, row_split, shard_elements, write_result,
)


def norm_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, *params = ins
    for p in params:
        if p[-1:] != x[-1:] or len(p) > len(x) or any(d != 1 for d in p[:-1]):
            raise ModelError(f"norm scale and bias must be vectors of {x[-1]}, found {list(p)}")
    return x


def _param_layout(layout: Layout, x: Shape, p: Shape, prefix: str) -> Layout | None:
    if any(a.axis.is_linear for a in layout.tiling.axes):
        return None  # received as scratch: see `lower_norm`
    return broadcast_layout(layout, x, p, prefix)


def plan_norm(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    x, *params = ins
    layout = activation_layout(k, x)
    wanted = (layout, *(_param_layout(layout, x.shape, p.shape, k.prefix) for p in params))
    return OpPlan(wanted=wanted, rest=wanted, output=layout, detail=None)


def lower_norm(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
               dies: Sequence[bool]) -> Fragment:
    """Two steps. `Statistics`: each tile sums its columns of its rows (LayerNorm: sum
    and sum of squares; RMSNorm: sum of squares; F32) and exchanges them with the other
    partitions of the row, reduced in a tree of fan-in 16; scratch (min(column
    partitions, 16) + 1) x rows x statistics x 4 B. `Normalize`: scales, shifts;
    scratch rows x statistics x 4 B. Vectors of a linearly spread input are received
    as scratch (at most min(vector, shard) elements each)."""
    b = FragmentBuilder(operands)
    x = copy_if_needed(k, b, op, b.operand(0), plan.wanted[0])
    got = Gathered()
    reads: list[Ref] = []
    for j, wanted in enumerate(plan.wanted[1:], start=1):
        if wanted is None:
            gather_operand(k, b, op, b.operand(j), plan.output, op.output_shape, got)
            reads.append(b.operand(j))
        else:
            reads.extend(place(k, b, op, j, wanted))
    rows, parts = row_split(k, b.layout(x), b.shape(x), b.label(x, op.name))
    kind, statistics = (StepKind.RMS_NORM, 1) if op.kind == "rmsnorm" else (StepKind.LAYER_NORM, 2)
    stats = statistics * F32_BYTES * rows
    b.step(kind, f"{kind.value} {{ stage: Statistics, exchange: {flag(parts > 1)} }}", (x,), (),
           {"standard": (min(parts, REDUCE_FAN_IN) + 1) * stats}, exchange=parts > 1)
    in_place = can_write_in_place(b, x, dies[0], plan.output, op)
    out = write_result(b, op, plan.output, in_place_of=x if in_place else None)
    received = ", exchange: true" if got.exchange else ""
    b.step(kind, f"{kind.value} {{ stage: Normalize, in_place: {flag(in_place)}{received} }}", (x, *reads), (out,),
           {"standard": stats + got.scratch}, exchange=got.exchange)
    return b.done(out)


def batchnorm_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, *params = ins
    if len(x) < 2:
        raise ModelError(f"batchnorm needs [N, C, ...], found {list(x)}")
    for p in params:
        if p != (x[1],):
            raise ModelError(f"batchnorm parameters must be vectors of the {x[1]} channels, found {list(p)}")
    return x


def plan_batchnorm(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    layout = activation_layout(k, ins[0])
    return OpPlan(wanted=(layout, *(None for _ in ins[1:])), rest=tuple(None for _ in ins), output=layout, detail=None)


def lower_batchnorm(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                    dies: Sequence[bool]) -> Fragment:
    """One `BatchNorm` step (inference: scale, bias, running mean and variance per
    channel), in place when the input dies; each tile receives the channels its shard
    touches, at most min(C, shard) elements of each vector, as scratch."""
    b = FragmentBuilder(operands)
    x = copy_if_needed(k, b, op, b.operand(0), plan.wanted[0])
    got = Gathered()
    params = [b.operand(j) for j in range(1, len(operands))]
    for p in params:
        gather_operand(k, b, op, p, plan.output, op.output_shape, got)
    in_place = can_write_in_place(b, x, dies[0], plan.output, op)
    out = write_result(b, op, plan.output, in_place_of=x if in_place else None)
    b.step(StepKind.BATCH_NORM, f"BatchNorm {{ in_place: {flag(in_place)}, exchange: true }}", (x, *params), (out,),
           {"standard": got.scratch}, exchange=True)
    return b.done(out)


def groupnorm_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, *params = ins
    groups = int(attrs["groups"])
    if len(x) < 2 or groups < 1 or x[1] % groups:
        raise ModelError(f"groupnorm of {list(x)} in {groups} groups: expected [N, C, ...] with C a multiple of "
                         "the groups")
    for p in params:
        if p not in ((x[1],), (groups,)):
            raise ModelError(f"groupnorm scale and bias must be vectors of the {x[1]} channels (or the {groups} "
                             f"groups), found {list(p)}")
    return x


def group_rows(k: Kernel, b: FragmentBuilder, op: Operation, x: Ref) -> tuple[int, int]:
    """(groups a tile touches, tiles a group spans) for a group norm of `x`: each of
    the N x G groups is g = C / G x spatial consecutive elements, a tile holds e
    elements (its largest shard), so it touches at most min(N x G, ceil(e / g) + 1)
    groups and a group lies on at most min(tiles, ceil(g / e) + 1) tiles (one more
    when it straddles). Worked example: x [2, 8, 4] in 4 groups spread over 4 tiles:
    g = 2 x 4 = 8, e = 16: 3 groups a tile, a group on 2 tiles."""
    shape = b.shape(x)
    groups = op.int_attr("groups")
    g = shape[1] // groups * math.prod(shape[2:])
    e = shard_elements(k, b.layout(x), shape, b.label(x, op.name))
    return min(shape[0] * groups, -(-e // g) + 1), min(k.tile_count, -(-g // e) + 1)


def lower_groupnorm(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                    dies: Sequence[bool]) -> Fragment:
    """Two `GroupNorm` steps, like a layer norm's (`lower_norm`) with groups for rows.
    `Statistics`: each tile sums its part of each group it touches (sum and sum of
    squares, F32) and reduces them with the group's other tiles in a tree of fan-in 16:
    scratch (min(tiles a group spans, 16) + 1) x groups a tile touches x 2 x 4 B
    (`group_rows`), exchanging when a group spans tiles. `Normalize` (in place when
    the input dies): the statistics, groups x 2 x 4 B, and the scale and bias received
    for the channels the tile holds, at most min(vector, shard) elements each."""
    b = FragmentBuilder(operands)
    x = copy_if_needed(k, b, op, b.operand(0), plan.wanted[0])
    rows, parts = group_rows(k, b, op, x)
    stats = 2 * F32_BYTES * rows
    b.step(StepKind.GROUP_NORM, f"GroupNorm {{ stage: Statistics, exchange: {flag(parts > 1)} }}", (x,), (),
           {"standard": (min(parts, REDUCE_FAN_IN) + 1) * stats}, exchange=parts > 1)
    got = Gathered()
    params = [b.operand(j) for j in range(1, len(operands))]
    for p in params:
        gather_operand(k, b, op, p, plan.output, op.output_shape, got)
    in_place = can_write_in_place(b, x, dies[0], plan.output, op)
    out = write_result(b, op, plan.output, in_place_of=x if in_place else None)
    received = ", exchange: true" if got.exchange else ""
    b.step(StepKind.GROUP_NORM, f"GroupNorm {{ stage: Normalize, in_place: {flag(in_place)}{received} }}",
           (x, *params), (out,), {"standard": stats + got.scratch}, exchange=got.exchange)
    return b.done(out)


register("layernorm", inputs=(1, 3), attrs={"eps": 1e-5}, shape=norm_shape, plan=plan_norm, lower=lower_norm)
register("rmsnorm", inputs=(1, 2), attrs={"eps": 1e-6}, shape=norm_shape, plan=plan_norm, lower=lower_norm)
register("batchnorm", inputs=(1, 5), attrs={"eps": 1e-5}, shape=batchnorm_shape, plan=plan_batchnorm,
         lower=lower_batchnorm)
register("groupnorm", inputs=(1, 3), attrs={"groups": REQUIRED, "eps": 1e-5}, shape=groupnorm_shape,
         plan=plan_batchnorm, lower=lower_groupnorm)
