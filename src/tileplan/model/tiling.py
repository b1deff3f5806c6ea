"""Shard arithmetic: how big is each tile's piece of a tensor under a layout?

Rules (docs/report-format.md, "Shard arithmetic"), per `AxisTiling`:

* A dimension axis splits ``shape[d]``; a `Linear` axis splits all elements.
* The extent is padded: split into `padding_groups` equal groups, each rounded up to
  `padding_multiple`. With `padding: Reject` no padding may be needed.
* The padded extent is cut into ``blocks = ceil(padded / block_size)`` blocks, spread
  evenly over `partitions`, contiguous and in order: partition p gets blocks
  ``[start(p), start(p + 1))`` with ``start(p) = round(p * blocks / P)`` (halves up,
  ``(2 p blocks + P) // 2P``), so each gets ``blocks // P`` or one more, and the
  ``blocks % P`` larger ones are spread across the partitions, where the remainder
  puts them, rather than bunched at one end: values of different sizes put their
  larger shards on different tiles. With `Reject`, every partition
  must get a block and the last block must be full.
  An axis with ``spread: Leading { min_blocks: m }`` spreads them as PopLibs'
  `splitRegions` does instead: per partition at most ``g = max(ceil(blocks / P),
  ceil(blocks / max(1, blocks // m)))`` blocks, over the ``V = ceil(blocks / g)``
  leading partitions, partition v < V from block ``v * blocks // V``; partitions V and
  later hold nothing.
* A partition stores its blocks x block_size elements, rounded up to
  `shard_padding_multiple`. Untiled dimensions are stored whole.

Worked example (the reference's patches): shape [1, 729, 588] F16 tiled FromEnd(2)
46 x block 16 (padding_multiple 16) and FromEnd(1) 4 x block 160 (padding_multiple 160):
729 -> 736 = 46 blocks of 16 -> 1 block per partition -> 16 rows; 588 -> 640 = 4
blocks of 160 -> 160 columns; a shard is 1 x 16 x 160 x 2 B = 5120 B.

Tile map: shard (p_0, ..., p_n) of replica r sits on tile
``sum(p_i * stride_i) + offset_r``. An axis with ``tile_stride: None`` takes the
default stride = the product of the partitions of the axes before it (the first axis
varies fastest). Replicas take the lowest tiles the axes leave free: offset_0 = 0, and
offset_r is the lowest tile not yet covered by replicas 0..r-1. Dense axes thus put
replicas outermost (offset_r = r x product of partitions); axes with gaps, like a bias
tiled as [46 x 32 tiles with stride 46], put them in the gaps (offsets 0..45). A tile
map must put exactly one shard on each tile. A tiling with `first_tile: f` then turns
the whole map on by f tiles (tile t -> (t + f) mod tile_count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from tileplan.errors import TilingError
from tileplan.model.layout import AxisTiling, Layout, Padding, Spread
from tileplan.model.precision import Precision


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def round_up(a: int, multiple: int) -> int:
    return ceil_div(a, multiple) * multiple


@dataclass(frozen=True, slots=True)
class AxisSplit:
    """One axis of a tiling applied to an extent.

    `block_starts[p]` and `block_counts[p]` say which blocks partition p holds;
    `stored[p]` is its stored extent in elements. Invariants: the counts sum to
    `blocks`, the runs are contiguous from block 0, `extent <= padded <= blocks *
    block_size`.
    """

    extent: int
    padded: int
    blocks: int
    block_size: int
    block_counts: tuple[int, ...]
    stored: tuple[int, ...]
    #: `stored` as a read-only int64 array (derived; not compared or hashed)
    stored_array: np.ndarray = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        array = np.asarray(self.stored, dtype=np.int64)
        array.setflags(write=False)
        object.__setattr__(self, "stored_array", array)

    @property
    def largest(self) -> int:
        return max(self.stored)

    def real_ranges(self) -> list[tuple[int, int]]:
        """Per partition, the half-open range of real (unpadded) elements it holds."""
        ranges = []
        start = 0
        for count in self.block_counts:
            lo = min(start * self.block_size, self.extent)
            hi = min((start + count) * self.block_size, self.extent)
            ranges.append((lo, hi))
            start += count
        return ranges


def leading_partitions(blocks: int, partitions: int, min_blocks: int) -> int:
    """How many leading partitions PopLibs' `splitRegions` fills with `blocks` grains
    when each must hold at least `min_blocks` (graphcore/poplibs lib/poputil/Util.cpp
    `splitRegionsAux`: `maxGrainsPerPartition = udiv(numGrains, maxPartitions)`, raised
    to `udiv(numGrains, max(1, numGrains / minGrainsPerPartition))`, then
    `verticesToCreate = udiv(numGrains, maxGrainsPerPartition)`). 1 for no blocks.
    Worked example: 125 blocks of 8 B over 1472 partitions, at least 16 a partition ->
    at most max(1, ceil(125 / 7)) = 18 a partition -> 7 partitions of 17 or 18."""
    if blocks == 0:
        return 1
    most = max(ceil_div(blocks, partitions), ceil_div(blocks, max(1, blocks // min_blocks)))
    return ceil_div(blocks, most)


@lru_cache(maxsize=8192)  # layouts that differ only in where they start share their splits
def split_axis(axis: AxisTiling, extent: int, name: str | None, what: str) -> AxisSplit:
    """Apply one axis tiling to an extent of `extent` elements; `what` names the axis
    in errors (e.g. "Linear tiling" or "FromEnd(1) tiling")."""
    groups = axis.padding_groups
    if extent % groups:
        raise TilingError(
            f"{what} of {extent} elements cannot form {groups} equal padding groups", name)
    padded = groups * round_up(extent // groups, axis.padding_multiple)
    blocks = ceil_div(padded, axis.block_size)
    if axis.padding is Padding.REJECT:
        if padded != extent:
            raise TilingError(
                f"{what} of {extent} elements needs padding to {padded} "
                f"(padding_multiple {axis.padding_multiple}) (padding Reject)", name)
        if extent % axis.block_size:
            raise TilingError(
                f"{what} of {extent} elements is not a whole number of blocks of "
                f"{axis.block_size} (padding Reject)", name)
        if blocks < axis.partitions:
            raise TilingError(
                f"{what} of {blocks} blocks of {axis.block_size} elements cannot fill "
                f"{axis.partitions} partitions (padding Reject)", name)
    P = axis.partitions
    if axis.spread is Spread.LEADING:
        used = leading_partitions(blocks, P, axis.min_blocks)
        starts = np.minimum(np.arange(P + 1, dtype=np.int64), used) * blocks // used
    else:
        starts = (2 * np.arange(P + 1, dtype=np.int64) * blocks + P) // (2 * P)  # round(p * blocks / P), halves up
    counts = np.diff(starts)
    multiple = axis.shard_padding_multiple
    stored = (counts * axis.block_size + multiple - 1) // multiple * multiple
    return AxisSplit(extent, padded, blocks, axis.block_size, tuple(counts.tolist()), tuple(stored.tolist()))


@dataclass(frozen=True, slots=True)
class Shards:
    """A layout applied to a shape: the per-axis splits and the untiled dims.

    `splits[i]` belongs to `layout.tiling.axes[i]`; `untiled` is the product of the
    dimensions no axis splits (1 for a Linear tiling).
    """

    layout: Layout
    shape: tuple[int, ...]
    splits: tuple[AxisSplit, ...]
    untiled: int

    @property
    def largest_elements(self) -> int:
        return self.untiled * math.prod(s.largest for s in self.splits)

    def largest_bytes(self, precision: Precision) -> int:
        return self.largest_elements * precision.bytes

    def shard_elements(self) -> np.ndarray:
        """Stored elements of every shard, indexed [p_0, ..., p_n] (int64)."""
        out = np.array(self.untiled, dtype=np.int64)
        for s in self.splits:
            out = np.multiply.outer(out, s.stored_array)
        return out

    def tile_of(self) -> np.ndarray:
        """Tile of every shard of every replica, indexed [r, p_0, ..., p_n]."""
        return tile_of(self.layout)

    def bytes_per_tile(self, precision: Precision) -> np.ndarray:
        """Exact stored bytes of this value on each of the tile_count tiles."""
        tiling = self.layout.tiling
        tiles = self.tile_of().ravel()
        elements = np.broadcast_to(self.shard_elements(), (tiling.replicas, *self.shard_elements().shape)).ravel()
        out = np.zeros(tiling.tile_count, dtype=np.int64)
        out[tiles] = elements * precision.bytes
        return out


def default_strides(layout: Layout) -> tuple[int, ...]:
    """Tile stride of each axis (see the module docstring)."""
    strides = []
    before = 1
    for axis in layout.tiling.axes:
        strides.append(before if axis.tile_stride is None else axis.tile_stride)
        before *= axis.partitions
    return tuple(strides)


def shard_offsets(layout: Layout) -> np.ndarray:
    """Tile offset of every shard within a replica, indexed [p_0, ..., p_n]."""
    out = np.zeros((), dtype=np.int64)
    for axis, stride in zip(layout.tiling.axes, default_strides(layout)):
        out = np.add.outer(out, np.arange(axis.partitions, dtype=np.int64) * stride)
    return out


def replica_offsets(layout: Layout, name: str | None = "value") -> np.ndarray:
    """Offset of each replica: the lowest tile the earlier replicas leave free."""
    tiling = layout.tiling
    shards = shard_offsets(layout).ravel()
    if tiling.replicas == 1:
        return np.zeros(1, dtype=np.int64)
    covered = np.zeros(tiling.tile_count + int(shards.max()) + 1, dtype=bool)
    offsets = []
    t = 0
    for _ in range(tiling.replicas):
        while t < tiling.tile_count and covered[t]:
            t += 1
        if t >= tiling.tile_count:
            break
        covered[shards + t] = True
        offsets.append(t)
    if len(offsets) < tiling.replicas:
        raise TilingError(f"tile map leaves no free tile for replica {len(offsets)} of {tiling.replicas}", name)
    return np.asarray(offsets, dtype=np.int64)


_TILE_OF: dict[Layout, np.ndarray] = {}


def tile_of(layout: Layout, name: str | None = "value") -> np.ndarray:
    """Tile of every shard of every replica, indexed [r, p_0, ..., p_n] (memoized)."""
    found = _TILE_OF.get(layout)
    if found is None:
        found = np.add.outer(replica_offsets(layout, name), shard_offsets(layout))
        count, first = layout.tiling.tile_count, layout.tiling.first_tile
        if first and int(found.max()) < count:  # a map beyond the tiles stays so, for `check_tile_map`
            found = (found + first) % count
        found.setflags(write=False)
        if len(_TILE_OF) > 4096:
            _TILE_OF.clear()
        _TILE_OF[layout] = found
    return found


def shards_of(layout: Layout, shape: tuple[int, ...], name: str = "value") -> Shards:
    """Apply `layout` to a tensor of `shape`; raise `TilingError` naming `name` if the
    tensor is not representable. Checks the tile map too (one shard per tile).
    Memoized on (layout, shape): a program re-uses a few layouts for many values."""
    try:
        return _shards(layout, tuple(shape))
    except TilingError as e:
        raise TilingError(e.detail, name) from None


@lru_cache(maxsize=8192)
def _shards(layout: Layout, shape: tuple[int, ...]) -> Shards:
    name = None
    if any(d < 1 for d in shape):
        raise TilingError(f"shape {list(shape)} has a dimension < 1", name)
    tiling = layout.tiling
    rank = len(shape)
    splits = []
    tiled_dims: set[int] = set()
    for axis in tiling.axes:
        label = f"{axis.axis.to_text()} tiling"
        if axis.axis.is_linear:
            extent = math.prod(shape)
        else:
            d = axis.axis.dim(rank)
            if d < 0:
                raise TilingError(
                    f"{label} names a dimension outside the shape {list(shape)} (rank {rank})", name)
            if d in tiled_dims:
                raise TilingError(f"{label} splits dimension {d} a second time", name)
            tiled_dims.add(d)
            extent = shape[d]
        splits.append(split_axis(axis, extent, name, label))
    if any(a.axis.is_linear for a in tiling.axes):
        untiled = 1
    else:
        untiled = math.prod(shape[d] for d in range(rank) if d not in tiled_dims)
    shards = Shards(layout, tuple(shape), tuple(splits), untiled)
    check_tile_map(shards, name)
    return shards


def check_tile_map(shards: Shards, name: str | None) -> None:
    """Each tile must hold exactly one shard (of one replica)."""
    tiling = shards.layout.tiling
    tiles = tile_of(shards.layout, name).ravel()
    bad = tiles[(tiles < 0) | (tiles >= tiling.tile_count)]
    strides = ", ".join(map(str, default_strides(shards.layout)))
    if bad.size:
        raise TilingError(
            f"tile map places a shard on tile {int(bad[0])}, beyond tile_count "
            f"{tiling.tile_count} (axis strides {strides})", name)
    counts = np.bincount(tiles, minlength=tiling.tile_count)
    if (counts != 1).any():
        tile = int(np.flatnonzero(counts != 1)[0])
        raise TilingError(
            f"tile map puts {int(counts[tile])} shards on tile {tile}, expected 1 "
            f"(axis strides {strides})", name)


def shard_bytes(layout: Layout, shape: tuple[int, ...], precision: Precision, name: str = "value") -> int:
    """The largest per-tile shard of a value, in bytes."""
    return shards_of(layout, shape, name).largest_bytes(precision)
