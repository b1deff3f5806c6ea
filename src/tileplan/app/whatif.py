"""What-if: the same request re-planned with each knob the user can turn.

Knobs (`variations`): the precision a user tries next (FP32 weights and activations
to F16, F16 weights to FP8 where the machine has it, FP8 to F16, half partials), the
attention products, the available memory proportion (0.2, optimum-graphcore's
default, and 1.0), the output packing; then the largest batch that fits on one IPU
and on two, and for a built-in tower the most encoder layers that fit (up to twice
the planned count). Those searches (`largest_found`) do not assume that memory grows
with the batch or the layers: each such row says how far every value above its
answer was planned ("4 (the largest that fits up to 7)"). Each row is a full plan;
its figures are the exact verdict (worst tile) and its `command` re-derives them.
`with_what_if` attaches the table to a report, for `tileplan plan` and the Python API
alike. A row that cannot be planned (a batch the file fixes, a knob this model does
not have) never fails the plan: it says why in its row (`WhatIfRow.error`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from tileplan.errors import TileplanError
from tileplan.lowering.policy import policy
from tileplan.model.machine import machine
from tileplan.app.request import MAX_LAYERS, PlanRequest
from tileplan.app.sources import max_positions
from tileplan.planner.outcome import Outcome, outcome
from tileplan.planner.plan import Plan, plan_program
from tileplan.report.model import Report
from tileplan.app.build_whatif import WHAT_IF_LIMIT, what_if_section, what_if_skipped


@dataclass(frozen=True, slots=True)
class WhatIfRow:
    """One re-plan: its knob, value and request, and what it came to (`outcome`), or
    why it could not be planned (`error`, one line; `outcome` None)."""

    knob: str
    value: str
    request: PlanRequest
    outcome: Outcome | None
    error: str | None = None


def attempt(knob: str, value: str, request: PlanRequest, run: Callable[[PlanRequest], Plan]) -> WhatIfRow:
    """The row of `request` re-planned, or the row saying why it could not be."""
    try:
        return WhatIfRow(knob, value, request, outcome(run(request)))
    except TileplanError as e:
        return WhatIfRow(knob, value, request, None, one_line(e))


def one_line(e: TileplanError) -> str:
    """An error as a what-if row states it: its message on one line."""
    return " ".join(str(e).split())


def variations(base: PlanRequest) -> list[tuple[str, str, PlanRequest]]:
    """(knob, value, request) for each single change of a knob: the precisions a user
    would try next (an FP32 model `.half()`-ed: F16 weights and activations; F16
    weights in FP8 where the machine has it, FP8 back to F16; half partials), the
    attention products, the memory proportion, the output packing."""
    base = base.resolved()
    out = []
    weights = (base.weights or "").lower()
    fp8 = any(g.multiply == "F8F143" for g in machine(base.machine).amp)
    if weights == "f32":
        out.append(("weights", "f16 (and activations f16: .half())", base.with_(weights="f16", activations="f16")))
    elif weights.startswith("f8"):
        out.append(("weights", "f16", base.with_(weights="f16")))
    elif fp8:
        out.append(("weights", "f8f143:-4", base.with_(weights="f8f143:-4")))
    if base.partials != "f16" and weights == "f16":
        out.append(("partials", "f16", base.with_(partials="f16")))
    for choice in ("materialized", "streamed", "automatic"):
        if choice != base.attention_products:
            out.append(("attention_products", choice, base.with_(attention_products=choice)))
    if "," not in base.available_memory_proportion:
        for value in ("0.2", "1.0"):  # optimum-graphcore's default, and no cap short of the whole tile
            if float(value) != float(base.available_memory_proportion):
                out.append(("available_memory_proportion", value, base.with_(available_memory_proportion=value)))
    packing = "packed" if base.gemm_output_packing == "native" else "native"
    out.append(("gemm_output_packing", packing, base.with_(gemm_output_packing=packing)))
    return out


def most_layers_that_fit(base: PlanRequest, planner: Callable[[PlanRequest], Plan]) -> tuple[Found, Plan]:
    """The most layers in [1, min(2 x planned, MAX_LAYERS)] that fit, as `largest_found`
    searches them, and the plan of that count (of one layer when none fits)."""
    plans: dict[int, Plan] = {}

    def fits(layers: int) -> bool:
        plans[layers] = planner(base.with_(layers=layers))
        return plans[layers].verdict.fits

    found = largest_found(fits, 1, min(2 * base.config.layers, MAX_LAYERS))
    return found, plans[found.best or 1]


def layers_text(found: Found, planned: int) -> str:
    """The layers row's value: the cap of the search is twice the planned count (or
    `MAX_LAYERS`), which says nothing of more layers."""
    if found.best == found.cap:
        end = f"{MAX_LAYERS}, the most a plan takes" if found.cap == MAX_LAYERS else f"twice the planned {planned}"
        return f"{found.best} (all fit up to the search's end: {end})"
    return f"{found.best} (the most that fit up to {found.upto})" if found.best else f"1 (none fit up to {found.upto})"


#: the largest batch the search tries
MAX_BATCH = 4096
#: how many values past the largest fit a search plans, each (`largest_found`)
SCAN = 3


@dataclass(frozen=True, slots=True)
class Found:
    """What `largest_found` found: `best`, the largest value planned that fits (0: none
    did), and `upto`: every value in (best, upto] was planned and does not fit, so
    `best` is the largest that fits up to `upto`. `best == upto == cap` when the cap
    fits (the search's end, not the model's)."""

    best: int
    upto: int
    cap: int

    def __post_init__(self) -> None:
        assert 0 <= self.best <= self.upto <= self.cap, self
        assert self.best < self.upto or self.best == self.cap, self

    def text(self, what: str) -> str:
        """The row's value: `4 (the largest that fits up to 8)`, `8 (fits: the
        search's cap)` or `1 (none fit up to 4)`, with `what` naming the thing."""
        if self.best == self.cap:
            return f"{self.best} (fits: the search's cap)"
        if self.best:
            return f"{self.best} (the {what} that fits up to {self.upto})"
        return f"1 (none fit up to {self.upto})"


def largest_found(fits: Callable[[int], bool], start: int, cap: int = MAX_BATCH, scan: int = SCAN) -> Found:
    """The largest n in [1, cap] with fits(n) found, without assuming fitting is
    monotone: memory does not always grow with the batch (SigLIP so400m on IPU21 peaks
    at 651,328 B at batch 6 and 621,353 B at batch 7, whose tiling divides better).
    Doubling from `start` while it fits, bisection between the last fit and the first
    failure, then each of the `scan` values above the largest fit is planned: a fit
    among them starts the search again from it. The result says how far every value
    above its best was planned (`Found.upto`); each n is planned once. Cost: the
    doubling and bisection's 2 log2(best) plans, and `scan` - 1 more at most per
    restart (usually one or two: the bisection planned best + 1 and often best + 2)."""
    seen: dict[int, bool] = {}

    def test(n: int) -> bool:
        if n not in seen:
            seen[n] = fits(n)
        return seen[n]

    lo, n = 0, max(1, min(start, cap))
    while True:
        while test(n):  # doubling while it fits
            lo = n
            if n >= cap:
                return Found(cap, cap, cap)
            n = min(2 * n, cap)
        hi = n
        while hi - lo > 1:  # lo fits (or is 0), hi does not
            mid = (lo + hi) // 2
            if test(mid):
                lo = mid
            else:
                hi = mid
        upto = min(cap, lo + scan)
        above = next((m for m in range(lo + 2, upto + 1) if test(m)), None)
        if above is None:
            return Found(lo, max(upto, lo + 1), cap)
        n = above  # memory fell again past a failure: search on from there


def largest_batch_rows(base: PlanRequest, run: Callable[[PlanRequest], Plan]) -> list[WhatIfRow]:
    """The largest batch that fits on one IPU, and on two (the best split of the layers
    over two IPUs, `--ipus 2 --layers-per-ipu` as `fewest_ipus` chooses it). A batch
    that cannot be planned (an input whose batch the file fixes) ends the search: the
    row says why."""
    from tileplan.planner.pipeline import ProgramSplit, fewest_ipus, fits_on
    plans: dict[int, Plan] = {}
    errors: dict[int, str] = {}

    def one(batch: int) -> bool:
        if errors:  # a batch that cannot be planned: the batch is no knob here, plan no more
            return False
        try:
            plans[batch] = run(base.with_(batch=batch))
        except TileplanError as e:
            errors[batch] = one_line(e)
            return False
        return plans[batch].verdict.fits

    rows = []
    found = largest_found(one, base.batch or 1)
    best = found.best
    failed = min((b for b in errors if b > best), default=None)
    if failed is not None and (best or failed == 1):
        rows.append(WhatIfRow("batch", str(failed), base.with_(batch=failed), None, errors[failed]))
        return rows  # the batch is not a knob of this model: no search over two IPUs either
    shown = best or 1
    rows.append(WhatIfRow("batch", found.text("largest"), base.with_(batch=shown), outcome(plans[shown]))
                if shown in plans else attempt("batch", found.text("largest"), base.with_(batch=shown), run))
    try:
        from tileplan.model.stages import layer_count
        layer_count(base.program())
    except TileplanError:
        return rows  # no layers to split over two IPUs
    splits: dict[int, ProgramSplit] = {}

    def split(batch: int) -> ProgramSplit:
        if batch not in splits:
            request = base.with_(batch=batch)
            target, layout, options = machine(request.machine), policy(request.policy), request.options
            splits[batch] = ProgramSplit(request.program(), lambda p: plan_program(p, target, layout, options))
        return splits[batch]

    def two(batch: int) -> bool:
        """Whether some split over at most two IPUs fits (not which is best: asked once,
        of the largest batch found)."""
        try:
            return fits_on(split(batch), 2)
        except TileplanError:
            return False
    found2 = largest_found(two, max(best, 1))
    try:
        pipe = fewest_ipus(split(found2.best), max_ipus=2) if found2.best else None
    except TileplanError:
        pipe = None
    if pipe is not None:
        counts = ",".join(map(str, pipe.layers_per_ipu))
        request = base.with_(batch=found2.best, ipus=str(len(pipe.layers_per_ipu)), layers_per_ipu=counts)
        tight = min(pipe.plans, key=lambda p: outcome(p).margin or 0)
        value = f"{found2.text('largest')[:-1]}; layers per IPU {counts})"
        rows.append(WhatIfRow("batch on 2 IPUs", value, request, outcome(tight)))
    return rows


def longest_cache_row(base: PlanRequest, run: Callable[[PlanRequest], Plan]) -> WhatIfRow:
    """The longest key/value cache (positions per layer) that fits, up to the most
    positions the model takes (or `MAX_CACHE`), as `largest_found` searches from the
    planned length."""
    assert base.kv_cache is not None
    plans: dict[int, Plan] = {}
    errors: dict[int, str] = {}

    def fits(length: int) -> bool:
        if errors:  # a length that cannot be planned: plan no more
            return False
        try:
            plans[length] = run(base.with_(kv_cache=length))
        except TileplanError as e:
            errors[length] = one_line(e)
            return False
        return plans[length].verdict.fits

    cap = max_positions(base.model) or MAX_CACHE
    found = largest_found(fits, min(base.kv_cache, cap), cap)
    best = found.best
    failed = min((n for n in errors if n > best), default=None)
    if failed is not None:
        return WhatIfRow("kv_cache", str(failed), base.with_(kv_cache=failed), None, errors[failed])
    if best == cap and cap != MAX_CACHE:
        value = f"{best} (the longest cache that fits: the model's most positions)"
    else:
        value = found.text("longest cache")
    if best:
        return WhatIfRow("kv_cache", value, base.with_(kv_cache=best), outcome(plans[best]))
    return attempt("kv_cache", value, base.with_(kv_cache=1), run)


#: the longest cache the search tries when the model does not say its most positions
MAX_CACHE = 1 << 20
def training_variations(base: PlanRequest) -> list[tuple[str, str, PlanRequest]]:
    """(knob, value, request) for each change a training configuration would try next:
    the optimizer state off chip, recomputation of every layer, optimum-graphcore's
    half-precision optimizer state, half partials, the memory proportion."""
    base = base.resolved()
    options = base.training
    assert options is not None
    out = []
    if not options.optimizer_state_offchip:
        out.append(("optimizer_state_offchip", "true", base.with_(training=replace(options,
                                                                                   optimizer_state_offchip=True))))
    if options.recompute != "every-layer":
        out.append(("recompute", "every-layer", base.with_(training=replace(options, recompute="every-layer"))))
    if options.optimizer_preset != "optimum":
        out.append(("optimizer_preset", "optimum", base.with_(training=replace(options, optimizer_preset="optimum"))))
    if base.partials != "f16":
        out.append(("partials", "f16", base.with_(partials="f16")))
    if "," not in base.available_memory_proportion:
        for value in ("0.2", "1.0"):
            if float(value) != float(base.available_memory_proportion):
                out.append(("available_memory_proportion", value, base.with_(available_memory_proportion=value)))
    return out


def training_what_if(base: PlanRequest, run: Callable[[PlanRequest], Plan],
                     progress: Callable[[str], None] | None = None) -> list[WhatIfRow]:
    """A training plan's what-if: each change of `training_variations`, the largest
    micro-batch that fits on one IPU, and the fewest IPUs this configuration fits on
    (`--ipus auto`, the tightest IPU's outcome)."""
    rows = []
    for knob, value, request in training_variations(base):
        if progress:
            progress(f"what-if {knob} = {value}")
        rows.append(WhatIfRow(knob, value, request, outcome(run(request))))
    if base.batch_varies:
        if progress:
            progress("what-if batch")
        plans: dict[int, Plan] = {}

        def one(batch: int) -> bool:
            plans[batch] = run(base.with_(batch=batch))
            return plans[batch].verdict.fits

        found = largest_found(one, base.batch or 1)
        shown = found.best or 1
        rows.append(WhatIfRow("batch", found.text("largest micro-batch"), base.with_(batch=shown),
                              outcome(plans[shown])))
    if progress:
        progress("what-if ipus")
    auto = base.with_(ipus="auto", layers_per_ipu=None)
    try:
        pipe = auto.pipeline()
    except TileplanError:
        pipe = None
    if pipe is not None:
        split = ",".join(map(str, pipe.layers_per_ipu))
        tight = min(pipe.plans, key=lambda p: outcome(p).margin or 0)
        rows.append(WhatIfRow("ipus", f"{len(pipe.layers_per_ipu)} (the fewest that fit; layers per IPU {split})",
                              base.with_(ipus=str(len(pipe.layers_per_ipu)), layers_per_ipu=split), outcome(tight)))
    return rows


def what_if(base: PlanRequest, planner: Callable[[PlanRequest], Plan] | None = None,
            progress: Callable[[str], None] | None = None) -> list[WhatIfRow]:
    """Each knob re-planned (see the module docstring); rows that cannot be planned say
    why, and never stop the others."""
    base = base.resolved()  # the precisions decided once: each row's command states them
    run = planner or (lambda r: r.plan())
    if base.training is not None:
        return training_what_if(base, run, progress)
    rows = []
    for knob, value, request in variations(base):
        if progress:
            progress(f"what-if {knob} = {value}")
        rows.append(attempt(knob, value, request, run))
    if not base.pipelined and base.batch_varies:
        if progress:
            progress("what-if batch")
        rows.extend(largest_batch_rows(base, run))
    if base.kv_cache is not None:
        if progress:
            progress("what-if kv_cache")
        rows.append(longest_cache_row(base, run))
    if base.imported:  # an imported model's layers are its own: no layer count to vary
        return rows
    if progress:
        progress("what-if layers")
    found, p = most_layers_that_fit(base, run)
    rows.append(WhatIfRow("layers", layers_text(found, base.config.layers), base.with_(layers=found.best or 1),
                          outcome(p)))
    return rows


def with_what_if(report: Report, request: PlanRequest, plan: Plan, *, limit: int = WHAT_IF_LIMIT,
                 force: bool = False, progress: Callable[[str], None] | None = None) -> Report:
    """`report` (the plan of `request`) with its what-if table (each knob re-planned),
    or, for a program of more than `limit` values unless `force`, with
    `what_if_skipped` saying why it was not run."""
    if len(report.values) > limit and not force:
        return report.with_sections(what_if_skipped(len(report.values), limit))
    rows = what_if(request, progress=progress)
    return report.with_sections(what_if_section(outcome(plan), request.command(),
                                                [(r.knob, r.value, r.outcome, r.request.command(), r.error)
                                                 for r in rows]))
