"""Layout helpers shared by the operations' lowerings and the policies."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np

from tileplan.model.layout import (
    LINEAR, ROW_MAJOR, Axis, AxisTiling, Layout, MemoryClass, Padding, Spread, TensorTiling,
)
from tileplan.model.tiling import Shards, default_strides, leading_partitions, shards_of, tile_of


def linear_layout(tile_count: int, element_bytes: int, prefix: str, padding: Padding,
                  partitions: int | None = None) -> Layout:
    """All elements in blocks of 8 bytes over `partitions` (default: every tile), each
    held by tile_count / partitions replicas: the reference's resting layout with
    `Padding.REJECT` and all tiles; representable for any tensor with `Padding.ZERO`."""
    block = max(1, 8 // element_bytes)
    parts = tile_count if partitions is None else partitions
    axis = AxisTiling(LINEAR, parts, 1, block, block, 1, padding, None)
    return Layout(ROW_MAJOR, TensorTiling(tile_count, tile_count // parts, (axis,)), MemoryClass(prefix, "Standard"))


#: poputil's default minimum a tile of a linear mapping (graphcore/poplibs
#: lib/poputil/TileMapping.cpp `calcLinearTileMapping`: `minBytesPerTile = 128`)
LINEAR_MIN_BYTES_PER_TILE = 128


def mapped_linearly(tile_count: int, element_bytes: int, prefix: str, min_bytes_per_tile: int) -> Layout:
    """A tensor as `poputil::mapTensorLinearly` maps it (graphcore/poplibs
    lib/poputil/TileMapping.cpp `calcLinearTileMapping`, offset 0): grains of the
    vector width (8 bytes: `Target::getVectorWidth`) over the fewest tiles from tile 0
    that give each at least `min_bytes_per_tile` (`splitRegions`; `Spread.LEADING`).
    `LINEAR_MIN_BYTES_PER_TILE` is the default `mapTensorLinearly(graph, t)` keeps; 0
    is popops' elementwise output (lib/popops/ElementWiseUtil.cpp
    `createOutputForElementWiseOp`: `mapTensorLinearly(graph, output, 0, grainSize)`).
    Worked example: a [500] F16 vector (1,000 B, 125 grains of 4) at 128 bytes a tile
    sits on tiles 0-6, 17 or 18 grains (136 or 144 B) each."""
    block = max(1, 8 // element_bytes)
    min_elements = -(-min_bytes_per_tile // element_bytes)
    min_blocks = max(1, -(-min_elements // block))
    axis = AxisTiling(LINEAR, tile_count, 1, block, block, 1, Padding.ZERO, None, Spread.LEADING, min_blocks)
    return Layout(ROW_MAJOR, TensorTiling(tile_count, 1, (axis,)), MemoryClass(prefix, "Standard"))


def turn_linear(layout: Layout, shape: tuple[int, ...], start: int) -> tuple[Layout, int]:
    """A linear mapping turned to start on tile `start`, and where the next one starts:
    PopART's `LinearMapper::MapperImpl::mapTensor` (graphcore/popart
    willow/src/popx/linearmapper.cpp) rotates poputil's mapping right by
    `next_mapping_start_index`, then advances that by the tiles the mapping used, modulo
    the tile count. Worked example: three 2,304 B vectors take tiles 0-17, 18-35, 36-53."""
    tiling = layout.tiling
    (axis,) = tiling.axes
    if axis.spread is not Spread.LEADING:
        raise ValueError(f"turn_linear turns a Leading linear mapping, found {layout.to_text()}")
    used = leading_partitions(shards_of(layout, shape).splits[0].blocks, axis.partitions, axis.min_blocks)
    turned = Layout(layout.order, replace(tiling, first_tile=start), layout.memory_class)
    return turned, (start + used) % tiling.tile_count


def compact_layout(elements: int, element_bytes: int, tile_count: int, prefix: str) -> Layout:
    """Where the training lowering puts a dense weight or table gradient: Linear in
    8-byte blocks over as many partitions as it has blocks, at most every tile, the partition count a
    divisor of the tile count (the rest are replicas). A `[1,1,1152]` F16 vector's 288
    blocks of 4 take 184 partitions (the largest divisor of 1472 not above 288) x 8
    replicas; a weight with more blocks than tiles takes all 1472. Padding Reject when
    the blocks are whole (then always representable), Zero otherwise."""
    block = max(1, 8 // element_bytes)
    blocks = -(-elements // block)
    parts = max(d for d in range(1, min(blocks, tile_count) + 1) if tile_count % d == 0)
    padding = Padding.REJECT if elements % block == 0 else Padding.ZERO
    return linear_layout(tile_count, element_bytes, prefix, padding, parts)


def broadcast_layout(x: Layout, x_shape: tuple[int, ...], b_shape: tuple[int, ...], prefix: str) -> Layout:
    """Where an operand `b` broadcast against `x` must sit so that every tile has the
    part of `b` its part of `x` needs: x's axes over dimensions `b` shares (same size,
    counted from the end) keep their partitions and tile strides; the other axes'
    partitions become replicas. Worked example: x [1, 729, 1152] tiled rows 46 (stride
    1) x columns 32 (stride 46), b [1, 1, 1152] -> b tiled columns 32 (stride 46) with
    46 replicas at offsets 0..45: every tile holds the 36 columns its rows need."""
    tiling = x.tiling
    kept = []
    if not any(a.axis.is_linear for a in tiling.axes):
        strides = default_strides(x)
        for axis, stride in zip(tiling.axes, strides):
            d = axis.axis.dim(len(x_shape))
            k = len(x_shape) - d
            if k <= len(b_shape) and b_shape[-k] == x_shape[d] and b_shape[-k] > 1:
                kept.append(AxisTiling(Axis.from_end(k), axis.partitions, axis.padding_groups, axis.block_size,
                                       axis.padding_multiple, axis.shard_padding_multiple, axis.padding, stride))
    shards = math.prod(a.partitions for a in kept)
    return Layout(ROW_MAJOR, TensorTiling(tiling.tile_count, tiling.tile_count // shards, tuple(kept)),
                  MemoryClass(prefix, "Standard"))


def heads_layout(tile_count: int, query_parts: int, head_parts: int, head_block: int, prefix: str,
                 region: str = "Standard") -> Layout:
    """[.., S, D] split rows over `query_parts` (stride 1) and heads over `head_parts`
    (blocks of `head_block` columns = heads per partition x head_dim)."""
    axes = (AxisTiling(Axis.from_end(2), query_parts, 1, 1, 1, 1, Padding.ZERO, 1),
            AxisTiling(Axis.from_end(1), head_parts, 1, head_block, head_block, 1, Padding.ZERO, query_parts))
    return Layout(ROW_MAJOR, TensorTiling(tile_count, 1, axes), MemoryClass(prefix, region))


def scores_layout(tile_count: int, query_parts: int, head_parts: int, heads_per_part: int, prefix: str) -> Layout:
    """Scores [H, Sq, Skv]: query rows over `query_parts` (stride 1), heads over
    `head_parts`; every tile holds all keys of its rows."""
    axes = (AxisTiling(Axis.from_start(1), query_parts, 1, 1, 1, 1, Padding.ZERO, 1),
            AxisTiling(Axis.from_start(0), head_parts, 1, heads_per_part, heads_per_part, 1, Padding.ZERO,
                       query_parts))
    return Layout(ROW_MAJOR, TensorTiling(tile_count, 1, axes), MemoryClass(prefix, "Interleaved"))


def boxes(shards: Shards) -> np.ndarray:
    """The real elements each tile holds, as a box per dimension: [tile, dim, (lo, hi)].
    Only for dimension tilings (None for Linear)."""
    layout, shape = shards.layout, shards.shape
    out = np.zeros((layout.tiling.tile_count, len(shape), 2), dtype=np.int64)
    out[:, :, 1] = np.asarray(shape)
    tiles = tile_of(layout)  # [r, p_0, ..., p_n]
    grid = tiles.shape[1:]
    for i, (axis, split) in enumerate(zip(layout.tiling.axes, shards.splits)):
        d = axis.axis.dim(len(shape))
        ranges = np.asarray(split.real_ranges(), dtype=np.int64)  # [p_i, (lo, hi)]
        along = [1] * len(grid)
        along[i] = len(ranges)
        lo = np.broadcast_to(ranges[:, 0].reshape(along), grid).ravel()
        hi = np.broadcast_to(ranges[:, 1].reshape(along), grid).ravel()
        for replica in tiles:
            out[replica.ravel(), d, 0] = lo
            out[replica.ravel(), d, 1] = hi
    return out


@lru_cache(maxsize=4096)
def same_placement(a: Shards, b: Shards) -> bool:
    """True when every tile holds the same elements under both layouts (a copy between
    them reuses local data and exchanges nothing). Memoized: a long program re-lays
    out between the same few layouts again and again."""
    if a.layout == b.layout:
        return True
    if a.shape != b.shape or a.layout.tiling.tile_count != b.layout.tiling.tile_count:
        return False
    if any(x.axis.is_linear for x in (*a.layout.tiling.axes, *b.layout.tiling.axes)):
        return False
    return bool(np.array_equal(boxes(a), boxes(b)))
