"""Small hand-built TTNN programs for the Tenstorrent planner's tests: tensors by
spec, operations by kind, the frees after each, made into a `TtProgram`."""

from __future__ import annotations

from dataclasses import dataclass, field

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, L1_INTERLEAVED, MemoryConfig, TensorSpec
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.program import Frontend, Op, Tensor, TtProgram
from tileplan.targets.tenstorrent.tiles import DataType, Layout


def tile(shape: tuple[int, ...], memory: MemoryConfig = DRAM_INTERLEAVED,
         dtype: DataType = DataType.BFLOAT16) -> TensorSpec:
    return TensorSpec(shape, dtype, Layout.TILE, memory)


def l1_tiles_per_bank(tiles: int, banks: int = 72) -> TensorSpec:
    """An L1-interleaved bf16 tensor of `tiles` tiles in each of `banks` banks."""
    return tile((1, 1, 32 * tiles, 32 * banks), L1_INTERLEAVED)


@dataclass
class Builder:
    """Tensors, uploads and operations added in program order."""

    name: str = "test"
    tensors: list[Tensor] = field(default_factory=list)
    uploads: list[int] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    frees: list[tuple[int, ...]] = field(default_factory=list)

    def upload(self, name: str, spec: TensorSpec, role: Role = Role.WEIGHT) -> int:
        t = len(self.tensors)
        self.tensors.append(Tensor(t, name, role, spec, module=name.rsplit(".", 1)[0]))
        self.uploads.append(t)
        return t

    def op(self, kind: OpKind, name: str, inputs: tuple[int, ...], out: OutputRequest | None = None,
           attrs: object = None, free: tuple[int, ...] = ()) -> int:
        """One operation with one output (DRAM interleaved unless `out` says); its id."""
        return self.multi(kind, name, inputs, 1, out, attrs, free)[0]

    def multi(self, kind: OpKind, name: str, inputs: tuple[int, ...], outputs: int, out: OutputRequest | None = None,
              attrs: object = None, free: tuple[int, ...] = ()) -> tuple[int, ...]:
        made = []
        for k in range(outputs):
            t = len(self.tensors)
            self.tensors.append(Tensor(t, name if outputs == 1 else f"{name}.{k}", Role.ACTIVATION))
            made.append(t)
        self.ops.append(Op(len(self.ops), kind, name, inputs, tuple(made), out or OutputRequest(), attrs,
                           module=name))
        self.frees.append(free)
        return tuple(made)

    def program(self, outputs: tuple[int, ...] = ()) -> TtProgram:
        return TtProgram(self.name, Frontend.TT_MLIR, tuple(self.tensors), tuple(self.uploads), tuple(self.ops),
                         tuple(self.frees), outputs)
