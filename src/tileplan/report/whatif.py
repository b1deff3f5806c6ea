"""The report's `what_if` section (or `what_if_skipped`) and the rows of a sweep,
from the planner's outcomes (plain data: one place says what these JSON objects hold).
`tileplan plan` and the Python API attach them alike (`with_what_if`)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from tileplan.planner.plan import Plan
from tileplan.planner.request import PlanRequest
from tileplan.planner.whatif import Outcome, WhatIfRow, outcome, what_if
from tileplan.report.format import Report

#: values beyond which the what-if re-plans are not run unless asked (each re-plans the
#: whole program)
WHAT_IF_LIMIT = 200_000


def outcome_json(o: Outcome) -> dict[str, Any]:
    return {"fits": o.fits, "scope": o.scope, "peak": o.peak, "budget": o.budget, "margin": o.margin,
            "tile": o.tile, "step": o.step, "interleaved_peak": o.interleaved_peak}


def row_json(r: WhatIfRow) -> dict[str, Any]:
    return {"knob": r.knob, "value": r.value, **outcome_json(r.outcome), "command": r.request.command()}


def what_if_json(base: PlanRequest, base_plan: Plan, rows: Sequence[WhatIfRow]) -> dict[str, Any]:
    return {"baseline": {**outcome_json(outcome(base_plan)), "command": base.command()},
            "rows": [row_json(r) for r in rows],
            "note": "each row is a separate plan; run its command to re-derive it"}


def sweep_rows_json(rows: Sequence[tuple[dict[str, object], PlanRequest, Outcome]]) -> list[dict[str, Any]]:
    """A sweep's rows: each combination's knobs, its outcome and the command that re-plans it."""
    return [{**knobs, **outcome_json(o), "command": request.command()} for knobs, request, o in rows]


def with_what_if(report: Report, request: PlanRequest, plan: Plan, *, limit: int = WHAT_IF_LIMIT,
                 force: bool = False, progress: Callable[[str], None] | None = None) -> Report:
    """`report` (the plan of `request`) with its what-if table (each knob re-planned),
    or, for a program of more than `limit` values unless `force`, with
    `what_if_skipped` saying why it was not run."""
    n = len(report.values)
    if n > limit and not force:
        report.extra["what_if_skipped"] = {
            "values": n, "limit": limit,
            "reason": f"what-if not run: {n:,} values, more than {limit:,} (each row re-plans the whole program); "
                      "--what-if runs it"}
    else:
        report.extra["what_if"] = what_if_json(request, plan, what_if(request, progress=progress))
    return report
