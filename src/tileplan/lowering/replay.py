"""Fragments into the timeline: numbered, named and sized, each signature lowered once.

A lowering is pure (`tileplan.ops.OpDef.lower`): its fragment depends only on what it
is given, the operation's kind, attributes, output shape and precision, its plan, and
each input member's layout, shape, precision, alignment and whether its storage is a
declared tensor's, with which inputs die. `signature` is that tuple; the driver keeps
each signature's fragment `compile`d, so a program of a million values, which
repeats a few signatures (a layer's operations, again and again), lowers each once
and looks the rest up.

A compiled fragment has its values sized (`Kernel.size`: once per layout, shape,
precision and alignment) and every reference made an index into a table of ids built
for each operation: [its new values..., its input members' ids..., their roots...,
their storage groups...]. `Timeline.emit` appends one operation's values and steps:
numbered from the next free id, named by `tileplan.lowering.naming.value_name`, their
roots and storage groups resolved against the operation's inputs, each given its role
(`tileplan.model.role`): a result or view its operation's, a copy or conversion its
source's `copy_role`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from sys import intern
from typing import Hashable, NamedTuple, Sequence

from tileplan.kernel.context import Kernel, Sized
from tileplan.kernel.fragment import Fragment, NewValue, Operand, Ref, StepKind, ValueKind
from tileplan.lowering.naming import group_of_parts, own_suffix, value_name
from tileplan.model.ir import Operation, group_of
from tileplan.model.layout import Layout
from tileplan.model.precision import Precision
from tileplan.model.role import Role, copy_role
from tileplan.model.tiling import Shards
from tileplan.model.timeline import Value


class StepDraft(NamedTuple):
    """A step before liveness: its operation (source), text, execution count, the
    values it reads and writes, its scratch per region, its kind and whether it
    exchanges between tiles. (A named tuple: a million of them are made for a
    million-value program.)"""

    source: int
    operation: str
    execution_count: int
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    scratch: tuple[tuple[str, int], ...]
    kind: StepKind
    exchange: bool


class CompiledValue(NamedTuple):
    """One new value of a compiled fragment: the value, the place of what it is `of`
    in the table (or None), its root's place, its shards (None: unsized, for
    `reason`), and its `Value` fields from shape to alignment (the storage group's as
    a place in the table)."""

    made: NewValue
    of: int | None
    root: int
    shards: Shards | None
    reason: str | None
    fields: tuple
    #: the name's suffix when the value is named after its own operation
    #: (`tileplan.lowering.naming.own_suffix`), else None
    own: str | None


class CompiledStep(NamedTuple):
    """One step of a compiled fragment, its reads and writes as places in the table."""

    text: str
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    scratch: tuple[tuple[str, int], ...]
    kind: StepKind
    exchange: bool


@dataclass(frozen=True, slots=True)
class Compiled:
    """A fragment ready to be emitted for any operation of its signature (see the
    module docstring): `members` input members, the output's place in the table."""

    fragment: Fragment
    members: int
    values: tuple[CompiledValue, ...]
    steps: tuple[CompiledStep, ...]
    output: int


def compile_fragment(fragment: Fragment, members: int, kernel: Kernel) -> Compiled:
    """`fragment` for operations with `members` input members, its values sized. A
    reference may only be to an input member or to a value made before."""
    k, n = len(fragment.values), members

    def at(ref: Ref, before: int) -> int:
        assert ref.number < (before if ref.new else n), (ref, before, n)
        return ref.number if ref.new else k + ref.number

    roots: list[int] = []
    groups: list[int] = []
    values = []
    for j, v in enumerate(fragment.values):
        of = None if v.of is None else at(v.of, j)
        if v.kind is ValueKind.VIEW:
            assert of is not None
            root = roots[of] if of < k else of + n  # an input's root: its place + n
        else:
            root = j
        if v.storage is None:
            sg = j
        else:
            place = at(v.storage, j)
            sg = groups[place] if place < k else place + 2 * n  # an input's storage group: its place + 2n
        roots.append(root)
        groups.append(sg)
        sized = kernel.size(v.layout, v.shape, v.precision, v.alignment)
        fields = (v.shape, v.precision, v.layout, sg, sized.shard_bytes, sized.aligned_bytes, 1, sized.aligned_bytes,
                  v.alignment)
        values.append(CompiledValue(v, of, root, sized.shards, sized.reason, fields, own_suffix(v)))
    everything = k + n
    steps = tuple(CompiledStep(s.text, tuple(at(r, everything) for r in s.reads),
                               tuple(at(w, everything) for w in s.writes), s.scratch, s.kind, s.exchange)
                  for s in fragment.steps)
    return Compiled(fragment, n, tuple(values), steps, at(fragment.output, everything))


def signature(op: Operation, plan: object, ins: Sequence[tuple[int, ...]], members: Sequence[Value],
              dies: tuple[bool, ...], declared: int) -> Hashable:
    """What the lowering of `op` is given (see the module docstring): the operation's
    kind, attributes, output shape and precision are its plan's (`id(plan)`: plans are
    kept per (kind, attributes, output, inputs) by `plan_operations` and live as long as
    the lowering, so one plan object is one such key). Hashing it
    raises TypeError when an attribute cannot be hashed (a list): the caller looks it
    up once and lowers afresh then (`lookup`)."""
    return (id(plan), tuple([len(m) for m in ins]), dies,
            tuple([(m.layout, m.shape, m.precision, m.alignment_bytes, m.storage_group < declared) for m in members]))


def lookup(memo: dict[Hashable, "Compiled"], key: Hashable) -> tuple[bool, "Compiled | None"]:
    """(whether `key` can be hashed, its compiled fragment if `memo` holds one): one
    hash per operation, the lookup's own."""
    try:
        return True, memo.get(key)
    except TypeError:
        return False, None


def operands(ins: Sequence[tuple[int, ...]], values: Sequence[Value], declared: int) -> list[list[Operand]]:
    """What a lowering knows of each input member, by input position."""
    return [[Operand(v.layout, v.shape, v.precision, v.alignment_bytes, v.storage_group < declared, v.name)
             for v in (values[i] for i in ids)] for ids in ins]


@dataclass
class Timeline:
    """The values and steps made so far, numbered in creation order (the report's ids),
    with each value's shards or why it has none."""

    values: list[Value] = field(default_factory=list)
    steps: list[StepDraft] = field(default_factory=list)
    shards: dict[int, Shards] = field(default_factory=dict)
    unsized: dict[int, str] = field(default_factory=dict)
    #: the group of each name's part up to its last `.` (`stem_group`)
    heads: dict[str, str] = field(default_factory=dict)

    def stem_group(self, stem: str) -> str:
        """`group_of(stem)`, from the group of the part up to its last `.`, kept: a
        layer index ends at a `.` (`tileplan.model.ir.LAYER_INDEX`), so none reaches
        into the last part, and the operations of a module share that part."""
        head, dot, tail = stem.rpartition(".")
        if not dot:
            return group_of(stem)
        group = self.heads.get(head)
        if group is None:
            group = self.heads[head] = group_of(head + ".")
        return group + tail

    def declare(self, origin: int, name: str, shape: tuple[int, ...], precision: Precision, layout: Layout,
                sized: Sized, alignment: int | None, role: Role) -> int:
        """A declared tensor's value (`sized`: `Kernel.size`'s answer for it)."""
        vid = len(self.values)
        if sized.shards is None:
            assert sized.reason is not None
            self.unsized[vid] = sized.reason
        else:
            self.shards[vid] = sized.shards
        self.values.append(Value(vid, origin, vid, name, intern(group_of(name)), shape, precision, layout, vid,
                                 sized.shard_bytes, sized.aligned_bytes, 1, sized.aligned_bytes,
                                 alignment_bytes=alignment, role=role))
        return vid

    def emit(self, c: Compiled, op: Operation, members: Sequence[Value], count: int, reference: bool) -> int:
        """Append `c`'s values and steps for `op`, whose input members are `members`;
        returns the output's id."""
        values, k = self.values, len(c.values)
        base = len(values)
        table = [*range(base, base + k), *[m.id for m in members], *[m.root for m in members],
                 *[m.storage_group for m in members]]
        names: list[str] = []
        groups: list[str] = []
        origins: list[int] = []
        op_group: str | None = None
        op_role = op.role
        new = tuple.__new__
        for made, of, root, shards, reason, fields, own in c.values:
            if own is not None:  # a result or a view: what its operation makes
                role = op_role
            else:  # a copy or a conversion: as what it is of
                assert of is not None
                role = copy_role(values[base + of].role if of < k else members[of - k].role)
            if own is not None and not reference:
                stem, suffix = op.name, own
            else:
                if of is None:
                    of_name = None
                elif made.operand is not None:
                    of_name = op.inputs[made.operand]
                else:
                    of_name = names[of] if of < k else members[of - k].name
                stem, suffix = value_name(op, made, of_name, reference)
            if made.kind is ValueKind.CONVERTED:
                assert of is not None
                group, origin = (groups[of], origins[of]) if of < k else (members[of - k].group, members[of - k].origin)
            else:
                if stem is op.name:
                    if op_group is None:
                        op_group = self.stem_group(stem)
                    stem_group = op_group
                else:
                    stem_group = self.stem_group(stem)
                group, origin = intern(group_of_parts(stem_group, stem, suffix)), op.origin
            vid = len(values)
            if shards is None:
                assert reason is not None
                self.unsized[vid] = reason
            else:
                self.shards[vid] = shards
            name = stem + suffix
            names.append(name)
            groups.append(group)
            origins.append(origin)
            shape, precision, layout, sg, *tail = fields
            values.append(new(Value, (vid, origin, table[root], name, group, shape, precision, layout, table[sg],
                                      *tail, role)))
        steps, index = self.steps, op.index
        for text, reads, writes, scratch, kind, exchange in c.steps:
            steps.append(new(StepDraft, (index, text, count, tuple([table[x] for x in reads]),
                                         tuple([table[x] for x in writes]), scratch, kind, exchange)))
        return table[c.output]
