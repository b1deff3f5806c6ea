"""The report's `verdict` section, built from the planner's figures."""

from __future__ import annotations

from tileplan.app.error_band import ipu_band
from tileplan.model.timeline import StepTable
from tileplan.planner.exact import ExactAccounting
from tileplan.planner.usage import BudgetVerdict, OverBudget, Peaks, over_budget
from tileplan.report.sections import OverBudget as OverBudgetSection
from tileplan.report.sections import OverBudgetStep, RegionFigure, Verdict


def over_budget_step(o: OverBudget) -> OverBudgetStep:
    return OverBudgetStep(step=o.step, region=o.region, tile=o.tile, usage=o.usage,  # type: ignore[arg-type]
                          budget=o.budget, bytes_over=o.bytes_over)


def verdict_section(steps: StepTable, peaks: Peaks, verdict: BudgetVerdict, budget_bytes: int,
                    interleaved_budget_bytes: int, exchange_bytes: int,
                    exact: ExactAccounting | None = None, tile_bytes: int | None = None,
                    non_tensor: int | None = None) -> Verdict:
    """The report's `verdict`: per region the peak (exact when known, on its worst
    tile), step, budget, margin and the estimate; when over budget, the first and the
    worst step (most bytes over) with region, tile and bytes; with `tile_bytes` (the
    tile's memory) and a known total margin, tileplan's measured error band and where
    the margin falls in it (`tileplan.app.error_band`). With `non_tensor` (the memory
    that is not tensors a tile, when the verdict counts all memory) and `tile_bytes`, a
    tile over its memory is named in Poplar's words (`out_of_memory_words`)."""
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
        regions.append(RegionFigure(region=region, peak=peak, tile=tile, step=step,
                                    budget=budgets[region], margin=budgets[region] - peak, estimate=estimate,
                                    exchange_bytes=exchange_bytes if region == "total" else None))
    over = over_budget(steps, budget_bytes, interleaved_budget_bytes, exchange_bytes, exact)
    total = next((r for r in regions if r.region == "total"), None)
    band = (ipu_band().section(total.margin, tile_bytes)
            if tile_bytes is not None and total is not None and total.margin is not None else None)
    out = Verdict(fits=verdict.fits, judged_on="exact" if exact is not None else "estimate", regions=tuple(regions),
                  error_band=band)
    if over.first is not None and over.worst is not None:
        first, worst = over.first, over.worst
        out = Verdict(fits=out.fits, judged_on=out.judged_on, regions=out.regions,
                      over_budget=OverBudgetSection(steps=over.count, first=over_budget_step(first),
                                                    worst=over_budget_step(worst)),
                      out_of_memory=out_of_memory_words(worst.tile, worst.step, worst.region, worst.usage,
                                                        worst.budget, non_tensor, tile_bytes)
                      if worst.tile is not None else None,
                      error_band=band)
    return out


def out_of_memory_words(tile: int, step: int, region: str, usage: int, budget: int, non_tensor: int | None,
                        tile_bytes: int | None) -> str:
    """The worst step over budget in words. Counting all memory, a tile over its memory
    in Poplar's ("Out of memory on tile N: X bytes used but tiles only have 638976 bytes
    of memory", X the tensors and the memory that is not tensors), with the step;
    otherwise (a region's budget, or the reference's budgets) the usage and the
    budget."""
    if region == "total" and non_tensor is not None and tile_bytes is not None:
        return (f"Out of memory on tile {tile}: {usage + non_tensor} bytes used but tiles only have {tile_bytes} "
                f"bytes of memory (at step {step})")
    return f"Out of memory on tile {tile} at step {step}: {usage} bytes used, budget {budget}"
