"""`tileplan check`: re-derive every number of a report from the report alone, with
check's own code and the rules of docs/report-format.md.

It imports only the model (layouts, precisions, the timeline's types, machine limits),
the errors, the report's format (`tileplan.report`: the `Report`, its typed sections)
and its own modules: nothing of the planner, the lowering, the operators, the
importers or the application layer, where the report's builder lives
(`tileplan.app.build`), neither directly nor through what it imports
(tests/test_import_cycles.py), so a report passing check is two implementations
agreeing, not one agreeing with itself.
Derived sections are made as the typed sections (one declaration of their shape) and
compared with the report's JSON field by field. The passes, in order:

1. values: shard, aligned and total bytes from layout text, shape and precision
   (`values`, `shards`); unrepresentable values are null and listed under
   `rejections`;
2. live sets: ascending, each value live in one run of steps, declared tensors from
   step 0, a storage group held by one member at a time (hand-off at an in-place step);
3. usage of each step = its live storage groups (each once) + scratch;
4. peaks and their first steps, the largest standard allocation, exchange rows,
   the standard overflow, the effective peak;
5. `exact` from the tile maps (`exact`), `verdict` (with `over_budget`,
   `out_of_memory`, `peak_tile` and `error_band`: `band`), `fits_budget` (`verdict`);
6. the sections views read: scope, program and rejected_operation (`program`),
   operations (`operations`), available_memory_proportion (`proportion`: its cap
   re-derived), what_if (`whatif`: its baseline re-derived; its rows are other plans,
   each row's place in the error band re-derived from its margin: `band`);
7. beyond the tensors: `non_tensor` (`nontensor`), each placed tile (`placement`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tileplan.errors import InputError
from tileplan.model.machine import LIMITS
from tileplan.model.timeline import REGIONS, Value
from tileplan.check.band import stated_band
from tileplan.check.nontensor import non_tensor
from tileplan.check.placement import check_placement
from tileplan.check.result import (
    WRAP_FLOOR,
    CheckResult,
    Finding,
    Peaks,
    compare,
    compare_json,
    ids_text,
)
from tileplan.check.operations import check_operations
from tileplan.check.program import check_program, check_scope
from tileplan.check.proportion import check_memory_proportion
from tileplan.check.timeline import (
    Groups,
    LiveRuns,
    StepColumns,
    Usage,
    exchanges,
    first_max,
    groups,
    live_runs,
    step_columns,
    usage,
    value_columns,
)
from tileplan.check.values import check_live_sets, check_values
from tileplan.check.verdict import baseline, check_exact, over_budget, peak_tile, verdict_section
from tileplan.check.whatif import check_what_if
from tileplan.report.model import Report
from tileplan.report.sections import Exact, NonTensor, Placement, Verdict

__all__ = ["CheckResult", "Finding", "Peaks", "check_report", "exchanges"]

#: the most tiles check accounts for (a machine file's own limit): beyond it, one line
MAX_TILES = LIMITS["tile_count"]


def check_report(report: Report) -> CheckResult:
    """Every finding about `report`; `InputError` (one line) only for a report beyond
    what check can account for in bounded memory (more than `MAX_TILES` tiles)."""
    if report.tile_count > MAX_TILES:
        raise InputError(f"tile_count {report.tile_count} is beyond the {MAX_TILES} tiles check accounts for",
                         "tile_count")
    values, n_steps = report.values, len(report.steps)
    result = CheckResult(values_total=len(values), steps_total=n_steps)
    if report.interleaved_budget_bytes > report.budget_bytes:
        result.add("disagree", "interleaved_budget_bytes", f"reports {report.interleaved_budget_bytes}, more than "
                                                           f"budget_bytes {report.budget_bytes} (both regions)")
    positions: dict[int, int] = {}
    for p, v in enumerate(values):
        positions.setdefault(v.id, p)
    kinds, sizes = check_values(report, result, positions)
    cols = step_columns(report.steps)
    runs = live_runs(values, report.steps, positions)
    vc = value_columns(values)
    g = groups(vc, runs, n_steps)
    check_live_sets(report, runs, vc, g, result)

    # storage groups: one region each, sized by the largest member
    members = np.bincount(g.of_value, minlength=len(g.ids))
    interleaved = np.bincount(g.of_value[vc.interleaved], minlength=len(g.ids))
    mixed = sorted(g.ids[k] for k in np.flatnonzero((interleaved > 0) & (interleaved < members)).tolist())
    for k in mixed:
        result.add("disagree", f"storage_group {k}", "members span regions ['interleaved', 'standard']")
    # the shapes of the sections views read, on their JSON as written (program, operations)
    check_scope(report.scope, report.extra, result.add)
    check_program(report.extra, result.add)
    check_operations(report.extra, cols.source, cols.execution_count, result.add)
    check_memory_proportion(report.extra, report.budget_bytes, report.support_reserve_bytes, result.add)
    if mixed:
        return result
    group_bytes = storage_group_bytes(g, sizes)
    derived = check_usage(report, result, cols, runs, g, group_bytes, sizes)
    peaks = find_peaks(derived, g, group_bytes)
    if any(b is None for b in sizes):
        zero = [0 if b is None else b for b in group_bytes]
        result.known_peaks = find_peaks(usage(g, zero, cols.scratch, n_steps), g, zero)
    exchange, effective = check_peaks(report, result, cols, derived, peaks)

    # exact per-tile accounting, then the verdict
    account, tiles = None, None
    if report.sections.given(Exact):
        account, tiles = check_exact(report, result, kinds, g, vc, runs, cols, group_bytes, peaks)
    over = over_budget(report, derived, account, exchange)
    known = account is not None or (effective is not None and peaks.interleaved is not None)
    fits = report.scope == "program" and known and over.count == 0
    band = stated_band(report, result.add)
    if report.sections.given(Verdict):
        verdict = verdict_section(report, peaks, effective, exchange, account, over, fits, band)
        if account is not None and tiles is not None:
            verdict = verdict.with_peak_tile(peak_tile(report, result, account, tiles, runs, cols))
        compare_json(result, "verdict", report.sections.written(Verdict), verdict.to_json())
    if report.fits_budget != fits:
        result.add("disagree", "fits_budget", f"reports {str(report.fits_budget).lower()}; re-derived "
                                              f"{str(fits).lower()} (scope {report.scope})")
    outcome = baseline(report, fits, peaks, effective, exchange, account).to_json()
    del outcome["command"]  # how to plan it again: not a figure
    check_what_if(report.extra, outcome, result.add, band)
    if report.sections.given(NonTensor):
        compare_json(result, "non_tensor", report.sections.written(NonTensor),
                     non_tensor(report, result, cols).to_json())
    if report.sections.given(Placement):
        check_placement(report, result, g)
    return result


def check_usage(report: Report, result: CheckResult, cols: StepColumns, runs: LiveRuns, g: Groups,
                group_bytes: Sequence[int | None], sizes: Sequence[int | None]) -> Usage:
    """Each step's usage re-derived (its live groups, each once, + scratch) and compared;
    the usage."""
    n_steps, values = len(report.steps), report.values
    if cols.index is not None:
        for i in np.flatnonzero(cols.index != np.arange(n_steps)).tolist():
            result.add("disagree", f"timeline.steps[{i}].index",
                       f"reports {cols.index[i]}, expected {i} (its position)")
    derived = usage(g, group_bytes, cols.scratch, n_steps)
    agree = np.ones(n_steps, dtype=bool)
    unknown_values = [p for p, b in enumerate(sizes) if b is None]
    for region in REGIONS:
        total, sized = derived.of(region)
        reported, given = cols.usage[region], cols.known[region]
        same = (given == sized) & (~sized | (reported == total))
        agree &= same
        for i in np.flatnonzero(~same).tolist():
            live_unknown = live_at(runs, i, unknown_values, values)
            why = f" (live unrepresentable values: {ids_text(live_unknown)})" if live_unknown else ""
            compare(result, f"timeline.steps[{i}].usage.{region}", int(reported[i]) if given[i] else None,
                    int(total[i]) if sized[i] else None, why)
    result.steps_agreeing = int(agree.sum())
    return derived


def check_peaks(report: Report, result: CheckResult, cols: StepColumns, derived: Usage,
                peaks: Peaks) -> tuple[int, int | None]:
    """The peaks, their steps, the exchange rows, the standard overflow and the
    effective peak compared; (the exchange rows' bytes, the effective peak)."""
    why = " (a step's usage is unknown)" if peaks.total is None else ""
    compare(result, "peak.standard", report.peak.standard, peaks.standard, why)
    compare(result, "peak.interleaved", report.peak.interleaved, peaks.interleaved, why)
    compare(result, "peak.total", report.peak.total, peaks.total, why)
    compare(result, "peak.maximum_standard_allocation", report.peak.maximum_standard_allocation,
            peaks.maximum_standard_allocation, why)
    compare(result, "standard_peak_step", report.standard_peak_step, peaks.standard_step, why)
    compare(result, "interleaved_peak_step", report.interleaved_peak_step, peaks.interleaved_step, why)
    compare(result, "total_peak_step", report.total_peak_step, peaks.total_step, why)
    rows = report.peak.exchange_rows
    if report.exchange_row_bytes is None:
        if rows:
            result.add("defect", "peak.exchange_rows",
                       f"{rows} rows with no stated byte cost (no exchange_row_bytes); the effective peak cannot "
                       "be re-derived")
        exchange = 0
    else:
        compare(result, "peak.exchange_rows", rows, exchange_rows_of(cols))
        exchange = (rows or 0) * report.exchange_row_bytes
    standard_budget = report.budget_bytes - report.interleaved_budget_bytes
    std, std_known = derived.standard, derived.standard_known
    overflow = None if not std_known.all() else max(0, int(std.max()) - standard_budget) if len(std) else 0
    compare(result, "standard_contiguous_overflow_bytes", report.standard_contiguous_overflow_bytes, overflow, why)
    effective = None if peaks.total is None else peaks.total + exchange
    if report.exchange_row_bytes is not None or report.effective_peak_bytes is None \
            or report.effective_peak_bytes >= WRAP_FLOOR:
        compare(result, "effective_peak_bytes", report.effective_peak_bytes, effective, why)
    return exchange, effective


def live_at(runs: LiveRuns, step: int, positions: Sequence[int], values: Sequence[Value]) -> list[int]:
    """Ids of the values at `positions` live at `step`, ascending."""
    if not positions:
        return []
    wanted = np.zeros(len(values), dtype=bool)
    wanted[list(positions)] = True
    cover = (runs.first <= step) & (runs.last >= step)
    return sorted(values[p].id for p in runs.pos[cover].tolist() if wanted[p])


# usage, peaks, exchange -----------------------------------------------------------------

def storage_group_bytes(g: Groups, sizes: Sequence[int | None]) -> list[int | None]:
    """Each (dense) storage group's bytes: its largest member's (None if a member's is
    unknown)."""
    out: list[int | None] = [0] * len(g.ids)
    seen = [False] * len(g.ids)
    for k, b in zip(g.of_value.tolist(), sizes):
        if not seen[k]:
            out[k], seen[k] = b, True
        else:
            current = out[k]
            out[k] = None if current is None or b is None else max(current, b)
    return out


def find_peaks(u: Usage, g: Groups, group_bytes: Sequence[int | None]) -> Peaks:
    """Largest usage per region and of their sum, each at its first step; None when a
    step's usage is unknown or there are no steps."""
    def peak(series: np.ndarray, known: np.ndarray) -> tuple[int | None, int | None]:
        if not len(series) or not known.all():
            return None, None
        return first_max(series)

    total = u.standard + u.interleaved
    both = u.standard_known & u.interleaved_known
    live = np.zeros(len(g.ids), dtype=bool)
    live[g.pos] = True
    allocations = [group_bytes[k] for k in np.flatnonzero(live & (g.region == 0)).tolist()]
    sized = [b for b in allocations if b is not None]
    largest = None if len(sized) < len(allocations) else max(sized, default=0)
    (ps, ss), (pi, si), (pt, st) = (peak(u.standard, u.standard_known), peak(u.interleaved, u.interleaved_known),
                                    peak(total, both))
    return Peaks(ps, pi, pt, ss, si, st, largest)


def exchange_rows(operations: Iterable[str]) -> int:
    """One exchange row per exchanging step of the timeline (a repeat block's step once)."""
    return sum(exchanges(op) for op in operations)


def exchange_rows_of(cols: StepColumns) -> int:
    """`exchange_rows` over the step columns, each distinct operation text judged once."""
    if not cols.n:
        return 0
    uses = np.bincount(cols.operation, minlength=len(cols.texts))
    return int(sum(int(n) for op, n in zip(cols.texts, uses) if exchanges(op)))
