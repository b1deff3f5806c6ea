"""What `tileplan plan` prints after planning: the verdict line, where the plan peaks,
the regions against their budgets, the worst tile's bytes split, its placement, the
memory that is not tensors, the products over the available memory proportion, the
steps over budget, what is live on the worst tile and the what-if table. Plain data
from a report's own fields (nothing recomputed); `render.terminal.render_headline`
writes it. A field is None where the report does not say.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.views.liveness import WhatIfRow, what_if_rows
from tileplan.report.model import Report
from tileplan.report.sections_band import ErrorBand
from tileplan.report.sections import (
    CapExceeded,
    NonTensor,
    OverBudget,
    PeakTile,
    PlacedTile,
    RegionFigure,
)
from tileplan.views.classes import TrainingClasses, training_classes
from tileplan.views.common import (
    TileSplit, error_band_text, group_label, operation_brief, operations, precision_display, turned_by_every_error,
    verdict_line, worst_tile_split,
)

TOP_GROUPS = 10
TOP_VALUES = 5
TOP_REJECTIONS = 3


@dataclass(frozen=True, slots=True)
class PeakStep:
    """The step of the total peak and the operation it belongs to."""

    index: int
    operation: str
    source: int
    name: str
    runs: int


@dataclass(frozen=True, slots=True)
class CapSummary:
    """The products planned over the available memory proportion: how many, the cap,
    and the one needing the most temporary bytes."""

    count: int
    proportion: float | None
    cap_bytes: int | None
    worst: CapExceeded


@dataclass(frozen=True, slots=True)
class LiveGroup:
    label: str
    bytes: int
    values: int


@dataclass(frozen=True, slots=True)
class LiveValue:
    label: str
    shape: tuple[int, ...]
    precision: str
    id: int
    bytes: int


@dataclass(frozen=True, slots=True)
class Headline:
    """The plan's verdict, as `tileplan plan` prints it (see the module docstring).
    For a plan that stopped early (`planned` False) only the verdict and the first
    rejections."""

    verdict: str
    planned: bool
    rejections: tuple[tuple[str, str], ...] = ()
    rejections_total: int = 0
    peak_step: PeakStep | None = None
    total: RegionFigure | None = None
    ratio_exact_to_estimate: float | None = None
    tile_split: TileSplit | None = None
    standard: RegionFigure | None = None
    interleaved: RegionFigure | None = None
    placed: PlacedTile | None = None
    placement_verdict: str | None = None
    placement_skipped: str | None = None
    non_tensor: NonTensor | None = None
    over_cap: CapSummary | None = None
    over_budget: OverBudget | None = None
    peak_tile: PeakTile | None = None
    live_groups: tuple[LiveGroup, ...] = ()
    live_values: tuple[LiveValue, ...] = ()
    what_if: tuple[WhatIfRow, ...] | None = None
    #: each what-if row's bytes used on its worst tile, all memory (tensors and the
    #: memory that is not tensors, which differs from row to row: the tile less the
    #: row's margin); None where the verdict counts tensors against budgets
    what_if_used: tuple[int | None, ...] | None = None
    #: each what-if row's place in the band as the table says it: "inside", "outside",
    #: or, where every error of the band turns the row's verdict, "likely over" /
    #: "likely fits" (None: the row states no place)
    what_if_band: tuple[str | None, ...] | None = None
    #: tileplan's measured error band, as text ("-18.8 % to +4.5 %"); None without one
    error_band: str | None = None
    #: a training report's worst tile by class
    training: TrainingClasses | None = None


def build_headline(report: Report) -> Headline:
    sections = report.sections
    verdict = verdict_line(report)
    if report.scope != "program":
        return Headline(verdict, False, tuple((j.name, j.reason) for j in report.rejections[:TOP_REJECTIONS]),
                        len(report.rejections))
    v = sections.verdict
    total = v.region("total") if v is not None else None
    ops = operations(report)
    peak_step = None
    if total is not None and total.step is not None and 0 <= total.step < len(report.steps):
        step = report.steps[total.step]
        op = ops.get(step.source)
        if op is not None:
            peak_step = PeakStep(step.index, operation_brief(step.operation), op.index, op.name, op.execution_count)
    exact = sections.exact
    split = worst_tile_split(report)
    placement = sections.placement
    placed = placement.tiles[0] if placement is not None and placement.tiles else None
    skipped = sections.placement_skipped
    cap = sections.available_memory_proportion
    over_cap = None
    if cap is not None and cap.exceeded:
        worst = max(cap.exceeded, key=lambda e: (e.temporary_bytes or 0, -(e.operation or 0)))
        over_cap = CapSummary(len(cap.exceeded), cap.proportion, cap.cap_bytes, worst)
    peak_tile = v.peak_tile if v is not None else None
    groups: tuple[LiveGroup, ...] = ()
    values: tuple[LiveValue, ...] = ()
    if peak_tile is not None:
        groups = tuple(LiveGroup(group_label(g.group, ops), g.bytes, g.values) for g in peak_tile.groups[:TOP_GROUPS])
        values = tuple(LiveValue(group_label(x.name, ops), x.shape, precision_display(x.precision), x.id, x.bytes)
                       for x in peak_tile.values[:TOP_VALUES])
    rows = what_if_rows(report)
    used = None
    band = v.error_band if v is not None else None
    nt = sections.non_tensor
    if rows is not None and nt is not None and nt.in_verdict and band is not None:
        used = tuple(band.tile_bytes - w.margin if w.margin is not None else None for w in rows)
    places = None
    if rows is not None and band is not None:
        places = tuple(_band_place(w.margin, w.inside_band, band) for w in rows)
    return Headline(
        verdict, True, peak_step=peak_step, total=total,
        ratio_exact_to_estimate=exact.ratio_exact_to_estimate if exact is not None else None, tile_split=split,
        standard=v.region("standard") if v is not None else None,
        interleaved=v.region("interleaved") if v is not None else None,
        placed=placed, placement_verdict=placement.verdict if placement is not None else None,
        placement_skipped=skipped.reason if skipped is not None else None,
        non_tensor=sections.non_tensor, over_cap=over_cap, over_budget=v.over_budget if v is not None else None,
        peak_tile=peak_tile, live_groups=groups, live_values=values, what_if=rows,
        what_if_used=used, what_if_band=places, error_band=error_band_text(report), training=training_classes(report))


def _band_place(margin: int | None, inside: bool | None, band: ErrorBand) -> str | None:
    """A what-if row's place in the band (`Headline.what_if_band`)."""
    if margin is None or inside is None:
        return None
    if not inside and turned_by_every_error(margin, band.tile_bytes, band.lower_percent, band.upper_percent):
        return "likely over" if margin >= 0 else "likely fits"
    return "inside" if inside else "outside"
