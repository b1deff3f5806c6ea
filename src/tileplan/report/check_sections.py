"""`tileplan check` on the sections people's views read: `scope`, `program`,
`operations`, `rejected_operation` and `what_if` (docs/report-format.md). Shapes and
types first, so that no renderer meets a field it cannot read; then the rules that tie
them to the timeline (an operation's step range is exactly its steps).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from tileplan.report.check_result import is_int, show

Add = Callable[[str, str, str], None]  # (kind, place, message)

_SCOPE = re.compile(r"rejected-op(0|[1-9][0-9]{0,17})")


def rejected_index(scope: str) -> int | None:
    """N of `rejected-op<N>`, None for any other scope."""
    m = _SCOPE.fullmatch(scope)
    return int(m.group(1)) if m else None


def check_scope(scope: str, extra: dict[str, Any], add: Add) -> None:
    """`scope` is `program` or `rejected-op<N>`; `rejected_operation`, when given,
    names operation N with a name and a reason, and is absent from a whole program."""
    index = rejected_index(scope)
    if scope != "program" and index is None:
        add("disagree", "scope", f"expected program or rejected-op<N>, found {show(scope)}")
    if "rejected_operation" not in extra:
        return
    r = extra["rejected_operation"]
    if scope == "program":
        add("disagree", "rejected_operation", "given, but the scope is program (every operation was planned)")
        return
    if not isinstance(r, dict):
        add("disagree", "rejected_operation", f"expected an object, found {show(r)}")
        return
    for key, ok, expected in (("index", is_int(r.get("index")), "an integer"),
                              ("name", isinstance(r.get("name"), str), "a string"),
                              ("reason", isinstance(r.get("reason"), str), "a string")):
        if not ok:
            add("disagree", f"rejected_operation.{key}", f"expected {expected}, found {show(r.get(key))}")
    if is_int(r.get("index")) and index is not None and r["index"] != index:
        add("disagree", "rejected_operation.index", f"reports {r['index']}; the scope {scope} names operation {index}")


def check_program(extra: dict[str, Any], add: Add) -> None:
    """`program`: an object with a string `name`; every field a string, an integer,
    true/false or null (views print them as text)."""
    if "program" not in extra:
        return
    p = extra["program"]
    if not isinstance(p, dict):
        add("disagree", "program", f"expected an object, found {show(p)}")
        return
    if not isinstance(p.get("name"), str):
        add("disagree", "program.name", f"expected a string, found {show(p.get('name'))}")
    for key in sorted(p):
        if not (p[key] is None or isinstance(p[key], (str, int))):  # bool is an int
            add("disagree", f"program.{key}", f"expected a string, integer, boolean or null, found {show(p[key])}")


def check_operations(extra: dict[str, Any], source: np.ndarray, execution_count: np.ndarray, add: Add) -> None:
    """`operations`: objects in ascending `index`, each with `origin`, `name`, `kind`,
    `execution_count` and `steps` [first, last]; the steps in [first, last] are
    exactly the steps whose `source` is that operation, all with its execution count;
    every step's source is a listed operation. `source` and `execution_count`: the
    steps' columns (one pass over them, whatever the number of operations)."""
    if "operations" not in extra:
        return
    ops = extra["operations"]
    if not isinstance(ops, list):
        add("disagree", "operations", f"expected a list, found {show(ops)}")
        return
    n = len(source)
    # runs of equal sources: a source's steps are consecutive when it has one run
    starts = np.flatnonzero(np.r_[True, source[1:] != source[:-1]]) if n else np.zeros(0, dtype=np.int64)
    ends = np.r_[starts[1:], n] - 1 if n else starts
    spans: dict[int, list[int]] = {}
    runs: dict[int, int] = {}
    for a, b in zip(starts.tolist(), ends.tolist()):
        src = int(source[a])
        spans.setdefault(src, [a, b])[1] = b
        runs[src] = runs.get(src, 0) + 1
    listed: set[int] = set()
    previous = -1
    steady: list[tuple[int, int, int, int]] = []  # (operation position, first, last, execution count)
    for i, o in enumerate(ops):
        place = f"operations[{i}]"
        if not (type(o) is dict and type(o.get("index")) is int and o["index"] >= 0 and type(o.get("origin")) is int
                and type(o.get("name")) is str and type(o.get("kind")) is str
                and type(o.get("execution_count")) is int and o["execution_count"] >= 1
                and type(o.get("steps")) is list and len(o["steps"]) == 2
                and type(o["steps"][0]) is int and type(o["steps"][1]) is int):
            if not _well_formed(o, place, add):
                continue
        index, (first, last) = o["index"], o["steps"]
        if index <= previous:
            add("disagree", f"{place}.index", f"reports {index}; expected ascending indices, after {previous}")
        previous = max(previous, index)
        listed.add(index)
        span = spans.get(index)
        if span is None:
            add("disagree", f"{place}.steps", f"reports {show(o['steps'])}; no step has source {index}")
            continue
        if span[0] != first or span[1] != last:
            add("disagree", f"{place}.steps", f"reports {show(o['steps'])}; the steps with source {index} run "
                                             f"from {span[0]} to {span[1]}")
            continue
        if runs[index] > 1:
            others = np.flatnonzero(source[first:last + 1] != index)
            k = first + int(others[0])
            add("disagree", f"{place}.steps", f"[{first}, {last}] holds step {k} of operation "
                                             f"{int(source[k])}; an operation's steps are consecutive")
        steady.append((i, first, last, o["execution_count"]))
    if steady:
        # each listed operation's steps run its execution count: one comparison over the steps
        huge = execution_count.dtype == object or max(count for *_, count in steady) >= 1 << 62
        table = np.array(steady, dtype=object if huge else np.int64)
        expected = np.zeros(n, dtype=table.dtype)
        covered = np.zeros(n + 1, dtype=np.int64)
        for (_, first, last, count) in steady if table.dtype == object else ():
            expected[first:last + 1] = count
        if table.dtype != object:
            lengths = table[:, 2] - table[:, 1] + 1
            at = np.repeat(table[:, 1], lengths) + (np.arange(int(lengths.sum()))
                                                    - np.repeat(np.cumsum(lengths) - lengths, lengths))
            expected[at] = np.repeat(table[:, 3], lengths)
            np.add.at(covered, table[:, 1], 1)
            np.add.at(covered, table[:, 2] + 1, -1)
        wrong = np.flatnonzero((expected != execution_count) & (np.cumsum(covered[:-1]) > 0)) \
            if table.dtype != object else np.flatnonzero(expected != execution_count)
        starts_of = {first: (i, count) for i, first, _, count in steady}
        reported = set()
        for k in wrong.tolist():
            first = spans[int(source[k])][0]
            if first not in starts_of or first in reported:
                continue
            reported.add(first)
            i, count = starts_of[first]
            counts = sorted({int(c) for c in execution_count[first:spans[int(source[k])][1] + 1].tolist()
                             if c != count})
            add("disagree", f"operations[{i}].execution_count", f"reports {count}; its steps run {counts[0]} times")
    for src in sorted(set(spans) - listed):
        add("disagree", f"timeline.steps[{spans[src][0]}].source",
            f"operation {src} is not listed under operations")


def _well_formed(o: object, place: str, add: Add) -> bool:
    """An operation's fields typed (a finding for each that is not)."""
    if not isinstance(o, dict):
        add("disagree", place, f"expected an object, found {show(o)}")
        return False
    bad = False
    for key, ok, expected in (
            ("index", is_int(o.get("index")) and o["index"] >= 0, "an integer >= 0"),
            ("origin", is_int(o.get("origin")), "an integer"),
            ("name", isinstance(o.get("name"), str), "a string"),
            ("kind", isinstance(o.get("kind"), str), "a string"),
            ("execution_count", is_int(o.get("execution_count")) and o["execution_count"] >= 1, "an integer >= 1"),
            ("steps", isinstance(o.get("steps"), list) and len(o["steps"]) == 2
             and all(is_int(x) for x in o["steps"]), "[first, last] step indices")):
        if not ok:
            add("disagree", f"{place}.{key}", f"expected {expected}, found {show(o.get(key))}")
            bad = True
    return not bad


_OUTCOME_INTS = ("peak", "budget", "margin", "tile", "step", "interleaved_peak")


def check_what_if(extra: dict[str, Any], baseline: dict[str, Any], add: Add) -> None:
    """`what_if`: `baseline` (this plan's own outcome: re-derived here, all but its
    `command`) and `rows` (other plans: typed, `margin` = `budget` - `peak`; a row that
    could not be planned holds `knob`, `value`, `command` and a string `error`, and no
    outcome)."""
    if "what_if" not in extra:
        return
    w = extra["what_if"]
    if not isinstance(w, dict) or not isinstance(w.get("rows"), list) or not isinstance(w.get("baseline"), dict):
        add("disagree", "what_if", f"expected an object with a baseline object and a rows list, found {show(w)}")
        return
    entries = [("what_if.baseline", w["baseline"], ())] + [
        (f"what_if.rows[{i}]", r, ("knob", "value")) for i, r in enumerate(w["rows"])]
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


def check_memory_proportion(extra: dict[str, Any], budget_bytes: int, support_reserve_bytes: int, add: Add) -> None:
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
