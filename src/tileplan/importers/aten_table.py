"""The table of ATen handlers (`tileplan.importers.aten` documents it): each operator's
name mapped to the function that maps it onto registry operators, filled by
`@aten(...)` in `aten` and `aten_views`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from tileplan.importers.torch_export import Importer

Handler = Callable[["Importer", Any], Any]
ATEN: dict[str, Handler] = {}


def aten(*names: str) -> Callable[[Handler], Handler]:
    """Register the decorated handler under each of `names`."""
    def register(fn: Handler) -> Handler:
        for name in names:
            ATEN[name] = fn
        return fn
    return register
