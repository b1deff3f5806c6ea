"""The TTNN graph the tt-mlir lowering builds before placement: what the TTIR-to-TTNN
conversion (tt-mlir lib/Conversion/TTIRToTTNN/TTIRToTTNN.cpp) and its workarounds leave
for the optimizer.

Every tensor has a `Value` (its logical shape, data type and layout: what the lowering
needs to decide conversions); a declared tensor (an argument tt-xla passes, or the output
of a const-eval function, cached on the device) also has its TTNN spec. A `Node` is one
TTNN operation with the output it asks for (DRAM interleaved: tt-mlir's TTNNLayout
default, `g_defaultMemorySpaceDevice`), its attributes, compute config and where it
comes from. `GraphBuilder` collects them; `TtnnGraph` is the finished value the placement
passes (placement.py, spill.py) read and rewrite.

Worked example: a Linear(64, 128) + GELU of a [1, 32, 64] bf16 input is, at level 0,
tensors 0 `x` (input, DRAM, row-major), 1 `fc.weight` ([64, 128], DRAM, TILE), 2 `fc.bias`,
3 the tilized x, 4 the linear's output; nodes to_layout (2 -> 3) and ttnn.linear (3, 1,
2 -> 4) with the GELU fused as its activation.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tileplan.errors import ModelError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.program import Frontend, Op, Tensor, TtProgram
from tileplan.targets.tenstorrent.tiles import DataType, Layout


#: the output every node asks for until placed: DRAM interleaved, its own dtype
DEFAULT_OUT = OutputRequest()


@dataclass(frozen=True, slots=True)
class Value:
    """What the lowering knows of a tensor before placement. Invariant: dims >= 1."""

    shape: tuple[int, ...]
    dtype: DataType
    layout: Layout = Layout.TILE

    def __post_init__(self) -> None:
        if not self.shape or min(self.shape) < 1:
            raise ModelError(f"tensor shape {list(self.shape)}: every dimension must be >= 1")

    def with_(self, **changes: object) -> "Value":
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Node:
    """One TTNN operation before placement (see the module docstring). `fused` names the
    model operations folded into it (an activation, a bias add); `source` is the index of
    the model operation it lowers."""

    kind: OpKind
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    out: OutputRequest = OutputRequest()
    attrs: object = None
    compute: ComputeConfig | None = None
    module: str | None = None
    layer: int | None = None
    source: int | None = None
    fused: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TtnnGraph:
    """The lowered model: tensors with their values, the declared tensors' upload order,
    the nodes in execution order and the model's outputs. Invariant (checked): one value
    per tensor; a spec exactly for the uploaded tensors."""

    name: str
    tensors: tuple[Tensor, ...]
    values: tuple[Value, ...]
    uploads: tuple[int, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.values) != len(self.tensors):
            raise ModelError(f"{len(self.values)} values for {len(self.tensors)} tensors")
        uploaded = set(self.uploads)
        for t in self.tensors:
            if (t.spec is not None) != (t.id in uploaded):
                raise ModelError(f"tensor {t.name!r}: a spec exactly when it is uploaded")

    def with_nodes(self, nodes: tuple[Node, ...], tensors: tuple[Tensor, ...] | None = None,
                   values: tuple[Value, ...] | None = None) -> "TtnnGraph":
        return replace(self, nodes=nodes, tensors=tensors if tensors is not None else self.tensors,
                       values=values if values is not None else self.values)


@dataclass
class GraphBuilder:
    """Collects the tensors and nodes of a `TtnnGraph` (mutable; `finish` freezes)."""

    name: str
    tensors: list[Tensor] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    uploads: list[int] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)

    def unique(self, name: str) -> str:
        """`name`, or `name:2`, `name:3`, ... when taken: tt-mlir needs unique operation
        locations for its overrides (`check-unique-locs`)."""
        out, k = name, 1
        while out in self.taken:
            k += 1
            out = f"{name}:{k}"
        self.taken.add(out)
        return out

    def upload(self, name: str, role: Role, spec: TensorSpec, module: str | None = None) -> int:
        """A declared tensor, on the device before the first operation."""
        tid = len(self.tensors)
        self.tensors.append(Tensor(tid, name, role, spec, module))
        self.values.append(Value(spec.shape, spec.dtype, spec.layout))
        self.uploads.append(tid)
        return tid

    def add(self, kind: OpKind, name: str, inputs: tuple[int, ...], values: tuple[Value, ...], *,
            out: OutputRequest = DEFAULT_OUT, attrs: object = None, compute: ComputeConfig | None = None,
            module: str | None = None, layer: int | None = None, source: int | None = None,
            fused: tuple[str, ...] = ()) -> tuple[int, ...]:
        """A node making one tensor per value; returns their ids."""
        op_name = self.unique(name)
        ids = []
        for k, v in enumerate(values):
            tid = len(self.tensors)
            self.tensors.append(Tensor(tid, op_name if len(values) == 1 else f"{op_name}:{k}", Role.ACTIVATION,
                                       None, module))
            self.values.append(v)
            ids.append(tid)
        self.nodes.append(Node(kind, op_name, inputs, tuple(ids), out, attrs, compute, module, layer, source,
                               fused))
        return tuple(ids)

    def one(self, kind: OpKind, name: str, inputs: tuple[int, ...], value: Value, **kw: object) -> int:
        """A node making one tensor (`add` with one value)."""
        return self.add(kind, name, inputs, (value,), **kw)[0]  # type: ignore[arg-type]

    def finish(self, outputs: tuple[int, ...]) -> TtnnGraph:
        return TtnnGraph(self.name, tuple(self.tensors), tuple(self.values), tuple(self.uploads),
                         tuple(self.nodes), outputs)


def to_program(graph: TtnnGraph) -> TtProgram:
    """The TtProgram of a placed graph, each tensor deallocated right after its last
    reader (tt-mlir lib/Dialect/TTNN/Transforms/Passes.cpp `TTNNDeallocate`: every result
    of an operation gets a `ttnn.deallocate` after its last use, none when that use is the
    return). The arguments tt-xla passes are retained (pjrt_implementation/src/api/
    tensor.cc `setTensorRetain(rt_tensor, true)`; the runtime's deallocate skips retained
    tensors, runtime/lib/ttnn/operations/deletion/deallocate.cpp), and const-eval results
    stay cached: no upload is freed."""
    last: dict[int, int] = {}
    for k, node in enumerate(graph.nodes):
        for t in node.inputs:
            last[t] = k
    uploaded = set(graph.uploads)
    returned = set(graph.outputs)
    frees: list[list[int]] = [[] for _ in graph.nodes]
    for k, node in enumerate(graph.nodes):
        for t in node.outputs:
            if t in returned:
                continue
            frees[last.get(t, k)].append(t)
    for t in last:
        assert t in uploaded or any(t in n.outputs for n in graph.nodes), t
    ops = tuple(Op(k, n.kind, n.name, n.inputs, n.outputs, n.out, n.attrs, n.compute, n.module, n.layer, n.source)
                for k, n in enumerate(graph.nodes))
    return TtProgram(graph.name, Frontend.TT_MLIR, graph.tensors, graph.uploads, ops,
                     tuple(tuple(sorted(f)) for f in frees), graph.outputs)
