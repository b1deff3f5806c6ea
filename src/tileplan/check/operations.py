"""`tileplan check` on the report's `operations` (docs/report-format.md): each
operation typed, in ascending index, its step range exactly its steps, all run its
execution count, and every step's source a listed operation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tileplan.check.result import Add, is_int, show


def check_operations(extra: Mapping[str, Any], source: np.ndarray, execution_count: np.ndarray, add: Add) -> None:
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
