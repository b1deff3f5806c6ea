"""`tileplan check` on a report's `what_if` (docs/report-format.md): its baseline
re-derived, its rows (other plans) typed and their margins consistent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tileplan.check.band import CheckedBand, check_rows
from tileplan.check.result import Add, is_int, show

_OUTCOME_INTS = ("peak", "budget", "margin", "tile", "step", "interleaved_peak")


def check_what_if(extra: Mapping[str, Any], baseline: dict[str, Any], add: Add,
                  band: CheckedBand | None = None) -> None:
    """`what_if`: `baseline` (this plan's own outcome: re-derived here, all but its
    `command`) and `rows` (other plans: typed, `margin` = `budget` - `peak`, the
    margin's place in the verdict's error `band` re-derived; a row that could not be
    planned holds `knob`, `value`, `command` and a string `error`, and no outcome)."""
    if "what_if" not in extra:
        return
    w = extra["what_if"]
    if not isinstance(w, dict) or not isinstance(w.get("rows"), list) or not isinstance(w.get("baseline"), dict):
        add("disagree", "what_if", f"expected an object with a baseline object and a rows list, found {show(w)}")
        return
    entries = [("what_if.baseline", w["baseline"], ())] + [
        (f"what_if.rows[{i}]", r, ("knob", "value")) for i, r in enumerate(w["rows"])]
    check_rows(band, [(place, r) for place, r, _ in entries if isinstance(r, dict) and "error" not in r], add)
    for place, r, labels in entries:
        if not isinstance(r, dict):
            add("disagree", place, f"expected an object, found {show(r)}")
            continue
        if labels and "error" in r:
            _check_unplanned(place, r, add)
            continue
        for key in (*labels, "scope", "command"):
            if not isinstance(r.get(key), str):
                add("disagree", f"{place}.{key}", f"expected a string, found {show(r.get(key))}")
        if not isinstance(r.get("fits"), bool):
            add("disagree", f"{place}.fits", f"expected true or false, found {show(r.get('fits'))}")
        for key in _OUTCOME_INTS:
            if not (r.get(key) is None or is_int(r.get(key))) or (key == "budget" and not is_int(r.get(key))):
                add("disagree", f"{place}.{key}", f"expected an integer{'' if key == 'budget' else ' or null'}, "
                                                  f"found {show(r.get(key))}")
        if all(is_int(r.get(k)) for k in ("peak", "budget", "margin")) and r["margin"] != r["budget"] - r["peak"]:
            add("disagree", f"{place}.margin", f"reports {r['margin']}; budget {r['budget']} - peak {r['peak']} = "
                                               f"{r['budget'] - r['peak']}")
    for key in sorted(baseline):
        reported = w["baseline"].get(key)
        if reported != baseline[key] or type(reported) is not type(baseline[key]):
            add("disagree", f"what_if.baseline.{key}", f"reports {show(reported)}; re-derived {show(baseline[key])}")


def _check_unplanned(place: str, r: dict[str, Any], add: Add) -> None:
    """A what-if row that could not be planned: its knob, value, command and why, all
    strings, and none of a plan's figures."""
    for key in ("knob", "value", "command", "error"):
        if not isinstance(r.get(key), str):
            add("disagree", f"{place}.{key}", f"expected a string, found {show(r.get(key))}")
    for key in sorted(set(r) - {"knob", "value", "command", "error"}):
        add("disagree", f"{place}.{key}", f"given, but the row was not planned (it has an error): found {show(r[key])}")
