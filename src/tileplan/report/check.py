"""Re-derive every number of a report from the report alone.

`check_report` recomputes each value's shard bytes (from its layout text, shape and
precision), alignment and bytes, each step's usage (live storage groups + scratch),
the peaks and their steps, the overflow, the effective peak and the verdict, and
returns what agrees, what disagrees and what is a defect (a sentinel, wrapped
arithmetic, a number without a stated rule).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from tileplan.errors import TilingError
from tileplan.model.tiling import round_up, shards_of
from tileplan.model.timeline import REGIONS, Value
from tileplan.model.tiling import Shards
from tileplan.planner.exact import account
from tileplan.planner.exchange import exchange_rows
from tileplan.planner.usage import Peaks, find_peaks, judge_budget, step_usage, storage_groups, verdict_json
from tileplan.report.exact import exact_json, peak_tile_json
from tileplan.report.format import U64_MAX, Report

SENTINEL = U64_MAX  # the reference's "unknown"
WRAP_FLOOR = 2**63
#: Version-1 reports without `alignment_bytes` align AMP-read values to one
#: interleaved memory element pair (32 KiB) and nothing else.
ELEMENT_PAIR_BYTES = 32768


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
    result = CheckResult(values_total=len(report.values), steps_total=len(report.steps))
    rejected = {j.value: j for j in report.rejections}
    unknown: set[int] = set()
    shards: dict[int, Shards] = {}

    # values: shard, aligned and total bytes from layout, shape and precision
    for i, v in enumerate(report.values):
        place = f"timeline.values[{i}] ({v.name})"
        try:
            shards[v.id] = shards_of(v.layout, v.shape, v.name)
            shard = shards[v.id].largest_bytes(v.precision)
        except TilingError as e:
            unknown.add(v.id)
            sizes = {"shard_bytes": v.shard_bytes, "aligned_bytes": v.aligned_bytes, "bytes": v.bytes}
            sentinels = [k for k, n in sizes.items() if n == SENTINEL]
            numbers = [k for k, n in sizes.items() if n is not None and n != SENTINEL]
            properly = not sentinels and not numbers and v.id in rejected
            result.add("rejected" if properly else "unrepresentable", place, e.detail)
            if sentinels:
                result.add("defect", place, f"{', '.join(sentinels)} hold the sentinel 2^64 - 1 for an "
                                            "unrepresentable shard; expected null and a rejection")
            if numbers:
                result.add("disagree", place, f"{', '.join(numbers)} given for an unrepresentable shard")
            if v.id not in rejected and not sentinels:
                result.add("defect", place, "unrepresentable but not listed under rejections")
            continue
        if v.id in rejected:
            result.add("disagree", place, f"listed under rejections ({rejected[v.id].reason}) "
                                          "but its layout represents it")
        ok = _compare(result, f"{place}.shard_bytes", v.shard_bytes, shard)
        if v.alignment_bytes is not None:
            aligned = round_up(shard, v.alignment_bytes)
        else:
            element = round_up(shard, ELEMENT_PAIR_BYTES)
            aligned = v.aligned_bytes if v.aligned_bytes in (shard, element) else shard
        ok &= _compare(result, f"{place}.aligned_bytes", v.aligned_bytes, aligned)
        ok &= _compare(result, f"{place}.bytes", v.bytes, aligned * v.copies)
        result.values_agreeing += ok

    ids = {v.id for v in report.values}
    for i, v in enumerate(report.values):
        if v.root not in ids:
            result.add("disagree", f"timeline.values[{i}] ({v.name})", f"root {v.root} is not a value id")
    for j in report.rejections:
        if j.value not in ids:
            result.add("disagree", "rejections", f"value {j.value} ({j.name}) is not in the timeline")

    # steps: usage = live storage groups (each once) + scratch
    regions_of: dict[int, set[str]] = {}
    for v in report.values:
        regions_of.setdefault(v.storage_group, set()).add(v.region)
    mixed = {g for g, rs in regions_of.items() if len(rs) > 1}
    for g in sorted(mixed):
        result.add("disagree", f"storage_group {g}", f"members span regions {sorted(regions_of[g])}")
    if mixed:
        return result
    sized = [v if v.id not in unknown else _unknown_size(v) for v in report.values]
    groups = storage_groups(sized)
    value_group = {v.id: v.storage_group for v in sized}
    derived_steps = []
    for i, s in enumerate(report.steps):
        place = f"timeline.steps[{i}]"
        if s.index != i:
            result.add("disagree", f"{place}.index", f"reports {s.index}, expected {i} (its position)")
        usage = step_usage(s.live, s.scratch, value_group, groups)
        live_unknown = sorted(v for v in s.live if v in unknown)
        why = f" (live unrepresentable values: {_ids(live_unknown)})" if live_unknown else ""
        ok = True
        for region in REGIONS:
            ok &= _compare(result, f"{place}.usage.{region}", s.usage[region], usage[region], why)
        result.steps_agreeing += ok
        derived_steps.append(replace(s, usage=usage))

    # peaks, overflow, effective peak, verdict
    peaks = find_peaks(derived_steps, groups, value_group)
    if unknown:
        zero = storage_groups([v if v.id not in unknown else replace(v, bytes=0) for v in report.values])
        known_steps = [replace(s, usage=step_usage(s.live, s.scratch, value_group, zero)) for s in report.steps]
        result.known_peaks = find_peaks(known_steps, zero, value_group)
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
    if report.exchange_row_bytes is not None:
        _compare(result, "peak.exchange_rows", rows, exchange_rows(s.operation for s in report.steps))
    if report.exchange_row_bytes is None:
        if rows:
            result.add("defect", "peak.exchange_rows",
                       f"{rows} rows with no stated byte cost (no exchange_row_bytes); the effective peak cannot "
                       "be re-derived")
        exchange = 0
    else:
        exchange = (rows or 0) * report.exchange_row_bytes
    exact = None
    if "exact" in report.extra:
        if unknown or not derived_steps:
            result.add("disagree", "exact", "given, but exact accounting needs every value representable")
        else:
            exact = account(sized, derived_steps, shards, report.tile_count, {v.id for v in sized if v.resident})
            _compare_json(result, "exact", report.extra["exact"], exact_json(exact, peaks.total))
    verdict = judge_budget(derived_steps, peaks, report.budget_bytes, report.interleaved_budget_bytes,
                           exchange, complete=report.scope == "program", exact=exact)
    _compare(result, "standard_contiguous_overflow_bytes", report.standard_contiguous_overflow_bytes,
             verdict.standard_contiguous_overflow_bytes, why)
    if report.exchange_row_bytes is not None or report.effective_peak_bytes is None \
            or report.effective_peak_bytes >= WRAP_FLOOR:
        _compare(result, "effective_peak_bytes", report.effective_peak_bytes, verdict.effective_peak_bytes, why)
    if "verdict" in report.extra:
        derived = verdict_json(derived_steps, peaks, verdict, report.budget_bytes, report.interleaved_budget_bytes,
                               exchange, exact)
        if exact is not None:
            derived["peak_tile"] = peak_tile_json(sized, derived_steps, shards, exact)
        _compare_json(result, "verdict", report.extra["verdict"], derived)
    if report.fits_budget != verdict.fits:
        result.add("disagree", "fits_budget", f"reports {str(report.fits_budget).lower()}; re-derived "
                                              f"{str(verdict.fits).lower()} (scope {report.scope})")
    return result


def _compare_json(result: CheckResult, place: str, reported: object, derived: object) -> None:
    """Compare a JSON section; name the first place inside it that differs."""
    found = first_difference(reported, derived, place)
    if found is not None:
        where, mine, theirs = found
        result.add("disagree", where, f"reports {json.dumps(mine)[:120]}; re-derived {json.dumps(theirs)[:120]}")


_MISSING = "(missing)"


def first_difference(a: object, b: object, place: str) -> tuple[str, object, object] | None:
    """The first path (in key and index order) where two JSON values differ, with
    both sides there; None when equal."""
    if a == b:
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = first_difference(a.get(key, _MISSING), b.get(key, _MISSING), f"{place}.{key}")
            if found is not None:
                return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{place}[{i}]")
            if found is not None:
                return found
    if isinstance(a, list) and isinstance(b, list):
        return f"{place} (length)", len(a), len(b)
    return place, a, b


def _unknown_size(v: Value) -> Value:
    return replace(v, shard_bytes=None, aligned_bytes=None, bytes=None)


def _ids(ids: list[int], limit: int = 8) -> str:
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")
