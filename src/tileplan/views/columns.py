"""A report as columns (numpy) for the views, and its values as rows people read.

The views work on the report as columns, in passes linear in its values and steps: no
per-step loop over live sets, no object per step. Byte figures are int64; a report
whose numbers do not fit (only a hostile one: a tile has well under 2^40 bytes) gets
exact Python integers in object arrays, through the same code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tileplan.model.precision import Precision
from tileplan.model.rows import Rows
from tileplan.model.timeline import REGIONS, StepTable, Value
from tileplan.report.model import Report
from tileplan.report.sections import Operation
from tileplan.views.common import ValueRow, group_label, known, layout_brief, operations, precision_display

SAFE_INT = 1 << 40


def int_column(xs: Sequence[int] | np.ndarray) -> np.ndarray:
    """`xs` as int64, or as an object array of exact integers when one of them is
    beyond +-2^40 (a tile has under 2^21 bytes: such a figure is absurd, and
    sums of it over a million steps could wrap)."""
    try:
        a = np.array(xs, dtype=np.int64)
    except OverflowError:
        return objects(xs)
    if a.size and (a.max() >= SAFE_INT or a.min() <= -SAFE_INT):
        return objects(xs)
    return a


def objects(xs: Sequence[Any] | np.ndarray) -> np.ndarray:
    out = np.empty(len(xs), dtype=object)
    out[:] = list(xs)
    return out


def distinct_sorted(a: np.ndarray) -> np.ndarray:
    """The distinct entries of a sorted array (np.unique without its sort or hash)."""
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def first_of_runs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct entries, index of the first of each) of a sorted array."""
    at = np.flatnonzero(np.r_[True, a[1:] != a[:-1]]) if len(a) else np.zeros(0, dtype=np.int64)
    return a[at], at


def over_intervals(n: int, first: np.ndarray, last: np.ndarray, weights: np.ndarray | int) -> np.ndarray:
    """Per step of `n`, the sum of `weights` over the intervals [first, last] that hold
    it: a difference array, then a running sum (int64, or exact objects)."""
    dtype = weights.dtype if isinstance(weights, np.ndarray) else np.int64
    diff = np.zeros(n + 1, dtype=dtype)
    if len(first):
        w = weights if isinstance(weights, np.ndarray) else np.full(len(first), weights, dtype=np.int64)
        np.add.at(diff, first, w)
        np.add.at(diff, last + 1, -w)
    return np.cumsum(diff[:-1]) if n else np.zeros(0, dtype=dtype)


@dataclass(frozen=True, slots=True, eq=False)
class StepColumns:
    """A report's steps as columns. `operation` indexes `operation_texts`; `usage[r]`
    is 0 where `usage_known[r]` is False. Live sets are intervals: value `value_ids[k]`
    is live in steps `first[k]`..`last[k]` (inclusive), sorted by value id then first;
    a value has one interval in every report tileplan writes (never overlapping ones)."""

    count: int
    source: np.ndarray
    operation: np.ndarray
    operation_texts: tuple[str, ...]
    execution_count: np.ndarray
    scratch: dict[str, np.ndarray]
    usage: dict[str, np.ndarray]
    usage_known: dict[str, np.ndarray]
    value_ids: np.ndarray
    first: np.ndarray
    last: np.ndarray

    def operation_text(self, i: int) -> str:
        return self.operation_texts[int(self.operation[i])]


def step_columns(report: Report) -> StepColumns:
    """The columns of `report.steps`: a `StepTable`'s own, or built in one pass over
    version-1 `Step` objects (a value listed twice in a step counts once; a live set
    that is not an interval becomes several intervals)."""
    steps = report.steps
    if isinstance(steps, StepTable):
        usage = {"standard": steps.usage_standard, "interleaved": steps.usage_interleaved}
        known_ = {"standard": steps.standard_known, "interleaved": steps.interleaved_known}
        return StepColumns(
            len(steps), steps.source, steps.operation, steps.operation_texts, steps.execution_count,
            {"standard": steps.scratch_standard, "interleaved": steps.scratch_interleaved},
            {r: np.where(known_[r], usage[r], 0) for r in REGIONS}, known_, steps.value_ids, steps.first, steps.last)
    texts: dict[str, int] = {}
    runs: dict[int, list[int]] = {}
    ops, usage_lists = [], {r: [] for r in REGIONS}  # type: ignore[var-annotated]
    for i, s in enumerate(steps):
        ops.append(texts.setdefault(s.operation, len(texts)))
        for r in REGIONS:
            usage_lists[r].append(known(s.usage.get(r)))
        for vid in s.live:
            run = runs.get(vid)
            if run is None:
                runs[vid] = [i, i]
            elif run[-1] == i - 1:
                run[-1] = i
            elif run[-1] != i:
                run += (i, i)
    ids, first, last = [], [], []
    for vid in sorted(runs):
        run = runs[vid]
        for k in range(0, len(run), 2):
            ids.append(vid)
            first.append(run[k])
            last.append(run[k + 1])
    return StepColumns(
        len(steps), int_column([s.source for s in steps]), np.array(ops, dtype=np.int64), tuple(texts),
        int_column([s.execution_count for s in steps]),
        {r: int_column([s.scratch.get(r, 0) for s in steps]) for r in REGIONS},
        {r: int_column([0 if u is None else u for u in usage_lists[r]]) for r in REGIONS},
        {r: np.array([u is not None for u in usage_lists[r]], dtype=bool) for r in REGIONS},
        int_column(ids), np.array(first, dtype=np.int64), np.array(last, dtype=np.int64))


REGION_INDEX = {r: k for k, r in enumerate(REGIONS)}


@dataclass(frozen=True, slots=True, eq=False)
class ValueColumns:
    """A report's values as columns, in id order (`values[k]` is the value of row k).
    `bytes` is 0 where not `known`; `region` indexes `REGIONS` (-1: another region);
    `group` indexes `groups`. Live intervals by row: row `at[k]` is live in steps
    `first[k]`..`last[k]`; `first_step`/`last_step` bound each row's live range (-1
    when it is live in no step)."""

    values: tuple[Value, ...]
    id: np.ndarray
    bytes: np.ndarray
    known: np.ndarray
    storage_group: np.ndarray
    region: np.ndarray
    group: np.ndarray
    groups: tuple[str, ...]
    at: np.ndarray
    first: np.ndarray
    last: np.ndarray
    first_step: np.ndarray
    last_step: np.ndarray
    steps: StepColumns

    def __len__(self) -> int:
        return len(self.values)

    def live_at(self, step: int) -> np.ndarray:
        """The rows live in `step`, in id order."""
        hit = (self.first <= step) & (step <= self.last)
        return distinct_sorted(np.sort(self.at[hit]))


def _rows_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The row of each id in `wanted` among the sorted `ids`, -1 where absent."""
    if not len(wanted):
        return np.zeros(0, dtype=np.int64)
    if ids.dtype == object or wanted.dtype == object:
        row_of = {int(v): k for k, v in enumerate(ids)}
        return np.array([row_of.get(int(v), -1) for v in wanted], dtype=np.int64)
    pos = np.searchsorted(ids, wanted)
    found = pos < len(ids)
    found[found] = ids[pos[found]] == wanted[found]
    return np.where(found, pos, -1)


def value_columns(report: Report, steps: StepColumns | None = None) -> ValueColumns:
    """The columns of `report.values` and their live intervals from `steps` (built
    from the report when not given). One pass over the values."""
    steps = step_columns(report) if steps is None else steps
    values = tuple(report.values)
    id_list = [v.id for v in values]
    if any(a > b for a, b in zip(id_list, id_list[1:])):
        values = tuple(sorted(values, key=lambda v: v.id))
        id_list = [v.id for v in values]
    n = len(values)
    region_of: dict[int, int] = {}  # id(layout) -> region index: a few layouts serve many values
    for v in {id(v.layout): v for v in values}.values():
        region_of[id(v.layout)] = REGION_INDEX.get(v.region, -1)
    region = np.array([region_of[id(v.layout)] for v in values], dtype=np.int8)
    groups: dict[str, int] = {}
    group = np.array([groups.setdefault(v.group, len(groups)) for v in values], dtype=np.int64)
    raw = [known(v.bytes) for v in values]
    ids = int_column(id_list)
    rows = _rows_of(ids, steps.value_ids)
    keep = rows >= 0
    at, first, last = rows[keep], steps.first[keep], steps.last[keep]
    first_step = np.full(n, -1, dtype=np.int64)
    last_step = np.full(n, -1, dtype=np.int64)
    if len(at):
        big = np.full(n, steps.count, dtype=np.int64)
        np.minimum.at(big, at, first)
        np.maximum.at(last_step, at, last)
        first_step = np.where(last_step >= 0, big, -1)
    return ValueColumns(
        values=values, id=ids, bytes=int_column([0 if b is None else b for b in raw]),
        known=np.array([b is not None for b in raw], dtype=bool),
        storage_group=int_column([v.storage_group for v in values]), region=region, group=group,
        groups=tuple(groups), at=at, first=first, last=last, first_step=first_step, last_step=last_step, steps=steps)


class ValueRows(Rows[ValueRow]):
    """`ValueRow`s of a report's values in id order, built on demand (one layout's and
    one precision's display text computed once however many values share them)."""

    def __init__(self, cols: ValueColumns, ops: Mapping[int, Operation]) -> None:
        self.cols = cols
        self._ops = ops
        self._layouts: dict[int, tuple[str, str]] = {}
        self._precisions: dict[int, str] = {}
        self._labels: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.cols.values)

    row_name = "value"

    def row(self, k: int) -> ValueRow:
        v = self.cols.values[k]
        layout = self._layouts.get(id(v.layout))
        if layout is None:
            layout = self._layouts[id(v.layout)] = (layout_brief(v.layout), v.layout.to_text())
        precision = self.precision_text(v.precision)
        code = int(self.cols.group[k])
        label = self._labels.get(code)
        if label is None:
            label = self._labels[code] = group_label(v.group, self._ops)
        first, last = int(self.cols.first_step[k]), int(self.cols.last_step[k])
        return ValueRow(id=v.id, name=v.name, group=v.group, label=label, role=v.role, shape=tuple(v.shape),
                        precision=precision, layout=layout[0], layout_text=layout[1], region=v.region,
                        storage_group=v.storage_group, bytes=known(v.bytes),
                        first_step=None if first < 0 else first, last_step=None if last < 0 else last)

    def precision_text(self, p: Precision) -> str:
        text = self._precisions.get(id(p))
        if text is None:
            text = self._precisions[id(p)] = precision_display(p.to_text())
        return text

    def __iter__(self) -> Iterator[ValueRow]:
        for k in range(len(self)):
            yield self[k]


def largest_rows(cols: ValueColumns, rows: np.ndarray, top: int) -> np.ndarray:
    """The `top` largest of `rows` as `by_bytes` orders them: largest first, unknown
    sizes after every known one, ties by id."""
    if not len(rows):
        return rows
    b, ids, unknown = cols.bytes[rows], cols.id[rows], ~cols.known[rows]
    if b.dtype == object or ids.dtype == object:
        slow = sorted(range(len(rows)), key=lambda j: (bool(unknown[j]), -b[j], ids[j]))[:top]
        return rows[np.array(slow, dtype=np.int64)]
    return rows[np.lexsort((ids, -b, unknown))[:top]]


def value_rows(report: Report) -> tuple[ValueRow, ...]:
    """Every value of the report, in id order."""
    return tuple(ValueRows(value_columns(report), operations(report)))
