"""Single-pass greedy placement: take buffers in a fixed order and put each into a
gap left by the already placed buffers that live at the same time.

`first` fit takes the lowest gap that holds the buffer, `best` fit the smallest one
(the open space above everything counts as unbounded, so it is used only when no gap
holds the buffer). Orders are total (ties broken by input index), so a run is
deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from tileplan.placement.problem import VALUE_LIMIT, Columns, align_up

Fit = Literal["best", "first"]
ORDERS = ("size", "lifetime", "area")


@dataclass(frozen=True, slots=True)
class Greedy:
    """One greedy member of the portfolio: an order of the buffers and a fit rule."""

    order: str
    fit: Fit

    def __post_init__(self) -> None:
        assert self.order in ORDERS, f"unknown greedy order {self.order!r}"
        assert self.fit in ("best", "first"), f"unknown fit {self.fit!r}"

    @property
    def name(self) -> str:
        return f"greedy {self.order} {self.fit}-fit"




def greedy_order(cols: Columns, order: str) -> np.ndarray:
    """Buffer indices, largest key first: `size`, `lifetime` (upper - lower) or
    `area` (size x lifetime); ties by the other two keys, then the earlier start,
    then input index."""
    size = cols.size
    life = cols.upper - cols.lower
    area = size.astype(np.float64) * life  # float: products may pass int64
    index = np.arange(len(size))
    keys = {"size": (-size, -life, -area), "lifetime": (-life, -size, -area), "area": (-area, -size, -life)}[order]
    # np.lexsort sorts by the last key first
    return np.lexsort((index, cols.lower) + tuple(reversed(keys)))


def place_greedy(cols: Columns, greedy: Greedy) -> tuple[np.ndarray, bool]:
    """Offsets (int64, by buffer index) from one greedy pass, and whether every buffer
    stayed under its ceiling (one with no room left below it goes above all else)."""
    n = len(cols)
    offsets = np.zeros(n, dtype=np.int64)
    # placed buffers in placement order: time span and address span
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    start = np.empty(n, dtype=np.int64)
    stop = np.empty(n, dtype=np.int64)
    count = 0
    best = greedy.fit == "best"
    kept = True
    for i in greedy_order(cols, greedy.order).tolist():
        size = int(cols.size[i])
        if size == 0:
            offsets[i] = _align(int(cols.floor[i]), int(cols.alignment[i]))
            continue
        live = np.flatnonzero((lo[:count] < cols.upper[i]) & (hi[:count] > cols.lower[i]))
        offset = _fit(start[live], stop[live], size, int(cols.alignment[i]), int(cols.floor[i]),
                      int(cols.ceiling[i]), best)
        if offset is None:
            kept = False
            offset = _fit(start[live], stop[live], size, int(cols.alignment[i]), int(cols.floor[i]), VALUE_LIMIT, best)
            assert offset is not None, "the open top always has room"
        offsets[i] = offset
        lo[count], hi[count], start[count], stop[count] = cols.lower[i], cols.upper[i], offset, offset + size
        count += 1
    return offsets, kept


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _fit(start: np.ndarray, stop: np.ndarray, size: int, alignment: int, floor: int, ceiling: int,
         best: bool) -> int | None:
    """The offset for `size` bytes among occupied address spans [start, stop), or None.

    Gaps: sort the spans by start; the gap before span k runs from the highest stop of
    spans 0..k-1 (or `floor`) to start[k]; the last gap runs to `ceiling`.
    Example: spans [0,10) [20,30) [25,40) give gaps [.., 0) [10, 20) [30, 25) [40, ceiling).
    """
    order = np.argsort(start, kind="stable")
    starts = start[order]
    reach = np.maximum.accumulate(stop[order]) if len(order) else stop
    gap_lo = np.maximum(np.concatenate(([floor], reach)), floor)
    gap_hi = np.minimum(np.concatenate((starts, [ceiling])), ceiling)
    if alignment > 1:
        gap_lo = -(-gap_lo // alignment) * alignment
    room = gap_hi - gap_lo
    fits = np.flatnonzero(room >= size)
    if len(fits) == 0:
        return None
    if not best:
        return int(gap_lo[fits[0]])
    rank = room[fits]
    rank[fits == len(room) - 1] = np.iinfo(np.int64).max  # the open top: only when nothing else holds it
    return int(gap_lo[fits[np.argmin(rank)]])  # argmin: the lowest of equally small gaps


SKYLINE_ORDERS = ("area", "size", "lifetime")


@dataclass(frozen=True, slots=True)
class Skyline:
    """A dive of the exact search without backtracking: repeatedly place, at its
    minimum offset, the unplaced buffer whose minimum offset (the highest top among the
    placed buffers it meets) is lowest, ties to the earlier in `order`. It fills the
    lowest free level first, as the canonical search does."""

    order: str

    def __post_init__(self) -> None:
        assert self.order in ORDERS, f"unknown skyline order {self.order!r}"

    @property
    def name(self) -> str:
        return f"skyline {self.order}"


def place_skyline(cols: Columns, skyline: Skyline) -> tuple[np.ndarray, bool]:
    """Offsets (int64, by buffer index) from one skyline dive, and whether every buffer
    stayed under its ceiling. Linear numpy work per buffer (quadratic in all), on the
    buffers sorted by lower so that those starting before a buffer ends are a prefix."""
    n = len(cols)
    by_lower = np.argsort(cols.lower, kind="stable")
    lower, upper, size = cols.lower[by_lower], cols.upper[by_lower], cols.size[by_lower]
    alignment = cols.alignment[by_lower]
    aligned = bool((alignment > 1).any())
    rank = np.empty(n, dtype=np.int64)
    rank[greedy_order(cols, skyline.order)] = np.arange(n)
    rank = rank[by_lower]
    min_offset = align_up(cols.floor[by_lower], alignment)
    done = np.iinfo(np.int64).max
    # key = min_offset * n + rank orders by (minimum offset, rank); fall back to a
    # lexicographic pick when offsets are too large for the product
    scale = n if int((cols.size.sum() + cols.floor.max(initial=0) + cols.alignment.max(initial=1)) * max(n, 1)) < done \
        else 0
    key = min_offset * scale + rank
    offsets = np.zeros(n, dtype=np.int64)
    for _ in range(n):
        if scale:
            b = int(np.argmin(key))
        else:
            live = np.flatnonzero(key != done)
            b = int(live[np.lexsort((rank[live], min_offset[live]))[0]])
        offset = int(min_offset[b])
        offsets[b] = offset
        key[b] = done
        top = offset + int(size[b])
        if size[b] == 0:
            continue
        end = int(np.searchsorted(lower, upper[b]))  # buffers starting before b ends
        near = np.flatnonzero((upper[:end] > lower[b]) & (min_offset[:end] < top) & (key[:end] != done))
        raised = align_up(np.full(len(near), top, dtype=np.int64), alignment[near]) if aligned else top
        min_offset[near] = raised
        key[near] = min_offset[near] * scale + rank[near]
    result = np.empty(n, dtype=np.int64)
    result[by_lower] = offsets
    kept = bool((result + cols.size <= cols.ceiling).all())
    return result, kept


# The single-pass members, strongest first on the public instances (a time limit may
# cut the list short after the first).
PORTFOLIO: tuple[Greedy | Skyline, ...] = (
    Skyline("area"), Greedy("size", "best"), Greedy("size", "first"), Skyline("size"), Skyline("lifetime"),
    Greedy("lifetime", "best"), Greedy("lifetime", "first"), Greedy("area", "best"), Greedy("area", "first"))


def run_member(cols: Columns, member: Greedy | Skyline) -> tuple[np.ndarray, bool]:
    """Offsets from one single-pass member and whether they keep every ceiling."""
    if isinstance(member, Skyline):
        return place_skyline(cols, member)
    return place_greedy(cols, member)
