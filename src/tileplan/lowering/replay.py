"""Lower each operation signature once and replay it: the same operation on the same
shapes, layouts and precisions gets the same steps.

A program of a million values repeats a few signatures (a layer's operations, again
and again); lowering them from scratch each time costs most of the planning. The first
time a signature is lowered, its effect on the context (the values it makes, the steps
it adds, the products over the memory cap) is recorded relative to the operation: a
new value's name as the operation's name, an input's name or the reference's
`operation N result K` plus a suffix; its root and storage group as one of the new
values or an input's; a step's reads and writes likewise. Replaying makes the same
values and steps for another operation of that signature, renamed and renumbered.

The signature holds everything a lowering reads: the operation's kind, attributes,
output shape and precision, execution count and plan; each input member's layout,
shape, precision, alignment, role, copies and whether it (its root, its storage)
is declared; which of the inputs' ids, roots and storage groups coincide; which
inputs die. An effect that cannot be expressed this way (a name from elsewhere) is
never replayed: that signature is lowered each time, as without this pass. A made
name is read as the longest of those names it starts with, plus the rest: lowerings
name values by appending to one of them (`<operation> partials`, `<input> [AMP
copy]`), so only names, never numbers, could differ should two of those names
happen to extend each other differently (tests compare replayed lowerings with
plain ones on every model they plan).
"""

from __future__ import annotations

import re
from sys import intern
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterator, Sequence

from tileplan.lowering.core import LoweringContext, StepDraft
from tileplan.model.ir import Operation, group_of
from tileplan.model.tiling import Shards
from tileplan.model.timeline import Value

_REFERENCE_NAME = re.compile(r"operation (\d+) result (\d+)")

#: a reference to an id: ("new", k) the k-th value the operation made; ("id" | "root" |
#: "sg", pos) the id, root or storage group of the pos-th input member
Ref = tuple[str, int]


@dataclass(frozen=True, slots=True)
class _ValueRecord:
    origin: int | None  # None: the operation's origin; else the input member whose origin it is
    root: Ref
    storage_group: Ref
    name: tuple[Any, ...]  # ("ref", k) or ("base", i, suffix)
    group: int | None  # None: group_of(name); else the input member whose group it takes
    shape: tuple[int, ...]
    precision: Any
    layout: Any
    copies: int
    alignment_bytes: int | None
    role: str | None
    shards: Shards
    shard_bytes: int
    aligned_bytes: int
    bytes: int


@dataclass(frozen=True, slots=True)
class Recording:
    """One operation's recorded effect (see the module docstring)."""

    values: tuple[_ValueRecord, ...]
    steps: tuple[tuple[str, tuple[Ref, ...], tuple[Ref, ...], tuple[tuple[str, int], ...]], ...]
    over_cap: tuple[int, ...]
    output: Ref
    #: the same, compiled for `replay`: each reference an index into the table of ids
    #: [new values..., inputs' ids..., inputs' roots..., inputs' storage groups...]
    _compiled: tuple = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        k = len(self.values)
        members = max((r[1] + 1 for r in self._refs() if r[0] != "new"), default=0)

        def at(ref: Ref) -> int:
            kind, i = ref
            return i if kind == "new" else k + {"id": 0, "root": 1, "sg": 2}[kind] * members + i

        values = tuple((r.name, r.origin, at(r.root), r.group, at(r.storage_group),
                        (r.shape, r.precision, r.layout), (r.shard_bytes, r.aligned_bytes, r.copies, r.bytes,
                                                           r.alignment_bytes, r.role), r.shards) for r in self.values)
        steps = tuple((text, tuple(at(x) for x in reads), tuple(at(x) for x in writes), scratch)
                      for text, reads, writes, scratch in self.steps)
        object.__setattr__(self, "_compiled", (k, members, values, steps, at(self.output)))

    def _refs(self) -> Iterator[Ref]:
        for r in self.values:
            yield r.root
            yield r.storage_group
        for _, reads, writes, _ in self.steps:
            yield from reads
            yield from writes
        yield self.output

    def replay(self, ctx: LoweringContext, op: Operation, ins: Sequence[tuple[int, ...]], count: int) -> int:
        k, used, values_c, steps_c, output = self._compiled
        all_members = [ctx.values[v] for m in ins for v in m]
        members = all_members[:used] if used else all_members
        values, shards = ctx.values, ctx.value_shards
        base = len(values)
        table = [*range(base, base + k), *[m.id for m in members], *[m.root for m in members],
                 *[m.storage_group for m in members]]
        new = tuple.__new__
        base_groups: dict[int, str] = {}
        for name_t, origin, root, group, sg, head, tail, value_shards in values_c:
            if name_t[0] == "ref":
                name = f"operation {op.index} result {name_t[1]}"
                value_group = group_of(name) if group is None else members[group].group
            else:
                i, suffix = name_t[1], name_t[2]
                n = len(all_members)
                stem = op.name if i == 0 else all_members[i - 1].name if i <= n else op.inputs[i - 1 - n]
                name = stem + suffix
                if group is not None:
                    value_group = members[group].group
                elif "." in suffix:
                    value_group = group_of(name)
                else:  # no layer index can span the stem and a suffix without a dot
                    stem_group = base_groups.get(i)
                    if stem_group is None:
                        stem_group = base_groups[i] = group_of(stem)
                    value_group = stem_group + suffix
            vid = len(values)
            shards[vid] = value_shards
            values.append(new(Value, (vid, op.origin if origin is None else members[origin].origin, table[root], name,
                                      intern(value_group), *head, table[sg], *tail)))
        steps, index = ctx.steps, op.index
        for text, reads, writes, scratch in steps_c:
            steps.append(new(StepDraft, (index, text, count, tuple([table[x] for x in reads]),
                                         tuple([table[x] for x in writes]), scratch)))
        for temporary in self.over_cap:
            ctx.note_temporary(op, temporary)
        return table[output]


def _bases(op: Operation, members: Sequence[Value]) -> list[str]:
    """The strings a made value's name may extend: the operation's name, each input
    member's name, each input as the operation names it."""
    return [op.name, *(m.name for m in members), *op.inputs]


def signature(ctx: LoweringContext, op: Operation, plan: Any, ins: Sequence[tuple[int, ...]], count: int,
              dies: Sequence[bool]) -> Hashable | None:
    """What the lowering of `op` depends on, or None when it cannot be hashed."""
    values = ctx.values
    members = [values[v] for m in ins for v in m]
    declared = ctx.declared_count
    seen: dict[int, int] = {}
    coincide: list[int] = []
    for m in members:
        coincide += (seen.setdefault(m.id, len(seen)), seen.setdefault(m.root, len(seen)),
                     seen.setdefault(m.storage_group, len(seen)))
    key = (op.kind, op.attrs, op.output_shape, op.output_precision, op.module, count, id(plan),
           tuple([len(m) for m in ins]), tuple(dies), tuple(coincide), ctx.reference_names,
           tuple([(m.layout, m.shape, m.precision, m.alignment_bytes, m.role, m.copies, m.id < declared,
                   m.root < declared, m.storage_group < declared) for m in members]))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def record(ctx: LoweringContext, op: Operation, ins: Sequence[tuple[int, ...]], values_before: int,
           steps_before: int, over_cap_before: int, output: int) -> Recording | None:
    """The effect of lowering `op` (everything after the given lengths), or None when
    some part of it cannot be expressed relative to the operation."""
    members = [ctx.values[v] for m in ins for v in m]
    made = ctx.values[values_before:]
    new = {v.id: k for k, v in enumerate(made)}
    bases = _bases(op, members)

    def ref(x: int) -> Ref | None:
        if x in new:
            return ("new", new[x])
        for kind, attr in (("id", "id"), ("root", "root"), ("sg", "storage_group")):
            for pos, m in enumerate(members):
                if getattr(m, attr) == x:
                    return (kind, pos)
        return None

    def name_of(name: str) -> tuple[Any, ...] | None:
        m = _REFERENCE_NAME.fullmatch(name)
        if m is not None and int(m.group(1)) == op.index:
            return ("ref", int(m.group(2)))
        best = max((i for i, b in enumerate(bases) if name.startswith(b)), key=lambda i: (len(bases[i]), -i),
                   default=None)
        return None if best is None else ("base", best, name[len(bases[best]):])

    records = []
    for v in made:
        root, sg, name = ref(v.root), ref(v.storage_group), name_of(v.name)
        origin = None if v.origin == op.origin else next(
            (pos for pos, m in enumerate(members) if m.origin == v.origin), -1)
        group = None if v.group == group_of(v.name) else next(
            (pos for pos, m in enumerate(members) if m.group == v.group), -1)
        shards = ctx.value_shards.get(v.id)
        if root is None or sg is None or name is None or origin == -1 or group == -1 or shards is None \
                or v.shard_bytes is None or v.aligned_bytes is None or v.bytes is None:
            return None  # an unsized value's reason names it: lowered afresh each time
        records.append(_ValueRecord(origin, root, sg, name, group, v.shape, v.precision, v.layout, v.copies,
                                    v.alignment_bytes, v.role, shards, v.shard_bytes, v.aligned_bytes, v.bytes))
    steps = []
    for s in ctx.steps[steps_before:]:
        reads, writes = [ref(x) for x in s.reads], [ref(x) for x in s.writes]
        if s.source != op.index or any(x is None for x in (*reads, *writes)):
            return None
        steps.append((s.operation, tuple(r for r in reads if r is not None), tuple(w for w in writes if w is not None),
                      s.scratch))
    over = ctx.over_cap[over_cap_before:]
    out = ref(output)
    if out is None or any(i != op.index for i, _, _ in over):
        return None
    return Recording(tuple(records), tuple(steps), tuple(b for _, _, b in over), out)
