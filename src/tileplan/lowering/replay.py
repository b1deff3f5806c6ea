"""Fragments into the timeline: each signature lowered once, every operation recorded
in a few integers, the values numbered, named and sized in one pass at the end.

A lowering is pure (`tileplan.ops.OpDef.lower`): its fragment depends only on what it
is given, the operation's kind, attributes, output shape and precision, its plan, and
each input member's layout, shape, precision, alignment and whether its storage is a
declared tensor's, with which inputs die. That is an operation's signature: its
plan (`id(plan)`: plans are kept per (kind, attributes, output, inputs) by
`plan_operations` and live as long as the lowering, so one plan object is one such
key), how many members each input has, which inputs die, and each member's signature
code (`Timeline.sig`: its form and whether its storage is declared). The driver keeps
each signature's fragment `compile`d, so a program of a million values, which
repeats a few signatures (a layer's operations, again and again), lowers each once
and looks the rest up.

A compiled fragment has its values sized (`Kernel.size`, once per layout, shape,
precision and alignment: the value's `ValueForm`) and every reference made a place
in a table built for each operation: [its new values..., its input members' ids...,
their roots..., their storage groups...]. `Timeline.emit` records one operation
(which fragment, which members, how often it runs) and numbers its values from the
next free id: nothing per value but its signature code, which later operations' own
signatures read. `tileplan.lowering.columns` turns the record into the timeline's
columns at the end: ids, roots and storage groups resolved against the operations'
inputs, origins and roles (`tileplan.model.role`: a result or view its operation's,
a copy or conversion its source's `copy_role`), and the names
(`tileplan.lowering.naming`), made only when asked for.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, NewValue, Operand, Ref, StepKind, ValueKind
from tileplan.lowering.naming import own_suffix, value_name
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout
from tileplan.model.precision import Precision
from tileplan.model.role import Role
from tileplan.model.values import ValueForm


@dataclass(frozen=True, slots=True)
class OperationInfo:
    """What the report says about an operation: index, node, name, kind, execution
    count (`tileplan.lowering.columns.LoweredOperations` makes one when asked)."""

    index: int
    origin: int
    name: str
    kind: str
    execution_count: int


class StepDraft(NamedTuple):
    """A step before liveness: its operation (source), text, execution count, the
    values it reads and writes, its scratch per region, its kind and whether it
    exchanges between tiles (`tileplan.lowering.columns.LoweredSteps` makes one when
    asked)."""

    source: int
    operation: str
    execution_count: int
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    scratch: tuple[tuple[str, int], ...]
    kind: StepKind
    exchange: bool


class CompiledValue(NamedTuple):
    """One new value of a compiled fragment: the value, its form (the timeline's
    code), and places in the table: what it is `of` (or None), its root and its
    storage group (its own place when it owns them). `own`: the name's suffix when
    the value is named after its own operation (`tileplan.lowering.naming.own_suffix`),
    else None. `flag`: the input member whose storage it shares (its signature says
    whether that storage is declared), else None."""

    made: NewValue
    form: int
    of: int | None
    root: int
    group: int
    own: str | None
    flag: int | None


class StepTemplate(NamedTuple):
    """A step of a compiled fragment: its text, scratch, kind and exchange, and its
    reads and writes as places in the table (new values or input members)."""

    text: str
    scratch: tuple[tuple[str, int], ...]
    kind: StepKind
    exchange: bool
    reads: tuple[int, ...]
    writes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Compiled:
    """A fragment ready to be emitted for any operation of its signature (see the
    module docstring): its number in the timeline (`code`), `members` input members,
    the output's place in the table, and each new value's signature code with a
    storage not declared (`sigs`) and declared (`sigs_declared`)."""

    code: int
    fragment: Fragment
    members: int
    values: tuple[CompiledValue, ...]
    steps: tuple[StepTemplate, ...]
    output: int
    sigs: tuple[int, ...]
    sigs_declared: tuple[int, ...]
    #: whether a new value's signature depends on a member's (it shares its storage)
    flagged: bool


@dataclass
class Timeline:
    """The values and steps made so far, as a record (see the module docstring): the
    declared tensors' values, then per emitted operation its compiled fragment, the
    operation, its execution count and its input members. Values are numbered in
    creation order (the report's ids)."""

    kernel: Kernel
    #: the reference's names (`operation N result 0`)
    reference: bool = False
    #: the distinct forms (`ValueForm`), by their (layout, shape, precision, alignment)
    forms: list[ValueForm] = field(default_factory=list)
    form_codes: dict[tuple, int] = field(default_factory=dict)
    #: each value's signature code; each code's (form, declared storage)
    sig: list[int] = field(default_factory=list)
    sig_keys: list[tuple[int, bool]] = field(default_factory=list)
    sig_codes: dict[tuple[int, bool], int] = field(default_factory=dict)
    #: the declared tensors' values: origin, name, form, role
    declared: list[tuple[int, str, int, Role]] = field(default_factory=list)
    #: the compiled fragments by code
    compiled: list[Compiled] = field(default_factory=list)
    #: per emitted operation: its fragment's code, the operation, its execution count,
    #: its first value's id and first step's index; the members of all, in order
    codes: list[int] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    bases: list[int] = field(default_factory=list)
    step_bases: list[int] = field(default_factory=list)
    members: list[int] = field(default_factory=list)
    member_starts: list[int] = field(default_factory=list)
    #: values and steps so far
    size: int = 0
    step_count: int = 0

    def form(self, layout: Layout, shape: tuple[int, ...], precision: Precision, alignment: int | None) -> int:
        """The code of a value's form, sized (`Kernel.size`) when first seen."""
        key = (layout, shape, precision, alignment)
        code = self.form_codes.get(key)
        if code is None:
            sized = self.kernel.size(layout, shape, precision, alignment)
            code = self.form_codes[key] = len(self.forms)
            self.forms.append(ValueForm(shape, precision, layout, sized.shard_bytes, sized.aligned_bytes, 1,
                                        sized.aligned_bytes, alignment, sized.shards, sized.reason))
        return code

    def sig_code(self, form: int, declared: bool) -> int:
        key = (form, declared)
        code = self.sig_codes.get(key)
        if code is None:
            code = self.sig_codes[key] = len(self.sig_keys)
            self.sig_keys.append(key)
        return code

    def declare(self, origin: int, name: str, shape: tuple[int, ...], precision: Precision, layout: Layout,
                alignment: int | None, role: Role) -> int:
        """A declared tensor's value (before any operation's)."""
        assert not self.codes, "declared tensors come first"
        vid = self.size
        form = self.form(layout, shape, precision, alignment)
        self.declared.append((origin, name, form, role))
        self.sig.append(self.sig_code(form, True))
        self.size += 1
        return vid

    def compile(self, fragment: Fragment, members: int) -> Compiled:
        """`fragment` for operations with `members` input members, its values sized.
        A reference may only be to an input member or to a value made before."""
        k, n = len(fragment.values), members

        def at(ref: Ref, before: int) -> int:
            assert ref.number < (before if ref.new else n), (ref, before, n)
            return ref.number if ref.new else k + ref.number

        roots: list[int] = []
        groups: list[int] = []
        flags: list[int | None] = []
        values = []
        for j, v in enumerate(fragment.values):
            of = None if v.of is None else at(v.of, j)
            if v.kind is ValueKind.VIEW:
                assert of is not None
                root = roots[of] if of < k else of + n  # an input's root: its place + n
            else:
                root = j
            if v.storage is None:
                sg, flag = j, None
            else:
                place = at(v.storage, j)
                # an input's storage group: its place + 2n
                sg, flag = (groups[place], flags[place]) if place < k else (place + 2 * n, place - k)
            roots.append(root)
            groups.append(sg)
            flags.append(flag)
            form = self.form(v.layout, v.shape, v.precision, v.alignment)
            values.append(CompiledValue(v, form, of, root, sg, own_suffix(v), flag))
        everything = k + n
        steps = tuple(StepTemplate(s.text, s.scratch, s.kind, s.exchange, tuple(at(r, everything) for r in s.reads),
                                   tuple(at(w, everything) for w in s.writes)) for s in fragment.steps)
        c = Compiled(len(self.compiled), fragment, n, tuple(values), steps, at(fragment.output, everything),
                     tuple(self.sig_code(v.form, False) for v in values),
                     tuple(self.sig_code(v.form, True) for v in values), any(f is not None for f in flags))
        self.compiled.append(c)
        return c

    def emit(self, c: Compiled, op: Operation, members: Sequence[int], count: int) -> int:
        """Record `c` emitted for `op`, whose input members are `members`; returns the
        output's id."""
        base, k, all_members = self.size, len(c.values), self.members
        self.codes.append(c.code)
        self.operations.append(op)
        self.counts.append(count)
        self.bases.append(base)
        self.step_bases.append(self.step_count)
        self.member_starts.append(len(all_members))
        all_members.extend(members)
        sig = self.sig
        if c.flagged:
            keys = self.sig_keys
            sig.extend([c.sigs_declared[j] if v.flag is not None and keys[sig[members[v.flag]]][1]
                        else c.sigs[j] for j, v in enumerate(c.values)])
        else:
            sig.extend(c.sigs)
        self.size = base + k
        self.step_count += len(c.steps)
        output = c.output
        return base + output if output < k else members[output - k]

    # What a lowering is told of its operands --------------------------------------------

    def operands(self, ins: Sequence[tuple[int, ...]]) -> list[list[Operand]]:
        """What a lowering knows of each input member, by input position (its name for
        its error messages)."""
        out = []
        for ids in ins:
            row = []
            for v in ids:
                form, declared = self.sig_keys[self.sig[v]]
                f = self.forms[form]
                row.append(Operand(f.layout, f.shape, f.precision, f.alignment_bytes, declared, self.name_of(v)))
            out.append(row)
        return out

    def name_of(self, vid: int) -> str:
        """Value `vid`'s name, made alone (`tileplan.lowering.columns` names them all at once)."""
        if vid < len(self.declared):
            return self.declared[vid][1]
        e = bisect_right(self.bases, vid) - 1
        c, op = self.compiled[self.codes[e]], self.operations[e]
        cv = c.values[vid - self.bases[e]]
        if cv.own is not None and not self.reference:
            return op.name + cv.own
        of_name = None
        if cv.of is not None:
            if cv.made.operand is not None:
                of_name = op.inputs[cv.made.operand]
            else:
                k, start = len(c.values), self.member_starts[e]
                of_name = self.name_of(self.bases[e] + cv.of if cv.of < k else self.members[start + cv.of - k])
        stem, suffix = value_name(op, cv.made, of_name, self.reference)
        return stem + suffix


