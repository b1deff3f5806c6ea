"""Usage per memory region per step, peaks and the budget verdict.

These passes are shared by the planner (which computes the figures) and by
`tileplan check` (which re-derives them from a report): one definition of each rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from tileplan.model.timeline import REGIONS, Step, Value

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
        members.setdefault(v.storage_group, []).append(v)
    groups = {}
    for gid, vs in sorted(members.items()):
        regions = {v.region for v in vs}
        assert len(regions) == 1, f"storage group {gid} spans regions {sorted(regions)}"
        sizes = [v.bytes for v in vs if v.bytes is not None]
        size = max(sizes) if len(sizes) == len(vs) else None
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
        known = [x for x in series if x is not None]
        if not series or len(known) != len(series):
            return None, None
        best = max(known)
        return best, known.index(best)

    std = [s.usage["standard"] for s in steps]
    inter = [s.usage["interleaved"] for s in steps]
    total = [None if a is None or b is None else a + b for a, b in zip(std, inter)]
    live_groups = {value_group[v] for s in steps for v in s.live}
    std_sizes = [groups[g].bytes for g in live_groups if groups[g].region == "standard"]
    known = [b for b in std_sizes if b is not None]
    max_alloc = None if len(known) != len(std_sizes) else max(known, default=0)
    (ps, ss), (pi, si), (pt, st) = peak(std), peak(inter), peak(total)
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


def judge_budget(steps: Sequence[Step], peaks: Peaks, budget_bytes: int, interleaved_budget_bytes: int,
                 exchange_bytes: int, complete: bool, exact: "ExactAccounting | None" = None) -> BudgetVerdict:
    """The verdict; with exact per-tile accounting it judges the real worst tiles,
    otherwise the estimate."""
    standard_budget = budget_bytes - interleaved_budget_bytes
    std = [x for x in (s.usage["standard"] for s in steps) if x is not None]
    overflow = max((max(0, x - standard_budget) for x in std), default=0) if len(std) == len(steps) else None
    effective = None if peaks.total is None else peaks.total + exchange_bytes
    known = exact is not None or (effective is not None and peaks.interleaved is not None)
    fits = (complete and known
            and not over_budget_steps(steps, budget_bytes, interleaved_budget_bytes, exchange_bytes, exact))
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


def over_budget_steps(steps: Sequence[Step], budget_bytes: int, interleaved_budget_bytes: int,
                      exchange_bytes: int, exact: "ExactAccounting | None" = None) -> list[OverBudget]:
    """Every (step, region) over its budget: interleaved usage over the interleaved
    budget, or standard + interleaved + exchange over the whole budget (standard data
    may overflow into the interleaved region, so it has no budget of its own). With
    exact accounting, on each step's worst tile."""
    out = []
    for i, s in enumerate(steps):
        tile: int | None
        inter_tile: int | None
        if exact is not None:
            w = exact.steps[i]
            inter, inter_tile, total, tile = w.max_interleaved, w.max_interleaved_tile, w.total, w.tile
        else:
            std, estimate = s.usage["standard"], s.usage["interleaved"]
            if std is None or estimate is None:
                continue
            inter, total, tile, inter_tile = estimate, std + estimate, None, None
        if inter > interleaved_budget_bytes:
            out.append(OverBudget(s.index, "interleaved", inter_tile, inter, interleaved_budget_bytes))
        if total + exchange_bytes > budget_bytes:
            out.append(OverBudget(s.index, "total", tile, total + exchange_bytes, budget_bytes))
    return out


def verdict_json(steps: Sequence[Step], peaks: Peaks, verdict: BudgetVerdict, budget_bytes: int,
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
    over = over_budget_steps(steps, budget_bytes, interleaved_budget_bytes, exchange_bytes, exact)
    out: dict = {"fits": verdict.fits, "judged_on": "exact" if exact is not None else "estimate",
                 "regions": regions, "over_budget": None}
    if over:
        first = over[0]
        worst = max(over, key=lambda o: (o.bytes_over, -o.step))
        as_json = lambda o: {"step": o.step, "region": o.region, "tile": o.tile, "usage": o.usage,  # noqa: E731
                             "budget": o.budget, "bytes_over": o.bytes_over}
        out["over_budget"] = {"steps": len({o.step for o in over}), "first": as_json(first), "worst": as_json(worst)}
        if worst.tile is not None:
            out["out_of_memory"] = (f"Out of memory on tile {worst.tile} at step {worst.step}: {worst.usage} bytes "
                                    f"used, budget {worst.budget}")
    return out
