"""`ValueTable`: the values of a timeline as columns, a `Value` built when one is asked for.

A million-value plan keeps its values as integer columns (id, origin, root, storage
group, role) and a `form` column: the index of the value's `ValueForm` (its shape,
precision, layout, sizes and alignment), which the values alike share (a few hundred
forms for a million values). Names and groups are `ValueLabels`, made on first use:
the lowering names its values in one pass at the end (`tileplan.lowering.naming`),
and only when a name is asked for (a report written, a value shown). The passes that
work on the whole timeline (usage, exact accounting, the report's columns) read the
columns; everything else indexes or iterates and gets `Value`s, equal to those a
tuple of them would hold.

Worked example: values 0-2 of forms (A, A, B), form A `[64, 128]` F16 in a Linear
layout of 1,024 bytes a tile, form B its conversion to F8: `form` = [0, 0, 1],
`forms` = (A, B); `row(1)` = `Value(1, ..., shape=(64, 128), precision=F16, ...)`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from tileplan.model.layout import Layout
from tileplan.model.precision import Precision
from tileplan.model.role import Role
from tileplan.model.rows import Rows
from tileplan.model.tiling import Shards
from tileplan.model.timeline import Value

#: a role's code in a `ValueTable`'s `role` column (-1: none)
ROLE_CODES: tuple[Role, ...] = tuple(Role)
ROLE_CODE = {r: k for k, r in enumerate(ROLE_CODES)}


class ValueForm(NamedTuple):
    """What alike values share: a `Value`'s fields from `shape` to `alignment_bytes`
    but the storage group, and the value's shards (or why it has none)."""

    shape: tuple[int, ...]
    precision: Precision
    layout: Layout
    shard_bytes: int | None
    aligned_bytes: int | None
    copies: int
    bytes: int | None
    alignment_bytes: int | None
    shards: Shards | None = None
    reason: str | None = None


class ValueLabels(NamedTuple):
    """Each value's name, and its group as an index into `groups`."""

    names: Sequence[str]
    group: np.ndarray
    groups: Sequence[str]


class ValueTable(Rows[Value]):
    """Values as columns (see the module docstring). Columns are int64 and read-only,
    `role` a code of `ROLE_CODES` (-1: none); `labels` are given or made on first use
    by the callable given. Invariant: every column has one entry per value, every
    `form` indexes `forms`."""

    __slots__ = ("id", "origin", "root", "storage_group", "form", "role", "forms", "_labels", "_make_labels",
                 "_by_id")
    id: np.ndarray
    origin: np.ndarray
    root: np.ndarray
    storage_group: np.ndarray
    form: np.ndarray
    role: np.ndarray
    forms: tuple[ValueForm, ...]

    def __init__(self, *, id: Any, origin: Any, root: Any, storage_group: Any, form: Any, role: Any,
                 forms: Sequence[ValueForm], labels: ValueLabels | Callable[[], ValueLabels]) -> None:
        self.id = _frozen(id)
        n = len(self.id)
        for key, col in (("origin", origin), ("root", root), ("storage_group", storage_group), ("form", form),
                         ("role", role)):
            arr = _frozen(col)
            if arr.shape != (n,):
                raise ValueError(f"value column {key} has {arr.shape[0]} entries for {n} values")
            setattr(self, key, arr)
        self.forms = tuple(forms)
        if n and (self.form.min() < 0 or self.form.max() >= len(self.forms)):
            raise ValueError("a value's form is outside the forms")
        if isinstance(labels, ValueLabels):
            self._labels: ValueLabels | None = labels
            self._make_labels: Callable[[], ValueLabels] | None = None
        else:
            self._labels, self._make_labels = None, labels
        self._by_id: np.ndarray | None = None

    @classmethod
    def from_values(cls, values: Sequence[Value]) -> "ValueTable":
        """Columns of `Value` objects (their forms and groups interned in order of first use)."""
        if isinstance(values, ValueTable):
            return values
        forms: dict[tuple, int] = {}
        groups: dict[str, int] = {}
        form = [forms.setdefault((v.shape, v.precision, v.layout, v.shard_bytes, v.aligned_bytes, v.copies, v.bytes,
                                  v.alignment_bytes), len(forms)) for v in values]
        group = [groups.setdefault(v.group, len(groups)) for v in values]
        labels = ValueLabels([v.name for v in values], np.array(group, dtype=np.int64), list(groups))
        return cls(id=[v.id for v in values], origin=[v.origin for v in values], root=[v.root for v in values],
                   storage_group=[v.storage_group for v in values], form=form,
                   role=[-1 if v.role is None else ROLE_CODE[v.role] for v in values],
                   forms=[ValueForm(*key) for key in forms], labels=labels)

    # Rows -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.id)

    row_name = "value"

    def row(self, i: int) -> Value:
        labels = self.labels
        f = self.forms[int(self.form[i])]
        role = int(self.role[i])
        return Value(int(self.id[i]), int(self.origin[i]), int(self.root[i]), labels.names[i],
                     labels.groups[int(labels.group[i])], f.shape, f.precision, f.layout, int(self.storage_group[i]),
                     f.shard_bytes, f.aligned_bytes, f.copies, f.bytes, f.alignment_bytes,
                     None if role < 0 else ROLE_CODES[role])

    def __iter__(self) -> Iterator[Value]:
        labels = self.labels
        forms, groups, roles = self.forms, labels.groups, (*ROLE_CODES, None)
        new = tuple.__new__
        for i, o, r, name, g, f, sg, ro in zip(self.id.tolist(), self.origin.tolist(), self.root.tolist(),
                                               labels.names, labels.group.tolist(), self.form.tolist(),
                                               self.storage_group.tolist(), self.role.tolist()):
            fm = forms[f]
            yield new(Value, (i, o, r, name, groups[g], fm.shape, fm.precision, fm.layout, sg, fm.shard_bytes,
                              fm.aligned_bytes, fm.copies, fm.bytes, fm.alignment_bytes, roles[ro]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ValueTable({len(self)} values, {len(self.forms)} forms)"

    # Columns --------------------------------------------------------------------------

    @property
    def labels(self) -> ValueLabels:
        """The names and groups, made on first use."""
        if self._labels is None:
            assert self._make_labels is not None
            self._labels, self._make_labels = self._make_labels(), None
        return self._labels

    @property
    def names(self) -> Sequence[str]:
        return self.labels.names

    def form_column(self, key: str, missing: int = -1) -> np.ndarray:
        """A `ValueForm` integer field of every value (`missing` where it is None)."""
        by_form = np.array([missing if getattr(f, key) is None else getattr(f, key) for f in self.forms],
                           dtype=np.int64)
        return by_form[self.form] if len(self.forms) else np.zeros(len(self), dtype=np.int64)

    def standard(self) -> np.ndarray:
        """Whether each value is in the standard region (else the interleaved one)."""
        by_form = np.array([f.layout.memory_class.usage_key == "standard" for f in self.forms], dtype=bool)
        return by_form[self.form] if len(self.forms) else np.zeros(len(self), dtype=bool)

    def roles(self) -> list[Role | None]:
        roles = (*ROLE_CODES, None)
        return [roles[r] for r in self.role.tolist()]

    def position(self, value_id: int) -> int:
        """Where value `value_id` is in the table; KeyError when it is not there."""
        if self._by_id is None:
            self._by_id = np.argsort(self.id, kind="stable")
        at = int(np.searchsorted(self.id, value_id, sorter=self._by_id))
        if at >= len(self) or int(self.id[self._by_id[at]]) != value_id:
            raise KeyError(value_id)
        return int(self._by_id[at])

    def take(self, positions: np.ndarray) -> "ValueTable":
        """The values at `positions`, in that order (their labels made when asked for)."""
        if len(positions) == len(self) and bool((positions == np.arange(len(self))).all()):
            return self

        def labels() -> ValueLabels:
            whole = self.labels
            names = whole.names
            return ValueLabels([names[p] for p in positions.tolist()], whole.group[positions], whole.groups)

        return ValueTable(id=self.id[positions], origin=self.origin[positions], root=self.root[positions],
                          storage_group=self.storage_group[positions], form=self.form[positions],
                          role=self.role[positions], forms=self.forms,
                          labels=labels if self._labels is None else labels())

    def shards(self) -> "FormShards":
        """Each value's shards by value id (those whose layout holds their shape)."""
        return FormShards(self, sized=True)

    def unsized(self) -> "FormShards":
        """Why each value that has no shards has none, by value id."""
        return FormShards(self, sized=False)


class FormShards(Mapping[int, Any]):
    """A `ValueTable`'s shards (`sized`) or reasons for none, by value id, read from
    the values' forms."""

    __slots__ = ("_table", "_sized", "_mask")

    def __init__(self, table: ValueTable, sized: bool) -> None:
        self._table, self._sized = table, sized
        by_form = np.array([(f.shards is not None) == sized for f in table.forms], dtype=bool)
        self._mask = by_form[table.form] if len(table.forms) else np.zeros(len(table), dtype=bool)

    def __getitem__(self, value_id: int) -> Any:
        try:
            at = self._table.position(value_id)
        except KeyError:
            raise KeyError(value_id) from None
        if not self._mask[at]:
            raise KeyError(value_id)
        form = self._table.forms[int(self._table.form[at])]
        return form.shards if self._sized else form.reason

    def __contains__(self, value_id: object) -> bool:
        if not isinstance(value_id, (int, np.integer)):
            return False
        try:
            return bool(self._mask[self._table.position(int(value_id))])
        except KeyError:
            return False

    def __iter__(self) -> Iterator[int]:
        return iter(self._table.id[self._mask].tolist())

    def __len__(self) -> int:
        return int(self._mask.sum())

    @property
    def table(self) -> ValueTable:
        return self._table

    def complete(self) -> bool:
        """Whether every value of the table is in this mapping."""
        return bool(self._mask.all())


def _frozen(values: Any) -> np.ndarray:
    arr = np.array(values, dtype=np.int64)
    arr.setflags(write=False)
    return arr
