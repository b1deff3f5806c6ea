"""Level 2, pass 1: tt-mlir's GreedyMemoryLayoutPropagation, greedily.

tt-mlir (lib/Dialect/TTNN/Analysis/MemoryLayoutPropagation.cpp `processOp`; the design in
tenstorrent/tt-mlir docs/src/specs/ttnn-optimizer.md section 5.6.1) walks the operations in schedule order
and for each one:

1. takes each operand in its producer's chosen layout, plus an L1-interleaved reshard of
   an L1-sharded operand (`addL1InterleavedFallbacks`);
2. tries the null output hint (the operation decides its output from its inputs: ttnn's
   `memory_config` default, the first input's memory config, DRAM for a matmul), and,
   when that is not sharded, the sharded layouts of the legal-layout pool
   (OpRuleBook.cpp `getOutputHints`; the pool: `legal_sharded_layouts`); the rule books
   of lib/Dialect/TTNN/Analysis/OpRules/ narrow this per operation: slice, embedding,
   repeat, concatenate-heads and a reshape or permute that is not a view take the
   non-sharded legal layouts (L1 and DRAM interleaved) instead (`nonShardedOutputHints`),
   a view reshape and SDPA only the null hint (`nullHintOnly`);
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

A matmul or linear on a build where tt-mlir writes its program configs
(`matmul_program_config`, from tt-mlir #6457) takes MatmulRuleBook's hints instead of
the sharded legal layouts: DRAM interleaved, then per sharded memory layout each distinct
program config its legal layouts give (`matmul_hints`), the physical output the
operation's (tt-metal's `create_output_tensors` for that config).

Simplifications, stated: the beam is one candidate wide (tt-mlir's default beam width is
8, with a backward pass resolving forks); reshard candidates beyond the L1-interleaved one
(`addReshardCandidates`) are not explored; among candidates of equal score the first
tried wins, and tileplan tries them in a fixed order (block, height, width; larger grids
first) where tt-mlir's is `std::sort`'s and an `unordered_map`'s, unspecified.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.budget import usable_l1
from tileplan.targets.tenstorrent.frontends.tt_mlir.configs import pin_matmul_config, tt_mlir_matmul_config
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
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul_config import MatmulProgramConfig, MatmulShapes
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.program import Tensor
from tileplan.targets.tenstorrent.tiles import TILE, Layout, padded_height_width
from tileplan.targets.tenstorrent.versions import MatmulConfigSource, Software
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
    #: the attributes it ran with (None: the node's own): a matmul's tt-mlir program config
    attrs: MatmulAttrs | None = None


def op_l1_peak(plan: OpPlan) -> int:
    """The peak L1 per core the op model reports: the largest program's circular buffers
    plus the L1 buffers the operation allocates (outputs and intermediates)."""
    l1 = sum(b.bytes_per_bank for b in plan.buffers if b.buffer_type is BufferType.L1)
    return plan.cb_peak + l1


def output_l1(plan: OpPlan) -> int:
    """The per-core L1 of the operation's L1 outputs."""
    return sum(plan.output_bytes_per_core(i) for i in range(len(plan.outputs)))


@dataclass(frozen=True, slots=True)
class LegalLayout:
    """One sharded layout of tt-mlir's legal-layout pool: its memory layout, its grid
    (rows, columns) as tt-mlir writes it ({h, w} block, {h, 1} height, {1, w} width) and
    the shard it gives."""

    layout: MemoryLayout
    grid: tuple[int, int]
    shard: ShardSpec

    @property
    def volume(self) -> int:
        return self.grid[0] * self.grid[1]


@lru_cache(maxsize=1024)
def legal_sharded_layouts(value: Value, target: OpTarget, software: Software) -> tuple[LegalLayout, ...]:
    """tt-mlir's legal sharded layouts of a TILE value ([H, W] padded to tiles: Ht x Wt
    tiles) on a worker grid of C columns and R rows (N = R C cores), largest first:

    - generated as tenstorrent/tt-mlir lib/Dialect/TTNN/Analysis/
      LegalTensorLayoutAnalysis.cpp `generateAllPossibleLayouts` does: block grids
      {h, w} for h in 1..R, w in 1..C, then height grids {h, 1} and width grids {1, w}
      for 1..N; the shard is ceil(Ht / rows) x ceil(Wt / columns) tiles, and within each
      memory layout a grid whose shard an earlier (smaller) grid already gave is dropped
      (`checkIfShardShapeExists`);
    - kept when legal (`tensorShapeCompatibleWithShard`): at least as many tiles as the
      grid in each dimension, and the shard's cores inside the worker rectangle
      `isLayoutLegalForTensorShape` checks (the build's `legal_layout_grid`: the device's,
      or, from tt-mlir #3560 to #8234, the transposed one, CoreCoord{rows, columns});
      a block grid is a rectangle of w columns and h rows from core (0, 0), height and
      width grids fill rows of C cores (`createSingleDeviceVirtualToPhysicalAffineMaps`);
    - sorted by grid volume, largest first (`std::sort`; tileplan keeps the generation
      order among equal volumes), the first `legal_layouts_cap` kept
      (LegalOpLayoutAnalysis.cpp `fillTTNNLayoutAttrs`, maxShardedConfigs = the
      pipeline's maxLegalLayouts with row-major layouts off).

    Memoized: a model's layers ask it of the same values again and again (a pure function
    of frozen values; the result is a tuple).

    Worked example: [576, 23040] bf16 (18 x 720 tiles) on n150's 8 x 9 grid with the
    transposed check and a cap of 8 (tt-mlir of April 2026): width 60 (12 tiles a core),
    56, 52, 48 (15), block 6 x 8 (3 x 90), width 45, 43, block 6 x 7."""
    if value.layout is not Layout.TILE:
        return ()
    h, w = padded_height_width(value.shape, Layout.TILE)
    ht, wt = h // TILE, w // TILE
    columns, rows = target.grid
    cores = columns * rows
    grid_rule = software.legal_layout_grid
    found: list[LegalLayout] = []

    def legal(grid: tuple[int, int], box: tuple[int, int]) -> bool:
        return ht >= grid[0] and wt >= grid[1] and grid_rule.holds(box[0], box[1], target.grid)

    seen: set[tuple[int, int]] = set()
    for gh in range(1, rows + 1):
        for gw in range(1, columns + 1):
            shard = (math.ceil(ht / gh), math.ceil(wt / gw))
            if shard in seen:
                continue
            seen.add(shard)
            if legal((gh, gw), (gw, gh)):
                found.append(LegalLayout(MemoryLayout.BLOCK_SHARDED, (gh, gw),
                                         ShardSpec(CoreRange.grid(gw, gh), (shard[0] * TILE, shard[1] * TILE))))
    for layout in (MemoryLayout.HEIGHT_SHARDED, MemoryLayout.WIDTH_SHARDED):
        seen = set()
        for n in range(1, cores + 1):
            grid = (n, 1) if layout is MemoryLayout.HEIGHT_SHARDED else (1, n)
            shard = (math.ceil(ht / grid[0]), math.ceil(wt / grid[1]))
            if shard in seen:
                continue
            seen.add(shard)
            box = (min(n, columns), math.ceil(n / columns))
            if legal(grid, box):
                found.append(LegalLayout(layout, grid, ShardSpec(CoreRangeSet.from_count(n, columns, rows),
                                                                  (shard[0] * TILE, shard[1] * TILE))))
    found.sort(key=lambda x: -x.volume)
    return tuple(found[:software.legal_layouts_cap])


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
        self.software = device.software
        self.budget = usable_l1(device, options)
        self.tensors: list[Tensor] = list(graph.tensors)
        self.values: list[Value] = list(graph.values)
        self.specs: dict[int, TensorSpec] = {t: graph.tensors[t].spec for t in graph.uploads}  # type: ignore[misc]
        self.nodes: list[Node] = []

    def validate(self, node: Node, specs: tuple[TensorSpec, ...], out: OutputRequest,
                 attrs: MatmulAttrs | None = None) -> OpPlan | None:
        try:
            plan = plan_op(node.kind, OpRequest(specs, out, self.target, node.compute),
                           node.attrs if attrs is None else attrs)
        except (InputError, AssertionError, ZeroDivisionError, ValueError):
            return None
        return plan if op_l1_peak(plan) <= self.budget else None

    def hints(self, node: Node, specs: tuple[TensorSpec, ...]) -> Iterator[tuple[OutputRequest, MatmulAttrs | None]]:
        """The operation's output hints, primary first, each with the attributes it
        runs with (None: the node's own; see the module docstring)."""
        for out in self.output_hints(node, specs):
            yield out, None
        if self.matmul_configs(node):
            yield from self.matmul_hints(node, specs)

    def matmul_configs(self, node: Node) -> bool:
        """Whether tt-mlir gives this matmul's sharded outputs its own program configs
        (the build's `matmul_program_config`; a config already set stays)."""
        return (node.kind in DRAM_DEFAULT and isinstance(node.attrs, MatmulAttrs)
                and node.attrs.program_config is None
                and self.software.matmul_program_config is MatmulConfigSource.TT_MLIR)

    def matmul_hints(self, node: Node,
                     specs: tuple[TensorSpec, ...]) -> Iterator[tuple[OutputRequest, MatmulAttrs | None]]:
        """tt-mlir's MatmulRuleBook `getOutputHints` (OpRules/MatmulRules.cpp,
        OptimizerUtils.cpp `getUniqueTestConfigsForMatmulLinear`): for each sharded memory
        layout of the legal pool, each distinct program config its layouts give
        (`tt_mlir_matmul_config`), the output's physical layout left to the operation
        ("Backend decides physical layout"); no L1-interleaved hint."""
        assert isinstance(node.attrs, MatmulAttrs)
        a = node.attrs
        try:
            shapes = MatmulShapes.of(specs[0], specs[1], a.transpose_a, a.transpose_b,
                                     specs[2] if len(specs) > 2 else None)
        except InputError:
            return
        seen: set[tuple[MemoryLayout, MatmulProgramConfig | None]] = set()
        for legal in legal_sharded_layouts(self.values[node.outputs[0]], self.target, self.software):
            cfg = tt_mlir_matmul_config(shapes, legal.layout, legal.shard.bounding_box(), node.compute)
            if (legal.layout, cfg) in seen:
                continue
            seen.add((legal.layout, cfg))
            out = OutputRequest(BufferType.L1, legal.layout, None if cfg is not None else legal.shard, node.out.dtype)
            yield out, (replace(a, program_config=cfg) if cfg is not None else None)

    def output_hints(self, node: Node, specs: tuple[TensorSpec, ...]) -> Iterator[OutputRequest]:
        """The output hints of the OpRuleBook (see the module docstring); a matmul's
        sharded ones are `matmul_hints` when tt-mlir gives their program configs."""
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
        if self.matmul_configs(node):
            return
        for legal in legal_sharded_layouts(self.values[node.outputs[0]], self.target, self.software):
            yield OutputRequest(BufferType.L1, legal.layout, legal.shard, dtype)

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
            for k, (out, attrs) in enumerate(self.hints(node, moved)):
                if k > 0 and got_sharded and not primary:
                    break
                plan = self.validate(node, moved, out, attrs)
                if plan is None:
                    continue
                spec = plan.outputs[0]
                sharded = spec.memory.shard is not None
                got_sharded = got_sharded or (k == 0 and sharded)
                score = Score(spec.memory.buffer_type is BufferType.L1, sharded, dram_bytes, reshard,
                              _cores(spec, self.target), output_l1(plan), sharded_in)
                if best is None or score.key > best.score.key:
                    best = Choice(out, moves, plan, score, attrs)
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
            attrs = node.attrs
        else:
            moves, out = choice.inputs, choice.out
            attrs = node.attrs if choice.attrs is None else choice.attrs
        inputs = tuple(self.reshard(t, m, node) if m is not None else t
                       for t, m in zip(node.inputs, moves))
        specs = tuple(self.specs[t] for t in inputs)
        placed = pin_matmul_config(replace(node, inputs=inputs, out=out, attrs=attrs), specs, out, self.target)
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
