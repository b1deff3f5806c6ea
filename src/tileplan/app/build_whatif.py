"""The report's `what_if` section (or `what_if_skipped`) and a sweep's rows, from the
planner's outcomes: one place says what these sections hold. Which re-plans run is
the application's (`tileplan.app.whatif`, whose `with_what_if` attaches them for
`tileplan plan` and the Python API alike)."""

from __future__ import annotations

from collections.abc import Sequence

from tileplan.planner.outcome import Outcome
from tileplan.report.sections import Baseline, Sweep, SweepRow, WhatIf, WhatIfSkipped
from tileplan.report.sections import WhatIfRow as WhatIfRowSection

#: values beyond which the what-if re-plans are not run unless asked (each re-plans the
#: whole program)
WHAT_IF_LIMIT = 20_000
NOTE = "each row is a separate plan; run its command to re-derive it"


def outcome_section(o: Outcome, command: str | None = None) -> Baseline:
    """What a plan came to, and the command that plans it."""
    return Baseline(fits=o.fits, scope=o.scope, peak=o.peak, budget=o.budget, margin=o.margin, tile=o.tile,
                    step=o.step, interleaved_peak=o.interleaved_peak, command=command)


def row_section(knob: str, value: str, o: Outcome | None, command: str, error: str | None = None) -> WhatIfRowSection:
    """A what-if row: what its plan came to, or (`o` None) why it could not be planned."""
    if o is None:
        assert error is not None, "an unplanned row says why"
        return WhatIfRowSection(knob=knob, value=value, command=command, error=error)
    return WhatIfRowSection(knob=knob, value=value, fits=o.fits, scope=o.scope, peak=o.peak, budget=o.budget,
                            margin=o.margin, tile=o.tile, step=o.step, interleaved_peak=o.interleaved_peak,
                            command=command)


def what_if_section(baseline: Outcome, command: str,
                    rows: Sequence[tuple[str, str, Outcome | None, str, str | None]]) -> WhatIf:
    """The what-if table: the baseline and each (knob, value, outcome, command, error)
    row (outcome None and error set for a row that could not be planned)."""
    return WhatIf(baseline=outcome_section(baseline, command), rows=tuple(row_section(*r) for r in rows), note=NOTE)


def what_if_skipped(values: int, limit: int) -> WhatIfSkipped:
    """Why a plan of more than `limit` values carries no what-if table."""
    return WhatIfSkipped(values=values, limit=limit,
                         reason=f"what-if not run: {values:,} values, more than {limit:,} (each row re-plans the "
                                "whole program); --what-if runs it")


def sweep_section(base: str, knobs: Sequence[str], rows: Sequence[tuple[dict[str, object], Outcome, str]]) -> Sweep:
    """A sweep's rows: each combination's knobs, its outcome and the command that re-plans it."""
    return Sweep(base=base, knobs=tuple(knobs), rows=tuple(
        SweepRow(knobs=tuple(knob_values.items()), outcome=outcome_section(o, command))  # type: ignore[arg-type]
        for knob_values, o, command in rows))
