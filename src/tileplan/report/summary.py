"""The summary of a report: the verdict, peaks per region, what is live at the peak,
and usage per step. Plain data (`build_summary`); `tileplan summary` renders it to
the terminal or prints `to_json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tileplan.report.format import Report
from tileplan.report.views import (
    Extras,
    RegionPeak,
    ValueRow,
    by_bytes,
    extras,
    exchange_bytes,
    judged_on,
    known,
    operation_brief,
    operations,
    precision_display,
    region_peaks,
    standard_budget,
    value_rows,
    verdict_line,
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


@dataclass(frozen=True, slots=True)
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
    steps: tuple[StepUsage, ...]
    rejections: tuple[tuple[int, str, str], ...]
    rejections_total: int
    extras: Extras | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "program": dict(self.program), "scope": self.scope, "fits": self.fits, "judged_on": self.judged_on,
            "verdict": self.verdict, "regions": [r.to_json() for r in self.regions],
            "over_budget_steps": self.over_budget_steps, "budget_bytes": self.budget_bytes,
            "interleaved_budget_bytes": self.interleaved_budget_bytes,
            "standard_budget_bytes": self.standard_budget_bytes, "exchange_bytes": self.exchange_bytes,
            "peak_step": self.peak_step, "peak_operation": self.peak_operation,
            "top_values": [v.to_json() for v in self.top_values], "values_live": self.values_live,
            "steps": [s.to_json() for s in self.steps],
            "rejections": [{"value": v, "name": n, "reason": r} for v, n, r in self.rejections],
            "rejections_total": self.rejections_total,
            "extras": None if self.extras is None else self.extras.to_json(),
        }


def program_fields(report: Report) -> tuple[tuple[str, str], ...]:
    """The report's `program` (name, machine, policy, options) as text pairs, name first."""
    program = report.extra.get("program")
    if not isinstance(program, dict):
        return ()
    keys = ["name", *sorted(k for k in program if k != "name")]
    return tuple((k, precision_display(str(program[k]))) for k in keys if k in program)


def step_usage(report: Report) -> tuple[StepUsage, ...]:
    """Usage of every step, judged as the verdict judges it (see `StepUsage`): over
    when the total passes the budget or the interleaved region its own budget."""
    exchange = exchange_bytes(report) or 0
    exact = report.extra.get("exact")
    rows = exact.get("steps") if isinstance(exact, dict) else None
    columns = exact.get("steps_columns", []) if isinstance(exact, dict) else []
    out = []
    for s in report.steps:
        std, inter = known(s.usage.get("standard")), known(s.usage.get("interleaved"))
        worst_inter = inter
        if rows is not None and s.index < len(rows):
            row = dict(zip(columns, rows[s.index], strict=True))
            total, tile = row["total"] + exchange, row["worst_tile"]
            worst_inter = row.get("interleaved", inter)
        else:
            total = None if std is None or inter is None else std + inter + exchange
            tile = None
        over = ((total is not None and total > report.budget_bytes)
                or (worst_inter is not None and worst_inter > report.interleaved_budget_bytes))
        out.append(StepUsage(s.index, operation_brief(s.operation), s.source, s.execution_count, std, inter,
                             total, tile, over))
    return tuple(out)


def over_budget_count(report: Report, usage: tuple[StepUsage, ...]) -> int:
    """Steps over budget as the report's verdict counts them (`verdict.over_budget`),
    so `summary` says what `plan` said; counted from `usage` only for a report
    without a verdict (the reference's)."""
    verdict = report.extra.get("verdict")
    if isinstance(verdict, dict) and "over_budget" in verdict:
        over = verdict["over_budget"]
        return int(over["steps"]) if isinstance(over, dict) else 0
    return sum(s.over for s in usage)


def peak_operation(report: Report, step: int | None) -> str | None:
    """`Copy of operation 4 (vit.encoder.layer{i}.attention.qkv), runs 27 times`."""
    if step is None or not 0 <= step < len(report.steps):
        return None
    s = report.steps[step]
    op = operations(report).get(s.source)
    text = f"{operation_brief(s.operation)} of operation {s.source}"
    if op is not None:
        text += f" ({op['name']})"
    if s.execution_count > 1:
        text += f", runs {s.execution_count} times"
    return text


def build_summary(report: Report, top: int = TOP_VALUES) -> Summary:
    regions = region_peaks(report)
    peak_step = regions[0].step
    rows = value_rows(report)
    live: list[ValueRow] = []
    if peak_step is not None and 0 <= peak_step < len(report.steps):
        at_peak = set(report.steps[peak_step].live)
        live = [r for r in rows if r.id in at_peak]
    usage = step_usage(report)
    return Summary(
        program=program_fields(report), scope=report.scope, fits=report.fits_budget, judged_on=judged_on(report),
        verdict=verdict_line(report), regions=regions, over_budget_steps=over_budget_count(report, usage),
        budget_bytes=report.budget_bytes, interleaved_budget_bytes=report.interleaved_budget_bytes,
        standard_budget_bytes=standard_budget(report), exchange_bytes=exchange_bytes(report),
        peak_step=peak_step, peak_operation=peak_operation(report, peak_step),
        top_values=tuple(by_bytes(live)[:top]), values_live=len(live), steps=usage,
        rejections=tuple((j.value, j.name, j.reason) for j in report.rejections[:TOP_REJECTIONS]),
        rejections_total=len(report.rejections), extras=extras(report),
    )
