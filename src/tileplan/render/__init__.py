"""Renderers: view models (tileplan.views.summary, .liveness, .diff) to terminal text
(`terminal`, no dependency), a self-contained HTML page (`html`, jinja2) and a PNG
(`plot`, matplotlib). The last two need the optional `render` extra; the core never
imports the renderers.
"""

from __future__ import annotations

import importlib

from tileplan.errors import InputError

EXTRA = "render"


def require_extra(verb: str, *modules: str) -> None:
    """Raise a one-line `InputError` unless `modules` import (they come with the
    `render` extra)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            raise InputError(f"tileplan {verb} needs the optional '{EXTRA}' extra, and {name} is not installed: "
                             f"pip install 'tileplan[{EXTRA}]'") from None


def human_bytes(n: int | None) -> str:
    """Bytes for people: `368480` -> `359.8 KiB`; None -> `unknown`."""
    if n is None:
        return "unknown"
    sign, size = ("-" if n < 0 else ""), abs(n)
    if size < 1024:
        return f"{sign}{size} B"
    scaled = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GiB":
            return f"{sign}{scaled:.1f} {unit}"
    raise AssertionError("unreachable")
