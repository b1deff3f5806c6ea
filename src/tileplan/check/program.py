"""`tileplan check` on a report's `scope`, `program` and `rejected_operation`
(docs/report-format.md): shapes and types, so that no view meets a field it cannot
read, and the rejected operation the one its scope names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tileplan.check.result import Add, is_int, show

_SCOPE = re.compile(r"rejected-op(0|[1-9][0-9]{0,17})")


def rejected_index(scope: str) -> int | None:
    """N of `rejected-op<N>`, None for any other scope."""
    m = _SCOPE.fullmatch(scope)
    return int(m.group(1)) if m else None


def check_scope(scope: str, extra: Mapping[str, Any], add: Add) -> None:
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


def check_program(extra: Mapping[str, Any], add: Add) -> None:
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
