"""Attention: `attention` (the built-in towers' fused form: packed q, k, v [.., S, 3D]
or q [.., Sq, D] with kv [.., S, 2D], `heads` attribute) and `sdpa` (scaled
dot-product attention as PyTorch exports it: q [..., Hq, Sq, D], k [..., Hkv, Skv, D],
v [..., Hkv, Skv, Dv], an optional mask, `causal`; grouped-query heads when Hkv
divides Hq).

Tiles form a grid of head partitions x query partitions x key partitions. PopLibs
plans the attention's products as grouped matmuls (poplin `matMulGrouped`: the heads
are the convolution's groups, lib/poplin/MatMul.cpp `getConvParams`), and its
partition splits the groups together with the rows, the input and the output
channels (lib/poplin/ConvModel.cpp `constructModel`: `convGroupSplit` one of the
`PartitionVariables`, searched with `batchSplit`, `inChanSplit` and `outChanSplit`;
each split rounded up, `ceildivConstrainDivisor`, so no split need divide its
dimension and a head count with no common factor with the tiles still spreads). So
here: every (head, query, key) partition count whose product is the tile count is
tried, heads, rows and keys spread evenly over their partitions (the busiest takes
the ceiling), and the grid whose largest step needs the fewest bytes per tile is
kept, then the least work on the busiest tile (`attention_grid`). q, k and v are
re-laid out head-major (a `Copy` with the `SplitHeads` mapping, exchanging), then
either the materialized products (scores, softmax in place, scores x values) or one
streamed step with an online softmax; `Automatic` takes the one whose largest step
needs fewer bytes per tile (`attention_costs`). The reference planner's kernels keep
its own grid: heads over gcd(heads, tiles) partitions, queries over the rest.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, Ref, StepKind, ValueKind
from tileplan.kernel.layouts import heads_layout, scores_layout
from tileplan.kernel.options import AttentionProducts
from tileplan.model.ir import Operation
from tileplan.model.precision import Precision
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
    """Tiles as head partitions x query partitions x key partitions. Heads, query rows
    and keys are spread evenly over their partitions (the first `n % parts` take one
    more): `heads_per_part`, `rows` and `keys_per_part` are the busiest partition's.
    Invariant: every count positive."""

    heads: int
    head_dim: int
    head_parts: int
    query_parts: int
    queries: int
    keys: int
    key_parts: int = 1

    def __post_init__(self) -> None:
        assert min(self.heads, self.head_dim, self.head_parts, self.query_parts, self.queries, self.keys,
                   self.key_parts) >= 1, self

    @property
    def heads_per_part(self) -> int:
        return -(-self.heads // self.head_parts)

    @property
    def rows(self) -> int:
        return -(-self.queries // self.query_parts)

    @property
    def keys_per_part(self) -> int:
        return -(-self.keys // self.key_parts)

    @property
    def row_parts(self) -> int:
        """The partitions of q's, k's, v's and the output's rows: a query partition's
        rows are shared out over its key partitions (each keeps a slice of the reduced
        output, as poplin's reduction leaves it)."""
        return self.query_parts * self.key_parts

    @property
    def work(self) -> int:
        """The busiest tile's multiply-accumulates of the scores (or the values)."""
        return self.heads_per_part * self.rows * self.keys_per_part * self.head_dim


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def attention_grid(tiles: int, heads: int, head_dim: int, queries: int, keys: int, element_bytes: int,
                   choice: AttentionProducts, mask: tuple[bool, int] | None = None) -> AttentionGrid:
    """The grid of the poplibs kernels (see the module docstring): of the (heads,
    queries, keys) partition counts whose product is `tiles` (none over twice its
    dimension, as a split beyond that only idles tiles, unless no split is so), the
    one whose largest step needs the fewest bytes per tile (`attention_costs`: the
    streamed step's with
    `choice` Streamed, the materialized ones' with Materialized, the fewer of both
    with Automatic), then the least work on the busiest tile, then fewer key and head
    partitions. `mask`: (one per head, its element bytes) when the scores read one.

    Worked example (a GPT-2-shaped layer, hidden 1200, sequence 2048, F16, 1472
    tiles, streamed, a [2048, 2048] bool mask): 24 heads of 50 take 8 head x 184 query
    partitions, 3 heads and 12 rows a tile: 3 x (2 x 64 x 50 x 2 + 12 x (64 + 50 + 2) x
    4) + 12 x 2048 = 79,680 B; 25 heads of 48 take 16 x 92, 2 heads and 23 rows: 2 x
    (12,288 + 23 x 114 x 4) + 23 x 2048 = 92,656 B, where gcd(25, 1472) = 1 put all 25
    heads on every tile (334,096 B)."""
    grids = [AttentionGrid(heads, head_dim, hp, qp, queries, keys, tiles // hp // qp)
             for hp in _divisors(tiles) for qp in _divisors(tiles // hp)]
    useful = [g for g in grids if g.head_parts <= 2 * heads and g.query_parts <= 2 * queries
              and g.key_parts <= 2 * keys]
    best: tuple | None = None
    for grid in useful or grids:
        costs = attention_costs(grid, element_bytes, mask)
        need = {AttentionProducts.STREAMED: costs["streamed"],
                AttentionProducts.MATERIALIZED: costs["materialized"]}.get(
            choice, min(costs["streamed"], costs["materialized"]))
        key = (need, grid.work, grid.key_parts, grid.head_parts)
        if best is None or key < best[0]:
            best = (key, grid)
    assert best is not None, "a tile count has divisors"
    return best[1]


def plan_attention(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[AttentionGrid]:
    heads = op.int_attr("heads")
    dim = op.output_shape[-1]
    tiles = k.tile_count
    queries, keys = op.output_shape[-2], ins[-1].shape[-2]
    if k.poplibs:
        grid = attention_grid(tiles, heads, dim // heads, queries, keys, op.output_precision.bytes,
                              k.options.attention_products)
    else:
        head_parts = math.gcd(heads, tiles)
        grid = AttentionGrid(heads, dim // heads, head_parts, tiles // head_parts, queries, keys)
    out = _heads_layout(k, grid)
    layouts = tuple(activation_layout(k, i) for i in ins)
    return OpPlan(wanted=layouts, rest=layouts, output=out, detail=grid)


def _heads_layout(k: Kernel, grid: AttentionGrid) -> Layout:
    """[.., S, D] head-major: rows over the row partitions, heads over the head
    partitions (the reference's kernels: blocks of its heads per partition)."""
    if not k.poplibs:
        return heads_layout(k.tile_count, grid.query_parts, grid.head_parts, grid.heads_per_part * grid.head_dim,
                            k.prefix)
    return heads_layout(k.tile_count, grid.row_parts, grid.head_parts, grid.head_dim, k.prefix)


def _scores_layout(k: Kernel, grid: AttentionGrid) -> Layout:
    """Scores [H, Sq, Skv]: rows over the query partitions, heads over the head
    partitions, keys over the key partitions (the reference's kernels: all keys of a
    row on its tile)."""
    if not k.poplibs:
        return scores_layout(k.tile_count, grid.query_parts, grid.head_parts, grid.heads_per_part, k.prefix)
    axes = (AxisTiling(Axis.from_start(1), grid.query_parts, 1, 1, 1, 1, Padding.ZERO, 1),
            AxisTiling(Axis.from_start(0), grid.head_parts, 1, 1, 1, 1, Padding.ZERO, grid.query_parts),
            AxisTiling(Axis.from_start(2), grid.key_parts, 1, 1, 1, 1, Padding.ZERO,
                       grid.query_parts * grid.head_parts))
    return Layout(ROW_MAJOR, TensorTiling(k.tile_count, 1, axes), MemoryClass(k.prefix, "Interleaved"))


def attention_costs(grid: AttentionGrid, element_bytes: int, mask: tuple[bool, int] | None = None) -> dict[str, int]:
    """Per-tile bytes of each strategy's steps, the busiest tile's (hb heads, `rows`
    query rows, kt keys, head_dim d, the activations' bytes e).

    Materialized: the scores hb x rows x kt x e (a value); the scores step gathers its
    keys, hb x kt x d x e (`gathered`), the values step its values likewise, and with
    the keys split over partitions also the partial outputs it made and receives to
    reduce them, 2 x hb x rows x d x 4 (F32, as poplin's reduction of a split input
    channel); the softmax keeps its rows' maxima and sums, hb x rows x 2 x 4, twice
    with the keys split (the partitions' own, received). `materialized`: the scores
    with the larger of the scores and values steps' scratch.
    Streamed, keys in chunks of c = min(kt, 64): per head one chunk of keys and one of
    values (2 x c x d x e), a chunk of scores in F32 (rows x c x 4), the output
    accumulator in F32 (rows x d x 4) and the running max and sum (rows x 2 x 4); with
    the keys split, the partitions' accumulators, maxima and sums combined after the
    stream (made and received: 2 x hb x rows x (d + 2) x 4), if more.
    A mask (one per head or one for all, its element bytes) adds its rows' keys, mask
    heads x rows x kt x its bytes, to the step that reads it (scores, or streamed)."""
    hb, rows, d, kt = grid.heads_per_part, grid.rows, grid.head_dim, grid.keys_per_part
    c = min(kt, KEY_CHUNK)
    split = grid.key_parts > 1
    mask_bytes = 0 if mask is None else (hb if mask[0] else 1) * rows * kt * mask[1]
    gathered = hb * kt * d * element_bytes
    scores = hb * rows * kt * element_bytes
    reduced = 2 * hb * rows * d * F32_BYTES if split else 0
    stream = hb * (2 * c * d * element_bytes + rows * c * F32_BYTES + rows * d * F32_BYTES + rows * 2 * F32_BYTES)
    combine = 2 * hb * rows * (d + 2) * F32_BYTES if split else 0
    return {"materialized": scores + max(gathered + mask_bytes, gathered + reduced),
            "gathered": gathered, "scores_step": gathered + mask_bytes, "values_step": gathered + reduced,
            "softmax": hb * rows * 2 * F32_BYTES * (2 if split else 1),
            "streamed": max(stream, combine) + mask_bytes, "chunk": c}


def lower_attention(k: Kernel, op: Operation, plan: OpPlan[AttentionGrid], operands: Sequence[Sequence[Operand]],
                    dies: Sequence[bool]) -> Fragment:
    """Split heads (a `Copy` that exchanges q, k and v into head-major layouts), then
    either the materialized products (scores, softmax in place, scores x values) or
    one streamed step; `Automatic` takes the one whose largest step needs fewer bytes
    per tile (see `attention_costs`). Scratch: streamed, `costs["streamed"]`; the
    scores step `costs["scores_step"]` (its keys gathered), the softmax
    `costs["softmax"]` (its rows' maxima and sums), the values step
    `costs["values_step"]` (its values gathered, and the partial outputs reduced over
    the key partitions)."""
    grid = plan.detail
    b = FragmentBuilder(operands)
    layout_qkv = _heads_layout(k, grid)
    dim = op.output_shape[-1]
    sources = [b.operand(i) for i in range(len(operands))]
    q_shape = (*op.output_shape[:-1], dim)
    kv_shape = (*b.shape(sources[-1])[:-1], dim)
    act = op.output_precision
    q = write_result(b, op, layout_qkv, "q", shape=q_shape, precision=act)
    kk = write_result(b, op, layout_qkv, "k", shape=kv_shape, precision=act)
    v = write_result(b, op, layout_qkv, "v", shape=kv_shape, precision=act)
    b.step(StepKind.COPY, f"Copy {{ mapping: SplitHeads {{ heads: {grid.heads} }}, reuse_local: false }}", sources,
           (q, kk, v), exchange=True)
    costs = attention_costs(grid, act.bytes)
    scores_at = _scores_layout(k, grid)
    scores_shape = (grid.heads, grid.queries, grid.keys)
    choice = k.options.attention_products
    if choice is AttentionProducts.AUTOMATIC:
        scores_bytes = k.shards(scores_at, scores_shape, op.name).largest_bytes(act)
        choice = (AttentionProducts.STREAMED
                  if costs["streamed"] < scores_bytes + max(costs["scores_step"], costs["values_step"])
                  else AttentionProducts.MATERIALIZED)
    out = write_result(b, op, plan.output)
    if choice is AttentionProducts.STREAMED:
        b.step(StepKind.ATTENTION_STREAMED, f"AttentionStreamed {{ heads: {grid.heads}, key_chunk: {costs['chunk']} }}",
               (q, kk, v), (out,), {"standard": costs["streamed"]}, exchange=True)
        return b.done(out)
    return _materialized(b, out, grid.heads, "", (q, kk), v, scores_shape, scores_at, costs["softmax"],
                         costs["scores_step"], costs["values_step"])


def _materialized(b: FragmentBuilder, out: Ref, heads: int, causal: str, reads_qk: tuple[Ref, ...], v: Ref,
                  scores_shape: Shape, layout: Layout, softmax_scratch: int, scores_scratch: int,
                  values_scratch: int) -> Fragment:
    """Scores (interleaved), softmax in place over them, scores x values into `out`,
    each step with its scratch."""
    op_label = "" if not causal else f", causal: {causal}"
    act = b.precision(v)  # scores and probabilities in the activations' precision
    scores = b.new(ValueKind.RESULT, scores_shape, act, layout, label="scores")
    b.step(StepKind.ATTENTION_SCORES, f"AttentionScores {{ heads: {heads}, keys: Gathered{op_label} }}", reads_qk,
           (scores,), {"standard": scores_scratch}, exchange=True)
    probs = b.new(ValueKind.RESULT, scores_shape, act, layout, label="probabilities", storage=scores)
    b.step(StepKind.SOFTMAX, "Softmax { axis: -1, in_place: true }", (scores,), (probs,),
           {"standard": softmax_scratch})
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
    """Tiles as batch partitions x head partitions x query partitions x key
    partitions (the product is the tile count); batch, heads and rows spread evenly
    over theirs. The reference's kernels: each count divides what it splits, no key
    partitions."""

    batch: int
    heads: int
    batch_parts: int
    head_parts: int
    query_parts: int
    key_parts: int = 1
    #: the poplibs kernels' grid (heads, rows and keys spread evenly, `attention_grid`)
    even: bool = False


def _reference_grid(tiles: int, batch: int, heads: int) -> SdpaGrid:
    pb = math.gcd(batch, tiles)
    ph = math.gcd(heads, tiles // pb)
    return SdpaGrid(batch, heads, pb, ph, tiles // (pb * ph))


def _poplibs_grid(k: Kernel, q: Shape, kv: Shape, precision: Precision, mask: InputInfo | None) -> SdpaGrid:
    """The batch over gcd(batch, tiles) partitions, then heads, queries and keys as
    `attention_grid` searches them on the rest."""
    tiles, batch = k.tile_count, _batch(q)
    pb = math.gcd(batch, tiles)
    masked = None if mask is None else (math.prod(mask.shape[:-2]) > 1, mask.precision.bytes)
    grid = attention_grid(tiles // pb, -(-batch // pb) * q[-3], q[-1], q[-2], kv[-2], precision.bytes,
                          k.options.attention_products, masked)
    return SdpaGrid(batch, q[-3], pb, grid.head_parts, grid.query_parts, grid.key_parts, even=True)


def sdpa_layout(tiles: int, grid: SdpaGrid, rank: int, prefix: str, region: str = "Standard",
                scores: bool = False) -> Layout:
    """[B, H, S, D] (or [G, S, D]): rows over the query partitions (stride 1), heads in
    blocks of H / head_parts, batch in blocks of B / batch_parts. The poplibs kernels'
    grid spreads heads and batch one at a time, and splits the rows of q, k, v and the
    output over the query x key partitions, the scores' [.., Sq, Skv] keys over the
    key partitions (`scores`)."""
    if not grid.even:
        axes = [AxisTiling(Axis.from_end(2), grid.query_parts, 1, 1, 1, 1, Padding.ZERO, None),
                AxisTiling(Axis.from_end(3), grid.head_parts, 1, grid.heads // grid.head_parts,
                           grid.heads // grid.head_parts, 1, Padding.ZERO, None)]
        if rank == 4:
            axes.append(AxisTiling(Axis.from_end(4), grid.batch_parts, 1, grid.batch // grid.batch_parts,
                                   grid.batch // grid.batch_parts, 1, Padding.ZERO, None))
        return Layout(ROW_MAJOR, TensorTiling(tiles, 1, tuple(axes)), MemoryClass(prefix, region))
    rows = grid.query_parts if scores else grid.query_parts * grid.key_parts
    axes = [AxisTiling(Axis.from_end(2), rows, 1, 1, 1, 1, Padding.ZERO, None),
            AxisTiling(Axis.from_end(3), grid.head_parts, 1, 1, 1, 1, Padding.ZERO, None)]
    if rank == 4:
        axes.append(AxisTiling(Axis.from_end(4), grid.batch_parts, 1, 1, 1, 1, Padding.ZERO, None))
    if scores:
        axes.append(AxisTiling(Axis.from_end(1), grid.key_parts, 1, 1, 1, 1, Padding.ZERO, None))
    return Layout(ROW_MAJOR, TensorTiling(tiles, 1, tuple(axes)), MemoryClass(prefix, region))


def _batch(shape: Shape) -> int:
    return shape[0] if len(shape) == 4 else 1


def plan_sdpa(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[SdpaGrid]:
    """q's grid (its detail) and the layouts of q, k and v on their grids (the keys'
    and values' heads may differ: grouped-query attention; the poplibs kernels lay
    them on q's partitions)."""
    tiles = k.tile_count
    q, kv = ins[0], ins[1]
    rank = len(q.shape)
    if k.poplibs:
        grid_q = _poplibs_grid(k, q.shape, kv.shape, q.precision, ins[3] if len(ins) > 3 else None)
        grid_kv = dataclasses.replace(grid_q, heads=kv.shape[-3])
    else:
        grid_q = _reference_grid(tiles, _batch(q.shape), q.shape[-3])
        grid_kv = _reference_grid(tiles, _batch(kv.shape), kv.shape[-3])
    lq = sdpa_layout(tiles, grid_q, rank, k.prefix)
    lkv = sdpa_layout(tiles, grid_kv, rank, k.prefix)
    wanted = (lq, lkv, lkv, *(None for _ in ins[3:]))
    return OpPlan(wanted=wanted, rest=wanted, output=lq, detail=grid_q)


def lower_sdpa(k: Kernel, op: Operation, plan: OpPlan[SdpaGrid], operands: Sequence[Sequence[Operand]],
               dies: Sequence[bool]) -> Fragment:
    """`SplitHeads` copies of q, k and v into the head-major grid (those not already
    there; named `<value> [heads]`), then the products (see `lower_attention`).
    Scratch per tile, the busiest's: hb heads of its batch and head partitions, rows
    of its query partition, kt keys of its key partition (the materialized scores, hb
    x rows x kt x 2 B, are a value in interleaved memory), the steps' as
    `attention_costs` gives them. A mask is read where it is: each tile receives its
    rows' keys of it (mask heads per tile x rows x kt x its bytes) in the scores or
    streamed step."""
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
    # the busiest partition's heads: ceil(B / batch parts) x ceil(H / head parts)
    busiest = -(-_batch(q_shape) // grid_q.batch_parts) * -(-q_shape[-3] // grid_q.head_parts)
    grid = AttentionGrid(busiest * head_parts, q_shape[-1], head_parts, grid_q.query_parts, q_shape[-2],
                         kv_shape[-2], grid_q.key_parts)
    act = b.precision(q)
    costs = attention_costs(grid, act.bytes)
    mask_bytes = 0
    if mask is not None:
        m_shape = b.shape(mask)
        mask_heads = grid.heads_per_part if math.prod(m_shape[:-2]) > 1 else 1
        mask_bytes = (mask_heads * min(grid.rows, m_shape[-2]) * min(grid.keys_per_part, m_shape[-1])
                      * b.precision(mask).bytes)
    reads_qk = (q, kk) if mask is None else (q, kk, mask)
    scores_shape = (*q_shape[:-1], kv_shape[-2])
    scores_at = sdpa_layout(tiles, grid_q, len(q_shape), k.prefix, "Interleaved", scores=True)
    choice = k.options.attention_products
    if choice is AttentionProducts.AUTOMATIC:
        scores_bytes = shard_elements(k, scores_at, scores_shape, op.name) * act.bytes
        choice = (AttentionProducts.STREAMED
                  if costs["streamed"] < scores_bytes + max(costs["scores_step"], costs["values_step"])
                  else AttentionProducts.MATERIALIZED)
    out = write_result(b, op, plan.output)
    causal = str(bool(op.attr("causal", False))).lower()
    if choice is AttentionProducts.STREAMED:
        b.step(StepKind.ATTENTION_STREAMED,
               f"AttentionStreamed {{ heads: {heads}, key_chunk: {costs['chunk']}, causal: {causal} }}",
               (*reads_qk, v), (out,), {"standard": costs["streamed"] + mask_bytes}, exchange=True)
        return b.done(out)
    return _materialized(b, out, heads, causal, reads_qk, v, scores_shape, scores_at, costs["softmax"],
                         costs["scores_step"] + mask_bytes, costs["values_step"])


register("sdpa", inputs=(3, 4), attrs={"causal": False, "scale": None}, shape=sdpa_shape, plan=plan_sdpa,
         lower=lower_sdpa)
