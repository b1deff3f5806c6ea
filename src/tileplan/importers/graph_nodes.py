"""The nodes of an importer's graph (`tileplan.importers.graph`): its declared tensors
(`GraphTensor`) and its operations (`GraphOp`), with element classes, not precisions.
Apart from the graph and its builder so that what reads a graph's operations
(`tileplan.importers.repeats`) needs nothing that builds one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from tileplan.model.precision import Precision
from tileplan.model.role import Role


@dataclass(frozen=True, slots=True)
class GraphTensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    #: `INPUT`, `WEIGHT` or `BUFFER` (state that is not trained: held like a weight)
    role: Role
    #: an integer tensor's own precision where it is narrower than the 32 bits Poplar
    #: indexes with (a uint8 image: U8); None: its class's (`Graph.to_program`)
    narrow: Precision | None = None
    #: the shape the framework holds it in, where the importer declares it permuted
    #: (`fold_parameter_transposes`: a Linear weight [out, in] declared [in, out])
    source_shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        assert self.narrow is None or (self.dtype == "int" and self.narrow.bytes < 4), (self.name, self.narrow)
        assert self.source_shape is None or sorted(self.source_shape) == sorted(self.shape), self


class GraphOp(NamedTuple):
    """One operation: `name` is what people read (the module path and what it does),
    `output` the tensor it makes, `layer` the model layer it belongs to
    (`Operation.layer`; None outside the layers). Immutable; a named tuple rather than
    a frozen dataclass because a synthetic chain makes a million of them, five times
    faster (`GraphOp._replace` makes a changed copy)."""

    kind: str
    name: str
    inputs: tuple[str, ...]
    output: str
    shape: tuple[int, ...]
    dtype: str
    attrs: tuple[tuple[str, Any], ...]
    module: str | None
    layer: int | None = None
