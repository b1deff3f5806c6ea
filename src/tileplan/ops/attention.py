"""Attention: `attention` (the built-in towers' fused form: packed q, k, v [.., S, 3D]
or q [.., Sq, D] with kv [.., S, 2D], `heads` attribute) and `sdpa` (scaled
dot-product attention as PyTorch exports it: q [..., Hq, Sq, D], k [..., Hkv, Skv, D],
v [..., Hkv, Skv, Dv], an optional mask, `causal`; grouped-query heads when Hkv
divides Hq).

Tiles form a grid of head partitions x query partitions. q, k and v are re-laid out
head-major (a `Copy` with the `SplitHeads` mapping, exchanging), then either the
materialized products (scores, softmax in place, scores x values) or one streamed
step with an online softmax; `Automatic` takes the one whose largest step needs fewer
bytes per tile (`attention_costs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, cast

from tileplan.errors import ModelError
from tileplan.lowering.core import AttentionProducts, LoweringContext
from tileplan.lowering.layouts import heads_layout, scores_layout
from tileplan.model.ir import Operation
from tileplan.model.layout import ROW_MAJOR, Axis, AxisTiling, Layout, MemoryClass, Padding, TensorTiling
from tileplan.model.precision import F16
from tileplan.ops.base import (
    F32_BYTES, REQUIRED, InputInfo, OpPlan, Shape, activation_layout, broadcast_shapes, register, shard_elements,
)

#: keys per chunk when attention products are streamed
KEY_CHUNK = 64


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
    heads = op.int_attr("heads")
    dim = op.output_shape[-1]
    tiles = ctx.machine.tile_count
    head_parts = math.gcd(heads, tiles)
    grid = AttentionGrid(heads, dim // heads, head_parts, tiles // head_parts, op.output_shape[-2], ins[-1].shape[-2])
    out = heads_layout(tiles, grid.query_parts, head_parts, grid.heads_per_part * grid.head_dim, ctx.prefix)
    layouts = tuple(activation_layout(ctx, i) for i in ins)
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
    grid = plan.detail
    assert isinstance(grid, AttentionGrid), grid
    tiles = ctx.machine.tile_count
    hb, d = grid.heads_per_part, grid.head_dim
    layout_q = heads_layout(tiles, grid.query_parts, grid.head_parts, hb * d, ctx.prefix)
    layout_kv = heads_layout(tiles, grid.query_parts, grid.head_parts, hb * d, ctx.prefix)
    name = ctx.result_name(op)
    dim = op.output_shape[-1]
    sources = [i[0] for i in ins]
    q_shape = (*op.output_shape[:-1], dim)
    kv_shape = (*ctx.value(sources[-1]).shape[:-1], dim)
    q = ctx.new_value(op.origin, ctx.result_name(op, "q"), q_shape, F16, layout_q)
    k = ctx.new_value(op.origin, ctx.result_name(op, "k"), kv_shape, F16, layout_kv)
    v = ctx.new_value(op.origin, ctx.result_name(op, "v"), kv_shape, F16, layout_kv)
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
    scores = ctx.new_value(op.origin, ctx.result_name(op, "scores"), (grid.heads, grid.queries, grid.keys), F16,
                           scores_layout(tiles, grid.query_parts, grid.head_parts, hb, ctx.prefix))
    ctx.add_step(op, f"AttentionScores {{ heads: {grid.heads}, keys: Gathered }}", count, (q, k), (scores,),
                 {"standard": costs["gathered"]})
    probs = ctx.new_value(op.origin, ctx.result_name(op, "probabilities"), (grid.heads, grid.queries, grid.keys), F16,
                          ctx.value(scores).layout,
                          storage_of=scores)
    ctx.add_step(op, "Softmax { axis: -1, in_place: true }", count, (scores,), (probs,),
                 {"standard": hb * grid.rows * 2 * F32_BYTES})
    ctx.add_step(op, f"AttentionValues {{ heads: {grid.heads}, values: Gathered }}", count, (probs, v), (out,),
                 {"standard": costs["gathered"]})
    return out


def attention_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    heads = int(attrs["heads"])
    if len(ins) == 1:  # packed [.., S, 3D]
        (qkv,) = ins
        if qkv[-1] % 3 or heads < 1 or (qkv[-1] // 3) % heads:
            raise ModelError(f"attention needs packed q, k, v of 3 x heads x head_dim, found {list(qkv)} "
                             f"with {heads} heads")
        return (*qkv[:-1], qkv[-1] // 3)
    q, kv = ins  # q [.., Sq, D], kv [.., S, 2D]; q's leading dimensions broadcast against kv's
    if kv[-1] != 2 * q[-1] or heads < 1 or q[-1] % heads:
        raise ModelError(f"attention needs q [.., D] and kv [.., 2D] with D divisible by heads, found "
                         f"{list(q)}, {list(kv)}, {heads} heads")
    return (*broadcast_shapes(q[:-2], kv[:-2]), q[-2], q[-1])


register("attention", inputs=(1, 2), attrs={"heads": REQUIRED}, shape=attention_shape, plan=plan_attention,
         lower=lower_attention)


# sdpa -----------------------------------------------------------------------------------

def sdpa_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    q, k, v, *mask = ins
    if not 3 <= len(q) <= 4 or len(k) != len(q) or len(v) != len(q):
        raise ModelError(f"sdpa needs q, k, v of rank 3 or 4 ([batch, heads, sequence, dim]), found "
                         f"{list(q)}, {list(k)}, {list(v)}")
    if q[-1] != k[-1] or k[-2] != v[-2] or k[:-3] != q[:-3] or v[:-2] != k[:-2]:
        raise ModelError(f"sdpa needs q [.., Hq, Sq, D], k [.., Hkv, Skv, D], v [.., Hkv, Skv, Dv], found "
                         f"{list(q)}, {list(k)}, {list(v)}")
    if q[-3] % k[-3]:
        raise ModelError(f"sdpa: {k[-3]} key/value heads do not divide {q[-3]} query heads")
    out = (*q[:-1], v[-1])
    if mask:
        try:
            broadcast_shapes(mask[0], (*q[:-1], k[-2]))
        except ModelError:
            raise ModelError(f"sdpa: mask {list(mask[0])} does not broadcast to the scores "
                             f"{[*q[:-1], k[-2]]}") from None
    return out


@dataclass(frozen=True, slots=True)
class SdpaGrid:
    """Tiles as batch partitions x head partitions x query partitions (the product is
    the tile count; each count divides what it splits)."""

    batch: int
    heads: int
    batch_parts: int
    head_parts: int
    query_parts: int


def _grid(tiles: int, batch: int, heads: int) -> SdpaGrid:
    pb = math.gcd(batch, tiles)
    ph = math.gcd(heads, tiles // pb)
    return SdpaGrid(batch, heads, pb, ph, tiles // (pb * ph))


def sdpa_layout(tiles: int, grid: SdpaGrid, rank: int, prefix: str, region: str = "Standard") -> Layout:
    """[B, H, S, D] (or [G, S, D]): rows over the query partitions (stride 1), heads in
    blocks of H / head_parts, batch in blocks of B / batch_parts."""
    axes = [AxisTiling(Axis.from_end(2), grid.query_parts, 1, 1, 1, 1, Padding.ZERO, None),
            AxisTiling(Axis.from_end(3), grid.head_parts, 1, grid.heads // grid.head_parts,
                       grid.heads // grid.head_parts, 1, Padding.ZERO, None)]
    if rank == 4:
        axes.append(AxisTiling(Axis.from_end(4), grid.batch_parts, 1, grid.batch // grid.batch_parts,
                               grid.batch // grid.batch_parts, 1, Padding.ZERO, None))
    return Layout(ROW_MAJOR, TensorTiling(tiles, 1, tuple(axes)), MemoryClass(prefix, region))


def _batch(shape: Shape) -> int:
    return shape[0] if len(shape) == 4 else 1


def plan_sdpa(ctx: LoweringContext, op: Operation, ins: list[InputInfo]) -> OpPlan:
    tiles = ctx.machine.tile_count
    q, k = ins[0], ins[1]
    rank = len(q.shape)
    grid_q = _grid(tiles, _batch(q.shape), q.shape[-3])
    grid_kv = _grid(tiles, _batch(k.shape), k.shape[-3])
    lq = sdpa_layout(tiles, grid_q, rank, ctx.prefix)
    lkv = sdpa_layout(tiles, grid_kv, rank, ctx.prefix)
    wanted = (lq, lkv, lkv, *(None for _ in ins[3:]))
    return OpPlan(wanted=wanted, rest=wanted, output=lq, detail=(grid_q, grid_kv))


def lower_sdpa(ctx: LoweringContext, op: Operation, plan: OpPlan, ins: list[tuple[int, ...]], count: int,
               dies: list[bool]) -> int:
    """`SplitHeads` copies of q, k and v into the head-major grid (those not already
    there), then the products (see `lower_attention`). Per tile, with hb heads of its
    partition, rows = ceil(Sq / query partitions) and keys = Skv: materialized scores
    hb x rows x keys x 2 B (interleaved), the scores step gathering every key of its
    heads (hb x keys x D x 2 B), the values step every value (hb x keys x Dv x 2 B);
    streamed as `attention_costs`. A mask is read where it is: each tile receives its
    rows of it (mask heads per tile x rows x keys x its bytes) in the scores or streamed
    step."""
    grid_q, grid_kv = cast("tuple[SdpaGrid, SdpaGrid]", plan.detail)
    tiles = ctx.machine.tile_count
    q, k, v = (ids[0] for ids in ins[:3])
    mask = ins[3][0] if len(ins) > 3 else None
    moved = [(i, vid) for i, vid in enumerate((q, k, v)) if ctx.value(vid).layout != plan.wanted[i]]
    if moved:
        made = []
        for i, vid in moved:
            src = ctx.value(vid)
            wanted = plan.wanted[i]
            assert wanted is not None, "sdpa reads q, k and v head-major"
            made.append(ctx.new_value(op.origin, ctx.copy_name(op, vid, "heads"), src.shape, src.precision, wanted))
        ctx.add_step(op, f"Copy {{ mapping: SplitHeads {{ heads: {grid_q.heads} }}, reuse_local: false }}", count,
                     tuple(vid for _, vid in moved), tuple(made))
        renamed = dict(zip((i for i, _ in moved), made))
        q, k, v = (renamed.get(i, vid) for i, vid in enumerate((q, k, v)))
    qv, kv_ = ctx.value(q), ctx.value(k)
    heads = _batch(qv.shape) * qv.shape[-3]
    head_parts = grid_q.batch_parts * grid_q.head_parts
    grid = AttentionGrid(heads, qv.shape[-1], head_parts, grid_q.query_parts, qv.shape[-2], kv_.shape[-2])
    costs = attention_costs(grid, F16.bytes)
    mask_bytes = 0
    if mask is not None:
        m = ctx.value(mask)
        mask_heads = grid.heads_per_part if math.prod(m.shape[:-2]) > 1 else 1
        mask_bytes = mask_heads * min(grid.rows, m.shape[-2]) * m.shape[-1] * m.precision.bytes
    reads_qk = (q, k) if mask is None else (q, k, mask)
    scores_shape = (*qv.shape[:-1], kv_.shape[-2])
    scores_layout_ = sdpa_layout(tiles, grid_q, len(qv.shape), ctx.prefix, "Interleaved")
    choice = ctx.options.attention_products
    if choice is AttentionProducts.AUTOMATIC:
        scores_bytes = shard_elements(ctx, scores_layout_, scores_shape, op.name) * F16.bytes
        choice = (AttentionProducts.STREAMED if costs["streamed"] < scores_bytes + costs["gathered"]
                  else AttentionProducts.MATERIALIZED)
    out = ctx.new_value(op.origin, ctx.result_name(op), op.output_shape, op.output_precision, plan.output)
    causal = str(bool(op.attr("causal", False))).lower()
    if choice is AttentionProducts.STREAMED:
        ctx.add_step(op, f"AttentionStreamed {{ heads: {heads}, key_chunk: {costs['chunk']}, causal: {causal} }}",
                     count, (*reads_qk, v), (out,), {"standard": costs["streamed"] + mask_bytes})
        return out
    scores = ctx.new_value(op.origin, ctx.result_name(op, "scores"), scores_shape, F16, scores_layout_)
    ctx.add_step(op, f"AttentionScores {{ heads: {heads}, keys: Gathered, causal: {causal} }}", count, reads_qk,
                 (scores,), {"standard": costs["gathered"] + mask_bytes})
    probs = ctx.new_value(op.origin, ctx.result_name(op, "probabilities"), scores_shape, F16, scores_layout_,
                          storage_of=scores)
    ctx.add_step(op, "Softmax { axis: -1, in_place: true }", count, (scores,), (probs,),
                 {"standard": grid.heads_per_part * grid.rows * 2 * F32_BYTES})
    ctx.add_step(op, f"AttentionValues {{ heads: {heads}, values: Gathered }}", count, (probs, v), (out,),
                 {"standard": costs["gathered"]})
    return out


register("sdpa", inputs=(3, 4), attrs={"causal": False, "scale": None}, shape=sdpa_shape, plan=plan_sdpa,
         lower=lower_sdpa)
