"""Usage per memory region per step, peaks and the budget verdict.

These passes are shared by the planner (which computes the figures) and by
`tileplan check` (which re-derives them from a report): one definition of each rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from tileplan.model.timeline import REGIONS, Step, Value

SENTINEL = 2**64 - 1


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
        members.setdefault(v.storage_group, []).append(v)
    groups = {}
    for gid, vs in sorted(members.items()):
        regions = {v.region for v in vs}
        assert len(regions) == 1, f"storage group {gid} spans regions {sorted(regions)}"
        sizes = [v.bytes for v in vs]
        size = None if any(s is None for s in sizes) else max(sizes)  # type: ignore[type-var]
        groups[gid] = StorageGroup(gid, regions.pop(), size, tuple(v.id for v in vs))
    return groups


def step_usage(live: Sequence[int], scratch: Mapping[str, int], value_group: Mapping[int, int],
               groups: Mapping[int, StorageGroup]) -> dict[str, int | None]:
    """Usage of each region in one step: its live storage groups, each once, + scratch."""
    usage: dict[str, int | None] = {r: scratch.get(r, 0) for r in REGIONS}
    for gid in sorted({value_group[v] for v in live}):
        g = groups[gid]
        current = usage[g.region]
        usage[g.region] = None if current is None or g.bytes is None else current + g.bytes
    return usage


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


def find_peaks(steps: Sequence[Step], groups: Mapping[int, StorageGroup],
               value_group: Mapping[int, int]) -> Peaks:
    def peak(series: list[int | None]) -> tuple[int | None, int | None]:
        if not series or any(x is None for x in series):
            return None, None
        best = max(series)  # type: ignore[type-var]
        return best, series.index(best)

    std = [s.usage["standard"] for s in steps]
    inter = [s.usage["interleaved"] for s in steps]
    total = [None if a is None or b is None else a + b for a, b in zip(std, inter)]
    live_groups = {value_group[v] for s in steps for v in s.live}
    std_sizes = [groups[g].bytes for g in live_groups if groups[g].region == "standard"]
    max_alloc = None if any(b is None for b in std_sizes) else max(std_sizes, default=0)
    (ps, ss), (pi, si), (pt, st) = peak(std), peak(inter), peak(total)
    return Peaks(ps, pi, pt, ss, si, st, max_alloc)  # type: ignore[arg-type]


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


def judge_budget(steps: Sequence[Step], peaks: Peaks, budget_bytes: int, interleaved_budget_bytes: int,
                 exchange_bytes: int, complete: bool) -> BudgetVerdict:
    standard_budget = budget_bytes - interleaved_budget_bytes
    std = [s.usage["standard"] for s in steps]
    if any(x is None for x in std):
        overflow = None
    else:
        overflow = max((max(0, x - standard_budget) for x in std), default=0)  # type: ignore[operator]
    effective = None if peaks.total is None else peaks.total + exchange_bytes
    fits = (complete and effective is not None and peaks.interleaved is not None
            and effective <= budget_bytes and peaks.interleaved <= interleaved_budget_bytes)
    return BudgetVerdict(standard_budget, overflow, effective, fits)
