"""A program's operations in execution order, its names numbered, and when each dies.

The lowering's passes each walk every operation; a million-operation program would
look each input up by name in a million-entry dict in every pass. `Schedule` numbers
the names once (`slot`: the declared tensors first, in declaration order, then each
operation's output as it runs; a name inside a repeat block as it is written, a
parameter family's `...{i}...` too), and gives each operation's inputs as slots, so
the passes index lists and arrays instead. Inside a repeat block an input that names
a parameter family stands for its members (`members`); the operation's plan reads the
first (`plan_inputs`).

`last_reads` is when each name is read for the last time, computed on the slots with
numpy (`last_readers` is the same by name).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tileplan.errors import ModelError
from tileplan.model.ir import ITERATION, Operation, Program, RepeatBlock, family_member
from tileplan.ops import REGISTRY

#: the last reader of a value that never dies (a program output, an always-live parameter)
NEVER = 1 << 62


@dataclass(frozen=True, slots=True, eq=False)
class Schedule:
    """Each operation in execution order (`ops[i].index == i`), with its execution
    count, its repeat block (None outside one), its inputs and output as slots, and the
    slots its plan reads (a family's first member for a family). Inputs of operation i
    are `inputs[starts[i]:starts[i + 1]]`."""

    program: Program
    ops: list[Operation]
    counts: list[int]
    blocks: list[RepeatBlock | None]
    #: every name's slot; the declared tensors are slots 0..len(tensors) - 1
    slot: dict[str, int]
    inputs: list[int]
    plan_inputs: list[int]
    starts: list[int]
    outputs: list[int]
    declared_names: frozenset[str]

    @classmethod
    def of(cls, program: Program) -> "Schedule":
        slot: dict[str, int] = {t.name: k for k, t in enumerate(program.tensors)}
        declared = frozenset(slot)
        ops: list[Operation] = []
        counts: list[int] = []
        blocks: list[RepeatBlock | None] = []
        inputs: list[int] = []
        plan_inputs: list[int] = []
        starts = [0]
        outputs: list[int] = []
        for item in program.items:
            if not isinstance(item, RepeatBlock):  # an operation: its plan reads its inputs
                for name in item.inputs:
                    x = slot.get(name)
                    if x is None:
                        x = slot[name] = len(slot)
                    inputs.append(x)
                    plan_inputs.append(x)
                starts.append(len(inputs))
                x = slot.get(item.output)
                if x is None:
                    x = slot[item.output] = len(slot)
                outputs.append(x)
                ops.append(item)
                counts.append(1)
                blocks.append(None)
                continue
            for op in item.body:
                for name in op.inputs:
                    inputs.append(slot.setdefault(name, len(slot)))
                    plan_inputs.append(slot.setdefault(members(name, item, declared)[0], len(slot)))
                starts.append(len(inputs))
                outputs.append(slot.setdefault(op.output, len(slot)))
                ops.append(op)
                counts.append(item.count)
                blocks.append(item)
        return cls(program, ops, counts, blocks, slot, inputs, plan_inputs, starts, outputs, declared)

    def members(self, i: int, position: int) -> tuple[str, ...]:
        """The tensors input `position` of operation i stands for."""
        op, block = self.ops[i], self.blocks[i]
        name = op.inputs[position]
        return (name,) if block is None else members(name, block, self.declared_names)


def members(name: str, block: RepeatBlock, declared: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The tensors a name stands for: a family's members inside a block, else itself."""
    if ITERATION in name and family_member(name, block.first) in declared:
        return block.members(name)
    return (name,)


def reads_every_iteration(name: str, block: RepeatBlock, declared: frozenset[str] | set[str]) -> bool:
    """Whether every iteration of `block` reads tensor `name` as it is: made before the
    block (a rotary table, a mask, a shared parameter), not a family (iteration i reads
    member i) and not the carried tensor (only the first iteration reads it; later ones
    the iteration before's output)."""
    if ITERATION in name and family_member(name, block.first) in declared:
        return False
    return name != block.carried_in and all(name != o.output for o in block.body)


def last_reads(s: Schedule, always_live: bool = False) -> np.ndarray:
    """For each slot, the index of the last operation reading it, -1 if none does
    (outputs, and with `always_live` the held tensors (`Role.held`: weights, buffers,
    training state) and the families of them a repeat block reads: `NEVER`). Inside a
    repeat block a tensor every iteration reads lasts to the block's last operation. A
    view may share its input's storage, so the input lives as long as the view is
    read: a slot's entry is the latest of the whole tree of views it belongs to."""
    slots = len(s.slot)
    reads = np.array(s.inputs, dtype=np.int64)
    starts = np.array(s.starts, dtype=np.int64)
    reader = np.repeat(np.arange(len(s.ops), dtype=np.int64), np.diff(starts))
    last = np.full(slots, -1, dtype=np.int64)
    np.maximum.at(last, reads, reader)
    if always_live:
        held = np.zeros(slots, dtype=bool)
        held[[k for k, t in enumerate(s.program.tensors) if t.role.held]] = True
        never = np.zeros(slots, dtype=bool)
        never[reads[held[np.array(s.plan_inputs, dtype=np.int64)]]] = True
    else:
        never = np.zeros(slots, dtype=bool)
    for i, block in enumerate(s.blocks):  # the last read of a name every iteration reads: to the block's end
        if block is None:
            continue
        for position, name in enumerate(s.ops[i].inputs):
            at = s.inputs[s.starts[i] + position]
            if last[at] == i and not never[at] and reads_every_iteration(name, block, s.declared_names):
                last[at] = max(i, block.body[-1].index)
    last[never] = NEVER
    last[[s.slot[name] for name in s.program.outputs if name in s.slot]] = NEVER
    # views: each slot in the tree of views of one root takes the tree's latest read
    source = np.arange(slots, dtype=np.int64)
    views = [i for i, op in enumerate(s.ops) if REGISTRY[op.kind].view and op.inputs]
    if views:
        source[[s.outputs[i] for i in views]] = [s.inputs[s.starts[i]] for i in views]
        root = source
        for _ in range(slots.bit_length() + 1):  # a chain of views halves each round
            nxt = root[root]
            if np.array_equal(nxt, root):
                break
            root = nxt
        else:
            raise ModelError("a view reads its own output through other views")
        read = last >= 0
        tree = np.full(slots, -1, dtype=np.int64)
        np.maximum.at(tree, root[read], last[read])
        last = np.where(read, tree[root], -1)
    return last


def last_readers(program: Program, always_live: bool = False) -> dict[str, int]:
    """`last_reads` by name, for the names that are read (or are outputs)."""
    s = Schedule.of(program)
    last = last_reads(s, always_live).tolist()
    return {name: last[k] for name, k in s.slot.items() if last[k] >= 0}
