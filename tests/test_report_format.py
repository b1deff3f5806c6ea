import json
from importlib import resources

import jsonschema
import pytest

from tileplan.errors import InputError
from tileplan.report.format import from_json_text, read_report, to_json_dict, to_json_text

from conftest import REFERENCE


def schema():
    return json.loads(resources.files("tileplan.report").joinpath("report.schema.json").read_text())


def test_reads_the_reference(reference_json):
    report = read_report(str(REFERENCE))
    assert report.scope == "rejected-op0" and report.tile_count == 1472
    assert len(report.values) == 71 and len(report.steps) == 4
    assert report.steps[3].usage["interleaved"] == 33920
    assert report.values[67].storage_group == 0


def test_reference_fields_survive_a_write(reference_json):
    written = to_json_dict(read_report(str(REFERENCE)))
    for key, value in reference_json.items():
        assert written[key] == value, key
    assert written["rejections"] == []


def test_writing_is_deterministic():
    report = read_report(str(REFERENCE))
    assert to_json_text(report) == to_json_text(from_json_text(to_json_text(report)))


def test_schema_accepts_the_reference_and_written_reports(reference_json):
    jsonschema.validate(reference_json, schema())
    jsonschema.validate(json.loads(to_json_text(read_report(str(REFERENCE)))), schema())


def test_schema_rejects_a_missing_field(reference_json):
    broken = dict(reference_json)
    del broken["peak"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema())


def _mutated(reference_json, path, value):
    doc = json.loads(json.dumps(reference_json))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize("path,value,message", [
    (("timeline", "values", 3, "shape", 1), 0, r"timeline\.values\[3\]\.shape\[1\]: expected an integer in \[1,"),
    (("timeline", "values", 3, "shape", 1), -729, r"timeline\.values\[3\]\.shape\[1\]: expected an integer in \[1,"),
    (("timeline", "values", 3, "precision"), "F12", r"timeline\.values\[3\]\.precision: unknown precision 'F12'"),
    (("timeline", "values", 3, "layout"), "Layout { order: RowMajor",
     r"timeline\.values\[3\]\.layout: layout: expected"),
    (("version",), 3, "unsupported version 3; this tileplan reads versions 1 and 2"),
    (("timeline", "steps", 0, "live", 0), 999, r"live value 999 is not in timeline\.values"),
])
def test_bad_fields_are_located(reference_json, path, value, message):
    with pytest.raises(InputError, match=message):
        from_json_text(_mutated(reference_json, path, value), "r.json")


def test_truncated_json_is_located():
    with pytest.raises(InputError, match=r"^r\.json: not valid JSON: .* at line 1 column"):
        from_json_text(REFERENCE.read_text()[:1000], "r.json")


def test_hostile_json_shapes_are_input_errors():
    with pytest.raises(InputError, match="nested too deeply"):
        from_json_text("[" * 100000 + "]" * 100000, "deep.json")
    with pytest.raises(InputError, match="expected a JSON object, found list"):
        from_json_text("[]", "list.json")
    with pytest.raises(InputError, match=r"nan.json: not a number tileplan reads: NaN is not a JSON number"):
        from_json_text(REFERENCE.read_text().replace('"tile_count":1472', '"tile_count":NaN'), "nan.json")


def test_schema_accepts_full_tileplan_reports_and_nothing_unknown(tmp_path):
    from tileplan.cli.main import main

    for argv, name in ((["--weights", "f16"], "f16.json"), (["--layers", "4", "--policy", "reference"], "ref.json")):
        out = tmp_path / name
        assert main(["plan", *argv, "--layers", "2", "-o", str(out)] if "--layers" not in argv
                    else ["plan", *argv, "-o", str(out)]) == 0
        doc = json.loads(out.read_text())
        jsonschema.validate(doc, schema())
    doc["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError, match="surprise"):
        jsonschema.validate(doc, schema())


def test_a_layout_on_another_tile_count_is_an_input_error(reference_json):
    doc = json.loads(json.dumps(reference_json))
    doc["tile_count"] = 1216
    with pytest.raises(InputError, match=r"timeline\.values\[0\]\.layout: layout tile_count 1472 differs from the "
                                         r"report's tile_count 1216"):
        from_json_text(json.dumps(doc), "t.json")


@pytest.mark.parametrize("version", ["1", "2"])
def test_a_report_of_any_size_validates_against_its_schema(tmp_path, monkeypatch, version):
    """Past the what-if limit (200,000 values) `plan` says in `what_if_skipped` why the
    report has no what-if table; the schema of either version takes that section."""
    import tileplan.cli.plan as plan_cli
    from tileplan.cli.main import main

    monkeypatch.setattr(plan_cli, "WHAT_IF_LIMIT", 1000)
    out = tmp_path / "large.json"
    assert main(["plan", "synthetic:3000", "--report-version", version, "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["version"] == int(version) and doc["what_if_skipped"]["limit"] == 1000
    name = "report.schema.json" if version == "1" else "report-v2.schema.json"
    jsonschema.validate(doc, json.loads(resources.files("tileplan.report").joinpath(name).read_text()))
