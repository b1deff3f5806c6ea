"""The liveness view: usage per step stacked by value group, per region, with the
budgets, the peak, the repeat blocks, the values live in each step, the largest
allocations, the per-tile figures and the what-if table. Plain data from a `Report`;
`render.html` and `render.plot` draw it.

Stacking. A step's usage of a region is its live storage groups (each counted once,
at its largest member's bytes) plus its scratch. A storage group's bytes are drawn in
the band of its largest member's value group (ties: the lowest value id), so the
bands of a region add up to the step's usage exactly; scratch has a band of its own.
The `BANDS_PER_REGION` value groups with the largest peak keep their band, the rest
share one "other groups" band. Values of unknown size are in no band: the step
counts them in `unknown` and its usage is None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tileplan.model.timeline import REGIONS
from tileplan.report.format import Report
from tileplan.report.summary import StepUsage, program_fields, step_usage
from tileplan.report.views import (
    RegionPeak,
    ValueRow,
    by_bytes,
    exchange_bytes,
    group_label,
    judged_on,
    known,
    operations,
    region_peaks,
    standard_budget,
    value_rows,
    verdict_line,
)

BANDS_PER_REGION = 10
TOP_ALLOCATIONS = 20
SCRATCH = "scratch"
OTHER = "other groups"


@dataclass(frozen=True, slots=True)
class Band:
    """One stacked series: `bytes[i]` of `region` at step i belong to value `group` (or
    to scratch, or to the other groups). `label` names it for people: an
    intermediate's group `operation 4 result 0` is labelled with its operation's name."""

    group: str
    label: str
    region: str
    bytes: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "label": self.label, "region": self.region, "bytes": list(self.bytes)}


@dataclass(frozen=True, slots=True)
class RepeatSpan:
    """Steps [first_step, last_step] run `count` times by a repeat block (consecutive
    operations with the same execution count)."""

    first_step: int
    last_step: int
    count: int
    operations: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"first_step": self.first_step, "last_step": self.last_step, "count": self.count,
                "operations": list(self.operations)}


@dataclass(frozen=True, slots=True)
class TileView:
    """Per-tile figures of the exact accounting: each tile's peak bytes, the step of
    it and its resident part; a histogram of the peaks (`first_bytes` + i x
    `bin_bytes`); `columns` for a heat map (tile t at row t // columns)."""

    peak: tuple[int, ...]
    peak_step: tuple[int, ...]
    peak_resident: tuple[int, ...]
    histogram_first: int
    histogram_bin: int
    histogram_counts: tuple[int, ...]
    top_tiles: tuple[tuple[int, int, int], ...]  # (tile, bytes, step)
    columns: int
    ratio_exact_to_estimate: float | None

    def to_json(self) -> dict[str, Any]:
        return {"peak": list(self.peak), "peak_step": list(self.peak_step), "peak_resident": list(self.peak_resident),
                "histogram": {"first_bytes": self.histogram_first, "bin_bytes": self.histogram_bin,
                              "counts": list(self.histogram_counts)},
                "top_tiles": [{"tile": t, "bytes": b, "step": s} for t, b, s in self.top_tiles],
                "columns": self.columns, "ratio_exact_to_estimate": self.ratio_exact_to_estimate}


@dataclass(frozen=True, slots=True)
class WhatIfRow:
    """One re-plan: the knob turned and its value (both empty for the plan as it is)."""

    knob: str
    value: str
    fits: bool
    scope: str
    peak: int | None
    margin: int | None
    command: str

    def to_json(self) -> dict[str, Any]:
        return {"knob": self.knob, "value": self.value, "fits": self.fits, "scope": self.scope, "peak": self.peak,
                "margin": self.margin, "command": self.command}


@dataclass(frozen=True, slots=True)
class Liveness:
    """Everything the HTML report and the plot show. `live[i]` are the ids of the
    values live at step i; `values` holds every value (by id order)."""

    title: str
    program: tuple[tuple[str, str], ...]
    scope: str
    fits: bool
    judged_on: str
    verdict: str
    regions: tuple[RegionPeak, ...]
    budget_bytes: int
    interleaved_budget_bytes: int
    standard_budget_bytes: int
    exchange_bytes: int | None
    steps: tuple[StepUsage, ...]
    operations: tuple[tuple[int, str], ...]  # (index, name)
    unknown: tuple[int, ...]
    live: tuple[tuple[int, ...], ...]
    bands: tuple[Band, ...]
    peak_step: int | None
    repeats: tuple[RepeatSpan, ...]
    values: tuple[ValueRow, ...]
    top_allocations: tuple[ValueRow, ...]
    tiles: TileView | None
    what_if: tuple[WhatIfRow, ...] | None
    rejections: tuple[tuple[int, str, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title, "program": [list(p) for p in self.program], "scope": self.scope, "fits": self.fits,
            "judged_on": self.judged_on, "verdict": self.verdict, "regions": [r.to_json() for r in self.regions],
            "budget_bytes": self.budget_bytes, "interleaved_budget_bytes": self.interleaved_budget_bytes,
            "standard_budget_bytes": self.standard_budget_bytes, "exchange_bytes": self.exchange_bytes,
            "steps": [s.to_json() for s in self.steps], "operations": [list(o) for o in self.operations],
            "unknown": list(self.unknown),
            "live": [list(x) for x in self.live], "bands": [b.to_json() for b in self.bands],
            "peak_step": self.peak_step, "repeats": [r.to_json() for r in self.repeats],
            "values": [v.to_json() for v in self.values],
            "top_allocations": [v.id for v in self.top_allocations],
            "tiles": None if self.tiles is None else self.tiles.to_json(),
            "what_if": None if self.what_if is None else [w.to_json() for w in self.what_if],
            "rejections": [{"value": v, "name": n, "reason": r} for v, n, r in self.rejections],
        }


def compute_bands(report: Report) -> tuple[tuple[Band, ...], tuple[int, ...]]:
    """The stacked bands of every region (see the module docstring) and, per step,
    how many live values have no known size."""
    values = {v.id: v for v in report.values}
    # one owner per storage group: its largest member (ties: lowest id)
    members: dict[int, list] = {}
    for v in sorted(report.values, key=lambda v: v.id):
        members.setdefault(v.storage_group, []).append(v)
    owner: dict[int, tuple[str, str, int | None]] = {}
    for gid, vs in members.items():
        sizes = [known(v.bytes) for v in vs]
        size = None if any(s is None for s in sizes) else max(sizes)  # type: ignore[type-var]
        top = min(vs, key=lambda v: (-(known(v.bytes) or 0), v.id))
        owner[gid] = (top.region, top.group, size)

    # bytes per (region, group) per step
    n = len(report.steps)
    series: dict[tuple[str, str], list[int]] = {}
    unknown = []
    for i, s in enumerate(report.steps):
        missing = sum(known(values[vid].bytes) is None for vid in s.live)
        unknown.append(missing)
        for gid in sorted({values[vid].storage_group for vid in s.live}):
            region, group, size = owner[gid]
            if size is not None:
                series.setdefault((region, group), [0] * n)[i] += size
        for region in REGIONS:
            scratch = s.scratch.get(region, 0)
            if scratch:
                series.setdefault((region, SCRATCH), [0] * n)[i] += scratch

    # the groups holding the most bytes over the whole run (bytes x steps) keep a band
    ops = operations(report)
    bands = []
    for region in REGIONS:
        groups = [(g, b) for (r, g), b in series.items() if r == region and g != SCRATCH]
        ranked = sorted(groups, key=lambda gb: (-sum(gb[1]), gb[0]))
        kept, rest = ranked[:BANDS_PER_REGION], ranked[BANDS_PER_REGION:]
        # stack bottom-up: the earliest-live group first, so resident weights lie flat at the bottom
        kept.sort(key=lambda gb: (next((i for i, x in enumerate(gb[1]) if x), n), -sum(gb[1]), gb[0]))
        bands += [Band(g, group_label(g, ops), region, tuple(b)) for g, b in kept]
        if rest:
            bands.append(Band(OTHER, f"{len(rest)} other groups", region,
                              tuple(sum(col) for col in zip(*(b for _, b in rest), strict=True))))
        if (region, SCRATCH) in series:
            bands.append(Band(SCRATCH, SCRATCH, region, tuple(series[(region, SCRATCH)])))
    return tuple(bands), tuple(unknown)


def repeat_spans(report: Report) -> tuple[RepeatSpan, ...]:
    """Step ranges of repeat blocks: consecutive operations with the same execution
    count > 1 whose steps follow one another."""
    spans: list[RepeatSpan] = []
    for op in sorted(operations(report).values(), key=lambda o: o["steps"][0]):
        count = op.get("execution_count", 1)
        first, last = op["steps"]
        if count <= 1:
            continue
        if spans and spans[-1].count == count and spans[-1].last_step + 1 == first:
            prev = spans[-1]
            spans[-1] = RepeatSpan(prev.first_step, last, count, (*prev.operations, op["name"]))
        else:
            spans.append(RepeatSpan(first, last, count, (op["name"],)))
    return tuple(spans)


def heat_columns(tiles: int) -> int:
    """Columns of a tile heat map: the smallest divisor of `tiles` at least its square
    root when that keeps the map at most twice as wide as high (1472 -> 46 x 32),
    else the rounded-up square root."""
    root = math.isqrt(tiles)
    for c in range(max(1, root), 2 * root + 2):
        if tiles % c == 0 and c * c >= tiles and c <= 2 * (tiles // c):
            return c
    return max(1, math.ceil(math.sqrt(tiles)))


def tile_view(report: Report) -> TileView | None:
    exact = report.extra.get("exact")
    if not isinstance(exact, dict) or "tiles" not in exact:
        return None
    tiles, hist = exact["tiles"], exact.get("histogram", {})
    return TileView(
        peak=tuple(tiles["peak"]), peak_step=tuple(tiles["peak_step"]), peak_resident=tuple(tiles["peak_resident"]),
        histogram_first=hist.get("first_bytes", 0), histogram_bin=hist.get("bin_bytes", 1),
        histogram_counts=tuple(hist.get("counts", ())),
        top_tiles=tuple((t["tile"], t["bytes"], t["step"]) for t in exact.get("top_tiles", [])),
        columns=heat_columns(len(tiles["peak"])), ratio_exact_to_estimate=exact.get("ratio_exact_to_estimate"))


def what_if_rows(report: Report) -> tuple[WhatIfRow, ...] | None:
    """The what-if table (`baseline` first as "as planned"), or None if the report has
    none. Accepts the table as an object with `baseline` and `rows` or as a bare list."""
    wi = report.extra.get("what_if")
    if wi is None:
        return None
    rows = wi if isinstance(wi, list) else list(wi.get("rows", []))
    if isinstance(wi, dict) and isinstance(wi.get("baseline"), dict):
        rows = [{"knob": "as planned", "value": "", **wi["baseline"]}, *rows]
    return tuple(WhatIfRow(str(r.get("knob", "")), str(r.get("value", "")), bool(r.get("fits")),
                           str(r.get("scope", "program")), r.get("peak"), r.get("margin"), str(r.get("command", "")))
                 for r in rows)


def build_liveness(report: Report, top: int = TOP_ALLOCATIONS) -> Liveness:
    bands, unknown = compute_bands(report)
    regions = region_peaks(report)
    rows = value_rows(report)
    program = program_fields(report)
    title = dict(program).get("name", "tileplan report")
    return Liveness(
        title=title, program=program, scope=report.scope, fits=report.fits_budget, judged_on=judged_on(report),
        verdict=verdict_line(report), regions=regions, budget_bytes=report.budget_bytes,
        interleaved_budget_bytes=report.interleaved_budget_bytes, standard_budget_bytes=standard_budget(report),
        exchange_bytes=exchange_bytes(report), steps=step_usage(report),
        operations=tuple((i, str(o["name"])) for i, o in sorted(operations(report).items())), unknown=unknown,
        live=tuple(tuple(sorted(s.live)) for s in report.steps), bands=bands, peak_step=regions[0].step,
        repeats=repeat_spans(report), values=rows, top_allocations=tuple(by_bytes(rows)[:top]),
        tiles=tile_view(report), what_if=what_if_rows(report),
        rejections=tuple((j.value, j.name, j.reason) for j in report.rejections),
    )
