"""The what-if never fails a plan: a row that cannot be planned says why in
its row (`what_if.rows[].error`), which both schemas describe, `check` reads, and the
plan's lines and the page show."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tileplan.app.request import PlanRequest
from tileplan.app.whatif import what_if
from tileplan.errors import InputError, ModelError
from tileplan.planner.outcome import outcome
from tileplan.render.terminal import render_headline
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.report.format import from_json_text, report_bytes, to_json_text
from tileplan.views.headline import build_headline
from tileplan.views.liveness import what_if_rows
from tileplan.app.build_whatif import what_if_section

SCHEMAS = Path(__file__).resolve().parent.parent / "src" / "tileplan" / "report"
BASE = PlanRequest(model="synthetic:500")


@pytest.fixture(scope="module")
def rows():
    def planner(request: PlanRequest):
        if request.gemm_output_packing == "packed":
            raise ModelError("this knob is not one of this model's\n(a second line folded)", "m.onnx")
        return request.plan()
    return what_if(BASE, planner)


def test_a_row_that_cannot_be_planned_says_why_and_the_others_plan(rows):
    unplanned = [r for r in rows if r.error is not None]
    assert [(r.knob, r.value) for r in unplanned] == [("gemm_output_packing", "packed")]
    assert unplanned[0].outcome is None
    assert unplanned[0].error == "m.onnx: this knob is not one of this model's (a second line folded)"
    assert all(r.outcome is not None for r in rows if r.error is None) and len(rows) > 1


def _report(rows):
    plan = BASE.plan()
    section = what_if_section(outcome(plan), BASE.command(), [(r.knob, r.value, r.outcome, r.request.command(),
                                                                r.error) for r in rows])
    return build_report(plan).with_sections(section)


@pytest.mark.parametrize("version", [1, 2])
def test_an_unplanned_row_validates_and_passes_check(rows, version):
    report = _report(rows)
    doc = json.loads(report_bytes(report, version))
    schema = json.loads((SCHEMAS / ("report.schema.json" if version == 1 else "report-v2.schema.json")).read_text())
    jsonschema.validate(doc, schema)
    row = next(r for r in doc["what_if"]["rows"] if "error" in r)
    assert set(row) == {"knob", "value", "command", "error"}
    assert row["command"].endswith("--gemm-output-packing packed")
    assert check_report(from_json_text(json.dumps(doc))).consistent
    typed = from_json_text(json.dumps(doc)).sections.what_if
    assert typed is not None and [r.error for r in typed.rows if r.error] == [row["error"]]


def test_check_names_a_plans_figure_in_an_unplanned_row(rows):
    doc = json.loads(to_json_text(_report(rows)))
    row = next(r for r in doc["what_if"]["rows"] if "error" in r)
    k = doc["what_if"]["rows"].index(row)
    row["peak"] = 12
    findings = [f.to_text() for f in check_report(from_json_text(json.dumps(doc), "bad.json")).findings]
    assert any(f"what_if.rows[{k}].peak: given, but the row was not planned" in f for f in findings), findings
    row["error"] = 3  # a reader meets no error of the wrong type: one line
    with pytest.raises(InputError, match=rf"^bad.json: what_if.rows\[{k}\].error: expected a string, found 3$"):
        from_json_text(json.dumps(doc), "bad.json")


def test_the_plans_lines_and_the_views_show_why(rows):
    report = _report(rows)
    view = {r.knob + " " + r.value: r for r in what_if_rows(report) or ()}
    assert view["gemm_output_packing packed"].error.startswith("m.onnx: this knob")
    lines = render_headline(build_headline(report))
    table = next(line for line in lines if line.lstrip().startswith("gemm_output_packing"))
    assert "not planned" in table
    assert ("  gemm_output_packing packed not planned: m.onnx: this knob is not one of this model's (a second line "
            "folded)") in lines
