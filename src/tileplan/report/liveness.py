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
    Extras,
    RegionPeak,
    ValueRow,
    by_bytes,
    extras,
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
    """Everything the HTML report and the plot show. `live_runs[id]` are the steps
    value `id` is live in, as inclusive runs (see `live_runs`); `values` holds every
    value (by id order). Its size is linear in the report's values and steps, never
    steps x values."""

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
    live_runs: dict[int, tuple[int, ...]]
    bands: tuple[Band, ...]
    peak_step: int | None
    repeats: tuple[RepeatSpan, ...]
    values: tuple[ValueRow, ...]
    top_allocations: tuple[ValueRow, ...]
    tiles: TileView | None
    what_if: tuple[WhatIfRow, ...] | None
    rejections: tuple[tuple[int, str, str], ...]
    extras: Extras | None = None

    @property
    def live(self) -> tuple[tuple[int, ...], ...]:
        """Per step, the ids of the values live there (sorted), rebuilt from `live_runs`:
        steps x live values in size, so never part of what a page embeds."""
        out: list[list[int]] = [[] for _ in self.steps]
        for vid, runs in sorted(self.live_runs.items()):
            for k in range(0, len(runs), 2):
                for i in range(runs[k], runs[k + 1] + 1):
                    out[i].append(vid)
        return tuple(tuple(x) for x in out)

    def _values_json(self) -> dict[str, Any]:
        """`values` with each layout's full text given once, in `layout_texts`, and
        referred to by its index (a few distinct layouts serve thousands of values)."""
        texts: dict[str, int] = {}
        rows = []
        for v in self.values:
            row = v.to_json()
            row["layout_text"] = texts.setdefault(v.layout_text, len(texts))
            rows.append(row)
        return {"values": rows, "layout_texts": list(texts)}

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title, "program": [list(p) for p in self.program], "scope": self.scope, "fits": self.fits,
            "judged_on": self.judged_on, "verdict": self.verdict, "regions": [r.to_json() for r in self.regions],
            "budget_bytes": self.budget_bytes, "interleaved_budget_bytes": self.interleaved_budget_bytes,
            "standard_budget_bytes": self.standard_budget_bytes, "exchange_bytes": self.exchange_bytes,
            "steps": [s.to_json() for s in self.steps], "operations": [list(o) for o in self.operations],
            "unknown": list(self.unknown),
            "live_runs": [[vid, list(runs)] for vid, runs in sorted(self.live_runs.items())],
            "bands": [b.to_json() for b in self.bands],
            "peak_step": self.peak_step, "repeats": [r.to_json() for r in self.repeats],
            **self._values_json(),
            "top_allocations": [v.id for v in self.top_allocations],
            "tiles": None if self.tiles is None else self.tiles.to_json(),
            "what_if": None if self.what_if is None else [w.to_json() for w in self.what_if],
            "rejections": [{"value": v, "name": n, "reason": r} for v, n, r in self.rejections],
        }


def _storage_owners(report: Report) -> dict[int, tuple[str, str, int | None]]:
    """Storage group -> (region, value group, bytes) of its largest member (ties: the
    lowest id); bytes None when a member's size is unknown."""
    owner: dict[int, tuple[str, str, int | None, int, int]] = {}  # + (largest known bytes, id) for ties
    unknown_size: set[int] = set()
    for v in report.values:
        size = known(v.bytes)
        if size is None:
            unknown_size.add(v.storage_group)
        key = (size or 0, -v.id)
        held = owner.get(v.storage_group)
        if held is None or key > (held[3], -held[4]):
            owner[v.storage_group] = (v.region, v.group, None, size or 0, v.id)
    return {gid: (region, group, None if gid in unknown_size else top)
            for gid, (region, group, _, top, _) in owner.items()}


def compute_bands(report: Report) -> tuple[tuple[Band, ...], tuple[int, ...]]:
    """The stacked bands of every region (see the module docstring) and, per step,
    how many live values have no known size.

    Linear in the report: one pass totals each (region, value group) over the run and
    finds the groups that keep a band; a second pass fills only those bands and the
    "other groups" band, step by step (never an array per group)."""
    values = {v.id: v for v in report.values}
    owner = _storage_owners(report)
    n = len(report.steps)

    # pass 1: bytes x steps and the first step of every (region, group); the unknowns; scratch
    totals: dict[tuple[str, str], int] = {}
    first: dict[tuple[str, str], int] = {}
    unknown = []
    scratch = {region: [0] * n for region in REGIONS}
    for i, s in enumerate(report.steps):
        unknown.append(sum(known(values[vid].bytes) is None for vid in s.live))
        for gid in {values[vid].storage_group for vid in s.live}:
            region, group, size = owner[gid]
            if size is not None:
                key = (region, group)
                totals[key] = totals.get(key, 0) + size
                if size:
                    first.setdefault(key, i)
        for region in REGIONS:
            scratch[region][i] = s.scratch.get(region, 0)

    # the groups holding the most bytes over the whole run keep a band
    kept: dict[tuple[str, str], list[int]] = {}
    rest: dict[str, int] = {}
    for region in REGIONS:
        ranked = sorted((g for (r, g) in totals if r == region), key=lambda g: (-totals[(region, g)], g))
        for g in ranked[:BANDS_PER_REGION]:
            kept[(region, g)] = [0] * n
        if len(ranked) > BANDS_PER_REGION:
            rest[region] = len(ranked) - BANDS_PER_REGION
    other = {region: [0] * n for region in rest}

    # pass 2: fill the kept bands and the other groups' band
    for i, s in enumerate(report.steps):
        for gid in {values[vid].storage_group for vid in s.live}:
            region, group, size = owner[gid]
            if not size:
                continue
            band = kept.get((region, group))
            if band is not None:
                band[i] += size
            else:
                other[region][i] += size

    ops = operations(report)
    bands = []
    for region in REGIONS:
        # stack bottom-up: the earliest-live group first, so resident weights lie flat at the bottom
        mine = sorted((g for (r, g) in kept if r == region),
                      key=lambda g: (first.get((region, g), n), -totals[(region, g)], g))
        bands += [Band(g, group_label(g, ops), region, tuple(kept[(region, g)])) for g in mine]
        if region in rest:
            bands.append(Band(OTHER, f"{rest[region]} other groups", region, tuple(other[region])))
        if any(scratch[region]):
            bands.append(Band(SCRATCH, SCRATCH, region, tuple(scratch[region])))
    return tuple(bands), tuple(unknown)


def live_runs(report: Report) -> dict[int, tuple[int, ...]]:
    """Value id -> the steps it is live in, as inclusive runs `(first, last, first,
    last, ...)`: what a page needs to list any step's live values, in space linear in
    the values' runs rather than steps x live values."""
    runs: dict[int, list[int]] = {}
    for s in report.steps:
        for vid in s.live:
            r = runs.get(vid)
            if r is None:
                runs[vid] = [s.index, s.index]
            elif r[-1] == s.index - 1:
                r[-1] = s.index
            elif r[-1] != s.index:  # a value listed twice in a step counts once
                r += (s.index, s.index)
    return {vid: tuple(r) for vid, r in sorted(runs.items())}


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
    if not isinstance(exact, dict) or exact.get("tiles") is None:
        return None
    tiles, hist = exact["tiles"], exact.get("histogram") or {}
    return TileView(
        peak=tuple(tiles["peak"]), peak_step=tuple(tiles["peak_step"]), peak_resident=tuple(tiles["peak_resident"]),
        histogram_first=hist.get("first_bytes", 0), histogram_bin=hist.get("bin_bytes", 1),
        histogram_counts=tuple(hist.get("counts") or ()),
        top_tiles=tuple((t["tile"], t["bytes"], t["step"]) for t in exact.get("top_tiles") or []),
        columns=heat_columns(len(tiles["peak"])), ratio_exact_to_estimate=exact.get("ratio_exact_to_estimate"))


def what_if_rows(report: Report) -> tuple[WhatIfRow, ...] | None:
    """The what-if table (`baseline` first as "as planned"), or None if the report has
    none. Accepts the table as an object with `baseline` and `rows` or as a bare list."""
    wi = report.extra.get("what_if")
    if wi is None:
        return None
    rows = wi if isinstance(wi, list) else list(wi.get("rows") or [])
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
        live_runs=live_runs(report), bands=bands, peak_step=regions[0].step,
        repeats=repeat_spans(report), values=rows, top_allocations=tuple(by_bytes(rows)[:top]),
        tiles=tile_view(report), what_if=what_if_rows(report), extras=extras(report),
        rejections=tuple((j.value, j.name, j.reason) for j in report.rejections),
    )
