"""What the ONNX mappers share (`mappers` for computing operators, `views` for data
movement): the mapper's type, the exception for a form no mapper maps, a node's
fallback name, a known one-element value, NumPy broadcasting as a one-line error."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tileplan.errors import ModelError

if TYPE_CHECKING:
    from tileplan.importers.onnx.importer import Importer

Shape = tuple[int, ...]
#: a mapper: (importer, node, input names, attributes, module) -> the builder tensor of
#: each ONNX output it maps (None for one nothing reads)
Mapper = Callable[["Importer", Any, list[str], dict[str, Any], "str | None"], list["str | None"]]


class Unsupported(Exception):
    """A node this importer cannot map (collected, then reported together)."""


def fallback(node: Any) -> str:
    """A node's name when its module is unknown: its first output's."""
    return node.output[0] if node.output else node.name


def known_scalar(imp: Importer, name: str) -> float | int | bool | None:
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
