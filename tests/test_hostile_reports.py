"""Hostile reports: whatever a field holds, reading gives a Report or one InputError,
and checking what was read gives findings, never a crash."""

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tileplan.errors import InputError
from tileplan.check.driver import check_report
from tileplan.report.format import from_json_text

from conftest import REFERENCE
from helpers import json_paths, json_values, plan, reads_or_fails_in_one_line, report_json, with_field

DOC = json.loads(REFERENCE.read_text())

PATHS = [p for p in json_paths(DOC, 3) if p]  # the first few of each list are enough


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), json_values)
def test_any_field_replaced_reads_or_fails_in_one_line(path, value):
    reads_or_fails_in_one_line(json.dumps(with_field(DOC, path, value)))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([p for p in PATHS if p[-1] in ("layout", "precision")]), st.text(max_size=200))
def test_any_text_in_a_layout_or_precision(path, text):
    try:
        from_json_text(json.dumps(with_field(DOC, path, text)), "fuzz.json")
    except InputError as e:
        assert "\n" not in str(e)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 70), st.integers(0, 40), st.integers(-5, 5000))
def test_any_number_in_a_layout_changed(value_index, number_index, number):
    error = layout_number_changed(DOC, value_index, number_index, number)
    assert error is None or "\n" not in str(error)


def layout_number_changed(doc: dict, value_index: int, number_index: int, number: int) -> InputError | None:
    """Value `value_index`'s layout with one of its numbers (the `number_index`-th,
    cyclically) replaced by `number`: the error reading it, or None when it reads and
    `check` runs to its findings."""
    v = doc["timeline"]["values"][value_index]
    numbers = list(re.finditer(r"-?\d+", v["layout"]))
    m = numbers[number_index % len(numbers)]
    layout = v["layout"][:m.start()] + str(number) + v["layout"][m.end():]
    try:
        report = from_json_text(json.dumps(with_field(doc, ("timeline", "values", value_index, "layout"), layout)),
                                "fuzz.json")
    except InputError as e:
        return e
    check_report(report)
    return None


#: a default-policy plan's report: its vectors are created linearly (a Leading spread,
#: a first tile), the layout text the reference never writes
LINEAR_DOC = report_json(plan(layers=1))
LINEAR = [i for i, v in enumerate(LINEAR_DOC["timeline"]["values"]) if "first_tile" in v["layout"]]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(LINEAR), st.integers(0, 40), st.integers(-5, 5000))
def test_any_number_in_a_linear_mapping_changed_reads_or_fails_in_one_line(value_index, number_index, number):
    """min_blocks 0, a first tile beyond the tiles, a partition count that breaks the
    tiling: one line naming the value, or a report `check` reads to its findings."""
    error = layout_number_changed(LINEAR_DOC, value_index, number_index, number)
    assert error is None or ("\n" not in str(error) and f"timeline.values[{value_index}]." in str(error))
