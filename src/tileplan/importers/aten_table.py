"""The table of ATen handlers (`tileplan.importers.aten` documents it): each operator's
name mapped to the function that maps it onto registry operators, filled by
`@aten(...)` in `aten` and `aten_views`."""

from __future__ import annotations

from typing import Any, Callable

#: (the importer at the node, `tileplan.importers.torch_export.Importer`; the fx node)
#: -> the builder tensor(s); typed loosely so that the table imports nothing that walks
Handler = Callable[[Any, Any], Any]
ATEN: dict[str, Handler] = {}


def aten(*names: str) -> Callable[[Handler], Handler]:
    """Register the decorated handler under each of `names`."""
    def register(fn: Handler) -> Handler:
        for name in names:
            ATEN[name] = fn
        return fn
    return register
