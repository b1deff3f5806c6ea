"""What the ONNX mappers share (`mappers` for computing operators, `views` for data
movement): the mapper's type, the exception for a form no mapper maps, a node's
fallback name, a known one-element value, NumPy broadcasting as a one-line error."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from tileplan.errors import ModelError
from tileplan.importers.graph import GraphBuilder

Shape = tuple[int, ...]


class OnnxImporter(Protocol):
    """What a mapper may ask of the walk over an ONNX graph
    (`tileplan.importers.onnx.importer.Importer` is one): the builder it adds to, the
    model and its opset, the values known at import time, the builder tensor of each
    ONNX tensor read so far, and the readers, shapes and names of operands."""

    @property
    def b(self) -> GraphBuilder: ...

    @property
    def model(self) -> Any: ...

    @property
    def opset(self) -> int: ...

    @property
    def known(self) -> dict[str, np.ndarray]: ...

    @property
    def names(self) -> dict[str, str]: ...

    @property
    def isnan_of(self) -> dict[str, str]: ...

    @property
    def readers(self) -> Counter[str]: ...

    @property
    def assumed(self) -> Counter[str]: ...

    def is_runtime(self, name: str) -> bool: ...

    def shape(self, name: str) -> tuple[int, ...]: ...

    def read(self, name: str, module: str | None, role: str = "") -> str: ...

    def op_name(self, module: str | None, what: str, fallback: str | None = None) -> str: ...

    def ints(self, name: str) -> list[int] | None: ...

    def stated_shape(self, node: Any, what: str, output: int = 0) -> tuple[int, ...]: ...

    def one_number(self, name: str) -> bool: ...

    def emit(self, kind: str, inputs: Sequence[str], attrs: dict[str, Any] | None, module: str | None,
             fallback: str, dtype: str | None = None) -> str: ...

    def reshape(self, x: str, shape: Sequence[int], module: str | None, fallback: str) -> str: ...

    def set_shape(self, onnx_name: str, shape: Sequence[int]) -> None: ...


#: a mapper: (importer, node, input names, attributes, module) -> the builder tensor of
#: each ONNX output it maps (None for one nothing reads)
Mapper = Callable[[OnnxImporter, Any, list[str], dict[str, Any], "str | None"], list["str | None"]]


class Unsupported(Exception):
    """A node this importer cannot map (collected, then reported together)."""


def fallback(node: Any) -> str:
    """A node's name when its module is unknown: its first output's."""
    return node.output[0] if node.output else node.name


def known_scalar(imp: OnnxImporter, name: str) -> float | int | bool | None:
    """The number a known one-element value holds (any rank: callers reshape the
    result to the broadcast shape), else None."""
    if name in imp.known and imp.known[name].size == 1:
        return imp.known[name].reshape(-1)[0].item()
    return None


def broadcast(*shapes: Sequence[int]) -> Shape:
    """NumPy's broadcast of `shapes` (a rank-0 shape takes part as a scalar), or a
    one-line `ModelError` naming them when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(1, rank + 1):
        dims = {int(s[-k]) for s in shapes if len(s) >= k} - {1}
        if len(dims) > 1:
            listed = " and ".join(str([int(d) for d in s]) for s in shapes)
            raise ModelError(f"operands of shapes {listed} do not broadcast (NumPy's rule: sizes equal or 1, "
                             "counted from the last dimension)")
        out.append(dims.pop() if dims else 1)
    return tuple(reversed(out))
