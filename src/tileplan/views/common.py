"""Pieces shared by the view models people read (summary, liveness, diff, headline):
the text forms (a layout in a few words, a precision as people say it, the verdict
line, a value's group label), the peaks per region against their budgets and what a
report says beyond the tensors. The report as columns, and its values as rows, is
`tileplan.views.columns`.

Plain data from a `Report`, nothing rendered. A size the report does not know (null,
or the reference's sentinel 2^64 - 1) is `None` here and stays `None` up to the
renderer, which says "unknown": no view model turns an unknown into a number.
"""

from __future__ import annotations

import re
from fractions import Fraction
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tileplan.model.info import Mode
from tileplan.model.layout import Axis, Layout, Spread
from tileplan.views.classes import TrainingClasses, training_classes
from tileplan.report.fields import U64_MAX
from tileplan.report.model import Report
from tileplan.report.sections import Operation, RejectedOperation

REGION_ORDER = ("total", "standard", "interleaved")


def known(x: int | None) -> int | None:
    """`x`, or None when it is null or the reference's sentinel for "unknown"."""
    return None if x is None or x == U64_MAX else x


def percent(part: int | None, whole: int | None) -> float | None:
    """part / whole in percent to one decimal (for people), None when either is unknown."""
    if part is None or not whole:
        return None
    return round(100 * part / whole, 1)


#: a layout's element order in words
_ORDER_WORDS = {"RowMajor": "row-major", "AmpTransposedLeft": "transposed for the AMP"}


def axis_words(axis: Axis) -> str:
    """The extent an axis splits, in words: `FromEnd(1)` the columns, `FromEnd(2)` the
    rows, `FromEnd(3)` dim -3, `FromStart(0)` dim 0, `Linear` the elements."""
    if axis.is_linear:
        return "elements"
    if axis.kind == "FromEnd":
        return {1: "columns", 2: "rows"}.get(axis.index or 0, f"dim -{axis.index}")
    return f"dim {axis.index}"


def layout_brief(layout: Layout) -> str:
    """A layout in words (its full text form, docs/report-format.md, is `layout_text`):
    the element order, the parts each split extent is cut into, the copies, the region.

    `Layout { order: Amp(TransposedLeft), tiling: { axes: [FromEnd(2) 16 partitions,
    FromEnd(1) 92] }, memory_class: Ipu21Standard }` -> `transposed for the AMP; rows in
    16 x columns in 92 parts; standard region`; a `BlockMajor(TransposedMatrix {
    row_block: 160, column_block: 16 })` vector over `Linear` 184 partitions, 8 replicas
    -> `transposed in 160x16 blocks; elements in 184 parts, 8 copies; standard region`;
    a vector PopART created linearly -> `row-major; elements in at most 1472 parts of 16
    blocks or more, from tile 18; standard region`.
    """
    order = layout.order
    words = _ORDER_WORDS.get(order.kind) or f"transposed in {order.row_block}x{order.column_block} blocks"
    axes = layout.tiling.axes
    if len(axes) == 1 and axes[0].spread is Spread.LEADING:
        (a,) = axes
        split = f"{axis_words(a.axis)} in at most {a.partitions} parts of {a.min_blocks} blocks or more"
    else:
        split = (" x ".join(f"{axis_words(a.axis)} in {a.partitions}" for a in axes) + " parts") if axes \
            else "whole on every tile"
    replicas = layout.tiling.replicas
    if axes and replicas > 1:
        split += f", {replicas} copies"
    if layout.tiling.first_tile:
        split += f", from tile {layout.tiling.first_tile}"
    return f"{words}; {split}; {layout.memory_class.region.lower()} region"


#: the FP8 formats by what people call them (sign, exponent and mantissa bits)
FP8_DISPLAY = {"F8F143": "F8 E4M3", "F8F152": "F8 E5M2"}
_FP8_TEXT = re.compile(r"(\w+) \{ scale_exponent: (-?\d+) \}")


def precision_display(text: str) -> str:
    """The one form people read a precision in, from the report's text form:
    `F8F143 { scale_exponent: -4 }` -> `F8 E4M3 x2^-4` (F8F152 is E5M2); other
    precisions by their plain name (`F16`)."""
    m = _FP8_TEXT.fullmatch(text)
    if not m:
        return text
    return f"{FP8_DISPLAY.get(m.group(1), m.group(1))} x2^{m.group(2)}"


def operation_brief(text: str) -> str:
    """A step's operation text without its parameters (`Copy { mapping: ... }` -> `Copy`)."""
    return text.split(" {")[0]


@dataclass(frozen=True, slots=True)
class ValueRow:
    """One value as people read it. `label` is its group for people (see
    `group_label`); `precision` is in the display form (`precision_display`); `bytes`
    is per tile (the planner's estimate: the largest shard, aligned, times copies);
    `first_step`/`last_step` bound its live range (None when it is live in no step)."""

    id: int
    name: str
    group: str
    label: str
    role: str | None
    shape: tuple[int, ...]
    precision: str
    layout: str
    layout_text: str
    region: str
    storage_group: int
    bytes: int | None
    first_step: int | None
    last_step: int | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "group": self.group, "label": self.label, "role": self.role,
                "shape": list(self.shape), "precision": self.precision, "layout": self.layout,
                "layout_text": self.layout_text, "region": self.region, "storage_group": self.storage_group,
                "bytes": self.bytes, "first_step": self.first_step, "last_step": self.last_step}


_RESULT = re.compile(r"^operation (\d+) result (\d+)$")


def group_label(group: str, ops: Mapping[int, Operation]) -> str:
    """`operation 4 result 0` -> `vit.encoder.layer{i}.attention.qkv result` (its
    operation's name); any other group is its own label."""
    m = _RESULT.match(group)
    if not m or int(m.group(1)) not in ops:
        return group
    k = int(m.group(2))
    return f"{ops[int(m.group(1))].name} result" + (f" {k}" if k else "")


@dataclass(frozen=True, slots=True)
class RegionPeak:
    """The peak of one region against its budget. `total` is what the verdict judges
    (both regions plus the exchange rows); `standard` has no budget of its own: past
    the non-interleaved region it overflows into the interleaved one, so its
    `budget` is that region's size, for reference. `tile` is None when the verdict is
    judged on the estimate; `peak`, `step`, `margin`, `percent` are None when unknown.
    `overflow`: for the standard region, the bytes past the non-interleaved region that
    live in the interleaved one (0 when none; legal, not a failure); None elsewhere."""

    region: str
    peak: int | None
    budget: int
    step: int | None
    tile: int | None
    margin: int | None
    percent: float | None
    estimate: int | None

    @property
    def overflow(self) -> int | None:
        if self.region != "standard" or self.peak is None:
            return None
        return max(0, self.peak - self.budget)

    def to_json(self) -> dict[str, Any]:
        return {"region": self.region, "peak": self.peak, "budget": self.budget, "step": self.step,
                "tile": self.tile, "margin": self.margin, "percent": self.percent, "estimate": self.estimate,
                "overflow": self.overflow}


def standard_budget(report: Report) -> int:
    return report.budget_bytes - report.interleaved_budget_bytes


def exchange_bytes(report: Report) -> int | None:
    rows, row_bytes = known(report.peak.exchange_rows), report.exchange_row_bytes
    return None if rows is None or row_bytes is None else rows * row_bytes


def judged_on(report: Report) -> str:
    """"exact" when the verdict was judged on the real worst tiles, else "estimate"."""
    verdict = report.sections.verdict
    return (verdict.judged_on or "estimate") if verdict is not None else "estimate"


def region_peaks(report: Report) -> tuple[RegionPeak, ...]:
    """Total, standard and interleaved peaks, from the report's `verdict` when it has
    one (exact, on the worst tile), else from the version-1 fields (the estimate)."""
    budgets = {"total": report.budget_bytes, "standard": standard_budget(report),
               "interleaved": report.interleaved_budget_bytes}
    estimates = {"total": (known(report.effective_peak_bytes), known(report.total_peak_step)),
                 "standard": (known(report.peak.standard), known(report.standard_peak_step)),
                 "interleaved": (known(report.peak.interleaved), known(report.interleaved_peak_step))}
    verdict = report.sections.verdict
    stated = {r.region: r for r in verdict.regions} if verdict is not None else {}
    out = []
    for region in REGION_ORDER:
        budget = budgets[region]
        estimate, estimate_step = estimates[region]
        if region in stated:
            r = stated[region]
            peak, step, tile = r.peak, r.step, r.tile
            estimate = estimate if r.estimate is None else r.estimate
        else:
            peak, step, tile = estimate, estimate_step, None
        if peak is None:
            step = None
        out.append(RegionPeak(region, peak, budget, step, tile, None if peak is None else budget - peak,
                              percent(peak, budget), estimate))
    return tuple(out)


def operations(report: Report) -> Mapping[int, Operation]:
    """The report's `operations` by index (empty for a report without them)."""
    ops = report.sections.operations
    return ops.by_index if ops is not None else {}


def rejected_operation(report: Report) -> RejectedOperation | None:
    return report.sections.rejected_operation


def turned_by_every_error(margin: int, tile_bytes: int, lower_percent: float, upper_percent: float) -> bool:
    """Whether every error of tileplan's measured band turns a verdict of this margin:
    tileplan's figure over (1 + error) is the real tile's, over when the error exceeds
    -margin / tile; a fit is turned by every error when the whole band lies above that,
    an over when it lies at or below it."""
    shortfall = Fraction(-100 * margin, tile_bytes)
    if margin >= 0:
        return shortfall > Fraction(str(upper_percent))
    return shortfall <= Fraction(str(lower_percent))


def band_clause(report: Report) -> str | None:
    """Where the verdict's margin falls in tileplan's measured error band, from
    `verdict.error_band` (None without one): "fits by 2.3 % of the tile, inside
    tileplan's measured band of -18.8 % to +4.5 %: compile to be sure"; the plain
    statement "... outside tileplan's measured band of ..." when no error within the
    band could turn the verdict; "... but tileplan measured low on every published
    tile (...): the compile is likely out of memory" when every error of the band
    turns it."""
    verdict = report.sections.verdict
    band = verdict.error_band if verdict is not None else None
    total = verdict.region("total") if verdict is not None else None
    if report.scope != "program" or band is None or total is None or total.margin is None:
        return None
    share = abs(band.margin_percent)
    how = (f"over by {share:.1f} %" if total.margin < 0 else
           f"fits by {share:.1f} %" if report.fits_budget else f"margin {share:.1f} %")
    if turned_by_every_error(total.margin, band.tile_bytes, band.lower_percent, band.upper_percent):
        return (f"{how} of the tile, but tileplan measured low on every published tile ({band.text()}): "
                f"the compile is likely out of memory" if total.margin >= 0 else
                f"{how} of the tile, but tileplan measured high on every published tile ({band.text()}): "
                f"the compile likely fits")
    where = "inside" if band.inside else "outside"
    text = f"{how} of the tile, {where} tileplan's measured band of {band.text()}"
    return text + ": compile to be sure" if band.inside else text


def error_band_text(report: Report) -> str | None:
    """tileplan's measured error band as the report states it ("-18.8 % to +4.5 %"),
    None without one."""
    verdict = report.sections.verdict
    band = verdict.error_band if verdict is not None else None
    return band.text() if band is not None else None


def verdict_line(report: Report) -> str:
    """The verdict in one line, from the report's own fields (nothing recomputed):
    the first line `tileplan plan` prints. The word follows `fits_budget`; where the
    report states tileplan's measured error band, the line ends with where the margin
    falls in it (`band_clause`)."""
    line = _verdict_words(report)
    clause = band_clause(report)
    return line if clause is None else f"{line}; {clause}"


def _verdict_words(report: Report) -> str:
    if report.scope != "program":
        rejected = rejected_operation(report)
        where = (f"stopped at operation {rejected.index} ({rejected.name}): {rejected.reason}"
                 if rejected else f"scope {report.scope}")
        unknown = sum(known(v.bytes) is None for v in report.values)
        return f"Not planned: {where}; {unknown} values of unknown size"
    total = region_peaks(report)[0]
    verdict = report.sections.verdict
    if not report.fits_budget and verdict is not None and verdict.out_of_memory:
        return verdict.out_of_memory
    where = f"worst tile {total.tile} at step {total.step}" if total.tile is not None else f"step {total.step}"
    used = "unknown" if total.peak is None else str(total.peak)
    margin = "unknown" if total.margin is None else f"{total.margin} B"
    word = "Fits" if report.fits_budget else "Does not fit"
    nt = report.sections.non_tensor
    if nt is not None and nt.in_verdict and total.peak is not None and total.budget is not None:
        # all memory counted, as Poplar counts it: the tile is the budget and the reserve
        tile = total.budget + report.support_reserve_bytes
        return (f"{word}: {where}: {total.peak + report.support_reserve_bytes} bytes used of the tile's {tile} "
                f"({total.peak} B of tensors, {report.support_reserve_bytes} B not tensors; margin {margin})")
    return f"{word}: {where}: {used} bytes used, budget {total.budget} (margin {margin})"


NON_TENSOR_CLASSES = (("vertex_code", "vertex code"), ("vertex_state", "vertex state"),
                      ("exchange_code", "exchange code"), ("control_code", "control code"), ("stack", "stack"))


@dataclass(frozen=True, slots=True)
class Extras:
    """What a report says beyond the tensors, as people read it: memory that is not
    tensors (estimate per tile, by class, against the reserve), the placement verdict of
    its worst tiles, and which IPU of a pipeline it is. None where the report has none
    (or a malformed section: the views never crash on one)."""

    non_tensor: tuple[tuple[str, int], ...] | None
    non_tensor_total: int | None
    reserve: int | None
    over_reserve: int | None
    placement: str | None
    pipeline: str | None
    #: a training report's bytes by class on the worst tile at its peak (`peak_tile.classes`):
    #: the tile, the step and (class, always live, bytes, values) rows
    training: TrainingClasses | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"non_tensor": None if self.non_tensor is None else dict(self.non_tensor),
               "non_tensor_total": self.non_tensor_total, "reserve": self.reserve, "over_reserve": self.over_reserve,
               "placement": self.placement, "pipeline": self.pipeline}
        if self.training is not None:  # a training report's only
            out["training"] = self.training.to_json()
        return out


def extras(report: Report) -> Extras:
    sections = report.sections
    nt = sections.non_tensor
    classes = total = reserve = over = None
    if nt is not None:
        found = [(label, getattr(nt, key)) for key, label in NON_TENSOR_CLASSES]
        if all(b is not None for _, b in found):
            classes = tuple((label, b) for label, b in found if b is not None)
            total, reserve, over = nt.total, nt.reserve, nt.over_reserve
    placement = None
    section = sections.placement
    if section is not None and section.verdict is not None:
        first = section.tiles[0] if section.tiles else None
        where = f" (tile {first.tile}: highest address {first.height} B, {first.gaps} B of gaps)" if first is not None \
            and first.height is not None and first.tile is not None and first.gaps is not None else ""
        placement = f"{section.verdict}{where}"
    skipped = sections.placement_skipped
    if placement is None and skipped is not None and skipped.reason is not None:
        placement = f"not placed: {skipped.reason}"
    pipeline = None
    stage = sections.pipeline
    if stage is not None and stage.ipu is not None and stage.ipus is not None and stage.layers is not None \
            and stage.layers_per_ipu is not None:
        first_layer, end = stage.layers
        program = sections.program
        mode = (program.mode if program is not None else Mode.INFERENCE).value
        pipeline = (f"IPU {stage.ipu} of {stage.ipus} ({mode} pipeline): layers {first_layer} to {end - 1}; "
                    f"layers_per_ipu {list(stage.layers_per_ipu)}")
    return Extras(classes, total, reserve, over, placement, pipeline, training_classes(report))


@dataclass(frozen=True, slots=True)
class TileSplit:
    """The worst tile's bytes at its peak, as PopVision splits a tile's memory: always
    live (`resident`: the parameters, buffers and constants with the default policy;
    every declared tensor with the reference policy), not always live
    (`step_dependent`: activations, operands, scratch) and the exchange rows."""

    tile: int
    resident: int
    step_dependent: int
    exchange: int


def worst_tile_split(report: Report) -> TileSplit | None:
    """The exact worst tile's bytes at its peak split into always live and not always
    live (None without the exact accounting)."""
    sections = report.sections
    verdict, exact = sections.verdict, sections.exact
    total = verdict.region("total") if verdict is not None else None
    if exact is None or exact.tiles is None or total is None or total.tile is None:
        return None
    peak, resident = exact.tiles.peak[total.tile], exact.tiles.peak_resident[total.tile]
    return TileSplit(total.tile, resident, peak - resident, total.exchange_bytes or 0)
