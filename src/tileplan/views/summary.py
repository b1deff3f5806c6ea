"""The summary of a report: the verdict, peaks per region, what is live at the peak,
and usage per step. Plain data (`build_summary`); `tileplan summary` renders it to
the terminal or prints `to_json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tileplan.model.rows import Rows
from tileplan.report.model import Report
from tileplan.views.columns import (
    int_column, largest_rows, SAFE_INT, step_columns, StepColumns, value_columns, ValueRows,
)
from tileplan.views.common import (
    exchange_bytes, Extras, extras, judged_on, operation_brief, operations, precision_display, region_peaks,
    RegionPeak, standard_budget, TileSplit, ValueRow, verdict_line, worst_tile_split,
)

TOP_VALUES = 10
TOP_REJECTIONS = 5


@dataclass(frozen=True, slots=True)
class StepUsage:
    """One step's usage per tile. `standard`/`interleaved` are the planner's estimate
    per region; `total` is what the verdict judges at that step: the worst tile's
    bytes (exact) or the estimate, plus the exchange rows; `tile` is that worst tile
    (None on the estimate). None where unknown. `over`: `total` exceeds the budget, or
    the interleaved region (on the worst tile when exact) its own budget."""

    index: int
    operation: str
    source: int
    execution_count: int
    standard: int | None
    interleaved: int | None
    total: int | None
    tile: int | None
    over: bool

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "operation": self.operation, "source": self.source,
                "execution_count": self.execution_count, "standard": self.standard, "interleaved": self.interleaved,
                "total": self.total, "tile": self.tile, "over": self.over}


class StepUsages(Rows[StepUsage]):
    """The `StepUsage` of every step as columns (numpy), a `StepUsage` built on demand
    per index. `*_known` masks say where `standard`, `interleaved` and `total` are
    known (the column holds 0 elsewhere); `tile` is -1 where there is none."""

    def __init__(self, *, briefs: tuple[str, ...], operation: np.ndarray, source: np.ndarray,
                 execution_count: np.ndarray, standard: np.ndarray, standard_known: np.ndarray,
                 interleaved: np.ndarray, interleaved_known: np.ndarray, total: np.ndarray, total_known: np.ndarray,
                 tile: np.ndarray, over: np.ndarray) -> None:
        self.briefs = briefs
        self.operation, self.source, self.execution_count = operation, source, execution_count
        self.standard, self.standard_known = standard, standard_known
        self.interleaved, self.interleaved_known = interleaved, interleaved_known
        self.total, self.total_known = total, total_known
        self.tile, self.over = tile, over

    def __len__(self) -> int:
        return len(self.source)

    row_name = "step"

    def row(self, i: int) -> StepUsage:
        tile = int(self.tile[i])
        return StepUsage(i, self.briefs[int(self.operation[i])], int(self.source[i]), int(self.execution_count[i]),
                         int(self.standard[i]) if self.standard_known[i] else None,
                         int(self.interleaved[i]) if self.interleaved_known[i] else None,
                         int(self.total[i]) if self.total_known[i] else None, None if tile < 0 else tile,
                         bool(self.over[i]))

    def __iter__(self) -> Iterator[StepUsage]:
        for i in range(len(self)):
            yield self[i]

    def totals(self) -> list[int | None]:
        """`total` of every step, None where unknown."""
        return [int(t) if k else None for t, k in zip(self.total.tolist(), self.total_known.tolist(), strict=True)]

    def to_json(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self]

    def json_lines(self) -> Iterator[str]:
        """Each step's `to_json()` as `json.dumps(..., sort_keys=True, indent=1)`
        writes it one level deep in a list (the text of `tileplan summary --json`),
        straight from the columns: a million steps without a dict each."""
        briefs = [json.dumps(b, ensure_ascii=False) for b in self.briefs]

        def known(values: np.ndarray, mask: np.ndarray) -> list[str]:
            return [str(v) if k else "null" for v, k in zip(values.tolist(), mask.tolist(), strict=True)]

        standard = known(self.standard, self.standard_known)
        interleaved = known(self.interleaved, self.interleaved_known)
        total = known(self.total, self.total_known)
        for i, (count, op, source, tile, over) in enumerate(zip(
                self.execution_count.tolist(), self.operation.tolist(), self.source.tolist(), self.tile.tolist(),
                self.over.tolist(), strict=True)):
            yield (f'  {{\n   "execution_count": {count},\n   "index": {i},\n   "interleaved": {interleaved[i]},\n'
                   f'   "operation": {briefs[op]},\n   "over": {"true" if over else "false"},\n'
                   f'   "source": {source},\n   "standard": {standard[i]},\n'
                   f'   "tile": {"null" if tile < 0 else tile},\n   "total": {total[i]}\n  }}')


@dataclass(frozen=True, slots=True, eq=False)
class Summary:
    """What `tileplan summary` shows, in the order it shows it.

    `peak_step` is the step of the total peak (None when the report does not know
    it: a plan that stopped early); `top_values` are the largest values live there
    (per-tile bytes, largest first), `values_live` how many are live there.
    """

    program: tuple[tuple[str, str], ...]
    scope: str
    fits: bool
    judged_on: str
    verdict: str
    regions: tuple[RegionPeak, ...]
    over_budget_steps: int
    budget_bytes: int
    interleaved_budget_bytes: int
    standard_budget_bytes: int
    exchange_bytes: int | None
    peak_step: int | None
    peak_operation: str | None
    top_values: tuple[ValueRow, ...]
    values_live: int
    steps: StepUsages
    rejections: tuple[tuple[int, str, str], ...]
    rejections_total: int
    extras: Extras | None = None
    #: the exact worst tile's peak split: always live and not always live
    tile_split: TileSplit | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "program": dict(self.program), "scope": self.scope, "fits": self.fits, "judged_on": self.judged_on,
            "verdict": self.verdict, "regions": [r.to_json() for r in self.regions],
            "over_budget_steps": self.over_budget_steps, "budget_bytes": self.budget_bytes,
            "interleaved_budget_bytes": self.interleaved_budget_bytes,
            "standard_budget_bytes": self.standard_budget_bytes, "exchange_bytes": self.exchange_bytes,
            "peak_step": self.peak_step, "peak_operation": self.peak_operation,
            "top_values": [v.to_json() for v in self.top_values], "values_live": self.values_live,
            "steps": self.steps.to_json(),
            "rejections": [{"value": v, "name": n, "reason": r} for v, n, r in self.rejections],
            "rejections_total": self.rejections_total,
            "extras": None if self.extras is None else self.extras.to_json(),
            "tile_split": None if self.tile_split is None else {
                "tile": self.tile_split.tile, "always_live": self.tile_split.resident,
                "not_always_live": self.tile_split.step_dependent, "exchange_rows": self.tile_split.exchange},
        }


#: the program's on/off knobs: their default, label, and words for the default and
#: for the other value
SWITCHES: dict[str, tuple[bool, str, str, str]] = {
    "map_head": (True, "MAP head", "kept", "left out"),
    "unroll": (False, "encoder", "a repeat block", "unrolled"),
    "optimizer_state_offchip": (False, "optimizer state", "on chip", "off chip"),
    "replicated_tensor_sharding": (False, "replicated tensor sharding", "off", "on"),
}


def program_fields(report: Report, defaults: bool = False) -> tuple[tuple[str, str], ...]:
    """The report's `program` (name, machine, policy, options) as text pairs, name first,
    in words: an on/off knob (`SWITCHES`) only when it is not its default unless
    `defaults` (a diff shows both sides), so no `map_head True` and `MAP head left out`
    without it; any other true/false as yes/no; an FP8 precision as people name it."""
    program = report.sections.program
    if program is None:
        return ()
    entries = dict(program.entries)
    out = []
    for key in ["name", *sorted(k for k in entries if k != "name")]:
        if key not in entries:
            continue
        value = entries[key]
        if isinstance(value, bool) and key in SWITCHES:
            default, label, usual, other = SWITCHES[key]
            if value != default or defaults:
                out.append((label, usual if value == default else other))
        elif isinstance(value, bool):
            out.append((key, "yes" if value else "no"))
        else:
            out.append((key, precision_display(str(value))))
    return tuple(out)


def step_usage(report: Report, steps: StepColumns | None = None) -> StepUsages:
    """Usage of every step, judged as the verdict judges it (see `StepUsage`): over
    when the total passes the budget or the interleaved region its own budget.
    Columns in, columns out: no object per step."""
    steps = step_columns(report) if steps is None else steps
    n = steps.count
    exchange = exchange_bytes(report) or 0
    exact = report.sections.exact
    std, std_known = steps.usage["standard"], steps.usage_known["standard"]
    inter, inter_known = steps.usage["interleaved"], steps.usage_known["interleaved"]
    if abs(exchange) >= SAFE_INT:  # an absurd exchange figure: exact integers
        std, inter = std.astype(object), inter.astype(object)
    # the estimate: both regions and the exchange rows, where both are known
    total_known = std_known & inter_known
    total = np.where(total_known, std + inter + exchange, 0)
    tile = np.full(n, -1, dtype=np.int64)
    worst_inter, worst_inter_known = inter, inter_known
    exact_total, exact_tile = (exact.column("total"), exact.column("worst_tile")) if exact is not None else (None, None)
    m = min(len(exact_total), n) if exact_total is not None and exact_tile is not None else 0
    if m and exact is not None and exact_total is not None and exact_tile is not None:
        # the exact worst tile where the report has it (its first m steps)
        total = _concat(int_column(exact_total[:m]) + exchange, total[m:])
        total_known = np.r_[np.ones(m, dtype=bool), total_known[m:]]
        tile = np.r_[int_column(exact_tile[:m]), tile[m:]].astype(np.int64)
        exact_inter = exact.column("interleaved")
        if exact_inter is not None:
            worst_inter = _concat(int_column(exact_inter[:m]), inter[m:])
            worst_inter_known = np.r_[np.ones(m, dtype=bool), inter_known[m:]]
    over = (total_known & (total > report.budget_bytes).astype(bool)) | (
        worst_inter_known & (worst_inter > report.interleaved_budget_bytes).astype(bool))
    briefs = tuple(operation_brief(t) for t in steps.operation_texts)
    return StepUsages(briefs=briefs, operation=steps.operation, source=steps.source,
                      execution_count=steps.execution_count, standard=std, standard_known=std_known,
                      interleaved=inter, interleaved_known=inter_known, total=total, total_known=total_known,
                      tile=tile, over=over)


def _concat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a` then `b`, in exact integers if either holds them."""
    if a.dtype == object or b.dtype == object:
        return np.concatenate([a.astype(object), b.astype(object)])
    return np.concatenate([a, b])


def over_budget_count(report: Report, usage: StepUsages) -> int:
    """Steps over budget as the report's verdict counts them (`verdict.over_budget`),
    so `summary` says what `plan` said; counted from `usage` only for a report
    without a verdict (the reference's)."""
    verdict = report.sections.verdict
    if verdict is not None:
        return verdict.over_budget.steps if verdict.over_budget is not None else 0
    return int(usage.over.sum())


def peak_operation(report: Report, step: int | None, steps: StepColumns | None = None) -> str | None:
    """`Copy of operation 4 (vit.encoder.layer{i}.attention.qkv), runs 27 times`."""
    steps = step_columns(report) if steps is None else steps
    if step is None or not 0 <= step < steps.count:
        return None
    source, count = int(steps.source[step]), int(steps.execution_count[step])
    op = operations(report).get(source)
    text = f"{operation_brief(steps.operation_text(step))} of operation {source}"
    if op is not None:
        text += f" ({op.name})"
    if count > 1:
        text += f", runs {count} times"
    return text


def build_summary(report: Report, top: int = TOP_VALUES) -> Summary:
    steps = step_columns(report)
    cols = value_columns(report, steps)
    regions = region_peaks(report)
    peak_step = regions[0].step
    live = np.zeros(0, dtype=np.int64)
    if peak_step is not None and 0 <= peak_step < steps.count:
        live = cols.live_at(peak_step)
    rows = ValueRows(cols, operations(report))
    usage = step_usage(report, steps)
    return Summary(
        program=program_fields(report), scope=report.scope, fits=report.fits_budget, judged_on=judged_on(report),
        verdict=verdict_line(report), regions=regions, over_budget_steps=over_budget_count(report, usage),
        budget_bytes=report.budget_bytes, interleaved_budget_bytes=report.interleaved_budget_bytes,
        standard_budget_bytes=standard_budget(report), exchange_bytes=exchange_bytes(report),
        peak_step=peak_step, peak_operation=peak_operation(report, peak_step, steps),
        top_values=tuple(rows[int(k)] for k in largest_rows(cols, live, top)), values_live=len(live), steps=usage,
        rejections=tuple((j.value, j.name, j.reason) for j in report.rejections[:TOP_REJECTIONS]),
        rejections_total=len(report.rejections), extras=extras(report), tile_split=worst_tile_split(report),
    )
