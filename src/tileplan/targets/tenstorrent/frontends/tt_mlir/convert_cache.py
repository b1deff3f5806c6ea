"""A write into a static key/value cache as tt-mlir lowers it: `ttnn.fill_cache` per user
(a prefill) or `ttnn.update_cache` (a decode step), in place.

tt-mlir's StableHLO conversion (lib/Conversion/StableHLOToTTIR/StableHLOToTTIRPatterns.cpp
`CacheFillUpdatePattern`, read at 026940fe, 2026-04-20) takes a scatter as a cache write
when (`getCacheUpdatePositions`) the cache is 4-D [B, N, M, H], the updates [B, N, S, H]
(equal but for the positions), and the scatter's indices trace back to a function
argument of S positions (the step's `cache_position`, a model input). Then:

- S > 1 (a prefill): for each user b (B > 1) a `ttir.slice_static` of the updates
  [b:b+1] and a `ttir.fill_cache` at batch offset b;
- S = 1 (a decode step): the updates permuted (2, 1, 0, 3) to [1, N, B, H] (B > 1) and
  one `ttir.update_cache` at the position, its index typecast to uint32
  (TTNNWorkaroundsPass.cpp `createUpdateCacheOpOperandsWorkarounds`).

TTIRToTTNN.cpp (`UpdateCacheOpConversionPattern`; the fill alike) makes the TTNN
operation in place: it makes no tensor and its readers read the cache argument itself,
which stays where tt-xla uploaded it (an argument: DRAM interleaved, TILE; tt-mlir's
TTIRInferKVCacheArgumentTypes marks it `ttcore.kv_cache` so it is not forced row-major).
Any other scatter is `ttnn.scatter`, for which tileplan has no rule (one line).

Worked example: Falcon3-7B's prefill of 18 tokens at batch 32 writes each layer's keys
[32, 4, 18, 256] into the cache [32, 4, 128, 256]: 32 slices [1, 4, 18, 256] and 32
fill_cache operations, per layer and for keys and values alike.
"""

from __future__ import annotations

from tileplan.model.ir import Operation
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import PermuteAttrs
from tileplan.targets.tenstorrent.ops.tt_kv_cache import CacheAttrs
from tileplan.targets.tenstorrent.ops.tt_tm import SliceAttrs
from tileplan.targets.tenstorrent.tiles import DataType, Layout


def cache_positions(lw: Lowering, op: Operation) -> str | None:
    """The model input the write's positions come from, when `op` is a cache write as
    `getCacheUpdatePositions` recognises it (see the module docstring), else None."""
    if len(op.inputs) != 3 or op.ints_attr("axes") != (2,) or op.attr("accumulate"):
        return None
    cache, index, updates = op.inputs
    cshape, ushape, ishape = lw.shapes[cache], lw.shapes[updates], lw.shapes[index]
    if len(cshape) != 4 or len(ushape) != 4 or (cshape[0], cshape[1], cshape[3]) != (ushape[0], ushape[1], ushape[3]):
        return None
    if sum(1 for d in ishape if d != 1) > 1 or _volume(ishape) != ushape[2]:
        return None
    # the indices' use-def chain back to a block argument of S positions
    todo, seen = [index], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if lw.roles.get(name) is Role.INPUT:
            shape = lw.shapes[name]
            if sum(1 for d in shape if d != 1) <= 1 and _volume(shape) == ushape[2]:
                return name
        producer = lw.producers.get(name)
        if producer is not None:
            todo.extend(producer.inputs)
    return None


def _volume(shape: tuple[int, ...]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


def convert_scatter(lw: Lowering, op: Operation) -> None:
    """A cache write (fill_cache per user, or update_cache), else no rule (ttnn.scatter)."""
    from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import no_rule

    positions = cache_positions(lw, op)
    if positions is None:
        raise no_rule(op, "ttnn.scatter")
    cache_name, _, updates_name = op.inputs
    cache = lw.tensor(cache_name, at=op)
    updates = lw.tensor(updates_name, dtype=lw.value(cache).dtype, at=op)
    b, n, s, h = lw.shapes[updates_name]
    where = lw.where(op)
    dtype = lw.value(updates).dtype
    if s != 1:
        for user in range(b):
            part = updates
            if b > 1:
                part = lw.builder.one(OpKind.SLICE, f"{op.name}.slice_{user}", (updates,), Value((1, n, s, h), dtype),
                                      attrs=SliceAttrs((user, 0, 0, 0), (user + 1, n, s, h), (1, 1, 1, 1)), **where)
            lw.builder.add(OpKind.FILL_CACHE, f"{op.name}.fill_cache_{user}", (cache, part), (), attrs=CacheAttrs(),
                           module=op.module, layer=op.layer, source=op.index)
    else:
        if b > 1:
            updates = lw.builder.one(OpKind.PERMUTE, f"{op.name}.permute", (updates,), Value((1, n, b, h), dtype),
                                     attrs=PermuteAttrs((2, 1, 0, 3)), **where)
        index = lw.tensor(positions, layout=Layout.TILE, dtype=DataType.UINT32, at=op)
        lw.builder.add(OpKind.UPDATE_CACHE, f"{op.name}.update_cache", (cache, updates, index), (),
                       attrs=CacheAttrs(), module=op.module, layer=op.layer, source=op.index)
    lw.define(op, cache)


CONVERTERS = {"scatter": convert_scatter}
