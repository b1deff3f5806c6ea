"""A small builder the tt-transformers lowering writes its program with: tensors in
order, the uploads, the operations with their output requests, and the frees after each.

Views: a reshape that ttnn runs as a view (the same buffer) makes a tensor sharing its
input's buffer; `free` of any of them frees the buffer (tt-transformers'
`ttnn.deallocate(x)` deallocates the storage every view of x names), so the builder frees
every live tensor of that buffer at once. A tensor freed twice, or read after its buffer
was freed, is a lowering bug: `build` refuses it (TtProgram's invariants).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tileplan.errors import ModelError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.memory import MemoryConfig, TensorSpec
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import ReshapeAttrs
from tileplan.targets.tenstorrent.program import Frontend, Op, Tensor, TtProgram


@dataclass
class Emit:
    """Tensors, uploads and operations in program order (mutable while lowering)."""

    name: str
    tensors: list[Tensor] = field(default_factory=list)
    uploads: list[int] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    frees: list[list[int]] = field(default_factory=list)
    #: tensor -> its buffer's group (views share their input's)
    group: dict[int, int] = field(default_factory=dict)
    #: group -> its live tensors
    members: dict[int, list[int]] = field(default_factory=dict)
    #: tensor -> the memory it was asked for (uploads: their spec's)
    memory: dict[int, MemoryConfig] = field(default_factory=dict)
    layer: int | None = None
    module: str | None = None

    def _new(self, name: str, role: Role, spec: TensorSpec | None, group: int | None = None) -> int:
        t = len(self.tensors)
        self.tensors.append(Tensor(t, name, role, spec, self.module))
        g = t if group is None else group
        self.group[t] = g
        self.members.setdefault(g, []).append(t)
        return t

    def upload(self, name: str, spec: TensorSpec, role: Role = Role.WEIGHT) -> int:
        """A tensor on the device before the first operation (a weight, a cache, an input)."""
        t = self._new(name, role, spec)
        self.uploads.append(t)
        self.memory[t] = spec.memory
        return t

    def op(self, kind: OpKind, name: str, inputs: tuple[int, ...], out: OutputRequest, attrs: object = None,
           compute: ComputeConfig | None = None, outputs: int = 1, role: Role = Role.ACTIVATION) -> tuple[int, ...]:
        """One operation; its `outputs` new tensors (none: it writes in place)."""
        made = tuple(self._new(name if outputs == 1 else f"{name}.{i}", role, None)
                     for i in range(outputs))
        for t in made:
            self.memory[t] = _open(out) if out.sharded and out.shard is None else out.memory()
        self.ops.append(Op(len(self.ops), kind, name, inputs, made, out, attrs, compute, self.module, self.layer))
        self.frees.append([])
        return made

    def one(self, kind: OpKind, name: str, inputs: tuple[int, ...], out: OutputRequest, attrs: object = None,
            compute: ComputeConfig | None = None) -> int:
        return self.op(kind, name, inputs, out, attrs, compute)[0]

    def view(self, x: int, shape: tuple[int, ...], name: str, padded: tuple[int, ...] | None = None) -> int:
        """ttnn.reshape run as a view: a tensor sharing x's buffer (`padded`: the
        input's padded shape, kept)."""
        memory = self.memory[x]
        out = OutputRequest.of(memory)
        t = self._new(name, Role.ACTIVATION, None, self.group[x])
        self.memory[t] = memory
        self.ops.append(Op(len(self.ops), OpKind.RESHAPE, name, (x,), (t,), out, ReshapeAttrs(shape, padded), None,
                           self.module, self.layer))
        self.frees.append([])
        return t

    def free(self, *tensors: int) -> None:
        """ttnn.deallocate after the last operation: every live tensor of their buffers."""
        if not self.ops:
            raise ModelError(f"{self.name}: a free before the first operation")
        for x in tensors:
            g = self.group[x]
            live = self.members.get(g, [])
            if not live:
                raise ModelError(f"{self.name}: tensor {self.tensors[x].name} freed twice")
            self.frees[-1].extend(live)
            self.members[g] = []

    def live(self, x: int) -> bool:
        return bool(self.members.get(self.group[x]))

    def build(self, outputs: tuple[int, ...]) -> TtProgram:
        return TtProgram(self.name, Frontend.TT_TRANSFORMERS, tuple(self.tensors), tuple(self.uploads),
                         tuple(self.ops), tuple(tuple(f) for f in self.frees), outputs)


def _open(out: OutputRequest) -> MemoryConfig:
    """A sharded request without a shard spec (the operation picks it): the memory the
    builder records is the buffer type and layout only, kept for views of interleaved
    tensors (the only ones tt-transformers reshapes)."""
    return MemoryConfig(out.buffer_type)
