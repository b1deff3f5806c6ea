"""Usage per memory region per step, peaks and the budget verdict, on columns.

The planner's passes (`tileplan check` re-derives the same figures with code of its
own): usage by difference arrays over the storage groups' live intervals, peaks and
the steps over budget by numpy reductions over the steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from tileplan.model.timeline import StepTable, Value
from tileplan.model.values import ValueTable

if TYPE_CHECKING:
    from tileplan.planner.exact import ExactAccounting

@dataclass(frozen=True, slots=True)
class GroupColumns:
    """The storage groups as columns, by group id (ascending): whether each is in the
    standard region, its bytes (the largest member's; meaningful where `sized`)."""

    ids: np.ndarray
    standard: np.ndarray
    bytes: np.ndarray
    sized: np.ndarray

    def positions(self, group_ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ids, group_ids)


def group_columns(values: Sequence[Value]) -> GroupColumns:
    """The storage groups of `values` (values sharing a `storage_group`; sized by the
    largest member), as columns. Members must share a region."""
    table = ValueTable.from_values(values)
    sg, std, size = table.storage_group, table.standard(), table.form_column("bytes")
    ids, where = np.unique(sg, return_inverse=True)
    where = where.reshape(-1)
    std_any = np.zeros(len(ids), dtype=bool)
    std_all = np.ones(len(ids), dtype=bool)
    np.logical_or.at(std_any, where, std)
    np.logical_and.at(std_all, where, std)
    assert (std_any == std_all).all(), f"storage group {int(ids[np.argmax(std_any != std_all)])} spans regions"
    biggest = np.zeros(len(ids), dtype=np.int64)
    np.maximum.at(biggest, where, size)
    sized = np.ones(len(ids), dtype=bool)
    np.logical_and.at(sized, where, size >= 0)
    return GroupColumns(ids, std_all, np.where(sized, biggest, 0), sized)


def region_usage(groups: GroupColumns, group_first: np.ndarray, group_last: np.ndarray,
                 group_ids: np.ndarray, steps: int, region: str) -> tuple[np.ndarray, np.ndarray]:
    """(usage, known) of one region in each step from its storage groups' live
    intervals (a difference array): the sum of the live groups' bytes, each once, and
    whether every live group's size is known. Scratch not included."""
    total = np.zeros(steps + 1, dtype=np.int64)
    unknown = np.zeros(steps + 1, dtype=np.int64)
    at = groups.positions(group_ids)
    mine = groups.standard[at] == (region == "standard")
    f, lp = group_first[mine], group_last[mine] + 1
    sizes, unsized = groups.bytes[at][mine], ~groups.sized[at][mine]
    np.add.at(total, f, sizes)
    np.add.at(total, lp, -sizes)
    np.add.at(unknown, f[unsized], 1)
    np.add.at(unknown, lp[unsized], -1)
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


def find_peaks(steps: StepTable, groups: GroupColumns) -> Peaks:
    """Peaks of each region and of their sum, each with the first step reaching it;
    None where some step's usage of it is unknown."""
    def peak(series: np.ndarray, known: np.ndarray) -> tuple[int | None, int | None]:
        if not len(series) or not known.all():
            return None, None
        at = int(np.argmax(series))
        return int(series[at]), at

    std, inter = steps.usage_standard, steps.usage_interleaved
    sk, ik = steps.standard_known, steps.interleaved_known
    std_groups = groups.standard
    max_alloc = None if not groups.sized[std_groups].all() else int(groups.bytes[std_groups].max(initial=0))
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
