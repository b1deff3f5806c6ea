"""Training over several IPUs: a pipeline's plans, and the fewest IPUs that fit.

A training pipeline's IPU i holds more than its layers' weights: its stash is
2(N - 1 - i) + 1 micro-batches deep (`tileplan.importers.training_stages`), so what
fits on it depends on its position and on N, not only on its layer count (unlike
inference, `tileplan.planner.pipeline.fewest_ipus`). `fewest_training_ipus` tries N
= 1, 2, ...: for each position the most layers that fit (by bisection: an IPU given
one more layer holds that layer's weights, optimizer state and stash besides all it
held, so its margin shrinks with its layers), then, when those cover the model, the
split with the largest smallest margin (a dynamic program over positions, each within
its most).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from tileplan.errors import InputError
from tileplan.model.ir import Program
from tileplan.planner.pipeline import MAX_IPUS, Pipeline, margin
from tileplan.planner.plan import Plan

#: the program of IPU `ipu` when the layers are split `counts`
IpuProgram = Callable[[tuple[int, ...], int], Program]


def plan_training_pipeline(counts: tuple[int, ...], program: IpuProgram, plan: Callable[[Program], Plan]) -> Pipeline:
    return Pipeline(counts, tuple(plan(program(counts, ipu)) for ipu in range(len(counts))))


def fewest_training_ipus(layers: int, program: IpuProgram, plan: Callable[[Program], Plan],
                         max_ipus: int = MAX_IPUS) -> Pipeline | None:
    """The fewest IPUs whose contiguous split of `layers` layers fits, with the largest
    smallest margin among those splits; None if none over up to `max_ipus` IPUs."""
    for n in range(1, max_ipus + 1):
        counts = _best(layers, n, program, plan)
        if counts is not None:
            return plan_training_pipeline(counts, program, plan)
    return None


def _best(layers: int, n: int, program: IpuProgram, plan: Callable[[Program], Plan]) -> tuple[int, ...] | None:
    if n == 1:
        m = margin(plan(program((layers,), 0)))
        return (layers,) if m is not None and m >= 0 else None

    @lru_cache(maxsize=None)
    def at(ipu: int, count: int) -> int | None:
        """The margin of IPU `ipu` with `count` layers (the others share the rest)."""
        rest = layers - count
        others = [rest // (n - 1) + (1 if k < rest % (n - 1) else 0) for k in range(n - 1)]
        counts = tuple(others[:ipu]) + (count,) + tuple(others[ipu:])
        try:
            return margin(plan(program(counts, ipu)))
        except InputError:  # the IPU would run nothing (no layer, and the head is on IPU 0)
            return None

    def fits(ipu: int, count: int) -> bool:
        m = at(ipu, count)
        return m is not None and m >= 0

    least = [0 if ipu in (0, n - 1) else 1 for ipu in range(n)]  # a middle IPU runs at least a layer
    most = []
    for ipu in range(n):
        lo, hi = least[ipu], layers
        if not fits(ipu, lo):
            return None
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(ipu, mid):
                lo = mid
            else:
                hi = mid - 1
        most.append(lo)
    if sum(most) < layers:
        return None

    @lru_cache(maxsize=None)
    def best(ipu: int, left: int) -> tuple[int, tuple[int, ...]] | None:
        """IPUs ipu..n-1 with `left` layers: (smallest margin, counts)."""
        if ipu == n - 1:
            if not least[ipu] <= left <= most[ipu]:
                return None
            m = at(ipu, left)
            return None if m is None or m < 0 else (m, (left,))
        out = None
        below = sum(most[ipu + 1:])
        for c in range(max(least[ipu], left - below), min(most[ipu], left) + 1):
            m = at(ipu, c)
            rest = best(ipu + 1, left - c)
            if m is None or m < 0 or rest is None:
                continue
            cand = (min(m, rest[0]), (c, *rest[1]))
            if out is None or cand[0] > out[0]:
                out = cand
        return out

    found = best(0, layers)
    return None if found is None else found[1]
