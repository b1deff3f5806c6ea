"""Lower a whole program: plan layouts, place the declared tensors, emit the steps.

The program is checked first (`tileplan.ops.check_program`); each operation is planned
and lowered by its operator's registry entry (`tileplan.ops.REGISTRY`). Three passes,
data in and data out:
1. `plan_operations`: each operation's plan, activations' layouts flowing forward.
2. `place_tensors`: the policy picks each declared tensor's resting layout from the
   plans of the operations that read it; values 0..n-1 are the declared tensors.
3. `emit_steps`: each operation's lowering, in order. An operation with no legal
   partition stops the walk; the lowering records which and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Mapping

from tileplan.errors import TileplanError
from tileplan.lowering.core import (
    LoweringContext, OperationInfo, Options, StepDraft, declared_tensor_value,
)
from tileplan.lowering.gemm import PlanningError
from tileplan.lowering.policy import Policy, Reader
from tileplan.lowering.replay import Recording, record, signature
from tileplan.model.ir import Operation, Program, RepeatBlock, family_member
from tileplan.model.layout import Layout
from tileplan.model.machine import Machine
from tileplan.model.tiling import Shards
from tileplan.model.timeline import Value
from tileplan.ops import REGISTRY, InputInfo, OpPlan, check_program


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
    #: members 1..n-1 of the parameter families read in repeat blocks: the
    #: iterations after the first still need them when a block step has read them
    later_members: frozenset[int] = frozenset()
    #: products planned over the temporary-memory cap: (operation, name, bytes per tile)
    over_cap: tuple[tuple[int, str, int], ...] = ()
    #: each value's shards, or why its layout cannot hold it
    shards: Mapping[int, Shards] = field(default_factory=dict)
    unsized: Mapping[int, str] = field(default_factory=dict)


def _schedule(program: Program) -> list[tuple[Operation, int, RepeatBlock | None]]:
    out: list[tuple[Operation, int, RepeatBlock | None]] = []
    for item in program.items:
        if isinstance(item, RepeatBlock):
            out.extend((op, item.count, item) for op in item.body)
        else:
            out.append((item, 1, None))
    return out


def _members(name: str, block: RepeatBlock | None, declared: set[str]) -> tuple[str, ...]:
    """The tensors a name stands for: a family's members inside a block, else itself."""
    if block is not None and "{i}" in name and family_member(name, block.first) in declared:
        return block.members(name)
    return (name,)


def plan_operations(ctx: LoweringContext, program: Program) -> tuple[dict[int, OpPlan], tuple[int, str] | None]:
    declared = {t.name: t for t in program.tensors}
    layouts: dict[str, Layout] = {}
    shapes = {t.name: (t.shape, t.precision) for t in program.tensors}
    plans: dict[int, OpPlan] = {}
    #: each planned signature's plan and the temporary bytes it noted over the cap
    memo: dict[Hashable, tuple[OpPlan, tuple[int, ...]]] = {}
    names = set(declared)
    for op, _, block in _schedule(program):
        raw = []
        for name in op.inputs:
            first = name if block is None else _members(name, block, names)[0]
            shape, precision = shapes[first]
            raw.append((shape, precision, layouts.get(name), first in declared))
        key = (op.kind, op.attrs, op.output_shape, op.output_precision, op.module, tuple(raw))
        known = memo.get(key)
        if known is not None:
            plan, temporaries = known
            for t in temporaries:
                ctx.note_temporary(op, t)
        else:
            before = len(ctx.over_cap)
            try:
                plan = REGISTRY[op.kind].plan(ctx, op, [InputInfo(*r) for r in raw])
            except PlanningError as e:
                return plans, (op.index, str(e))
            memo[key] = (plan, tuple(t for _, _, t in ctx.over_cap[before:]))
        plans[op.index] = plan
        layouts[op.output] = plan.output
        shapes[op.output] = (op.output_shape, op.output_precision)
    return plans, None


def place_tensors(ctx: LoweringContext, program: Program, plans: dict[int, OpPlan], policy: Policy) -> None:
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
        layout, alignment = policy.resting(t, readers[t.name], ctx.machine.tile_count, ctx.prefix)
        declared_tensor_value(ctx, t, layout, alignment)
    ctx.declared_count = len(ctx.values)


def last_readers(program: Program) -> dict[str, int]:
    """For each name, the index of the last operation reading it (outputs: never die).
    A view may share its input's storage, so the input lives as long as the view is
    read: the last read of a view counts as a read of its input (transitively), and
    a name's entry is that of the whole chain of views it belongs to."""
    last: dict[str, int] = {}
    schedule = _schedule(program)
    for op, _, _ in schedule:
        for name in op.inputs:
            last[name] = op.index
    for name in program.outputs:
        last[name] = 1 << 62
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


def emit_steps(ctx: LoweringContext, program: Program, plans: dict[int, OpPlan], blocks: list[tuple[int, int]],
               replay: bool = True) -> tuple[list[OperationInfo], tuple[int, str] | None]:
    """Lower each operation in order; record each repeat block's step span in `blocks`.
    `replay`: lower each signature once and replay it (`tileplan.lowering.replay`)."""
    declared = {t.name for t in program.tensors}
    last = last_readers(program)
    infos: list[OperationInfo] = []
    spans: dict[int, list[int]] = {}
    try:
        return _emit(ctx, program, plans, declared, last, infos, spans, replay)
    finally:
        blocks.extend((a, b) for a, b in spans.values() if b >= a)


def _emit(ctx: LoweringContext, program: Program, plans: dict[int, OpPlan], declared: set[str],
          last: dict[str, int], infos: list[OperationInfo], spans: dict[int, list[int]], replay: bool
          ) -> tuple[list[OperationInfo], tuple[int, str] | None]:
    recordings: dict[Hashable, Recording | None] = {}
    binding = ctx.binding
    for op, count, block in _schedule(program):
        if op.index not in plans:
            return infos, None
        if block is None:
            ins = [binding[name] for name in op.inputs]
        else:
            ins = [tuple(v for m in _members(name, block, declared) for v in binding[m]) for name in op.inputs]
            for members in ins:
                ctx.later_members.update(members[1:])
        dies = [last.get(name) == op.index for name in op.inputs]
        key = signature(ctx, op, plans[op.index], ins, count, dies) if replay else None
        recording = recordings.get(key) if key is not None else None
        values_before, steps_before, over_before = len(ctx.values), len(ctx.steps), len(ctx.over_cap)
        if recording is not None:
            out = recording.replay(ctx, op, ins, count)
        else:
            try:
                out = REGISTRY[op.kind].lower(ctx, op, plans[op.index], ins, count, dies)
            except TileplanError as e:  # nothing of a failed operation stays
                for vid in range(values_before, len(ctx.values)):
                    ctx.value_shards.pop(vid, None)
                    ctx.unsized.pop(vid, None)
                del ctx.values[values_before:], ctx.steps[steps_before:]
                return infos, (op.index, str(e))
            if key is not None and key not in recordings:  # None: seen, and not replayable
                recordings[key] = record(ctx, op, ins, values_before, steps_before, over_before, out)
        ctx.binding[op.output] = (out,)
        infos.append(OperationInfo(op.index, op.origin, op.name, op.kind, count))
        if block is not None:
            span = spans.setdefault(id(block), [len(ctx.steps) - 1, len(ctx.steps) - 1])
            span[0] = min(span[0], steps_before)
            span[1] = len(ctx.steps) - 1
    return infos, None


def lower_program(program: Program, machine: Machine, policy: Policy, options: Options, replay: bool = True
                  ) -> Lowering:
    check_program(program)
    ctx = LoweringContext(machine, policy, options, reference_names=policy.name == "reference")
    plans, failed = plan_operations(ctx, program)
    place_tensors(ctx, program, plans, policy)
    blocks: list[tuple[int, int]] = []
    infos, emit_failed = emit_steps(ctx, program, plans, blocks, replay)
    failed = emit_failed or failed
    outputs = tuple(ctx.binding[name][0] for name in program.outputs if name in ctx.binding)
    return Lowering(tuple(ctx.values), tuple(ctx.steps), tuple(infos), outputs, ctx.declared_count, failed,
                    tuple(sorted(blocks)), frozenset(ctx.later_members), tuple(sorted(ctx.over_cap)),
                    ctx.value_shards, ctx.unsized)
