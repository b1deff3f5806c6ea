"""The report's `verdict` section, built from the planner's figures (plain data)."""

from __future__ import annotations

from typing import Any

from tileplan.model.timeline import StepTable
from tileplan.planner.exact import ExactAccounting
from tileplan.planner.usage import BudgetVerdict, OverBudget, Peaks, over_budget


def over_budget_json(o: OverBudget) -> dict[str, Any]:
    return {"step": o.step, "region": o.region, "tile": o.tile, "usage": o.usage, "budget": o.budget,
            "bytes_over": o.bytes_over}


def verdict_json(steps: StepTable, peaks: Peaks, verdict: BudgetVerdict, budget_bytes: int,
                 interleaved_budget_bytes: int, exchange_bytes: int, exact: ExactAccounting | None = None) -> dict:
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
        out["over_budget"] = {"steps": over.count, "first": over_budget_json(first),
                              "worst": over_budget_json(worst)}
        if worst.tile is not None:
            out["out_of_memory"] = (f"Out of memory on tile {worst.tile} at step {worst.step}: {worst.usage} bytes "
                                    f"used, budget {worst.budget}")
    return out
