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
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, Ref, StepKind, ValueKind
from tileplan.kernel.layouts import heads_layout, scores_layout
from tileplan.kernel.options import AttentionProducts
from tileplan.model.ir import Operation
from tileplan.model.layout import ROW_MAJOR, Axis, AxisTiling, Layout, MemoryClass, Padding, TensorTiling
from tileplan.ops.base import (
    F32_BYTES, REQUIRED, InputInfo, OpPlan, Shape, activation_layout, broadcast_shapes, register, shard_elements,
    write_result,
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


def plan_attention(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[AttentionGrid]:
    heads = op.int_attr("heads")
    dim = op.output_shape[-1]
    tiles = k.tile_count
    head_parts = math.gcd(heads, tiles)
    grid = AttentionGrid(heads, dim // heads, head_parts, tiles // head_parts, op.output_shape[-2], ins[-1].shape[-2])
    out = heads_layout(tiles, grid.query_parts, head_parts, grid.heads_per_part * grid.head_dim, k.prefix)
    layouts = tuple(activation_layout(k, i) for i in ins)
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


def lower_attention(k: Kernel, op: Operation, plan: OpPlan[AttentionGrid], operands: Sequence[Sequence[Operand]],
                    dies: Sequence[bool]) -> Fragment:
    """Split heads (a `Copy` that exchanges q, k and v into head-major layouts), then
    either the materialized products (scores, softmax in place, scores x values) or
    one streamed step; `Automatic` takes the one whose largest step needs fewer bytes
    per tile (see `attention_costs`). Scratch: streamed, `costs["streamed"]`; the
    scores and values steps each `costs["gathered"]` (all keys, or values, of a tile's
    heads); the softmax its rows' maxima and sums, heads per tile x rows x 2 x 4 B."""
    grid = plan.detail
    b = FragmentBuilder(operands)
    tiles = k.tile_count
    hb, d = grid.heads_per_part, grid.head_dim
    layout_q = heads_layout(tiles, grid.query_parts, grid.head_parts, hb * d, k.prefix)
    layout_kv = heads_layout(tiles, grid.query_parts, grid.head_parts, hb * d, k.prefix)
    dim = op.output_shape[-1]
    sources = [b.operand(i) for i in range(len(operands))]
    q_shape = (*op.output_shape[:-1], dim)
    kv_shape = (*b.shape(sources[-1])[:-1], dim)
    act = op.output_precision
    q = write_result(b, op, layout_q, "q", shape=q_shape, precision=act)
    kk = write_result(b, op, layout_kv, "k", shape=kv_shape, precision=act)
    v = write_result(b, op, layout_kv, "v", shape=kv_shape, precision=act)
    b.step(StepKind.COPY, f"Copy {{ mapping: SplitHeads {{ heads: {grid.heads} }}, reuse_local: false }}", sources,
           (q, kk, v), exchange=True)
    costs = attention_costs(grid, act.bytes)
    scores_at = scores_layout(tiles, grid.query_parts, grid.head_parts, hb, k.prefix)
    scores_shape = (grid.heads, grid.queries, grid.keys)
    choice = k.options.attention_products
    if choice is AttentionProducts.AUTOMATIC:
        scores_bytes = k.shards(scores_at, scores_shape, op.name).largest_bytes(act)
        choice = (AttentionProducts.STREAMED if costs["streamed"] < scores_bytes + costs["gathered"]
                  else AttentionProducts.MATERIALIZED)
    out = write_result(b, op, plan.output)
    if choice is AttentionProducts.STREAMED:
        b.step(StepKind.ATTENTION_STREAMED, f"AttentionStreamed {{ heads: {grid.heads}, key_chunk: {costs['chunk']} }}",
               (q, kk, v), (out,), {"standard": costs["streamed"]}, exchange=True)
        return b.done(out)
    return _materialized(b, out, grid.heads, "", (q, kk), v, scores_shape, scores_at, hb * grid.rows,
                         costs["gathered"], costs["gathered"])


def _materialized(b: FragmentBuilder, out: Ref, heads: int, causal: str, reads_qk: tuple[Ref, ...], v: Ref,
                  scores_shape: Shape, layout: Layout, rows: int, scores_scratch: int, values_scratch: int) -> Fragment:
    """Scores (interleaved), softmax in place over them, scores x values into `out`:
    `rows` is heads per tile x rows per tile (the softmax's F32 maxima and sums)."""
    op_label = "" if not causal else f", causal: {causal}"
    act = b.precision(v)  # scores and probabilities in the activations' precision
    scores = b.new(ValueKind.RESULT, scores_shape, act, layout, label="scores")
    b.step(StepKind.ATTENTION_SCORES, f"AttentionScores {{ heads: {heads}, keys: Gathered{op_label} }}", reads_qk,
           (scores,), {"standard": scores_scratch}, exchange=True)
    probs = b.new(ValueKind.RESULT, scores_shape, act, layout, label="probabilities", storage=scores)
    b.step(StepKind.SOFTMAX, "Softmax { axis: -1, in_place: true }", (scores,), (probs,),
           {"standard": rows * 2 * F32_BYTES})
    b.step(StepKind.ATTENTION_VALUES, f"AttentionValues {{ heads: {heads}, values: Gathered }}", (probs, v), (out,),
           {"standard": values_scratch}, exchange=True)
    return b.done(out)


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


def plan_sdpa(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[SdpaGrid]:
    """q's grid (its detail) and the layouts of q, k and v on their grids (the keys'
    and values' heads may differ: grouped-query attention)."""
    tiles = k.tile_count
    q, kv = ins[0], ins[1]
    rank = len(q.shape)
    grid_q = _grid(tiles, _batch(q.shape), q.shape[-3])
    grid_kv = _grid(tiles, _batch(kv.shape), kv.shape[-3])
    lq = sdpa_layout(tiles, grid_q, rank, k.prefix)
    lkv = sdpa_layout(tiles, grid_kv, rank, k.prefix)
    wanted = (lq, lkv, lkv, *(None for _ in ins[3:]))
    return OpPlan(wanted=wanted, rest=wanted, output=lq, detail=grid_q)


def lower_sdpa(k: Kernel, op: Operation, plan: OpPlan[SdpaGrid], operands: Sequence[Sequence[Operand]],
               dies: Sequence[bool]) -> Fragment:
    """`SplitHeads` copies of q, k and v into the head-major grid (those not already
    there; named `<value> [heads]`), then the products (see `lower_attention`).
    Scratch per tile, with hb heads of its partition, rows = ceil(Sq / query
    partitions) and keys = Skv (the materialized scores, hb x rows x keys x 2 B, are a
    value in interleaved memory): the scores step gathers every key of its heads (hb x
    keys x D x 2 B), the softmax keeps hb x rows x 2 x 4 B, the values step gathers
    every value (hb x keys x Dv x 2 B); streamed as `attention_costs`. A mask is read
    where it is: each tile receives its rows of it (mask heads per tile x rows x keys x
    its bytes) in the scores or streamed step."""
    grid_q = plan.detail
    b = FragmentBuilder(operands)
    tiles = k.tile_count
    q, kk, v = (b.operand(i) for i in range(3))
    mask = b.operand(3) if len(operands) > 3 else None
    moved = [(i, ref) for i, ref in enumerate((q, kk, v)) if b.layout(ref) != plan.wanted[i]]
    if moved:
        made = []
        for i, ref in moved:
            wanted = plan.wanted[i]
            assert wanted is not None, "sdpa reads q, k and v head-major"
            made.append(b.new(ValueKind.COPY, b.shape(ref), b.precision(ref), wanted, label="heads", of=ref))
        b.step(StepKind.COPY, f"Copy {{ mapping: SplitHeads {{ heads: {grid_q.heads} }}, reuse_local: false }}",
               tuple(ref for _, ref in moved), tuple(made), exchange=True)
        renamed = dict(zip((i for i, _ in moved), made))
        q, kk, v = (renamed.get(i, ref) for i, ref in enumerate((q, kk, v)))
    q_shape, kv_shape = b.shape(q), b.shape(kk)
    heads = _batch(q_shape) * q_shape[-3]
    head_parts = grid_q.batch_parts * grid_q.head_parts
    grid = AttentionGrid(heads, q_shape[-1], head_parts, grid_q.query_parts, q_shape[-2], kv_shape[-2])
    act = b.precision(q)
    costs = attention_costs(grid, act.bytes)
    mask_bytes = 0
    if mask is not None:
        m_shape = b.shape(mask)
        mask_heads = grid.heads_per_part if math.prod(m_shape[:-2]) > 1 else 1
        mask_bytes = mask_heads * min(grid.rows, m_shape[-2]) * m_shape[-1] * b.precision(mask).bytes
    reads_qk = (q, kk) if mask is None else (q, kk, mask)
    scores_shape = (*q_shape[:-1], kv_shape[-2])
    scores_at = sdpa_layout(tiles, grid_q, len(q_shape), k.prefix, "Interleaved")
    choice = k.options.attention_products
    if choice is AttentionProducts.AUTOMATIC:
        scores_bytes = shard_elements(k, scores_at, scores_shape, op.name) * act.bytes
        choice = (AttentionProducts.STREAMED if costs["streamed"] < scores_bytes + costs["gathered"]
                  else AttentionProducts.MATERIALIZED)
    out = write_result(b, op, plan.output)
    causal = str(bool(op.attr("causal", False))).lower()
    if choice is AttentionProducts.STREAMED:
        b.step(StepKind.ATTENTION_STREAMED,
               f"AttentionStreamed {{ heads: {heads}, key_chunk: {costs['chunk']}, causal: {causal} }}",
               (*reads_qk, v), (out,), {"standard": costs["streamed"] + mask_bytes}, exchange=True)
        return b.done(out)
    return _materialized(b, out, heads, causal, reads_qk, v, scores_shape, scores_at, grid.heads_per_part * grid.rows,
                         costs["gathered"] + mask_bytes, costs["gathered"])


register("sdpa", inputs=(3, 4), attrs={"causal": False, "scale": None}, shape=sdpa_shape, plan=plan_sdpa,
         lower=lower_sdpa)
