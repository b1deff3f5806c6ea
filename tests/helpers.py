"""Small builders shared by the tests."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from tileplan.errors import InputError
from tileplan.kernel.options import AttentionProducts, GemmOutputPacking, Options
from tileplan.lowering.policy import policy
from tileplan.builtins import siglip
from tileplan.model.machine import IPU21, Machine
from tileplan.model.precision import from_option
from tileplan.planner.plan import Plan, plan_program
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.report.format import from_json_text, to_json_text

_CACHE: dict[tuple, Plan] = {}


def plan(model: str = siglip.DEFAULT_MODEL, layers: int | None = None, weights: str = "f8f143:-4",
         policy_name: str = "default", attention: str = "Automatic", packing: str = "Native",
         machine: Machine = IPU21, map_head: bool = True) -> Plan:
    key = (model, layers, weights, policy_name, attention, packing, machine, map_head)
    if key not in _CACHE:
        cfg = siglip.config(model, layers=layers, map_head=map_head)
        program = siglip.build_vit(cfg, from_option(weights))
        options = Options(GemmOutputPacking(packing), AttentionProducts(attention))
        result = plan_program(program, machine, policy(policy_name), options)
        # every report the suite writes must pass `tileplan check`
        findings = check_report(round_trip(result))
        assert findings.consistent, [f.to_text() for f in findings.findings if f.kind != "rejected"][:5]
        if result.exact is not None:  # exact worst tile <= estimate, step by step
            for step, worst in zip(result.steps, result.exact.steps):
                assert worst.total <= step.usage["standard"] + step.usage["interleaved"], step.index
                assert worst.max_interleaved <= step.usage["interleaved"], step.index
        _CACHE[key] = result
    return _CACHE[key]


def report_json(p: Plan) -> dict:
    return json.loads(to_json_text(build_report(p)))


def round_trip(p: Plan):
    return from_json_text(to_json_text(build_report(p)))


#: `with_field(doc, path, DELETE)` removes the field
DELETE = object()


def json_paths(node, per_list: int, prefix=()):
    """Every path into a JSON value (its first `per_list` entries of each list)."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from json_paths(v, per_list, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:per_list]):
            yield from json_paths(v, per_list, (*prefix, i))


def with_field(doc, path, value):
    """A deep copy of `doc` with the field at `path` set to `value` (or removed: DELETE)."""
    doc = json.loads(json.dumps(doc))
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        if isinstance(target, dict):
            del target[path[-1]]
        else:
            target.pop(path[-1])
    else:
        target[path[-1]] = value
    return doc


#: any JSON value, small: what a hostile report may hold in place of a field
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=6)


def reads_or_fails_in_one_line(text: str) -> None:
    """A report's text either reads, and then `check` finds (never raises), or fails
    with one line naming the file."""
    try:
        report = from_json_text(text, "fuzz.json")
    except InputError as e:
        assert "\n" not in str(e) and str(e).startswith("fuzz.json: ")
        return
    check_report(report)  # findings, not exceptions
