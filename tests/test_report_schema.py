"""The typed sections and the schemas generated from them: one declaration per
section reads it, writes it and describes it (`tileplan.report.sections`)."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from tileplan.errors import InputError
from tileplan.app.build import build_report
from tileplan.report.fields import Bounds
from tileplan.report.format import from_json_text, report_bytes, to_json_text
from tileplan.report.format_v1 import json_default
from tileplan.report.schema import FILES, schema_text, section_schemas
from tileplan.report.sections import SECTIONS, NonTensor, Operations, Placement, Verdict, WhatIf
from tileplan.app.whatif import with_what_if

from helpers import plan


def _schema(version: int) -> dict:
    return json.loads(resources.files("tileplan.report").joinpath(FILES[version]).read_text())


@pytest.mark.parametrize("version", [1, 2])
def test_the_schema_files_are_what_the_sections_generate(version):
    """Run `python -m tileplan.report.schema` after changing a section."""
    assert resources.files("tileplan.report").joinpath(FILES[version]).read_text() == schema_text(version)
    assert set(section_schemas(version)) == set(SECTIONS) <= set(_schema(version)["properties"])


@pytest.fixture(scope="module")
def full():
    """A report with every section a plan that fits writes, what-if included."""
    from tileplan.app.request import PlanRequest

    request = PlanRequest(model="synthetic:500")
    planned = request.plan()
    return with_what_if(build_report(planned), request, planned)


def test_each_section_reads_back_what_it_wrote(full):
    bounds = Bounds(len(full.steps), full.tile_count)
    keys = [k for k in SECTIONS if k in full.extra]
    assert {"program", "operations", "verdict", "exact", "what_if", "non_tensor", "placement"} <= set(keys)
    for key in keys:
        section = full.sections.get(SECTIONS[key])
        assert section is not None, key
        written = json.dumps(section.to_json(), default=json_default)
        again = type(section).from_json(json.loads(written), key, bounds)
        assert json.dumps(again.to_json(), default=json_default) == written, key
    read = from_json_text(to_json_text(full))
    assert read.sections.verdict == full.sections.verdict and read.sections.what_if == full.sections.what_if


@pytest.mark.parametrize("version", [1, 2])
def test_a_full_report_validates_and_its_sections_are_typed_when_read(full, version):
    doc = json.loads(report_bytes(full, version))
    jsonschema.validate(doc, _schema(version))
    read = from_json_text(json.dumps(doc))
    s = read.sections
    assert isinstance(s.verdict, Verdict) and isinstance(s.operations, Operations)
    assert isinstance(s.what_if, WhatIf) and isinstance(s.placement, Placement)
    assert isinstance(s.non_tensor, NonTensor) and s.non_tensor.total == doc["non_tensor"]["total"]
    assert s.exact is not None and s.exact.steps is not None and s.exact.steps.shape == (len(read.steps), 4)
    assert s.operations.by_index[0].name == full.sections.operations.by_index[0].name


def test_an_operation_kind_of_any_operator_validates(full):
    """The schema once listed five kinds: an imported model's `softmax` failed it."""
    doc = json.loads(to_json_text(full))
    doc["operations"][0]["kind"] = "softmax"
    jsonschema.validate(doc, _schema(1))


def test_a_section_replaced_in_a_report_is_read_again():
    report = from_json_text(to_json_text(build_report(plan(layers=1))))
    assert report.sections.verdict is report.sections.verdict  # read once
    report.extra["what_if"] = [{"knob": "layers", "value": "2", "fits": True, "peak": 5, "margin": 1, "command": "c"}]
    assert [r.knob for r in report.sections.what_if.rows] == ["layers"] and report.sections.what_if.baseline is None
    report.extra["verdict"] = {"fits": "yes"}
    with pytest.raises(InputError, match=r"^verdict\.fits: expected true or false, found \"yes\"$"):
        report.sections.get(Verdict)
    report.extra["non_tensor"] = {"stack": "lots", "total": 2**64 - 1, "reserve": 49152}
    nt = report.sections.non_tensor  # read field by field: what is malformed is unknown
    assert (nt.stack, nt.total, nt.reserve, nt.vertex_code) == (None, None, 49152, None)
    report.extra["placement"] = [1, 2]
    assert report.sections.placement is None


def test_a_sweep_reads_back_what_it_wrote():
    from tileplan.app.request import PlanRequest
    from tileplan.planner.outcome import Outcome
    from tileplan.report.sections import Sweep
    from tileplan.app.build_whatif import sweep_section

    # the section is built from (knobs, outcome, command) rows: the report layer does
    # not know requests (the app layer passes each row's command)
    base = PlanRequest()
    combos = [({"weights": w, "layers": n}, Outcome(n == 2, "program", 5 * n, 10, 1, 2, None),
               base.with_(weights=w, layers=n).command())
              for w in ("f8f143:-4", "f16") for n in (2, 27)]
    doc = json.loads(json.dumps(sweep_section(base.command(), ["weights", "layers"], combos).to_json()))
    assert doc["base"] == base.command() and doc["knobs"] == ["weights", "layers"] and doc["rows"][1] == {
        "weights": "f8f143:-4", "layers": 27, "fits": False, "scope": "program", "peak": 135, "budget": 10,
        "margin": -125, "tile": 1, "step": 2, "interleaved_peak": None, "command": combos[1][2]}
    assert doc["rows"][1]["command"] == "tileplan plan siglip-so400m-patch14-384 --layers 27 --weights f8f143:-4"
    assert Sweep.from_json(doc).to_json() == doc
