"""Single-pass placement, the portfolio's first members: greedy passes, skyline dives
and the time sweep.

Greedy: take buffers in a fixed order and put each into a gap left by the already
placed buffers that live at the same time; `first` fit takes the lowest gap that holds
the buffer, `best` fit the smallest one (the open space above everything counts as
unbounded, so it is used only when no gap holds the buffer). Skyline: repeatedly place
the buffer whose lowest possible offset is lowest. Sweep: buffers by lower step, each
at its first fit among the live ones. Orders are total (ties broken by input index),
so a run is deterministic.

Every member but the first of a run takes a deadline and gives up (None) when it
passes. The first must end by itself, and quickly: below SWEEP_FIRST buffers it is the
numpy skyline dive (quadratic numpy work, a fraction of a second there); from
SWEEP_FIRST buffers the compiled time sweep, 1 to 4 seconds at a million buffers.
"""

from __future__ import annotations

import time
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


def place_greedy(cols: Columns, greedy: Greedy, deadline: float | None = None) -> tuple[np.ndarray, bool] | None:
    """Offsets (int64, by buffer index) from one greedy pass, and whether every buffer
    stayed under its ceiling (one with no room left below it goes above all else);
    None when `time.perf_counter()` passed `deadline` first. Linear numpy work per
    buffer (quadratic in all)."""
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
        if deadline is not None and time.perf_counter() > deadline:
            return None
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


DIVE_FROM = 100_000  # buffers from which the skyline dive runs compiled (`compiled.py`)
DIVE_CHUNK = 1 << 16  # heap entries the compiled dive takes between looks at the clock
SWEEP_CHUNK = 1 << 16  # buffers the sweep places between looks at the clock


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


def place_skyline(cols: Columns, skyline: Skyline, deadline: float | None = None) -> tuple[np.ndarray, bool] | None:
    """Offsets (int64, by buffer index) from one skyline dive, and whether every buffer
    stayed under its ceiling; None when `time.perf_counter()` passed `deadline` first.
    Below DIVE_FROM buffers the numpy dive here (linear numpy work per buffer, on the
    buffers sorted by lower so that those starting before a buffer ends are a prefix:
    quadratic in all); from there the compiled dive (`compiled.advance`, the same
    offsets)."""
    if len(cols) >= DIVE_FROM:
        return _compiled_dive(cols, skyline, deadline)
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
        if deadline is not None and time.perf_counter() > deadline:
            return None
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


def sections(cols: Columns) -> tuple[np.ndarray, np.ndarray, int]:
    """Each buffer's lifetime as a range [lo, hi) of sections (the steps between
    consecutive distinct lower/upper values), and the number of sections."""
    steps = np.sort(np.concatenate([cols.lower, cols.upper]))
    steps = steps[np.concatenate(([True], steps[1:] != steps[:-1]))] if len(steps) else steps
    return np.searchsorted(steps, cols.lower), np.searchsorted(steps, cols.upper), max(len(steps) - 1, 0)


def _compiled_dive(cols: Columns, skyline: Skyline, deadline: float | None) -> tuple[np.ndarray, bool] | None:
    """`place_skyline` by `compiled.advance`, DIVE_CHUNK heap entries between looks at the clock."""
    from tileplan.placement import compiled

    n = len(cols)
    lo, hi, count = sections(cols)
    leaves = 1 << max(count - 1, 0).bit_length()
    by_rank = greedy_order(cols, skyline.order).astype(np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[by_rank] = np.arange(n)
    # groups of the same sections, floor and alignment, each in rank order: the first waits
    grouped = np.lexsort((rank, cols.alignment, cols.floor, hi, lo))
    same = np.zeros(n, dtype=np.bool_)  # grouped[k] in the group of grouped[k - 1]
    same[1:] = ((lo[grouped[1:]] == lo[grouped[:-1]]) & (hi[grouped[1:]] == hi[grouped[:-1]])
                & (cols.floor[grouped[1:]] == cols.floor[grouped[:-1]])
                & (cols.alignment[grouped[1:]] == cols.alignment[grouped[:-1]]))
    after = np.full(n, -1, dtype=np.int64)
    after[grouped[:-1][same[1:]]] = grouped[1:][same[1:]]
    heads = grouped[~same]
    start = align_up(cols.floor[heads], cols.alignment[heads])
    first = np.lexsort((rank[heads], start))  # sorted by (key, rank): already a heap
    key = np.zeros(n, dtype=np.int64)
    heap_rank = np.zeros(n, dtype=np.int64)
    key[:len(heads)], heap_rank[:len(heads)] = start[first], rank[heads][first]
    mx = np.zeros(2 * leaves, dtype=np.int64)
    tag = np.zeros(2 * leaves, dtype=np.int64)
    offsets = np.zeros(n, dtype=np.int64)
    regs = np.zeros(compiled.REGISTERS, dtype=np.int64)
    regs[compiled.HEAP] = len(heads)
    while regs[compiled.HEAP] > 0:
        compiled.advance(regs, key, heap_rank, by_rank, rank, after, lo, hi, cols.size, cols.alignment, cols.floor,
                         mx, tag, leaves, leaves.bit_length() - 1, offsets, DIVE_CHUNK)
        if regs[compiled.HEAP] and deadline is not None and time.perf_counter() > deadline:
            return None
    kept = bool((offsets + cols.size <= cols.ceiling).all())
    return offsets, kept


@dataclass(frozen=True, slots=True)
class Sweep:
    """Buffers in order of lower step (longer lifetimes, then larger sizes first at the
    same step), each at the lowest offset where it fits among the buffers live at its
    lower step: a time sweep, first fit. Compiled (`compiled.sweep`), 1 to 4 CPU seconds
    for a million buffers whatever their lifetimes: the first member for large problems."""

    @property
    def name(self) -> str:
        return "sweep first-fit"


def sweep_order(cols: Columns) -> np.ndarray:
    """The sweep's order: by lower step, then longer lifetimes, then larger sizes, then
    input index (np.lexsort is stable)."""
    return np.lexsort((-cols.size, cols.lower - cols.upper, cols.lower)).astype(np.int64)


def place_sweep(cols: Columns, deadline: float | None = None) -> tuple[np.ndarray, bool] | None:
    """Offsets (int64, by buffer index) from the time sweep and whether every buffer
    stayed under its ceiling (one with no room under it goes at its lowest fit without);
    None when `time.perf_counter()` passed `deadline` first."""
    from tileplan.placement import compiled

    n = len(cols)
    enter = sweep_order(cols)
    leave = np.argsort(cols.upper, kind="stable").astype(np.int64)
    positive = cols.size > 0
    starts, ends = np.sort(cols.lower[positive]), np.sort(cols.upper[positive])
    # live just after each start: those started up to it (the last of equal starts) less those ended
    live = int((np.arange(1, len(starts) + 1) - np.searchsorted(ends, starts, side="right")).max(initial=0))
    blocks = 4 * live // compiled.BLOCK + 8
    bs = np.zeros((blocks, compiled.BLOCK), dtype=np.int64)
    bt = np.zeros((blocks, compiled.BLOCK), dtype=np.int64)
    bcount = np.zeros(blocks, dtype=np.int64)
    bgap = np.zeros(blocks, dtype=np.int64)
    border = np.zeros(blocks, dtype=np.int64)
    gmax = np.zeros(blocks // compiled.GROUP + 2, dtype=np.int64)
    free = np.arange(blocks - 1, -1, -1, dtype=np.int64)
    regs = np.zeros(compiled.SWEEP_REGISTERS, dtype=np.int64)
    regs[compiled.KEPT], regs[compiled.FREE] = 1, blocks
    offsets = np.zeros(n, dtype=np.int64)
    while regs[compiled.NEXT] < n:
        compiled.sweep(regs, enter, leave, cols.lower, cols.upper, cols.size, cols.alignment, cols.floor, cols.ceiling,
                       offsets, bs, bt, bcount, bgap, border, gmax, free,
                       min(n, int(regs[compiled.NEXT]) + SWEEP_CHUNK))
        if regs[compiled.NEXT] < n and deadline is not None and time.perf_counter() > deadline:
            return None
    return offsets, bool(regs[compiled.KEPT])


Member = Greedy | Skyline | Sweep

# The single-pass members, strongest first on the public instances (a time limit may
# cut the list short after the first). From SWEEP_FIRST buffers the sweep runs first.
PORTFOLIO: tuple[Member, ...] = (
    Skyline("area"), Greedy("size", "best"), Greedy("size", "first"), Skyline("size"), Skyline("lifetime"),
    Greedy("lifetime", "best"), Greedy("lifetime", "first"), Greedy("area", "best"), Greedy("area", "first"))
SWEEP_FIRST = 20_000  # buffers from which the sweep runs first: every other first member is slower than linear


def members(count: int) -> tuple[Member, ...]:
    """The single-pass members for a problem of `count` buffers, in the order they run."""
    return ((Sweep(),) + PORTFOLIO) if count >= SWEEP_FIRST else PORTFOLIO


def run_member(cols: Columns, member: Member, deadline: float | None = None) -> tuple[np.ndarray, bool] | None:
    """Offsets from one single-pass member and whether they keep every ceiling; None
    when `time.perf_counter()` passed `deadline` (None: no deadline) before it ended."""
    if isinstance(member, Skyline):
        return place_skyline(cols, member, deadline)
    if isinstance(member, Sweep):
        return place_sweep(cols, deadline)
    return place_greedy(cols, member, deadline)
