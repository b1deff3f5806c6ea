"""`tileplan check` on the values and the live sets: each value's sizes from its
layout text, shape and precision (`tileplan.check.shards`), each distinct case judged once; the
rejections; the live sets' rules (docs/report-format.md, "Live sets")."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tileplan.errors import TilingError
from tileplan.model.timeline import Value
from tileplan.check.exact import ValueKinds
from tileplan.check.result import SENTINEL, CheckResult, compare, text
from tileplan.check.shards import Sharding, shard_layout
from tileplan.check.timeline import Groups, LiveRuns, ValueColumns, reference_policy
from tileplan.report.model import Report

#: Version-1 reports without `alignment_bytes` align AMP-read values to one
#: interleaved memory element pair (32 KiB) and nothing else.
ELEMENT_PAIR_BYTES = 32768

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
            compare(scratch, key, reported, derived)
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
    (its live range), at least one; declared tensors (a declared role: input,
    parameter, buffer or training state) from step 0; the members of a storage group
    that own their data (root = id) hold it one after another, each from the step
    where the previous one is last live."""
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
        if vc.resident[i] and first[i] != 0:
            result.add("disagree", place, f"a declared tensor ({v.role}) first live in step {first[i]}; "
                                          "expected step 0")
    if report.scope == "program" and first.size and not reference_policy(report):
        end = int(last.max())
        for i in np.flatnonzero(vc.parameter & (first >= 0) & (last != end)).tolist()[:8]:
            result.add("disagree", f"timeline.values[{i}] ({text(values[i].name)})",
                       f"a {values[i].role} last live in step {last[i]}; with the default policy a declared "
                       f"tensor other than the input is always live, to the last step ({end})")
    members: dict[int, list[int]] = {}
    firsts, lasts = first.tolist(), last.tolist()
    live = first >= 0
    sizes = np.bincount(g.of_value[live], minlength=len(g.ids))
    for p in np.flatnonzero(live & (sizes[g.of_value] > 1)).tolist():
        members.setdefault(vc.storage_group[p], []).append(p)
    for k, group in sorted(members.items()):
        # an owner of the storage (root == id) after the first is written in place of
        # a member (an owner or a view aliasing one) whose last step is its first
        # (an owner before the views of it that start in the same step: a view of a
        # parameter made in step 0 does not make the parameter a write in its place)
        chain = sorted(group, key=lambda m: (firsts[m], values[m].root != values[m].id, lasts[m], values[m].id))
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
