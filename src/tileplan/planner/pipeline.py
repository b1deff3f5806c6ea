"""Plans over several IPUs: a pipeline of contiguous layer ranges (inference).

`expand_layers_per_ipu` reads optimum-graphcore's `layers_per_ipu` (-1 wildcards share
the layers the fixed entries leave, the remainder going to the last wildcard IPU, as
optimum-graphcore's `_expand_layers_per_ipu_wildcard` does). `plan_pipeline` plans
each stage as its own program (`tileplan.model.stages.split_program`): every IPU has
its own timeline, peaks, worst tile and verdict. `fewest_ipus` finds the fewest IPUs
whose split fits with the most margin: a dynamic program over contiguous ranges
(memory first: every stage must fit; then balance: the largest smallest margin),
over stage plans memoised by (layers, first stage?, last stage?), which is all a
stage's plan depends on when the layers are alike (a repeat block).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from tileplan.errors import InputError, ModelError
from tileplan.model.ir import Program
from tileplan.model.stages import layer_count, split_program
from tileplan.planner.plan import Plan

#: the most IPUs `--ipus auto` tries (an IPU-POD64 has 64)
MAX_IPUS = 64


def expand_layers_per_ipu(spec: list[int], layers: int, ipus: int | None = None) -> tuple[int, ...]:
    """optimum-graphcore's convention: a list of layer counts with -1 wildcards."""
    if not spec or any(n < -1 for n in spec):
        raise InputError(f"--layers-per-ipu {spec}: expected counts >= 0 or -1 (a wildcard)")
    if ipus is not None and len(spec) == 1 and spec[0] == -1:
        spec = [-1] * ipus
    if ipus is not None and len(spec) != ipus:
        raise InputError(f"--layers-per-ipu lists {len(spec)} IPUs, --ipus says {ipus}")
    wild = [i for i, n in enumerate(spec) if n == -1]
    fixed = sum(n for n in spec if n != -1)
    if not wild:
        if fixed != layers:
            raise InputError(f"--layers-per-ipu {spec} places {fixed} layers; the model has {layers}")
        return tuple(spec)
    rest = layers - fixed
    if rest < 0:
        raise InputError(f"--layers-per-ipu {spec} places {fixed} layers before its wildcards; the model has "
                         f"{layers}")
    q, r = divmod(rest, len(wild))
    out = list(spec)
    for i in wild:
        out[i] = q
    out[wild[-1]] += r
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Pipeline:
    """One plan per IPU and the split that made them."""

    layers_per_ipu: tuple[int, ...]
    plans: tuple[Plan, ...]

    @property
    def fits(self) -> bool:
        return all(p.verdict.fits for p in self.plans)


def plan_pipeline(program: Program, counts: tuple[int, ...], plan: Callable[[Program], Plan]) -> Pipeline:
    return Pipeline(counts, tuple(plan(p) for p in split_program(program, counts)))


def margin(p: Plan) -> int | None:
    """Bytes left on the worst tile (None when the plan stopped early); negative when over."""
    if p.exact is None or p.scope != "program":
        return None
    return p.machine.budget_bytes - (p.exact.peak("total")[0] + p.exchange_bytes)


def fewest_ipus(program: Program, plan: Callable[[Program], Plan], max_ipus: int = MAX_IPUS
                ) -> Pipeline | None:
    """The fewest IPUs whose contiguous split fits, with the largest smallest margin
    among those splits; None if no split over up to `max_ipus` IPUs fits."""
    layers = layer_count(program)

    @lru_cache(maxsize=None)
    def stage(count: int, first: bool, last: bool) -> int | None:
        """The margin of a stage of `count` layers (the first and last stages also run
        what comes before and after the layers)."""
        if first and last:
            counts: tuple[int, ...] = (count,)
        elif first:
            counts = (count, layers - count)
        elif last:
            counts = (layers - count, count)
        else:
            counts = (layers - count, count, 0)
        try:
            stages = split_program(program, counts)
        except ModelError:
            return None
        index = 0 if first else (len(stages) - 1 if last else 1)
        return margin(plan(stages[index]))

    def fits(count: int, first: bool, last: bool) -> bool:
        m = stage(count, first, last)
        return m is not None and m >= 0

    def most(first: bool, last: bool) -> int:
        """The most layers a stage of this kind fits, by bisection. Its premise, that a
        stage's margin shrinks as its layers grow, is about layers, not memory in
        general: a stage of n + 1 alike layers holds every tensor one of n holds, at
        the same layouts, and one more layer's weights, live throughout (held by
        tests/test_searches.py; the batch has no such premise)."""
        lo, hi = (1 if not (first or last) else 0), layers
        if not fits(lo, first, last):
            return -1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid, first, last):
                lo = mid
            else:
                hi = mid - 1
        return lo

    if fits(layers, True, True):
        return plan_pipeline(program, (layers,), plan)
    head, tail, middle = most(True, False), most(False, True), most(False, False)
    if head < 0 or tail < 0:
        return None
    for n in range(2, max_ipus + 1):
        if head + tail + (n - 2) * max(middle, 0) < layers:
            continue
        counts = _best_split(layers, n, head, tail, middle, stage)
        if counts is not None:
            return plan_pipeline(program, counts, plan)
    return None


def _best_split(layers: int, n: int, head: int, tail: int, middle: int,
                stage: Callable[[int, bool, bool], int | None]) -> tuple[int, ...] | None:
    """Counts for n stages, each within its kind's most, maximising the smallest margin
    (ties: the first found, earlier stages lighter)."""
    @lru_cache(maxsize=None)
    def best(k: int, left: int) -> tuple[int, tuple[int, ...]] | None:
        """Stages k..n-1 with `left` layers: (smallest margin, counts)."""
        first, last = k == 0, k == n - 1
        cap = head if first else (tail if last else middle)
        if last:
            if left > cap or (left < 1 and not last):
                return None
            m = stage(left, first, last)
            return None if m is None or m < 0 else (m, (left,))
        out = None
        for c in range(0 if first else 1, min(cap, left) + 1):
            m = stage(c, first, last)
            if m is None or m < 0:
                continue
            rest = best(k + 1, left - c)
            if rest is None:
                continue
            cand = (min(m, rest[0]), (c, *rest[1]))
            if out is None or cand[0] > out[0]:
                out = cand
        return out

    found = best(0, layers)
    return None if found is None else found[1]
