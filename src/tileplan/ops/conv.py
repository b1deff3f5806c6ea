"""Convolutions (`conv`, 1-D and 2-D: strides, padding, dilation, groups, depthwise)
and pooling (`maxpool`, `avgpool`, `adaptive_avgpool`).

A convolution with one group is its implicit GEMM on the AMP (poplin plans a matmul as
a convolution and the other way round): M = batch x output positions, K = input
channels x kernel positions, N = output channels. The input is expanded into its
[M, K] operand (Poplar's `expandDims` turns kernel positions into input channels; a
ViT patch embedding, stride = kernel, expands to exactly its own size; overlapping
kernels expand up to kernel-size times: tileplan charges the whole expansion, an
upper bound), the weights are re-laid out into the AMP's [K, N] blocks, and the K
partials are summed into the output, spread linearly in NC(H)W order. A grouped or
depthwise convolution and pooling are spread operations: each tile receives the
input windows and weights its output elements need.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from tileplan.errors import ModelError
from tileplan.lowering import gemm
from tileplan.lowering.core import GemmOutputPacking, LoweringContext
from tileplan.model.ir import Operation
from tileplan.model.precision import Precision
from tileplan.ops.base import (
    F32_BYTES, REQUIRED, InputInfo, OpPlan, Shape, copy_text, flag, register, shard_elements, spread_layout,
)


def _spatial(attrs: Mapping[str, Any], key: str, n: int, default: int) -> tuple[int, ...]:
    value = attrs.get(key)
    if value is None:
        return (default,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        value = value * n
    return value


def window_shape(x: Shape, kernel: tuple[int, ...], attrs: Mapping[str, Any], what: str) -> tuple[int, ...]:
    """Output positions per spatial dimension: (in + pads - dilation x (k - 1) - 1) //
    stride + 1 (rounded up with `ceil_mode`)."""
    n = len(kernel)
    strides = _spatial(attrs, "strides", n, 1)
    dilations = _spatial(attrs, "dilations", n, 1)
    pads = attrs.get("pads")
    pads = (0,) * (2 * n) if pads is None else tuple(int(p) for p in pads)
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        raise ModelError(f"{what}: strides, dilations need {n} values and pads {2 * n} (begins, then ends)")
    out = []
    for d in range(n):
        span = x[2 + d] + pads[d] + pads[d + n] - dilations[d] * (kernel[d] - 1) - 1
        if span < 0 or strides[d] < 1:
            raise ModelError(f"{what}: kernel {list(kernel)} does not fit the input {list(x)} with pads "
                             f"{list(pads)}")
        q, r = divmod(span, strides[d])
        out.append(q + 1 + (1 if attrs.get("ceil_mode") and r else 0))
    return tuple(out)


def conv_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, w, *bias = ins
    groups = int(attrs["groups"])
    if len(x) not in (3, 4) or len(w) != len(x):
        raise ModelError(f"conv needs [N, C, L] or [N, C, H, W] input and weights of the same rank, found "
                         f"{list(x)} and {list(w)}")
    if groups < 1 or x[1] % groups or w[0] % groups or w[1] * groups != x[1]:
        raise ModelError(f"conv: input channels {x[1]} and weights {list(w)} do not match {groups} groups")
    if bias and bias[0] != (w[0],):
        raise ModelError(f"conv bias must be a vector of {w[0]} output channels, found {list(bias[0])}")
    return (x[0], w[0], *window_shape(x, tuple(w[2:]), attrs, "conv"))


def _gemm_sizes(op: Operation, x: Shape, w: Shape) -> tuple[int, int, int]:
    m = op.output_shape[0] * math.prod(op.output_shape[2:])
    return m, w[1] * math.prod(w[2:]), w[0]


def plan_conv(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    out = spread_layout(ctx, op.output_precision)
    none = tuple(None for _ in ins)
    if op.int_attr("groups", 1) != 1:
        return OpPlan(wanted=none, rest=none, output=out, detail="grouped")
    x, w = ins[0], ins[1]
    geometry = ctx.machine.amp_for(w.precision)
    accumulate = Precision(geometry.accumulate)
    m, k, n = _gemm_sizes(op, x.shape, w.shape)
    p = gemm.partition_gemm(m, k, n, ctx.machine.tile_count, geometry, w.precision.bytes, accumulate.bytes, op.name,
                            ctx.cap_bytes)
    ctx.note_temporary(op, gemm.temporary_bytes(p, w.precision.bytes, accumulate.bytes))
    return OpPlan(wanted=none, rest=none, output=out, detail=p)


def lower_conv(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
               dies: list[bool]) -> int:
    """Implicit GEMM: `Copy { mapping: ExpandDims }` of the input into its [M, K]
    operand (in the multiply precision), a `Copy` of the weights into the AMP's [K, N]
    blocks, `Gemm`, then `Sum` of the K partials into the spread output (adding the
    bias); Sum scratch (pk + 1) x output shard x accumulate bytes. Grouped: one
    `GroupedConv` step (see `lower_grouped`)."""
    if plan.detail == "grouped":
        return lower_grouped(ctx, op, plan, ins, count)
    p = plan.detail
    assert isinstance(p, gemm.GemmPartition), p
    x, w = ins[0][0], ins[1][0]
    bias = ins[2][0] if len(ins) > 2 else None
    multiply = ctx.value(w).precision
    accumulate = Precision(p.geometry.accumulate)
    expanded = ctx.new_value(op.origin, ctx.copy_name(op, x, "expanded"), (p.m, p.k), multiply,
                             gemm.left_layout(p, 2, ctx.prefix, resting=False))
    ctx.add_step(op, "Copy { mapping: ExpandDims, reuse_local: false }", count, (x,), (expanded,))
    weights = ctx.new_value(op.origin, ctx.copy_name(op, w, "AMP copy"), (p.k, p.n), multiply,
                            gemm.weight_layout(p, ctx.prefix), alignment_bytes=ctx.machine.element_pair_bytes)
    ctx.add_step(op, copy_text(False), count, (w,), (weights,))
    packed = ctx.options.gemm_output_packing is GemmOutputPacking.PACKED
    partials = ctx.new_value(op.origin, ctx.result_name(op, "partials"), (p.pk, p.m, p.n), accumulate,
                             gemm.partials_layout(p, 2, ctx.prefix),
                             alignment_bytes=None if packed else ctx.machine.element_pair_bytes)
    ctx.add_step(op, gemm.gemm_text(p, multiply, accumulate), count, (expanded, weights), (partials,))
    out = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output)
    e = shard_elements(ctx, plan.output, op.output_shape, op.name)
    reads = (partials,) if bias is None else (partials, bias)
    scratch = (p.pk + 1) * e * accumulate.bytes + (0 if bias is None else min(p.n, e) * ctx.value(bias).precision.bytes)
    ctx.add_step(op, "Sum { axis: 0, staging: Complete }", count, reads, (out,), {"standard": scratch})
    return out


def lower_grouped(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int) -> int:
    """One `GroupedConv` step, output spread. A tile with e output elements receives at
    most min(input, e x kernel x channels per group) input elements and min(weights,
    e x kernel x channels per group) weights, and accumulates e partials in F32."""
    reads = tuple(ids[0] for ids in ins)
    xv, wv = ctx.value(reads[0]), ctx.value(reads[1])
    e = shard_elements(ctx, plan.output, op.output_shape, op.name)
    window = math.prod(wv.shape[1:])
    scratch = (min(math.prod(xv.shape), e * window) * xv.precision.bytes
               + min(math.prod(wv.shape), e * window) * wv.precision.bytes + e * F32_BYTES)
    out = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output)
    ctx.add_step(op, f"GroupedConv {{ groups: {op.attr('groups')}, exchange: {flag(True)} }}", count, reads, (out,),
                 {"standard": scratch})
    return out


def pool_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    if len(x) not in (3, 4):
        raise ModelError(f"pooling needs [N, C, L] or [N, C, H, W], found {list(x)}")
    kernel = _spatial(attrs, "kernel", len(x) - 2, 1)
    return (x[0], x[1], *window_shape(x, kernel, attrs, "pool"))


def adaptive_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    size = _spatial(attrs, "output_size", len(x) - 2, 1)
    if len(x) not in (3, 4) or len(size) != len(x) - 2 or any(s < 1 for s in size):
        raise ModelError(f"adaptive pooling of {list(x)} to {list(size)}: expected [N, C, ...] and one size "
                         "per spatial dimension")
    return (x[0], x[1], *size)


def plan_spread(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    return OpPlan(wanted=(None,), rest=(None,), output=spread_layout(ctx, op.output_precision))


def lower_pool(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
               dies: list[bool]) -> int:
    """One `Pool` step, output spread; a tile with e output elements receives at most
    min(input, e x window) input elements (the window: the kernel, or for adaptive
    pooling ceil(in / out) per dimension) and accumulates e partials in F32."""
    ((x,),) = ins
    xv = ctx.value(x)
    if op.kind == "adaptive_avgpool":
        window = math.prod(-(-i // o) for i, o in zip(xv.shape[2:], op.output_shape[2:]))
    else:
        window = math.prod(_spatial(dict(op.attrs), "kernel", len(xv.shape) - 2, 1))
    e = shard_elements(ctx, plan.output, op.output_shape, op.name)
    scratch = min(math.prod(xv.shape), e * window) * xv.precision.bytes + e * F32_BYTES
    out = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output)
    kind = "Max" if op.kind == "maxpool" else "Average"
    ctx.add_step(op, f"Pool {{ op: {kind}, exchange: true }}", count, (x,), (out,), {"standard": scratch})
    return out


CONV_ATTRS = {"strides": None, "pads": None, "dilations": None, "groups": 1}
POOL_ATTRS = {"kernel": REQUIRED, "strides": None, "pads": None, "dilations": None, "ceil_mode": False}
register("conv", inputs=(2, 3), attrs=CONV_ATTRS, shape=conv_shape, plan=plan_conv, lower=lower_conv)
register("maxpool", inputs=(1, 1), attrs=POOL_ATTRS, shape=pool_shape, plan=plan_spread, lower=lower_pool)
register("avgpool", inputs=(1, 1), attrs=POOL_ATTRS, shape=pool_shape, plan=plan_spread, lower=lower_pool)
register("adaptive_avgpool", inputs=(1, 1), attrs={"output_size": REQUIRED}, shape=adaptive_shape,
         plan=plan_spread, lower=lower_pool)
