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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tileplan.model.timeline import REGIONS
from tileplan.report.model import Report
from tileplan.report.sections import Operation
from tileplan.views.summary import StepUsages, program_fields, step_usage
from tileplan.views.columns import (
    distinct_sorted, first_of_runs, largest_rows, over_intervals, SAFE_INT, step_columns, StepColumns,
    value_columns, ValueColumns, ValueRows,
)
from tileplan.views.common import (
    exchange_bytes, Extras, extras, group_label, judged_on, operations, region_peaks, RegionPeak, standard_budget,
    ValueRow, error_band_text, verdict_line,
)

BANDS_PER_REGION = 10
TOP_ALLOCATIONS = 20
SCRATCH = "scratch"
OTHER = "other groups"


@dataclass(frozen=True, slots=True, eq=False)
class Band:
    """One stacked series: `bytes[i]` of `region` at step i belong to value `group` (or
    to scratch, or to the other groups). `label` names it for people: an
    intermediate's group `operation 4 result 0` is labelled with its operation's name.
    `bytes` is a read-only numpy column (int64; exact integers for an absurd report)."""

    group: str
    label: str
    region: str
    bytes: np.ndarray

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "label": self.label, "region": self.region, "bytes": self.bytes.tolist()}


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
    """One re-plan: the knob turned and its value (both empty for the plan as it is);
    `error`: why it could not be planned (then `fits` is False and the figures None);
    `margin_percent` and `inside_band`: the margin as a share of the tile and whether it
    lies inside tileplan's measured error band (None where the report does not say)."""

    knob: str
    value: str
    fits: bool
    scope: str
    peak: int | None
    margin: int | None
    command: str
    error: str | None = None
    margin_percent: float | None = None
    inside_band: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {"knob": self.knob, "value": self.value, "fits": self.fits, "scope": self.scope, "peak": self.peak,
                "margin": self.margin, "command": self.command, "error": self.error,
                "margin_percent": self.margin_percent, "inside_band": self.inside_band}


class LiveRuns(Mapping[int, tuple[int, ...]]):
    """Value id -> the steps it is live in, as inclusive runs `(first, last, first,
    last, ...)` (one run in every report tileplan writes), read from the value
    columns on demand: linear in the values, never steps x live values."""

    def __init__(self, cols: ValueColumns) -> None:
        self._cols = cols
        order = np.lexsort((cols.first, cols.at))
        self._at, self._first, self._last = cols.at[order], cols.first[order], cols.last[order]
        self._rows = distinct_sorted(self._at)

    def _row(self, vid: int) -> int:
        ids = self._cols.id
        k = int(np.searchsorted(ids, vid)) if ids.dtype != object else next(
            (j for j, v in enumerate(ids) if v == vid), len(ids))
        if k >= len(ids) or ids[k] != vid:
            raise KeyError(vid)
        return k

    def __getitem__(self, vid: int) -> tuple[int, ...]:
        k = self._row(vid)
        lo, hi = np.searchsorted(self._at, k), np.searchsorted(self._at, k, side="right")
        if lo == hi:
            raise KeyError(vid)
        return tuple(int(x) for pair in zip(self._first[lo:hi], self._last[lo:hi], strict=True) for x in pair)

    def __iter__(self) -> Iterator[int]:
        return (int(self._cols.id[k]) for k in self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, first, last) of every run, by row then first."""
        return self._at, self._first, self._last


@dataclass(frozen=True, slots=True, eq=False)
class Liveness:
    """Everything the HTML report and the plot show. `live_runs[id]` are the steps
    value `id` is live in, as inclusive runs (see `LiveRuns`); `values` holds every
    value (by id order, rows built on demand from `columns`). Its size is linear in
    the report's values and steps, never steps x values: per-step figures are numpy
    columns (`steps`, `unknown`, each band's `bytes`)."""

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
    steps: StepUsages
    operations: tuple[tuple[int, str], ...]  # (index, name)
    unknown: np.ndarray
    live_runs: LiveRuns
    bands: tuple[Band, ...]
    peak_step: int | None
    repeats: tuple[RepeatSpan, ...]
    values: ValueRows
    top_allocations: tuple[ValueRow, ...]
    tiles: TileView | None
    what_if: tuple[WhatIfRow, ...] | None
    rejections: tuple[tuple[int, str, str], ...]
    extras: Extras | None = None
    #: the report's worst placed tile (`placement.tiles[0]`, as written) and the names of
    #: the storage groups it places (each after its largest member); None without placement
    placed_tile: dict[str, Any] | None = None
    placed_names: dict[int, str] | None = None
    #: tileplan's measured error band, as text ("-18.8 % to +4.5 %"); None without one
    error_band: str | None = None
    #: what the budget line is: "tensors' budget" where the verdict counts all memory
    #: (the tile less the memory that is not tensors), else "budget"
    budget_label: str = "budget"

    @property
    def columns(self) -> ValueColumns:
        return self.values.cols

    @property
    def live(self) -> tuple[tuple[int, ...], ...]:
        """Per step, the ids of the values live there (sorted), rebuilt from `live_runs`:
        steps x live values in size, so never part of what a page embeds."""
        out: list[list[int]] = [[] for _ in range(len(self.steps))]
        for vid, runs in sorted(self.live_runs.items()):
            for k in range(0, len(runs), 2):
                for i in range(runs[k], runs[k + 1] + 1):
                    out[i].append(vid)
        return tuple(tuple(x) for x in out)

    @property
    def any_unknown(self) -> bool:
        return bool(self.unknown.any())

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
        """The whole view model as JSON (linear in the report; the page embeds a compact
        form of it instead, see `tileplan.render.html`)."""
        return {
            "title": self.title, "program": [list(p) for p in self.program], "scope": self.scope, "fits": self.fits,
            "judged_on": self.judged_on, "verdict": self.verdict, "regions": [r.to_json() for r in self.regions],
            "budget_bytes": self.budget_bytes, "interleaved_budget_bytes": self.interleaved_budget_bytes,
            "standard_budget_bytes": self.standard_budget_bytes, "budget_label": self.budget_label,
            "exchange_bytes": self.exchange_bytes, "steps": self.steps.to_json(),
            "operations": [list(o) for o in self.operations],
            "unknown": self.unknown.tolist(),
            "live_runs": [[vid, list(runs)] for vid, runs in sorted(self.live_runs.items())],
            "bands": [b.to_json() for b in self.bands],
            "peak_step": self.peak_step, "repeats": [r.to_json() for r in self.repeats],
            **self._values_json(),
            "top_allocations": [v.id for v in self.top_allocations],
            "tiles": None if self.tiles is None else self.tiles.to_json(),
            "what_if": None if self.what_if is None else [w.to_json() for w in self.what_if],
            "rejections": [{"value": v, "name": n, "reason": r} for v, n, r in self.rejections],
        }


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def compute_bands(report: Report, cols: ValueColumns | None = None,
                  ops: Mapping[int, Operation] | None = None) -> tuple[tuple[Band, ...], np.ndarray]:
    """The stacked bands of every region (see the module docstring) and, per step,
    how many live values have no known size.

    Linear in the report, on the columns: each storage group's live steps are the
    union of its members' intervals; the groups are ranked by bytes x steps over the
    run, and each band is one difference array over the intervals of its groups."""
    cols = value_columns(report) if cols is None else cols
    steps: StepColumns = cols.steps
    n = steps.count
    unknown_rows = ~cols.known[cols.at]
    unknown = _frozen(over_intervals(n, cols.first[unknown_rows], cols.last[unknown_rows], 1))

    # storage groups: the owner (largest member, ties the lowest id) gives region and value group
    sg = cols.storage_group
    by_id = np.arange(len(cols), dtype=np.int64)  # rows are in id order
    order = by_id[np.argsort(-cols.bytes, kind="stable")]
    order = order[np.argsort(sg[order], kind="stable")]
    sorted_sg = sg[order]
    starts = np.flatnonzero(np.r_[True, sorted_sg[1:] != sorted_sg[:-1]]) if len(order) else by_id
    owner = order[starts]
    code = np.empty(len(cols), dtype=np.int64)  # row -> its storage group's index among `owner`
    code[order] = np.cumsum(np.r_[False, sorted_sg[1:] != sorted_sg[:-1]]) if len(order) else by_id
    some_unknown = np.logical_or.reduceat(~cols.known[order], starts) if len(order) else np.zeros(0, dtype=bool)
    g_size, g_region, g_group = cols.bytes[owner], cols.region[owner], cols.group[owner]

    # each storage group's live steps: the union of its members' intervals, as disjoint runs
    g = code[cols.at]
    o = np.lexsort((cols.first, g))
    g, f, last = g[o], cols.first[o], cols.last[o]
    if len(g):
        reach = np.maximum.accumulate(g * (n + 1) + last) - g * (n + 1)  # the furthest step so far in its group
        new = np.r_[True, (g[1:] != g[:-1]) | (f[1:] > reach[:-1])]
        run = np.flatnonzero(new)
        rg, rf, rl = g[run], f[run], np.maximum.reduceat(last, run)
    else:
        rg = rf = rl = np.zeros(0, dtype=np.int64)
    sized = ~some_unknown[rg] & (g_region[rg] >= 0)
    rg, rf, rl = rg[sized], rf[sized], rl[sized]
    size = g_size[rg]
    key_region, key_group = g_region[rg].astype(np.int64), g_group[rg]

    # bytes x steps and the first step with bytes of every (region, value group) live
    n_groups = len(cols.groups)
    key = key_region * n_groups + key_group
    totals = np.zeros(len(REGIONS) * n_groups, dtype=size.dtype)
    np.add.at(totals, key, size * (rl - rf + 1))
    present = np.zeros(len(totals), dtype=bool)
    present[key] = True
    first = np.full(len(totals), n, dtype=np.int64)
    nonzero = size != 0
    np.minimum.at(first, key[nonzero], rf[nonzero])

    # the groups holding the most bytes over the whole run keep a band; the rest share one
    band_of = np.full(len(totals), -1, dtype=np.int64)
    specs: list[tuple[str, str, str]] = []  # (group, label, region) per band column
    ops = operations(report) if ops is None else ops
    for r, region in enumerate(REGIONS):
        mine = np.flatnonzero(present[r * n_groups:(r + 1) * n_groups])
        ranked = _ranked(mine, totals[r * n_groups + mine], cols.groups)
        kept = ranked[:BANDS_PER_REGION]
        # stack bottom-up: the earliest-live group first, so resident weights lie flat at the bottom
        kept.sort(key=lambda x: (int(first[r * n_groups + x]), -totals[r * n_groups + x], cols.groups[x]))
        for x in kept:
            band_of[r * n_groups + x] = len(specs)
            specs.append((cols.groups[x], group_label(cols.groups[x], ops), region))
        if len(mine) > BANDS_PER_REGION:
            rest = mine[band_of[r * n_groups + mine] < 0]
            band_of[r * n_groups + rest] = len(specs)
            specs.append((OTHER, f"{len(mine) - BANDS_PER_REGION} other groups", region))
        specs.append((SCRATCH, SCRATCH, region))

    column = band_of[key]
    by_band = np.argsort(column, kind="stable")
    edges = np.searchsorted(column[by_band], np.arange(len(specs) + 1))
    bands = []
    for b, (group, label, region) in enumerate(specs):
        if group == SCRATCH:
            series = steps.scratch[region]
            if not series.any():
                continue
        else:
            pick = by_band[edges[b]:edges[b + 1]]
            series = over_intervals(n, rf[pick], rl[pick], size[pick])
        bands.append(Band(group, label, region, _frozen(np.array(series, copy=True))))
    return tuple(bands), unknown


def _ranked(mine: np.ndarray, totals: np.ndarray, names: tuple[str, ...]) -> list[int]:
    """The `BANDS_PER_REGION` first of `mine` by (-total, name) (the rest unordered
    after them): only the candidates at or above the cut are sorted by name."""
    if len(mine) > BANDS_PER_REGION and totals.dtype != object:
        cut = np.partition(totals, len(totals) - BANDS_PER_REGION)[len(totals) - BANDS_PER_REGION]
        top = totals >= cut
        head = sorted(zip(mine[top].tolist(), totals[top].tolist(), strict=True), key=lambda x: (-x[1], names[x[0]]))
        return [x for x, _ in head] + mine[~top].tolist()
    pairs = sorted(zip(mine.tolist(), totals.tolist(), strict=True), key=lambda x: (-x[1], names[x[0]]))
    return [x for x, _ in pairs]


def step_heights(lv: Liveness) -> np.ndarray:
    """Per step, the height a chart gives it: its stacked bands, or its total (the
    exact worst tile with the exchange rows) where that is higher."""
    n = len(lv.steps)
    stack = np.zeros(n, dtype=np.int64)
    for b in lv.bands:
        stack = stack + b.bytes
    total = np.where(lv.steps.total_known, lv.steps.total, 0)
    return np.maximum(stack, total) if n else stack


def chart_buckets(height: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, last, shown) step of each chart column: one step per column up to
    `most` steps, else `most` runs of consecutive steps (column c holds steps c x n //
    most to (c + 1) x n // most - 1), each drawn as its tallest step (the first of
    equals), so that no peak is lost. Linear in the steps."""
    n = len(height)
    m = min(n, most)
    c = np.arange(m, dtype=np.int64)
    lo, hi = c * n // m if m else c, (c + 1) * n // m - 1 if m else c
    if m == n:
        return lo, hi, c
    tallest = np.maximum.reduceat(height, lo)
    at = np.flatnonzero(height == np.repeat(tallest, hi - lo + 1))
    column = np.searchsorted(lo, at, side="right") - 1
    _, first = first_of_runs(column)
    return lo, hi, at[first]


def column_max(values: np.ndarray, known: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(largest known value, any known) of each column starting at `lo`."""
    if not len(lo):
        return values[:0], known[:0]
    floor = values[known].min() if known.any() else 0
    return np.maximum.reduceat(np.where(known, values, floor), lo), np.logical_or.reduceat(known, lo)


def first_in_column(mask: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """The first step of each column where `mask` holds, -1 where none does."""
    out = np.full(len(lo), -1, dtype=np.int64)
    at = np.flatnonzero(mask)
    column = np.searchsorted(lo, at, side="right") - 1
    cols, first = first_of_runs(column)
    out[cols] = at[first]
    return out


def live_runs(report: Report) -> LiveRuns:
    """Value id -> the steps it is live in, as inclusive runs `(first, last, first,
    last, ...)`: what a page needs to list any step's live values, in space linear in
    the values' runs rather than steps x live values."""
    return LiveRuns(value_columns(report))


def repeat_spans(report: Report, ops: Mapping[int, Operation] | None = None) -> tuple[RepeatSpan, ...]:
    """Step ranges of repeat blocks: consecutive operations with the same execution
    count > 1 whose steps follow one another."""
    spans: list[RepeatSpan] = []
    if ops is None:
        listed = report.sections.operations
        repeated = listed.repeated() if listed is not None else []
    else:
        repeated = [o for o in ops.values() if o.execution_count > 1]
    for op in sorted(repeated, key=lambda o: o.steps[0]):
        count = op.execution_count
        first, last = op.steps
        if spans and spans[-1].count == count and spans[-1].last_step + 1 == first:
            prev = spans[-1]
            spans[-1] = RepeatSpan(prev.first_step, last, count, (*prev.operations, op.name))
        else:
            spans.append(RepeatSpan(first, last, count, (op.name,)))
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
    exact = report.sections.exact
    if exact is None or exact.tiles is None:
        return None
    tiles, hist = exact.tiles, exact.histogram
    first = hist.first_bytes if hist is not None and hist.first_bytes is not None else 0
    width = hist.bin_bytes if hist is not None and hist.bin_bytes is not None else 1
    return TileView(
        peak=tiles.peak, peak_step=tiles.peak_step, peak_resident=tiles.peak_resident,
        histogram_first=first, histogram_bin=width, histogram_counts=hist.counts if hist is not None else (),
        top_tiles=tuple((t.tile, t.bytes, t.step) for t in exact.top_tiles),
        columns=heat_columns(len(tiles.peak)), ratio_exact_to_estimate=exact.ratio_exact_to_estimate)


def what_if_rows(report: Report) -> tuple[WhatIfRow, ...] | None:
    """The what-if table (`baseline` first as "as planned"), or None if the report has
    none. The table may be an object with `baseline` and `rows` or a bare list."""
    wi = report.sections.what_if
    if wi is None:
        return None
    rows = [WhatIfRow(r.knob or "", r.value or "", bool(r.fits), r.scope or "program", r.peak, r.margin,
                      r.command or "", r.error, r.margin_percent, r.inside_band) for r in wi.rows]
    if wi.baseline is not None:
        b = wi.baseline
        rows.insert(0, WhatIfRow("as planned", "", bool(b.fits), b.scope or "program", b.peak, b.margin,
                                 b.command or "", None, b.margin_percent, b.inside_band))
    return tuple(rows)


def worst_placed_tile(report: Report, cols: ValueColumns) -> tuple[dict[str, Any] | None, dict[int, str] | None]:
    """The first tile of the report's `placement` section (its worst, as JSON: the
    address map draws it) and a name for each storage group among its buffers: the
    group's largest member (ties: the lowest id). (None, None) without a placement
    section or tiles."""
    section = report.sections.placement
    if section is None or not section.tiles:
        return None, None
    placed = section.tiles[0]
    tile = placed.to_json()
    wanted = {b.group for b in placed.buffers if b.group is not None} if placed.buffers is not None else set()
    sg = cols.storage_group
    if sg.dtype == object:
        rows = [k for k, g in enumerate(sg.tolist()) if g in wanted]
    else:
        small = np.array([g for g in wanted if abs(g) < SAFE_INT], dtype=np.int64)
        rows = np.flatnonzero(np.isin(sg, small)).tolist() if len(small) else []
    best: dict[int, tuple[tuple[int, int], str]] = {}
    for k in rows:  # rows are in id order: the first of the largest is the lowest id
        g, key = int(sg[k]), (-int(cols.bytes[k]), k)
        if g not in best or key < best[g][0]:
            best[g] = (key, cols.values[k].name)
    return tile, {g: name for g, (_, name) in sorted(best.items())}


def build_liveness(report: Report, top: int = TOP_ALLOCATIONS) -> Liveness:
    steps = step_columns(report)
    cols = value_columns(report, steps)
    ops, listed = operations(report), report.sections.operations
    bands, unknown = compute_bands(report, cols, ops)
    regions = region_peaks(report)
    rows = ValueRows(cols, ops)
    program = program_fields(report)
    title = dict(program).get("name", "tileplan report")
    largest = largest_rows(cols, np.arange(len(cols), dtype=np.int64), top)
    placed_tile, placed_names = worst_placed_tile(report, cols)
    nt = report.sections.non_tensor
    return Liveness(
        title=title, program=program, scope=report.scope, fits=report.fits_budget, judged_on=judged_on(report),
        verdict=verdict_line(report), regions=regions, budget_bytes=report.budget_bytes,
        interleaved_budget_bytes=report.interleaved_budget_bytes, standard_budget_bytes=standard_budget(report),
        exchange_bytes=exchange_bytes(report), steps=step_usage(report, steps),
        operations=tuple(listed.names()) if listed is not None else (), unknown=unknown,
        live_runs=LiveRuns(cols), bands=bands, peak_step=regions[0].step,
        repeats=repeat_spans(report), values=rows, top_allocations=tuple(rows[int(k)] for k in largest),
        tiles=tile_view(report), what_if=what_if_rows(report), extras=extras(report),
        rejections=tuple((j.value, j.name, j.reason) for j in report.rejections),
        placed_tile=placed_tile, placed_names=placed_names, error_band=error_band_text(report),
        budget_label="tensors' budget" if nt is not None and nt.in_verdict else "budget",
    )
