"""Convolutions (`conv`, 1-D and 2-D: strides, padding, dilation, groups, depthwise),
pooling (`maxpool`, `avgpool`, `adaptive_avgpool`) and resizing (`resize`: nearest,
linear or cubic interpolation of the spatial dimensions; upsampling).

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

With the default policy (`Kernel.poplibs`) every convolution, grouped and depthwise
too, is planned as poplin plans it (`tileplan.kernel.convplan`; CONV-NOTES.md): no
im2col, a partition over batch, field, input and output channels and groups with
one serial split, the fastest whose temporary bytes fit the memory cap, lowered as
one `Conv` step whose scratch is those bytes (input window and received weights in
standard memory, partials in interleaved) and whose output stays where the plan
computed it (`convplan.conv_output_layout`), so the next convolution reads it there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.kernel import convplan, gemm
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, StepKind, ValueKind
from tileplan.kernel.options import GemmOutputPacking
from tileplan.model.ir import Operation
from tileplan.model.precision import Precision
from tileplan.ops.base import (
    F32_BYTES, REQUIRED, InputInfo, OpPlan, Shape, copy_text, flag, register, shard_elements, spread_layout,
    write_result,
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
        if attrs.get("ceil_mode") and strides[d] >= 1:
            # PyTorch's rule: rounded up, but the last window must start inside the input
            # or its leading pad (EfficientNet pools a 1 x 1 map with a 1280 kernel: 1)
            q = -(-span // strides[d]) + 1
            q -= 1 if (q - 1) * strides[d] >= x[2 + d] + pads[d] else 0
        else:
            q = span // strides[d] + 1 if span >= 0 and strides[d] >= 1 else 0
        if q < 1:
            raise ModelError(f"{what}: kernel {list(kernel)} does not fit the input {list(x)} with pads "
                             f"{list(pads)}")
        out.append(q)
    return tuple(out)


def conv_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, w, *bias = ins
    groups = int(attrs["groups"])
    if len(x) not in (3, 4, 5) or len(w) != len(x):
        raise ModelError("conv needs [N, C, L], [N, C, H, W] or [N, C, D, H, W] input and weights of the same rank, "
                         f"found {list(x)} and {list(w)}")
    if groups < 1 or x[1] % groups or w[0] % groups or w[1] * groups != x[1]:
        raise ModelError(f"conv: input channels {x[1]} and weights {list(w)} do not match {groups} groups")
    if bias and bias[0] != (w[0],):
        raise ModelError(f"conv bias must be a vector of {w[0]} output channels, found {list(bias[0])}")
    return (x[0], w[0], *window_shape(x, tuple(w[2:]), attrs, "conv"))


def _gemm_sizes(op: Operation, x: Shape, w: Shape) -> tuple[int, int, int]:
    m = op.output_shape[0] * math.prod(op.output_shape[2:])
    return m, w[1] * math.prod(w[2:]), w[0]


def conv_geometry(op: Operation, x: Shape, w: Shape) -> convplan.ConvShape:
    """The convolution's shape for poplin's planner: batch, output field, kernel,
    strides, dilations, channels per group and groups."""
    attrs = dict(op.attrs)
    n = len(x) - 2
    return convplan.ConvShape(x[0], tuple(op.output_shape[2:]), tuple(w[2:]), _spatial(attrs, "strides", n, 1),
                              _spatial(attrs, "dilations", n, 1), w[1], w[0] // op.int_attr("groups", 1),
                              op.int_attr("groups", 1))


@dataclass(frozen=True, slots=True)
class GroupedConvolution:
    """The detail of a grouped convolution planned as a spread by the reference
    planner's kernels (one `GroupedConv` step: `lower_grouped`); it needs nothing more
    of its plan."""


GROUPED = GroupedConvolution()
#: what a convolution's lowering reads of its plan: poplin's plan, a grouped
#: convolution's mark, or the reference planner's implicit-GEMM partition
ConvDetail = convplan.ConvPartition | GroupedConvolution | gemm.GemmPartition


def plan_conv(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[ConvDetail]:
    none = tuple(None for _ in ins)
    if k.poplibs:
        x, w = ins[0], ins[1]
        geometry = k.amp(w.precision)
        accumulate = Precision(geometry.accumulate)
        cp = convplan.plan_conv(conv_geometry(op, x.shape, w.shape), k.tile_count, geometry, w.precision.bytes,
                                accumulate.bytes, k.machine.tile_bytes, k.options.available_memory_proportion,
                                op.name)
        out_layout = convplan.conv_output_layout(cp, op.output_shape[1], len(op.output_shape), k.prefix)
        return OpPlan(wanted=none, rest=none, output=out_layout, detail=cp, temporary=cp.temp_bytes)
    out = spread_layout(k, op.output_precision)
    if op.int_attr("groups", 1) != 1:
        return OpPlan(wanted=none, rest=none, output=out, detail=GROUPED)
    x, w = ins[0], ins[1]
    geometry = k.amp(w.precision)
    accumulate = Precision(geometry.accumulate)
    m, kk, n = _gemm_sizes(op, x.shape, w.shape)
    p = gemm.partition_gemm(m, kk, n, k.tile_count, geometry, w.precision.bytes, accumulate.bytes, op.name,
                            k.cap_bytes)
    return OpPlan(wanted=none, rest=none, output=out, detail=p,
                  temporary=gemm.temporary_bytes(p, w.precision.bytes, accumulate.bytes))


def lower_conv(k: Kernel, op: Operation, plan: OpPlan[ConvDetail], operands: Sequence[Sequence[Operand]],
               dies: Sequence[bool]) -> Fragment:
    """Implicit GEMM: `Copy { mapping: ExpandDims }` of the input into its [M, K]
    operand (in the multiply precision), a `Copy` of the weights into the AMP's [K, N]
    blocks, `Gemm`, then `Sum` of the K partials into the spread output (adding the
    bias); Sum scratch (pk + 1) x output shard x accumulate bytes, plus the bias
    elements a tile adds, min(N, output shard) x their bytes. Grouped: one
    `GroupedConv` step (see `lower_grouped`)."""
    p = plan.detail
    if isinstance(p, GroupedConvolution):
        return lower_grouped(k, op, plan, operands)
    if isinstance(p, convplan.ConvPartition):
        return lower_poplibs(k, op, plan, p, operands)
    b = FragmentBuilder(operands)
    x, w = b.operand(0), b.operand(1)
    bias = b.operand(2) if len(operands) > 2 else None
    multiply = b.precision(w)
    accumulate = Precision(p.geometry.accumulate)
    expanded = b.new(ValueKind.COPY, (p.m, p.k), multiply, gemm.left_layout(p, 2, k.prefix, resting=False),
                     label="expanded", of=x)
    b.step(StepKind.COPY, "Copy { mapping: ExpandDims, reuse_local: false }", (x,), (expanded,), exchange=True)
    weights = b.new(ValueKind.COPY, (p.k, p.n), multiply, gemm.weight_layout(p, k.prefix), label="AMP copy", of=w,
                    alignment=k.machine.element_pair_bytes)
    b.step(StepKind.COPY, copy_text(False), (w,), (weights,), exchange=True)
    packed = k.options.gemm_output_packing is GemmOutputPacking.PACKED
    partials = write_result(b, op, gemm.partials_layout(p, 2, k.prefix), "partials", shape=(p.pk, p.m, p.n),
                            precision=accumulate, alignment=None if packed else k.machine.element_pair_bytes)
    b.step(StepKind.GEMM, gemm.gemm_text(p, multiply, accumulate), (expanded, weights), (partials,))
    out = write_result(b, op, plan.output)
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    reads = (partials,) if bias is None else (partials, bias)
    scratch = (p.pk + 1) * e * accumulate.bytes + (0 if bias is None else min(p.n, e) * b.precision(bias).bytes)
    b.step(StepKind.SUM, "Sum { axis: 0, staging: Complete }", reads, (out,), {"standard": scratch}, exchange=True)
    return b.done(out)


def lower_poplibs(k: Kernel, op: Operation, plan: OpPlan[object], cp: convplan.ConvPartition,
                  operands: Sequence[Sequence[Operand]]) -> Fragment:
    """One `Conv` step reading the input and the weights where they rest (and the
    bias), writing the output in the plan's layout. Scratch per tile and serial
    iteration (`ConvPartition`): the input window `input_elements` (channels padded to
    the AMP's grain), the input's rearranged share when it rests in a linear mapping
    and the plan splits the output channels (`convplan.rearranged_bytes`), the
    expanded input's share when the plan expands field dimensions
    (`transform_bytes`) and, when the plan broadcasts them, the weights block
    `weight_elements`, in the multiply precision, in standard memory; the partials
    `partial_elements` in the accumulate precision (with a serial input-channel split
    also the output accumulated across iterations, with a parallel one the received
    partials beyond the operands' buffers: `convplan.partials_scratch`), in
    interleaved memory. The weights rest spread over the tiles, which holds as many
    bytes a tile as poplin's `createWeights` layout when the plan does not broadcast
    them (each tile its block): then they count no scratch. An input in another
    precision than the weights is converted within the window (counted in the
    multiply precision). `cp` is the plan's detail."""
    b = FragmentBuilder(operands)
    reads = tuple(b.operand(i) for i in range(len(operands)))
    multiply = b.precision(reads[1])
    accumulate = Precision(k.amp(multiply).accumulate)
    rearranged = convplan.rearranged_bytes(cp, b.layout(reads[0]), b.shape(reads[0]), multiply.bytes, k.tile_count)
    scratch = convplan.step_scratch(cp, rearranged, cp.broadcasts_weights, multiply.bytes, accumulate.bytes)
    out = write_result(b, op, plan.output)
    b.step(StepKind.CONV, convplan.plan_text("Conv", cp, multiply.to_text(), accumulate.to_text()), reads, (out,),
           scratch, exchange=True)
    return b.done(out)


def lower_grouped(k: Kernel, op: Operation, plan: OpPlan[object], operands: Sequence[Sequence[Operand]]
                  ) -> Fragment:
    """One `GroupedConv` step, output spread. A tile with e output elements receives at
    most min(input, e x kernel x channels per group) input elements and min(weights,
    e x kernel x channels per group) weights, and accumulates e partials in F32."""
    b = FragmentBuilder(operands)
    reads = tuple(b.operand(i) for i in range(len(operands)))
    x_shape, w_shape = b.shape(reads[0]), b.shape(reads[1])
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    window = math.prod(w_shape[1:])
    scratch = (min(math.prod(x_shape), e * window) * b.precision(reads[0]).bytes
               + min(math.prod(w_shape), e * window) * b.precision(reads[1]).bytes + e * F32_BYTES)
    out = write_result(b, op, plan.output)
    b.step(StepKind.GROUPED_CONV, f"GroupedConv {{ groups: {op.attr('groups')}, exchange: {flag(True)} }}", reads,
           (out,), {"standard": scratch}, exchange=True)
    return b.done(out)


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


def plan_spread(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    return OpPlan(wanted=(None,), rest=(None,), output=spread_layout(k, op.output_precision), detail=None)


def lower_pool(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
               dies: Sequence[bool]) -> Fragment:
    """One `Pool` step, output spread. Scratch: a tile with e output elements receives
    at most min(input, e x window) input elements (the window: the kernel, or for
    adaptive pooling ceil(in / out) per dimension) and accumulates e partials in F32."""
    b = FragmentBuilder(operands)
    x = b.operand(0)
    x_shape = b.shape(x)
    if op.kind == "adaptive_avgpool":
        window = math.prod(-(-i // o) for i, o in zip(x_shape[2:], op.output_shape[2:]))
    else:
        window = math.prod(_spatial(dict(op.attrs), "kernel", len(x_shape) - 2, 1))
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    scratch = min(math.prod(x_shape), e * window) * b.precision(x).bytes + e * F32_BYTES
    out = write_result(b, op, plan.output)
    kind = "Max" if op.kind == "maxpool" else "Average"
    b.step(StepKind.POOL, f"Pool {{ op: {kind}, exchange: true }}", (x,), (out,), {"standard": scratch},
           exchange=True)
    return b.done(out)


def resize_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    size = tuple(int(s) for s in attrs["size"])
    if len(x) < 3 or len(size) != len(x) - 2 or any(s < 1 for s in size):
        raise ModelError(f"resize of {list(x)} to {list(size)}: expected [N, C, ...] and one size >= 1 per spatial "
                         "dimension")
    if attrs["mode"] not in RESIZE_TAPS:
        raise ModelError(f"resize mode {attrs['mode']!r}: expected {', '.join(RESIZE_TAPS)}")
    return (x[0], x[1], *size)


#: input elements one output element of a resize reads, per spatial dimension
RESIZE_TAPS = {"nearest": 1, "linear": 2, "cubic": 4}


def lower_resize(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                 dies: Sequence[bool]) -> Fragment:
    """One `Resize` step, output spread. Scratch: a tile with e output elements receives
    at most min(input, e x taps) input elements, taps = 1 (nearest), 2 (linear) or 4
    (cubic) per spatial dimension."""
    b = FragmentBuilder(operands)
    x = b.operand(0)
    taps = RESIZE_TAPS[str(op.attr("mode"))] ** (len(op.output_shape) - 2)
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    out = write_result(b, op, plan.output)
    b.step(StepKind.RESIZE, f"Resize {{ mode: {op.attr('mode')}, exchange: true }}", (x,), (out,),
           {"standard": min(math.prod(b.shape(x)), e * taps) * b.precision(x).bytes}, exchange=True)
    return b.done(out)


CONV_ATTRS = {"strides": None, "pads": None, "dilations": None, "groups": 1}
POOL_ATTRS = {"kernel": REQUIRED, "strides": None, "pads": None, "dilations": None, "ceil_mode": False}
register("conv", inputs=(2, 3), attrs=CONV_ATTRS, shape=conv_shape, plan=plan_conv, lower=lower_conv,
         weight_inputs=(1,))
register("maxpool", inputs=(1, 1), attrs=POOL_ATTRS, shape=pool_shape, plan=plan_spread, lower=lower_pool)
register("avgpool", inputs=(1, 1), attrs=POOL_ATTRS, shape=pool_shape, plan=plan_spread, lower=lower_pool)
register("adaptive_avgpool", inputs=(1, 1), attrs={"output_size": REQUIRED}, shape=adaptive_shape,
         plan=plan_spread, lower=lower_pool)
register("resize", inputs=(1, 1), attrs={"size": REQUIRED, "mode": "nearest", "exact": False, "antialias": False},
         shape=resize_shape, plan=plan_spread,
         lower=lower_resize)
