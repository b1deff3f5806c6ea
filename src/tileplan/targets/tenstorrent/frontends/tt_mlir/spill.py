"""Level 2, pass 2: tt-mlir's GreedyL1SpillManagement.

Pass 1 (layouts.py) judged each operation alone; this pass (lib/Dialect/TTNN/Analysis/
L1SpillManagement.cpp; tenstorrent/tt-mlir docs/src/specs/ttnn-optimizer.md section 5.6.2) walks the schedule
with every live L1 tensor's per-core size and address in a model of the L1 budget
(`SumL1MemoryTracker`: top-down first fit within the usable L1 per core, 16-B aligned):

- a tensor leaves the live set after its last reader (the last of all readers: forks
  keep it);
- an operation fits when its peak (circular buffers plus the L1 buffers it allocates)
  plus every live tensor fits the budget (`SumL1MemoryTracker::validate`: the op's
  `overallPeakL1Usage` counts its inputs, the other live tensors are
  `additionalL1Usage`), its L1 output has a free block (`ensureFitsL1` /
  `wouldAllocateAt`), and its circular buffers with a cushion of 10 % of the budget stay
  below the lowest live tensor (`wouldCBsOverlapTensors`, `kCBFragCushionFraction`);
- while it does not, the live tensor whose last use is farthest is spilled to DRAM
  interleaved by a `ttnn.to_memory_config` at this point, its later readers reading the
  DRAM copy (`evictFarthestUse`; the operation's own operands last);
- an operation that cannot fit even with nothing else live gets a DRAM output
  (`demoteToDram`, "op exceeds budget alone").

tt-mlir's default tracker replays tt-metal's allocator (`use-mock-allocator-state`); the
scalar tracker is modelled here, its address model included. A view (a reshape of a
tile-aligned tensor) shares its input's slot.

Worked example: two 600 KB L1 outputs live at once on n150 (budget 1,325,652 B) and an
operation needing 200 KB of circular buffers: 1.2 MB + 200 KB exceeds the budget, so the
tensor read last is spilled to DRAM before the operation runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tileplan.errors import InputError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.budget import usable_l1
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Node, TtnnGraph, Value
from tileplan.targets.tenstorrent.frontends.tt_mlir.layouts import op_l1_peak
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, BufferType, MemoryLayout, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.program import Tensor
from tileplan.targets.tenstorrent.tiles import round_up

#: L1SpillManagement.cpp `kCBFragCushionFraction`
CB_CUSHION = 0.10
#: the tracker's alignment (`kL1Alignment`)
L1_ALIGNMENT = 16
#: a last use past every operation (the graph's results)
NEVER = 1 << 62


@dataclass(slots=True)
class Slot:
    """A live L1 tensor's place in the budget: [address, address + size)."""

    address: int
    size: int
    last_use: int
    names: int = 1


class Tracker:
    """Top-down first fit over [0, budget) (`SumL1MemoryTracker`)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.slots: dict[int, Slot] = {}

    @property
    def occupied(self) -> int:
        return sum(s.size for s in self.slots.values())

    def lowest(self) -> int:
        return min((s.address for s in self.slots.values()), default=self.budget)

    def place(self, size: int) -> int | None:
        """Where a block of `size` would go (top-down first fit), or None."""
        size = round_up(size, L1_ALIGNMENT)
        top = self.budget
        for s in sorted(self.slots.values(), key=lambda s: -s.address):
            if top - (s.address + s.size) >= size:
                return top - size
            top = s.address
        return top - size if top >= size else None


class SpillManagement:
    """The pass's state (mutable; `manage_spills` owns it)."""

    def __init__(self, graph: TtnnGraph, options: TtMlirOptions, device: Device) -> None:
        self.graph = graph
        self.target = op_target(device)
        budget = usable_l1(device, options)
        self.cushion = int(CB_CUSHION * budget)
        self.tracker = Tracker(budget)
        self.tensors: list[Tensor] = list(graph.tensors)
        self.values: list[Value] = list(graph.values)
        self.specs: dict[int, TensorSpec] = {t: graph.tensors[t].spec for t in graph.uploads}  # type: ignore[misc]
        self.last: dict[int, int] = {}
        for k, node in enumerate(graph.nodes):
            for t in node.inputs:
                self.last[t] = k
        for t in graph.outputs:
            self.last[t] = NEVER
        self.redirect: dict[int, int] = {}
        self.root: dict[int, int] = {}  # a view's output -> the tensor whose slot it shares
        self.nodes: list[Node] = []

    def plan(self, node: Node, out: OutputRequest) -> OpPlan | None:
        specs = tuple(self.specs[t] for t in node.inputs)
        try:
            return plan_op(node.kind, OpRequest(specs, out, self.target, node.compute), node.attrs)
        except (InputError, AssertionError, ZeroDivisionError, ValueError):
            return None

    def release(self, pos: int) -> None:
        """Tensors past their last reader leave the live set."""
        for t in [t for t, s in self.tracker.slots.items() if s.last_use < pos]:
            del self.tracker.slots[t]

    def fits(self, plan: OpPlan) -> bool:
        need = op_l1_peak(plan) + self.tracker.occupied
        if need > self.tracker.budget:
            return False
        out = sum(b.bytes_per_bank for b in plan.buffers if b.buffer_type is BufferType.L1)
        at = self.tracker.place(out) if out else self.tracker.lowest()
        if at is None:
            return False
        return plan.cb_peak == 0 or plan.cb_peak + self.cushion <= min(at, self.tracker.lowest())

    def evict(self, t: int, node: Node) -> None:
        """Spill live tensor `t` (and every view sharing its slot) to DRAM interleaved
        before `node`; later readers read the copies."""
        del self.tracker.slots[t]
        views = [v for v, root in self.root.items() if root == t and v not in self.redirect]
        for held in (t, *views):
            self.spill(held, node)
            self.root.pop(held, None)

    def spill(self, t: int, node: Node) -> None:
        new = len(self.tensors)
        name = f"{self.tensors[t].name}.spill"
        self.tensors.append(Tensor(new, name, Role.ACTIVATION, None, self.tensors[t].module))
        self.values.append(self.values[t])
        spec = self.specs[t]
        out = OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED, None, spec.dtype)
        plan = plan_op(OpKind.TO_MEMORY_CONFIG, OpRequest((spec,), out, self.target, None))
        self.specs[new] = plan.outputs[0]
        self.nodes.append(Node(OpKind.TO_MEMORY_CONFIG, name, (t,), (new,), out, None, None, node.module,
                               node.layer, node.source))
        self.redirect[t] = new

    def victim(self, protected: set[int]) -> int | None:
        """The live tensor read farthest ahead (ties: the larger), operands last."""
        pool = [t for t in self.tracker.slots if t not in protected] or list(self.tracker.slots)
        if not pool:
            return None
        return max(pool, key=lambda t: (self.tracker.slots[t].last_use, self.tracker.slots[t].size, t))

    def replanned(self, node: Node) -> tuple[Node, OpPlan | None]:
        """`node` reading its operands where they are now (spilled ones from DRAM), with
        its plan; when that output no longer works (a view of a spilled tensor), its
        output in DRAM interleaved (`demoteToDram`)."""
        node = replace(node, inputs=tuple(self.redirect.get(t, t) for t in node.inputs))
        plan = self.plan(node, node.out)
        if plan is None and node.out.buffer_type is not BufferType.DRAM:
            demoted = replace(node, out=OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED, None,
                                                      node.out.dtype))
            again = self.plan(demoted, demoted.out)
            if again is not None:
                return demoted, again
        return node, plan

    def run(self, pos: int, node: Node) -> None:
        self.release(pos)
        node, plan = self.replanned(node)
        if plan is not None and node.out.buffer_type is not BufferType.DRAM:
            protected = {self.root.get(t, t) for t in node.inputs}
            while not self.fits(plan) and self.tracker.slots:
                victim = self.victim(protected)
                if victim is None:
                    break
                self.evict(victim, node)
                node, replan = self.replanned(node)
                plan = replan or plan
            if node.out.buffer_type is not BufferType.DRAM and not self.fits(plan):
                demoted = OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED, None, node.out.dtype)
                node = replace(node, out=demoted)
                plan = self.plan(node, demoted)
        elif plan is not None:
            protected = {self.root.get(t, t) for t in node.inputs}
            while plan.cb_peak and plan.cb_peak + self.cushion > self.tracker.lowest() and self.tracker.slots:
                victim = self.victim(protected)
                if victim is None:
                    break
                self.evict(victim, node)
                node, replan = self.replanned(node)
                plan = replan or plan
        self.nodes.append(node)
        self.record(pos, node, plan)

    def record(self, pos: int, node: Node, plan: OpPlan | None) -> None:
        """The operation's outputs: their specs, and the L1 ones placed."""
        if plan is None:
            for t in node.outputs:
                v = self.values[t]
                self.specs[t] = TensorSpec(v.shape, v.dtype, v.layout, DRAM_INTERLEAVED)
            return
        for i, (t, spec) in enumerate(zip(node.outputs, plan.outputs)):
            self.specs[t] = spec
            if spec.memory.buffer_type is not BufferType.L1:
                continue
            size = plan.output_bytes_per_core(i)
            last = self.last.get(t, pos)
            if size == 0 and node.inputs:  # a view: shares its input's slot
                root = self.root.get(node.inputs[0], node.inputs[0])
                if root in self.tracker.slots:
                    self.root[t] = root
                    slot = self.tracker.slots[root]
                    slot.last_use = max(slot.last_use, last)
                continue
            at = self.tracker.place(size)
            if at is None:
                continue
            self.tracker.slots[t] = Slot(at, round_up(size, L1_ALIGNMENT), last)

    def finish(self) -> TtnnGraph:
        outputs = tuple(self.redirect.get(t, t) for t in self.graph.outputs)
        return TtnnGraph(self.graph.name, tuple(self.tensors), tuple(self.values), self.graph.uploads,
                         tuple(self.nodes), outputs)


def manage_spills(graph: TtnnGraph, options: TtMlirOptions, device: Device) -> TtnnGraph:
    """The graph with the spills L1 pressure forces (see the module docstring)."""
    state = SpillManagement(graph, options, device)
    for pos, node in enumerate(graph.nodes):
        state.run(pos, node)
    return state.finish()
