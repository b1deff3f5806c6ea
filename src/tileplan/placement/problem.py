"""The placement problem: buffers with half-open lifetimes and sizes, and the measures
every placement is judged by (the live peak, which no placement can beat).

A buffer lives over the steps [lower, upper) and needs `size` bytes at an offset that is
a multiple of `alignment` and keeps it inside its allowed address range
[floor, ceiling). Two buffers collide when their lifetimes and address ranges both
intersect. Worked example: a = [0, 4) x 100 B and b = [4, 6) x 100 B never live at the
same step, so both may sit at offset 0; the live peak is 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tileplan.errors import InputError

# Offsets, sizes and steps are held in int64; keeping each value and every sum under
# 2**62 leaves room for alignment round-ups without overflow.
VALUE_LIMIT = 2**62


@dataclass(frozen=True, slots=True)
class Buffer:
    """One allocation. Invariants: 0 <= lower < upper, size >= 0, alignment >= 1,
    0 <= floor, floor + size <= ceiling when a ceiling is given (None: no ceiling)."""

    id: str
    lower: int
    upper: int
    size: int
    alignment: int = 1
    floor: int = 0
    ceiling: int | None = None

    def __post_init__(self) -> None:
        place = f"buffer {self.id!r}"
        for name in ("lower", "upper", "size", "alignment", "floor"):
            value = getattr(self, name)
            if type(value) is not int:
                raise InputError(f"{name} must be an integer, found {value!r}", place)
            if not -VALUE_LIMIT < value < VALUE_LIMIT:
                raise InputError(f"{name} {value} is too large (limit 2**62)", place)
        if self.lower < 0:
            raise InputError(f"lower must be >= 0, found {self.lower}", place)
        if self.lower >= self.upper:
            raise InputError(f"lower must be < upper, found lower {self.lower} >= upper {self.upper}", place)
        if self.size < 0:
            raise InputError(f"size must be >= 0, found {self.size}", place)
        if self.alignment < 1:
            raise InputError(f"alignment must be >= 1, found {self.alignment}", place)
        if self.floor < 0:
            raise InputError(f"floor must be >= 0, found {self.floor}", place)
        if self.ceiling is not None:
            if type(self.ceiling) is not int or not 0 <= self.ceiling < VALUE_LIMIT:
                raise InputError(f"ceiling must be an integer in [0, 2**62), found {self.ceiling!r}", place)
            if self.floor + self.size > self.ceiling:
                raise InputError(
                    f"allowed range [{self.floor}, {self.ceiling}) cannot hold {self.size} bytes", place)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k, default in
                        (("alignment", 1), ("floor", 0), ("ceiling", None)) if getattr(self, k) != default)
        return f"Buffer({self.id!r}, [{self.lower}, {self.upper}), {self.size}{extra})"


class Problem:
    """Buffers to place, in input order (results list offsets in this order).
    Invariants: ids are unique, the total size stays under 2**62. Immutable.

    `Problem(buffers)` checks each `Buffer` as it is built; `Problem.from_columns(ids,
    columns)` checks the same rules on whole columns at once (what the CSV reader uses:
    a million rows without a `Buffer` object each; `buffers` builds them on first use).
    """

    __slots__ = ("_buffers", "_ids", "_columns")

    def __init__(self, buffers: tuple[Buffer, ...]) -> None:
        buffers = tuple(buffers)
        seen: set[str] = set()
        total = 0
        for buf in buffers:
            if not isinstance(buf, Buffer):
                raise InputError(f"expected a Buffer, found {type(buf).__name__}", "problem")
            if buf.id in seen:
                raise InputError(f"duplicate id {buf.id!r}", "problem")
            seen.add(buf.id)
            total += buf.size
        if total >= VALUE_LIMIT:
            raise InputError(f"total size {total} is too large (limit 2**62)", "problem")
        self._buffers: tuple[Buffer, ...] | None = buffers
        self._ids: tuple[str, ...] | None = None
        self._columns: Columns | None = None

    @classmethod
    def from_columns(cls, ids: Sequence[str], columns: Columns) -> Problem:
        """The problem of buffers `ids[i]` with the values of row i of `columns`, checked
        as `Buffer` and `Problem` check them (`InputError` naming the first buffer that
        breaks a rule, with `Buffer`'s words)."""
        n = len(ids)
        if any(len(getattr(columns, name)) != n for name in _COLUMNS):
            raise ValueError(f"{n} ids and columns of other lengths")
        cols = Columns(*(np.array(getattr(columns, name), dtype=np.int64).reshape(n) for name in _COLUMNS))
        c = cols
        bad = ((c.lower < 0) | (c.lower >= c.upper) | (c.upper >= VALUE_LIMIT) | (c.size < 0)
               | (c.size >= VALUE_LIMIT) | (c.alignment < 1) | (c.alignment >= VALUE_LIMIT) | (c.floor < 0)
               | (c.floor >= VALUE_LIMIT) | (c.ceiling < 0) | (c.ceiling > VALUE_LIMIT)
               | ((c.ceiling < VALUE_LIMIT) & (c.floor > c.ceiling - c.size)))
        first = np.flatnonzero(bad)
        if len(first):  # Buffer words the rule
            at = int(first[0])
            _buffer_at(ids, cols, at)
            raise AssertionError(f"buffer {ids[at]!r} breaks a rule Buffer accepts")  # pragma: no cover
        if set(map(type, ids)) - {str}:
            raise InputError(f"an id must be text, found {next(i for i in ids if type(i) is not str)!r}", "problem")
        if len(set(ids)) != n:
            seen: set[str] = set()
            for ident in ids:
                if ident in seen:
                    raise InputError(f"duplicate id {ident!r}", "problem")
                seen.add(ident)
        if float(c.size.sum(dtype=np.float64)) >= VALUE_LIMIT / 2:  # near the limit: the exact sum decides
            total = sum(c.size.tolist())
            if total >= VALUE_LIMIT:
                raise InputError(f"total size {total} is too large (limit 2**62)", "problem")
        for array in (c.lower, c.upper, c.size, c.alignment, c.floor, c.ceiling):
            array.flags.writeable = False
        problem = cls.__new__(cls)
        problem._buffers = None
        problem._ids = tuple(ids)
        problem._columns = cols
        return problem

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """The buffers, in input order."""
        if self._buffers is None:
            ids, cols = self.ids, self.columns()
            self._buffers = tuple(_buffer_at(ids, cols, i) for i in range(len(ids)))
        return self._buffers

    @property
    def ids(self) -> tuple[str, ...]:
        """The buffers' ids, in input order."""
        if self._ids is None:
            self._ids = tuple(b.id for b in self.buffers)
        return self._ids

    def columns(self) -> Columns:
        """The buffers as numpy columns (read-only, built once), the form every pass works on."""
        if self._columns is None:
            self._columns = Columns.from_buffers(self.buffers)
            for name in _COLUMNS:
                getattr(self._columns, name).flags.writeable = False
        return self._columns

    def __len__(self) -> int:
        return len(self._buffers) if self._buffers is not None else len(self.ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Problem) and (self is other or self.buffers == other.buffers)

    def __hash__(self) -> int:
        return hash(self.buffers)

    def __repr__(self) -> str:
        return f"Problem({self.buffers!r})"


def _buffer_at(ids: Sequence[str], cols: Columns, i: int) -> Buffer:
    ceiling = int(cols.ceiling[i])
    return Buffer(ids[i], int(cols.lower[i]), int(cols.upper[i]), int(cols.size[i]), int(cols.alignment[i]),
                  int(cols.floor[i]), None if ceiling == VALUE_LIMIT else ceiling)


@dataclass(frozen=True, slots=True, eq=False)
class Columns:
    """Buffers as int64 arrays of equal length (index i is buffer i of the problem).
    `ceiling` holds VALUE_LIMIT where a buffer has none. Not hashable: arrays inside."""

    lower: np.ndarray
    upper: np.ndarray
    size: np.ndarray
    alignment: np.ndarray
    floor: np.ndarray
    ceiling: np.ndarray

    @staticmethod
    def from_buffers(buffers: tuple[Buffer, ...]) -> Columns:
        def col(values: list[int]) -> np.ndarray:
            return np.array(values, dtype=np.int64).reshape(len(values))

        return Columns(
            lower=col([b.lower for b in buffers]), upper=col([b.upper for b in buffers]),
            size=col([b.size for b in buffers]), alignment=col([b.alignment for b in buffers]),
            floor=col([b.floor for b in buffers]),
            ceiling=col([VALUE_LIMIT if b.ceiling is None else b.ceiling for b in buffers]))

    def __len__(self) -> int:
        return len(self.size)

    @property
    def plain(self) -> bool:
        """True when no buffer has an alignment, a floor or a ceiling."""
        return bool((self.alignment == 1).all() and (self.floor == 0).all() and (self.ceiling == VALUE_LIMIT).all())


def live_totals(cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """The event steps and the bytes live from each one to the next: the lower/upper
    events sorted, a prefix sum of +size/-size, read at the last event of each distinct
    step (one sort, then linear).

    Example: [0, 4) x 100 and [2, 6) x 50 give steps (0, 2, 4, 6) and totals (100, 150, 50).
    """
    if len(cols) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    events = np.concatenate([cols.lower, cols.upper])
    order = np.argsort(events, kind="stable")
    at = events[order]
    total = np.cumsum(np.concatenate([cols.size, -cols.size])[order])
    last = np.flatnonzero(np.concatenate([at[1:] != at[:-1], [True]]))  # the last event of each step
    return at[last], total[last][:-1]


def lower_bound(cols: Columns) -> int:
    """The largest total size live at one step, and no smaller than any buffer's
    floor + size (aligned): no placement can be lower."""
    if len(cols) == 0:
        return 0
    _, totals = live_totals(cols)
    first = align_up(cols.floor, cols.alignment) + cols.size
    return int(max(totals.max(initial=0), first.max(initial=0)))


def align_up(values: np.ndarray, alignment: np.ndarray) -> np.ndarray:
    """Each value rounded up to a multiple of its alignment (7 at 4 -> 8)."""
    return -(-values // alignment) * alignment


_COLUMNS = ("lower", "upper", "size", "alignment", "floor", "ceiling")
