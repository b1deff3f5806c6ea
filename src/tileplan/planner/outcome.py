"""What a plan came to, in the few figures a what-if row or a sweep row holds."""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.planner.plan import Plan


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a plan came to: fits or not, its peak (exact when known, with exchange),
    the budget, the worst tile and step; None where the plan was not complete."""

    fits: bool
    scope: str
    peak: int | None
    budget: int
    tile: int | None
    step: int | None
    interleaved_peak: int | None

    @property
    def margin(self) -> int | None:
        return None if self.peak is None else self.budget - self.peak



def outcome(plan: Plan) -> Outcome:
    m = plan.machine
    exchange = plan.exchange_bytes
    if plan.exact is not None:
        total, tile, step = plan.exact.peak("total")
        return Outcome(plan.verdict.fits, plan.scope, total + exchange, m.budget_bytes, tile, step,
                       plan.exact.peak("interleaved")[0])
    return Outcome(plan.verdict.fits, plan.scope, plan.verdict.effective_peak_bytes, m.budget_bytes, None,
                   plan.peaks.total_step, plan.peaks.interleaved)
