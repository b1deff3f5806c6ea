"""Backward operators: what a training program's backward pass runs.

The joint forward and backward graph (`tileplan.importers.joint`) maps PyTorch's
backward operators onto these; the rest of a backward pass is forward operators
(additions of gradients, reshapes, the batched products of attention's backward).
Each lowering states its scratch in its docstring; `tests/test_gradients.py` checks
each against a hand computation.

* `matmul_grad_input` (dX = dY W^T) and `matmul_grad_weight` (dW = X^T dY): the
  backward and weight-update passes of poplin's joint plan of a fully connected layer
  (`tileplan.kernel.convplan.plan_joint_fc`, shared with its forward `matmul` marked
  `joint`): W is read where the forward pass created it, and dW is made in the same
  layout, so the weight update and the gradient accumulator read it in place.
* `conv_grad_weight` and `conv_grad_input`: a convolution's gradients as poplin plans
  their implicit products (its weight-update and backward passes), read where the
  operands are.
* `layernorm_grad` and `layernorm_grad_weight`: PopART's GroupNormGradOpx, which
  whitens the forward input again (a full-size temporary) and reduces in F32.
* `softmax_grad` (softmax and log-softmax, from the forward output, as PopART's
  SoftmaxGradOp keeps it) and `activation_grad` (GELU, tanh, SiLU, sigmoid, ReLU, from
  the forward input, as PopART's ElementWiseNonLinearUnaryGradOp keeps it).
* `embedding_grad`: PopART's GatherGradOpx, a dense table-shaped result zeroed and
  added into at the looked-up rows (popops::multiUpdateAdd).
* `nll_loss` and `nll_loss_grad`: the cross-entropy's pick of log-probabilities and
  its gradient (zeros with the picked entries set).

Attention's backward is these and the forward operators: two batched products per
forward product (`matmul`, batched) and `softmax_grad` of the saved probabilities.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.kernel import convplan, gemm
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, Ref, StepKind, ValueKind
from tileplan.kernel.layouts import compact_layout
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout
from tileplan.model.precision import Precision
from tileplan.ops.base import (
    F32_BYTES, REDUCE_FAN_IN, REQUIRED, InputInfo, OpPlan, Shape, activation_layout, always, can_write_in_place,
    copy_if_needed, flag, place, register, row_split, shard_elements, spread_layout, write_result,
)
from tileplan.ops.elementwise import _lower as lower_elementwise
from tileplan.ops.elementwise import Broadcast, plan_elementwise
from tileplan.ops.matmul import joint_fc_plan
from tileplan.ops.norm import plan_norm


# Fully connected layers: the backward and weight-update passes of the joint plan -----

def grad_input_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    dy, w = ins
    if len(w) != 2 or len(dy) < 2 or dy[-1] != w[1]:
        raise ModelError(f"matmul_grad_input needs dY [..., M, N] and W [K, N], found {list(dy)} and {list(w)}")
    return (*dy[:-1], w[0])


def grad_weight_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, dy = ins
    if len(x) < 2 or x[:-1] != dy[:-1]:
        raise ModelError(f"matmul_grad_weight needs X [..., M, K] and dY [..., M, N], found {list(x)} and {list(dy)}")
    return (x[-1], dy[-1])


def _created(k: Kernel, jp: convplan.JointPlan, multiply: Precision) -> Layout:
    """Where the forward pass created W (`createMatMulInputRHS` of the joint plan)."""
    return gemm.weight_layout(convplan.gemm_partition(jp.forward, k.amp(multiply), whole=True), k.prefix)


def plan_grad_input(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[convplan.ConvPartition]:
    dy, w = ins
    jp = joint_fc_plan(k, op, (*dy.shape[:-1], w.shape[0]), w.shape, w.precision)
    return OpPlan(wanted=(None, None), rest=(None, _created(k, jp, w.precision)),
                  output=spread_layout(k, op.output_precision), detail=jp.backward, temporary=jp.backward.temp_bytes)


def plan_grad_weight(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[convplan.ConvPartition]:
    x, dy = ins
    multiply = op.output_precision
    jp = joint_fc_plan(k, op, x.shape, op.output_shape, multiply)
    return OpPlan(wanted=(None, None), rest=(None, None), output=_created(k, jp, multiply), detail=jp.update,
                  temporary=jp.update.temp_bytes)


def _pass_text(kind: str, cp: convplan.ConvPartition, multiply: Precision, accumulate: Precision) -> str:
    """`Matmul { pass: backward, multiply: F16, ... }`: the pass first (another vertex kind)."""
    text = convplan.plan_text("Matmul", cp, multiply.to_text(), accumulate.to_text())
    return f"Matmul {{ pass: {kind}, " + text[len("Matmul { "):]


def _converted(b: FragmentBuilder, x: Ref, multiply: Precision, dies: bool) -> Ref:
    """`x` in the multiply precision: a `Convert` (in place when narrower, `x` dies
    here and is not a declared tensor's storage) when it is in another."""
    if b.precision(x) == multiply:
        return x
    narrower = multiply.bytes <= b.precision(x).bytes and dies and not b.declared_storage(x)
    converted = b.new(ValueKind.CONVERTED, b.shape(x), multiply, b.layout(x), of=x, storage=x if narrower else None)
    b.step(StepKind.CONVERT, "Convert LocalKernel", (x,), (converted,))
    return converted


def lower_grad_input(k: Kernel, op: Operation, plan: OpPlan[convplan.ConvPartition],
                     operands: Sequence[Sequence[Operand]], dies: Sequence[bool]) -> Fragment:
    """dX [..., M, K] = dY [..., M, N] W^T: one `Matmul { pass: backward }` step, the
    backward pass of the joint plan (`convplan.plan_joint_fc`). Scratch per tile and
    serial iteration: the dY block `input_elements` received and, unless W rests where
    the forward pass created it, the W block `weight_elements`, both in the multiply
    precision, in standard memory; the partials `partial_elements` in the accumulate
    precision, in interleaved memory. dX is spread."""
    cp = plan.detail
    b = FragmentBuilder(operands)
    weights = b.members(1)
    multiply = b.precision(weights[0])
    accumulate = Precision(k.amp(multiply).accumulate)
    dy = _converted(b, b.operand(0), multiply, dies[0])
    in_place = plan.rest[1] is not None and all(b.layout(w) == plan.rest[1] for w in weights)
    standard = cp.input_elements * multiply.bytes + (0 if in_place else cp.weight_elements * multiply.bytes)
    interleaved = cp.partial_elements * accumulate.bytes
    out = write_result(b, op, plan.output)
    b.step(StepKind.MATMUL, _pass_text("backward", cp, multiply, accumulate), (dy, *weights), (out,),
           {"standard": standard, "interleaved": interleaved}, exchange=True)
    return b.done(out)


def lower_grad_weight(k: Kernel, op: Operation, plan: OpPlan[convplan.ConvPartition],
                      operands: Sequence[Sequence[Operand]], dies: Sequence[bool]) -> Fragment:
    """dW [K, N] = X^T dY: one `Matmul { pass: update }` step, the weight-update pass of
    the joint plan (`convplan.plan_joint_fc`), dW written where the forward pass
    created W. Scratch per tile and serial iteration: the X and dY blocks
    (`input_elements`, both received) in the multiply precision, in standard memory;
    the partials `partial_elements` (with a serial split, dW accumulated across the
    iterations too) in the accumulate precision, in interleaved memory."""
    cp = plan.detail
    b = FragmentBuilder(operands)
    multiply = op.output_precision
    accumulate = Precision(k.amp(multiply).accumulate)
    x = _converted(b, b.operand(0), multiply, dies[0])
    dy = _converted(b, b.operand(1), multiply, dies[1])
    out = write_result(b, op, plan.output)
    b.step(StepKind.MATMUL, _pass_text("update", cp, multiply, accumulate), (x, dy), (out,),
           {"standard": (cp.input_elements + cp.weight_elements) * multiply.bytes,
            "interleaved": cp.partial_elements * accumulate.bytes}, exchange=True)
    return b.done(out)


# Convolutions ---------------------------------------------------------------------------

def conv_grad_weight_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, dy = ins
    kernel, groups = tuple(int(k) for k in attrs["kernel"]), int(attrs["groups"])
    if len(x) != len(dy) or len(x) - 2 != len(kernel) or x[0] != dy[0] or x[1] % groups or dy[1] % groups:
        raise ModelError(f"conv_grad_weight needs X [N, C, ...] and dY [N, O, ...] of {groups} groups and a kernel "
                         f"of their spatial rank, found {list(x)}, {list(dy)} and {list(kernel)}")
    return (dy[1], x[1] // groups, *kernel)


def conv_grad_input_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    """dX's shape: the `input_shape` attribute, held to the geometry it transposes. Per
    spatial dimension, the convolution of stride s, pads (b, e) and dilation d maps dX's
    size X to dY's size Y = (X + b + e - d (k - 1) - 1) // s + 1, so X is (Y - 1) s - b -
    e + d (k - 1) + 1 plus the rows the stride skipped (PyTorch's `output_padding`),
    0 <= extra < max(s, d)."""
    dy, w = ins
    shape = tuple(int(d) for d in attrs["input_shape"])
    n = len(dy) - 2
    strides, pads, dilations = (tuple(int(v) for v in attrs[k]) for k in ("strides", "pads", "dilations"))
    if len(dy) != len(w) or len(shape) != len(dy) or dy[1] != w[0] or shape[0] != dy[0]:
        raise ModelError(f"conv_grad_input needs dY [N, O, ...], W [O, C/g, ...] and the input's shape, found "
                         f"{list(dy)}, {list(w)} and {list(shape)}")
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n or min((*strides, *dilations), default=1) < 1 \
            or min(pads, default=0) < 0:
        raise ModelError(f"conv_grad_input of spatial rank {n} needs {n} strides and dilations (>= 1) and {2 * n} "
                         f"pads (>= 0), found {list(strides)}, {list(dilations)} and {list(pads)}")
    for d in range(n):
        base = (dy[2 + d] - 1) * strides[d] - pads[d] - pads[d + n] + dilations[d] * (w[2 + d] - 1) + 1
        if not 0 <= shape[2 + d] - base < max(strides[d], dilations[d]):
            raise ModelError(f"conv_grad_input: dimension {2 + d} of the input's shape {list(shape)} is not what dY "
                             f"{list(dy)} transposes to ({base} plus fewer than {max(strides[d], dilations[d])} "
                             f"rows) with stride {strides[d]}, pads {pads[d]}/{pads[d + n]} and dilation "
                             f"{dilations[d]}")
    return shape


def _conv_gemm(k: Kernel, op: Operation, m: int, kk: int, n: int, groups: int, multiply: Precision
               ) -> convplan.ConvPartition:
    """A convolution's gradient as poplin plans its implicit product [groups, m, kk] x
    [groups, kk, n] (a 1-D convolution of groups)."""
    geometry = k.amp(multiply)
    return convplan.plan_conv(convplan.ConvShape.matmul(m, kk, n, groups), k.tile_count, geometry, multiply.bytes,
                              Precision(geometry.accumulate).bytes, k.machine.tile_bytes,
                              k.options.available_memory_proportion, op.name)


def plan_conv_grad_weight(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[convplan.ConvPartition]:
    """dW [O, C/g, *kernel] = X^T dY as the implicit product ((C/g) prod(kernel)) x (N
    prod(output field)) x (O/g) of g groups, dW laid out compactly (`compact_layout`)."""
    x, dy = ins
    groups = op.int_attr("groups", 1)
    kernel = math.prod(op.output_shape[2:])
    cp = _conv_gemm(k, op, x.shape[1] // groups * kernel, dy.shape[0] * math.prod(dy.shape[2:]),
                    dy.shape[1] // groups, groups, op.output_precision)
    out = compact_layout(math.prod(op.output_shape), op.output_precision.bytes, k.tile_count, k.prefix)
    return OpPlan(wanted=(None, None), rest=(None, None), output=out, detail=cp, temporary=cp.temp_bytes)


def plan_conv_grad_input(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[convplan.ConvPartition]:
    """dX [N, C, *field] as the implicit product (N prod(field)) x ((O/g)
    prod(kernel)) x (C/g) of g groups; dX spread."""
    dy, w = ins
    groups = op.int_attr("groups", 1)
    cp = _conv_gemm(k, op, op.output_shape[0] * math.prod(op.output_shape[2:]),
                    w.shape[0] // groups * math.prod(w.shape[2:]), w.shape[1], groups, w.precision)
    return OpPlan(wanted=(None, None), rest=(None, None), output=spread_layout(k, op.output_precision), detail=cp,
                  temporary=cp.temp_bytes)


def lower_conv_grad(k: Kernel, op: Operation, plan: OpPlan[convplan.ConvPartition],
                    operands: Sequence[Sequence[Operand]], dies: Sequence[bool]) -> Fragment:
    """A convolution's gradient: one `Conv { pass: update }` (dW) or `Conv { pass:
    backward }` (dX) step, operands read where they are and received block by block.
    Scratch per tile and serial iteration (`ConvPartition` of the implicit product):
    the two operand blocks (`input_elements`, `weight_elements`) in the multiply
    precision, standard; the partials `partial_elements` in the accumulate precision
    (with a serial input-channel split also the output accumulated, `output_elements`),
    interleaved."""
    cp = plan.detail
    b = FragmentBuilder(operands)
    multiply = b.precision(b.operand(1)) if op.kind == "conv_grad_input" else op.output_precision
    accumulate = Precision(k.amp(multiply).accumulate)
    a, c = (_converted(b, b.operand(i), multiply, dies[i]) for i in (0, 1))
    interleaved = cp.partial_elements * accumulate.bytes
    if cp.serial_dim == "in" and cp.serial > 1:
        interleaved += cp.output_elements * accumulate.bytes
    out = write_result(b, op, plan.output)
    which = "update" if op.kind == "conv_grad_weight" else "backward"
    text = convplan.plan_text("Conv", cp, multiply.to_text(), accumulate.to_text())
    b.step(StepKind.CONV, f"Conv {{ pass: {which}, " + text[len("Conv { "):], (a, c), (out,),
           {"standard": (cp.input_elements + cp.weight_elements) * multiply.bytes, "interleaved": interleaved},
           exchange=True)
    return b.done(out)


# Layer norm -----------------------------------------------------------------------------

def layernorm_grad_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    dy, x, *params = ins
    if dy != x:
        raise ModelError(f"layernorm_grad needs dY and X of one shape, found {list(dy)} and {list(x)}")
    for p in params:
        if p[-1:] != x[-1:]:
            raise ModelError(f"layer norm scale must be a vector of {x[-1]}, found {list(p)}")
    return x


def lower_layernorm_grad(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                         dies: Sequence[bool]) -> Fragment:
    """dX of a layer norm: one `LayerNorm { stage: Gradient }` step in dY's layout, X
    re-laid out there if it rests elsewhere, dX in place of dY when dY dies. Scratch:
    X whitened again (popnn's groupNormWhiten: X's shard in X's precision) and four F32
    statistics per row (mean, inverse deviation, and the row sums of dY x scale and of
    dY x scale x the whitened X) with their reduction tree, (min(column partitions,
    16) + 1) x rows x 4 x 4 B; the scale received as the forward's is, when the layout
    is linear (at most min(vector, shard) elements)."""
    b = FragmentBuilder(operands)
    dy = copy_if_needed(k, b, op, b.operand(0), plan.wanted[0])
    x = place(k, b, op, 1, plan.wanted[1])[0]
    reads: list[Ref] = [dy, x]
    received = 0
    for j in range(2, len(operands)):
        if plan.wanted[j] is None:
            w = b.operand(j)
            received += min(math.prod(b.shape(w)), shard_elements(k, plan.output, op.output_shape, op.name)) * \
                b.precision(w).bytes
            reads.append(w)
        else:
            reads.extend(place(k, b, op, j, plan.wanted[j]))
    rows, parts = row_split(k, b.layout(dy), b.shape(dy), b.label(dy, op.name))
    whitened = shard_elements(k, b.layout(x), b.shape(x), b.label(x, op.name)) * b.precision(x).bytes
    stats = (min(parts, REDUCE_FAN_IN) + 1) * rows * 4 * F32_BYTES
    in_place = can_write_in_place(b, dy, dies[0], plan.output, op)
    out = write_result(b, op, plan.output, in_place_of=dy if in_place else None)
    b.step(StepKind.LAYER_NORM, f"LayerNorm {{ stage: Gradient, in_place: {flag(in_place)}, exchange: "
                                f"{flag(parts > 1 or received > 0)} }}", reads, (out,),
           {"standard": whitened + stats + received}, exchange=parts > 1 or received > 0)
    return b.done(out)


def plan_layernorm_grad(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    dy, x, *params = ins
    layout = activation_layout(k, dy)
    norm = plan_norm(k, op, [InputInfo(x.shape, x.precision, layout, x.declared), *params])
    wanted = (layout, layout, *norm.wanted[1:])
    return OpPlan(wanted=wanted, rest=(None, None, *norm.rest[1:]), output=layout, detail=None)


def layernorm_weight_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    dy, x = ins
    if dy != x:
        raise ModelError(f"layernorm_grad_weight needs dY and X of one shape, found {list(dy)} and {list(x)}")
    return (x[-1],)


def plan_reduced(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    """Inputs read where they are; the (small) output spread."""
    return OpPlan(wanted=tuple(None for _ in ins), rest=tuple(None for _ in ins),
                  output=spread_layout(k, op.output_precision), detail=None)


def lower_layernorm_weight(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                           dies: Sequence[bool]) -> Fragment:
    """The scale's gradient, the column sums of dY x whitened X (popnn's
    groupNormParamGradients, F32 partials): one `Reduce { op: LayerNormScaleGradient }`
    step. Scratch: the product on each tile (dY's shard in dY's precision), its F32
    partials p = min(columns, dY shard) x 4 B, and a stage receiving up to 16 partials
    for each output it holds, min(16, tiles) x output shard x 4 B."""
    b = FragmentBuilder(operands)
    dy, x = b.operand(0), b.operand(1)
    shard = shard_elements(k, b.layout(dy), b.shape(dy), b.label(dy, op.name))
    partials = min(op.output_shape[0], shard)
    stage = min(REDUCE_FAN_IN, k.tile_count) * shard_elements(k, plan.output, op.output_shape, op.name)
    out = write_result(b, op, plan.output)
    b.step(StepKind.REDUCE, "Reduce { op: LayerNormScaleGradient, exchange: true }", (dy, x), (out,),
           {"standard": shard * b.precision(dy).bytes + (partials + stage) * F32_BYTES}, exchange=True)
    return b.done(out)


# Softmax and unary non-linearities ------------------------------------------------------

def same_shapes(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    first = ins[0]
    if any(s != first for s in ins[1:]):
        raise ModelError(f"expected inputs of one shape, found {' and '.join(str(list(s)) for s in ins)}")
    return first


def plan_like_first(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    """The output in the first input's layout; every input read there."""
    layout = activation_layout(k, ins[0])
    wanted = tuple(layout for _ in ins)
    return OpPlan(wanted=wanted, rest=wanted, output=layout, detail=None)


def lower_softmax_grad(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                       dies: Sequence[bool]) -> Fragment:
    """dX of a softmax (dX = Y (dY - sum(dY Y))) or log-softmax (dX = dY - exp(Y)
    sum(dY)) from the forward output Y: one `Softmax { stage: Gradient }` step in dY's
    layout (Y re-laid out there if it rests elsewhere), in place of dY when it dies.
    Scratch: one F32 row sum with its reduction tree, (min(partitions of a row, 16) +
    1) x rows x 4 B."""
    b = FragmentBuilder(operands)
    dy = copy_if_needed(k, b, op, b.operand(0), plan.wanted[0])
    y = place(k, b, op, 1, plan.wanted[1])[0]
    rows, parts = row_split(k, b.layout(dy), b.shape(dy), b.label(dy, op.name))
    in_place = can_write_in_place(b, dy, dies[0], plan.output, op)
    out = write_result(b, op, plan.output, in_place_of=dy if in_place else None)
    which = "LogSoftmax" if op.attr("log") else "Softmax"
    b.step(StepKind.SOFTMAX, f"Softmax {{ stage: Gradient, of: {which}, in_place: {flag(in_place)}, exchange: "
                             f"{flag(parts > 1)} }}", (dy, y), (out,),
           {"standard": (min(parts, REDUCE_FAN_IN) + 1) * rows * F32_BYTES}, exchange=parts > 1)
    return b.done(out)


#: the non-linearities whose gradient `activation_grad` computes from their input
ACTIVATIONS = {"gelu": "GeluGrad", "tanh": "TanhGrad", "silu": "SiluGrad", "sigmoid": "SigmoidGrad",
               "relu": "ReluGrad"}


def lower_activation_grad(k: Kernel, op: Operation, plan: OpPlan[Broadcast], operands: Sequence[Sequence[Operand]],
                          dies: Sequence[bool]) -> Fragment:
    """dX = dY f'(X): one `Binary` step as any elementwise operator (the output in dY's
    layout, X re-laid out there if elsewhere, in place of dY when it dies); no
    scratch."""
    fn = op.attr("fn")
    if fn not in ACTIVATIONS:
        raise ModelError(f"activation_grad of {fn!r}: expected one of {', '.join(ACTIVATIONS)}")
    return lower_elementwise(k, op, plan, operands, dies, StepKind.BINARY, f"op: {ACTIVATIONS[str(fn)]}")


# Lookups and the loss ---------------------------------------------------------------------

def embedding_grad_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    dy, indices = ins
    if dy[:-1] != indices:
        raise ModelError(f"embedding_grad needs dY [..., H] over indices [...], found {list(dy)} and {list(indices)}")
    rows = int(attrs["rows"])
    if rows < 1:
        raise ModelError(f"embedding_grad needs rows >= 1, found {rows}")
    return (rows, dy[-1])


def plan_embedding_grad(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    """The dense gradient laid out compactly (`compact_layout`), a table's elements
    over as many tiles as it has 8-byte blocks."""
    out = compact_layout(math.prod(op.output_shape), op.output_precision.bytes, k.tile_count, k.prefix)
    return OpPlan(wanted=(None, None), rest=(None, None), output=out, detail=None)


def lower_embedding_grad(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                         dies: Sequence[bool]) -> Fragment:
    """The table's gradient: one `Scatter { op: MultiUpdateAdd }` step writing a dense
    zeroed [rows, H] tensor laid out as the table and adding each looked-up row's dY
    into it, the mirror of the lookup. Scratch: every tile receives the indices (4 B
    each) and the dY elements bound for its part of the table, at most min(dY, output
    shard) elements in dY's precision."""
    b = FragmentBuilder(operands)
    dy, indices = b.operand(0), b.operand(1)
    e = min(math.prod(b.shape(dy)), shard_elements(k, plan.output, op.output_shape, op.name))
    scratch = math.prod(b.shape(indices)) * 4 + e * b.precision(dy).bytes
    out = write_result(b, op, plan.output)
    b.step(StepKind.SCATTER, "Scatter { op: MultiUpdateAdd, exchange: true }", (dy, indices), (out,),
           {"standard": scratch}, exchange=True)
    return b.done(out)


def nll_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    logp, target = ins
    if logp[:-1] != target and not (len(logp) == 1 and target == (1,)):
        raise ModelError(f"nll_loss needs log-probabilities [N, C] and targets [N], found {list(logp)} and "
                         f"{list(target)}")
    return (1,)


def lower_nll(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
              dies: Sequence[bool]) -> Fragment:
    """The mean of the log-probabilities picked at the targets: one `Reduce { op:
    NllLoss }` step. Scratch: the targets received (4 B each) and the picked values
    in F32 with a stage of 16, (N + 16) x 4 B."""
    b = FragmentBuilder(operands)
    logp, target = b.operand(0), b.operand(1)
    n = math.prod(b.shape(target))
    out = write_result(b, op, plan.output)
    b.step(StepKind.REDUCE, "Reduce { op: NllLoss, exchange: true }", (logp, target), (out,),
           {"standard": n * 4 + (n + REDUCE_FAN_IN) * F32_BYTES}, exchange=True)
    return b.done(out)


def nll_grad_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    seed, logp, target = ins
    nll_shape([logp, target], attrs)
    return logp


def plan_nll_grad(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    return OpPlan(wanted=(None, None, None), rest=(None, None, None), output=activation_layout(k, ins[1]), detail=None)


def lower_nll_grad(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                   dies: Sequence[bool]) -> Fragment:
    """The loss's gradient with respect to the log-probabilities: one `Scatter { op:
    NllLossGradient }` step writing a new tensor of their shape and layout (zeros, the
    scaled seed at each target). Scratch: the targets received, N x 4 B."""
    b = FragmentBuilder(operands)
    seed, logp, target = b.operand(0), b.operand(1), b.operand(2)
    out = write_result(b, op, plan.output)
    b.step(StepKind.SCATTER, "Scatter { op: NllLossGradient, exchange: true }", (seed, logp, target), (out,),
           {"standard": math.prod(b.shape(target)) * 4}, exchange=True)
    return b.done(out)


register("matmul_grad_input", inputs=(2, 2), shape=grad_input_shape, plan=plan_grad_input, lower=lower_grad_input,
         weight_inputs=(1,))
register("matmul_grad_weight", inputs=(2, 2), shape=grad_weight_shape, plan=plan_grad_weight,
         lower=lower_grad_weight)
register("conv_grad_weight", inputs=(2, 2), attrs={"kernel": REQUIRED, "groups": 1}, shape=conv_grad_weight_shape,
         plan=plan_conv_grad_weight, lower=lower_conv_grad)
register("conv_grad_input", inputs=(2, 2),
         attrs={"input_shape": REQUIRED, "groups": 1, "strides": REQUIRED, "pads": REQUIRED, "dilations": REQUIRED},
         shape=conv_grad_input_shape, plan=plan_conv_grad_input, lower=lower_conv_grad, weight_inputs=(1,))
register("layernorm_grad", inputs=(2, 3), shape=layernorm_grad_shape, plan=plan_layernorm_grad,
         lower=lower_layernorm_grad)
register("layernorm_grad_weight", inputs=(2, 2), shape=layernorm_weight_shape, plan=plan_reduced,
         lower=lower_layernorm_weight)
register("softmax_grad", inputs=(2, 2), attrs={"axis": -1, "log": False}, shape=same_shapes, plan=plan_like_first,
         lower=lower_softmax_grad)
register("activation_grad", inputs=(2, 2), attrs={"fn": "gelu", "approximate": "none"}, shape=same_shapes,
         plan=plan_elementwise, lower=lower_activation_grad)
register("embedding_grad", inputs=(2, 2), attrs={"rows": 1}, shape=embedding_grad_shape, plan=plan_embedding_grad,
         lower=lower_embedding_grad)
register("nll_loss", inputs=(2, 2), shape=nll_shape, plan=plan_reduced, lower=lower_nll, dtype=always("float"))
register("nll_loss_grad", inputs=(3, 3), shape=nll_grad_shape, plan=plan_nll_grad, lower=lower_nll_grad,
         dtype=always("float"))
