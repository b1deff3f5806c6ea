"""The report's `what_if` section (or `what_if_skipped`) and a sweep's rows, from the
planner's outcomes: one place says which re-plans a report carries and what they hold.
`tileplan plan` and the Python API attach them alike (`with_what_if`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tileplan.planner.plan import Plan
from tileplan.planner.request import PlanRequest
from tileplan.planner.whatif import Outcome, WhatIfRow, outcome, what_if
from tileplan.report.model import Report
from tileplan.report.sections import Baseline, Sweep, SweepRow, WhatIf, WhatIfSkipped
from tileplan.report.sections import WhatIfRow as WhatIfRowSection

#: values beyond which the what-if re-plans are not run unless asked (each re-plans the
#: whole program)
WHAT_IF_LIMIT = 200_000
NOTE = "each row is a separate plan; run its command to re-derive it"


def outcome_section(o: Outcome, command: str | None = None) -> Baseline:
    """What a plan came to, and the command that plans it."""
    return Baseline(fits=o.fits, scope=o.scope, peak=o.peak, budget=o.budget, margin=o.margin, tile=o.tile,
                    step=o.step, interleaved_peak=o.interleaved_peak, command=command)


def outcome_json(o: Outcome) -> dict[str, Any]:
    """What a plan came to, as a what-if row and a sweep row hold it (without the command)."""
    out = outcome_section(o).to_json()
    del out["command"]
    return out


def row_section(r: WhatIfRow) -> WhatIfRowSection:
    o = r.outcome
    return WhatIfRowSection(knob=r.knob, value=r.value, fits=o.fits, scope=o.scope, peak=o.peak, budget=o.budget,
                            margin=o.margin, tile=o.tile, step=o.step, interleaved_peak=o.interleaved_peak,
                            command=r.request.command())


def what_if_section(base: PlanRequest, base_plan: Plan, rows: Sequence[WhatIfRow]) -> WhatIf:
    return WhatIf(baseline=outcome_section(outcome(base_plan), base.command()),
                  rows=tuple(row_section(r) for r in rows), note=NOTE)


def with_what_if(report: Report, request: PlanRequest, plan: Plan, *, limit: int = WHAT_IF_LIMIT,
                 force: bool = False, progress: Callable[[str], None] | None = None) -> Report:
    """`report` (the plan of `request`) with its what-if table (each knob re-planned),
    or, for a program of more than `limit` values unless `force`, with
    `what_if_skipped` saying why it was not run."""
    if len(report.values) > limit and not force:
        return report.with_sections(WhatIfSkipped(
            values=len(report.values), limit=limit,
            reason=f"what-if not run: {len(report.values):,} values, more than {limit:,} (each row re-plans the "
                   "whole program); --what-if runs it"))
    return report.with_sections(what_if_section(request, plan, what_if(request, progress=progress)))


def sweep_section(base: PlanRequest, knobs: Sequence[str],
                  rows: Sequence[tuple[dict[str, object], PlanRequest, Outcome]]) -> Sweep:
    """A sweep's rows: each combination's knobs, its outcome and the command that re-plans it."""
    return Sweep(base=base.command(), knobs=tuple(knobs), rows=tuple(
        SweepRow(knobs=tuple(knob_values.items()), outcome=outcome_section(o, request.command()))  # type: ignore[arg-type]
        for knob_values, request, o in rows))
