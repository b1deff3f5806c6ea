"""`tileplan check` on the judgement: the exact per-tile accounting (`tileplan.check.exact`),
the steps over budget, the `verdict` (with `over_budget`, `out_of_memory` and
`peak_tile`) and the plan's own outcome a `what_if` baseline states; each re-derived
as the typed section (`tileplan.report.sections`) and compared with the report's JSON
field by field (docs/report-format.md, `exact`, `verdict`, `what_if`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tileplan.model.info import Mode
from tileplan.model.timeline import REGIONS, Step, Value
from tileplan.check.band import CheckedBand
from tileplan.check.exact import TileAccount, TileBytes, ValueKinds, account_tiles, exact_section
from tileplan.check.exact import peak_tile_section
from tileplan.check.result import CheckResult, Peaks, compare_json, is_int, section_of, show
from tileplan.check.timeline import (
    INT64_MAX, Groups, LiveRuns, StepColumns, Usage, ValueColumns, reference_policy,
)
from tileplan.report.model import Report
from tileplan.report.sections import Baseline, Exact, OverBudget, OverBudgetStep, PeakTile, RegionFigure, Verdict

#: per-tile sums stay below this, so the exact accounting's int64 never wraps
INT64_SAFE = 2**62


def check_exact(report: Report, result: CheckResult, kinds: ValueKinds, g: Groups, vc: ValueColumns, runs: LiveRuns,
                cols: StepColumns, group_bytes: Sequence[int | None],
                peaks: Peaks) -> tuple[TileAccount | None, TileBytes | None]:
    """Re-derive `exact` when the report gives it; the accounting, or None when it
    cannot be derived (a finding says why)."""
    if -1 in kinds.of_value or not cols.n:
        result.add("disagree", "exact", "given, but exact accounting needs steps and every value representable")
        return None, None
    scratch = cols.scratch["standard"] + cols.scratch["interleaved"]
    bound = sum(b or 0 for b in group_bytes) + int(max(scratch.tolist()))
    if bound >= INT64_SAFE:
        result.add("defect", "exact", f"not re-derived: the storage groups and scratch add up to {bound} bytes per "
                                      "tile, beyond 2^62")
        return None, None
    tiles = TileBytes(report.values, kinds, report.tile_count)
    members: list[list[int]] = [[] for _ in g.ids]
    for p, k in enumerate(g.of_value.tolist()):
        members[k].append(p)
    # always live (docs/report-format.md): the parameters with the default policy, every
    # declared tensor with the reference policy, which frees them after their last use
    resident = np.zeros(len(g.ids), dtype=bool)
    resident[g.of_value[vc.resident if reference_policy(report) else vc.parameter]] = True
    account = account_tiles(tiles, members, g.region, resident, (g.pos, g.first, g.last),
                            {r: cols.scratch[r].astype(np.int64) for r in REGIONS}, cols.n)
    if account is None:
        result.add("defect", "exact", f"not re-derived: {len(kinds.kinds)} distinct value vectors over "
                                      f"{report.tile_count} tiles are beyond check's memory bound")
        return None, None
    stated = section_of(report, Exact, result)
    model = stated.model if stated is not None and stated.model is not None else "(the accounting model, in words)"
    derived = exact_section(account, peaks.total, model).to_json()
    reported = report.sections.written(Exact)
    if isinstance(reported, dict) and "steps" in reported:
        rows = derived.pop("steps")
        compare_rows(result, "exact.steps", stated.steps if stated is not None and stated.steps is not None
                     else reported["steps"], rows)
        reported = {k: v for k, v in reported.items() if k != "steps"}
    compare_json(result, "exact", reported, derived)
    return account, tiles


def compare_rows(result: CheckResult, place: str, reported: object, derived: np.ndarray) -> None:
    """Compare rows of integers (a list of lists, or an array as read) with the
    derived array; name the first cell that differs."""
    arr: np.ndarray | None = None
    if isinstance(reported, np.ndarray):
        arr = reported
    elif isinstance(reported, list) and all(isinstance(r, list) and len(r) == derived.shape[1] and
                                            all(is_int(c) and 0 <= c <= INT64_MAX for c in r) for r in reported):
        arr = np.array(reported, dtype=np.int64).reshape(len(reported), derived.shape[1])
    if arr is None or arr.shape != derived.shape:
        compare_json(result, place, reported if arr is None else arr.tolist(), derived.tolist())
        return
    diff = np.flatnonzero((arr != derived).any(axis=1))
    if diff.size:
        i = int(diff[0])
        j = int(np.flatnonzero(arr[i] != derived[i])[0])
        result.add("disagree", f"{place}[{i}][{j}]", f"reports {show(int(arr[i, j]))}; re-derived "
                                                     f"{show(int(derived[i, j]))}")


@dataclass(frozen=True, slots=True)
class OverStep:
    """One step over a budget: region "interleaved" or "total", the tile (None on the
    estimate), its usage there (with exchange for "total") and the budget."""

    step: int
    region: Literal["interleaved", "total"]
    tile: int | None
    usage: int
    budget: int

    def section(self) -> OverBudgetStep:
        return OverBudgetStep(step=self.step, region=self.region, tile=self.tile, usage=self.usage,
                              budget=self.budget, bytes_over=self.usage - self.budget)


@dataclass(frozen=True, slots=True)
class OverSteps:
    """The steps over budget: how many, the first (in step order, interleaved before
    total on one step) and the worst (the most bytes over, the first such on ties)."""

    count: int
    first: OverStep | None
    worst: OverStep | None


def over_budget(report: Report, u: Usage, account: TileAccount | None, exchange: int) -> OverSteps:
    """Every (step, region) over budget: the interleaved usage over
    `interleaved_budget_bytes`, or standard + interleaved + exchange over
    `budget_bytes`; on each step's worst tiles with `exact`, else on the estimate
    (steps of unknown usage skipped)."""
    n = len(u.standard)
    inter_tile: np.ndarray | None
    tile: np.ndarray | None
    if account is not None:
        inter, inter_tile, total, tile = (account.max_interleaved, account.max_interleaved_tile, account.total,
                                          account.tile)
        known = np.ones(n, dtype=bool)
    else:
        known = u.standard_known & u.interleaved_known
        inter, total = u.interleaved, u.standard + u.interleaved
        inter_tile = tile = None
    over_inter = known & (inter > report.interleaved_budget_bytes)
    over_total = known & (total + exchange > report.budget_bytes)
    steps = np.flatnonzero(over_inter | over_total)
    if not steps.size:
        return OverSteps(0, None, None)

    def entry(i: int, region: Literal["interleaved", "total"]) -> OverStep:
        figures, tiles, budget = ((inter, inter_tile, report.interleaved_budget_bytes) if region == "interleaved"
                                  else (total, tile, report.budget_bytes))
        extra = exchange if region == "total" else 0
        return OverStep(i, region, None if tiles is None else int(tiles[i]), int(figures[i]) + extra, budget)

    first_step = int(steps[0])
    first = entry(first_step, "interleaved" if over_inter[first_step] else "total")
    worst = first
    regions: tuple[tuple[Literal["interleaved", "total"], np.ndarray, np.ndarray, int, int], ...] = (
        ("interleaved", over_inter, inter, report.interleaved_budget_bytes, 0),
        ("total", over_total, total, report.budget_bytes, exchange))
    for region, mask, figures, budget, extra in regions:
        idx = np.flatnonzero(mask)
        if not idx.size:
            continue
        over = figures[idx] + extra - budget
        k = int(idx[int(np.argmax(over))])
        candidate = entry(k, region)
        best = worst.usage - worst.budget
        mine = candidate.usage - candidate.budget
        # the most bytes over; on ties the first in step order, interleaved before total
        if mine > best or (mine == best and (k, region != "interleaved") < (worst.step, worst.region != "interleaved")):
            worst = candidate
    return OverSteps(int(steps.size), first, worst)


def verdict_section(report: Report, peaks: Peaks, effective: int | None, exchange: int,
                    account: TileAccount | None, over: OverSteps, fits: bool,
                    band: CheckedBand | None = None) -> Verdict:
    """`verdict` as docs/report-format.md defines it (without `peak_tile`), with the
    error band `band` (as `tileplan.check.band` re-derives it) where the total margin
    is known."""
    estimates = {"standard": (peaks.standard, peaks.standard_step),
                 "interleaved": (peaks.interleaved, peaks.interleaved_step),
                 "total": (effective, peaks.total_step)}
    budgets = {"standard": report.budget_bytes - report.interleaved_budget_bytes,
               "interleaved": report.interleaved_budget_bytes, "total": report.budget_bytes}
    regions = []
    tile: int | None
    step: int | None
    for region in ("standard", "interleaved", "total"):
        estimate, estimate_step = estimates[region]
        if estimate is None:
            continue
        if account is not None:
            peak, tile, step = account.peak(region)
            peak += exchange if region == "total" else 0
        else:
            peak, tile, step = estimate, None, estimate_step
        regions.append(RegionFigure(region=region, peak=peak, tile=tile, step=step, budget=budgets[region],
                                    margin=budgets[region] - peak, estimate=estimate,
                                    exchange_bytes=exchange if region == "total" else None))
    over_budget_section = out_of_memory = None
    if over.first is not None and over.worst is not None:
        worst = over.worst
        over_budget_section = OverBudget(steps=over.count, first=over.first.section(), worst=worst.section())
        if worst.tile is not None:
            stated = report.sections.non_tensor
            tile_bytes = band.tile_bytes if band is not None else None
            # where the report has no non_tensor section to say so (one cut down, or
            # read field by field), the words it chose say whether it counted all memory;
            # their numbers are re-derived either way
            written = report.sections.written(Verdict)
            words = written.get("out_of_memory") if isinstance(written, dict) else None
            poplar = isinstance(words, str) and words.startswith(f"Out of memory on tile {worst.tile}: ")
            counted = stated.in_verdict if stated is not None else poplar
            if worst.region == "total" and counted and tile_bytes is not None:
                # all memory counted: Poplar's words, the tensors with the memory that is not
                # tensors (the support reserve, held to non_tensor by tileplan.check.nontensor)
                out_of_memory = (f"Out of memory on tile {worst.tile}: "
                                 f"{worst.usage + report.support_reserve_bytes} bytes used but tiles only have "
                                 f"{tile_bytes} bytes of memory (at step {worst.step})")
            else:
                out_of_memory = (f"Out of memory on tile {worst.tile} at step {worst.step}: {worst.usage} bytes "
                                 f"used, budget {worst.budget}")
    total = next((r for r in regions if r.region == "total"), None)
    error_band = band.section(total.margin) if band is not None and total is not None \
        and total.margin is not None else None
    return Verdict(fits=fits, judged_on="exact" if account is not None else "estimate", regions=tuple(regions),
                   over_budget=over_budget_section, out_of_memory=out_of_memory, error_band=error_band)


def peak_tile(report: Report, result: CheckResult, account: TileAccount, tiles: TileBytes, runs: LiveRuns,
              cols: StepColumns) -> PeakTile:
    """`verdict.peak_tile`, each value's `class` from its layout; its `precision` is
    display text (its form is the views' business): any non-empty string passes."""
    _, _, step = account.peak("total")
    cover = (runs.first <= step) & (runs.last >= step)
    at = Step(step, int(cols.source[step]), cols.texts[int(cols.operation[step])], int(cols.execution_count[step]),
              (), {r: int(cols.scratch[r][step]) for r in REGIONS}, {})  # its live set is `cover`
    verdict = section_of(report, Verdict, result)
    stated = verdict.peak_tile.values if verdict is not None and verdict.peak_tile is not None else ()

    def precision(i: int, v: Value) -> str:
        reported = stated[i].precision if i < len(stated) else ""
        return reported or v.precision.to_text()

    program = report.sections.program
    training = program is not None and program.mode is Mode.TRAINING
    return peak_tile_section(at, runs.pos[cover].tolist(), account, tiles, precision, training)


def baseline(report: Report, fits: bool, peaks: Peaks, effective: int | None, exchange: int,
             account: TileAccount | None) -> Baseline:
    """`what_if.baseline` but its command and its place in the error band (which
    `tileplan.check.band` re-derives from its margin): this plan's own outcome (exact
    when known)."""
    peak: int | None
    tile: int | None
    step: int | None
    inter: int | None
    if account is not None:
        total, tile, step = account.peak("total")
        peak, inter = total + exchange, account.peak("interleaved")[0]
    else:
        peak, tile, step, inter = effective, None, peaks.total_step, peaks.interleaved
    return Baseline(fits=fits, scope=report.scope, peak=peak, budget=report.budget_bytes,
                    margin=None if peak is None else report.budget_bytes - peak, tile=tile, step=step,
                    interleaved_peak=inter)
