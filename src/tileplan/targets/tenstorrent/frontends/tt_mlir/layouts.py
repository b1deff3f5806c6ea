"""Level 2, pass 1: tt-mlir's GreedyMemoryLayoutPropagation, greedily.

tt-mlir (lib/Dialect/TTNN/Analysis/MemoryLayoutPropagation.cpp `processOp`; the design in
tenstorrent/tt-mlir docs/src/specs/ttnn-optimizer.md section 5.6.1) walks the operations in schedule order
and for each one:

1. takes each operand in its producer's chosen layout, plus an L1-interleaved reshard of
   an L1-sharded operand (`addL1InterleavedFallbacks`); on builds with the greedy
   optimizer's reshards (devices/software.toml `reshard_candidates`, from tt-mlir #7889,
   2026-04-08) also the operand moved to each of its reshard layouts that validates
   (`addReshardCandidates`; legal.py `reshard_layouts`: none for a value that traces to
   the model's constants or for an operation whose rule book explores none), less what
   the operation's input filter rejects (`applyInputLayoutFilter`, `input_filter`), and
   tries every combination of the operands' candidates (`Propagation.combinations`;
   a concat's inputs in one memory layout and grid, ConcatRuleBook);
2. tries the null output hint (the operation decides its output from its inputs: ttnn's
   `memory_config` default, the first input's memory config, DRAM for a matmul), and,
   when that is not sharded, the sharded layouts of the legal-layout pool
   (OpRuleBook.cpp `getOutputHints`; the pool: legal.py `legal_sharded_layouts`); the rule books
   of lib/Dialect/TTNN/Analysis/OpRules/ narrow this per operation: slice, embedding,
   repeat, concatenate-heads and a reshape or permute that is not a view take the
   non-sharded legal layouts (L1 and DRAM interleaved) instead (`nonShardedOutputHints`;
   pad too), a view reshape, SDPA, a typecast and a where only the null hint
   (`nullHintOnly`);
3. validates each combination with the op model (`getOpConstraints`, here the operation's
   rule): the rule accepts it and its peak L1 (circular buffers plus the L1 buffers it
   allocates) fits the usable L1 per core (OpConstraintValidation.cpp: `overallPeakL1Usage
   + additionalL1Usage > getUsableL1PerCore` fails);
4. keeps the best by `LayoutScore` (OpModelStrategy.cpp `LayoutScore::operator>`: L1 over
   DRAM, sharded over interleaved, fewer DRAM input bytes, no reshard, more cores, less
   L1; ties to more sharded inputs);
5. with no valid candidate, falls back to a DRAM-interleaved output
   (`getDRAMInterleavedFallback`), its sharded operands moved to DRAM interleaved.

A reshard is a `ttnn.to_memory_config` before the consumer, none where it would change
nothing tt-mlir compares (`is_no_op_reshard`, greedy builds). The graph's results go back
to DRAM interleaved (`insertReturnDramSpills`). Constants (arguments, const-eval results)
stay in DRAM: tileplan does not place const-eval results in L1, so
`l1_const_eval_usage` is 0 (budget.py).

A matmul or linear on a build where tt-mlir writes its program configs
(`matmul_program_config`, from tt-mlir #6457) takes MatmulRuleBook's hints instead of
the sharded legal layouts: DRAM interleaved, then per sharded memory layout each distinct
program config its legal layouts give (`matmul_hints`), the physical output the
operation's (tt-metal's `create_output_tensors` for that config).

Simplifications, stated: the beam is one candidate wide (tt-mlir's default beam width is
8, with a backward pass resolving forks), so each operand's candidates come from one
producer layout; among candidates of equal score the first tried wins, and tileplan
tries them in a fixed order (block, height, width; larger grids first; reshards by
sharding type height, width, block) where tt-mlir's is `std::sort`'s and a `DenseMap`'s,
unspecified at the April 2026 builds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.budget import usable_l1
from tileplan.targets.tenstorrent.frontends.tt_mlir.configs import pin_matmul_config, tt_mlir_matmul_config
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Node, TtnnGraph, Value
from tileplan.targets.tenstorrent.frontends.tt_mlir.legal import (
    legal_sharded_layouts,
    reshard_layouts,
    sharded_layout_pool,
)
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED,
    L1_INTERLEAVED,
    BufferType,
    MemoryConfig,
    MemoryLayout,
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
from tileplan.targets.tenstorrent.tiles import TILE, Layout
from tileplan.targets.tenstorrent.versions import MatmulConfigSource, ReshardRule
from tileplan.model.role import Role

#: operations whose output defaults to DRAM (ttnn.matmul / ttnn.linear: `memory_config`
#: "Defaults to None, which will result in using ttnn.DRAM_MEMORY_CONFIG")
DRAM_DEFAULT = frozenset({OpKind.MATMUL, OpKind.LINEAR})
#: operations taking the non-sharded legal layouts as their hints (DataMovementRules.cpp
#: SliceRuleBook, ReshapeRuleBook for non-views, PadRuleBook; EmbeddingRules.cpp;
#: TransformerRules.cpp ConcatenateHeadsRuleBook)
NON_SHARDED = frozenset({OpKind.SLICE, OpKind.EMBEDDING, OpKind.REPEAT, OpKind.NLP_CONCAT_HEADS, OpKind.RESHAPE,
                         OpKind.PERMUTE, OpKind.TRANSPOSE, OpKind.PAD})
#: operations taking the null hint only (TransformerRules.cpp SDPARuleBook, which
#: OpRuleBook.cpp `getRuleBook` also gives NLPConcatHeadsDecodeOp; TypecastRules.cpp
#: TypecastRuleBook, also WhereOp's): their output follows their first input
NULL_ONLY = frozenset({OpKind.SDPA, OpKind.SDPA_DECODE, OpKind.NLP_CONCAT_HEADS_DECODE, OpKind.TYPECAST,
                       OpKind.WHERE})


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
class InputCandidate:
    """One layout an operand may be read in (MemoryLayoutPropagation.cpp `InputCandidate`):
    `move` the memory it is moved to before the operation (None: as produced), `reshard`
    whether that takes a `ttnn.to_memory_config` (tt-mlir's `isReshard`)."""

    move: MemoryConfig | None
    reshard: bool


AS_PRODUCED = InputCandidate(None, False)
#: tt-mlir's per-operand cap (`maxInputCandidatesPerOperand`, GreedyMemoryLayoutPropagation.h)
MAX_INPUT_CANDIDATES = 64
#: operations whose rule book does not explore reshards (`shouldExploreReshards` false:
#: OpRules DataMovementRules.cpp slice, reshape / permute, pad; TransformerRules.cpp
#: concatenate-heads, SDPA, rotary embedding, split-QKV)
NO_RESHARDS = frozenset({OpKind.SLICE, OpKind.RESHAPE, OpKind.PERMUTE, OpKind.TRANSPOSE, OpKind.PAD,
                         OpKind.NLP_CONCAT_HEADS, OpKind.NLP_CONCAT_HEADS_DECODE, OpKind.SDPA, OpKind.SDPA_DECODE,
                         OpKind.ROTARY_EMBEDDING_LLAMA, OpKind.SPLIT_QKV})


def input_filter(kind: OpKind, operand: int, rule: ReshardRule) -> Callable[[MemoryConfig], bool] | None:
    """The rule book's `getInputLayoutFilter` for an operand (None: every layout):
    slice and concatenate-heads reject sharded inputs, reshape and permute width-sharded
    ones, rotary embedding takes interleaved or height-sharded ones (LayoutFilterUtils.h
    `allowOnlyShardingType`; all from #7856), and from
    #7987 a matmul's or linear's right operand is never sharded (MatmulRules.cpp)."""
    if kind in (OpKind.SLICE, OpKind.NLP_CONCAT_HEADS) or (kind in DRAM_DEFAULT and operand == 1
                                                            and rule is ReshardRule.PER_TYPE_4):
        return lambda m: m.shard is None
    if kind in (OpKind.RESHAPE, OpKind.PERMUTE, OpKind.TRANSPOSE):
        return lambda m: m.layout is not MemoryLayout.WIDTH_SHARDED
    if kind is OpKind.ROTARY_EMBEDDING_LLAMA:  # allowOnlyShardingType: interleaved, or height sharded
        return lambda m: m.shard is None or m.layout is MemoryLayout.HEIGHT_SHARDED
    return None


def _output_tiles(value: Value) -> int | None:
    """The tiles of a TILE output (the rows above the last dimension as one), the most
    cores a reshard may take (MemoryLayoutPropagation.cpp `addReshardCandidates`
    maxGridVolume); None for a row-major one."""
    if value.layout is not Layout.TILE:
        return None
    last = value.shape[-1]
    return math.ceil(last / TILE) * math.ceil(math.prod(value.shape) // last / TILE)


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
        self.constant = traces_to_constants(graph)
        self.produced: set[int] = {t for n in graph.nodes for t in n.outputs}
        self._validated: dict[object, OpPlan | None] = {}

    def validate(self, node: Node, specs: tuple[TensorSpec, ...], out: OutputRequest,
                 attrs: MatmulAttrs | None = None) -> OpPlan | None:
        """The op model's answer (OpConstraintValidation.cpp): the operation's plan when
        its rule accepts it and its peak L1 fits the usable L1, else None. Memoized on
        what decides it (the operation's kind, attributes, compute config, operand specs
        and the output asked for): a model's repeated layers ask the same again."""
        chosen = node.attrs if attrs is None else attrs
        key: tuple[object, ...] | None = (node.kind, chosen, node.compute, specs, out)
        try:
            return self._validated[key]
        except KeyError:
            pass
        except TypeError:  # attributes that do not hash: not memoized
            key = None
        try:
            plan: OpPlan | None = plan_op(node.kind, OpRequest(specs, out, self.target, node.compute), chosen)
        except (InputError, AssertionError, ZeroDivisionError, ValueError):
            plan = None
        if plan is not None and op_l1_peak(plan) > self.budget:
            plan = None
        if key is not None:
            self._validated[key] = plan
        return plan

    def validate_reshard(self, spec: TensorSpec, memory: MemoryConfig) -> bool:
        """MemoryLayoutPropagation.cpp `validateReshard`: the `ttnn.to_memory_config` op
        model of moving `spec` into `memory` with no further L1 in use (the consumer only
        gives context), so it depends on the tensor and the two layouts alone."""
        move = Node(OpKind.TO_MEMORY_CONFIG, "reshard", (), (), OutputRequest.of(memory, spec.dtype))
        return self.validate(move, (spec,), move.out) is not None

    def input_candidates(self, node: Node, operand: int) -> list[InputCandidate]:
        """MemoryLayoutPropagation.cpp `getInputCandidateSets` for one operand, with a
        beam of one (the rules of the build's `reshard_candidates`): the operand as
        produced; when that is L1 sharded, its move to L1 interleaved if the reshard
        validates (`addL1InterleavedFallbacks`); the reshard candidates
        (`addReshardCandidates`, `reshard_layouts`) that validate, unless the operand
        traces to the model's constants or the rule book explores none; the input filter
        (`applyInputLayoutFilter`: what it rejects goes, and if nothing is left the
        operand moves to DRAM interleaved, unvalidated); at most 64."""
        t = node.inputs[operand]
        spec = self.specs[t]
        rule = self.software.reshard_candidates
        found = [AS_PRODUCED]
        produced = t in self.produced
        if produced and spec.memory.buffer_type is BufferType.L1 and spec.memory.shard is not None \
                and self.validate_reshard(spec, L1_INTERLEAVED):
            found.append(InputCandidate(L1_INTERLEAVED, True))
        keep = input_filter(node.kind, operand, rule)

        def memory(c: InputCandidate) -> MemoryConfig:
            return spec.memory if c.move is None else c.move

        def filtered(cands: list[InputCandidate]) -> list[InputCandidate]:
            if keep is None:
                return cands
            kept = [c for c in cands if keep(memory(c))]
            return kept or [InputCandidate(DRAM_INTERLEAVED, True)]

        if rule is ReshardRule.GLOBAL_8:
            found = filtered(found)
        if not self.constant[t] and node.kind not in NO_RESHARDS:
            # the pre-pass layout: DRAM interleaved for what an operation makes (tt-mlir's
            # TTNNLayout default), an upload's own
            current = DRAM_INTERLEAVED if produced else spec.memory
            bases = list(dict.fromkeys([current, *(memory(c) for c in found)]))
            explore = not any(memory(c).shard is not None and (keep is None or rule is ReshardRule.GLOBAL_8
                                                                or keep(memory(c))) for c in found)
            pool = sharded_layout_pool(self.values[t], self.target, self.software)
            layouts = reshard_layouts(pool, bases, explore, {memory(c) for c in found},
                                      _output_tiles(self.values[node.outputs[0]]) if node.outputs else None, rule)
            if keep is not None and rule is ReshardRule.PER_TYPE_4:
                layouts = [m for m in layouts if keep(m)]
            for m in layouts:
                if len(found) >= MAX_INPUT_CANDIDATES:
                    break
                if self.validate_reshard(spec, m):
                    found.append(InputCandidate(m, True))
        return filtered(found)[:MAX_INPUT_CANDIDATES]

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

    def combinations(self, node: Node, specs: tuple[TensorSpec, ...]
                     ) -> Iterator[tuple[tuple[MemoryConfig | None, ...], bool]]:
        """The operands' layouts to try, each with whether it takes a reshard: before the
        greedy optimizer's reshards (`reshard_candidates` none) the operands as produced
        and with their L1-sharded ones in L1 interleaved; then every combination of the
        operands' candidates (`input_candidates`, the last operand varying fastest, as
        processOp's odometer), less those a concat cannot take (ConcatRuleBook
        `isValidInputCombination`: one memory layout, and one grid when sharded)."""
        if self.software.reshard_candidates is ReshardRule.NONE:
            for moves in self.input_options(specs):
                yield moves, any(m is not None for m in moves)
            return
        sets = [self.input_candidates(node, i) for i in range(len(node.inputs))]
        for combo in itertools.product(*sets):
            moves = tuple(c.move for c in combo)
            if node.kind is OpKind.CONCAT:
                mems = [m if m is not None else s.memory for s, m in zip(specs, moves)]
                if len({m.layout for m in mems}) > 1 or (mems[0].shard is not None
                                                        and len({m.shard.grid for m in mems if m.shard}) > 1):
                    continue
            yield moves, any(c.reshard for c in combo)

    def choose(self, node: Node) -> Choice | None:
        specs = tuple(self.specs[t] for t in node.inputs)
        best: Choice | None = None
        for moves, reshard in self.combinations(node, specs):
            moved = tuple(replace(s, memory=m) if m is not None else s for s, m in zip(specs, moves))
            dram_bytes = sum(s.pages().count * s.pages().page_bytes for s in moved
                             if s.memory.buffer_type is BufferType.DRAM)
            sharded_in = sum(1 for s in moved if s.memory.shard is not None)
            got_sharded = False
            primary = node.kind in NON_SHARDED
            for k, (out, attrs) in enumerate(self.hints(node, moved)):
                if k > 0 and got_sharded and not primary:
                    break
                if not self.hint_fits_inputs(node, moved, out):
                    continue
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

    def hint_fits_inputs(self, node: Node, specs: tuple[TensorSpec, ...], out: OutputRequest) -> bool:
        """ConcatRuleBook `isValidOutputHintForInputs` (with the greedy optimizer's rule
        books): sharded inputs take a sharded output of their memory layout and grid, not
        the null hint (tt-metal's concat writes DRAM then); interleaved inputs no sharded
        output. Every other operation takes every hint."""
        if node.kind is not OpKind.CONCAT or not specs or self.software.reshard_candidates is ReshardRule.NONE:
            return True
        first = specs[0].memory
        if first.shard is None:
            return not out.sharded
        return out.sharded and out.layout is first.layout and out.shard is not None \
            and out.shard.grid == first.shard.grid

    def moved(self, t: int, memory: MemoryConfig | None, consumer: Node) -> int:
        """Tensor `t` as `consumer` reads it: as produced, or through a reshard into
        `memory` unless that would change nothing tt-mlir compares (greedy builds:
        `is_no_op_reshard`)."""
        if memory is None or (self.software.reshard_candidates is not ReshardRule.NONE
                              and is_no_op_reshard(self.specs[t].memory, memory)):
            return t
        return self.reshard(t, memory, consumer)

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
            inputs = tuple(self.moved(t, m, node) for t, m in zip(node.inputs, moves))
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
        inputs = tuple(self.moved(t, m, node) for t, m in zip(node.inputs, moves))
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


def is_no_op_reshard(current: MemoryConfig, target: MemoryConfig) -> bool:
    """MemoryLayoutPropagation.cpp `insertReshardOp` (from #7454, 2026-03-31, to HEAD): no
    `ttnn.to_memory_config` is emitted when the producer's buffer type and memory layout
    are the target's and, both sharded, so is the grid's shape; the shard shape is not
    compared (a matmul output sharded by its program config on the target's grid is read
    as produced). The page layout is the producer's here (a reshard keeps it)."""
    if current.buffer_type is not target.buffer_type or current.layout is not target.layout:
        return False
    if current.shard is None or target.shard is None:
        return True
    return _grid_shape(current) == _grid_shape(target)


def _grid_shape(memory: MemoryConfig) -> tuple[int, int]:
    """TTNNLayoutAttr's grid shape: a block-sharded tensor's rows and columns of cores, a
    height- or width-sharded tensor's core count (its virtual grid, N x 1 or 1 x N)."""
    assert memory.shard is not None
    grid = memory.shard.grid
    if memory.layout is MemoryLayout.BLOCK_SHARDED:
        box = grid.bounding_box()
        return box.height, box.width
    return grid.cores, 1


def traces_to_constants(graph: TtnnGraph) -> dict[int, bool]:
    """tt-mlir's `valueTracesToConstantArgs` (include/ttmlir/Dialect/TTCore/IR/Utils.h)
    for every tensor: its use-def chain reaches some function argument, and every one it
    reaches is a parameter or constant (here an upload that is not a model input)."""
    reaches: dict[int, bool] = {}
    constant: dict[int, bool] = {}
    for t in graph.uploads:
        reaches[t] = True
        constant[t] = graph.tensors[t].role is not Role.INPUT
    for node in graph.nodes:
        args = [t for t in node.inputs if reaches.get(t, False)]
        for t in node.outputs:
            reaches[t] = bool(args)
            constant[t] = bool(args) and all(constant[a] for a in args)
    return {t.id: reaches.get(t.id, False) and constant.get(t.id, False) for t in graph.tensors}


def propagate(graph: TtnnGraph, options: TtMlirOptions, device: Device) -> TtnnGraph:
    """Every operation's layout chosen (see the module docstring)."""
    state = Propagation(graph, options, device)
    for node in graph.nodes:
        state.run(node)
    return state.finish()
