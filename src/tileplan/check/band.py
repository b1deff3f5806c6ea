"""`tileplan check` on the error band: `verdict.error_band` and each what-if row's
`margin_percent` and `inside_band`, re-derived by the rule of docs/report-format.md
("The error band") from the band's own measurements, the tile's bytes it states and
check's own margin, with check's own arithmetic (integers throughout).

The band's measurements are data, not figures of this plan (benchmarks/fidelity.py
measures them against published compiles): check takes them as stated, types them,
and re-derives from them everything the band concludes: its bounds, the margin as a
share of the tile, and whether the margin lies inside the band. The tile's bytes are
held to the report: at least the budgets and the support reserve together, and the
tile bytes `available_memory_proportion` states when it states them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tileplan.check.result import Add, is_int, show
from tileplan.report.model import Report
from tileplan.report.sections import BandMeasurement, ErrorBand, Verdict


@dataclass(frozen=True, slots=True)
class CheckedBand:
    """The band as check re-derives it: its bounds in tenths of a percent, the tile's
    bytes and the measurements as stated."""

    lower: int
    upper: int
    tile_bytes: int
    measurements: tuple[BandMeasurement, ...]

    def margin_tenths(self, margin: int) -> int:
        """1000 x margin / tile_bytes rounded to the nearest integer, halves to even."""
        q, r = divmod(1000 * margin, self.tile_bytes)
        if 2 * r > self.tile_bytes or (2 * r == self.tile_bytes and q % 2):
            q += 1
        return q

    def inside(self, margin: int) -> bool:
        """lower / 10 < -100 x margin / tile_bytes <= upper / 10, in integers."""
        over = -1000 * margin
        return self.lower * self.tile_bytes < over and over <= self.upper * self.tile_bytes

    def section(self, margin: int) -> ErrorBand:
        return ErrorBand(tile_bytes=self.tile_bytes, lower_percent=self.lower / 10, upper_percent=self.upper / 10,
                         margin_percent=self.margin_tenths(margin) / 10, inside=self.inside(margin),
                         measurements=self.measurements)

    def row_fields(self, margin: object) -> dict[str, Any]:
        """A what-if row's `margin_percent` and `inside_band` for its margin (none for a
        row of unknown margin)."""
        if not is_int(margin):
            return {}
        assert isinstance(margin, int)
        return {"margin_percent": self.margin_tenths(margin) / 10, "inside_band": self.inside(margin)}


def _tenths(m: BandMeasurement) -> tuple[int, int]:
    """1000 x (tileplan - published) / published, rounded down and up."""
    q, r = divmod(1000 * (m.tileplan - m.published), m.published)
    return q, q + (r > 0)


def stated_band(report: Report, add: Add) -> CheckedBand | None:
    """The band `verdict.error_band` states, its bounds re-derived from its
    measurements; None when the verdict states none, or when its tile bytes or its
    measurements cannot be read (a finding says why)."""
    written = report.sections.written(Verdict)
    if not isinstance(written, dict) or "error_band" not in written:
        return None
    place, band = "verdict.error_band", written["error_band"]
    if not isinstance(band, dict):
        add("disagree", place, f"expected an object, found {show(band)}")
        return None
    tile = band.get("tile_bytes")
    least = report.budget_bytes + report.support_reserve_bytes
    if not isinstance(tile, int) or not is_int(tile) or tile < least:
        add("disagree", f"{place}.tile_bytes", f"expected an integer of at least budget_bytes + "
                                               f"support_reserve_bytes = {least}, found {show(tile)}")
        return None
    cap = report.extra.get("available_memory_proportion")
    stated = cap.get("tile_bytes") if isinstance(cap, dict) else None
    if is_int(stated) and stated != tile:
        add("disagree", f"{place}.tile_bytes", f"reports {tile}; available_memory_proportion.tile_bytes "
                                               f"reports {stated}")
    rows = band.get("measurements")
    if not isinstance(rows, list) or not rows:
        add("disagree", f"{place}.measurements", f"expected a non-empty list, found {show(rows)}")
        return None
    measurements = []
    for i, row in enumerate(rows):
        where = f"{place}.measurements[{i}]"
        if not isinstance(row, dict) or not isinstance(row.get("case"), str) \
                or not all(is_int(row.get(k)) and row[k] >= low for k, low in
                           (("ipu", 0), ("published", 1), ("tileplan", 0))):
            add("disagree", where, f"expected case (a string), ipu, published (at least 1) and tileplan (bytes), "
                                   f"found {show(row)}")
            return None
        measurements.append(BandMeasurement(case=row["case"], ipu=row["ipu"], published=row["published"],
                                            tileplan=row["tileplan"]))
    bounds = [_tenths(m) for m in measurements]
    return CheckedBand(min(lo for lo, _ in bounds), max(hi for _, hi in bounds), tile, tuple(measurements))


def check_rows(band: CheckedBand | None, rows: list[tuple[str, dict[str, Any]]], add: Add) -> None:
    """Each planned what-if row's `margin_percent` and `inside_band`, where the row
    states them, re-derived from its margin and the verdict's band (a row may leave
    them out: a table written without the band; stating them needs a band and a
    margin)."""
    for place, r in rows:
        derived = band.row_fields(r.get("margin")) if band is not None else {}
        for key in ("margin_percent", "inside_band"):
            if key not in r:
                continue
            reported, mine = r[key], derived.get(key)
            if reported != mine or type(reported) is not type(mine):
                why = "" if band is not None else " (the verdict states no error band)"
                add("disagree", f"{place}.{key}", f"reports {show(reported)}; re-derived {show(mine)}{why}")
