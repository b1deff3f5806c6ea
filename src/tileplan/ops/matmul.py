"""Matrix products: `matmul` ([..., M, K] x [K, N] on the AMP through the GEMM
partitioner, or batched [..., M, K] x [..., K, N]).

A product with a 2-D right operand (a Linear layer's weight, a patch embedding as its
implicit GEMM) is split over the tiles by `tileplan.lowering.gemm`: the left operand
in M x K blocks replicated over the N partitions, the weights in K x N blocks in AMP
order replicated over the M partitions, K partials in interleaved memory, then a Sum.
A batched product (attention scores when attention is decomposed, `bmm`) is planned
as a spread: its output spread linearly, each tile receiving the rows of the left
operand and the columns of the right one its output elements need.
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
    F32_BYTES, InputInfo, OpPlan, Shape, broadcast_shapes, copy_if_needed, flag, place,
    register, shard_elements, spread_layout,
)


def matmul_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    a, b = ins
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise ModelError(f"matmul needs [..., M, K] x [..., K, N], found {list(a)} x {list(b)}")
    return (*broadcast_shapes(a[:-2], b[:-2]), a[-2], b[-1])


def _is_gemm(ins: list[InputInfo]) -> bool:
    return len(ins[1].shape) == 2


def plan_matmul(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    if not _is_gemm(ins):
        return OpPlan(wanted=(None, None), rest=(None, None), output=spread_layout(ctx, op.output_precision),
                      detail="batched")
    x, w = ins
    multiply = w.precision
    geometry = ctx.machine.amp_for(multiply)
    accumulate = Precision(geometry.accumulate)
    p = gemm.partition_gemm(x.shape[-2], x.shape[-1], w.shape[-1], ctx.machine.tile_count, geometry,
                            multiply.bytes, accumulate.bytes, op.name,
                            ctx.cap_bytes)
    ctx.note_temporary(op, gemm.temporary_bytes(p, multiply.bytes, accumulate.bytes))
    rank = len(x.shape)
    pair = ctx.machine.element_pair_bytes
    return OpPlan(
        wanted=(gemm.left_layout(p, rank, ctx.prefix, resting=False), gemm.weight_layout(p, ctx.prefix)),
        rest=(gemm.left_layout(p, rank, ctx.prefix, resting=True), gemm.weight_layout(p, ctx.prefix)),
        output=gemm.output_layout(p, ctx.prefix),
        alignment=(None, pair),
        detail=p,
    )


def lower_matmul(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
                 dies: list[bool]) -> int:
    """Convert (in place when narrower and x dies here), Copy to the operand layout, Gemm on the AMP,
    Sum of the K partials. Sum scratch (staging Complete): the pk partial slices of
    a tile's output block and one accumulator, (pk + 1) x output shard elements x the
    accumulate precision's bytes, in standard memory."""
    if plan.detail == "batched":
        return lower_batched(ctx, op, plan, ins, count)
    p = plan.detail
    assert isinstance(p, gemm.GemmPartition), p
    (x,), weights = ins
    multiply = ctx.value(weights[0]).precision
    accumulate = Precision(p.geometry.accumulate)
    xv = ctx.value(x)
    if xv.precision != multiply:
        # in place only where nothing reads x after this product (q, k and v projections share x)
        narrower = multiply.bytes <= xv.precision.bytes and dies[0]
        label = xv.name if ctx.reference_names else f"{xv.name} [as {'F8' if multiply.is_fp8 else multiply.name}]"
        converted = ctx.new_value(xv.origin, label, xv.shape, multiply, xv.layout,
                                  storage_of=x if narrower else None, group=xv.group)
        ctx.add_step(op, "Convert LocalKernel", count, (x,), (converted,))
        x = converted
    result = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output)
    x = copy_if_needed(ctx, op, x, plan.wanted[0], count, name=ctx.copy_name(op, x, "AMP copy"))
    weights = place(ctx, op, weights, plan.wanted[1], count, plan.alignment[1],
                    name=ctx.copy_name(op, weights[0], "AMP copy", op.inputs[1]))
    needs_sum = p.pk > 1 or accumulate != op.output_precision
    text = gemm.gemm_text(p, multiply, accumulate)
    if not needs_sum:
        ctx.add_step(op, text, count, (x, *weights), (result,))
        return result
    packed = ctx.options.gemm_output_packing is GemmOutputPacking.PACKED
    partials = ctx.new_value(op.origin, ctx.result_name(op, "partials"), (p.pk, *op.output_shape), accumulate,
                             gemm.partials_layout(p, len(op.output_shape), ctx.prefix),
                             alignment_bytes=None if packed else ctx.machine.element_pair_bytes)
    ctx.add_step(op, text, count, (x, *weights), (partials,))
    out_elements = ctx.shards(plan.output, op.output_shape, op.name).largest_elements
    ctx.add_step(op, "Sum { axis: 0, staging: Complete }", count, (partials,), (result,),
                 {"standard": (p.pk + 1) * out_elements * accumulate.bytes})
    return result


def lower_batched(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]],
                  count: int) -> int:
    """One `BatchedGemm` step, output spread. Each tile's output shard is a run of e
    elements of the row-major [..., M, N] output: it touches r = min(rows, ceil(e / N)
    + 1) rows and c = min(N, e) columns, so it receives r x K elements of the left
    operand and K x c of the right one, and accumulates e partials in F32: scratch
    (r x K + K x c) x input bytes + e x 4 B."""
    (a,), (b,) = ins
    av, bv = ctx.value(a), ctx.value(b)
    m, k, n = op.output_shape[-2], av.shape[-1], op.output_shape[-1]
    rows = math.prod(op.output_shape[:-1])
    e = shard_elements(ctx, plan.output, op.output_shape, op.name)
    r, c = min(rows, math.ceil(e / n) + 1), min(n, e)
    scratch = r * k * av.precision.bytes + k * c * bv.precision.bytes + e * F32_BYTES
    out = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output)
    batch = math.prod(op.output_shape[:-2])
    ctx.add_step(op, f"BatchedGemm {{ batch: {batch}, m: {m}, k: {k}, n: {n}, exchange: {flag(True)} }}", count,
                 (a, b), (out,), {"standard": scratch})
    return out


register("matmul", inputs=(2, 2), shape=matmul_shape, plan=plan_matmul, lower=lower_matmul)
