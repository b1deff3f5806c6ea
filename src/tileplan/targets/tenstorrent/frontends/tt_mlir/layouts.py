"""Level 2, pass 1: tt-mlir's GreedyMemoryLayoutPropagation, greedily.

tt-mlir (lib/Dialect/TTNN/Analysis/MemoryLayoutPropagation.cpp `processOp`; the design in
tenstorrent/tt-mlir docs/src/specs/ttnn-optimizer.md section 5.6.1) walks the operations in schedule order
and for each one:

1. takes each operand in its producer's chosen layout, plus an L1-interleaved reshard of
   an L1-sharded operand (`addL1InterleavedFallbacks`);
2. tries the null output hint (the operation decides its output from its inputs: ttnn's
   `memory_config` default, the first input's memory config, DRAM for a matmul), and,
   when that is not sharded, the sharded layouts of the legal-layout pool
   (OpRuleBook.cpp `getOutputHints`); the rule books of lib/Dialect/TTNN/Analysis/OpRules/
   narrow this per operation: slice, embedding, repeat, concatenate-heads and a reshape
   or permute that is not a view take the non-sharded legal layouts (L1 and DRAM
   interleaved) instead (`nonShardedOutputHints`), a view reshape and SDPA only the null
   hint (`nullHintOnly`);
3. validates each combination with the op model (`getOpConstraints`, here the operation's
   rule): the rule accepts it and its peak L1 (circular buffers plus the L1 buffers it
   allocates) fits the usable L1 per core (OpConstraintValidation.cpp: `overallPeakL1Usage
   + additionalL1Usage > getUsableL1PerCore` fails);
4. keeps the best by `LayoutScore` (OpModelStrategy.cpp `LayoutScore::operator>`: L1 over
   DRAM, sharded over interleaved, fewer DRAM input bytes, no reshard, more cores, less
   L1; ties to more sharded inputs);
5. with no valid candidate, falls back to a DRAM-interleaved output
   (`getDRAMInterleavedFallback`), its sharded operands moved to DRAM interleaved.

A reshard is a `ttnn.to_memory_config` before the consumer. The graph's results go back
to DRAM interleaved (`insertReturnDramSpills`). Constants (arguments, const-eval results)
stay in DRAM: tileplan does not place const-eval results in L1, so
`l1_const_eval_usage` is 0 (budget.py).

Simplifications, stated: the beam is one candidate wide (tt-mlir's default beam width is
8, with a backward pass resolving forks); reshard candidates beyond the L1-interleaved one
(`addReshardCandidates`) are not explored; the legal sharded layouts are, per memory
layout, the one over the most cores the tensor's tiles allow (`sharded_hints`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.budget import usable_l1
from tileplan.targets.tenstorrent.frontends.tt_mlir.configs import pin_matmul_config
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Node, TtnnGraph, Value
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED,
    L1_INTERLEAVED,
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, OpTarget, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import ReshapeAttrs, is_reshape_view
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.program import Tensor
from tileplan.targets.tenstorrent.tiles import TILE, Layout, padded_height_width
from tileplan.model.role import Role

#: operations whose output defaults to DRAM (ttnn.matmul / ttnn.linear: `memory_config`
#: "Defaults to None, which will result in using ttnn.DRAM_MEMORY_CONFIG")
DRAM_DEFAULT = frozenset({OpKind.MATMUL, OpKind.LINEAR})
#: operations taking the non-sharded legal layouts as their hints (DataMovementRules.cpp
#: SliceRuleBook, ReshapeRuleBook for non-views; EmbeddingRules.cpp; TransformerRules.cpp
#: ConcatenateHeadsRuleBook)
NON_SHARDED = frozenset({OpKind.SLICE, OpKind.EMBEDDING, OpKind.REPEAT, OpKind.NLP_CONCAT_HEADS, OpKind.RESHAPE,
                         OpKind.PERMUTE, OpKind.TRANSPOSE})
#: operations taking the null hint only (TransformerRules.cpp SDPARuleBook)
NULL_ONLY = frozenset({OpKind.SDPA, OpKind.SDPA_DECODE})
#: the shard layouts of the legal-layout pool
SHARDED = (MemoryLayout.HEIGHT_SHARDED, MemoryLayout.WIDTH_SHARDED, MemoryLayout.BLOCK_SHARDED)


@dataclass(frozen=True, slots=True)
class Score:
    """tt-mlir's `LayoutScore` (see the module docstring), ordered by `key`."""

    l1: bool
    sharded: bool
    input_dram_bytes: int
    reshard: bool
    cores: int
    l1_usage: int
    sharded_inputs: int

    @property
    def key(self) -> tuple[int, int, int, int, int, int, int]:
        return (self.l1, self.sharded, -self.input_dram_bytes, not self.reshard, self.cores, -self.l1_usage,
                self.sharded_inputs)


@dataclass(frozen=True, slots=True)
class Choice:
    """A validated candidate: the output asked for, the operands' memory (None: as
    produced), its plan and score."""

    out: OutputRequest
    inputs: tuple[MemoryConfig | None, ...]
    plan: OpPlan
    score: Score


def op_l1_peak(plan: OpPlan) -> int:
    """The peak L1 per core the op model reports: the largest program's circular buffers
    plus the L1 buffers the operation allocates (outputs and intermediates)."""
    l1 = sum(b.bytes_per_bank for b in plan.buffers if b.buffer_type is BufferType.L1)
    return plan.cb_peak + l1


def output_l1(plan: OpPlan) -> int:
    """The per-core L1 of the operation's L1 outputs."""
    return sum(plan.output_bytes_per_core(i) for i in range(len(plan.outputs)))


def sharded_hints(value: Value, target: OpTarget, layout: MemoryLayout) -> ShardSpec | None:
    """The shard of `layout` over the most cores for a TILE value ([H, W] padded to
    tiles): height shards of ceil(Ht / n) tile rows on n = min(cores, Ht) cores, width
    shards alike, block shards on min(grid_y, Ht) x min(grid_x, Wt) cores."""
    if value.layout is not Layout.TILE:
        return None
    h, w = padded_height_width(value.shape, Layout.TILE)
    ht, wt = h // TILE, w // TILE
    gx, gy = target.grid
    cores = gx * gy
    if layout is MemoryLayout.HEIGHT_SHARDED:
        per = math.ceil(ht / min(cores, ht))
        return ShardSpec(CoreRangeSet.from_count(math.ceil(ht / per), gx, gy), (per * TILE, w))
    if layout is MemoryLayout.WIDTH_SHARDED:
        per = math.ceil(wt / min(cores, wt))
        return ShardSpec(CoreRangeSet.from_count(math.ceil(wt / per), gx, gy), (h, per * TILE))
    ph, pw = math.ceil(ht / min(gy, ht)), math.ceil(wt / min(gx, wt))
    return ShardSpec(CoreRange.grid(math.ceil(wt / pw), math.ceil(ht / ph)), (ph * TILE, pw * TILE))


def _cores(spec: TensorSpec, target: OpTarget) -> int:
    """tt-mlir's grid volume of a layout: the shard grid, the worker grid for L1
    interleaved, 1 for DRAM."""
    if spec.memory.shard is not None:
        return spec.memory.shard.num_cores
    return target.num_cores if spec.memory.buffer_type is BufferType.L1 else 1


class Propagation:
    """The pass's state (mutable; `propagate` owns it)."""

    def __init__(self, graph: TtnnGraph, options: TtMlirOptions, device: Device) -> None:
        self.graph = graph
        self.target = op_target(device)
        self.budget = usable_l1(device, options)
        self.tensors: list[Tensor] = list(graph.tensors)
        self.values: list[Value] = list(graph.values)
        self.specs: dict[int, TensorSpec] = {t: graph.tensors[t].spec for t in graph.uploads}  # type: ignore[misc]
        self.nodes: list[Node] = []

    def validate(self, node: Node, specs: tuple[TensorSpec, ...], out: OutputRequest) -> OpPlan | None:
        try:
            plan = plan_op(node.kind, OpRequest(specs, out, self.target, node.compute), node.attrs)
        except (InputError, AssertionError, ZeroDivisionError, ValueError):
            return None
        return plan if op_l1_peak(plan) <= self.budget else None

    def hints(self, node: Node, specs: tuple[TensorSpec, ...]) -> Iterator[OutputRequest]:
        """The operation's output hints, primary first (see the module docstring)."""
        dtype = node.out.dtype
        null = OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED, None, dtype)
        if node.kind not in DRAM_DEFAULT and specs:
            first = specs[0].memory
            null = OutputRequest(first.buffer_type, first.layout, None, dtype)
        view = node.kind is OpKind.RESHAPE and isinstance(node.attrs, ReshapeAttrs) and specs \
            and is_reshape_view(specs[0], node.attrs.shape)
        if node.kind in NULL_ONLY or view:
            yield null
            return
        if node.kind in NON_SHARDED:
            yield OutputRequest(BufferType.L1, MemoryLayout.INTERLEAVED, None, dtype)
            yield OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED, None, dtype)
            return
        yield null
        value = self.values[node.outputs[0]]
        for layout in SHARDED:
            shard = sharded_hints(value, self.target, layout)
            if shard is not None:
                yield OutputRequest(BufferType.L1, layout, shard, dtype)

    def input_options(self, specs: tuple[TensorSpec, ...]) -> list[tuple[MemoryConfig | None, ...]]:
        """The operands as produced, and with their L1-sharded ones in L1 interleaved."""
        base: tuple[MemoryConfig | None, ...] = tuple(None for _ in specs)
        out = [base]
        if any(s.memory.shard is not None for s in specs):
            out.append(tuple(L1_INTERLEAVED if s.memory.shard is not None else None for s in specs))
        return out

    def choose(self, node: Node) -> Choice | None:
        specs = tuple(self.specs[t] for t in node.inputs)
        best: Choice | None = None
        for moves in self.input_options(specs):
            moved = tuple(replace(s, memory=m) if m is not None else s for s, m in zip(specs, moves))
            reshard = any(m is not None for m in moves)
            dram_bytes = sum(s.pages().count * s.pages().page_bytes for s in moved
                             if s.memory.buffer_type is BufferType.DRAM)
            sharded_in = sum(1 for s in moved if s.memory.shard is not None)
            got_sharded = False
            primary = node.kind in NON_SHARDED
            for k, out in enumerate(self.hints(node, moved)):
                if k > 0 and got_sharded and not primary:
                    break
                plan = self.validate(node, moved, out)
                if plan is None:
                    continue
                spec = plan.outputs[0]
                sharded = spec.memory.shard is not None
                got_sharded = got_sharded or (k == 0 and sharded)
                score = Score(spec.memory.buffer_type is BufferType.L1, sharded, dram_bytes, reshard,
                              _cores(spec, self.target), output_l1(plan), sharded_in)
                if best is None or score.key > best.score.key:
                    best = Choice(out, moves, plan, score)
        return best

    def reshard(self, t: int, memory: MemoryConfig, consumer: Node) -> int:
        """A `ttnn.to_memory_config` of tensor `t` into `memory` before `consumer`."""
        src = t
        spec = self.specs[src]
        new = len(self.tensors)
        name = f"{consumer.name}.in_{self.tensors[t].name.rsplit('.', 1)[-1]}_to_{memory.text().replace(':', '_')}"
        self.tensors.append(Tensor(new, name, Role.ACTIVATION, None, consumer.module))
        self.values.append(self.values[t])
        out = OutputRequest.of(memory, spec.dtype)
        plan = plan_op(OpKind.TO_MEMORY_CONFIG, OpRequest((spec,), out, self.target, None))
        self.specs[new] = plan.outputs[0]
        self.nodes.append(Node(OpKind.TO_MEMORY_CONFIG, name, (src,), (new,), out, None, None, consumer.module,
                               consumer.layer, consumer.source))
        return new

    def run(self, node: Node) -> None:
        if not node.outputs:
            # an operation in place (a KV cache's fill_cache / update_cache): no output to
            # lay out; its operands as produced when it validates, else its sharded ones
            # moved to DRAM (getDRAMInterleavedFallback)
            specs = tuple(self.specs[t] for t in node.inputs)
            fits = self.validate(node, specs, node.out) is not None
            moves = tuple(DRAM_INTERLEAVED if not fits and s.memory.shard is not None else None for s in specs)
            inputs = tuple(self.reshard(t, m, node) if m is not None else t for t, m in zip(node.inputs, moves))
            self.nodes.append(replace(node, inputs=inputs))
            return
        choice = self.choose(node)
        if choice is None:
            # getDRAMInterleavedFallback: the output, and a sharded operand, in DRAM
            moves = tuple(DRAM_INTERLEAVED if self.specs[t].memory.shard is not None else None
                          for t in node.inputs)
            out = OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED, None, node.out.dtype)
        else:
            moves, out = choice.inputs, choice.out
        inputs = tuple(self.reshard(t, m, node) if m is not None else t
                       for t, m in zip(node.inputs, moves))
        specs = tuple(self.specs[t] for t in inputs)
        placed = pin_matmul_config(replace(node, inputs=inputs, out=out), specs, out, self.target)
        try:
            plan = plan_op(placed.kind, OpRequest(specs, out, self.target, placed.compute), placed.attrs)
            for t, spec in zip(node.outputs, plan.outputs):
                self.specs[t] = spec
        except InputError:
            for t in node.outputs:  # the planner will say why the operation cannot run
                v = self.values[t]
                self.specs[t] = TensorSpec(v.shape, v.dtype, v.layout, DRAM_INTERLEAVED)
        self.nodes.append(placed)

    def finish(self) -> TtnnGraph:
        outputs = []
        for t in self.graph.outputs:
            held = t
            spec = self.specs.get(held)
            if spec is not None and spec.memory.buffer_type is not BufferType.DRAM:
                producer = next(n for n in self.nodes if held in n.outputs)
                held = self.reshard(held, DRAM_INTERLEAVED, replace(producer, name=f"{producer.name}.return"))
            outputs.append(held)
        return TtnnGraph(self.graph.name, tuple(self.tensors), tuple(self.values), self.graph.uploads,
                         tuple(self.nodes), tuple(outputs))


def propagate(graph: TtnnGraph, options: TtMlirOptions, device: Device) -> TtnnGraph:
    """Every operation's layout chosen (see the module docstring)."""
    state = Propagation(graph, options, device)
    for node in graph.nodes:
        state.run(node)
    return state.finish()
