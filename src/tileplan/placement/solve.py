"""The portfolio: single-pass members first (the time sweep for large problems, skyline
dives and greedy best/first fit in size, lifetime and area orders), then the exact
search while the best placement is above the capacity (or, minimising, above the lower
bound), all under one time limit.

Passes, in order: `lower_bound`, `run_greedy` (the single-pass members while time
remains, the first always to its end; the lowest height wins, ties to the earlier
member; without `minimize` they stop at the first placement within the capacity),
`_improve` (for problems the exact search accepts: search at the capacity if the best
is over it; minimising, then at the lower bound, then bisect; with a node limit the
first search that runs out of nodes ends it, without one the searches below the
capacity get DESCENT_NODES each and the bisection goes on above any that ran out).
Each attempt is kept in the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tileplan.errors import InputError
from tileplan.placement.greedy import members, run_member
from tileplan.placement.problem import VALUE_LIMIT, Columns, Problem, lower_bound
from tileplan.placement.search import MAX_BUFFERS, search, searchable

DEFAULT_TIME_LIMIT = 60.0
DESCENT_NODES = 500_000  # each search below the capacity when `place` has no node limit


@dataclass(frozen=True, slots=True)
class Attempt:
    """One member of the portfolio as it ran: its height (None: no placement), the
    capacity it searched at (greedy: None), whether it proved that capacity
    infeasible, the search nodes it visited and its wall-clock seconds."""

    method: str
    height: int | None
    capacity: int | None = None
    infeasible: bool = False
    nodes: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Placement:
    """Offsets for a problem's buffers (input order) and what is known about them.

    `height` is the highest buffer top; `lower_bound` the best proven bound on any
    placement's height (at least the largest live total); `optimal` means height equals
    it. `ranges_kept` is False only when no placement found keeps every buffer under
    its ceiling (the offsets then never overlap but some buffer passes its ceiling).
    `fits` says height <= capacity with the ranges kept; `infeasible` means no placement
    within the capacity exists (proven). `greedy_height` is the lowest single-pass
    height of the run (2**62 when none kept the ceilings). Invariants: lower_bound <= height when the
    ranges are kept; optimal implies the two are equal; infeasible implies not fits.
    """

    offsets: tuple[int, ...]
    height: int
    lower_bound: int
    capacity: int
    optimal: bool
    infeasible: bool
    method: str
    greedy_height: int
    ranges_kept: bool = True
    attempts: tuple[Attempt, ...] = ()
    minimized: bool = True

    def __post_init__(self) -> None:
        assert not self.ranges_kept or self.lower_bound <= self.height, (
            f"bound {self.lower_bound} above height {self.height}")
        assert not self.optimal or self.lower_bound == self.height, "optimal needs height == bound"
        assert not (self.infeasible and self.fits), "a placement within capacity is not infeasible"

    @property
    def fits(self) -> bool:
        return self.ranges_kept and self.height <= self.capacity

    @property
    def verdict(self) -> str:
        """One line: the height against the capacity and the bound, and what is proven."""
        gap = 100.0 * (self.height - self.lower_bound) / self.lower_bound if self.lower_bound else 0.0
        proof = "optimal" if self.optimal else ("no placement within capacity exists" if self.infeasible
                                                else f"{gap:.2f}% over the lower bound")
        where = "within" if self.fits else ("over" if self.ranges_kept else "with buffers past their ceilings,")
        first = "; not minimised: the first placement within the capacity" if (
            self.fits and not self.optimal and not self.minimized) else ""
        return (f"height {self.height} {where} capacity {self.capacity}; lower bound {self.lower_bound}; "
                f"{proof} ({self.method}){first}")


def place(problem: Problem, capacity: int, time_limit: float = DEFAULT_TIME_LIMIT,
          node_limit: int | None = None, *, minimize: bool = True) -> Placement:
    """Place `problem` under `capacity` bytes within about `time_limit` seconds (the
    first single-pass member always runs to its end: 1 to 4 seconds at a million
    buffers). With `minimize` (the default) the search goes on below the capacity,
    lowering the height until it is proven optimal or time runs out; without it the run
    stops at its first placement within the capacity (what `tileplan place` does unless
    given --minimize). `node_limit` caps each exact search (then the outcome does not
    depend on the machine's speed at all)."""
    if type(capacity) is not int or capacity < 0:
        raise InputError(f"capacity must be an integer >= 0, found {capacity!r}")
    if not time_limit > 0:
        raise InputError(f"time limit must be > 0 seconds, found {time_limit}")
    deadline = time.perf_counter() + time_limit
    cols = problem.columns()
    bound = lower_bound(cols)
    attempts: list[Attempt] = []
    best, method, kept = run_greedy(cols, attempts, deadline, bound, None if minimize else capacity)
    greedy_height = _height(cols, best) if kept else VALUE_LIMIT
    positive = np.flatnonzero(cols.size > 0)
    wanted = bound if minimize else max(bound, capacity)  # searching below this is not asked for
    if greedy_height > wanted and 0 < len(positive) <= MAX_BUFFERS:
        sub = _select(cols, positive)
        if searchable(sub):
            best, bound, method, kept = _improve(sub, positive, capacity, bound, greedy_height, best, method,
                                                 deadline, node_limit, attempts, minimize)
    height = _height(cols, best)
    return Placement(offsets=tuple(best.tolist()), height=height, lower_bound=bound, capacity=capacity,
                     optimal=kept and height == bound, infeasible=bound > capacity, method=method, ranges_kept=kept,
                     greedy_height=greedy_height, attempts=tuple(attempts), minimized=minimize)


def run_greedy(cols: Columns, attempts: list[Attempt], deadline: float, bound: int,
               enough: int | None = None) -> tuple[np.ndarray, str, bool]:
    """The lowest single-pass placement that keeps every buffer under its ceiling (ties
    to the earlier member; if none does, the lowest of all), its member's name, and
    whether it keeps the ceilings. The first member runs to its end; the others while
    time remains (one the deadline cuts short is kept as an attempt without a height,
    and ends the run) and until one reaches `bound` or, given `enough`, a height at or
    below it that keeps the ceilings."""
    best: tuple[bool, int] | None = None
    chosen = (np.zeros(len(cols), dtype=np.int64), "none", True)
    goal = bound if enough is None else max(bound, enough)
    for member in members(len(cols)):
        if best is not None and (time.perf_counter() > deadline or (not best[0] and best[1] <= goal)):
            break
        start = time.perf_counter()
        placed = run_member(cols, member, None if best is None else deadline)
        if placed is None:  # cut short by the deadline
            attempts.append(Attempt(member.name, None, seconds=time.perf_counter() - start))
            break
        offsets, kept = placed
        height = _height(cols, offsets)
        attempts.append(Attempt(member.name, height if kept else None, seconds=time.perf_counter() - start))
        if best is None or (not kept, height) < best:
            best, chosen = (not kept, height), (offsets, member.name, kept)
    return chosen


def _improve(sub: Columns, positive: np.ndarray, capacity: int, bound: int, height: int, best: np.ndarray,
             method: str, deadline: float, node_limit: int | None, attempts: list[Attempt],
             minimize: bool = True) -> tuple[np.ndarray, int, str, bool]:
    """Exact searches on the buffers of positive size: first at the capacity (when
    the best is over it and the bound allows), then at the lower bound, then bisecting
    between the bounds. With a `node_limit`, every search gets it and the first one cut
    short ends the run. Without one, the search at the capacity runs until found,
    proven or the deadline; those below it get DESCENT_NODES each, and one cut short
    raises the floor of the bisection above its target instead of ending the run (a
    descent: on MiniMalloc's D, 6.3 % over the bound at the capacity, then about 4 %).
    Without `minimize`, a placement within the capacity ends the run. Returns (offsets,
    proven lower bound, method, whether the offsets keep the ceilings)."""
    kept = height < VALUE_LIMIT
    if not kept:  # any placement that keeps the ceilings is below the highest one (or the greedy stack)
        stack = int(sub.size.sum() + sub.floor.max() + sub.alignment.max())
        height = int(np.where(sub.ceiling < VALUE_LIMIT, sub.ceiling, stack).max()) + 1
    low, high = bound, height  # a placement of height `high` is known; none below `low` exists
    floor = low  # the lowest target worth a search (none below `low`; no retry at or below a cut-short one)
    targets = [capacity] if high > capacity >= low else []
    tried_low = False
    while floor < high and time.perf_counter() < deadline and (minimize or not kept or high > capacity):
        descent = not targets
        if targets:
            target = targets.pop()
        elif not tried_low:
            target, tried_low = floor, True
        else:
            target = (floor + high - 1) // 2
        allowed = DESCENT_NODES if node_limit is None and descent else node_limit
        start = time.perf_counter()
        outcome = search(sub, target, deadline, allowed)
        found_height = None
        if outcome.offsets is not None:
            found_height = _height(sub, np.array(outcome.offsets, dtype=np.int64))
            best = best.copy()
            best[positive] = outcome.offsets
            method, high, kept = "exact search", found_height, True
        elif outcome.infeasible:
            low = target + 1
            floor = max(floor, low)
        attempts.append(Attempt("exact search", found_height, target, outcome.infeasible, outcome.nodes,
                                time.perf_counter() - start))
        if outcome.offsets is None and not outcome.infeasible:  # out of nodes or time
            if node_limit is not None or not descent:
                break
            floor = target + 1
    if not kept and low >= high:  # proven: no placement keeps the ceilings at any height
        low = max(low, capacity + 1)
    return best, low, method, kept


def _select(cols: Columns, index: np.ndarray) -> Columns:
    return Columns(cols.lower[index], cols.upper[index], cols.size[index], cols.alignment[index],
                   cols.floor[index], cols.ceiling[index])


def _height(cols: Columns, offsets: np.ndarray) -> int:
    return int((offsets + cols.size).max(initial=0))

