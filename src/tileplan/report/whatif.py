"""The report's `what_if` section and the rows of a sweep, from the planner's
outcomes (plain data: one place says what these JSON objects hold)."""

from __future__ import annotations

from typing import Any, Sequence

from tileplan.planner.plan import Plan
from tileplan.planner.request import PlanRequest
from tileplan.planner.whatif import Outcome, WhatIfRow, outcome


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
