"""Pieces shared by the view models people read (summary, liveness, diff).

Plain data from a `Report`, nothing rendered. A size the report does not know (null,
or the reference's sentinel 2^64 - 1) is `None` here and stays `None` up to the
renderer, which says "unknown": no view model turns an unknown into a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tileplan.model.layout import Layout
from tileplan.model.timeline import Value
from tileplan.report.format import U64_MAX, Report

REGION_ORDER = ("total", "standard", "interleaved")


def known(x: int | None) -> int | None:
    """`x`, or None when it is null or the reference's sentinel for "unknown"."""
    return None if x is None or x == U64_MAX else x


def percent(part: int | None, whole: int | None) -> float | None:
    """part / whole in percent to one decimal (for people), None when either is unknown."""
    if part is None or not whole:
        return None
    return round(100 * part / whole, 1)


def layout_brief(layout: Layout) -> str:
    """A layout in a few words: order, partitions per axis, replicas, memory region.

    `Layout { order: BlockMajor(TransposedMatrix { row_block: 160, column_block: 16 }),
    tiling: { replicas: 8, axes: [FromEnd(2) 46 partitions, FromEnd(1) 4] }, ... Standard }`
    -> `BlockMajor 160x16, FromEnd(2)/46 x FromEnd(1)/4, 8 replicas, Standard`.
    """
    order = layout.order.kind
    if order == "BlockMajor":
        order = f"BlockMajor {layout.order.row_block}x{layout.order.column_block}"
    elif order == "AmpTransposedLeft":
        order = "Amp(TransposedLeft)"
    axes = " x ".join(f"{a.axis.to_text()}/{a.partitions}" for a in layout.tiling.axes) or "untiled"
    replicas = layout.tiling.replicas
    parts = [order, axes]
    if replicas > 1:
        parts.append(f"{replicas} replicas")
    parts.append(layout.memory_class.region)
    return ", ".join(parts)


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


def group_label(group: str, ops: dict[int, dict[str, Any]]) -> str:
    """`operation 4 result 0` -> `vit.encoder.layer{i}.attention.qkv result` (its
    operation's name); any other group is its own label."""
    m = _RESULT.match(group)
    if not m or int(m.group(1)) not in ops:
        return group
    k = int(m.group(2))
    return f"{ops[int(m.group(1))]['name']} result" + (f" {k}" if k else "")


def live_ranges(report: Report) -> dict[int, tuple[int, int]]:
    """Value id -> (first, last) step in which it is live."""
    out: dict[int, tuple[int, int]] = {}
    for s in report.steps:
        for vid in s.live:
            first, _ = out.get(vid, (s.index, s.index))
            out[vid] = (first, s.index)
    return out


def value_rows(report: Report) -> tuple[ValueRow, ...]:
    """Every value of the report, in id order."""
    ranges, ops = live_ranges(report), operations(report)
    return tuple(value_row(v, ranges.get(v.id), group_label(v.group, ops))
                 for v in sorted(report.values, key=lambda v: v.id))


def value_row(v: Value, live: tuple[int, int] | None, label: str | None = None) -> ValueRow:
    return ValueRow(id=v.id, name=v.name, group=v.group, label=v.group if label is None else label, role=v.role,
                    shape=tuple(v.shape),
                    precision=precision_display(v.precision.to_text()), layout=layout_brief(v.layout),
                    layout_text=v.layout.to_text(),
                    region=v.region, storage_group=v.storage_group, bytes=known(v.bytes),
                    first_step=live[0] if live else None, last_step=live[1] if live else None)


def by_bytes(rows: list[ValueRow] | tuple[ValueRow, ...]) -> list[ValueRow]:
    """Largest first; unknown sizes after every known one; ties by id."""
    return sorted(rows, key=lambda r: (r.bytes is None, -(r.bytes or 0), r.id))


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
    verdict = report.extra.get("verdict")
    return (verdict.get("judged_on") or "estimate") if isinstance(verdict, dict) else "estimate"


def region_peaks(report: Report) -> tuple[RegionPeak, ...]:
    """Total, standard and interleaved peaks, from the report's `verdict` when it has
    one (exact, on the worst tile), else from the version-1 fields (the estimate)."""
    budgets = {"total": report.budget_bytes, "standard": standard_budget(report),
               "interleaved": report.interleaved_budget_bytes}
    estimates = {"total": (known(report.effective_peak_bytes), known(report.total_peak_step)),
                 "standard": (known(report.peak.standard), known(report.standard_peak_step)),
                 "interleaved": (known(report.peak.interleaved), known(report.interleaved_peak_step))}
    verdict = report.extra.get("verdict")
    stated = {r["region"]: r for r in verdict.get("regions", [])} if isinstance(verdict, dict) else {}
    out = []
    for region in REGION_ORDER:
        budget = budgets[region]
        estimate, estimate_step = estimates[region]
        if region in stated:
            r = stated[region]
            peak, step, tile = r.get("peak"), r.get("step"), r.get("tile")
            estimate = r.get("estimate", estimate)
        else:
            peak, step, tile = estimate, estimate_step, None
        if peak is None:
            step = None
        out.append(RegionPeak(region, peak, budget, step, tile, None if peak is None else budget - peak,
                              percent(peak, budget), estimate))
    return tuple(out)


def operations(report: Report) -> dict[int, dict[str, Any]]:
    """The report's `operations` by index (empty for a report without them)."""
    ops = report.extra.get("operations")
    return {o["index"]: o for o in ops} if isinstance(ops, list) else {}


def rejected_operation(report: Report) -> dict[str, Any] | None:
    r = report.extra.get("rejected_operation")
    return r if isinstance(r, dict) else None


def verdict_line(report: Report) -> str:
    """The verdict in one line, from the report's own fields (nothing recomputed):
    the first line `tileplan plan` prints. The word follows `fits_budget`."""
    if report.scope != "program":
        rejected = rejected_operation(report)
        where = (f"stopped at operation {rejected.get('index')} ({rejected.get('name')}): {rejected.get('reason')}"
                 if rejected else f"scope {report.scope}")
        unknown = sum(known(v.bytes) is None for v in report.values)
        return f"Not planned: {where}; {unknown} values of unknown size"
    total = region_peaks(report)[0]
    verdict = report.extra.get("verdict")
    if not report.fits_budget and isinstance(verdict, dict) and verdict.get("out_of_memory"):
        return str(verdict["out_of_memory"])
    where = f"worst tile {total.tile} at step {total.step}" if total.tile is not None else f"step {total.step}"
    used = "unknown" if total.peak is None else str(total.peak)
    margin = "unknown" if total.margin is None else f"{total.margin} B"
    word = "Fits" if report.fits_budget else "Does not fit"
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

    def to_json(self) -> dict[str, Any]:
        return {"non_tensor": None if self.non_tensor is None else dict(self.non_tensor),
                "non_tensor_total": self.non_tensor_total, "reserve": self.reserve, "over_reserve": self.over_reserve,
                "placement": self.placement, "pipeline": self.pipeline}


def _count(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else None


def extras(report: Report) -> Extras:
    nt = report.extra.get("non_tensor")
    classes = total = reserve = over = None
    if isinstance(nt, dict):
        found = [(label, _count(nt.get(key))) for key, label in NON_TENSOR_CLASSES]
        if all(b is not None for _, b in found):
            classes = tuple((label, b) for label, b in found if b is not None)
            total, reserve, over = _count(nt.get("total")), _count(nt.get("reserve")), _count(nt.get("over_reserve"))
    placement = None
    section = report.extra.get("placement")
    if isinstance(section, dict) and isinstance(section.get("verdict"), str):
        tiles = section.get("tiles")
        first = tiles[0] if isinstance(tiles, list) and tiles and isinstance(tiles[0], dict) else {}
        height, tile, gaps = _count(first.get("height")), _count(first.get("tile")), first.get("gaps")
        where = f" (tile {tile}: {height} B placed, {gaps} B of gaps)" if height is not None and tile is not None \
            and isinstance(gaps, int) else ""
        placement = f"{section['verdict']}{where}"
    pipeline = None
    stage = report.extra.get("pipeline")
    if isinstance(stage, dict):
        ipu, ipus, layers, split = stage.get("ipu"), stage.get("ipus"), stage.get("layers"), stage.get("layers_per_ipu")
        if _count(ipu) is not None and _count(ipus) is not None and isinstance(layers, list) and len(layers) == 2 \
                and isinstance(split, list):
            pipeline = (f"IPU {ipu} of {ipus} (inference pipeline): layers {layers[0]} to {layers[1] - 1}; "
                        f"layers_per_ipu {split}") if isinstance(layers[1], int) else None
    return Extras(classes, total, reserve, over, placement, pipeline)
