"""Report version 2: the compact form (docs/report-format-v2.md).

Written and read back it gives the same numbers as version 1 of the same plan; its
text is deterministic; `check` re-derives it and catches a tampered column; `diff`
sees no change between the two versions of one plan; hostile columns are one-line
errors with bounded memory.
"""

from __future__ import annotations

import base64
import json
import zlib
from importlib import resources

import jsonschema
import numpy as np
import pytest

from tileplan.cli.main import main
from tileplan.errors import InputError
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.model.machine import IPU21
from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic
from tileplan.model.timeline import StepTable
from tileplan.planner.plan import plan_program
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.views.diff import diff_reports
from tileplan.report.format import Report, from_json_text, read_report, report_bytes, to_json_text
from tileplan.report.format_v2 import pack_column

from helpers import plan


@pytest.fixture(scope="module")
def so400m() -> Report:
    return build_report(plan())


@pytest.fixture(scope="module")
def chain() -> Report:
    program = build_synthetic(SyntheticConfig(3000))
    return build_report(plan_program(program, IPU21, policy("default"), Options()))


def v2_text(report: Report) -> str:
    return report_bytes(report, 2).decode("utf-8")


def decode(column: object) -> list[int | None]:
    """A column of a version-2 file as integers (None for null: -1 in a packed column)."""
    if isinstance(column, list):
        return column
    assert isinstance(column, dict)
    raw = zlib.decompress(base64.b64decode(column["zlib"]))
    arr = np.frombuffer(raw, dtype=f"<i{column['width']}").astype(np.int64)
    if column["delta"]:
        arr = np.cumsum(arr)
    return [None if x == -1 else int(x) for x in arr.tolist()]


def schema() -> dict:
    return json.loads(resources.files("tileplan.report").joinpath("report-v2.schema.json").read_text())


# the same numbers ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["so400m", "chain"])
def test_v2_reads_back_to_the_numbers_of_v1(name, request):
    report = request.getfixturevalue(name)
    v1 = json.loads(to_json_text(report))
    back = from_json_text(v2_text(report), "r.json")
    assert isinstance(back.steps, StepTable) and back.version == 2
    again = json.loads(to_json_text(back))
    assert again.pop("version") == 2 and v1.pop("version") == 1
    assert again == v1  # every value, step, live set, usage, peak, exact figure and section
    # each distinct layout and precision text parsed once: values share the objects
    assert len({id(v.layout) for v in back.values}) == len({v.layout.to_text() for v in back.values})
    assert len({id(v.precision) for v in back.values}) == len({v.precision.to_text() for v in back.values})


@pytest.mark.parametrize("name", ["so400m", "chain"])
def test_v2_is_deterministic_and_smaller(name, request):
    report = request.getfixturevalue(name)
    text = v2_text(report)
    assert v2_text(report) == text
    assert report_bytes(from_json_text(text), 2).decode("utf-8") == text
    assert report_bytes(from_json_text(to_json_text(report)), 2).decode("utf-8") == text  # v1 -> v2
    # a third of v1 or less; so400m under half: each vector PopART creates linearly
    # starts on its own tile, so its layout is a text of its own in the layouts table
    assert len(text) < len(to_json_text(report)) / (2 if name == "so400m" else 3)


def test_the_schema_accepts_v2_and_names_what_is_unknown(so400m, chain):
    for report in (so400m, chain):
        jsonschema.validate(json.loads(v2_text(report)), schema())
    doc = json.loads(v2_text(chain))
    doc["timeline"]["values"]["surprise"] = [1]
    with pytest.raises(jsonschema.ValidationError, match="surprise"):
        jsonschema.validate(doc, schema())


# check and diff ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["so400m", "chain"])
def test_check_passes_on_v2(name, request):
    result = check_report(from_json_text(v2_text(request.getfixturevalue(name))))
    assert result.consistent, [f.to_text() for f in result.findings][:5]
    assert result.values_agreeing == result.values_total and result.steps_agreeing == result.steps_total


def test_the_verbs_read_v2(tmp_path, capsys, so400m):
    path = tmp_path / "so.json"
    path.write_bytes(report_bytes(so400m, 2))
    assert main(["check", str(path)]) == 0
    assert "consistent: every number re-derives" in capsys.readouterr().out
    v1 = tmp_path / "so.v1.json"
    v1.write_text(to_json_text(so400m))
    assert main(["diff", str(v1), str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["counts"] == {"added": 0, "removed": 0, "resized": 0, "changed": 0, "unchanged": len(so400m.values)}
    assert not doc["verdict"]["changed"] and doc["program"] == []
    assert all(p["delta"] == 0 for p in doc["peaks"])


def test_diff_between_the_two_versions_of_a_chain_shows_no_change(chain):
    d = diff_reports(from_json_text(to_json_text(chain)), from_json_text(v2_text(chain)))
    assert d.values == () and d.unchanged == len(chain.values) and not d.verdict_changed
    assert d.a_steps == d.b_steps == len(chain.steps)


def test_plan_writes_v2_on_request(tmp_path, capsys):
    out = tmp_path / "two.json"
    assert main(["plan", "--layers", "2", "--no-what-if", "--report-version", "2", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["version"] == 2 and isinstance(doc["timeline"]["steps"]["source"], dict)
    assert read_report(str(out)).version == 2
    capsys.readouterr()
    assert main(["plan", "--report-version", "3", "-o", str(tmp_path / "bad.json")]) == 2
    assert "--report-version" in capsys.readouterr().err


def _tampered(report: Report, edit) -> int:
    """What check says of the v2 text with one column edited: 0, 1 or 2 (unreadable)."""
    doc = json.loads(v2_text(report))
    edit(doc)
    try:
        return 0 if check_report(from_json_text(json.dumps(doc))).consistent else 1
    except InputError:
        return 2


def _bump(table: str, column: str, row: int, by: int = 1):
    def edit(doc: dict) -> None:
        section = doc["timeline"][table] if table in ("values", "steps") else doc["exact"]["steps"]
        values = decode(section[column])
        values[row] = (values[row] or 0) + by
        section[column] = values  # a plain list: version 2 reads both forms
    return edit


@pytest.mark.parametrize("table,column", [
    ("steps", "usage_standard"), ("steps", "usage_interleaved"), ("steps", "scratch_standard"),
    ("values", "shard_bytes"), ("values", "bytes"), ("exact", "total"), ("exact", "standard"),
])
def test_check_catches_a_tampered_v2_column(chain, table, column):
    n = len(chain.steps) if table != "values" else len(chain.values)
    for row in (0, n // 3, n - 1):
        assert _tampered(chain, _bump(table, column, row, 64)) == 1, (column, row)


def test_check_catches_a_moved_live_interval(chain):
    values = json.loads(v2_text(chain))["timeline"]["values"]
    last = decode(values["last"])
    first = decode(values["first"])
    k = next(i for i in range(len(last)) if last[i] - first[i] >= 2 and last[i] < len(chain.steps) - 1)
    assert _tampered(chain, _bump("values", "last", k, 1)) == 1
    assert _tampered(chain, _bump("values", "first", k, 1)) == 1
    assert _tampered(chain, _bump("values", "layout", k, 1)) in (1, 2)


# hostile version-2 inputs ----------------------------------------------------------------

def _packed(values: list[int], width: int = 8, length: int | None = None, delta: bool = False,
            data: bytes | None = None) -> dict:
    raw = np.array(values, dtype=f"<i{width}").tobytes() if data is None else data
    return {"length": len(values) if length is None else length, "width": width, "delta": delta,
            "zlib": base64.b64encode(zlib.compress(raw)).decode("ascii")}


def _set(path: tuple, value: object):
    def edit(doc: dict) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


@pytest.fixture(scope="module")
def small(so400m) -> dict:
    return json.loads(v2_text(so400m))


HOSTILE = [
    (("timeline", "values", "layout"), lambda n, s: [999] * n,
     r"timeline\.values\.layout\[0\]: expected an integer in \[0, \d+\], found 999"),
    (("timeline", "values", "last"), lambda n, s: [s] * n,
     r"timeline\.values\.last\[0\]: expected an integer in \[0, \d+\], found \d+"),
    (("timeline", "values", "first"), lambda n, s: _packed([0] * (n - 1)),
     r"timeline\.values\.first\.length: length \d+ differs from the table's count \d+"),
    (("timeline", "values", "copies"), lambda n, s: [1] * (n + 1),
     r"timeline\.values\.copies: expected \d+ entries \(the table's count\), found \d+"),
    (("timeline", "steps", "source"), lambda n, s: _packed([0] * s, data=bytes(8 * s + 8)),
     r"timeline\.steps\.source\.zlib: decompresses to more than \d+ bytes; length \d+ x width 8 is \d+"),
    (("timeline", "steps", "source"), lambda n, s: _packed([0] * s, data=bytes(8 * s - 3)),
     r"decompresses to \d+ bytes; length \d+ x width 8 is \d+"),
    (("timeline", "steps", "operation"), lambda n, s: {**_packed([0] * s), "zlib": "not base64!"},
     r"timeline\.steps\.operation\.zlib: not base64 text"),
    (("timeline", "steps", "operation"), lambda n, s: {**_packed([0] * s), "zlib": base64.b64encode(b"junk").decode()},
     r"timeline\.steps\.operation\.zlib: not zlib data"),
    (("timeline", "steps", "operation"), lambda n, s: _packed([0] * s, width=3, data=bytes(3 * s)),
     r"timeline\.steps\.operation\.width: width must be one of 1, 2, 4, 8, found 3"),
    (("timeline", "steps", "usage_standard"), lambda n, s: [-5] * s,
     r"timeline\.steps\.usage_standard\[0\]: expected an integer in \[0, \d+\] or null, found -5"),
    (("timeline", "tables", "roles"), lambda n, s: ["boss"],
     r"timeline\.tables\.roles\[0\]: role must be one of input, parameter, buffer, .*, found \"boss\""),
    (("timeline", "tables", "layouts", 0), lambda n, s: "Layout { order",
     r"timeline\.tables\.layouts\[0\]: layout: expected"),
    (("timeline", "values", "id"), lambda n, s: [7] * n, r"timeline\.values\.id: value id 7 appears twice"),
    (("exact", "steps", "worst_tile"), lambda n, s: [5000] * s,
     r"exact\.steps\.worst_tile\[0\]: expected an integer in \[0, 1471\], found 5000"),
]


@pytest.mark.parametrize("path,make,message", HOSTILE, ids=[h[2][:40] for h in HOSTILE])
def test_hostile_v2_is_one_line_exit_2(tmp_path, capsys, small, path, make, message):
    doc = json.loads(json.dumps(small))
    n, s = doc["timeline"]["values"]["count"], doc["timeline"]["steps"]["count"]
    _set(path, make(n, s))(doc)
    bad = tmp_path / "bad-v2.json"
    bad.write_text(json.dumps(doc))
    assert main(["check", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in out + err, err
    import re

    assert re.search(message, err), err


def test_a_zlib_bomb_is_refused_before_it_is_decompressed(tmp_path, capsys, small):
    doc = json.loads(json.dumps(small))
    count = 1 << 28  # 2 GiB of int64 from a few hundred kilobytes of zlib
    doc["timeline"]["steps"]["count"] = count
    doc["timeline"]["steps"]["source"] = {"length": count, "width": 8, "delta": False,
                                          "zlib": base64.b64encode(zlib.compress(bytes(1 << 20))).decode()}
    bad = tmp_path / "bad-bomb.json"
    bad.write_text(json.dumps(doc))
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "decoding 2147483648 bytes would pass the" in err and err.count("\n") == 1


def test_pack_column_falls_back_to_a_plain_list_beyond_int64():
    assert json.loads(pack_column([1, None, 2**64 - 1])) == [1, None, 2**64 - 1]
    packed = json.loads(pack_column([5, None, 7], delta=True))
    assert decode(packed) == [5, None, 7]


def _bump_operations(column: str, row: int, by: int = 1):
    def edit(doc: dict) -> None:
        values = decode(doc["operations"][column])
        values[row] += by
        doc["operations"][column] = values
    return edit


@pytest.mark.parametrize("column", ["source", "execution_count"])
def test_check_catches_a_tampered_step_column(chain, column):
    for row in (1, len(chain.steps) // 2):
        assert _tampered(chain, _bump("steps", column, row, 1)) == 1, (column, row)


@pytest.mark.parametrize("column", ["first", "last", "execution_count", "index"])
def test_check_catches_a_tampered_operations_column(chain, column):
    n = len(chain.extra["operations"])
    for row in (1, n // 2):
        assert _tampered(chain, _bump_operations(column, row, 1)) in (1, 2), (column, row)


def test_a_version_2_report_is_streamed_and_a_name_that_is_not_text_leaves_nothing(tmp_path) -> None:
    import pytest

    from tileplan.errors import InputError
    from tileplan.app.request import PlanRequest
    from tileplan.app.build import build_report
    from tileplan.report.format import report_bytes, write_report

    report = build_report(PlanRequest(model="synthetic:500").plan())
    good = tmp_path / "good.json"
    write_report(good, report, 2)
    assert good.read_bytes() == report_bytes(report, 2)
    values = list(report.values)
    values[-1] = values[-1]._replace(name="bad \udc80 name")
    import dataclasses

    bad = tmp_path / "bad.json"
    with pytest.raises(InputError, match="lone surrogate"):
        write_report(bad, dataclasses.replace(report, values=tuple(values)), 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.json"]


def test_the_python_api_gives_either_version() -> None:
    import tileplan
    from tileplan.report.format import from_json_text

    result = tileplan.plan("synthetic:500")
    v1, v2 = result.to_json(), result.to_json(version=2)
    assert '"version":1' in v1[:20] and '"version":2' in v2[:20]
    assert from_json_text(v2).steps == from_json_text(v1).steps


def test_plan_writes_version_1_by_default_and_version_2_past_the_limit(tmp_path, monkeypatch) -> None:
    import json

    import tileplan.cli.plan as plan_cli
    from tileplan.cli.main import main

    small, large, forced = tmp_path / "s.json", tmp_path / "l.json", tmp_path / "f.json"
    assert main(["plan", "synthetic:500", "--no-what-if", "-o", str(small)]) == 0
    assert json.loads(small.read_text())["version"] == 1
    monkeypatch.setattr(plan_cli, "V1_LIMIT", 400)
    assert main(["plan", "synthetic:500", "--no-what-if", "-o", str(large)]) == 0
    assert json.loads(large.read_text())["version"] == 2
    assert main(["plan", "synthetic:500", "--no-what-if", "--report-version", "1", "-o", str(forced)]) == 0
    assert json.loads(forced.read_text())["version"] == 1
