"""Validity of a placement, checked on demand: every buffer at an aligned offset
inside its allowed range and no two live buffers sharing a byte.

The overlap check is one sweep over the buffers' lifetimes, O(n log n) plus the
overlaps it reports: buffers enter in order of (lower, offset), those whose upper is
at or before that step leave first (lifetimes are half-open), and the live buffers are
kept ordered by offset (a Fenwick tree over the buffers' offset ranks). While no
overlap has been found the live buffers are disjoint, so a new buffer meets one of
them exactly when it meets its neighbour below (the only one that may reach above its
offset) or the next ones above it (scanned while they start below its top). A buffer
found overlapping is reported and left out of the live set, which stays disjoint, so
every later collision is still found against a neighbour: the result is empty exactly
when the placement is valid.

The sweep is plain loops over int64 arrays: compiled by numba for large problems
(`COMPILE_FROM` buffers and more, where numba imports), run as Python below that
(no import or compile cost), in chunks between which it looks at the clock when given
a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tileplan.placement.problem import Problem

COMPILE_FROM = 20_000  # buffers from which the sweep runs compiled (when numba imports)
CHUNK = 1 << 17  # buffers entering the compiled sweep between looks at the clock (about 0.05 s)
PYTHON_CHUNK = 1 << 12  # the same for the sweep run as Python (about 0.05 s)


@dataclass(frozen=True, slots=True)
class Verification:
    """Up to `limit` messages naming the buffers and the rule each breaks (empty: no
    rule broken among those checked) and whether every buffer was checked (False: the
    deadline ended the sweep after `checked` of the `total` buffers of positive size)."""

    messages: list[str]
    complete: bool
    checked: int
    total: int


def find_violations(problem: Problem, offsets: Sequence[int] | np.ndarray, limit: int = 10) -> list[str]:
    """Up to `limit` messages naming the buffers and the rule each placement breaks;
    empty when the placement is valid."""
    return verify(problem, offsets, limit).messages


def verify(problem: Problem, offsets: Sequence[int] | np.ndarray, limit: int = 10,
           deadline: float | None = None) -> Verification:
    """`find_violations` that stops when `time.perf_counter()` passes `deadline` (then
    `complete` is False and the messages are those found so far)."""
    cols = problem.columns()
    n = len(cols)
    off = np.asarray(offsets, dtype=np.int64).reshape(-1)
    assert len(off) == n, "one offset per buffer"
    ids = problem.ids
    problems: list[str] = []
    above = (off + cols.size > cols.ceiling) | (off < cols.floor) | (off % cols.alignment != 0)
    for i in np.flatnonzero(above)[:limit].tolist():
        problems.append(f"buffer {ids[i]!r} at {off[i]} breaks its alignment or allowed range")
    keep = np.flatnonzero(cols.size > 0)
    total = len(keep)
    if len(problems) >= limit or total == 0:
        return Verification(problems[:limit], len(problems) >= limit or total == 0, 0, total)
    lower, upper = cols.lower[keep], cols.upper[keep]
    start, top = off[keep], off[keep] + cols.size[keep]
    enter = np.lexsort((start, lower))  # by lower, then offset (lexsort is stable: then by index)
    leave = np.argsort(upper, kind="stable")
    by_rank = np.argsort(start, kind="stable")  # the offset order of the live set
    rank = np.empty(total, dtype=np.int64)
    rank[by_rank] = np.arange(total, dtype=np.int64)
    tree = np.zeros(total + 1, dtype=np.int64)
    live = np.zeros(total, dtype=np.bool_)
    state = np.zeros(3, dtype=np.int64)  # next to enter, next to leave, pairs found
    room = limit - len(problems)
    pairs = np.zeros((room, 2), dtype=np.int64)
    sweep = _sweeper(total)
    chunk = PYTHON_CHUNK if sweep is _sweep else CHUNK
    while True:
        stop = min(total, int(state[0]) + chunk)
        sweep(lower, upper, start, top, enter, leave, rank, by_rank, tree, live, state, pairs, stop)
        if state[0] >= total or state[2] >= room:
            break
        if deadline is not None and time.perf_counter() > deadline:
            break
    for j, i in pairs[:int(state[2])].tolist():
        a, b = keep[j], keep[i]
        problems.append(f"buffers {ids[a]!r} [{off[a]}, {top[j]}) and {ids[b]!r} "
                        f"[{off[b]}, {top[i]}) overlap while both live")
    done = int(state[0]) >= total or len(problems) >= limit
    return Verification(problems[:limit], done, int(state[0]), total)


def _sweep(lower: np.ndarray, upper: np.ndarray, start: np.ndarray, top: np.ndarray, enter: np.ndarray,
           leave: np.ndarray, rank: np.ndarray, by_rank: np.ndarray, tree: np.ndarray, live: np.ndarray,
           state: np.ndarray, pairs: np.ndarray, stop: int) -> None:
    """Let buffers enter[state[0]:stop] in, recording colliding (earlier, later) pairs
    in `pairs` from row state[2] until it is full; state[1] is the next to leave.
    `tree` is a Fenwick tree (1-based) counting the live buffers by offset rank.
    One function with no calls, so that numba compiles it alone."""
    n = len(lower)
    room = len(pairs)
    high = 1
    while high * 2 <= n:
        high *= 2
    k, out, found = state[0], state[1], state[2]
    count = 0  # live buffers: the tree's total (a run may resume after a pause)
    p = n
    while p > 0:
        count += tree[p]
        p -= p & -p
    while k < stop and found < room:
        i = enter[k]
        while out < n and upper[leave[out]] <= lower[i]:
            j = leave[out]
            if live[j]:
                live[j] = False
                count -= 1
                p = rank[j] + 1
                while p <= n:
                    tree[p] -= 1
                    p += p & -p
            out += 1
        below = 0  # live buffers before i in offset order
        p = rank[i]
        while p > 0:
            below += tree[p]
            p -= p & -p
        hit = False
        want = below  # the neighbour below, then those above while they start below i's top
        while found < room and want <= count:
            if want == 0:
                want = 1
                continue
            pos, left, step = 0, want, high  # the want-th live buffer's rank
            while step > 0:
                if pos + step <= n and tree[pos + step] < left:
                    pos += step
                    left -= tree[pos]
                step //= 2
            j = by_rank[pos]
            if want == below:
                if top[j] > start[i]:
                    pairs[found, 0] = j
                    pairs[found, 1] = i
                    found += 1
                    hit = True
            elif start[j] < top[i]:
                pairs[found, 0] = j
                pairs[found, 1] = i
                found += 1
                hit = True
            else:
                break
            want += 1
        if not hit:
            live[i] = True
            count += 1
            p = rank[i] + 1
            while p <= n:
                tree[p] += 1
                p += p & -p
        k += 1
    state[0], state[1], state[2] = k, out, found


_COMPILED: list[Callable[..., Any]] = []


def _sweeper(n: int) -> Callable[..., Any]:
    """The compiled sweep for `n` >= COMPILE_FROM buffers where numba imports, else the Python one."""
    if n < COMPILE_FROM:
        return _sweep
    if not _COMPILED:
        from tileplan.placement import kernel

        if not kernel.COMPILED:
            return _sweep
        _COMPILED.append(kernel._jit(_sweep))
    return _COMPILED[0]
