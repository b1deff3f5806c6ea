"""Lower a whole program: plan layouts, place the declared tensors, emit the steps.

The program is checked first (`tileplan.ops.check_program`); each operation is planned
and lowered by its operator's registry entry (`tileplan.ops.REGISTRY`), both pure
functions of the read-only `tileplan.kernel.context.Kernel`. Three passes, data in and
data out:
1. `plan_operations`: each operation's plan (once per signature), activations'
   layouts flowing forward; a product whose temporary bytes exceed the cap is
   recorded (`over_cap`).
2. `place_tensors`: the policy picks each declared tensor's resting layout from the
   plans of the operations that read it; values 0..n-1 are the declared tensors.
3. `emit_steps`: each operation's fragment (its lowering's, once per signature:
   `tileplan.lowering.replay`), numbered and named into the timeline, in order. An
   operation with no legal partition stops the walk; the lowering records which and
   why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Mapping

from tileplan.errors import TileplanError
from tileplan.kernel.context import Kernel
from tileplan.kernel.gemm import PlanningError
from tileplan.kernel.options import Options
from tileplan.lowering.policy import Policy, Reader, ValueNames
from tileplan.lowering.replay import Compiled, StepDraft, Timeline, compile_fragment, lookup, operands, signature
from tileplan.model.ir import Operation, Program, RepeatBlock, family_member
from tileplan.model.layout import Layout
from tileplan.model.machine import Machine
from tileplan.model.tiling import Shards
from tileplan.model.timeline import Value
from tileplan.ops import REGISTRY, InputInfo, OpPlan, check_program


@dataclass(frozen=True, slots=True)
class OperationInfo:
    """What the report says about an operation: index, node, name, kind, first step."""

    index: int
    origin: int
    name: str
    kind: str
    execution_count: int


@dataclass(frozen=True, slots=True)
class Lowering:
    """The lowered program. `failed` is (operation index, reason) when an operation
    could not be planned at all; `steps` then end before it."""

    values: tuple[Value, ...]
    steps: tuple[StepDraft, ...]
    operations: tuple[OperationInfo, ...]
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


Schedule = list[tuple[Operation, int, "RepeatBlock | None"]]
#: the last program scheduled and its schedule: the passes of one lowering each walk it
_LAST: list[tuple[Program, Schedule]] = []


def _schedule(program: Program) -> Schedule:
    """Each operation in execution order with its execution count and its repeat block
    (remembered for the program last asked about: its passes ask in turn)."""
    if _LAST and _LAST[0][0] is program:
        return _LAST[0][1]
    out: Schedule = []
    for item in program.items:
        if isinstance(item, RepeatBlock):
            out.extend((op, item.count, item) for op in item.body)
        else:
            out.append((item, 1, None))
    _LAST[:] = [(program, out)]
    return out


def _members(name: str, block: RepeatBlock | None, declared: set[str]) -> tuple[str, ...]:
    """The tensors a name stands for: a family's members inside a block, else itself."""
    if block is not None and "{i}" in name and family_member(name, block.first) in declared:
        return block.members(name)
    return (name,)


def plan_operations(k: Kernel, program: Program
                    ) -> tuple[dict[int, OpPlan[object]], list[tuple[int, str, int]], tuple[int, str] | None]:
    """Each operation's plan, the products planned over the cap (operation, name,
    temporary bytes per tile) and the operation that could not be planned, if any
    (planning stops there)."""
    declared = {t.name: t for t in program.tensors}
    layouts: dict[str, Layout] = {}
    shapes = {t.name: (t.shape, t.precision) for t in program.tensors}
    plans: dict[int, OpPlan[object]] = {}
    over_cap: list[tuple[int, str, int]] = []
    cap = k.cap_bytes
    memo: dict[Hashable, OpPlan[object]] = {}
    names = set(declared)
    for op, _, block in _schedule(program):
        raw = []
        for name in op.inputs:
            first = name if block is None else _members(name, block, names)[0]
            shape, precision = shapes[first]
            raw.append((shape, precision, layouts.get(name), first in declared))
        key = (op.kind, op.attrs, op.output_shape, op.output_precision, op.module, tuple(raw))
        plan = memo.get(key)
        if plan is None:
            try:
                plan = memo[key] = REGISTRY[op.kind].plan(k, op, [InputInfo(*r) for r in raw])
            except PlanningError as e:
                return plans, over_cap, (op.index, str(e))
        if cap is not None and plan.temporary is not None and plan.temporary > cap:
            over_cap.append((op.index, op.name, plan.temporary))
        plans[op.index] = plan
        layouts[op.output] = plan.output
        shapes[op.output] = (op.output_shape, op.output_precision)
    return plans, over_cap, None


def place_tensors(k: Kernel, timeline: Timeline, program: Program, plans: dict[int, OpPlan[object]],
                  policy: Policy) -> None:
    """The declared tensors' values, in declaration order, each resting where the
    policy puts it."""
    declared = {t.name for t in program.tensors}
    readers: dict[str, list[Reader]] = {t.name: [] for t in program.tensors}
    for op, _, block in _schedule(program):
        if op.index not in plans:
            break
        plan = plans[op.index]
        for pos, name in enumerate(op.inputs):
            for member in _members(name, block, declared):
                if member in readers:
                    align = plan.alignment[pos] if pos < len(plan.alignment) else None
                    readers[member].append(Reader(op.index, op.kind, pos, plan.rest[pos], align))
    for t in program.tensors:
        layout, alignment = policy.resting(t, readers[t.name], k.tile_count, k.prefix)
        timeline.declare(t.origin, t.name, t.shape, t.precision, layout,
                         k.size(layout, t.shape, t.precision, alignment), alignment, t.role)


#: the last reader of a value that never dies (a program output, an always-live parameter)
NEVER = 1 << 62


def reads_every_iteration(name: str, block: RepeatBlock, declared: set[str]) -> bool:
    """Whether every iteration of `block` reads tensor `name` as it is: made before the
    block (a rotary table, a mask, a shared parameter), not a family (iteration i reads
    member i) and not the carried tensor (only the first iteration reads it; later ones
    the iteration before's output)."""
    if "{i}" in name and family_member(name, block.first) in declared:
        return False
    return name != block.carried_in and all(name != o.output for o in block.body)


def last_readers(program: Program, always_live: bool = False) -> dict[str, int]:
    """For each name, the index of the last operation reading it (outputs, and with
    `always_live` the held tensors (`Role.held`: weights, buffers, training state) and
    the families of them a repeat block reads: never die). A view may share its
    input's storage, so the input lives as long as the view is read: the last read of
    a view counts as a read of its input (transitively), and a name's entry is that of
    the whole chain of views it belongs to."""
    last: dict[str, int] = {}
    schedule = _schedule(program)
    declared = {t.name for t in program.tensors}
    parameters = {t.name for t in program.tensors if t.role.held} if always_live else set()
    for op, _, block in schedule:
        for name in op.inputs:
            last[name] = op.index
            if parameters and _members(name, block, declared)[0] in parameters:
                last[name] = NEVER
            elif block is not None and reads_every_iteration(name, block, declared):
                last[name] = max(last[name], block.body[-1].index)
    for name in program.outputs:
        last[name] = NEVER
    source: dict[str, str] = {}
    for op, _, _ in schedule:
        if REGISTRY[op.kind].view:
            source[op.output] = op.inputs[0]
    for op, _, _ in reversed(schedule):
        if op.output in source and op.output in last:
            src = source[op.output]
            last[src] = max(last.get(src, -1), last[op.output])

    def root(name: str) -> str:
        while name in source:
            name = source[name]
        return name

    return {name: last.get(root(name), when) for name, when in last.items()}


@dataclass
class Emitted:
    """What `emit_steps` makes besides the timeline: the operations lowered, the
    operation that could not be, each repeat block's (first, last) step, the family
    members later iterations read, and each output name's value."""

    operations: list[OperationInfo] = field(default_factory=list)
    failed: tuple[int, str] | None = None
    blocks: list[tuple[int, int]] = field(default_factory=list)
    later_members: set[int] = field(default_factory=set)
    binding: dict[str, tuple[int, ...]] = field(default_factory=dict)


def emit_steps(k: Kernel, timeline: Timeline, program: Program, plans: dict[int, OpPlan[object]], reference: bool,
               replay: bool = True, always_live: bool = False) -> Emitted:
    """Lower each operation in order into `timeline` (after the declared tensors).
    `reference`: the reference's value names. `replay`: lower each signature once
    (`tileplan.lowering.replay`); without it every operation is lowered afresh."""
    declared_names = {t.name for t in program.tensors}
    declared = len(timeline.values)
    last = last_readers(program, always_live)
    out = Emitted(binding={t.name: (i,) for i, t in enumerate(program.tensors)})
    binding, values = out.binding, timeline.values
    memo: dict[Hashable, Compiled] = {}
    spans: dict[int, list[int]] = {}
    for op, count, block in _schedule(program):
        if op.index not in plans:
            break
        if block is None:
            ins = [binding[name] for name in op.inputs]
        else:
            ins = [tuple(v for m in _members(name, block, declared_names) for v in binding[m]) for name in op.inputs]
            for name, family in zip(op.inputs, ins):
                out.later_members.update(family[1:])
                if reads_every_iteration(name, block, declared_names):
                    out.later_members.update(family)
        members = [values[v] for ids in ins for v in ids]
        dies = tuple([last.get(name) == op.index for name in op.inputs])
        plan = plans[op.index]
        key = signature(op, plan, ins, members, dies, declared) if replay else None
        hashable, compiled = lookup(memo, key) if replay else (False, None)
        if compiled is None:
            try:
                fragment = REGISTRY[op.kind].lower(k, op, plan, operands(ins, values, declared), dies)
            except TileplanError as e:
                out.failed = (op.index, str(e))
                break
            compiled = compile_fragment(fragment, len(members), k)
            if hashable:
                memo[key] = compiled
        steps_before = len(timeline.steps)
        binding[op.output] = (timeline.emit(compiled, op, members, count, reference),)
        out.operations.append(OperationInfo(op.index, op.origin, op.name, op.kind, count))
        if block is not None:
            span = spans.setdefault(id(block), [len(timeline.steps) - 1, len(timeline.steps) - 1])
            span[0] = min(span[0], steps_before)
            span[1] = len(timeline.steps) - 1
    out.blocks.extend((a, b) for a, b in spans.values() if b >= a)
    return out


def lower_program(program: Program, machine: Machine, policy: Policy, options: Options, replay: bool = True
                  ) -> Lowering:
    check_program(program)
    k = Kernel(machine, options, policy.kernels)
    plans, over_cap, failed = plan_operations(k, program)
    timeline = Timeline()
    place_tensors(k, timeline, program, plans, policy)
    emitted = emit_steps(k, timeline, program, plans, policy.names is ValueNames.REFERENCE, replay,
                         policy.always_live)
    failed = emitted.failed or failed
    outputs = tuple(emitted.binding[name][0] for name in program.outputs if name in emitted.binding)
    return Lowering(tuple(timeline.values), tuple(timeline.steps), tuple(emitted.operations), outputs,
                    len(program.tensors), failed, tuple(sorted(emitted.blocks)), frozenset(emitted.later_members),
                    tuple(sorted(over_cap)), timeline.shards, timeline.unsized)
