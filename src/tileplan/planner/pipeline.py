"""Plans over several IPUs: a pipeline of contiguous layer ranges, for inference and
training alike.

`expand_layers_per_ipu` reads optimum-graphcore's `layers_per_ipu` (-1 wildcards share
the layers the fixed entries leave, the remainder going to the last wildcard IPU, as
optimum-graphcore's `_expand_layers_per_ipu_wildcard` does). A model split over IPUs
is a `Split`: its layers, the plans of the IPUs of a split, and the margin of one IPU
(stage k of n) given its layer count. Inference's (`ProgramSplit`, here) splits one
program's repeat block (`tileplan.model.stages.split_program`); training's
(`tileplan.planner.training.TrainingSplit`) makes each IPU's training program. Every
IPU has its own timeline, peaks, worst tile and verdict.

One search serves both. `fewest_ipus` tries N = 1, 2, ...: for each position among N
the most layers that fit (`most_layers`, by bisection: a stage given one more alike
layer holds every tensor it held and that layer's, so its margin shrinks with its
layers: tests/test_searches.py holds the premise), then, when those cover the model,
the split with the largest smallest margin (`best_split`: a dynamic program over
positions, each within its most; ties: the first found, earlier stages lighter).
`fits_on` answers only whether some split over at most N IPUs fits, which a search
over batches asks for every batch it tries: it checks one split within the most
layers instead of searching them all (the dynamic program only where that split does
not fit), and answers as `fewest_ipus` would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

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


def margin(p: Plan) -> int | None:
    """Bytes left on the worst tile (None when the plan stopped early); negative when over."""
    if p.exact is None or p.scope != "program":
        return None
    return p.machine.budget_bytes - (p.exact.peak("total")[0] + p.exchange_bytes)


class Split(Protocol):
    """A model split over IPUs, as the search sees it."""

    @property
    def layers(self) -> int:
        """The model's layers, which a split shares out."""

    def margin(self, n: int, k: int, count: int) -> int | None:
        """The margin of stage k of n (`margin`) when it runs `count` layers; None when
        it cannot run so (a stage with nothing to run, a plan stopped early)."""

    def plans(self, counts: tuple[int, ...]) -> tuple[Plan, ...]:
        """The plan of each IPU of the split `counts`."""


def pipeline_of(split: Split, counts: tuple[int, ...]) -> Pipeline:
    return Pipeline(counts, split.plans(counts))


def as_asked(split: Split, spec: list[int] | None, ipus: int | None, auto: bool) -> Pipeline | None:
    """The pipeline a request asks for: the split `spec` gives (optimum-graphcore's
    `layers_per_ipu`, -1 wildcards; None: every IPU a wildcard), over `ipus` IPUs when
    given, or (`auto`, no `spec`) the fewest IPUs that fit; None when auto finds none."""
    if auto and spec is None:
        return fewest_ipus(split)
    wanted = spec or [-1]
    return pipeline_of(split, expand_layers_per_ipu(wanted, split.layers, ipus or len(wanted)))


def fewest_ipus(split: Split, max_ipus: int = MAX_IPUS) -> Pipeline | None:
    """The fewest IPUs whose contiguous split fits, with the largest smallest margin
    among those splits; None if no split over up to `max_ipus` IPUs fits."""
    for n in range(1, max_ipus + 1):
        counts = best_split(split, n)
        if counts is not None:
            return pipeline_of(split, counts)
    return None


def fits_on(split: Split, ipus: int) -> bool:
    """Whether some contiguous split over at most `ipus` IPUs fits: exactly when
    `fewest_ipus(split, ipus)` finds one, for less planning (see the module docstring)."""
    return any(_some_split_fits(split, n) for n in range(1, ipus + 1))


def _fits(split: Split, n: int, k: int, count: int) -> bool:
    m = split.margin(n, k, count)
    return m is not None and m >= 0


def _least(n: int) -> tuple[int, ...]:
    """The fewest layers each of n stages runs: a middle stage at least one (the first
    also runs what comes before the layers, the last what comes after them)."""
    return tuple(0 if k in (0, n - 1) else 1 for k in range(n))


def most_layers(split: Split, n: int) -> tuple[int, ...] | None:
    """The most layers each of n stages fits, by bisection (its premise: the module
    docstring); None when a stage does not fit even with its fewest."""
    if n == 1:
        return (split.layers,) if _fits(split, 1, 0, split.layers) else None
    out = []
    for k, least in enumerate(_least(n)):
        lo, hi = least, split.layers
        if not _fits(split, n, k, lo):
            return None
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _fits(split, n, k, mid):
                lo = mid
            else:
                hi = mid - 1
        out.append(lo)
    return tuple(out)


def best_split(split: Split, n: int) -> tuple[int, ...] | None:
    """The counts of n stages, each within its most, maximising the smallest margin
    (ties: the first found, earlier stages lighter); None when none fits."""
    most = most_layers(split, n)
    if most is None or sum(most) < split.layers:
        return None
    if n == 1:
        return most
    least = _least(n)
    best: dict[tuple[int, int], tuple[int, tuple[int, ...]] | None] = {}

    def search(k: int, left: int) -> tuple[int, tuple[int, ...]] | None:
        """Stages k..n-1 with `left` layers: (smallest margin, counts)."""
        if (k, left) in best:
            return best[k, left]
        out: tuple[int, tuple[int, ...]] | None = None
        if k == n - 1:
            m = split.margin(n, k, left) if least[k] <= left <= most[k] else None
            out = None if m is None or m < 0 else (m, (left,))
        else:
            below = sum(most[k + 1:])
            for c in range(max(least[k], left - below), min(most[k], left) + 1):
                m = split.margin(n, k, c)
                if m is None or m < 0:
                    continue
                rest = search(k + 1, left - c)
                if rest is None:
                    continue
                candidate = (min(m, rest[0]), (c, *rest[1]))
                if out is None or candidate[0] > out[0]:
                    out = candidate
        best[k, left] = out
        return out

    found = search(0, split.layers)
    return None if found is None else found[1]


def _some_split_fits(split: Split, n: int) -> bool:
    """Whether `best_split(split, n)` finds a split: the split giving each stage in
    turn its most (leaving the later ones their fewest) fits when the premise holds,
    and then so does the best; only when it does not is the dynamic program run."""
    most = most_layers(split, n)
    least = _least(n)
    if most is None or sum(most) < split.layers or sum(least) > split.layers:
        return False
    counts, left = [], split.layers
    for k in range(n - 1):
        counts.append(min(most[k], left - sum(least[k + 1:])))
        left -= counts[-1]
    counts.append(left)
    if all(_fits(split, n, k, c) for k, c in enumerate(counts)):
        return True
    return best_split(split, n) is not None


@dataclass
class ProgramSplit:
    """Inference: the stages of one program's repeat block (`split_program`), each
    planned by `plan`. A stage's plan depends only on its layer count and whether it is
    the first or the last stage (the layers are alike: a repeat block), so the margins
    are kept by those three, across every N the search tries."""

    program: Program
    plan: Callable[[Program], Plan]
    layers: int = field(init=False)
    _margins: dict[tuple[int, bool, bool], int | None] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.layers = layer_count(self.program)

    def plans(self, counts: tuple[int, ...]) -> tuple[Plan, ...]:
        return tuple(self.plan(p) for p in split_program(self.program, counts))

    def margin(self, n: int, k: int, count: int) -> int | None:
        key = (count, k == 0, k == n - 1)
        if key not in self._margins:
            self._margins[key] = self._stage(*key)
        return self._margins[key]

    def _stage(self, count: int, first: bool, last: bool) -> int | None:
        """The margin of a stage of `count` layers (the first and last stages also run
        what comes before and after the layers)."""
        rest = self.layers - count
        counts = (count,) if first and last else (count, rest) if first else (rest, count) if last else \
            (rest, count, 0)
        try:
            stages = split_program(self.program, counts)
        except ModelError:
            return None
        return margin(self.plan(stages[0 if first else (len(stages) - 1 if last else 1)]))
