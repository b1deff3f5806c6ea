"""Values and steps: the timeline a plan is made of (the report's `timeline`).

A `Value` is one allocation-shaped thing: a tensor with a layout and a precision,
sized per tile. A `Step` is one tile-level operation with the values live in it.
Byte figures are plain integers; in a plan `None` means "not representable" and is
always accompanied by a rejection that says why (never a sentinel). The lowering
sizes each value as it makes it. A plan's steps are a `StepTable`: columns, with each
value's live steps one interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np

from tileplan.model.layout import Layout, MemoryClass
from tileplan.model.precision import Precision
from tileplan.model.role import DECLARED, Role
from tileplan.model.rows import Rows

REGIONS = ("standard", "interleaved")


class Value(NamedTuple):
    """One value of the timeline.

    `root` is the value it aliases (itself when it owns its data); values of one
    `storage_group` share one allocation, sized by its largest member. `bytes` =
    `aligned_bytes` x `copies`; `aligned_bytes` = `shard_bytes` rounded up to
    `alignment_bytes`. (A named tuple, immutable: a million-value program makes a
    million of them, five times faster than a frozen dataclass.)
    """

    id: int
    origin: int
    root: int
    name: str
    group: str
    shape: tuple[int, ...]
    precision: Precision
    layout: Layout
    storage_group: int
    shard_bytes: int | None
    aligned_bytes: int | None
    copies: int
    bytes: int | None
    alignment_bytes: int | None = None
    #: what the value is (`tileplan.model.role`): a declared tensor's role (resident
    #: from the first step) or the one the lowering gave it; None when a report omits it
    role: Role | None = None

    @property
    def resident(self) -> bool:
        """A declared tensor's value: live from the first step."""
        return self.role in DECLARED

    @property
    def memory_class(self) -> MemoryClass:
        return self.layout.memory_class

    @property
    def region(self) -> str:
        return self.layout.memory_class.usage_key


@dataclass(frozen=True, slots=True)
class Step:
    """One tile-level step. `usage` = live storage groups of each region + `scratch`;
    `None` where a live value's size is unknown. `execution_count` > 1 for steps of a
    repeat block; it never multiplies memory.
    """

    index: int
    source: int
    operation: str
    execution_count: int
    live: tuple[int, ...]
    scratch: dict[str, int]
    usage: dict[str, int | None]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a value has no size: its id, name and the rule it breaks, with numbers."""

    value: int
    name: str
    reason: str


class StepTable(Rows[Step]):
    """The steps of a timeline as columns: what the planner computes and a version-2
    report stores, without one object per step.

    Live sets are intervals: value `value_ids[k]` is live in steps
    `first[k]..last[k]` (inclusive; every live set of a plan is such an interval).
    Indexing or iterating gives `Step` objects, built on demand (the live set of a
    step is sorted by value id, as in version 1); the columns are for passes that
    work on the whole timeline at once. Arrays are int64 and read-only; `usage_*` is
    meaningful where `*_known`; a step's usage of that region is None elsewhere.
    """

    __slots__ = ("operation_texts", "source", "operation", "execution_count", "scratch_standard",
                 "scratch_interleaved", "usage_standard", "usage_interleaved", "standard_known", "interleaved_known",
                 "value_ids", "first",
                 "last", "_live")
    operation_texts: tuple[str, ...]
    source: np.ndarray
    operation: np.ndarray
    execution_count: np.ndarray
    scratch_standard: np.ndarray
    scratch_interleaved: np.ndarray
    usage_standard: np.ndarray
    usage_interleaved: np.ndarray
    standard_known: np.ndarray
    interleaved_known: np.ndarray
    value_ids: np.ndarray
    first: np.ndarray
    last: np.ndarray

    def __init__(self, *, operation_texts: Sequence[str], source: Any, operation: Any, execution_count: Any,
                 scratch_standard: Any, scratch_interleaved: Any, usage_standard: Any, usage_interleaved: Any,
                 standard_known: Any, interleaved_known: Any, value_ids: Any, first: Any, last: Any) -> None:
        n = len(source)
        self.operation_texts = tuple(operation_texts)
        columns = {"source": source, "operation": operation, "execution_count": execution_count,
                   "scratch_standard": scratch_standard, "scratch_interleaved": scratch_interleaved,
                   "usage_standard": usage_standard, "usage_interleaved": usage_interleaved}
        for key, col in columns.items():
            arr = _frozen(col, np.int64)
            if arr.shape != (n,):
                raise ValueError(f"step column {key} has {arr.shape[0]} entries for {n} steps")
            setattr(self, key, arr)
        for key, col in (("standard_known", standard_known), ("interleaved_known", interleaved_known)):
            mask = _frozen(col, np.bool_)
            if mask.shape != (n,):
                raise ValueError(f"step column {key} has {mask.shape[0]} entries for {n} steps")
            setattr(self, key, mask)
        self.value_ids = _frozen(value_ids, np.int64)
        self.first = _frozen(first, np.int64)
        self.last = _frozen(last, np.int64)
        if not (self.value_ids.shape == self.first.shape == self.last.shape):
            raise ValueError("value_ids, first and last differ in length")
        if len(self.first) and (self.first.min() < 0 or (self.last < self.first).any() or self.last.max() >= n):
            raise ValueError(f"live intervals must lie within the {n} steps, first <= last")
        if n and (self.operation.min() < 0 or self.operation.max() >= len(self.operation_texts)):
            raise ValueError("an operation index is outside the operation texts")
        self._live: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_steps(cls, steps: Sequence[Step]) -> "StepTable":
        """Columns of `Step` objects whose live sets are intervals (a version-1 report
        that breaks this is refused by its reader first)."""
        texts: dict[str, int] = {}
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for s in steps:
            texts.setdefault(s.operation, len(texts))
            for v in s.live:
                first.setdefault(v, s.index)
                last[v] = s.index
        ids = np.array(sorted(first), dtype=np.int64)
        table = cls(operation_texts=list(texts), source=[s.source for s in steps],
                    operation=[texts[s.operation] for s in steps], execution_count=[s.execution_count for s in steps],
                    scratch_standard=[s.scratch.get("standard", 0) for s in steps],
                    scratch_interleaved=[s.scratch.get("interleaved", 0) for s in steps],
                    usage_standard=[s.usage.get("standard") or 0 for s in steps],
                    usage_interleaved=[s.usage.get("interleaved") or 0 for s in steps],
                    standard_known=[s.usage.get("standard") is not None for s in steps],
                    interleaved_known=[s.usage.get("interleaved") is not None for s in steps],
                    value_ids=ids, first=[first[int(v)] for v in ids], last=[last[int(v)] for v in ids])
        return table

    def __len__(self) -> int:
        return len(self.source)

    row_name = "step"

    def row(self, i: int) -> Step:
        return Step(i, int(self.source[i]), self.operation_texts[self.operation[i]], int(self.execution_count[i]),
                    self.live_at(i),
                    {"standard": int(self.scratch_standard[i]), "interleaved": int(self.scratch_interleaved[i])},
                    {"standard": int(self.usage_standard[i]) if self.standard_known[i] else None,
                     "interleaved": int(self.usage_interleaved[i]) if self.interleaved_known[i] else None})

    def __iter__(self) -> Iterator[Step]:
        self.live_index()  # every live set will be asked for: index them once
        for i in range(len(self)):
            yield self.row(i)

    def live_at(self, i: int) -> tuple[int, ...]:
        """The live set of step i, sorted by id: from the index when it is built, else
        by testing every interval (one step's set without indexing them all)."""
        if self._live is not None:
            starts, ids = self._live
            return tuple(ids[starts[i]:starts[i + 1]].tolist())
        return tuple(np.sort(self.value_ids[(self.first <= i) & (self.last >= i)]).tolist())

    def live_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ids): the live set of step i is ids[starts[i]:starts[i + 1]],
        sorted by id. Built once, on first use, in O(total live) time and memory."""
        if self._live is None:
            spans = self.last - self.first + 1
            total = int(spans.sum())
            steps = np.repeat(self.first, spans) + (np.arange(total) - np.repeat(np.cumsum(spans) - spans, spans))
            ids = np.repeat(self.value_ids, spans)
            order = np.lexsort((ids, steps))
            counts = np.bincount(steps, minlength=len(self))
            starts = np.concatenate(([0], np.cumsum(counts)))
            self._live = (starts, ids[order])
        return self._live

    def operation_text(self, i: int) -> str:
        return self.operation_texts[int(self.operation[i])]

    def operations(self) -> list[str]:
        """Each step's operation text, in step order (the interned texts, shared)."""
        texts = self.operation_texts
        return [texts[k] for k in self.operation.tolist()]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != len(self):
            return NotImplemented if not isinstance(other, Sequence) else False
        return all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StepTable({len(self)} steps, {len(self.value_ids)} live intervals)"


def _frozen(values: Any, dtype: Any) -> np.ndarray:
    arr = np.array(values, dtype=dtype)
    arr.setflags(write=False)
    return arr


def step_table(steps: Sequence[Step]) -> StepTable:
    """`steps` as columns: itself when it is a `StepTable` already."""
    return steps if isinstance(steps, StepTable) else StepTable.from_steps(steps)
