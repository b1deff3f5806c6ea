"""Single passes for large problems as plain loops over int64 arrays, compiled by
numba (run as Python where numba does not import): the skyline dive and the time sweep.

**Skyline dive** (`advance`): the same placement as the numpy dive in `greedy.py`, by
other means. The tops placed so far are a segment tree over the sections (the steps
between consecutive distinct lower/upper values; a range "raise to at least" and a
range maximum), so a buffer's minimum offset (the highest top over its lifetime, at
least its floor, rounded up to its alignment) is one query; the unplaced buffers wait
in a binary heap keyed by (minimum offset, rank) whose keys may be stale, never too
high (minimum offsets only rise). The smallest key is taken and its minimum offset
computed afresh: when it is still the key, the buffer is the one the numpy dive picks
(every other key is a lower bound on its own); when it rose, the buffer goes back with
the new key. Buffers of the same sections, floor and alignment share their minimum
offset at every moment, so only the first of each such group (by rank) waits in the
heap. O((n + r) log n) for r re-queued entries; r is small on short-lived buffers but
reaches hundreds per buffer where long-lived small buffers wait under a skyline that
rises a few bytes at a time (IOPDDL's Y_1: 15 million for 62,185 buffers).

**Time sweep** (`sweep`): buffers in order of lower step, each at the lowest offset
where it fits among the buffers live at its lower step (first fit; those are the only
placed buffers it can meet, since every placed buffer started no later). The live
buffers are disjoint address spans kept sorted in blocks of BLOCK spans, each block
knowing its largest inner gap and each group of GROUP blocks the largest gap inside
it, so a search skips whole groups: O(n (g + GROUP + BLOCK)) for g groups of live
spans, 1 to 2 CPU seconds for a million buffers of short lifetimes, about 4 when
hundreds of thousands are live at once.

`advance` and `sweep` run until done or until a count of steps at which they pause
(the caller looks at the clock and calls again): no clock and no recursion inside, so
numba caches the compiled code on disk beside this module.
"""

from __future__ import annotations

import numpy as np

from tileplan.placement.kernel import _jit

# the dive's registers
HEAP, PLACED, TAKEN = range(3)
REGISTERS = 3
# the sweep's registers: next to enter, next to leave, live blocks, whether every ceiling
# was kept, free block ids
NEXT, GONE, BLOCKS, KEPT, FREE = range(5)
SWEEP_REGISTERS = 5
BLOCK = 64  # live spans a block holds
GROUP = 32  # blocks whose largest gap is kept together, so that a search skips them at once


@_jit
def _less(key: np.ndarray, rank: np.ndarray, a: int, b: int) -> bool:
    return key[a] < key[b] or (key[a] == key[b] and rank[a] < rank[b])


@_jit
def _push(key: np.ndarray, rank: np.ndarray, size: int, k: int, r: int) -> int:
    """Add (k, r) to the heap of `size` entries; the new size."""
    i = size
    key[i], rank[i] = k, r
    while i > 0:
        parent = (i - 1) // 2
        if not _less(key, rank, i, parent):
            break
        key[i], key[parent] = key[parent], key[i]
        rank[i], rank[parent] = rank[parent], rank[i]
        i = parent
    return size + 1


@_jit
def _pop(key: np.ndarray, rank: np.ndarray, size: int) -> int:
    """Remove the smallest entry (read it at [0] first); the new size."""
    size -= 1
    key[0], rank[0] = key[size], rank[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and _less(key, rank, left + 1, left):
            child = left + 1
        if not _less(key, rank, child, i):
            break
        key[i], key[child] = key[child], key[i]
        rank[i], rank[child] = rank[child], rank[i]
        i = child
    return size


@_jit
def _raise(mx: np.ndarray, tag: np.ndarray, leaves: int, lo: int, hi: int, value: int) -> None:
    """Every section in [lo, hi) to at least `value`: the covering nodes' maxima and
    pending raises, then the maxima of their ancestors."""
    left, right = lo + leaves, hi + leaves
    while left < right:
        if left & 1:
            mx[left] = max(mx[left], value)
            if left < leaves:
                tag[left] = max(tag[left], value)
            left += 1
        if right & 1:
            right -= 1
            mx[right] = max(mx[right], value)
            if right < leaves:
                tag[right] = max(tag[right], value)
        left //= 2
        right //= 2
    for leaf in (lo + leaves, hi - 1 + leaves):
        p = leaf // 2
        while p >= 1:
            mx[p] = max(mx[p], max(mx[2 * p], mx[2 * p + 1]))
            p //= 2


@_jit
def _push_down(mx: np.ndarray, tag: np.ndarray, leaves: int, height: int, leaf: int) -> None:
    """Hand the pending raises on the path from the root to `leaf` to the children."""
    for s in range(height, 0, -1):
        i = leaf >> s
        t = tag[i]
        if t:
            for c in (2 * i, 2 * i + 1):
                mx[c] = max(mx[c], t)
                if c < leaves:
                    tag[c] = max(tag[c], t)
            tag[i] = 0


@_jit
def _highest(mx: np.ndarray, tag: np.ndarray, leaves: int, height: int, lo: int, hi: int) -> int:
    """The highest top over sections [lo, hi)."""
    left, right = lo + leaves, hi + leaves
    _push_down(mx, tag, leaves, height, left)
    _push_down(mx, tag, leaves, height, right - 1)
    best = 0
    while left < right:
        if left & 1:
            best = max(best, mx[left])
            left += 1
        if right & 1:
            right -= 1
            best = max(best, mx[right])
        left //= 2
        right //= 2
    return best


@_jit
def advance(regs: np.ndarray, key: np.ndarray, rank: np.ndarray, by_rank: np.ndarray, rank_of: np.ndarray,
            after: np.ndarray,
            lo: np.ndarray, hi: np.ndarray, size: np.ndarray, alignment: np.ndarray, floor: np.ndarray,
            mx: np.ndarray, tag: np.ndarray, leaves: int, height: int, offsets: np.ndarray, budget: int) -> None:
    """Take up to `budget` entries from the heap: place each buffer whose key is its
    minimum offset, re-queue the others. Of a group of buffers with the same sections,
    floor and alignment only the first by rank waits in the heap; `after[b]` (-1: none)
    follows b in its group."""
    heap = regs[HEAP]
    placed = regs[PLACED]
    taken = 0
    while heap > 0 and taken < budget:
        k, r = key[0], rank[0]
        heap = _pop(key, rank, heap)
        taken += 1
        b = by_rank[r]
        lowest = max(_highest(mx, tag, leaves, height, lo[b], hi[b]), floor[b])
        a = alignment[b]
        lowest = -(-lowest // a) * a
        if lowest > k:
            heap = _push(key, rank, heap, lowest, r)
            continue
        offsets[b] = lowest
        placed += 1
        if size[b] > 0:
            _raise(mx, tag, leaves, lo[b], hi[b], lowest + size[b])
        c = after[b]
        if c >= 0:
            nxt = max(_highest(mx, tag, leaves, height, lo[c], hi[c]), floor[c])
            heap = _push(key, rank, heap, -(-nxt // a) * a, rank_of[c])
    regs[HEAP] = heap
    regs[PLACED] = placed
    regs[TAKEN] += taken


# The time sweep -------------------------------------------------------------------------


@_jit
def _fit_at(low: int, high: int, size: int, alignment: int, floor: int, ceiling: int) -> int:
    """The lowest offset at or above `low` and `floor`, aligned, where `size` bytes end
    by `high` and `ceiling`; -1 when there is none."""
    at = max(low, floor)
    at = -(-at // alignment) * alignment
    if at + size <= min(high, ceiling):
        return at
    return -1


@_jit
def _first_fit(bs: np.ndarray, bt: np.ndarray, bcount: np.ndarray, bgap: np.ndarray, border: np.ndarray,
               gmax: np.ndarray, nblk: int, size: int, alignment: int, floor: int,
               ceiling: int) -> tuple[int, int, int]:
    """(block position, span position, offset) of the lowest fit among the live spans,
    block position `nblk` for above them all; (-1, -1, -1) when none is under `ceiling`.
    Groups of GROUP blocks whose largest gap (`gmax`) is below `size` are skipped whole."""
    prev = 0
    for g in range((nblk + GROUP - 1) // GROUP):
        first = g * GROUP
        last = min(nblk, first + GROUP)
        if max(prev, floor) + size > ceiling:
            return -1, -1, -1
        at = _fit_at(prev, bs[border[first], 0], size, alignment, floor, ceiling)
        if at >= 0:
            return first, 0, at
        if gmax[g] >= size:
            for idx in range(first, last):
                b = border[idx]
                if idx > first:
                    at = _fit_at(prev, bs[b, 0], size, alignment, floor, ceiling)
                    if at >= 0:
                        return idx, 0, at
                count = bcount[b]
                if bgap[b] >= size:
                    for k in range(count - 1):
                        at = _fit_at(bt[b, k], bs[b, k + 1], size, alignment, floor, ceiling)
                        if at >= 0:
                            return idx, k + 1, at
                prev = bt[b, count - 1]
        else:
            b = border[last - 1]
            prev = bt[b, bcount[b] - 1]
    at = _fit_at(prev, ceiling, size, alignment, floor, ceiling)
    if at >= 0:
        return nblk, 0, at
    return -1, -1, -1


@_jit
def _regroup(bs: np.ndarray, bt: np.ndarray, bcount: np.ndarray, bgap: np.ndarray, border: np.ndarray,
             gmax: np.ndarray, nblk: int, start: int, stop: int) -> None:
    """The largest gap of each group of blocks from the one holding block position
    `start` to the one holding `stop` - 1: inside its blocks and between them (the gap
    below a group's first block is looked at by `_first_fit` itself)."""
    for g in range(start // GROUP, (min(stop, nblk) + GROUP - 1) // GROUP):
        first = g * GROUP
        gap = 0
        for idx in range(first, min(nblk, first + GROUP)):
            b = border[idx]
            gap = max(gap, bgap[b])
            if idx > first:
                a = border[idx - 1]
                gap = max(gap, bs[b, 0] - bt[a, bcount[a] - 1])
        gmax[g] = gap


@_jit
def _regap(bs: np.ndarray, bt: np.ndarray, bcount: np.ndarray, bgap: np.ndarray, b: int) -> None:
    gap = 0
    for k in range(bcount[b] - 1):
        gap = max(gap, bs[b, k + 1] - bt[b, k])
    bgap[b] = gap


@_jit
def _new_block(regs: np.ndarray, free: np.ndarray) -> int:
    """A block id from the free stack, or -1 when none is left."""
    if regs[FREE] == 0:
        return -1
    regs[FREE] -= 1
    return free[regs[FREE]]


@_jit
def _compact(regs: np.ndarray, bs: np.ndarray, bt: np.ndarray, bcount: np.ndarray, bgap: np.ndarray,
             border: np.ndarray, gmax: np.ndarray, free: np.ndarray) -> None:
    """Repack the live spans half a block to a block, in order; every other block free."""
    nblk = regs[BLOCKS]
    total = 0
    for idx in range(nblk):
        total += bcount[border[idx]]
    starts = np.empty(total, dtype=np.int64)
    tops = np.empty(total, dtype=np.int64)
    j = 0
    for idx in range(nblk):
        b = border[idx]
        for k in range(bcount[b]):
            starts[j], tops[j] = bs[b, k], bt[b, k]
            j += 1
    half = BLOCK // 2
    nblk = (total + half - 1) // half
    for b in range(nblk):
        border[b] = b
        count = min(half, total - b * half)
        bs[b, :count] = starts[b * half:b * half + count]
        bt[b, :count] = tops[b * half:b * half + count]
        bcount[b] = count
        _regap(bs, bt, bcount, bgap, b)
    regs[BLOCKS] = nblk
    regs[FREE] = 0
    for b in range(len(bcount) - 1, nblk - 1, -1):
        free[regs[FREE]] = b
        regs[FREE] += 1
    _regroup(bs, bt, bcount, bgap, border, gmax, nblk, 0, nblk)


@_jit
def _insert(regs: np.ndarray, bs: np.ndarray, bt: np.ndarray, bcount: np.ndarray, bgap: np.ndarray,
            border: np.ndarray, gmax: np.ndarray, free: np.ndarray, idx: int, pos: int, start: int,
            top: int) -> None:
    """Put the span [start, top) at block position `idx`, span position `pos`."""
    nblk = regs[BLOCKS]
    moved = nblk  # the first block position that moved (or came)
    if idx == nblk:  # above them all: at the end of the last block
        if nblk == 0:
            moved = 0
            b = _new_block(regs, free)
            border[0] = b
            bcount[b] = 0
            regs[BLOCKS] = nblk = 1
        idx = nblk - 1
        pos = bcount[border[idx]]
    b = border[idx]
    if bcount[b] == BLOCK and regs[FREE] == 0:  # no block to split into: repack, find the gap again
        _compact(regs, bs, bt, bcount, bgap, border, gmax, free)
        idx, pos, _ = _first_fit(bs, bt, bcount, bgap, border, gmax, regs[BLOCKS], top - start, 1, start, top)
        if idx == regs[BLOCKS]:
            idx -= 1
            pos = bcount[border[idx]]
        b = border[idx]
    if bcount[b] == BLOCK:  # split in halves
        other = _new_block(regs, free)
        half = BLOCK // 2
        bs[other, :half] = bs[b, half:]
        bt[other, :half] = bt[b, half:]
        bcount[other] = half
        bcount[b] = half
        for m in range(regs[BLOCKS], idx + 1, -1):
            border[m] = border[m - 1]
        border[idx + 1] = other
        regs[BLOCKS] += 1
        moved = idx + 1
        _regap(bs, bt, bcount, bgap, other)
        if pos > half:
            b, pos = other, pos - half
    count = bcount[b]
    for k in range(count, pos, -1):
        bs[b, k] = bs[b, k - 1]
        bt[b, k] = bt[b, k - 1]
    bs[b, pos] = start
    bt[b, pos] = top
    bcount[b] = count + 1
    _regap(bs, bt, bcount, bgap, b)
    _regroup(bs, bt, bcount, bgap, border, gmax, regs[BLOCKS], idx, regs[BLOCKS] if moved < regs[BLOCKS] else idx + 1)


@_jit
def _remove(regs: np.ndarray, bs: np.ndarray, bt: np.ndarray, bcount: np.ndarray, bgap: np.ndarray,
            border: np.ndarray, gmax: np.ndarray, free: np.ndarray, start: int) -> None:
    """Take out the live span that starts at `start`."""
    lo, hi = 0, regs[BLOCKS] - 1  # the last block whose first span starts at or below `start`
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if bs[border[mid], 0] <= start:
            lo = mid
        else:
            hi = mid - 1
    idx = lo
    b = border[idx]
    count = bcount[b]
    k = np.searchsorted(bs[b, :count], start)
    for m in range(k, count - 1):
        bs[b, m] = bs[b, m + 1]
        bt[b, m] = bt[b, m + 1]
    bcount[b] = count - 1
    if count == 1:
        for m in range(idx, regs[BLOCKS] - 1):
            border[m] = border[m + 1]
        regs[BLOCKS] -= 1
        free[regs[FREE]] = b
        regs[FREE] += 1
        _regroup(bs, bt, bcount, bgap, border, gmax, regs[BLOCKS], idx, regs[BLOCKS])
    else:
        _regap(bs, bt, bcount, bgap, b)
        _regroup(bs, bt, bcount, bgap, border, gmax, regs[BLOCKS], idx, idx + 1)


@_jit
def sweep(regs: np.ndarray, enter: np.ndarray, leave: np.ndarray, lower: np.ndarray, upper: np.ndarray,
          size: np.ndarray, alignment: np.ndarray, floor: np.ndarray, ceiling: np.ndarray, offsets: np.ndarray,
          bs: np.ndarray, bt: np.ndarray, bcount: np.ndarray, bgap: np.ndarray, border: np.ndarray,
          gmax: np.ndarray, free: np.ndarray, stop: int) -> None:
    """Place buffers enter[regs[NEXT]:stop], each at its first fit among the live spans
    (under its ceiling; above them all when nothing there holds it, clearing KEPT),
    after the buffers whose upper is at or before its lower have left."""
    n = len(lower)
    k = regs[NEXT]
    gone = regs[GONE]
    while k < stop:
        i = enter[k]
        while gone < n and upper[leave[gone]] <= lower[i]:
            j = leave[gone]
            if size[j] > 0:
                _remove(regs, bs, bt, bcount, bgap, border, gmax, free, offsets[j])
            gone += 1
        if size[i] == 0:
            offsets[i] = -(-floor[i] // alignment[i]) * alignment[i]
        else:
            idx, pos, at = _first_fit(bs, bt, bcount, bgap, border, gmax, regs[BLOCKS], size[i], alignment[i],
                                      floor[i], ceiling[i])
            if idx < 0:  # no room under the ceiling: the lowest fit with none
                regs[KEPT] = 0
                idx, pos, at = _first_fit(bs, bt, bcount, bgap, border, gmax, regs[BLOCKS], size[i],
                                          alignment[i], floor[i], np.iinfo(np.int64).max // 2)
            offsets[i] = at
            _insert(regs, bs, bt, bcount, bgap, border, gmax, free, idx, pos, at, at + size[i])
        k += 1
    regs[NEXT] = k
    regs[GONE] = gone
