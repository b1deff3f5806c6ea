"""`tileplan check`'s own shard arithmetic and tile maps, written from the rules in
docs/report-format.md ("Shard arithmetic", "Tile map"), not shared with the planner.

Scalars are Python integers (no int64 wrap however large a shape is); per-partition
and per-tile arrays exist only for the exact accounting, at most `tile_count` long, and
`tile_count` is bounded by the caller.

Worked example (the reference's patches): shape [1, 729, 588] F16, FromEnd(2) 46
partitions of blocks of 16, FromEnd(1) 4 partitions of blocks of 160, 8 replicas:
729 -> 736 = 46 blocks -> 1 block (16 rows) per partition; 588 -> 640 = 4 blocks of
160 -> 160 columns; largest shard 16 x 160 x 2 B = 5120 B. Tiles: partition (p0, p1)
of replica r sits on p0 x 1 + p1 x 46 + 184 r.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tileplan.errors import TilingError
from tileplan.model.layout import AxisTiling, Layout, Padding, Spread, TensorTiling


@dataclass(frozen=True, slots=True)
class AxisCut:
    """One axis tiling applied to an extent: `blocks` blocks of `block_size` over
    `partitions`; `largest` is the largest stored extent (elements) of a partition."""

    axis: AxisTiling
    extent: int
    blocks: int
    largest: int

    def stored(self) -> np.ndarray:
        """Stored elements of each partition (read-only int64; only called when the
        sizes are bounded): see `stored_extents` and `leading_extents`."""
        a = self.axis
        if a.spread is Spread.LEADING:
            return leading_extents(a.partitions, self.blocks, a.block_size, a.shard_padding_multiple, a.min_blocks)
        return stored_extents(a.partitions, self.blocks, a.block_size, a.shard_padding_multiple)


@dataclass(frozen=True, slots=True)
class Sharding:
    """A layout applied to a shape: the axis cuts and the product of untiled dims."""

    layout: Layout
    cuts: tuple[AxisCut, ...]
    untiled: int

    @property
    def largest_elements(self) -> int:
        return self.untiled * math.prod(c.largest for c in self.cuts)

    def shard_elements(self) -> np.ndarray:
        """Stored elements of every shard, flattened in the order of `shard_offsets`."""
        out = np.array([self.untiled], dtype=np.int64)
        for cut in self.cuts:
            out = np.multiply.outer(out, cut.stored()).ravel()
        return out


_STORED: dict[tuple[int, int, int, int], np.ndarray] = {}
STORED_CACHE_ELEMENTS = 1 << 21  # 16 MiB of int64
_STORED_SIZE = [0]  # elements held in _STORED


def stored_extents(partitions: int, blocks: int, block_size: int, multiple: int) -> np.ndarray:
    """Partition p holds blocks [start(p), start(p + 1)) with start(p) = round(p x
    blocks / P), halves up, and stores them x block_size elements rounded up to
    `multiple`. Exact integers, then int64; memoized in a bounded table."""
    key = (partitions, blocks, block_size, multiple)
    found = _STORED.get(key)
    if found is None:
        p = partitions
        starts = [(2 * i * blocks + p) // (2 * p) for i in range(p + 1)]
        found = np.array([-(-(starts[i + 1] - starts[i]) * block_size // multiple) * multiple for i in range(p)],
                         dtype=np.int64)
        found.setflags(write=False)
        if _STORED_SIZE[0] + p > STORED_CACHE_ELEMENTS:
            _STORED.clear()
            _STORED_SIZE[0] = 0
        _STORED_SIZE[0] += p
        _STORED[key] = found
    return found


def leading_count(partitions: int, blocks: int, min_blocks: int) -> int:
    """`Leading` (docs: step 2): V, the partitions used: at most g = max(ceil(blocks /
    P), ceil(blocks / max(1, floor(blocks / m)))) blocks a partition, V = ceil(blocks /
    g)."""
    g = max(-(-blocks // partitions), -(-blocks // max(1, blocks // min_blocks)))
    return -(-blocks // g)


def leading_extents(partitions: int, blocks: int, block_size: int, multiple: int, min_blocks: int) -> np.ndarray:
    """`Leading`: partition v < V holds blocks [v x blocks // V, (v + 1) x blocks // V),
    later partitions none; stored as in `stored_extents` (not memoized: bounded by P)."""
    used = leading_count(partitions, blocks, min_blocks)
    starts = [min(i, used) * blocks // used for i in range(partitions + 1)]
    out = np.array([-(-(starts[i + 1] - starts[i]) * block_size // multiple) * multiple for i in range(partitions)],
                   dtype=np.int64)
    out.setflags(write=False)
    return out


def cut_axis(axis: AxisTiling, extent: int, what: str) -> AxisCut:
    """Pad, cut into blocks and spread over the partitions (docs: steps 1 to 3)."""
    groups = axis.padding_groups
    if extent % groups:
        raise TilingError(f"{what} of {extent} elements cannot form {groups} equal padding groups")
    m = axis.padding_multiple
    padded = groups * (-(-(extent // groups) // m) * m)
    b = axis.block_size
    blocks = -(-padded // b)
    p = axis.partitions
    if axis.padding is Padding.REJECT:
        if padded != extent:
            raise TilingError(f"{what} of {extent} elements needs padding to {padded} (padding_multiple {m}) "
                              "(padding Reject)")
        if extent % b:
            raise TilingError(f"{what} of {extent} elements is not a whole number of blocks of {b} (padding Reject)")
        if blocks < p:
            raise TilingError(f"{what} of {blocks} blocks of {b} elements cannot fill {p} partitions "
                              "(padding Reject)")
    if axis.spread is Spread.LEADING:  # a used partition holds blocks // V or one more
        used = leading_count(p, blocks, axis.min_blocks)
        most = -(-blocks // used)
    else:
        most = -(-blocks // p)  # a partition holds blocks // P or one more
    s = axis.shard_padding_multiple
    return AxisCut(axis, extent, blocks, -(-most * b // s) * s)


def shard_layout(layout: Layout, shape: tuple[int, ...]) -> Sharding:
    """The axis cuts of `layout` over `shape`; `TilingError` (no place) when the
    tensor is not representable, the tile map included."""
    rank = len(shape)
    cuts = []
    tiled: set[int] = set()
    for axis in layout.tiling.axes:
        what = f"{axis.axis.to_text()} tiling"
        if axis.axis.is_linear:
            extent = math.prod(shape)
        else:
            assert axis.axis.index is not None
            d = rank - axis.axis.index if axis.axis.kind == "FromEnd" else axis.axis.index
            if not 0 <= d < rank:
                raise TilingError(f"{what} names a dimension outside the shape {list(shape)} (rank {rank})")
            if d in tiled:
                raise TilingError(f"{what} splits dimension {d} a second time")
            tiled.add(d)
            extent = shape[d]
        cuts.append(cut_axis(axis, extent, what))
    linear = any(a.axis.is_linear for a in layout.tiling.axes)
    untiled = 1 if linear else math.prod(shape[d] for d in range(rank) if d not in tiled)
    check_tile_map(layout.tiling)
    return Sharding(layout, tuple(cuts), untiled)


def strides(tiling: TensorTiling) -> tuple[int, ...]:
    """Each axis's tile stride: `Some(s)`, or the product of the partitions before it."""
    out = []
    before = 1
    for a in tiling.axes:
        out.append(before if a.tile_stride is None else a.tile_stride)
        before *= a.partitions
    return tuple(out)


def check_tile_map(tiling: TensorTiling) -> None:
    """Every shard of every replica on a tile below tile_count, one per tile. The
    farthest shard of replica 0 is checked first with integers, so a huge stride never
    allocates."""
    steps = strides(tiling)
    farthest = sum((a.partitions - 1) * s for a, s in zip(tiling.axes, steps))
    if farthest >= tiling.tile_count:
        raise TilingError(f"tile map places a shard on tile {farthest}, beyond tile_count {tiling.tile_count} "
                          f"(axis strides {', '.join(map(str, steps))})")
    tile_map(tiling)


def shard_offsets(tiling: TensorTiling) -> np.ndarray:
    """Tile offset of every shard within a replica, flattened with the last axis
    varying fastest (the order of `Sharding.shard_elements`)."""
    out = np.zeros(1, dtype=np.int64)
    for a, s in zip(tiling.axes, strides(tiling)):
        out = np.add.outer(out, np.arange(a.partitions, dtype=np.int64) * s).ravel()
    return out


@lru_cache(maxsize=64)  # at most 64 x 65536 tiles x 8 B = 32 MiB
def tile_map(tiling: TensorTiling) -> np.ndarray:
    """Tile of every shard of every replica, [replica, shard] (read-only): replica r
    at the lowest tile the earlier replicas leave free, then every tile t turned to
    (t + first_tile) mod tile_count. Callers have checked the
    farthest shard (`check_tile_map`)."""
    offsets = shard_offsets(tiling)
    covered = np.zeros(tiling.tile_count, dtype=bool)
    rows = []
    t = 0
    for r in range(tiling.replicas):
        while t < tiling.tile_count and covered[t]:
            t += 1
        if t >= tiling.tile_count:
            raise TilingError(f"tile map leaves no free tile for replica {r} of {tiling.replicas}")
        tiles = offsets + t
        beyond = tiles[tiles >= tiling.tile_count]
        if beyond.size:
            raise TilingError(f"tile map places a shard of replica {r} on tile {int(beyond[0])}, beyond tile_count "
                              f"{tiling.tile_count}")
        taken = tiles[covered[tiles]]
        if not taken.size and len(np.unique(tiles)) < len(tiles):
            ordered = np.sort(tiles)
            taken = ordered[1:][ordered[1:] == ordered[:-1]]
        if taken.size:
            raise TilingError(f"tile map puts a second shard on tile {int(taken[0])} (replica {r}), expected 1")
        covered[tiles] = True
        rows.append(tiles)
    out = (np.stack(rows) + tiling.first_tile) % tiling.tile_count  # the map turned on by first_tile
    out.setflags(write=False)
    return out
