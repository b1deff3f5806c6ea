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
from tileplan.model.timeline import REGIONS, Step, Value
from tileplan.report.check_exact import (
    StepTiles,
    TileAccount,
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
    show,
)
from tileplan.report.check_shards import Sharding, shard_layout
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
    result = CheckResult(values_total=len(report.values), steps_total=len(report.steps))
    if report.interleaved_budget_bytes > report.budget_bytes:
        result.add("disagree", "interleaved_budget_bytes", f"reports {report.interleaved_budget_bytes}, more than "
                                                           f"budget_bytes {report.budget_bytes} (both regions)")
    shardings, sizes, alignments = check_values(report, result)
    unknown = {v.id for v in report.values if v.id not in shardings}
    check_live_sets(report, result)

    # storage groups: one region each, sized by the largest member
    regions_of: dict[int, set[str]] = {}
    for v in report.values:
        regions_of.setdefault(v.storage_group, set()).add(v.region)
    mixed = sorted(g for g, rs in regions_of.items() if len(rs) > 1)
    for g in mixed:
        result.add("disagree", f"storage_group {g}", f"members span regions {sorted(regions_of[g])}")
    check_scope(report.scope, report.extra, result.add)
    check_program(report.extra, result.add)
    check_operations(report.extra, report.steps, result.add)
    if mixed:
        return result
    group_of = {v.id: v.storage_group for v in report.values}
    region_of = {g: next(iter(rs)) for g, rs in regions_of.items()}
    group_bytes = storage_group_bytes(report.values, sizes)

    # usage of each step: live groups, each once, + scratch
    usage = []
    for i, s in enumerate(report.steps):
        place = f"timeline.steps[{i}]"
        if s.index != i:
            result.add("disagree", f"{place}.index", f"reports {s.index}, expected {i} (its position)")
        derived = step_usage(s, group_of, region_of, group_bytes)
        live_unknown = sorted(v for v in s.live if v in unknown)
        why = f" (live unrepresentable values: {_ids(live_unknown)})" if live_unknown else ""
        ok = True
        for region in REGIONS:
            ok &= _compare(result, f"{place}.usage.{region}", s.usage[region], derived[region], why)
        result.steps_agreeing += ok
        usage.append(derived)

    # peaks, exchange rows, overflow, effective peak
    peaks = find_peaks(report.steps, usage, group_of, region_of, group_bytes)
    if unknown:
        zero = {g: (0 if b is None else b) for g, b in storage_group_bytes(
            report.values, {k: (0 if v is None else v) for k, v in sizes.items()}).items()}
        known_usage = [step_usage(s, group_of, region_of, zero) for s in report.steps]
        result.known_peaks = find_peaks(report.steps, known_usage, group_of, region_of, zero)
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
        _compare(result, "peak.exchange_rows", rows, exchange_rows(s.operation for s in report.steps))
        exchange = (rows or 0) * report.exchange_row_bytes
    standard_budget = report.budget_bytes - report.interleaved_budget_bytes
    standard = [u["standard"] for u in usage if u["standard"] is not None]
    overflow = None if len(standard) < len(usage) else max((max(0, x - standard_budget) for x in standard), default=0)
    _compare(result, "standard_contiguous_overflow_bytes", report.standard_contiguous_overflow_bytes, overflow, why)
    effective = None if peaks.total is None else peaks.total + exchange
    if report.exchange_row_bytes is not None or report.effective_peak_bytes is None \
            or report.effective_peak_bytes >= WRAP_FLOOR:
        _compare(result, "effective_peak_bytes", report.effective_peak_bytes, effective, why)

    # exact per-tile accounting, then the verdict
    account, tiles = None, None
    if "exact" in report.extra:
        account, tiles = check_exact(report, result, shardings, alignments, group_bytes, peaks)
    over = over_budget(report, usage, account, exchange)
    known = account is not None or (effective is not None and peaks.interleaved is not None)
    fits = report.scope == "program" and known and not over
    if "verdict" in report.extra:
        verdict = verdict_section(report, peaks, effective, exchange, account, over, fits)
        if account is not None and tiles is not None:
            verdict["peak_tile"] = peak_tile(report, account, tiles)
        compare_json(result, "verdict", report.extra["verdict"], verdict)
    if report.fits_budget != fits:
        result.add("disagree", "fits_budget", f"reports {str(report.fits_budget).lower()}; re-derived "
                                              f"{str(fits).lower()} (scope {report.scope})")
    check_what_if(report.extra, baseline(report, fits, peaks, effective, exchange, account), result.add)
    if "non_tensor" in report.extra:
        compare_json(result, "non_tensor", report.extra["non_tensor"], non_tensor(report))
    if "placement" in report.extra:
        check_placement(report, result)
    return result


# placements of the worst tiles ------------------------------------------------------------

def check_placement(report: Report, result: CheckResult) -> None:
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
    group_of = {v.id: v.storage_group for v in report.values}
    for s in report.steps:
        for vid in s.live:
            g = group_of.get(vid)
            if g is not None:
                lo, hi = span.get(g, (s.index, s.index))
                span[g] = (min(lo, s.index), max(hi, s.index))
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


def non_tensor(report: Report) -> dict[str, Any]:
    """The `non_tensor` section re-derived from the steps' operation texts; its note is
    taken as written (prose)."""
    ops = [s.operation for s in report.steps]
    program = [op for op in ops if not op.startswith("View ")]
    compute = [op for op in program if not op.startswith("Copy ")]
    kinds = {op.replace("}", ",").split(",", 1)[0].strip() for op in compute}
    exchanging = sum(exchanges(op) for op in ops)
    figures = {"vertex_code": len(kinds) * NON_TENSOR_RATES["vertex_code"],
               "vertex_state": len(compute) * NON_TENSOR_RATES["vertex_state"],
               "exchange_code": exchanging * NON_TENSOR_RATES["exchange_code"],
               "control_code": len(program) * NON_TENSOR_RATES["control_code"], "stack": STACK_BYTES}
    total = sum(figures.values())
    section = report.extra["non_tensor"]
    note = section.get("note") if isinstance(section, dict) else None
    return {**figures, "total": total, "reserve": report.support_reserve_bytes,
            "over_reserve": max(0, total - report.support_reserve_bytes),
            "counts": {"kinds": len(kinds), "compute_steps": len(compute), "program_steps": len(program),
                       "exchange_steps": exchanging}, "note": note}


# values -------------------------------------------------------------------------------

def check_values(report: Report, result: CheckResult) -> tuple[dict[int, Sharding], dict[int, int | None],
                                                                dict[int, int]]:
    """Shardings of the representable values, every value's re-derived `bytes` (None
    when unrepresentable) and each representable value's alignment."""
    rejected = {j.value: j for j in report.rejections}
    shardings: dict[int, Sharding] = {}
    sizes: dict[int, int | None] = {}
    alignments: dict[int, int] = {}
    memo: dict[tuple, Sharding | TilingError] = {}
    for i, v in enumerate(report.values):
        place = f"timeline.values[{i}] ({text(v.name)})"
        key = (v.layout, v.shape)
        if key not in memo:
            try:
                memo[key] = shard_layout(v.layout, v.shape)
            except TilingError as e:
                memo[key] = e
        found = memo[key]
        sizes[v.id] = None
        if isinstance(found, TilingError):
            sized = {"shard_bytes": v.shard_bytes, "aligned_bytes": v.aligned_bytes, "bytes": v.bytes}
            sentinels = [k for k, n in sized.items() if n == SENTINEL]
            numbers = [k for k, n in sized.items() if n is not None and n != SENTINEL]
            properly = not sentinels and not numbers and v.id in rejected
            result.add("rejected" if properly else "unrepresentable", place, found.detail)
            if sentinels:
                result.add("defect", place, f"{', '.join(sentinels)} hold the sentinel 2^64 - 1 for an "
                                            "unrepresentable shard; expected null and a rejection")
            if numbers:
                result.add("disagree", place, f"{', '.join(numbers)} given for an unrepresentable shard")
            if v.id not in rejected and not sentinels:
                result.add("defect", place, "unrepresentable but not listed under rejections")
            continue
        shardings[v.id] = found
        if v.id in rejected:
            result.add("disagree", place, f"listed under rejections ({text(rejected[v.id].reason)}) "
                                          "but its layout represents it")
        shard = found.largest_elements * v.precision.bytes
        ok = _compare(result, f"{place}.shard_bytes", v.shard_bytes, shard)
        if v.alignment_bytes is not None:
            alignment = v.alignment_bytes
        else:  # version 1: unaligned, or one element pair when aligned_bytes says so
            pair = -(-shard // ELEMENT_PAIR_BYTES) * ELEMENT_PAIR_BYTES
            alignment = ELEMENT_PAIR_BYTES if v.aligned_bytes == pair != shard else 1
        aligned = -(-shard // alignment) * alignment
        alignments[v.id] = alignment
        ok &= _compare(result, f"{place}.aligned_bytes", v.aligned_bytes, aligned)
        ok &= _compare(result, f"{place}.bytes", v.bytes, aligned * v.copies)
        sizes[v.id] = aligned * v.copies
        result.values_agreeing += ok
    ids = {v.id for v in report.values}
    for i, v in enumerate(report.values):
        if v.root not in ids:
            result.add("disagree", f"timeline.values[{i}] ({text(v.name)})", f"root {v.root} is not a value id")
    names = {v.id: v.name for v in report.values}
    listed: set[int] = set()
    for i, j in enumerate(report.rejections):
        if j.value not in ids:
            result.add("disagree", f"rejections[{i}]", f"value {j.value} ({text(j.name)}) is not in the timeline")
        elif j.name != names[j.value]:
            result.add("disagree", f"rejections[{i}].name", f"reports {text(j.name)}; value {j.value} is named "
                                                             f"{text(names[j.value])}")
        if j.value in listed:
            result.add("disagree", f"rejections[{i}]", f"value {j.value} is listed twice")
        listed.add(j.value)
    if report.scope == "program" and len(shardings) < len(report.values):
        result.add("disagree", "scope", f"program, but {len(report.values) - len(shardings)} values are "
                                        "unrepresentable (planning stops at the first operation they are live in)")
    return shardings, sizes, alignments


# live sets ----------------------------------------------------------------------------

def check_live_sets(report: Report, result: CheckResult) -> None:
    """Each `live` ascending with each id once; each value live in one run of steps
    (its live range), at least one; declared tensors (role input or parameter) from
    step 0; the members of a storage group that own their data (root = id) hold it one
    after another, each from the step where the previous one is last live."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    count: dict[int, int] = {}
    for i, s in enumerate(report.steps):
        place = f"timeline.steps[{i}].live"
        bad = next((k for k in range(1, len(s.live)) if s.live[k] <= s.live[k - 1]), None)
        if bad is not None:
            word = "twice" if s.live[bad] == s.live[bad - 1] else f"after {s.live[bad - 1]}"
            result.add("disagree", place, f"value {s.live[bad]} {word}; expected ascending ids, each once")
        for vid in set(s.live):
            first.setdefault(vid, i)
            last[vid] = i
            count[vid] = count.get(vid, 0) + 1
    for i, v in enumerate(report.values):
        place = f"timeline.values[{i}] ({text(v.name)})"
        if v.id not in first:
            result.add("disagree", place, "is live in no step; the timeline lists only values live in some step")
            continue
        if count[v.id] != last[v.id] - first[v.id] + 1:
            gap = next(k for k in range(first[v.id], last[v.id] + 1) if v.id not in report.steps[k].live)
            result.add("disagree", place, f"live in steps {first[v.id]} to {last[v.id]} but not in step {gap}; "
                                          "a value is live in one run of steps")
        if v.resident and first[v.id] != 0:
            result.add("disagree", place, f"a declared tensor ({v.role}) first live in step {first[v.id]}; "
                                          "expected step 0")
    members: dict[int, list[Value]] = {}
    for v in report.values:
        if v.id in first:
            members.setdefault(v.storage_group, []).append(v)
    for g, group in sorted(members.items()):
        # an owner of the storage (root == id) after the first is written in place of
        # a member (an owner or a view aliasing one) whose last step is its first
        chain = sorted(group, key=lambda m: (first[m.id], last[m.id], m.id))
        for k, b in enumerate(chain[1:], start=1):
            if b.root != b.id:
                continue
            ends = {last[a.id] for a in chain[:k]}
            if first[b.id] not in ends:
                prev = max(chain[:k], key=lambda a: (last[a.id], a.id))
                result.add("disagree", f"storage_group {g}",
                           f"value {b.id} ({text(b.name)}) first live in step {first[b.id]}, but no earlier member "
                           f"ends there (value {prev.id} ({text(prev.name)}) last live in step {last[prev.id]}); "
                           "a value written in place starts where a member of its group ends")
                break


# usage, peaks, exchange -----------------------------------------------------------------

def storage_group_bytes(values: Sequence[Value], sizes: Mapping[int, int | None]) -> dict[int, int | None]:
    """Each storage group's bytes: its largest member's (None if a member's is unknown)."""
    out: dict[int, int | None] = {}
    for v in values:
        b = sizes[v.id]
        if v.storage_group not in out:
            out[v.storage_group] = b
        else:
            current = out[v.storage_group]
            out[v.storage_group] = None if current is None or b is None else max(current, b)
    return out


def step_usage(step: Step, group_of: Mapping[int, int], region_of: Mapping[int, str],
               group_bytes: Mapping[int, int | None]) -> dict[str, int | None]:
    """A step's usage per region: its live storage groups, each once, + its scratch."""
    usage: dict[str, int | None] = {r: step.scratch.get(r, 0) for r in REGIONS}
    for g in sorted({group_of[v] for v in step.live}):
        current, b = usage[region_of[g]], group_bytes[g]
        usage[region_of[g]] = None if current is None or b is None else current + b
    return usage


def find_peaks(steps: Sequence[Step], usage: Sequence[Mapping[str, int | None]], group_of: Mapping[int, int],
               region_of: Mapping[int, str], group_bytes: Mapping[int, int | None]) -> Peaks:
    """Largest usage per region and of their sum, each at its first step; None when a
    step's usage is unknown or there are no steps."""
    def peak(series: list[int | None]) -> tuple[int | None, int | None]:
        known = [x for x in series if x is not None]
        if not series or len(known) < len(series):
            return None, None
        best = max(known)
        return best, known.index(best)

    std = [u["standard"] for u in usage]
    inter = [u["interleaved"] for u in usage]
    total = [None if a is None or b is None else a + b for a, b in zip(std, inter)]
    live = {group_of[v] for s in steps for v in s.live}
    allocations = [group_bytes[g] for g in live if region_of[g] == "standard"]
    sized = [b for b in allocations if b is not None]
    largest = None if len(sized) < len(allocations) else max(sized, default=0)
    (ps, ss), (pi, si), (pt, st) = peak(std), peak(inter), peak(total)
    return Peaks(ps, pi, pt, ss, si, st, largest)


def exchange_rows(operations: Iterable[str]) -> int:
    """One exchange row per exchanging step of the timeline (a repeat block's step once)."""
    return sum(exchanges(op) for op in operations)


# exact and verdict ------------------------------------------------------------------------

def check_exact(report: Report, result: CheckResult, shardings: Mapping[int, Sharding], alignments: Mapping[int, int],
                group_bytes: Mapping[int, int | None], peaks: Peaks) -> tuple[TileAccount | None, TileBytes | None]:
    """Re-derive `exact` when the report gives it; the accounting, or None when it
    cannot be derived (a finding says why)."""
    if len(shardings) < len(report.values) or not report.steps:
        result.add("disagree", "exact", "given, but exact accounting needs steps and every value representable")
        return None, None
    bound = sum(b or 0 for b in group_bytes.values()) + max(sum(s.scratch.values()) for s in report.steps)
    if bound >= INT64_SAFE:
        result.add("defect", "exact", f"not re-derived: the storage groups and scratch add up to {bound} bytes per "
                                      "tile, beyond 2^62")
        return None, None
    tiles = TileBytes(report.values, shardings, alignments, report.tile_count)
    account = account_tiles(report.values, report.steps, tiles)
    derived = exact_section(account, peaks.total)
    reported = report.extra["exact"]
    model = reported.get("model") if isinstance(reported, dict) else None
    derived = {"model": model if isinstance(model, str) else "(the accounting model, in words)", **derived}
    compare_json(result, "exact", reported, derived)
    return account, tiles


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


def over_budget(report: Report, usage: Sequence[Mapping[str, int | None]], account: TileAccount | None,
                exchange: int) -> list[OverBudget]:
    """Every (step, region) over budget, in step order, interleaved before total: the
    interleaved usage over `interleaved_budget_bytes`, or standard + interleaved +
    exchange over `budget_bytes`; on each step's worst tiles with `exact`, else on the
    estimate (steps of unknown usage skipped)."""
    out = []
    inter_tile: int | None
    tile: int | None
    for i, u in enumerate(usage):
        if account is not None:
            w: StepTiles = account.steps[i]
            inter, inter_tile, total, tile = w.max_interleaved, w.max_interleaved_tile, w.total, w.tile
        else:
            std, estimated = u["standard"], u["interleaved"]
            if std is None or estimated is None:
                continue
            inter, inter_tile, total, tile = estimated, None, std + estimated, None
        if inter > report.interleaved_budget_bytes:
            out.append(OverBudget(i, "interleaved", inter_tile, inter, report.interleaved_budget_bytes))
        if total + exchange > report.budget_bytes:
            out.append(OverBudget(i, "total", tile, total + exchange, report.budget_bytes))
    return out


def verdict_section(report: Report, peaks: Peaks, effective: int | None, exchange: int,
                    account: TileAccount | None, over: list[OverBudget], fits: bool) -> dict[str, Any]:
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
    if over:
        worst = over[0]
        for o in over[1:]:
            if o.usage - o.budget > worst.usage - worst.budget:  # the most bytes over, the first on ties
                worst = o
        out["over_budget"] = {"steps": len({o.step for o in over}), "first": over[0].to_json(),
                              "worst": worst.to_json()}
        if worst.tile is not None:
            out["out_of_memory"] = (f"Out of memory on tile {worst.tile} at step {worst.step}: {worst.usage} bytes "
                                    f"used, budget {worst.budget}")
    return out


def peak_tile(report: Report, account: TileAccount, tiles: TileBytes) -> dict[str, Any]:
    """`verdict.peak_tile`, each value's `class` from its layout; its `precision` is
    display text (its form is the views' business): any non-empty string passes."""
    derived = peak_tile_section(report.steps, account, tiles)
    verdict = report.extra.get("verdict")
    stated = verdict.get("peak_tile") if isinstance(verdict, dict) else None
    stated_values = stated.get("values") if isinstance(stated, dict) else None
    for i, entry in enumerate(derived["values"]):
        v = tiles.by_id[entry["id"]]
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
