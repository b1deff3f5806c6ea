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
  As every later buffer sits at or above the current offset, and those that meet the
  buffer just placed above its top, a candidate at offset x needs x + (the largest
  unplaced section total, its own size included) within the capacity: one cutoff for
  all candidates of a node.
- Hatless pruning: once a buffer that no unplaced buffer overlaps has failed, its
  siblings will too.
- Dynamic decomposition: when no unplaced buffer crosses a boundary between two
  sections any more, the two sides are independent and are searched one after the
  other, each from its own canonical start (a failure on one side is not retried with
  the other side placed differently).
- Preorders (width-area-total, total-area-width, total-width-area) take turns under a
  node budget that doubles each round, as MiniMalloc's round robin does. Each part of
  a decomposition is ranked afresh by its preorder, the totals (T) taken from the
  buffers still unplaced, as MiniMalloc's sub-solves do (on the challenging instances
  E and I, 233,000 and 20,000 nodes to a placement, where the static ranks had found
  none in 14 and 3 million). Each round
  then spends as many nodes again on short dives (RESTART_NODES each) with the width
  order shuffled by seeded noise (on the challenging instances, many short dives find
  placements that long ones miss).
  Node counts and seeds, not clocks, decide what is tried, so a search that ends
  inside its time limit returns the same offsets on any machine.
- Searches allowed KERNEL_NODES nodes or more run in `kernel.py` when numba is
  installed: the same nodes in the same order, compiled (10 to 40 times the nodes per
  second); shorter ones, and all of them without numba, run the numpy code below.
"""

from __future__ import annotations

import itertools
import sys
import time
from dataclasses import dataclass

import numpy as np

from tileplan.placement.problem import VALUE_LIMIT, Columns, align_up

PREORDERS = ("WAT", "TAW", "TWA")
RESTART_NODES = 1000  # each seeded shuffle's node budget: many short dives, not one long one
MAX_BUFFERS = 3000  # above this, the dense overlap matrix and O(n) nodes cost too much
MAX_PAIRS = 4_000_000  # buffer-section incidences kept for the inference
KERNEL_NODES = 5000  # searches allowed this many nodes or more run in the compiled kernel, when there is one
KERNEL_CHUNK = 20_000  # nodes the kernel runs between looks at the clock


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
    state.use_kernel = (node_limit is None or node_limit >= KERNEL_NODES) and kernel_available()
    if state.pairs > MAX_PAIRS:
        return SearchOutcome(capacity, None, False, 0)
    spent = seeds = 0
    budget = len(cols)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 4 * len(cols) + 1000))
    try:
        for _ in itertools.count():
            budget *= 2
            tries: list[tuple[np.ndarray, int, str | None]] = [(state.ranks[p], budget, p) for p in PREORDERS]
            dives = max(1, len(PREORDERS) * budget // RESTART_NODES)  # as many nodes as the preorders get
            tries += [(state.shuffled_rank(seed), min(budget, RESTART_NODES), None)
                      for seed in range(seeds, seeds + dives)]
            seeds += dives
            for rank, nodes, preorder in tries:
                allowed = nodes if node_limit is None else min(nodes, node_limit - spent)
                if allowed <= 0:
                    return SearchOutcome(capacity, None, False, spent)
                found, exhausted, used = state.run(rank, allowed, deadline, preorder)
                spent += used
                if found is not None:
                    return SearchOutcome(capacity, found, False, spent)
                if exhausted:
                    return SearchOutcome(capacity, None, True, spent)
                if time.perf_counter() > deadline:
                    return SearchOutcome(capacity, None, False, spent)
        raise AssertionError("unreachable")
    finally:
        sys.setrecursionlimit(old_limit)


def kernel_available() -> bool:
    """True when numba is installed (the kernel module, which imports it, is loaded on first ask)."""
    from tileplan.placement.kernel import COMPILED

    return COMPILED


def _rank(order: np.ndarray) -> np.ndarray:
    """The position of each buffer in `order`."""
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


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
        self.group_starts = np.append(self.group_starts, self.pairs)  # the end of the last group
        # cuts_all[i]: buffers living in both live sections i and i + 1
        delta = np.zeros(len(live_secs) + 1, dtype=np.int64)
        np.add.at(delta, self.sec_first, 1)
        np.add.at(delta, np.maximum(self.sec_last - 1, self.sec_first), -1)
        self.cuts_all = np.cumsum(delta)[:max(len(live_secs) - 1, 0)]
        overlap = (cols.lower[:, None] < cols.upper[None, :]) & (cols.upper[:, None] > cols.lower[None, :])
        np.fill_diagonal(overlap, False)
        self.overlaps = [np.flatnonzero(row) for row in overlap]
        self.use_kernel = False
        self.preorder: str | None = None
        self.ov_ptr: np.ndarray | None = None  # the overlaps as one array, for the kernel (built on first use)
        self.ov_idx = self.by_first = self.first_start = np.zeros(0, dtype=np.int64)
        # the largest section total each buffer lives through (pairs are grouped by buffer)
        peak = np.maximum.reduceat(self.sec_total_all[np.searchsorted(live_secs, pair_sec)],
                                   np.cumsum(spans) - spans)
        self.width = (cols.upper - cols.lower).astype(np.float64)
        self.area = cols.size.astype(np.float64) * self.width
        keys = {"W": -self.width, "A": -self.area, "T": -peak.astype(np.float64)}
        self.ranks = {preorder: _rank(np.lexsort((np.arange(n),) + tuple(keys[c] for c in reversed(preorder))))
                      for preorder in PREORDERS}

    def shuffled_rank(self, seed: int) -> np.ndarray:
        """A preorder by width scaled by log-normal noise (sigma 0.3), then area."""
        noise = np.random.default_rng(seed).normal(0.0, 0.3, len(self.width))
        return _rank(np.lexsort((np.arange(len(self.width)), -self.area, -self.width * np.exp(noise))))

    def run(self, rank: np.ndarray, budget: int, deadline: float,
            preorder: str | None = None) -> tuple[tuple[int, ...] | None, bool, int]:
        """One depth-first search with one preorder (rank by buffer): (offsets or None,
        exhausted, nodes)."""
        n = len(self.size)
        self.rank = rank.copy()
        self.preorder = preorder
        self.placed = np.zeros(n, dtype=bool)
        self.min_offset = self.start_offsets.copy()
        self.total = self.sec_total_all.copy()  # the unplaced total per live section
        self.cuts = self.cuts_all.copy()
        self.solution = np.zeros(n, dtype=np.int64)
        self.nodes = 0
        self.budget = budget
        self.deadline = deadline
        if (self.min_offset + self.size > self.ceiling).any():
            return None, True, 0
        if self.use_kernel:
            return self._run_kernel(budget, deadline)
        try:
            found = self._split(np.arange(n), 0, len(self.total), np.flatnonzero(self.cuts == 0))
        except _Stop:
            return None, False, self.nodes
        if found:
            return tuple(int(v) for v in self.solution), False, self.nodes
        return None, True, self.nodes

    def _run_kernel(self, budget: int, deadline: float) -> tuple[tuple[int, ...] | None, bool, int]:
        """`run` by the compiled kernel: the same nodes in the same order, looking at
        the clock every KERNEL_CHUNK nodes."""
        from tileplan.placement import kernel

        n = len(self.size)
        if self.ov_ptr is None:
            lengths = np.array([len(row) for row in self.overlaps], dtype=np.int64)
            self.ov_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
            self.ov_idx = np.concatenate(self.overlaps + [np.zeros(0, dtype=np.int64)]).astype(np.int64)
            self.by_first = np.argsort(self.sec_first, kind="stable").astype(np.int64)
            self.first_start = np.searchsorted(self.sec_first[self.by_first],
                                               np.arange(len(self.total) + 1)).astype(np.int64)
        frames = np.zeros((2 * n + 4, kernel.FIELDS), dtype=np.int64)
        regs = np.zeros(kernel.REGISTERS, dtype=np.int64)
        undo_buf = np.zeros(len(self.ov_idx) + 1, dtype=np.int64)
        undo_old = np.zeros(len(self.ov_idx) + 1, dtype=np.int64)
        rank_buf = np.zeros(4 * n, dtype=np.int64)
        rank_old = np.zeros(4 * n, dtype=np.int64)
        keys = np.stack([-self.width, -self.area])
        order = np.array(["WAT".index(c) for c in (self.preorder or "WAT")], dtype=np.int64)
        kernel.start(frames, regs, len(self.total))
        pause_at = KERNEL_CHUNK
        while True:
            code = kernel.advance(regs, frames, undo_buf, undo_old, self.by_first, self.first_start, self.size,
                                  self.alignment, self.aligned, self.ceiling, self.capacity, self.rank, self.placed,
                                  self.min_offset, self.total, self.cuts, self.solution, self.sec_first,
                                  self.sec_last, self.pair_buf, self.group_starts, self.ov_ptr, self.ov_idx, rank_buf,
                                  rank_old, keys, order, self.preorder is not None, budget, pause_at)
            if code == kernel.GROW:
                rank_buf = np.concatenate([rank_buf, np.zeros_like(rank_buf)])
                rank_old = np.concatenate([rank_old, np.zeros_like(rank_old)])
                continue
            if code != kernel.PAUSED:
                break
            if time.perf_counter() > deadline:
                return None, False, int(regs[kernel.NODES])
            pause_at += KERNEL_CHUNK
        nodes = int(regs[kernel.NODES])
        if code == 1:
            return tuple(int(v) for v in self.solution), False, nodes
        return None, code == 0, nodes

    def _split(self, scope: np.ndarray, lo: int, hi: int, cuts: np.ndarray) -> bool:
        """Dynamic decomposition: the unplaced buffers of sections [lo, hi) fall apart
        at the boundaries `cuts` (after live section c, with no unplaced buffer across);
        each part is searched on its own, and all must succeed. With a named preorder,
        the parts' buffers are ranked afresh first (T from the unplaced totals now)."""
        bounds = [lo] + [int(c) + 1 for c in cuts if lo <= c < hi - 1] + [hi]
        unplaced = scope[~self.placed[scope]]
        saved = self.rank[unplaced]
        if self.preorder is not None and len(unplaced):
            self.rank[unplaced] = _rank(np.lexsort(self._keys(unplaced, self.preorder)))
        try:
            firsts = self.sec_first[unplaced]
            for a, z in itertools.pairwise(bounds):
                part = unplaced[(firsts >= a) & (firsts < z)]
                if len(part) and not (self._sections_hold(a, z, 0) and self._node(part, a, z, -1, -1)):
                    return False
            return True
        finally:
            self.rank[unplaced] = saved

    def _keys(self, members: np.ndarray, preorder: str) -> tuple[np.ndarray, ...]:
        """np.lexsort keys ranking `members` by `preorder` (each letter the largest
        first), the buffer index last."""
        total = self.total
        peak = np.array([total[f:z].max() for f, z in zip(self.sec_first[members].tolist(),
                                                          self.sec_last[members].tolist())], dtype=np.float64)
        keys = {"W": -self.width[members], "A": -self.area[members], "T": -peak}
        return (members.astype(np.float64),) + tuple(keys[c] for c in reversed(preorder))

    def _sections_hold(self, lo: int, hi: int, offset: int) -> bool:
        """Cross-section inference over sections [lo, hi): each one's unplaced buffers,
        stacked above max(offset, the lowest of their minimum offsets), stay under the
        capacity."""
        a, z = self.group_starts[lo], self.group_starts[hi]
        pair_buf = self.pair_buf[a:z]
        lows = np.where(self.placed[pair_buf], VALUE_LIMIT, self.min_offset[pair_buf])
        base = np.maximum(np.minimum.reduceat(lows, self.group_starts[lo:hi] - a), offset)
        total = self.total[lo:hi]
        return not ((base + total > self.capacity) & (total > 0)).any()

    def _node(self, scope: np.ndarray, lo: int, hi: int, last_offset: int, last_rank: int) -> bool:
        """Place the next buffer of `scope` (which lives in sections [lo, hi)) in canonical
        order, then the rest; True when all are placed (their offsets in `solution`)."""
        self.nodes += 1
        if self.nodes > self.budget or (self.nodes & 127 == 0 and time.perf_counter() > self.deadline):
            raise _Stop
        unplaced = scope[~self.placed[scope]]
        if len(unplaced) == 0:
            return True
        mins = self.min_offset[unplaced]
        ranks = self.rank[unplaced]
        lowest_top = (mins + self.size[unplaced]).min()
        ok = (mins < lowest_top) & ((mins > last_offset) | ((mins == last_offset) & (ranks > last_rank)))
        # every later buffer sits at or above this offset, and those that meet the placed
        # buffer above its top: each section's unplaced total (the buffer's own size
        # included) must fit above the offset
        ok &= mins <= self.capacity - int(self.total[lo:hi].max())
        candidates = unplaced[ok]
        if len(candidates) > 1:
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
            self.cuts[first:last - 1] -= 1
            # sections whose lowest minimum offset may have risen: those of the raised buffers
            # (their lifetimes meet b's, so they form one run); the offset part held above
            raised = near[after > before]
            found = not (after + self.size[near] > self.ceiling[near]).any() and (
                len(raised) == 0 or self._sections_hold(max(lo, int(self.sec_first[raised].min())),
                                                        min(hi, int(self.sec_last[raised].max())), offset))
            if found:
                opened = np.flatnonzero(self.cuts[first:last - 1] == 0) + first
                found = (self._split(unplaced, lo, hi, opened) if len(opened)
                         else self._node(unplaced, lo, hi, offset, int(self.rank[b])))
            self.cuts[first:last - 1] += 1
            self.total[first:last] += self.size[b]
            self.min_offset[near] = before
            self.placed[b] = False
            if found:
                self.solution[b] = offset
                return True
            if len(near) == 0:
                break  # hatless: no sibling does better
        return False
