"""`tileplan check`: re-derive every number of a report from the report alone, with
check's own code and the rules of docs/report-format.md.

It imports only the model (layouts, precisions, the timeline's types, machine limits),
the errors, the reader and its own `check_*` modules: nothing of the planner, the
lowering or the report builder, so a report passing check is two implementations
agreeing, not one agreeing with itself. The passes, in order:

1. values: shard, aligned and total bytes from layout text, shape and precision
   (`check_shards`); unrepresentable values are null and listed under `rejections`;
2. live sets: ascending, each value live in one run of steps, declared tensors from
   step 0, a storage group held by one member at a time (hand-off at an in-place step);
3. usage of each step = its live storage groups (each once) + scratch;
4. peaks and their first steps, the largest standard allocation, exchange rows,
   the standard overflow, the effective peak;
5. `exact` from the tile maps (`check_exact`), `verdict` (with `over_budget`,
   `out_of_memory` and `peak_tile`), `fits_budget`;
6. the sections views read (`check_sections`): scope, program, operations,
   rejected_operation, what_if (its baseline re-derived; its rows are other plans).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tileplan.errors import InputError, TilingError
from tileplan.model.machine import LIMITS
import numpy as np

from tileplan.model.timeline import REGIONS, Step, Value
from tileplan.report.check_exact import (
    TileAccount,
    ValueKinds,
    TileBytes,
    account_tiles,
    exact_section,
    peak_tile_section,
)
from tileplan.report.check_sections import (
    check_operations,
    check_program,
    check_scope,
    check_what_if,
    is_int,
    show,
)
from tileplan.report.check_shards import Sharding, shard_layout
from tileplan.report.check_timeline import (
    INT64_MAX,
    Groups,
    LiveRuns,
    StepColumns,
    Usage,
    ValueColumns,
    first_max,
    groups,
    live_runs,
    step_columns,
    usage,
    value_columns,
)
from tileplan.report.format import U64_MAX, Report

SENTINEL = U64_MAX  # the reference's "unknown"
WRAP_FLOOR = 2**63
#: Version-1 reports without `alignment_bytes` align AMP-read values to one
#: interleaved memory element pair (32 KiB) and nothing else.
ELEMENT_PAIR_BYTES = 32768
#: the most tiles check accounts for (a machine file's own limit): beyond it, one line
MAX_TILES = LIMITS["tile_count"]
#: per-tile sums stay below this, so the exact accounting's int64 never wraps
INT64_SAFE = 2**62

#: Operations that exchange data between tiles whatever their fields (docs, "Exchange rows").
EXCHANGING_KINDS = ("Sum ", "AttentionScores ", "AttentionValues ", "AttentionStreamed ")


def exchanges(operation: str) -> bool:
    """Whether a step's operation text reserves an exchange row: a `Sum`, an attention
    product, a `Copy` with `reuse_local: false`, or any operation stating
    `exchange: true` (e.g. `LayerNorm { stage: Statistics, exchange: true }`,
    `Reduce { op: Sum, exchange: true }`). The one place check states the rule."""
    if operation.startswith(EXCHANGING_KINDS):
        return True
    if operation.startswith("Copy ") and "reuse_local: false" in operation:
        return True
    return "exchange: true" in operation


@dataclass(frozen=True, slots=True)
class Finding:
    """One result of the check. `kind`: "rejected" (an unrepresentable value the report
    sizes as null and lists under rejections: consistent), "unrepresentable" (one it
    does not), "disagree" or "defect"."""

    kind: str
    place: str
    message: str

    def to_text(self) -> str:
        return f"{self.kind}: {self.place}: {self.message}"


@dataclass(frozen=True, slots=True)
class Peaks:
    """Peak usage per region and in total with the first step reaching each, and the
    largest standard storage group live in any step; None where a size is unknown."""

    standard: int | None
    interleaved: int | None
    total: int | None
    standard_step: int | None
    interleaved_step: int | None
    total_step: int | None
    maximum_standard_allocation: int | None


@dataclass(slots=True)
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    values_agreeing: int = 0
    values_total: int = 0
    steps_agreeing: int = 0
    steps_total: int = 0
    #: Peaks of the representable values alone (unrepresentable ones sized 0): a lower
    #: bound shown when the real peaks cannot be known.
    known_peaks: Peaks | None = None

    @property
    def consistent(self) -> bool:
        return all(f.kind == "rejected" for f in self.findings)

    def add(self, kind: str, place: str, message: str) -> None:
        self.findings.append(Finding(kind, place, message))


def describe_number(n: int | None) -> str:
    """How a reported number reads: null, the sentinel, a wrapped subtraction, or itself."""
    if n is None:
        return "null"
    if n == SENTINEL:
        return "18446744073709551615 (the sentinel 2^64 - 1)"
    if n >= WRAP_FLOOR:
        return f"{n} (= 2^64 - 1 - {SENTINEL - n}: wrapped arithmetic)"
    return str(n)


def text(s: str, limit: int = 80) -> str:
    """A name from a report as one printable line: escapes for what is not printable
    (newlines, lone surrogates), cut at `limit` characters."""
    if len(s) <= limit and s.isprintable():
        return s
    out = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in s[:limit])
    return out + ("..." if len(s) > limit else "")


def _compare(result: CheckResult, place: str, reported: int | None, derived: int | None,
             why_unknown: str = "") -> bool:
    """Record a finding unless `reported` equals `derived`; True when they agree."""
    if reported == derived:
        return True
    if derived is None:
        kind = "defect" if reported is not None and reported >= WRAP_FLOOR else "disagree"
        result.add(kind, place, f"reports {describe_number(reported)}; it cannot be known{why_unknown}, "
                                "expected null")
    elif reported is not None and reported >= WRAP_FLOOR:
        result.add("defect", place, f"reports {describe_number(reported)}; re-derived {derived}")
    else:
        result.add("disagree", place, f"reports {describe_number(reported)}; re-derived {derived}")
    return False


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
    check_scope(report.scope, report.extra, result.add)
    check_program(report.extra, result.add)
    check_operations(report.extra, cols.source, cols.execution_count, result.add)
    if mixed:
        return result
    group_bytes = storage_group_bytes(g, sizes)

    # usage of each step: live groups, each once, + scratch
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
            why = f" (live unrepresentable values: {_ids(live_unknown)})" if live_unknown else ""
            _compare(result, f"timeline.steps[{i}].usage.{region}", int(reported[i]) if given[i] else None,
                     int(total[i]) if sized[i] else None, why)
    result.steps_agreeing = int(agree.sum())

    # peaks, exchange rows, overflow, effective peak
    peaks = find_peaks(derived, g, group_bytes)
    if unknown_values:
        zero = [0 if b is None else b for b in group_bytes]
        known_usage = usage(g, zero, cols.scratch, n_steps)
        result.known_peaks = find_peaks(known_usage, g, zero)
    why = " (a step's usage is unknown)" if peaks.total is None else ""
    _compare(result, "peak.standard", report.peak.standard, peaks.standard, why)
    _compare(result, "peak.interleaved", report.peak.interleaved, peaks.interleaved, why)
    _compare(result, "peak.total", report.peak.total, peaks.total, why)
    _compare(result, "peak.maximum_standard_allocation", report.peak.maximum_standard_allocation,
             peaks.maximum_standard_allocation, why)
    _compare(result, "standard_peak_step", report.standard_peak_step, peaks.standard_step, why)
    _compare(result, "interleaved_peak_step", report.interleaved_peak_step, peaks.interleaved_step, why)
    _compare(result, "total_peak_step", report.total_peak_step, peaks.total_step, why)
    rows = report.peak.exchange_rows
    if report.exchange_row_bytes is None:
        if rows:
            result.add("defect", "peak.exchange_rows",
                       f"{rows} rows with no stated byte cost (no exchange_row_bytes); the effective peak cannot "
                       "be re-derived")
        exchange = 0
    else:
        _compare(result, "peak.exchange_rows", rows, exchange_rows_of(cols))
        exchange = (rows or 0) * report.exchange_row_bytes
    standard_budget = report.budget_bytes - report.interleaved_budget_bytes
    std, std_known = derived.standard, derived.standard_known
    overflow = None if not std_known.all() else max(0, int(std.max()) - standard_budget) if n_steps else 0
    _compare(result, "standard_contiguous_overflow_bytes", report.standard_contiguous_overflow_bytes, overflow, why)
    effective = None if peaks.total is None else peaks.total + exchange
    if report.exchange_row_bytes is not None or report.effective_peak_bytes is None \
            or report.effective_peak_bytes >= WRAP_FLOOR:
        _compare(result, "effective_peak_bytes", report.effective_peak_bytes, effective, why)

    # exact per-tile accounting, then the verdict
    account, tiles = None, None
    if "exact" in report.extra:
        account, tiles = check_exact(report, result, kinds, g, vc, runs, cols, group_bytes, peaks)
    over = over_budget(report, derived, account, exchange)
    known = account is not None or (effective is not None and peaks.interleaved is not None)
    fits = report.scope == "program" and known and over.count == 0
    if "verdict" in report.extra:
        verdict = verdict_section(report, peaks, effective, exchange, account, over, fits)
        if account is not None and tiles is not None:
            verdict["peak_tile"] = peak_tile(report, account, tiles, runs, cols)
        compare_json(result, "verdict", report.extra["verdict"], verdict)
    if report.fits_budget != fits:
        result.add("disagree", "fits_budget", f"reports {str(report.fits_budget).lower()}; re-derived "
                                              f"{str(fits).lower()} (scope {report.scope})")
    check_what_if(report.extra, baseline(report, fits, peaks, effective, exchange, account), result.add)
    if "non_tensor" in report.extra:
        compare_json(result, "non_tensor", report.extra["non_tensor"], non_tensor(report, cols))
    if "placement" in report.extra:
        check_placement(report, result, g)
    return result


def live_at(runs: LiveRuns, step: int, positions: Sequence[int], values: Sequence[Value]) -> list[int]:
    """Ids of the values at `positions` live at `step`, ascending."""
    if not positions:
        return []
    wanted = np.zeros(len(values), dtype=bool)
    wanted[list(positions)] = True
    cover = (runs.first <= step) & (runs.last >= step)
    return sorted(values[p].id for p in runs.pos[cover].tolist() if wanted[p])


# placements of the worst tiles ------------------------------------------------------------

def check_placement(report: Report, result: CheckResult, g: Groups) -> None:
    """Each placed tile's buffers: no two live at one step share a byte, interleaved ones
    sit in the interleaved region, a storage group's buffer spans exactly the steps its
    members are live, the height is the highest end, `fits` is height <= capacity, and
    the verdict's first words follow from them."""
    section = report.extra["placement"]
    tiles = section.get("tiles") if isinstance(section, dict) else None
    if not isinstance(tiles, list):
        result.add("disagree", "placement.tiles", "expected a list of placed tiles")
        return
    span: dict[int, tuple[int, int]] = {}
    for k, a, b in zip(g.pos.tolist(), g.first.tolist(), g.last.tolist()):
        lo, hi = span.get(g.ids[k], (a, b))
        span[g.ids[k]] = (min(lo, a), max(hi, b))
    floor = report.budget_bytes - report.interleaved_budget_bytes
    all_fit = True
    for k, t in enumerate(tiles):
        place = f"placement.tiles[{k}]"
        try:
            buffers = [(str(b[0]), b[1], str(b[2]), int(b[3]), int(b[4]), int(b[5]), int(b[6])) for b in t["buffers"]]
            capacity, height, fits = int(t["capacity"]), int(t["height"]), bool(t["fits"])
        except (KeyError, TypeError, ValueError, IndexError):
            result.add("disagree", place, "expected tile, capacity, height, fits and buffers "
                                          "[what, group, region, first, end, bytes, offset]")
            return
        if capacity != report.budget_bytes:
            result.add("disagree", f"{place}.capacity", f"reports {capacity}; the budget is {report.budget_bytes}")
        top = max((off + size for _, _, _, _, _, size, off in buffers), default=0)
        if top != height:
            result.add("disagree", f"{place}.height", f"reports {height}; the highest buffer ends at {top}")
        if fits != (top <= capacity):
            result.add("disagree", f"{place}.fits", f"reports {str(fits).lower()}; height {top}, capacity {capacity}")
        all_fit &= top <= capacity
        for i, (what, group, region, lo, hi, _size, off) in enumerate(buffers):
            where = f"{place}.buffers[{i}]"
            if off < 0 or (region == "interleaved" and off < floor):
                result.add("disagree", where, f"offset {off} is outside its region (interleaved from {floor})")
            if what == "group" and isinstance(group, int) and span.get(group) != (lo, hi - 1):
                result.add("disagree", where, f"storage group {group} spans steps {lo} to {hi - 1}; its members are "
                                              f"live in {span.get(group)}")
        events = sorted(range(len(buffers)), key=lambda i: (buffers[i][3], buffers[i][6]))
        for a_i, a in enumerate(events):  # overlap: live at a common step and sharing a byte
            A = buffers[a]
            for b in events[a_i + 1:]:
                B = buffers[b]
                if B[3] >= A[4]:
                    break
                if A[5] and B[5] and A[6] < B[6] + B[5] and B[6] < A[6] + A[5]:
                    result.add("disagree", f"{place}.buffers[{b}]", f"shares bytes with buffers[{a}] while both are "
                                                                     f"live (step {max(A[3], B[3])})")
                    return
    verdict = str(section.get("verdict", ""))
    expected = ("does not fit by bytes" if not report.fits_budget else
                "fits by bytes and by placement" if all_fit else "fits by bytes, not by placement")
    if not verdict.startswith(expected):
        result.add("disagree", "placement.verdict", f"reports {text(verdict)}; expected it to say {expected!r}")


# memory that is not tensors ---------------------------------------------------------------

#: docs/report-format.md, "Memory that is not tensors": bytes per tile per kind of compute
#: step (vertex code), per compute step (vertex state), per program step (control code),
#: per exchanging step (exchange code), and the stack
NON_TENSOR_RATES = {"vertex_code": 550, "vertex_state": 229, "control_code": 165, "exchange_code": 221}
STACK_BYTES = 3200


def non_tensor(report: Report, cols: StepColumns) -> dict[str, Any]:
    """The `non_tensor` section re-derived from the steps' operation texts (each
    distinct text judged once); its note is taken as written (prose)."""
    uses = np.bincount(cols.operation, minlength=len(cols.texts)).tolist() if cols.n else [0] * len(cols.texts)
    texts = [(op, n) for op, n in zip(cols.texts, uses) if n]
    program = [(op, n) for op, n in texts if not op.startswith("View ")]
    compute = [(op, n) for op, n in program if not op.startswith("Copy ")]
    kinds = {op.replace("}", ",").split(",", 1)[0].strip() for op, _ in compute}
    exchanging = sum(n for op, n in texts if exchanges(op))
    n_compute, n_program = sum(n for _, n in compute), sum(n for _, n in program)
    figures = {"vertex_code": len(kinds) * NON_TENSOR_RATES["vertex_code"],
               "vertex_state": n_compute * NON_TENSOR_RATES["vertex_state"],
               "exchange_code": exchanging * NON_TENSOR_RATES["exchange_code"],
               "control_code": n_program * NON_TENSOR_RATES["control_code"], "stack": STACK_BYTES}
    total = sum(figures.values())
    section = report.extra["non_tensor"]
    note = section.get("note") if isinstance(section, dict) else None
    return {**figures, "total": total, "reserve": report.support_reserve_bytes,
            "over_reserve": max(0, total - report.support_reserve_bytes),
            "counts": {"kinds": len(kinds), "compute_steps": n_compute, "program_steps": n_program,
                       "exchange_steps": exchanging}, "note": note}


# values -------------------------------------------------------------------------------

Judged = tuple[list[tuple[str, str, str]], int | None, int]


def _size_findings(v: Value, found: Sharding | TilingError, rejected: bool) -> Judged:
    """What check finds about one value's sizes, as (kind, field, message) with the
    field "" for the value itself; its re-derived bytes (None when unrepresentable)
    and alignment. The same for every value of the same layout, shape, precision,
    alignment, copies and reported sizes."""
    out: list[tuple[str, str, str]] = []
    if isinstance(found, TilingError):
        sized = {"shard_bytes": v.shard_bytes, "aligned_bytes": v.aligned_bytes, "bytes": v.bytes}
        sentinels = [k for k, n in sized.items() if n == SENTINEL]
        numbers = [k for k, n in sized.items() if n is not None and n != SENTINEL]
        properly = not sentinels and not numbers and rejected
        out.append(("rejected" if properly else "unrepresentable", "", found.detail))
        if sentinels:
            out.append(("defect", "", f"{', '.join(sentinels)} hold the sentinel 2^64 - 1 for an "
                                      "unrepresentable shard; expected null and a rejection"))
        if numbers:
            out.append(("disagree", "", f"{', '.join(numbers)} given for an unrepresentable shard"))
        if not rejected and not sentinels:
            out.append(("defect", "", "unrepresentable but not listed under rejections"))
        return out, None, 1
    shard = found.largest_elements * v.precision.bytes
    if v.alignment_bytes is not None:
        alignment = v.alignment_bytes
    else:  # version 1: unaligned, or one element pair when aligned_bytes says so
        pair = -(-shard // ELEMENT_PAIR_BYTES) * ELEMENT_PAIR_BYTES
        alignment = ELEMENT_PAIR_BYTES if v.aligned_bytes == pair != shard else 1
    aligned = -(-shard // alignment) * alignment
    for key, reported, derived in (("shard_bytes", v.shard_bytes, shard), ("aligned_bytes", v.aligned_bytes, aligned),
                                   ("bytes", v.bytes, aligned * v.copies)):
        if reported != derived:
            scratch = CheckResult()
            _compare(scratch, key, reported, derived)
            out += [(f.kind, key, f.message) for f in scratch.findings]
    return out, aligned * v.copies, alignment


def check_values(report: Report, result: CheckResult, positions: Mapping[int, int]) -> tuple[
        ValueKinds, list[int | None]]:
    """Every value's re-derived `bytes` (None when unrepresentable), and the kinds of
    the representable values (`ValueKinds`: what their per-tile bytes follow from).
    Each distinct layout and shape is sharded once, each distinct combination with the
    reported sizes judged once."""
    rejected = {j.value: j for j in report.rejections}
    sizes: list[int | None] = []
    kinds = ValueKinds()
    memo: dict[tuple, Sharding | TilingError] = {}
    judged: dict[tuple, tuple[list[tuple[str, str, str]], int | None, int]] = {}
    for i, v in enumerate(report.values):
        listed = v.id in rejected
        case = (v.layout, v.shape, v.precision, v.alignment_bytes, v.copies, v.shard_bytes, v.aligned_bytes, v.bytes,
                listed)
        verdict = judged.get(case)
        if verdict is None:
            key = (v.layout, v.shape)
            found = memo.get(key)
            if found is None:
                try:
                    found = memo[key] = shard_layout(v.layout, v.shape)
                except TilingError as e:
                    found = memo[key] = e
            findings, size, alignment = _size_findings(v, found, listed)
            kind = -1 if isinstance(found, TilingError) else kinds.add(found, v, alignment)
            verdict = judged[case] = (findings, size, kind)
        findings, size, kind = verdict
        sizes.append(size)
        if findings:
            place = f"timeline.values[{i}] ({text(v.name)})"
            for what, field_, message in findings:
                result.add(what, f"{place}.{field_}" if field_ else place, message)
        kinds.of_value.append(kind)
        if kind < 0:
            continue
        if listed:
            result.add("disagree", f"timeline.values[{i}] ({text(v.name)})",
                       f"listed under rejections ({text(rejected[v.id].reason)}) but its layout represents it")
        result.values_agreeing += not findings
    for i, v in enumerate(report.values):
        if v.root not in positions:
            result.add("disagree", f"timeline.values[{i}] ({text(v.name)})", f"root {v.root} is not a value id")
    listed_ids: set[int] = set()
    for i, j in enumerate(report.rejections):
        if j.value not in positions:
            result.add("disagree", f"rejections[{i}]", f"value {j.value} ({text(j.name)}) is not in the timeline")
        elif j.name != report.values[positions[j.value]].name:
            result.add("disagree", f"rejections[{i}].name", f"reports {text(j.name)}; value {j.value} is named "
                                                             f"{text(report.values[positions[j.value]].name)}")
        if j.value in listed_ids:
            result.add("disagree", f"rejections[{i}]", f"value {j.value} is listed twice")
        listed_ids.add(j.value)
    unrepresentable = kinds.of_value.count(-1)
    if report.scope == "program" and unrepresentable:
        result.add("disagree", "scope", f"program, but {unrepresentable} values are "
                                        "unrepresentable (planning stops at the first operation they are live in)")
    return kinds, sizes


# live sets ----------------------------------------------------------------------------

def check_live_sets(report: Report, runs: LiveRuns, vc: ValueColumns, g: Groups, result: CheckResult) -> None:
    """Each `live` ascending with each id once; each value live in one run of steps
    (its live range), at least one; declared tensors (role input or parameter) from
    step 0; the members of a storage group that own their data (root = id) hold it one
    after another, each from the step where the previous one is last live."""
    values = report.values
    for step, message in runs.unordered:
        result.add("disagree", f"timeline.steps[{step}].live", message)
    for vid, step in runs.strangers[:8]:
        result.add("disagree", f"timeline.steps[{step}].live", f"live value {vid} is not in timeline.values")
    first, last = runs.value_first, runs.value_last
    odd = np.flatnonzero((runs.value_runs != 1) | vc.resident & (first != 0))
    for i in odd.tolist():
        v = values[i]
        place = f"timeline.values[{i}] ({text(v.name)})"
        if runs.value_runs[i] == 0:
            result.add("disagree", place, "is live in no step; the timeline lists only values live in some step")
            continue
        if runs.value_runs[i] > 1:
            k = int(np.searchsorted(runs.pos, i))
            gap = int(runs.last[k]) + 1
            result.add("disagree", place, f"live in steps {first[i]} to {last[i]} but not in step {gap}; "
                                          "a value is live in one run of steps")
        if v.resident and first[i] != 0:
            result.add("disagree", place, f"a declared tensor ({v.role}) first live in step {first[i]}; "
                                          "expected step 0")
    members: dict[int, list[int]] = {}
    firsts, lasts = first.tolist(), last.tolist()
    live = first >= 0
    sizes = np.bincount(g.of_value[live], minlength=len(g.ids))
    for p in np.flatnonzero(live & (sizes[g.of_value] > 1)).tolist():
        members.setdefault(vc.storage_group[p], []).append(p)
    for k, group in sorted(members.items()):
        # an owner of the storage (root == id) after the first is written in place of
        # a member (an owner or a view aliasing one) whose last step is its first
        chain = sorted(group, key=lambda m: (firsts[m], lasts[m], values[m].id))
        ends = {lasts[chain[0]]}
        for j, b in enumerate(chain[1:], start=1):
            vb = values[b]
            if vb.root == vb.id and firsts[b] not in ends:
                prev = max(chain[:j], key=lambda a: (lasts[a], values[a].id))
                vp = values[prev]
                result.add("disagree", f"storage_group {k}",
                           f"value {vb.id} ({text(vb.name)}) first live in step {firsts[b]}, but no earlier member "
                           f"ends there (value {vp.id} ({text(vp.name)}) last live in step {lasts[prev]}); "
                           "a value written in place starts where a member of its group ends")
                break
            ends.add(lasts[b])


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


# exact and verdict ------------------------------------------------------------------------

def check_exact(report: Report, result: CheckResult, kinds: ValueKinds, g: Groups, vc: ValueColumns, runs: LiveRuns,
                cols: StepColumns, group_bytes: Sequence[int | None],
                peaks: Peaks) -> tuple[TileAccount | None, TileBytes | None]:
    """Re-derive `exact` when the report gives it; the accounting, or None when it
    cannot be derived (a finding says why)."""
    if -1 in kinds.of_value or not cols.n:
        result.add("disagree", "exact", "given, but exact accounting needs steps and every value representable")
        return None, None
    scratch = cols.scratch["standard"] + cols.scratch["interleaved"]
    bound = sum(b or 0 for b in group_bytes) + int(max(scratch.tolist()))
    if bound >= INT64_SAFE:
        result.add("defect", "exact", f"not re-derived: the storage groups and scratch add up to {bound} bytes per "
                                      "tile, beyond 2^62")
        return None, None
    tiles = TileBytes(report.values, kinds, report.tile_count)
    members: list[list[int]] = [[] for _ in g.ids]
    for p, k in enumerate(g.of_value.tolist()):
        members[k].append(p)
    resident = np.zeros(len(g.ids), dtype=bool)
    resident[g.of_value[vc.resident]] = True
    account = account_tiles(tiles, members, g.region, resident, (g.pos, g.first, g.last),
                            {r: cols.scratch[r].astype(np.int64) for r in REGIONS}, cols.n)
    if account is None:
        result.add("defect", "exact", f"not re-derived: {len(kinds.kinds)} distinct value vectors over "
                                      f"{report.tile_count} tiles are beyond check's memory bound")
        return None, None
    derived = exact_section(account, peaks.total)
    reported = report.extra["exact"]
    model = reported.get("model") if isinstance(reported, dict) else None
    derived = {"model": model if isinstance(model, str) else "(the accounting model, in words)", **derived}
    if isinstance(reported, dict) and "steps" in reported:
        rows = derived.pop("steps")
        stated = reported["steps"]
        reported = {k: v for k, v in reported.items() if k != "steps"}
        compare_rows(result, "exact.steps", stated, rows)
    compare_json(result, "exact", reported, derived)
    return account, tiles


def compare_rows(result: CheckResult, place: str, reported: object, derived: np.ndarray) -> None:
    """Compare rows of integers (a list of lists, or an array read from version 2)
    with the derived array; name the first cell that differs."""
    arr: np.ndarray | None = None
    if isinstance(reported, np.ndarray):
        arr = reported
    elif isinstance(reported, list) and all(isinstance(r, list) and len(r) == derived.shape[1] and
                                            all(is_int(c) and 0 <= c <= INT64_MAX for c in r) for r in reported):
        arr = np.array(reported, dtype=np.int64).reshape(len(reported), derived.shape[1])
    if arr is None or arr.shape != derived.shape:
        compare_json(result, place, reported if arr is None else arr.tolist(), derived.tolist())
        return
    diff = np.flatnonzero((arr != derived).any(axis=1))
    if diff.size:
        i = int(diff[0])
        j = int(np.flatnonzero(arr[i] != derived[i])[0])
        result.add("disagree", f"{place}[{i}][{j}]", f"reports {show(int(arr[i, j]))}; re-derived "
                                                     f"{show(int(derived[i, j]))}")


@dataclass(frozen=True, slots=True)
class OverBudget:
    """One step over a budget: region "interleaved" or "total", the tile (None on the
    estimate), its usage there (with exchange for "total") and the budget."""

    step: int
    region: str
    tile: int | None
    usage: int
    budget: int

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "region": self.region, "tile": self.tile, "usage": self.usage,
                "budget": self.budget, "bytes_over": self.usage - self.budget}


@dataclass(frozen=True, slots=True)
class OverSteps:
    """The steps over budget: how many, the first (in step order, interleaved before
    total on one step) and the worst (the most bytes over, the first such on ties)."""

    count: int
    first: OverBudget | None
    worst: OverBudget | None


def over_budget(report: Report, u: Usage, account: TileAccount | None, exchange: int) -> OverSteps:
    """Every (step, region) over budget: the interleaved usage over
    `interleaved_budget_bytes`, or standard + interleaved + exchange over
    `budget_bytes`; on each step's worst tiles with `exact`, else on the estimate
    (steps of unknown usage skipped)."""
    n = len(u.standard)
    inter_tile: np.ndarray | None
    tile: np.ndarray | None
    if account is not None:
        inter, inter_tile, total, tile = (account.max_interleaved, account.max_interleaved_tile, account.total,
                                          account.tile)
        known = np.ones(n, dtype=bool)
    else:
        known = u.standard_known & u.interleaved_known
        inter, total = u.interleaved, u.standard + u.interleaved
        inter_tile = tile = None
    over_inter = known & (inter > report.interleaved_budget_bytes)
    over_total = known & (total + exchange > report.budget_bytes)
    steps = np.flatnonzero(over_inter | over_total)
    if not steps.size:
        return OverSteps(0, None, None)

    def entry(i: int, region: str) -> OverBudget:
        figures, tiles, budget = ((inter, inter_tile, report.interleaved_budget_bytes) if region == "interleaved"
                                  else (total, tile, report.budget_bytes))
        extra = exchange if region == "total" else 0
        return OverBudget(i, region, None if tiles is None else int(tiles[i]), int(figures[i]) + extra, budget)

    first_step = int(steps[0])
    first = entry(first_step, "interleaved" if over_inter[first_step] else "total")
    worst = first
    for region, mask, figures, budget, extra in (
            ("interleaved", over_inter, inter, report.interleaved_budget_bytes, 0),
            ("total", over_total, total, report.budget_bytes, exchange)):
        idx = np.flatnonzero(mask)
        if not idx.size:
            continue
        over = figures[idx] + extra - budget
        k = int(idx[int(np.argmax(over))])
        candidate = entry(k, region)
        best = worst.usage - worst.budget
        mine = candidate.usage - candidate.budget
        # the most bytes over; on ties the first in step order, interleaved before total
        if mine > best or (mine == best and (k, region != "interleaved") < (worst.step, worst.region != "interleaved")):
            worst = candidate
    return OverSteps(int(steps.size), first, worst)


def verdict_section(report: Report, peaks: Peaks, effective: int | None, exchange: int,
                    account: TileAccount | None, over: OverSteps, fits: bool) -> dict[str, Any]:
    """`verdict` as docs/report-format.md defines it (without `peak_tile`)."""
    estimates = {"standard": (peaks.standard, peaks.standard_step),
                 "interleaved": (peaks.interleaved, peaks.interleaved_step),
                 "total": (effective, peaks.total_step)}
    budgets = {"standard": report.budget_bytes - report.interleaved_budget_bytes,
               "interleaved": report.interleaved_budget_bytes, "total": report.budget_bytes}
    regions = []
    tile: int | None
    step: int | None
    for region in ("standard", "interleaved", "total"):
        estimate, estimate_step = estimates[region]
        if estimate is None:
            continue
        if account is not None:
            peak, tile, step = account.peak(region)
            peak += exchange if region == "total" else 0
        else:
            peak, tile, step = estimate, None, estimate_step
        entry = {"region": region, "peak": peak, "tile": tile, "step": step, "budget": budgets[region],
                 "margin": budgets[region] - peak, "estimate": estimate}
        if region == "total":
            entry["exchange_bytes"] = exchange
        regions.append(entry)
    out: dict[str, Any] = {"fits": fits, "judged_on": "exact" if account is not None else "estimate",
                           "regions": regions, "over_budget": None}
    if over.first is not None and over.worst is not None:
        worst = over.worst
        out["over_budget"] = {"steps": over.count, "first": over.first.to_json(), "worst": worst.to_json()}
        if worst.tile is not None:
            out["out_of_memory"] = (f"Out of memory on tile {worst.tile} at step {worst.step}: {worst.usage} bytes "
                                    f"used, budget {worst.budget}")
    return out


def peak_tile(report: Report, account: TileAccount, tiles: TileBytes, runs: LiveRuns,
              cols: StepColumns) -> dict[str, Any]:
    """`verdict.peak_tile`, each value's `class` from its layout; its `precision` is
    display text (its form is the views' business): any non-empty string passes."""
    _, _, step = account.peak("total")
    cover = (runs.first <= step) & (runs.last >= step)
    at = Step(step, int(cols.source[step]), cols.texts[int(cols.operation[step])], int(cols.execution_count[step]),
              (), {r: int(cols.scratch[r][step]) for r in REGIONS}, {})  # its live set is `cover`
    derived = peak_tile_section(at, runs.pos[cover].tolist(), account, tiles)
    by_id = {report.values[p].id: report.values[p] for p in runs.pos[cover].tolist()}
    verdict = report.extra.get("verdict")
    stated = verdict.get("peak_tile") if isinstance(verdict, dict) else None
    stated_values = stated.get("values") if isinstance(stated, dict) else None
    for i, entry in enumerate(derived["values"]):
        v = by_id[entry["id"]]
        reported = stated_values[i] if isinstance(stated_values, list) and i < len(stated_values) else None
        precision = reported.get("precision") if isinstance(reported, dict) else None
        entry["precision"] = precision if isinstance(precision, str) and precision else v.precision.to_text()
        entry["class"] = v.memory_class.to_text()
    return derived


def baseline(report: Report, fits: bool, peaks: Peaks, effective: int | None, exchange: int,
             account: TileAccount | None) -> dict[str, Any]:
    """`what_if.baseline` but its command: this plan's own outcome (exact when known)."""
    peak: int | None
    tile: int | None
    step: int | None
    inter: int | None
    if account is not None:
        total, tile, step = account.peak("total")
        peak, inter = total + exchange, account.peak("interleaved")[0]
    else:
        peak, tile, step, inter = effective, None, peaks.total_step, peaks.interleaved
    return {"fits": fits, "scope": report.scope, "peak": peak, "budget": report.budget_bytes,
            "margin": None if peak is None else report.budget_bytes - peak, "tile": tile, "step": step,
            "interleaved_peak": inter}


# comparing JSON sections ------------------------------------------------------------------

_MISSING = "(missing)"


def compare_json(result: CheckResult, place: str, reported: object, derived: object) -> None:
    """Compare a JSON section; name the first place inside it that differs."""
    found = first_difference(reported, derived, place)
    if found is not None:
        where, mine, theirs = found
        result.add("disagree", where, f"reports {show(mine)}; re-derived {show(theirs)}")


def first_difference(a: object, b: object, place: str) -> tuple[str, object, object] | None:
    """The first path (in key and index order) where two JSON values differ, with both
    sides there; None when equal. `True` and `1` differ; recursion follows `b`, the
    derived side, so its depth is bounded."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            found = first_difference(a.get(key, _MISSING), b.get(key, _MISSING), f"{place}.{text(str(key))}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{place} (length)", len(a), len(b)
        if a == b and all(type(x) is type(y) and not isinstance(y, (list, dict)) for x, y in zip(a, b)):
            return None  # the common case, a list of numbers, without a call per element
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{place}[{i}]")
            if found is not None:
                return found
        return None
    if type(a) is type(b) and a == b:
        return None
    return place, a, b


def _ids(ids: list[int], limit: int = 8) -> str:
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")
