"""Usage per memory region per step, peaks and the budget verdict, on columns.

The planner's passes (`tileplan check` re-derives the same figures with code of its
own): usage by difference arrays over the storage groups' live intervals, peaks and
the steps over budget by numpy reductions over the steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping

import numpy as np

from tileplan.model.timeline import StepTable, Value

if TYPE_CHECKING:
    from tileplan.planner.exact import ExactAccounting

@dataclass(frozen=True, slots=True)
class StorageGroup:
    """One allocation: its region and size (the largest member's `bytes`; None if a
    member's size is unknown)."""

    id: int
    region: str
    bytes: int | None
    members: tuple[int, ...]


def storage_groups(values: Iterable[Value]) -> dict[int, StorageGroup]:
    """Group values by `storage_group`. Members must share a region."""
    members: dict[int, list[Value]] = {}
    for v in values:
        m = members.get(v.storage_group)
        if m is None:
            members[v.storage_group] = [v]
        else:
            m.append(v)
    groups = {}
    for gid in sorted(members):
        vs = members[gid]
        if len(vs) == 1:
            v = vs[0]
            groups[gid] = StorageGroup(gid, v.region, v.bytes, (v.id,))
            continue
        regions = {v.region for v in vs}
        assert len(regions) == 1, f"storage group {gid} spans regions {sorted(regions)}"
        sizes = [v.bytes for v in vs if v.bytes is not None]
        size = max(sizes) if len(sizes) == len(vs) else None
        groups[gid] = StorageGroup(gid, regions.pop(), size, tuple(v.id for v in vs))
    return groups


def region_usage(groups: Mapping[int, StorageGroup], group_first: np.ndarray, group_last: np.ndarray,
                 group_ids: np.ndarray, steps: int, region: str) -> tuple[np.ndarray, np.ndarray]:
    """(usage, known) of one region in each step from its storage groups' live
    intervals (a difference array): the sum of the live groups' bytes, each once, and
    whether every live group's size is known. Scratch not included."""
    total = np.zeros(steps + 1, dtype=np.int64)
    unknown = np.zeros(steps + 1, dtype=np.int64)
    mine = np.fromiter((groups[int(g)].region == region for g in group_ids), dtype=bool, count=len(group_ids))
    sizes = np.fromiter((groups[int(g)].bytes or 0 for g in group_ids), dtype=np.int64, count=len(group_ids))
    unsized = np.fromiter((groups[int(g)].bytes is None for g in group_ids), dtype=bool, count=len(group_ids))
    f, lp = group_first[mine], group_last[mine] + 1
    np.add.at(total, f, sizes[mine])
    np.add.at(total, lp, -sizes[mine])
    np.add.at(unknown, f[unsized[mine]], 1)
    np.add.at(unknown, lp[unsized[mine]], -1)
    return np.cumsum(total)[:steps], np.cumsum(unknown)[:steps] == 0


@dataclass(frozen=True, slots=True)
class Peaks:
    """Peak usage per region and in total, with the first step that reaches each.
    None where some step's usage is unknown."""

    standard: int | None
    interleaved: int | None
    total: int | None
    standard_step: int | None
    interleaved_step: int | None
    total_step: int | None
    maximum_standard_allocation: int | None


def find_peaks(steps: StepTable, groups: Mapping[int, StorageGroup]) -> Peaks:
    """Peaks of each region and of their sum, each with the first step reaching it;
    None where some step's usage of it is unknown."""
    def peak(series: np.ndarray, known: np.ndarray) -> tuple[int | None, int | None]:
        if not len(series) or not known.all():
            return None, None
        at = int(np.argmax(series))
        return int(series[at]), at

    std, inter = steps.usage_standard, steps.usage_interleaved
    sk, ik = steps.standard_known, steps.interleaved_known
    std_sizes = [g.bytes for g in groups.values() if g.region == "standard"]
    known = [b for b in std_sizes if b is not None]
    max_alloc = None if len(known) != len(std_sizes) else max(known, default=0)
    (ps, ss), (pi, si), (pt, st) = peak(std, sk), peak(inter, ik), peak(std + inter, sk & ik)
    return Peaks(ps, pi, pt, ss, si, st, max_alloc)


@dataclass(frozen=True, slots=True)
class BudgetVerdict:
    """The budget check.

    Standard data fills the non-interleaved region first (`standard_budget` =
    budget - interleaved_budget) and overflows into the interleaved region;
    interleaved data never spills the other way. So a step fits when its interleaved
    usage <= interleaved_budget and standard + interleaved + exchange <= budget.
    """

    standard_budget: int
    standard_contiguous_overflow_bytes: int | None
    effective_peak_bytes: int | None
    fits: bool


def judge_budget(steps: StepTable, peaks: Peaks, budget_bytes: int, interleaved_budget_bytes: int,
                 exchange_bytes: int, complete: bool, exact: "ExactAccounting | None" = None) -> BudgetVerdict:
    """The verdict; with exact per-tile accounting it judges the real worst tiles,
    otherwise the estimate."""
    standard_budget = budget_bytes - interleaved_budget_bytes
    overflow = int(np.maximum(steps.usage_standard - standard_budget, 0).max(initial=0)) \
        if steps.standard_known.all() else None
    effective = None if peaks.total is None else peaks.total + exchange_bytes
    known = exact is not None or (effective is not None and peaks.interleaved is not None)
    fits = (complete and known
            and not over_budget(steps, budget_bytes, interleaved_budget_bytes, exchange_bytes, exact).count)
    return BudgetVerdict(standard_budget, overflow, effective, fits)


@dataclass(frozen=True, slots=True)
class OverBudget:
    """One step over a budget: which region ("interleaved" or "total"), the tile
    (None when judged on the estimate), its usage there, the budget."""

    step: int
    region: str
    tile: int | None
    usage: int
    budget: int

    @property
    def bytes_over(self) -> int:
        return self.usage - self.budget


@dataclass(frozen=True, slots=True)
class OverBudgetSteps:
    """The steps over a budget: how many, the first and the worst (most bytes over,
    the first such step; interleaved before total within a step)."""

    count: int
    first: OverBudget | None
    worst: OverBudget | None


def over_budget(steps: StepTable, budget_bytes: int, interleaved_budget_bytes: int, exchange_bytes: int,
                exact: "ExactAccounting | None" = None) -> OverBudgetSteps:
    """The (step, region) pairs over their budget: interleaved usage over the
    interleaved budget, or standard + interleaved + exchange over the whole budget
    (standard data may overflow into the interleaved region, so it has no budget of
    its own). With exact accounting, on each step's worst tile; on the estimate,
    steps of unknown usage are skipped."""
    n = len(steps)
    inter_tile: np.ndarray | None
    tile: np.ndarray | None
    if exact is not None:
        inter, inter_tile = exact.step_max_interleaved, exact.step_max_interleaved_tile
        total, tile = exact.step_total, exact.step_tile
        judged = np.ones(n, dtype=bool)
    else:
        inter, total = steps.usage_interleaved, steps.usage_standard + steps.usage_interleaved
        inter_tile = tile = None
        judged = steps.standard_known & steps.interleaved_known
    inter_over = judged & (inter > interleaved_budget_bytes)
    total_over = judged & (total + exchange_bytes > budget_bytes)
    any_over = inter_over | total_over
    count = int(any_over.sum())
    if not count:
        return OverBudgetSteps(0, None, None)

    def entry(i: int, region: str) -> OverBudget:
        if region == "interleaved":
            return OverBudget(i, region, None if inter_tile is None else int(inter_tile[i]), int(inter[i]),
                              interleaved_budget_bytes)
        return OverBudget(i, region, None if tile is None else int(tile[i]), int(total[i]) + exchange_bytes,
                          budget_bytes)

    first_step = int(np.argmax(any_over))
    first = entry(first_step, "interleaved" if inter_over[first_step] else "total")
    inter_by = np.where(inter_over, inter - interleaved_budget_bytes, -1)
    total_by = np.where(total_over, total + exchange_bytes - budget_bytes, -1)
    best_i, best_t = int(np.argmax(inter_by)), int(np.argmax(total_by))
    candidates = [(int(inter_by[best_i]), -best_i, 1, best_i, "interleaved"),
                  (int(total_by[best_t]), -best_t, 0, best_t, "total")]
    _, _, _, step, region = max(c for c in candidates if c[0] >= 0)
    return OverBudgetSteps(count, first, entry(step, region))


def verdict_json(steps: StepTable, peaks: Peaks, verdict: BudgetVerdict, budget_bytes: int,
                 interleaved_budget_bytes: int, exchange_bytes: int, exact: "ExactAccounting | None" = None) -> dict:
    """The report's `verdict`: per region the peak (exact when known, on its worst
    tile), step, budget, margin and the estimate; when over budget, the first and the
    worst step (most bytes over) with region, tile and bytes."""
    regions = []
    estimates = {"standard": (peaks.standard, peaks.standard_step),
                 "interleaved": (peaks.interleaved, peaks.interleaved_step),
                 "total": (verdict.effective_peak_bytes, peaks.total_step)}
    budgets = {"standard": verdict.standard_budget, "interleaved": interleaved_budget_bytes, "total": budget_bytes}
    for region in ("standard", "interleaved", "total"):
        estimate, estimate_step = estimates[region]
        if estimate is None:
            continue
        tile: int | None
        step: int | None
        if exact is not None:
            peak, tile, step = exact.peak(region)
            if region == "total":
                peak += exchange_bytes
        else:
            peak, tile, step = estimate, None, estimate_step
        entry = {"region": region, "peak": peak, "tile": tile, "step": step, "budget": budgets[region],
                 "margin": budgets[region] - peak, "estimate": estimate}
        if region == "total":
            entry["exchange_bytes"] = exchange_bytes
        regions.append(entry)
    over = over_budget(steps, budget_bytes, interleaved_budget_bytes, exchange_bytes, exact)
    out: dict = {"fits": verdict.fits, "judged_on": "exact" if exact is not None else "estimate",
                 "regions": regions, "over_budget": None}
    if over.first is not None and over.worst is not None:
        first, worst = over.first, over.worst
        as_json = lambda o: {"step": o.step, "region": o.region, "tile": o.tile, "usage": o.usage,  # noqa: E731
                             "budget": o.budget, "bytes_over": o.bytes_over}
        out["over_budget"] = {"steps": over.count, "first": as_json(first), "worst": as_json(worst)}
        if worst.tile is not None:
            out["out_of_memory"] = (f"Out of memory on tile {worst.tile} at step {worst.step}: {worst.usage} bytes "
                                    f"used, budget {worst.budget}")
    return out
