"""`tileplan check` on a report's `available_memory_proportion` (docs/report-format.md):
Poplar's cap on one product's temporary bytes per tile, re-derived from the
proportion and the tile's bytes the section states."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tileplan.check.result import Add, is_int, show


def check_memory_proportion(extra: Mapping[str, Any], budget_bytes: int, support_reserve_bytes: int, add: Add) -> None:
    """`available_memory_proportion`: `cap_bytes` = floor(`proportion` x `tile_bytes`),
    the product in double precision as poplin computes it; `tile_bytes` at least what
    the tile holds besides (`budget_bytes` + `support_reserve_bytes`); every product
    listed in `exceeded` over the cap (docs/report-format.md)."""
    if "available_memory_proportion" not in extra:
        return
    s, place = extra["available_memory_proportion"], "available_memory_proportion"
    if not isinstance(s, dict):
        add("disagree", place, f"expected an object, found {show(s)}")
        return
    given = s.get("proportion")
    proportion: float | None = None
    if isinstance(given, (int, float)) and not isinstance(given, bool) and 0 < given <= 1:
        proportion = float(given)
    else:
        add("disagree", f"{place}.proportion", f"expected a number in (0, 1], found {show(given)}")
    least = budget_bytes + support_reserve_bytes
    tile: int | None = s.get("tile_bytes") if is_int(s.get("tile_bytes")) else None
    if tile is None:
        add("disagree", f"{place}.tile_bytes", f"expected an integer (the cap's basis), found "
                                               f"{show(s.get('tile_bytes'))}")
    elif tile < least:
        add("disagree", f"{place}.tile_bytes", f"reports {tile}, less than the tile holds: budget_bytes "
                                               f"{budget_bytes} + support_reserve_bytes {support_reserve_bytes} = "
                                               f"{least}")
        tile = None
    if not is_int(s.get("cap_bytes")):
        add("disagree", f"{place}.cap_bytes", f"expected an integer, found {show(s.get('cap_bytes'))}")
        return
    cap = int(s["cap_bytes"])
    if proportion is not None and tile is not None and cap != int(proportion * tile):
        add("disagree", f"{place}.cap_bytes", f"reports {cap}; re-derived {int(proportion * tile)} = "
                                              f"floor(proportion {given} x tile_bytes {tile})")
    exceeded = s.get("exceeded")
    for i, e in enumerate(exceeded if isinstance(exceeded, list) else ()):
        temporary = e.get("temporary_bytes") if isinstance(e, dict) else None
        if isinstance(temporary, int) and not isinstance(temporary, bool) and temporary <= cap:
            add("disagree", f"{place}.exceeded[{i}].temporary_bytes",
                f"reports {temporary}, listed over the cap but within cap_bytes {cap}")
