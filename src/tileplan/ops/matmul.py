"""Matrix products: `matmul` ([..., M, K] x [K, N] on the AMP through the GEMM
partitioner, or batched [..., M, K] x [..., K, N]) and `grouped_matmul` (a mixture
of experts' products: rows [M, K] sorted by expert, each run of rows times its
expert's [K, N] of the weights [E, K, N]; transformers' `grouped_mm`).

A product with a 2-D right operand (a Linear layer's weight, a patch embedding as its
implicit GEMM) is split over the tiles by `tileplan.kernel.gemm`: the left operand
in M x K blocks replicated over the N partitions, the weights in K x N blocks in AMP
order replicated over the M partitions, K partials in interleaved memory, then a Sum.
A batched product (attention scores when attention is decomposed, `bmm`) is planned
as a spread: its output spread linearly, each tile receiving the rows of the left
operand and the columns of the right one its output elements need.

With the default policy (`Kernel.poplibs`) a product with a 2-D right operand is
planned as poplin plans it (`tileplan.kernel.convplan`: a 1-D convolution, parallel
and serial splits, the fastest under the memory cap) and lowered as one `Matmul`
step: the left operand read where it rests and received block by block on each tile,
the weights read where they were created (`createMatMulInputRHS`: when the plan does
not split the rows, each tile already holds its block; else they are spread and each
tile receives its block), the partials accumulated on the tile; the step's scratch is
what poplin counts as the product's temporary memory (received inputs and weights
in standard memory, partials in interleaved) and the output is spread over the tiles.
Two attributes say what a training program's products are: `joint`, a fully connected
layer planned with its gradients (poplin's joint plan, `tileplan.ops.gradients`), and
`grouped`, a batched product of activations (attention's, and their gradients) planned
as poplin's grouped matmul, both operands received.
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
    F32_BYTES, InputInfo, OpPlan, Shape, broadcast_shapes, copy_if_needed, flag, place, register, shard_elements,
    spread_layout, write_result,
)


def matmul_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    a, b = ins
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise ModelError(f"matmul needs [..., M, K] x [..., K, N], found {list(a)} x {list(b)}")
    return (*broadcast_shapes(a[:-2], b[:-2]), a[-2], b[-1])


@dataclass(frozen=True, slots=True)
class BatchedProduct:
    """The detail of a batched product of two activations planned as a spread (one
    `BatchedGemm` step: `lower_batched`); it needs nothing more of its plan."""


BATCHED = BatchedProduct()
#: what a matmul's lowering reads of its plan: a batched product's mark, the reference
#: planner's GEMM partition, or poplin's plan (a product with 2-D weights, a grouped one)
MatmulDetail = BatchedProduct | gemm.GemmPartition | convplan.ConvPartition


def _is_gemm(ins: list[InputInfo]) -> bool:
    return len(ins[1].shape) == 2


def plan_matmul(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[MatmulDetail]:
    if not _is_gemm(ins):
        a, b = ins
        if op.attr("grouped") and k.poplibs and a.shape[:-2] == b.shape[:-2]:
            return plan_grouped(k, op, ins)
        return OpPlan(wanted=(None, None), rest=(None, None), output=spread_layout(k, op.output_precision),
                      detail=BATCHED)
    if k.poplibs:
        return plan_poplibs(k, op, ins)
    x, w = ins
    multiply = w.precision
    geometry = k.amp(multiply)
    accumulate = Precision(geometry.accumulate)
    p = gemm.partition_gemm(x.shape[-2], x.shape[-1], w.shape[-1], k.tile_count, geometry, multiply.bytes,
                            accumulate.bytes, op.name, k.cap_bytes)
    rank = len(x.shape)
    return OpPlan(
        wanted=(gemm.left_layout(p, rank, k.prefix, resting=False), gemm.weight_layout(p, k.prefix)),
        rest=(gemm.left_layout(p, rank, k.prefix, resting=True), gemm.weight_layout(p, k.prefix)),
        output=gemm.output_layout(p, k.prefix),
        alignment=(None, k.machine.element_pair_bytes),
        detail=p,
        temporary=gemm.temporary_bytes(p, multiply.bytes, accumulate.bytes),
    )


def lower_matmul(k: Kernel, op: Operation, plan: OpPlan[MatmulDetail], operands: Sequence[Sequence[Operand]],
                 dies: Sequence[bool]) -> Fragment:
    """`Convert` x to the weights' precision when it differs (in place when narrower
    and x dies here), `Copy` x and the weights into the AMP's operand layouts, `Gemm`,
    then `Sum` of the K partials. Sum scratch (staging Complete): the pk partial
    slices of a tile's output block and one accumulator, (pk + 1) x output shard
    elements x the accumulate precision's bytes, in standard memory. The other steps
    have none."""
    p = plan.detail
    if isinstance(p, BatchedProduct):
        return lower_batched(k, op, plan, operands)
    if isinstance(p, convplan.ConvPartition):
        return lower_poplibs(k, op, plan, p, operands, dies)
    b = FragmentBuilder(operands)
    x = b.operand(0)
    multiply = b.precision(b.operand(1))
    accumulate = Precision(p.geometry.accumulate)
    if b.precision(x) != multiply:
        # in place only where nothing reads x after this product (q, k and v projections share x)
        narrower = multiply.bytes <= b.precision(x).bytes and dies[0]
        converted = b.new(ValueKind.CONVERTED, b.shape(x), multiply, b.layout(x), of=x,
                          storage=x if narrower else None)
        b.step(StepKind.CONVERT, "Convert LocalKernel", (x,), (converted,))
        x = converted
    result = write_result(b, op, plan.output)
    x = copy_if_needed(k, b, op, x, plan.wanted[0], why="AMP copy")
    weights = place(k, b, op, 1, plan.wanted[1], alignment=plan.alignment[1], why="AMP copy")
    needs_sum = p.pk > 1 or accumulate != op.output_precision
    text = gemm.gemm_text(p, multiply, accumulate)
    if not needs_sum:
        b.step(StepKind.GEMM, text, (x, *weights), (result,))
        return b.done(result)
    packed = k.options.gemm_output_packing is GemmOutputPacking.PACKED
    partials = write_result(b, op, gemm.partials_layout(p, len(op.output_shape), k.prefix), "partials",
                            shape=(p.pk, *op.output_shape), precision=accumulate,
                            alignment=None if packed else k.machine.element_pair_bytes)
    b.step(StepKind.GEMM, text, (x, *weights), (partials,))
    out_elements = shard_elements(k, plan.output, op.output_shape, op.name)
    b.step(StepKind.SUM, "Sum { axis: 0, staging: Complete }", (partials,), (result,),
           {"standard": (p.pk + 1) * out_elements * accumulate.bytes}, exchange=True)
    return b.done(result)


def joint_fc_plan(k: Kernel, op: Operation, x: Shape, w: Shape, multiply: Precision) -> convplan.JointPlan:
    """poplin's joint plan of the fully connected layer x [.., M, K] @ w [K, N] in
    training (`convplan.plan_joint_fc`), which its forward product and both gradient
    products (`tileplan.ops.gradients`) share."""
    geometry = k.amp(multiply)
    return convplan.plan_joint_fc(math.prod(x[:-1]), x[-1], w[-1], k.tile_count, geometry, multiply.bytes,
                                  Precision(geometry.accumulate).bytes, k.machine.tile_bytes,
                                  k.options.available_memory_proportion, op.name)


def plan_poplibs(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[convplan.ConvPartition]:
    """poplin's plan of [.., M, K] x [K, N] (M all the left operand's rows): the
    weights created in the plan's layout when the rows are not split (each tile holds
    its block, nothing broadcast), else spread by the policy; the output spread. With
    `joint` (a fully connected layer in training) the forward pass of poplin's joint
    plan, which never splits M: the weights always rest in its layout."""
    x, w = ins
    geometry = k.amp(w.precision)
    accumulate = Precision(geometry.accumulate)
    if op.attr("joint"):  # a fully connected layer in training: poplin's joint plan (ops/gradients.py)
        cp = joint_fc_plan(k, op, x.shape, w.shape, w.precision).forward
    else:
        shape = convplan.ConvShape.matmul(math.prod(x.shape[:-1]), x.shape[-1], w.shape[-1])
        cp = convplan.plan_conv(shape, k.tile_count, geometry, w.precision.bytes, accumulate.bytes,
                                k.machine.tile_bytes, k.options.available_memory_proportion, op.name,
                                fully_connected=True)
    created = None
    if not cp.broadcasts_weights:
        created = gemm.weight_layout(convplan.gemm_partition(cp, geometry, whole=True), k.prefix)
    return OpPlan(wanted=(None, None), rest=(None, created), output=spread_layout(k, op.output_precision),
                  detail=cp, temporary=cp.temp_bytes)


def plan_grouped(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[convplan.ConvPartition]:
    """A batched product of two activations [G.., M, K] x [G.., K, N] as poplin plans a
    grouped matmul (`grouped`; training's attention products): a 1-D convolution of G
    groups (`convplan.plan_conv`), both operands received per tile, the output spread."""
    a, b = ins
    geometry = k.amp(b.precision)
    shape = convplan.ConvShape.matmul(a.shape[-2], a.shape[-1], b.shape[-1], math.prod(a.shape[:-2]))
    cp = convplan.plan_conv(shape, k.tile_count, geometry, b.precision.bytes, Precision(geometry.accumulate).bytes,
                            k.machine.tile_bytes, k.options.available_memory_proportion, op.name)
    return OpPlan(wanted=(None, None), rest=(None, None), output=spread_layout(k, op.output_precision), detail=cp,
                  temporary=cp.temp_bytes)


def lower_poplibs(k: Kernel, op: Operation, plan: OpPlan[object], cp: convplan.ConvPartition,
                  operands: Sequence[Sequence[Operand]], dies: Sequence[bool]) -> Fragment:
    """`Convert` x to the weights' precision when it differs (in place when narrower,
    x dies here and its storage is not a declared tensor's), then one `Matmul` step.
    Scratch, per tile and serial iteration (`ConvPartition`): the left block
    `input_elements`, the left operand's rearranged share when it rests in a linear
    mapping and the plan splits the output channels (`convplan.rearranged_bytes`) and,
    unless the weights rest in the plan's layout, the weight block `weight_elements`,
    all in the multiply precision, in standard memory; the partials `partial_elements`
    in the accumulate precision (with a serial input-channel split also the output
    accumulated across iterations, `output_elements`, and with a parallel one the
    received partials beyond the operands' buffers: `convplan.partials_scratch`), in
    interleaved memory. `cp` is the plan's detail."""
    b = FragmentBuilder(operands)
    x = b.operand(0)
    weights = b.members(1)
    multiply = b.precision(weights[0])
    geometry = k.amp(multiply)
    accumulate = Precision(geometry.accumulate)
    if b.precision(x) != multiply:
        narrower = multiply.bytes <= b.precision(x).bytes and dies[0] and not b.declared_storage(x)
        converted = b.new(ValueKind.CONVERTED, b.shape(x), multiply, b.layout(x), of=x,
                          storage=x if narrower else None)
        b.step(StepKind.CONVERT, "Convert LocalKernel", (x,), (converted,))
        x = converted
    created = plan.rest[1]
    in_place = created is not None and all(b.layout(w) == created for w in weights)
    rearranged = convplan.rearranged_bytes(cp, b.layout(x), b.shape(x), multiply.bytes, k.tile_count)
    scratch = convplan.step_scratch(cp, rearranged, not in_place, multiply.bytes, accumulate.bytes)
    result = write_result(b, op, plan.output)
    b.step(StepKind.MATMUL, convplan.plan_text("Matmul", cp, multiply.to_text(), accumulate.to_text()),
           (x, *weights), (result,), scratch, exchange=True)
    return b.done(result)


def lower_batched(k: Kernel, op: Operation, plan: OpPlan[object], operands: Sequence[Sequence[Operand]]
                  ) -> Fragment:
    """One `BatchedGemm` step, output spread. Each tile's output shard is a run of e
    elements of the row-major [..., M, N] output: it touches r = min(rows, ceil(e / N)
    + 1) rows and c = min(N, e) columns, so it receives r x K elements of the left
    operand and K x c of the right one, and accumulates e partials in F32: scratch
    (r x K + K x c) x input bytes + e x 4 B."""
    b = FragmentBuilder(operands)
    a, w = b.operand(0), b.operand(1)
    m, kk, n = op.output_shape[-2], b.shape(a)[-1], op.output_shape[-1]
    rows = math.prod(op.output_shape[:-1])
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    r, c = min(rows, math.ceil(e / n) + 1), min(n, e)
    scratch = r * kk * b.precision(a).bytes + kk * c * b.precision(w).bytes + e * F32_BYTES
    out = write_result(b, op, plan.output)
    batch = math.prod(op.output_shape[:-2])
    b.step(StepKind.BATCHED_GEMM, f"BatchedGemm {{ batch: {batch}, m: {m}, k: {kk}, n: {n}, exchange: {flag(True)} }}",
           (a, w), (out,), {"standard": scratch}, exchange=True)
    return b.done(out)


register("matmul", inputs=(2, 2), attrs={"joint": False, "grouped": False}, shape=matmul_shape, plan=plan_matmul,
         lower=lower_matmul, weight_inputs=(1,))


def experts_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, w, offsets = ins
    if len(x) != 2 or len(w) != 3 or x[1] != w[1] or offsets != (w[0],):
        raise ModelError(f"grouped_matmul needs rows [M, K], experts' weights [E, K, N] and E offsets, found "
                         f"{list(x)}, {list(w)} and {list(offsets)}")
    return (x[0], w[2])


def plan_experts(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    return OpPlan(wanted=(None, None, None), rest=(None, None, None), output=spread_layout(k, op.output_precision),
                  detail=None)


def lower_experts(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                  dies: Sequence[bool]) -> Fragment:
    """One `GroupedGemm` step, output spread, like a batched product whose right
    operand is the expert of each row. A tile's output run of e elements of the
    [M, N] output touches r = min(M, ceil(e / N) + 1) rows of at most min(E, r)
    experts and c = min(N, e) columns: it receives r x K elements of the rows, min(E, r)
    x K x c of the weights and the E offsets (4 B each), and accumulates e partials in
    F32: scratch r x K x row bytes + min(E, r) x K x c x weight bytes + E x 4 + e x 4 B."""
    b = FragmentBuilder(operands)
    x, w, offsets = (b.operand(i) for i in range(3))
    experts, kk = b.shape(w)[0], b.shape(x)[1]
    rows, n = op.output_shape
    e = shard_elements(k, plan.output, op.output_shape, op.name)
    r, c = min(rows, math.ceil(e / n) + 1), min(n, e)
    scratch = (r * kk * b.precision(x).bytes + min(experts, r) * kk * c * b.precision(w).bytes
               + experts * 4 + e * F32_BYTES)
    out = write_result(b, op, plan.output)
    b.step(StepKind.GROUPED_GEMM, f"GroupedGemm {{ experts: {experts}, m: {rows}, k: {kk}, n: {n}, exchange: true }}",
           (x, w, offsets), (out,), {"standard": scratch}, exchange=True)
    return b.done(out)


register("grouped_matmul", inputs=(3, 3), shape=experts_shape, plan=plan_experts, lower=lower_experts,
         weight_inputs=(1,))
