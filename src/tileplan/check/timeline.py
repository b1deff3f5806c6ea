"""`tileplan check`'s timeline as columns: live runs, storage groups, usage and peaks,
linear in the report (docs/report-format.md, "Live sets", "Budget").

A value's live steps are kept as runs [first, last] (a valid report has one run per
value: version 2 stores exactly that, version 1's live lists are turned into runs
once, with the rules on them checked on the way). A storage group is live where any
of its members is (the union of their runs); a step's usage of a region is the bytes
of the groups live there, each once, plus its scratch: a difference array over the
groups' runs, so no live set is ever built per step. Sums stay exact: int64 while
every total is below 2^62, Python integers (object arrays) beyond.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from tileplan.errors import InputError
from tileplan.model.timeline import Step, StepTable, Value
from tileplan.report.model import Report

INT64_SAFE = 2**62
INT64_MAX = 2**63 - 1

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


def ints(items: Sequence[int]) -> np.ndarray:
    """int64 when every entry fits, else an object array of Python integers."""
    try:
        return np.array(items, dtype=np.int64) if len(items) else np.zeros(0, dtype=np.int64)
    except OverflowError:
        return np.array(list(items), dtype=object)


@dataclass(slots=True)
class ValueColumns:
    """What the passes read of every value, read off the `Value`s once: storage
    groups, regions (each distinct layout judged once) and declared tensors."""

    storage_group: list[int]
    interleaved: np.ndarray
    resident: np.ndarray
    #: the held tensors (weights, buffers, constants, training state): always live with
    #: the default policy
    parameter: np.ndarray


#: the roles (by their report text) of declared tensors, live from step 0, and of those
#: held for the whole program with the default policy: all but the input
DECLARED_ROLES = frozenset({"input", "parameter", "buffer", "accumulator", "optimizer_state", "stash"})
HELD_ROLES = DECLARED_ROLES - {"input"}


def value_columns(values: Sequence[Value]) -> ValueColumns:
    layouts = list(map(attrgetter("layout"), values))
    interleaved: dict[int, bool] = {}
    for layout in {id(x): x for x in layouts}.values():
        interleaved[id(layout)] = layout.memory_class.usage_key == "interleaved"
    return ValueColumns(list(map(attrgetter("storage_group"), values)),
                        np.fromiter((interleaved[id(x)] for x in layouts), dtype=bool, count=len(values)),
                        np.fromiter((r in DECLARED_ROLES for r in map(attrgetter("role"), values)),
                                    dtype=bool, count=len(values)),
                        np.fromiter((r in HELD_ROLES for r in map(attrgetter("role"), values)),
                                    dtype=bool, count=len(values)))


@dataclass(slots=True)
class StepColumns:
    """The steps' own fields as columns (a `StepTable`'s, or read off `Step`s once)."""

    n: int
    source: np.ndarray
    operation: np.ndarray  # index into texts
    texts: tuple[str, ...]
    execution_count: np.ndarray
    scratch: dict[str, np.ndarray]
    usage: dict[str, np.ndarray]  # reported, 0 where unknown
    known: dict[str, np.ndarray]  # reported usage given (not null)
    index: np.ndarray | None  # a Step's own index (version 1); None for a StepTable


def step_columns(steps: Sequence[Step]) -> StepColumns:
    if isinstance(steps, StepTable):
        return StepColumns(len(steps), steps.source, steps.operation, steps.operation_texts, steps.execution_count,
                           {"standard": steps.scratch_standard, "interleaved": steps.scratch_interleaved},
                           {"standard": steps.usage_standard, "interleaved": steps.usage_interleaved},
                           {"standard": steps.standard_known, "interleaved": steps.interleaved_known}, None)
    texts: dict[str, int] = {}
    usage = {r: [s.usage.get(r) for s in steps] for r in ("standard", "interleaved")}
    return StepColumns(
        len(steps), ints([s.source for s in steps]),
        np.array([texts.setdefault(s.operation, len(texts)) for s in steps], dtype=np.int64), tuple(texts),
        ints([s.execution_count for s in steps]),
        {r: ints([s.scratch.get(r, 0) for s in steps]) for r in ("standard", "interleaved")},
        {r: ints([0 if x is None else x for x in usage[r]]) for r in usage},
        {r: np.array([x is not None for x in usage[r]], dtype=bool) for r in usage},
        ints([s.index for s in steps]))


@dataclass(slots=True)
class LiveRuns:
    """Runs of live steps: value position `pos[k]` is live in steps first[k]..last[k],
    sorted by (pos, first), disjoint and not adjacent within a value. Per value: its
    first and last live step (-1 when live nowhere) and how many runs it has."""

    pos: np.ndarray
    first: np.ndarray
    last: np.ndarray
    value_first: np.ndarray
    value_last: np.ndarray
    value_runs: np.ndarray
    #: (step, message) of live lists that are not ascending with each id once
    unordered: list[tuple[int, str]]
    #: live ids that are no value of the timeline (value id, step)
    strangers: list[tuple[int, int]]


def _merge(pos: np.ndarray, first: np.ndarray, last: np.ndarray, n_steps: int) -> tuple[np.ndarray, ...]:
    """Runs sorted by (pos, first) merged where they overlap or touch."""
    if not len(pos):
        return pos, first, last
    order = np.lexsort((first, pos))
    pos, first, last = pos[order], first[order], last[order]
    span = n_steps + 2
    key_last = pos * span + last  # running maximum of last within a value, across values in order
    reach = np.maximum.accumulate(key_last)
    starts = np.ones(len(pos), dtype=bool)
    starts[1:] = (pos[1:] != pos[:-1]) | (pos[1:] * span + first[1:] > reach[:-1] + 1)
    idx = np.flatnonzero(starts)
    ends = np.append(idx[1:], len(pos)) - 1
    return pos[idx], first[idx], reach[ends] - pos[idx] * span


def live_runs(values: Sequence[Value], steps: Sequence[Step], positions: dict[int, int]) -> LiveRuns:
    n_values, n_steps = len(values), len(steps)
    unordered: list[tuple[int, str]] = []
    strangers: list[tuple[int, int]] = []
    if isinstance(steps, StepTable):
        ids = steps.value_ids.tolist()
        pos = np.array([positions.get(v, -1) for v in ids], dtype=np.int64)
        first, last = steps.first.astype(np.int64), steps.last.astype(np.int64)
        for k in np.flatnonzero(pos < 0).tolist():
            strangers.append((ids[k], int(first[k])))
    else:
        lengths = np.fromiter((len(s.live) for s in steps), dtype=np.int64, count=n_steps)
        flat = list(itertools.chain.from_iterable(s.live for s in steps))
        step_of = np.repeat(np.arange(n_steps, dtype=np.int64), lengths)
        raw = ints(flat)
        if len(raw) > 1:
            same = step_of[1:] == step_of[:-1]
            bad = np.flatnonzero(same & (raw[1:] <= raw[:-1]))
            seen: set[int] = set()
            for k in bad.tolist():
                step = int(step_of[k + 1])
                if step in seen:
                    continue
                seen.add(step)
                a, b = flat[k], flat[k + 1]
                word = "twice" if a == b else f"after {a}"
                unordered.append((step, f"value {b} {word}; expected ascending ids, each once"))
        pos = np.array([positions.get(v, -1) for v in flat], dtype=np.int64)
        for k in np.flatnonzero(pos < 0).tolist():
            strangers.append((flat[k], int(step_of[k])))
        first = last = step_of
    keep = pos >= 0
    pos, first, last = _merge(pos[keep], first[keep], last[keep], n_steps)
    value_first = np.full(n_values, -1, dtype=np.int64)
    value_last = np.full(n_values, -1, dtype=np.int64)
    value_runs = np.bincount(pos, minlength=n_values) if len(pos) else np.zeros(n_values, dtype=np.int64)
    if len(pos):
        starts = np.ones(len(pos), dtype=bool)
        starts[1:] = pos[1:] != pos[:-1]
        value_first[pos[starts]] = first[starts]
        ends = np.append(starts[1:], True)
        value_last[pos[ends]] = last[ends]
    return LiveRuns(pos, first, last, value_first, value_last, value_runs, unordered, strangers)


@dataclass(slots=True)
class Groups:
    """Storage groups as dense indices: each value's group, each group's region
    (0 standard, 1 interleaved) and its runs (the union of its members')."""

    of_value: np.ndarray
    ids: list[int]  # the report's storage_group of each dense group
    region: np.ndarray
    pos: np.ndarray
    first: np.ndarray
    last: np.ndarray


def groups(vc: ValueColumns, runs: LiveRuns, n_steps: int) -> Groups:
    dense: dict[int, int] = {}
    of_value = np.array([dense.setdefault(x, len(dense)) for x in vc.storage_group], dtype=np.int64)
    region = np.zeros(len(dense), dtype=np.int64)
    region[of_value[vc.interleaved]] = 1
    pos, first, last = _merge(of_value[runs.pos], runs.first, runs.last, n_steps)
    return Groups(of_value, list(dense), region, pos, first, last)


def sweep(n_steps: int, pos: np.ndarray, first: np.ndarray, last: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per step, the sum of `weight[pos[k]]` over the runs covering it (difference array;
    int64 or object like `weight`)."""
    diff = np.zeros(n_steps + 1, dtype=weight.dtype)
    if weight.dtype == object:
        diff[:] = 0
        for p, a, b in zip(pos.tolist(), first.tolist(), last.tolist()):
            diff[a] += weight[p]
            diff[b + 1] -= weight[p]
        return np.cumsum(diff[:-1]) if n_steps else diff[:0]
    w = weight[pos]
    np.add.at(diff, first, w)
    np.add.at(diff, last + 1, -w)
    return np.cumsum(diff[:-1])


@dataclass(frozen=True, slots=True)
class Usage:
    """Derived usage per region (exact integers), known where no unknown group is live."""

    standard: np.ndarray
    interleaved: np.ndarray
    standard_known: np.ndarray
    interleaved_known: np.ndarray

    def of(self, region: str) -> tuple[np.ndarray, np.ndarray]:
        return (self.standard, self.standard_known) if region == "standard" else \
            (self.interleaved, self.interleaved_known)


def usage(g: Groups, group_bytes: Sequence[int | None], scratch: dict[str, np.ndarray], n_steps: int) -> Usage:
    """Each step's usage: live groups (each once) by region + scratch."""
    sized = [0 if b is None else b for b in group_bytes]
    unknown = np.array([b is None for b in group_bytes], dtype=np.int64)
    scratch_max = max((int(np.max(s)) for s in scratch.values() if len(s)), default=0)
    big = sum(sized) + scratch_max >= INT64_SAFE
    weight = np.array(sized, dtype=object) if big else np.array(sized, dtype=np.int64)
    out = {}
    for k, region in enumerate(("standard", "interleaved")):
        mask = g.region[g.pos] == k
        total = sweep(n_steps, g.pos[mask], g.first[mask], g.last[mask], weight)
        s = scratch[region]
        total = total + (s.astype(object) if big or s.dtype == object else s)
        unknown_live = sweep(n_steps, g.pos[mask], g.first[mask], g.last[mask], unknown) > 0
        out[region] = (total, ~unknown_live)
    return Usage(out["standard"][0], out["interleaved"][0], out["standard"][1], out["interleaved"][1])


def first_max(series: np.ndarray) -> tuple[int, int]:
    """(largest, first index reaching it)."""
    i = int(np.argmax(series)) if series.dtype != object else max(range(len(series)), key=lambda k: (series[k], -k))
    return int(series[i]), i


def reference_policy(report: Report) -> bool:
    """Whether the report was planned with the reference policy (parameters not always
    live); a report that does not say is read as the default policy's."""
    try:
        program = report.sections.program
    except InputError:  # a program section of the wrong shape: its own finding, read as the default
        return False
    return program is not None and program.get("policy") == "reference"
