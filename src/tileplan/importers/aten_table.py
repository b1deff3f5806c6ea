"""The table of ATen handlers (`tileplan.importers.aten` documents it): each operator's
name mapped to the function that maps it onto registry operators, filled by
`@aten(...)` in `aten` and `aten_views`, and what a handler may ask of the importer
walking the graph (`AtenImporter`, which `tileplan.importers.torch_export.Importer`
is), so that the handlers import nothing that walks."""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

from tileplan.importers.graph import GraphBuilder


class AtenImporter(Protocol):
    """The importer at the fx node a handler maps: the builder it adds to, the node's
    arguments (builder tensors for tensors, Python values for the rest), its output's
    shape and element class, and operations named after the node's module."""

    @property
    def b(self) -> GraphBuilder: ...

    def op(self, kind: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None, what: str | None = None,
           dtype: str | None = None) -> str: ...

    def arg(self, i: int, default: Any = None) -> Any: ...

    def kwarg(self, key: str, position: int | None = None, default: Any = None) -> Any: ...

    def shape(self, t: str) -> tuple[int, ...]: ...

    def out_shape(self) -> tuple[int, ...]: ...

    def out_dtype(self) -> str: ...

    def tensor(self, x: Any) -> tuple[list[str], dict[str, Any]]: ...

    def reshape(self, x: str, shape: Sequence[int], what: str = "reshape") -> str: ...


#: (the importer at the node, an `AtenImporter`; the fx node) -> the builder tensor(s);
#: the importer typed loosely, as a handler of the joint graph takes the joint walk's
Handler = Callable[[Any, Any], Any]
ATEN: dict[str, Handler] = {}


def registrar(table: dict[str, Handler]) -> Callable[..., Callable[[Handler], Handler]]:
    """The decorator `@name(*names)` that registers a handler in `table` under each of
    `names` (`aten` here, `tileplan.importers.joint`'s `joint`)."""
    def named(*names: str) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            for name in names:
                table[name] = fn
            return fn
        return register
    return named


#: register the decorated handler under each of the ATen names given
aten = registrar(ATEN)
