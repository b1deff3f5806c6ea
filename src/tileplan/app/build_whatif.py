"""The report's `what_if` section (or `what_if_skipped`) and a sweep's rows, from the
planner's outcomes: one place says what these sections hold. Which re-plans run is
the application's (`tileplan.app.whatif`, whose `with_what_if` attaches them for
`tileplan plan` and the Python API alike)."""

from __future__ import annotations

from collections.abc import Sequence

from tileplan.app.error_band import Band
from tileplan.planner.outcome import Outcome
from tileplan.report.sections import Baseline, Sweep, SweepRow, WhatIf, WhatIfSkipped
from tileplan.report.sections import WhatIfRow as WhatIfRowSection

#: values beyond which the what-if re-plans are not run unless asked (each re-plans the
#: whole program)
WHAT_IF_LIMIT = 20_000
NOTE = "each row is a separate plan; run its command to re-derive it"


#: tileplan's measured error band and the tile's memory (bytes) a row's margin is judged
#: against (`tileplan.app.error_band`), or None for rows without it
BandOf = tuple[Band, int] | None


def band_fields(o: Outcome, band: BandOf) -> tuple[float | None, bool | None]:
    """(`margin_percent`, `inside_band`) of a plan's outcome; (None, None) without a band
    or a known margin."""
    margin = o.margin
    if band is None or margin is None:
        return None, None
    b, tile_bytes = band
    return b.margin_percent(margin, tile_bytes), b.inside(margin, tile_bytes)


def outcome_section(o: Outcome, command: str | None = None, band: BandOf = None) -> Baseline:
    """What a plan came to, and the command that plans it (with `band`: where its margin
    falls in tileplan's measured error band)."""
    percent, inside = band_fields(o, band)
    return Baseline(fits=o.fits, scope=o.scope, peak=o.peak, budget=o.budget, margin=o.margin, tile=o.tile,
                    step=o.step, interleaved_peak=o.interleaved_peak, command=command, margin_percent=percent,
                    inside_band=inside)


def row_section(knob: str, value: str, o: Outcome | None, command: str, error: str | None = None,
                band: BandOf = None) -> WhatIfRowSection:
    """A what-if row: what its plan came to, or (`o` None) why it could not be planned."""
    if o is None:
        assert error is not None, "an unplanned row says why"
        return WhatIfRowSection(knob=knob, value=value, command=command, error=error)
    percent, inside = band_fields(o, band)
    return WhatIfRowSection(knob=knob, value=value, fits=o.fits, scope=o.scope, peak=o.peak, budget=o.budget,
                            margin=o.margin, tile=o.tile, step=o.step, interleaved_peak=o.interleaved_peak,
                            command=command, margin_percent=percent, inside_band=inside)


def what_if_section(baseline: Outcome, command: str,
                    rows: Sequence[tuple[str, str, Outcome | None, str, str | None]], band: BandOf = None) -> WhatIf:
    """The what-if table: the baseline and each (knob, value, outcome, command, error)
    row (outcome None and error set for a row that could not be planned); with `band`,
    each planned row's margin as a share of the tile and whether it lies inside
    tileplan's measured error band."""
    return WhatIf(baseline=outcome_section(baseline, command, band),
                  rows=tuple(row_section(*r, band=band) for r in rows), note=NOTE)


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
