"""A TTNN program: what a Tenstorrent frontend hands the planner.

A frontend (tt-mlir's lowering of an imported model, `frontends/tt_mlir.py`; tt-metal's
tt-transformers decoder, `frontends/tt_transformers.py`) says what a model runs on one
chip, in the words TTNN uses: the tensors it uploads before the first operation
(weights, caches, the model's inputs, each with its TTNN `TensorSpec`), then the
operations in order (`ttnn.matmul`, `ttnn.rms_norm`, ... : `OpKind`), each with the
tensors it reads, the memory config and data type it asks for its outputs
(`OutputRequest`, ttnn's `memory_config=` and `dtype=`), its attributes (the rule's
own value: a matmul program config, SDPA's chunk sizes, a conv2d config) and its
compute-kernel config. An operation's output specs are not given: the operation's rule
(`tileplan.targets.tenstorrent.ops`) decides them from the inputs, as ttnn does.

Deallocation: `frees[k]` lists the tensors deallocated right after operation k (tt-mlir
inserts `ttnn.deallocate` after a tensor's last use, `TTNNDeallocate`; tt-transformers
calls `ttnn.deallocate` where its modules do). A tensor never freed stays allocated to
the end (weights, caches, the outputs).

Worked example: one RMS norm of a [1, 1, 32, 2048] bf16 activation held in DRAM, its
weight uploaded first:
    tensors: 0 `x` (INPUT, DRAM interleaved), 1 `norm.weight` (WEIGHT, DRAM), 2 `norm`
    uploads: (0, 1); ops: (Op(0, RMS_NORM, "norm", inputs=(0, 1), outputs=(2,), ...),)
    frees: ((0,),): `x` is deallocated after the norm, its last reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.errors import ModelError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import Layout


class Frontend(Enum):
    """How the model reaches TTNN: tt-xla and tt-mlir compiling an imported model, or
    tt-metal's hand-written tt-transformers decoder."""

    TT_MLIR = "tt-mlir"
    TT_TRANSFORMERS = "tt-transformers"


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor of the program. A declared tensor (uploaded before the first operation:
    a weight, a cache, the model's input) has its `spec`; an operation's output has
    none (its rule decides it). `name` is the user's (`model.layers.3.mlp.down_proj.weight`);
    `module` the module that makes or owns it, when known. `staged`: the row-major form an
    upload first takes on the device, tilized there into `spec` and then freed (tt-mlir's
    runtime converting a host argument: frontends/tt_mlir/lower.py `stage_uploads`); its
    shape may be a permutation of the spec's (the framework's orientation).

    Invariants: id >= 0, a name; a staged form only beside a TILE spec, row-major, of the
    same data type and memory, its shape a permutation of the spec's."""

    id: int
    name: str
    role: Role
    spec: TensorSpec | None = None
    module: str | None = None
    staged: TensorSpec | None = None

    def __post_init__(self) -> None:
        if self.id < 0 or not self.name:
            raise ModelError(f"tensor {self.id} {self.name!r}: expected an id >= 0 and a name")
        if self.staged is not None and (
                self.spec is None or self.spec.layout is not Layout.TILE or self.staged.layout is not Layout.ROW_MAJOR
                or (sorted(self.staged.shape), self.staged.dtype, self.staged.memory)
                != (sorted(self.spec.shape), self.spec.dtype, self.spec.memory)):
            raise ModelError(f"tensor {self.name!r}: a staged form must be the row-major twin of a TILE spec; found "
                             f"{self.staged} beside {self.spec}")


@dataclass(frozen=True, slots=True)
class Op:
    """One TTNN operation. `inputs` and `outputs` are tensor ids; `attrs` is the rule's
    own attribute value (None: the operation's defaults); `compute` its compute-kernel
    config (None: the operation's default). `source` is the index of the model
    operation it lowers (the tt-mlir frontend), `layer` the model layer it belongs to.
    An operation with no outputs writes in place into one of its inputs (ttnn's cache
    updates: `paged_update_cache`, `paged_fill_cache`, `fill_cache` return nothing new)."""

    index: int
    kind: OpKind
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    out: OutputRequest
    attrs: object = None
    compute: ComputeConfig | None = None
    module: str | None = None
    layer: int | None = None
    source: int | None = None

    def __post_init__(self) -> None:
        if not self.outputs and not self.inputs:
            raise ModelError(f"operation {self.index} ({self.name}): expected an output, or an input it writes "
                             "in place")


@dataclass(frozen=True, slots=True)
class TtProgram:
    """A model on one chip, as a frontend lowers it (see the module docstring).

    Invariants (checked): tensor ids are 0..n-1 in order; `uploads` are declared tensors
    (with a spec), each once; every operation reads tensors uploaded or made before it
    and makes tensors no one else makes, none declared; `frees` has one entry per
    operation and frees each tensor at most once, after it is made and not before its
    last reader; `outputs` are tensors of the program; a trace follows an operation of it."""

    name: str
    frontend: Frontend
    tensors: tuple[Tensor, ...]
    uploads: tuple[int, ...]
    ops: tuple[Op, ...]
    frees: tuple[tuple[int, ...], ...]
    outputs: tuple[int, ...] = ()
    #: traces captured (metal trace): (after operation k, the command stream's bytes),
    #: each kept to the end (trace.py: the trace region, or DRAM when it is dynamic)
    traces: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        for i, tensor in enumerate(self.tensors):
            if tensor.id != i:
                raise ModelError(f"tensor {tensor.name!r} has id {tensor.id}; expected {i} (ids count the tensors "
                                 "in order)")
        if len(self.frees) != len(self.ops):
            raise ModelError(f"{len(self.frees)} free lists for {len(self.ops)} operations; expected one each")
        n = len(self.tensors)
        made: dict[int, int] = {}
        for t in self.uploads:
            if not 0 <= t < n or self.tensors[t].spec is None or t in made:
                raise ModelError(f"upload {t}: expected a declared tensor with a spec, uploaded once")
            made[t] = -1
        last_read: dict[int, int] = {}
        for k, op in enumerate(self.ops):
            if op.index != k:
                raise ModelError(f"operation {op.name} has index {op.index}; expected {k}")
            for t in op.inputs:
                if t not in made:
                    raise ModelError(f"tensor {t} is read before it is uploaded or made", self._where(op))
                last_read[t] = k
            for t in op.outputs:
                if not 0 <= t < n or t in made or self.tensors[t].spec is not None:
                    raise ModelError(f"output {t}: expected a tensor no one else makes, without a declared spec",
                                     self._where(op))
                made[t] = k
        freed: set[int] = set()
        for k, ids in enumerate(self.frees):
            for t in ids:
                if t in freed or t not in made or made[t] > k or last_read.get(t, -1) > k:
                    raise ModelError(f"tensor {t} freed after operation {k}: expected a tensor made by then, "
                                     "freed once, after its last reader")
                freed.add(t)
        for t in self.outputs:
            if t not in made:
                raise ModelError(f"program output {t} is never uploaded or made")
        for after, size in self.traces:
            if not 0 <= after < len(self.ops) or size < 1:
                raise ModelError(f"trace after operation {after} of {size} B: expected an operation of the program "
                                 "and at least 1 B of commands")

    def _where(self, op: Op) -> str:
        return f"operation {op.index} ({op.name})"
