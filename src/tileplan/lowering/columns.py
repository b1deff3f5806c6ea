"""The lowered timeline as columns: `Timeline`'s record turned into the values and the
steps in one pass at the end, a numpy pass per compiled fragment and value (not per
operation), and the names made only when first asked for.

Each emitted operation e has its fragment's values at ids `bases[e]` + j and its steps
at `step_bases[e]` + s; a place in the fragment's table (`tileplan.lowering.replay`)
is then a column: new value j is `bases + j`, input member m `members[starts + m]`.
A value's root, storage group, origin and role are first a pointer (to itself, to a
value of its operation, or to an input member), then resolved by pointer jumping: a
pointer is always to an earlier value or to itself, so `p = p[p]` until nothing moves
takes a few rounds (the depth of views on views doubles each round). A conversion
keeps its source's origin and group; a copy or a conversion takes `copy_role` of its
source's role (`copy_role` of a copy's role is the same role, so the first source
that is no copy or conversion decides).

Worked example: a fragment with a result (j = 0) and its conversion (j = 1, of 0),
emitted for operations 4 and 5 whose values start at ids 10 and 12: `form` of ids
[10, 12] is the result's, of [11, 13] the conversion's; the conversion's origin
pointer is [10, 12], resolved to the operations' origins.
"""

from __future__ import annotations

from typing import AbstractSet, Iterator, Sequence

import numpy as np

from tileplan.kernel.fragment import StepKind, ValueKind
from tileplan.lowering.naming import group_of_parts, groups_of, stem_group, value_name
from tileplan.lowering.replay import Compiled, OperationInfo, StepDraft, StepTemplate, Timeline
from tileplan.model.ir import Operation, group_of
from tileplan.model.role import copy_role
from tileplan.model.rows import Rows
from tileplan.model.values import ROLE_CODE, ROLE_CODES, ValueLabels, ValueTable


class Emitted:
    """`Timeline`'s record of its operations as arrays, grouped by compiled fragment."""

    def __init__(self, t: Timeline) -> None:
        self.t = t
        self.codes = np.array(t.codes, dtype=np.int64)
        self.bases = np.array(t.bases, dtype=np.int64)
        self.step_bases = np.array(t.step_bases, dtype=np.int64)
        self.starts = np.array(t.member_starts, dtype=np.int64)
        self.members = np.array(t.members, dtype=np.int64)
        order = np.argsort(self.codes, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(self.codes, minlength=len(t.compiled)))))
        #: the emitted operations of each compiled fragment, in order
        self.by_code = [order[bounds[c]:bounds[c + 1]] for c in range(len(t.compiled))]

    def groups(self) -> Iterator[tuple[Compiled, np.ndarray, np.ndarray, np.ndarray]]:
        """(fragment, its emitted operations, their first value ids, their members as
        rows) for each fragment emitted at least once."""
        for c, e in zip(self.t.compiled, self.by_code):
            if len(e):
                yield c, e, self.bases[e], self.members[self.starts[e][:, None] + np.arange(c.members)]


def place_ids(place: int, c: Compiled, bases: np.ndarray, members: np.ndarray) -> np.ndarray:
    """The ids a place of `c`'s table stands for in each emitted operation: a new value,
    or (for a member's id, root or storage group alike) the member, whose own root or
    group the pointer jumping then finds."""
    k, n = len(c.values), c.members
    if place < k:
        return bases + place
    return members[:, (place - k) % n]


def resolve(pointer: np.ndarray) -> np.ndarray:
    """Each entry followed to the end of its chain (see the module docstring)."""
    p = pointer
    while True:
        q = p[p]
        if np.array_equal(q, p):
            return q
        p = q


def value_table(t: Timeline, emitted: Emitted) -> ValueTable:
    """The values of the timeline as columns, names and groups made on first use."""
    n, declared = t.size, len(t.declared)
    form = np.zeros(n, dtype=np.int64)
    root, group, source, of_role = (np.arange(n, dtype=np.int64) for _ in range(4))
    origin = np.zeros(n, dtype=np.int64)
    role = np.zeros(n, dtype=np.int64)
    copied = np.zeros(n, dtype=bool)
    for k, (o, _, f, r) in enumerate(t.declared):
        origin[k], form[k], role[k] = o, f, ROLE_CODE[r]
    op_origin = np.array([op.origin for op in t.operations], dtype=np.int64)
    op_role = np.array([ROLE_CODE[op.role] for op in t.operations], dtype=np.int64)
    for c, e, bases, members in emitted.groups():
        for j, cv in enumerate(c.values):
            ids = bases + j
            form[ids] = cv.form
            root[ids] = place_ids(cv.root, c, bases, members)
            group[ids] = place_ids(cv.group, c, bases, members)
            if cv.made.kind is ValueKind.CONVERTED:
                assert cv.of is not None
                source[ids] = place_ids(cv.of, c, bases, members)
            else:
                origin[ids] = op_origin[e]
            if cv.own is None:  # a copy or a conversion: as what it is of
                assert cv.of is not None
                of_role[ids] = place_ids(cv.of, c, bases, members)
                copied[ids] = True
            else:  # a result or a view: what its operation makes
                role[ids] = op_role[e]
    source = resolve(source)
    role = role[resolve(of_role)]
    copy_code = np.array([ROLE_CODE[copy_role(r)] for r in ROLE_CODES], dtype=np.int64)
    role[copied] = copy_code[role[copied]]
    return ValueTable(id=np.arange(n, dtype=np.int64), origin=origin[source], root=resolve(root),
                      storage_group=resolve(group), form=form, role=role, forms=t.forms,
                      labels=lambda: value_labels(t, emitted, source, declared))


def value_labels(t: Timeline, emitted: Emitted, source: np.ndarray, declared: int) -> ValueLabels:
    """Every value's name and group (`tileplan.lowering.naming`): a declared tensor's
    own; a result's or a view's after its operation (the reference's: `operation N
    result 0`); a copy's or a conversion's after what it is of, in id order (what it is
    of comes first); a conversion's group its source's."""
    n, ops = t.size, t.operations
    names: list[str | None] = [None] * n
    codes: dict[str, int] = {}
    group = np.full(n, -1, dtype=np.int64)
    for k, (_, name, _, _) in enumerate(t.declared):
        names[k] = name
        group[k] = codes.setdefault(group_of(name), len(codes))
    op_names = [op.name for op in ops]
    op_group = np.array([codes.setdefault(g, len(codes)) for g in groups_of(op_names)], dtype=np.int64) \
        if ops else np.zeros(0, dtype=np.int64)
    later: list[tuple[int, int, int, int]] = []  # (id, emitted operation, place of, value's index)
    for c, e, bases, members in emitted.groups():
        for j, cv in enumerate(c.values):
            ids = (bases + j).tolist()
            if cv.own is not None and not t.reference:
                suffix = cv.own
                for i, x in zip(ids, e.tolist()):
                    names[i] = op_names[x] + suffix
                if not suffix:
                    group[bases + j] = op_group[e]
                elif "." not in suffix:
                    group[bases + j] = _suffixed(codes, op_group[e], suffix)
                else:
                    for i, x in zip(ids, e.tolist()):
                        group[i] = codes.setdefault(group_of(op_names[x] + suffix), len(codes))
            else:
                of = None if cv.of is None else place_ids(cv.of, c, bases, members).tolist()
                for m, (i, x) in enumerate(zip(ids, e.tolist())):
                    later.append((i, x, -1 if of is None else of[m], j))
    heads: dict[str, str] = {}
    later.sort()
    for i, x, of_id, j in later:
        op = ops[x]
        cv = t.compiled[t.codes[x]].values[j]
        of_name = op.inputs[cv.made.operand] if cv.made.operand is not None else \
            (None if of_id < 0 else names[of_id])
        stem, suffix = value_name(op, cv.made, of_name, t.reference)
        names[i] = stem + suffix
        if cv.made.kind is not ValueKind.CONVERTED:
            group[i] = codes.setdefault(group_of_parts(stem_group(stem, heads), stem, suffix), len(codes))
    converted = source != np.arange(n)
    group[converted] = group[source[converted]]
    assert all(name is not None for name in names) and (group >= 0).all(), "every value named"
    return ValueLabels(names, group, list(codes))  # type: ignore[arg-type]


def _suffixed(codes: dict[str, int], op_group: np.ndarray, suffix: str) -> np.ndarray:
    """The group codes of `op group + suffix` for each operation's group code."""
    by_code = list(codes)
    distinct, inverse = np.unique(op_group, return_inverse=True)
    made = np.array([codes.setdefault(by_code[g] + suffix, len(codes)) for g in distinct.tolist()], dtype=np.int64)
    return made[inverse.reshape(-1)]


# Steps -------------------------------------------------------------------------------

class LoweredSteps(Rows[StepDraft]):
    """The lowered steps as columns: each step's operation (`source`), template (its
    text, scratch, kind and exchange: `templates`), execution count, and the values it
    reads and writes (`read_ids[read_starts[i]:read_starts[i + 1]]`, alike for
    writes). Indexing gives a `StepDraft`."""

    __slots__ = ("source", "template", "execution_count", "read_starts", "read_ids", "write_starts", "write_ids",
                 "templates")

    def __init__(self, source: np.ndarray, template: np.ndarray, execution_count: np.ndarray,
                 read_starts: np.ndarray, read_ids: np.ndarray, write_starts: np.ndarray, write_ids: np.ndarray,
                 templates: Sequence[StepTemplate]) -> None:
        self.source, self.template, self.execution_count = source, template, execution_count
        self.read_starts, self.read_ids = read_starts, read_ids
        self.write_starts, self.write_ids = write_starts, write_ids
        self.templates = tuple(templates)

    def __len__(self) -> int:
        return len(self.source)

    row_name = "step"

    def row(self, i: int) -> StepDraft:
        t = self.templates[int(self.template[i])]
        rs, ws = self.read_starts, self.write_starts
        return StepDraft(int(self.source[i]), t.text, int(self.execution_count[i]),
                         tuple(self.read_ids[rs[i]:rs[i + 1]].tolist()),
                         tuple(self.write_ids[ws[i]:ws[i + 1]].tolist()), t.scratch, t.kind, t.exchange)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def texts(self) -> list[str]:
        return [t.text for t in self.templates]

    def kinds(self) -> list[StepKind]:
        return [t.kind for t in self.templates]


def lowered_steps(t: Timeline, emitted: Emitted) -> LoweredSteps:
    """The steps of the timeline as columns."""
    total = t.step_count
    offsets = np.cumsum([0, *(len(c.steps) for c in t.compiled)])
    templates = [s for c in t.compiled for s in c.steps]
    template = np.zeros(total, dtype=np.int64)
    source = np.zeros(total, dtype=np.int64)
    count = np.zeros(total, dtype=np.int64)
    n_reads = np.zeros(total, dtype=np.int64)
    n_writes = np.zeros(total, dtype=np.int64)
    op_index = np.array([op.index for op in t.operations], dtype=np.int64)
    counts = np.array(t.counts, dtype=np.int64)
    placed: list[tuple[np.ndarray, Compiled, StepTemplate, np.ndarray, np.ndarray]] = []
    for c, e, bases, members in emitted.groups():
        step_bases = emitted.step_bases[e]
        for s, tmpl in enumerate(c.steps):
            ids = step_bases + s
            template[ids] = offsets[c.code] + s
            source[ids] = op_index[e]
            count[ids] = counts[e]
            n_reads[ids] = len(tmpl.reads)
            n_writes[ids] = len(tmpl.writes)
            placed.append((ids, c, tmpl, bases, members))
    read_starts = np.concatenate(([0], np.cumsum(n_reads)))
    write_starts = np.concatenate(([0], np.cumsum(n_writes)))
    read_ids = np.zeros(int(read_starts[-1]), dtype=np.int64)
    write_ids = np.zeros(int(write_starts[-1]), dtype=np.int64)
    for ids, c, tmpl, bases, members in placed:
        for r, place in enumerate(tmpl.reads):
            read_ids[read_starts[ids] + r] = place_ids(place, c, bases, members)
        for w, place in enumerate(tmpl.writes):
            write_ids[write_starts[ids] + w] = place_ids(place, c, bases, members)
    return LoweredSteps(source, template, count, read_starts, read_ids, write_starts, write_ids, templates)


class LoweredOperations(Rows[OperationInfo]):
    """The lowered operations, an `OperationInfo` made for each one asked for."""

    __slots__ = ("ops", "counts")

    def __init__(self, ops: Sequence[Operation], counts: Sequence[int]) -> None:
        self.ops, self.counts = list(ops), list(counts)

    def __len__(self) -> int:
        return len(self.ops)

    row_name = "operation"

    def row(self, i: int) -> OperationInfo:
        op = self.ops[i]
        return OperationInfo(op.index, op.origin, op.name, op.kind, self.counts[i])

    def columns(self) -> tuple[list[int], list[int], list[str], list[str], list[int]]:
        """The operations' indices, origins, names, kinds and execution counts, as
        lists (no object made per operation)."""
        ops = self.ops
        return ([op.index for op in ops], [op.origin for op in ops], [op.name for op in ops],
                [op.kind for op in ops], list(self.counts))

    def where(self, keep: AbstractSet[int]) -> "LoweredOperations":
        """The operations whose index is in `keep`."""
        kept = [k for k, op in enumerate(self.ops) if op.index in keep]
        return LoweredOperations([self.ops[k] for k in kept], [self.counts[k] for k in kept])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

