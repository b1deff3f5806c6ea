"""The exact search's depth-first run as plain loops over int64 arrays with an
explicit stack, compiled by numba when it is installed (10 to 40 times the nodes per
second of the numpy run in `search.py` on the MiniMalloc instances).

It visits the same nodes in the same order as `search._State.run` and stops at the
same node count, so the two give the same offsets (a test runs both); the numpy run
stays for short budgets (no import or compile cost) and where numba is missing.

The stack holds two kinds of frame. A node frame places, one after another, the
candidates of a node (the unplaced buffers of its sections that may come next in
canonical order, by minimum offset then rank) and searches below each; a split frame
searches the parts of a partition that no unplaced buffer crosses any more, one after
another, all of which must succeed. The unplaced buffers of a partition [lo, hi) of
live sections are exactly those whose first section is in it, a range of the buffers
sorted by first section, so frames hold no lists; the minimum offsets a placement
raised are kept on an undo stack. `advance` runs until the search ends or until a
node count at which it pauses (the caller then looks at the clock and calls again):
no clock and no recursion inside compiled code, so numba can cache it on disk.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from tileplan.placement.problem import VALUE_LIMIT


def _load_numba() -> Any:
    try:
        return importlib.import_module("numba")
    except Exception:  # missing or broken (say, built for another numpy): the numpy search does all the work
        return None


numba = _load_numba()
COMPILED = numba is not None

# Frame fields. Both kinds: KIND, and the partition's live sections [LO, HI).
# A node frame: A3, A4 the offset and rank of the buffer placed before it (-1 at a
# partition's start), A5 the lowest top any of its buffers could reach (dominance),
# A6 the highest offset a candidate may take (cross-section cutoff), CUR the candidate
# placed now (-1 before the first) at OFFSET, its raised minimum offsets at
# [UNDO, UNDO + COUNT) of the undo stack. A split frame: cuts [A3, A4) to split at, A5
# the next cut to look at, A6 where the next part starts, its changed ranks at
# [UNDO, UNDO + COUNT) of the rank stack.
KIND, LO, HI, A3, A4, A5, A6, CUR, UNDO, COUNT, OFFSET = range(11)
FIELDS = 11
NODE, SPLIT = 0, 1
# registers: stack depth, mode, pending code, undo stack top, nodes visited, rank stack top
SP, MODE, CODE, UTOP, NODES, RTOP = range(6)
REGISTERS = 6
ENTER, NEXT, RETURN = 0, 1, 2
# what `advance` returns
PAUSED, GROW = 2, 3


def _jit(function: Callable[..., Any]) -> Callable[..., Any]:
    """numba's compiled `function`, cached on disk where numba finds a writable place
    (beside this file, else its user cache), compiled anew in each process where not."""
    if not COMPILED:
        return function
    try:
        return numba.njit(cache=True)(function)
    except RuntimeError:  # "no locator available": nowhere to cache
        return numba.njit(function)


@_jit
def _hold(lo: int, hi: int, offset: int, capacity: int, total: np.ndarray, pair_buf: np.ndarray,
          group_starts: np.ndarray, placed: np.ndarray, min_offset: np.ndarray) -> bool:
    """Cross-section inference over live sections [lo, hi), as `_State._sections_hold`:
    each one's unplaced total stacked above max(offset, their lowest minimum offset).
    A section holds as soon as one unplaced buffer of it has a minimum offset low
    enough, so most sections cost a few looks, not a pass over all their buffers."""
    for s in range(lo, hi):
        t = total[s]
        if t <= 0:
            continue
        room = capacity - t
        if offset > room:
            return False
        held = False
        for k in range(group_starts[s], group_starts[s + 1]):
            j = pair_buf[k]
            if not placed[j] and min_offset[j] <= room:
                held = True
                break
        if not held:
            return False
    return True


@_jit
def _rerank(lo: int, hi: int, count: int, rtop: int, by_first: np.ndarray, first_start: np.ndarray,
            placed: np.ndarray, sec_first: np.ndarray, sec_last: np.ndarray, total: np.ndarray, rank: np.ndarray,
            rank_buf: np.ndarray, rank_old: np.ndarray, keys: np.ndarray, order: np.ndarray) -> int:
    """Rank the `count` unplaced buffers of sections [lo, hi) afresh by the preorder's
    keys in `order` (0: `keys[0]`, 1: `keys[1]`, 2: minus the largest unplaced section
    total the buffer lives through, as it is now; each smallest first, the buffer index
    last), their old ranks saved from `rtop` on; returns the new top of the rank stack."""
    members = np.empty(count, dtype=np.int64)
    m = 0
    for k in range(first_start[lo], first_start[hi]):
        b = by_first[k]
        if not placed[b]:
            members[m] = b
            m += 1
    columns = np.empty((4, count), dtype=np.float64)
    for i in range(count):
        b = members[i]
        peak = 0
        for s in range(sec_first[b], sec_last[b]):
            peak = max(peak, total[s])
        for c in range(3):
            code = order[c]
            columns[c, i] = keys[0, b] if code == 0 else (keys[1, b] if code == 1 else -float(peak))
        columns[3, i] = b
    perm = np.arange(count)
    for c in range(3, -1, -1):
        perm = perm[np.argsort(columns[c][perm], kind="mergesort")]
    for i in range(count):
        b = members[perm[i]]
        rank_buf[rtop + i] = b
        rank_old[rtop + i] = rank[b]
        rank[b] = i
    return rtop + count


@_jit
def _unrank(f: np.ndarray, rank: np.ndarray, rank_buf: np.ndarray, rank_old: np.ndarray) -> int:
    """Put back the ranks a split frame changed; returns the rank stack's new top."""
    start = f[UNDO]
    for q in range(start, start + f[COUNT]):
        rank[rank_buf[q]] = rank_old[q]
    return start


@_jit
def _save(regs: np.ndarray, sp: int, mode: int, code: int, utop: int, nodes: int, rtop: int) -> None:
    regs[SP], regs[MODE], regs[CODE], regs[UTOP], regs[NODES], regs[RTOP] = sp, mode, code, utop, nodes, rtop


@_jit
def advance(regs: np.ndarray, frames: np.ndarray, undo_buf: np.ndarray, undo_old: np.ndarray, by_first: np.ndarray,
            first_start: np.ndarray, size: np.ndarray, alignment: np.ndarray, aligned: bool, ceiling: np.ndarray,
            capacity: int, rank: np.ndarray, placed: np.ndarray, min_offset: np.ndarray, total: np.ndarray,
            cuts: np.ndarray, solution: np.ndarray, sec_first: np.ndarray, sec_last: np.ndarray,
            pair_buf: np.ndarray, group_starts: np.ndarray, ov_ptr: np.ndarray, ov_idx: np.ndarray,
            rank_buf: np.ndarray, rank_old: np.ndarray, keys: np.ndarray, order: np.ndarray, dynamic: bool, budget: int,
            pause_at: int) -> int:
    """Run the search held in `regs` and `frames` until it ends (returns its code: 1
    placed, 0 proven impossible, -1 out of nodes) or until `pause_at` nodes have
    been visited (returns PAUSED; call again to go on) or until the rank undo stack
    is too short for the next split (returns GROW: call again with longer ones)."""
    sp, mode, code, utop, nodes, rtop = regs[SP], regs[MODE], regs[CODE], regs[UTOP], regs[NODES], regs[RTOP]
    while True:
        if mode == RETURN:
            if sp == 0:
                _save(regs, sp, mode, code, utop, nodes, rtop)
                return code
            f = frames[sp - 1]
            if f[KIND] == SPLIT:
                if code == 1:
                    mode = NEXT
                else:
                    rtop = _unrank(f, rank, rank_buf, rank_old)
                    sp -= 1
                continue
            # a node frame: take its current candidate back out
            b = f[CUR]
            first, last = sec_first[b], sec_last[b]
            for c in range(first, last - 1):
                cuts[c] += 1
            for s in range(first, last):
                total[s] += size[b]
            start = f[UNDO]
            count = f[COUNT]
            for q in range(start, start + count):
                min_offset[undo_buf[q]] = undo_old[q]
            utop = start
            placed[b] = False
            if code == 1:
                solution[b] = f[OFFSET]
                sp -= 1
            elif code == -1:
                sp -= 1
            elif count == 0:
                sp -= 1  # hatless: no sibling does better
            else:
                mode = NEXT
            continue
        f = frames[sp - 1]
        lo, hi = f[LO], f[HI]
        if f[KIND] == SPLIT:
            if mode == ENTER:
                f[A5] = f[A3]  # the next cut to look at
                f[A6] = lo  # where the next part starts
                f[UNDO] = rtop
                f[COUNT] = 0
                if dynamic:
                    count = 0
                    for k in range(first_start[lo], first_start[hi]):
                        if not placed[by_first[k]]:
                            count += 1
                    if rtop + count > len(rank_buf):
                        _save(regs, sp, mode, code, utop, nodes, rtop)
                        return GROW
                    rtop = _rerank(lo, hi, count, rtop, by_first, first_start, placed, sec_first, sec_last, total,
                                   rank, rank_buf, rank_old, keys, order)
                    f[COUNT] = count
                mode = NEXT
            # NEXT: the next part with unplaced buffers
            a = f[A6]
            split_to = f[A4]
            pushed = False
            c = f[A5]
            while c <= split_to:
                if c < split_to and not (cuts[c] == 0 and lo <= c < hi - 1):
                    c += 1
                    continue
                z = c + 1 if c < split_to else hi
                count = 0
                for k in range(first_start[a], first_start[z]):
                    if not placed[by_first[k]]:
                        count += 1
                if count:
                    if not _hold(a, z, 0, capacity, total, pair_buf, group_starts, placed, min_offset):
                        break
                    f[A5] = c + 1
                    f[A6] = z
                    g = frames[sp]
                    g[KIND], g[LO], g[HI], g[A3], g[A4] = NODE, a, z, -1, -1
                    sp += 1
                    mode = ENTER
                    pushed = True
                    break
                a = z
                c += 1
            if not pushed:
                code = 0 if c <= split_to else 1
                rtop = _unrank(f, rank, rank_buf, rank_old)
                sp -= 1
                mode = RETURN
            continue
        if mode == ENTER:
            if nodes >= pause_at:
                _save(regs, sp, mode, code, utop, nodes, rtop)
                return PAUSED
            nodes += 1
            if nodes > budget:
                code = -1
                sp -= 1
                mode = RETURN
                continue
            m = 0
            lowest_top = VALUE_LIMIT
            for k in range(first_start[lo], first_start[hi]):
                b = by_first[k]
                if not placed[b]:
                    m += 1
                    lowest_top = min(lowest_top, min_offset[b] + size[b])
            if m == 0:
                code = 1
                sp -= 1
                mode = RETURN
                continue
            peak = 0
            for s in range(lo, hi):
                peak = max(peak, total[s])
            f[A5] = lowest_top
            f[A6] = capacity - peak
            f[CUR] = -1
            mode = NEXT
        # NEXT: the candidate after the current one by (minimum offset, rank)
        last_offset, last_rank, lowest_top, limit = f[A3], f[A4], f[A5], f[A6]
        cur = f[CUR]
        cur_offset = min_offset[cur] if cur >= 0 else -1
        cur_rank = rank[cur] if cur >= 0 else -1
        best = -1
        for k in range(first_start[lo], first_start[hi]):
            b = by_first[k]
            if placed[b]:
                continue
            mo = min_offset[b]
            if not (mo < lowest_top and mo <= limit and (mo > last_offset or (mo == last_offset
                                                                              and rank[b] > last_rank))):
                continue
            if cur >= 0 and not (mo > cur_offset or (mo == cur_offset and rank[b] > cur_rank)):
                continue
            if best < 0 or mo < min_offset[best] or (mo == min_offset[best] and rank[b] < rank[best]):
                best = b
        if best < 0:
            code = 0
            sp -= 1
            mode = RETURN
            continue
        b = best
        offset = min_offset[b]
        top = offset + size[b]
        placed[b] = True
        f[CUR] = b
        f[OFFSET] = offset
        f[UNDO] = utop
        feasible = True
        raised_lo = hi
        raised_hi = -1
        for q in range(ov_ptr[b], ov_ptr[b + 1]):
            j = ov_idx[q]
            if placed[j]:
                continue
            old = min_offset[j]
            new = max(old, top)
            if aligned:
                new = -(-new // alignment[j]) * alignment[j]
            undo_buf[utop] = j
            undo_old[utop] = old
            utop += 1
            min_offset[j] = new
            if new + size[j] > ceiling[j]:
                feasible = False
            if new > old:
                raised_lo = min(raised_lo, sec_first[j])
                raised_hi = max(raised_hi, sec_last[j])
        f[COUNT] = utop - f[UNDO]
        first, last = sec_first[b], sec_last[b]
        for s in range(first, last):
            total[s] -= size[b]
        opened = False
        for c in range(first, last - 1):
            cuts[c] -= 1
            if cuts[c] == 0:
                opened = True
        if feasible and (raised_hi < 0 or _hold(max(lo, raised_lo), min(hi, raised_hi), offset, capacity, total,
                                                pair_buf, group_starts, placed, min_offset)):
            g = frames[sp]
            if opened:
                g[KIND], g[LO], g[HI], g[A3], g[A4] = SPLIT, lo, hi, first, last - 1
            else:
                g[KIND], g[LO], g[HI], g[A3], g[A4] = NODE, lo, hi, offset, rank[b]
            sp += 1
            mode = ENTER
        else:
            code = 0
            mode = RETURN  # back to this frame: take b out, try the next


def start(frames: np.ndarray, regs: np.ndarray, parts: int) -> None:
    """Set up a run from the root: the split of live sections [0, parts) at their zero cuts."""
    frames[0, KIND], frames[0, LO], frames[0, HI], frames[0, A3], frames[0, A4] = SPLIT, 0, parts, 0, parts - 1
    regs[SP], regs[MODE], regs[CODE], regs[UTOP], regs[NODES], regs[RTOP] = 1, ENTER, 0, 0, 0, 0
