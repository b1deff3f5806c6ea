"""Lower a whole program: plan layouts, place the declared tensors, emit the steps.

The program is checked first (`tileplan.ops.check_program`); each operation is planned
and lowered by its operator's registry entry (`tileplan.ops.REGISTRY`), both pure
functions of the read-only `tileplan.kernel.context.Kernel`. Its names are numbered
once (`tileplan.lowering.schedule.Schedule`); three passes, data in and data out:
1. `plan_operations`: each operation's plan (once per signature), activations'
   layouts flowing forward; a product whose temporary bytes exceed the cap is
   recorded (`over_cap`); and the readings of the declared tensors.
2. `place_tensors`: the policy picks each declared tensor's resting layout from the
   plans of the operations that read it; values 0..n-1 are the declared tensors.
3. `emit_steps`: each operation's fragment (its lowering's, once per signature:
   `tileplan.lowering.replay`), recorded into the timeline in order; its values and
   steps become columns at the end (`tileplan.lowering.columns`). An operation with no
   legal partition stops the walk; the lowering records which and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Mapping, Sequence

from tileplan.errors import TileplanError
from tileplan.kernel.context import Kernel
from tileplan.kernel.gemm import PlanningError
from tileplan.kernel.layouts import turn_linear
from tileplan.kernel.options import Options
from tileplan.lowering.columns import Emitted, LoweredOperations, LoweredSteps, lowered_steps, value_table
from tileplan.lowering.policy import Policy, Reader, ValueNames
from tileplan.lowering.replay import Compiled, OperationInfo, StepDraft, Timeline
from tileplan.lowering.schedule import NEVER, Schedule, last_readers, last_reads, reads_every_iteration
from tileplan.model.ir import Program
from tileplan.model.machine import Machine
from tileplan.model.tiling import Shards
from tileplan.model.values import ValueTable
from tileplan.ops import REGISTRY, InputInfo, OpPlan, check_program

__all__ = ["NEVER", "Lowering", "OperationInfo", "StepDraft", "emit_steps", "last_readers", "lower_program",
           "place_tensors", "plan_operations"]


@dataclass(frozen=True, slots=True)
class Lowering:
    """The lowered program. `failed` is (operation index, reason) when an operation
    could not be planned at all; `steps` then end before it."""

    values: ValueTable
    steps: LoweredSteps
    operations: LoweredOperations
    outputs: tuple[int, ...]
    declared: int
    failed: tuple[int, str] | None
    #: (first, last) step of each repeat block: its steps run once per iteration
    blocks: tuple[tuple[int, int], ...] = ()
    #: values the iterations after the first still need when a block step has read
    #: them: members 1..n-1 of the parameter families read in repeat blocks, and the
    #: values made before a block that every iteration reads (`reads_every_iteration`)
    later_members: frozenset[int] = frozenset()
    #: products planned over the temporary-memory cap: (operation, name, bytes per tile)
    over_cap: tuple[tuple[int, str, int], ...] = ()
    #: each value's shards, or why its layout cannot hold it
    shards: Mapping[int, Shards] = field(default_factory=dict)
    unsized: Mapping[int, str] = field(default_factory=dict)


@dataclass
class Planned:
    """What `plan_operations` makes: each operation's plan (None from the one that
    could not be planned on), the products over the cap, that operation and why, and
    each declared tensor's readings (`Reader`: each distinct reading once, at its
    first reader, in execution order)."""

    plans: list[OpPlan[object] | None]
    over_cap: list[tuple[int, str, int]] = field(default_factory=list)
    failed: tuple[int, str] | None = None
    readers: list[list[Reader]] = field(default_factory=list)


def plan_operations(k: Kernel, s: Schedule) -> Planned:
    """Each operation's plan (see `Planned`); planning stops at an operation that
    cannot be planned. What a plan is given of an input (shape, precision, layout when
    an operation made it, whether it is declared) is coded once per slot, so one
    plan's key is a tuple of small integers beside the operation's own fields."""
    tensors = s.program.tensors
    declared = len(tensors)
    infos: list[InputInfo] = []
    info_codes: dict[InputInfo, int] = {}

    def code(info: InputInfo) -> int:
        c = info_codes.get(info)
        if c is None:
            c = info_codes[info] = len(infos)
            infos.append(info)
        return c

    slot_info = [-1] * len(s.slot)
    for i, t in enumerate(tensors):
        slot_info[i] = code(InputInfo(t.shape, t.precision, None, True))
    out = Planned([None] * len(s.ops), readers=[[] for _ in tensors])
    memo: dict[Hashable, OpPlan[object]] = {}
    made: dict[int, int] = {}  # id(plan) -> its output's code
    cap = k.cap_bytes
    plan_inputs, inputs, starts, outputs, plans = s.plan_inputs, s.inputs, s.starts, s.outputs, out.plans
    seen: set[tuple[int, int, int]] = set()
    readings: list[tuple[int, int, int]] = []  # (declared slot, operation, position)
    for i, op in enumerate(s.ops):
        a, b = starts[i], starts[i + 1]
        key = (op.kind, op.attrs, op.output_shape, op.output_precision, op.module,
               tuple([slot_info[x] for x in plan_inputs[a:b]]))
        plan = memo.get(key)
        if plan is None:
            try:
                plan = memo[key] = REGISTRY[op.kind].plan(k, op, [infos[slot_info[x]] for x in plan_inputs[a:b]])
            except PlanningError as e:
                out.failed = (op.index, str(e))
                break
        if cap is not None and plan.temporary is not None and plan.temporary > cap:
            out.over_cap.append((op.index, op.name, plan.temporary))
        plans[i] = plan
        o = made.get(id(plan))
        if o is None:
            o = made[id(plan)] = code(InputInfo(op.output_shape, op.output_precision, plan.output, False))
        slot_info[outputs[i]] = o
        for position, x in enumerate(inputs[a:b]):
            if x < declared or s.blocks[i] is not None:
                reading = (x, id(plan), position)
                if reading not in seen:
                    seen.add(reading)
                    readings.append((x, i, position))
    declared_slots = {t.name: n for n, t in enumerate(tensors)}
    for x, i, position in readings:
        plan, op = plans[i], s.ops[i]
        assert plan is not None
        align = plan.alignment[position] if position < len(plan.alignment) else None
        for member in s.members(i, position) if s.blocks[i] is not None else (tensors[x].name,):
            n = declared_slots.get(member)
            if n is not None:
                out.readers[n].append(Reader(op.index, op.kind, position, plan.rest[position], align))
    return out


def place_tensors(k: Kernel, timeline: Timeline, s: Schedule, planned: Planned, policy: Policy) -> None:
    """The declared tensors' values, in declaration order, each resting where the
    policy puts it; each tensor the policy creates linearly starts on the tile after
    the last one did (PopART's `LinearMapper`, `turn_linear`)."""
    start = 0
    for t, readers in zip(s.program.tensors, planned.readers):
        rest = policy.resting(t, readers, k.tile_count, k.prefix)
        layout = rest.layout
        if rest.linearly_created:
            layout, start = turn_linear(layout, t.shape, start)
        timeline.declare(t.origin, t.name, t.shape, t.precision, layout, rest.alignment, t.role)


@dataclass
class EmitResult:
    """What `emit_steps` makes besides the timeline: the operation that could not be
    lowered, each repeat block's (first, last) step, the family members later
    iterations read, and each slot's value (-1: none yet)."""

    failed: tuple[int, str] | None = None
    blocks: list[tuple[int, int]] = field(default_factory=list)
    later_members: set[int] = field(default_factory=set)
    binding: list[int] = field(default_factory=list)


def emit_steps(k: Kernel, timeline: Timeline, s: Schedule, plans: Sequence[OpPlan[object] | None],
               replay: bool = True, always_live: bool = False) -> EmitResult:
    """Lower each operation in order into `timeline` (after the declared tensors).
    `replay`: lower each signature once (`tileplan.lowering.replay`); without it every
    operation is lowered afresh."""
    declared = s.declared_names
    last = last_reads(s, always_live).tolist()
    out = EmitResult(binding=[-1] * len(s.slot))
    bind = out.binding
    for n in range(len(s.program.tensors)):
        bind[n] = n
    inputs, starts, outputs, sig = s.inputs, s.starts, s.outputs, timeline.sig
    memo: dict[Hashable, Compiled] = {}
    spans: dict[int, list[int]] = {}
    for i, op in enumerate(s.ops):
        plan = plans[i]
        if plan is None:
            break
        a, b = starts[i], starts[i + 1]
        block = s.blocks[i]
        slots = inputs[a:b]
        dies = tuple([last[x] == i for x in slots])
        if block is None:
            members = [bind[x] for x in slots]
            ins: list[tuple[int, ...]] | None = None
            lens = None
        else:
            ins = [tuple(bind[s.slot[m]] for m in s.members(i, p)) for p in range(b - a)]
            for name, family in zip(op.inputs, ins):
                out.later_members.update(family[1:])
                if reads_every_iteration(name, block, declared):
                    out.later_members.update(family)
            members = [v for ids in ins for v in ids]
            lens = tuple([len(m) for m in ins])
        # the signature (`tileplan.lowering.replay`): the plan stands for the operation's
        # kind, attributes, output and inputs; a member's code for what it is
        if replay:
            key = (id(plan), lens, dies, tuple([sig[m] for m in members]))
            try:  # an unhashable attribute: lowered afresh
                hashable, compiled = True, memo.get(key)
            except TypeError:
                hashable, compiled = False, None
        else:
            key, hashable, compiled = None, False, None
        if compiled is None:
            grouped = ins if ins is not None else [(m,) for m in members]
            try:
                fragment = REGISTRY[op.kind].lower(k, op, plan, timeline.operands(grouped), dies)
            except TileplanError as e:
                out.failed = (op.index, str(e))
                break
            compiled = timeline.compile(fragment, len(members))
            if hashable:
                memo[key] = compiled
        before = timeline.step_count
        bind[outputs[i]] = timeline.emit(compiled, op, members, s.counts[i])
        if block is not None:
            end = timeline.step_count - 1
            span = spans.setdefault(id(block), [end, end])
            span[0] = min(span[0], before)
            span[1] = end
    out.blocks.extend((a, b) for a, b in spans.values() if b >= a)
    return out


def lower_program(program: Program, machine: Machine, policy: Policy, options: Options, replay: bool = True
                  ) -> Lowering:
    check_program(program)
    k = Kernel(machine, options, policy.kernels)
    s = Schedule.of(program)
    planned = plan_operations(k, s)
    timeline = Timeline(k, reference=policy.names is ValueNames.REFERENCE)
    place_tensors(k, timeline, s, planned, policy)
    emitted = emit_steps(k, timeline, s, planned.plans, replay, policy.always_live)
    failed = emitted.failed or planned.failed
    outputs = tuple(emitted.binding[s.slot[name]] for name in program.outputs
                    if name in s.slot and emitted.binding[s.slot[name]] >= 0)
    record = Emitted(timeline)
    values = value_table(timeline, record)
    return Lowering(values, lowered_steps(timeline, record), LoweredOperations(timeline.operations, timeline.counts),
                    outputs, len(program.tensors), failed, tuple(sorted(emitted.blocks)),
                    frozenset(emitted.later_members), tuple(sorted(planned.over_cap)), values.shards(),
                    values.unsized())

