"""The table of ATen handlers (`tileplan.importers.aten` documents it): each operator's
name mapped to the function that maps it onto registry operators, filled by
`@aten(...)` in `aten` and `aten_views`."""

from __future__ import annotations

from typing import Any, Callable

#: (the importer at the node, `tileplan.importers.torch_export.Importer`; the fx node)
#: -> the builder tensor(s); typed loosely so that the table imports nothing that walks
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
