"""Exact search: does a placement under a capacity exist? A depth-first
branch-and-bound over canonical placements, after MiniMalloc (Moffitt, ASPLOS 2023).

- Canonical order: buffers are placed in non-decreasing (offset, preorder rank), each
  at its minimum offset: the highest top of the placed buffers that live at the same
  time, rounded up to its alignment. Every placement can be pushed down into this form,
  so no solution is lost.
- Dominance: a buffer whose minimum offset is at or above the lowest top any unplaced
  buffer could reach would leave a gap that buffer fills; it is not tried.
- Cross-section inference: in each section (the steps between two consecutive
  lower/upper values) the unplaced buffers stack above the lowest of their minimum
  offsets and above the current offset; if that stack passes the capacity, backtrack.
- Hatless pruning: once a buffer that no unplaced buffer overlaps has failed, its
  siblings will too.
- Preorders (width-area-total, total-area-width, total-width-area) take turns under a
  node budget that doubles each round, as MiniMalloc's round robin does; node counts,
  not clocks, decide what is tried, so a search that ends inside its time limit returns
  the same offsets on any machine.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from tileplan.placement.problem import VALUE_LIMIT, Columns, align_up

PREORDERS = ("WAT", "TAW", "TWA")
MAX_BUFFERS = 3000  # above this, the dense overlap matrix and O(n) nodes cost too much
MAX_PAIRS = 4_000_000  # buffer-section incidences kept for the inference


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """What a search at one capacity found. `offsets` (by buffer index) when a
    placement exists; `infeasible` when the search proved none does; neither when it
    ran out of nodes or time. `nodes` counts the search nodes visited."""

    capacity: int
    offsets: tuple[int, ...] | None
    infeasible: bool
    nodes: int

    def __post_init__(self) -> None:
        assert not (self.offsets is not None and self.infeasible), "a found placement is not infeasible"


class _Stop(Exception):
    """The node budget or the deadline ran out."""


def searchable(cols: Columns) -> bool:
    """True when the exact search accepts a problem of this size."""
    return 0 < len(cols) <= MAX_BUFFERS


def search(cols: Columns, capacity: int, deadline: float, node_limit: int | None = None) -> SearchOutcome:
    """Search for a placement of all buffers with every top <= `capacity`, until it is
    found, proven impossible, `node_limit` nodes are spent (None: no limit) or
    `time.perf_counter()` passes `deadline`."""
    assert searchable(cols), f"{len(cols)} buffers is outside the exact search's range"
    state = _State(cols, capacity)
    if state.pairs > MAX_PAIRS:
        return SearchOutcome(capacity, None, False, 0)
    spent = 0
    budget = len(cols)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 4 * len(cols) + 1000))
    try:
        while True:
            budget *= 2
            for preorder in PREORDERS:
                allowed = budget if node_limit is None else min(budget, node_limit - spent)
                if allowed <= 0:
                    return SearchOutcome(capacity, None, False, spent)
                found, exhausted, nodes = state.run(preorder, allowed, deadline)
                spent += nodes
                if found is not None:
                    return SearchOutcome(capacity, found, False, spent)
                if exhausted:
                    return SearchOutcome(capacity, None, True, spent)
                if time.perf_counter() > deadline:
                    return SearchOutcome(capacity, None, False, spent)
    finally:
        sys.setrecursionlimit(old_limit)


class _State:
    """The mutable search state: minimum offsets and per-section unplaced totals,
    changed on the way down and restored on the way up."""

    def __init__(self, cols: Columns, capacity: int) -> None:
        n = len(cols)
        assert (cols.size > 0).all(), "the exact search places buffers of positive size only"
        self.capacity = capacity
        self.size = cols.size
        self.alignment = cols.alignment
        self.aligned = bool((cols.alignment > 1).any())
        self.ceiling = np.minimum(cols.ceiling, capacity)
        self.start_offsets = align_up(cols.floor, cols.alignment)
        # sections: the steps between consecutive distinct lower/upper values
        steps = np.unique(np.concatenate([cols.lower, cols.upper]))
        first = np.searchsorted(steps, cols.lower)
        last = np.searchsorted(steps, cols.upper)  # exclusive
        spans = last - first
        self.pairs = int(spans.sum())
        if self.pairs > MAX_PAIRS:
            return
        # buffer-section incidences, grouped by section for one reduceat per node
        pair_buf = np.repeat(np.arange(n), spans)
        pair_sec = np.repeat(first - np.cumsum(spans) + spans, spans) + np.arange(self.pairs)
        live_secs = np.unique(pair_sec)
        by_sec = np.argsort(pair_sec, kind="stable")
        self.pair_buf = pair_buf[by_sec]
        self.group_starts = np.searchsorted(pair_sec[by_sec], live_secs)
        # a buffer's sections form one run of the live sections
        self.sec_first = np.searchsorted(live_secs, first)
        self.sec_last = np.searchsorted(live_secs, last)
        self.sec_total_all = np.add.reduceat(cols.size[self.pair_buf], self.group_starts)
        overlap = (cols.lower[:, None] < cols.upper[None, :]) & (cols.upper[:, None] > cols.lower[None, :])
        np.fill_diagonal(overlap, False)
        self.overlaps = [np.flatnonzero(row) for row in overlap]
        # the largest section total each buffer lives through (pairs are grouped by buffer)
        peak = np.maximum.reduceat(self.sec_total_all[np.searchsorted(live_secs, pair_sec)],
                                   np.cumsum(spans) - spans)
        width = cols.upper - cols.lower
        area = cols.size.astype(np.float64) * width
        keys = {"W": -width.astype(np.float64), "A": -area, "T": -peak.astype(np.float64)}
        self.ranks: dict[str, np.ndarray] = {}
        for preorder in PREORDERS:
            order = np.lexsort((np.arange(n),) + tuple(keys[c] for c in reversed(preorder)))
            rank = np.empty(n, dtype=np.int64)
            rank[order] = np.arange(n)
            self.ranks[preorder] = rank

    def run(self, preorder: str, budget: int, deadline: float) -> tuple[tuple[int, ...] | None, bool, int]:
        """One depth-first search with one preorder: (offsets or None, exhausted, nodes)."""
        n = len(self.size)
        self.rank = self.ranks[preorder]
        self.placed = np.zeros(n, dtype=bool)
        self.min_offset = self.start_offsets.copy()
        # the unplaced total per live section, with a 0 pad at the end for range ends
        self.total_padded = np.append(self.sec_total_all, 0)
        self.total = self.total_padded[:-1]
        self.solution = np.zeros(n, dtype=np.int64)
        self.nodes = 0
        self.budget = budget
        self.deadline = deadline
        if (self.min_offset + self.size > self.ceiling).any() or not self._sections_hold(0):
            return None, True, 0
        try:
            found = self._node(-1, -1)
        except _Stop:
            return None, False, self.nodes
        if found:
            return tuple(int(v) for v in self.solution), False, self.nodes
        return None, True, self.nodes

    def _sections_hold(self, offset: int) -> bool:
        """Cross-section inference: each section's unplaced buffers, stacked above
        max(offset, the lowest of their minimum offsets), stay under the capacity."""
        lows = np.where(self.placed[self.pair_buf], VALUE_LIMIT, self.min_offset[self.pair_buf])
        base = np.maximum(np.minimum.reduceat(lows, self.group_starts), offset)
        return not ((base + self.total > self.capacity) & (self.total > 0)).any()

    def _stack_fits(self, candidates: np.ndarray) -> np.ndarray:
        """For each candidate, whether placing it keeps every section's unplaced
        total, stacked on the candidate's offset, under the capacity: the part of the
        cross-section inference that all candidates can share, done for all at once.

        The largest total outside a candidate's sections comes from prefix and suffix
        maxima; inside them its own size leaves the total, so the range maximum there
        (one reduceat over the interleaved [first, last) bounds) counts less its size.
        """
        total = self.total_padded
        first, last = self.sec_first[candidates], self.sec_last[candidates]
        before = np.maximum.accumulate(total)  # before[i]: max of total[:i+1]; total[-1] is a 0 pad
        after = np.maximum.accumulate(total[::-1])[::-1]
        outside = np.maximum(np.where(first > 0, before[first - 1], 0), after[last])
        inside = np.maximum.reduceat(total, np.stack([first, last], axis=1).ravel())[::2]
        worst = np.maximum(outside, inside - self.size[candidates])
        return self.min_offset[candidates] + worst <= self.capacity

    def _node(self, last_offset: int, last_rank: int) -> bool:
        self.nodes += 1
        if self.nodes > self.budget or (self.nodes & 127 == 0 and time.perf_counter() > self.deadline):
            raise _Stop
        unplaced = np.flatnonzero(~self.placed)
        if len(unplaced) == 0:
            return True
        mins = self.min_offset[unplaced]
        ranks = self.rank[unplaced]
        lowest_top = (mins + self.size[unplaced]).min()
        ok = (mins < lowest_top) & ((mins > last_offset) | ((mins == last_offset) & (ranks > last_rank)))
        candidates = unplaced[ok]
        if len(candidates) > 1:
            candidates = candidates[self._stack_fits(candidates)]
            candidates = candidates[np.lexsort((self.rank[candidates], self.min_offset[candidates]))]
        for b in candidates.tolist():
            offset = int(self.min_offset[b])
            top = offset + int(self.size[b])
            self.placed[b] = True
            near = self.overlaps[b]
            near = near[~self.placed[near]]
            before = self.min_offset[near]
            after = np.maximum(before, top)
            if self.aligned:
                after = align_up(after, self.alignment[near])
            self.min_offset[near] = after
            first, last = self.sec_first[b], self.sec_last[b]
            self.total[first:last] -= self.size[b]
            found = (not (after + self.size[near] > self.ceiling[near]).any() and self._sections_hold(offset)
                     and self._node(offset, int(self.rank[b])))
            self.total[first:last] += self.size[b]
            self.min_offset[near] = before
            self.placed[b] = False
            if found:
                self.solution[b] = offset
                return True
            if len(near) == 0:
                break  # hatless: no sibling does better
        return False
