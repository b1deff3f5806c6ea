"""One planning rule and one lowering per operation kind.

`plan_*` decides layouts from the inputs' shapes and (for activations) layouts:
what each input is read in (`wanted`), where a parameter input should rest (`rest`)
and the output's layout. `lower_*` then emits the steps, inserting a `Copy` wherever
an input is not where the operation reads it, and writes elementwise results in place
when their first input dies there. Scratch rules are in each docstring and in
docs/report-format.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tileplan.errors import TilingError
from tileplan.lowering import gemm
from tileplan.lowering.core import (
    AttentionProducts, GemmOutputPacking, LoweringContext, op_result_name,
)
from tileplan.lowering.gemm import PlanningError
from tileplan.lowering.layouts import (
    broadcast_layout, heads_layout, linear_layout, same_placement, scores_layout,
)
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout, Padding
from tileplan.model.precision import F16, Precision

F32_BYTES = 4
#: keys per chunk when attention products are streamed
KEY_CHUNK = 64
#: partial statistics a tile combines at once: a row split over more partitions is
#: reduced in a tree of this fan-in (as Poplar's multi-stage reductions do)
REDUCE_FAN_IN = 16


@dataclass(frozen=True, slots=True)
class InputInfo:
    """What planning knows of an input: shape, precision, layout (None for a tensor
    whose resting layout the policy has not chosen yet) and whether it is declared."""

    shape: tuple[int, ...]
    precision: Precision
    layout: Layout | None
    declared: bool


@dataclass(frozen=True, slots=True)
class OpPlan:
    wanted: tuple[Layout | None, ...]
    rest: tuple[Layout | None, ...]
    output: Layout
    alignment: tuple[int | None, ...] = ()
    detail: object = None


def _activation_layout(ctx: LoweringContext, info: InputInfo) -> Layout:
    """An input's layout if known, else where an undecided tensor would be spread."""
    if info.layout is not None:
        return info.layout
    return linear_layout(ctx.machine.tile_count, info.precision.bytes, ctx.prefix, Padding.ZERO)


# matmul -------------------------------------------------------------------------------

def plan_matmul(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    x, w = ins
    multiply = w.precision
    geometry = ctx.machine.amp_for(multiply)
    accumulate = Precision(geometry.accumulate)
    p = gemm.partition_gemm(x.shape[-2], x.shape[-1], w.shape[-1], ctx.machine.tile_count, geometry,
                            multiply.bytes, accumulate.bytes, op.name)
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
    """Convert (in place when narrower), Copy to the operand layout, Gemm on the AMP,
    Sum of the K partials. Sum scratch (staging Complete): the pk partial slices of
    a tile's output block and one accumulator, (pk + 1) x output shard elements x the
    accumulate precision's bytes, in standard memory."""
    p: gemm.GemmPartition = plan.detail  # type: ignore[assignment]
    (x,), weights = ins
    multiply = ctx.value(weights[0]).precision
    accumulate = Precision(p.geometry.accumulate)
    xv = ctx.value(x)
    if xv.precision != multiply:
        narrower = multiply.bytes <= xv.precision.bytes
        converted = ctx.new_value(xv.origin, xv.name, xv.shape, multiply, xv.layout,
                                  storage_of=x if narrower else None, group=xv.group)
        ctx.add_step(op, "Convert LocalKernel", count, (x,), (converted,))
        x = converted
    result = ctx.new_value(op.origin, op_result_name(op), op.output_shape, op.output_precision, plan.output)
    x = copy_if_needed(ctx, op, x, plan.wanted[0], count)  # type: ignore[arg-type]
    weights = place(ctx, op, weights, plan.wanted[1], count, plan.alignment[1])
    needs_sum = p.pk > 1 or accumulate != op.output_precision
    text = (f"Gemm {{ multiply: {multiply.to_text()}, accumulate: {accumulate.to_text()}, mode: Initialize, "
            f"weights: Standard, inner_block: {p.k_tile}, output_columns: {p.geometry.output_channels} }}")
    if not needs_sum:
        ctx.add_step(op, text, count, (x, *weights), (result,))
        return result
    packed = ctx.options.gemm_output_packing is GemmOutputPacking.PACKED
    partials = ctx.new_value(op.origin, op_result_name(op), (p.pk, *op.output_shape), accumulate,
                             gemm.partials_layout(p, len(op.output_shape), ctx.prefix),
                             alignment_bytes=None if packed else ctx.machine.element_pair_bytes)
    ctx.add_step(op, text, count, (x, *weights), (partials,))
    out_elements = ctx.shards(plan.output, op.output_shape, op_result_name(op)).largest_elements
    ctx.add_step(op, "Sum { axis: 0, staging: Complete }", count, (partials,), (result,),
                 {"standard": (p.pk + 1) * out_elements * accumulate.bytes})
    return result


def place(ctx: LoweringContext, op: Operation, ids: tuple[int, ...], wanted: Layout | None, count: int,
          alignment: int | None = None) -> tuple[int, ...]:
    """An input as the operation reads it: as is when every member is in `wanted`, else
    one `Copy` (of the current iteration's member, for a family read in a repeat
    block) into a new value."""
    if wanted is None or all(ctx.value(i).layout == wanted for i in ids):
        return ids
    if len(ids) == 1:
        return (copy_if_needed(ctx, op, ids[0], wanted, count, alignment),)
    first = ctx.value(ids[0])
    copied = ctx.new_value(op.origin, op_result_name(op), first.shape, first.precision, wanted,
                           alignment_bytes=alignment)
    ctx.add_step(op, "Copy { mapping: CoordinateMapping { offsets: [], view: None }, reuse_local: false }",
                 count, ids, (copied,))
    return (copied,)


def copy_if_needed(ctx: LoweringContext, op: Operation, vid: int, wanted: Layout, count: int,
                   alignment: int | None = None) -> int:
    """A `Copy` of value `vid` into `wanted` unless it is there already. The copy
    reuses local data (`reuse_local: true`) when every tile already holds the
    elements it needs, and exchanges otherwise."""
    v = ctx.value(vid)
    if v.layout == wanted:
        return vid
    copied = ctx.new_value(op.origin, op_result_name(op), v.shape, v.precision, wanted, alignment_bytes=alignment)
    try:
        local = same_placement(ctx.shards(v.layout, v.shape, v.name), ctx.shards(wanted, v.shape, v.name))
    except TilingError:
        local = False
    ctx.add_step(op, "Copy { mapping: CoordinateMapping { offsets: [], view: None }, "
                     f"reuse_local: {str(local).lower()} }}", count, (vid,), (copied,))
    return copied


# elementwise ----------------------------------------------------------------------------

def plan_add(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    a, b = ins
    a_layout = _activation_layout(ctx, a)
    if b.shape != a.shape:
        b_layout = broadcast_layout(a_layout, a.shape, b.shape, ctx.prefix)
    else:
        b_layout = a_layout
    return OpPlan(wanted=(a_layout, b_layout), rest=(a_layout, b_layout), output=a_layout)


def _write(ctx: LoweringContext, op: Operation, source: int, layout: Layout, in_place: bool) -> int:
    """The output value: in the storage of `source` when it dies here (in place)."""
    return ctx.new_value(op.origin, op_result_name(op), op.output_shape, op.output_precision, layout,
                         storage_of=source if in_place else None)


def _can_write_in_place(ctx: LoweringContext, vid: int, dies: bool, layout: Layout, op: Operation) -> bool:
    v = ctx.value(vid)
    return dies and not ctx.is_declared(vid) and v.layout == layout and v.precision.bytes >= op.output_precision.bytes \
        and v.shape == op.output_shape


def lower_add(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
              dies: list[bool]) -> int:
    """One `Binary { op: Add }` step; the second operand is re-laid out first if it
    is not where the first one's tiles need it. No scratch."""
    (a,), bs = ins
    a = copy_if_needed(ctx, op, a, plan.wanted[0], count)  # type: ignore[arg-type]
    bs = place(ctx, op, bs, plan.wanted[1], count)
    in_place = _can_write_in_place(ctx, a, dies[0], plan.output, op)
    out = _write(ctx, op, a, plan.output, in_place)
    broadcast = ctx.value(bs[0]).shape != op.output_shape
    ctx.add_step(op, f"Binary {{ op: Add, broadcast: {str(broadcast).lower()}, in_place: {str(in_place).lower()} }}",
                 count, (a, *bs), (out,))
    return out


def plan_unary(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    layout = _activation_layout(ctx, ins[0])
    return OpPlan(wanted=(layout,), rest=(layout,), output=layout)


def lower_gelu(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
               dies: list[bool]) -> int:
    """One `Unary { op: Gelu }` step, in place when its input dies. No scratch."""
    ((x,),) = ins
    x = copy_if_needed(ctx, op, x, plan.wanted[0], count)  # type: ignore[arg-type]
    in_place = _can_write_in_place(ctx, x, dies[0], plan.output, op)
    out = _write(ctx, op, x, plan.output, in_place)
    approximate = "Tanh" if op.attr("approximate") == "tanh" else "Erf"
    ctx.add_step(op, f"Unary {{ op: Gelu({approximate}), in_place: {str(in_place).lower()} }}", count, (x,), (out,))
    return out


# layernorm ------------------------------------------------------------------------------

def plan_layernorm(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    x, scale, bias = ins
    layout = _activation_layout(ctx, x)
    s_layout = broadcast_layout(layout, x.shape, scale.shape, ctx.prefix)
    b_layout = broadcast_layout(layout, x.shape, bias.shape, ctx.prefix)
    return OpPlan(wanted=(layout, s_layout, b_layout), rest=(layout, s_layout, b_layout), output=layout)


def row_split(ctx: LoweringContext, layout: Layout, shape: tuple[int, ...], name: str) -> tuple[int, int]:
    """(rows per tile, partitions of the last dimension) of a layout on a shape."""
    shards = ctx.shards(layout, shape, name)
    last = len(shape) - 1
    for axis, split in zip(layout.tiling.axes, shards.splits):
        if axis.axis.is_linear:  # rows are cut anywhere: a tile may touch two more rows
            return math.ceil(shards.largest_elements / shape[-1]) + 1, min(axis.partitions, shape[-1])
        if axis.axis.dim(len(shape)) == last:
            return shards.largest_elements // split.largest, axis.partitions
    return shards.largest_elements // shape[-1], 1


def lower_layernorm(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
                    dies: list[bool]) -> int:
    """Two steps. `Statistics`: each tile sums its columns of its rows (sum and sum
    of squares, F32) and exchanges them with the other partitions of the row, reduced
    in a tree of fan-in 16; scratch (min(column partitions, 16) + 1) x rows x 2 x 4 B.
    `Normalize`: scales, shifts; scratch rows x 2 x 4 B (mean and inverse deviation)."""
    (x,), scales, biases = ins
    x = copy_if_needed(ctx, op, x, plan.wanted[0], count)  # type: ignore[arg-type]
    scales = place(ctx, op, scales, plan.wanted[1], count)
    biases = place(ctx, op, biases, plan.wanted[2], count)
    xv = ctx.value(x)
    rows, parts = row_split(ctx, xv.layout, xv.shape, xv.name)
    stats = 2 * F32_BYTES * rows
    ctx.add_step(op, f"LayerNorm {{ stage: Statistics, exchange: {str(parts > 1).lower()} }}", count, (x,), (),
                 {"standard": (min(parts, REDUCE_FAN_IN) + 1) * stats})
    in_place = _can_write_in_place(ctx, x, dies[0], plan.output, op)
    out = _write(ctx, op, x, plan.output, in_place)
    ctx.add_step(op, f"LayerNorm {{ stage: Normalize, in_place: {str(in_place).lower()} }}", count,
                 (x, *scales, *biases), (out,), {"standard": stats})
    return out


# attention ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AttentionGrid:
    """Tiles as head partitions x query partitions. Invariant: the product is the
    tile count; `heads_per_part` x `head_parts` = heads."""

    heads: int
    head_dim: int
    head_parts: int
    query_parts: int
    queries: int
    keys: int

    @property
    def heads_per_part(self) -> int:
        return self.heads // self.head_parts

    @property
    def rows(self) -> int:
        return math.ceil(self.queries / self.query_parts)


def plan_attention(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    heads = int(op.attr("heads"))  # type: ignore[arg-type]
    dim = op.output_shape[-1]
    tiles = ctx.machine.tile_count
    head_parts = math.gcd(heads, tiles)
    grid = AttentionGrid(heads, dim // heads, head_parts, tiles // head_parts, op.output_shape[-2], ins[-1].shape[-2])
    out = heads_layout(tiles, grid.query_parts, head_parts, grid.heads_per_part * grid.head_dim, ctx.prefix)
    layouts = tuple(_activation_layout(ctx, i) for i in ins)
    return OpPlan(wanted=layouts, rest=layouts, output=out, detail=grid)


def attention_costs(grid: AttentionGrid, element_bytes: int) -> dict[str, int]:
    """Per-tile bytes of each strategy at its largest step (value + scratch).

    Materialized: the scores of its rows for all keys (hb x rows x keys x 2 B) plus
    all keys (or values) of its heads gathered (hb x keys x head_dim x 2 B).
    Streamed, keys in chunks of c = min(keys, 64): per head, one chunk of keys and one
    of values (2 x c x head_dim x 2 B), a chunk of scores in F32 (rows x c x 4 B), the
    output accumulator in F32 (rows x head_dim x 4 B) and the running max and sum
    (rows x 2 x 4 B)."""
    hb, rows, d, s = grid.heads_per_part, grid.rows, grid.head_dim, grid.keys
    c = min(s, KEY_CHUNK)
    gathered = hb * s * d * element_bytes
    scores = hb * rows * s * element_bytes
    streamed = hb * (2 * c * d * element_bytes + rows * c * F32_BYTES + rows * d * F32_BYTES + rows * 2 * F32_BYTES)
    return {"materialized": scores + gathered, "gathered": gathered, "streamed": streamed, "chunk": c}


def lower_attention(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
                    dies: list[bool]) -> int:
    """Split heads (a `Copy` that exchanges q, k and v into head-major layouts), then
    either the materialized products (scores, softmax in place, scores x values) or
    one streamed step; `Automatic` takes the one whose largest step needs fewer bytes
    per tile (see `attention_costs`)."""
    grid: AttentionGrid = plan.detail  # type: ignore[assignment]
    tiles = ctx.machine.tile_count
    hb, d = grid.heads_per_part, grid.head_dim
    layout_q = heads_layout(tiles, grid.query_parts, grid.head_parts, hb * d, ctx.prefix)
    layout_kv = heads_layout(tiles, grid.query_parts, grid.head_parts, hb * d, ctx.prefix)
    name = op_result_name(op)
    dim = op.output_shape[-1]
    sources = [i[0] for i in ins]
    q_shape = (*op.output_shape[:-1], dim)
    kv_shape = (*ctx.value(sources[-1]).shape[:-1], dim)
    q = ctx.new_value(op.origin, name, q_shape, F16, layout_q)
    k = ctx.new_value(op.origin, name, kv_shape, F16, layout_kv)
    v = ctx.new_value(op.origin, name, kv_shape, F16, layout_kv)
    ctx.add_step(op, f"Copy {{ mapping: SplitHeads {{ heads: {grid.heads} }}, reuse_local: false }}", count,
                 tuple(sources), (q, k, v))
    costs = attention_costs(grid, F16.bytes)
    choice = ctx.options.attention_products
    if choice is AttentionProducts.AUTOMATIC:
        scores_bytes = ctx.shards(scores_layout(tiles, grid.query_parts, grid.head_parts, hb, ctx.prefix),
                                  (grid.heads, grid.queries, grid.keys), name).largest_bytes(F16)
        choice = (AttentionProducts.STREAMED if costs["streamed"] < scores_bytes + costs["gathered"]
                  else AttentionProducts.MATERIALIZED)
    out = ctx.new_value(op.origin, name, op.output_shape, op.output_precision, plan.output)
    if choice is AttentionProducts.STREAMED:
        ctx.add_step(op, f"AttentionStreamed {{ heads: {grid.heads}, key_chunk: {costs['chunk']} }}", count,
                     (q, k, v), (out,), {"standard": costs["streamed"]})
        return out
    scores = ctx.new_value(op.origin, name, (grid.heads, grid.queries, grid.keys), F16,
                           scores_layout(tiles, grid.query_parts, grid.head_parts, hb, ctx.prefix))
    ctx.add_step(op, f"AttentionScores {{ heads: {grid.heads}, keys: Gathered }}", count, (q, k), (scores,),
                 {"standard": costs["gathered"]})
    probs = ctx.new_value(op.origin, name, (grid.heads, grid.queries, grid.keys), F16, ctx.value(scores).layout,
                          storage_of=scores)
    ctx.add_step(op, "Softmax { axis: -1, in_place: true }", count, (scores,), (probs,),
                 {"standard": hb * grid.rows * 2 * F32_BYTES})
    ctx.add_step(op, f"AttentionValues {{ heads: {grid.heads}, values: Gathered }}", count, (probs, v), (out,),
                 {"standard": costs["gathered"]})
    return out


PLANS = {"matmul": plan_matmul, "add": plan_add, "gelu": plan_unary, "layernorm": plan_layernorm,
         "attention": plan_attention}
LOWERINGS = {"matmul": lower_matmul, "add": lower_add, "gelu": lower_gelu, "layernorm": lower_layernorm,
             "attention": lower_attention}

__all__ = ["PLANS", "LOWERINGS", "InputInfo", "OpPlan", "PlanningError"]
