"""The Tenstorrent report's format (report/tt_report.py, tt_sections.py, tt_tables.py):
its JSON built in one place and read back to the same value and bytes, valid against the
shipped schema (generated from the sections' declarations), and a malformed report
refused in one line naming the JSON path."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tileplan.app.tenstorrent.build import build_tt_report
from tileplan.errors import InputError
from tileplan.report.reading import read_any_report
from tileplan.report.tt_report import SCHEMA_FILE, read_tt_report, schema_text
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.plan import plan_tt

from tt_plan_support import PROGRAMS

N150 = load_device("n150", version="2026-04-21")


def report_json(name: str) -> dict[str, Any]:
    plan = plan_tt(PROGRAMS[name]().program(), N150)
    return json.loads(build_tt_report(plan, name, "tt-mlir", (("opt_level", 0),)).to_bytes())


def test_the_shipped_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), "run python -m tileplan.report.tt_report"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_report_reads_back_to_the_same_bytes_and_validates(name: str) -> None:
    obj = report_json(name)
    jsonschema.validate(obj, json.loads(SCHEMA_FILE.read_text()))
    report = read_tt_report(obj)
    assert json.loads(report.to_bytes()) == obj


def test_the_report_lists_each_buffer_with_what_the_issue_asks() -> None:
    obj = report_json("falcon_8044")
    b = obj["buffers"]
    assert {"buffer_type", "bytes", "page_bytes", "banks", "bytes_per_bank", "address", "use", "first_op",
            "last_op"} <= set(b)
    assert b["name"] == ["a", "hole", "b", "x", "w", "to_dram"]
    assert b["buffer_type"] == ["L1", "L1", "L1", "DRAM", "DRAM", "DRAM"]
    assert b["bytes_per_bank"][:3] == [208896, 522240, 208896]
    assert obj["verdict"]["kind"] == "fragmentation" and obj["verdict"]["buffer_type"] == "L1"
    assert obj["verdict"]["request"] == {"name": "lm.matmul", "buffer_type": "L1", "bytes": 26542080,
                                         "page_bytes": 2048, "banks": 48, "sharded": True, "bytes_per_bank": 552960,
                                         "need": 552960}
    assert obj["device"]["l1_bank_size"] == 1329888 and obj["device"]["l1_small_size"] == 65536
    assert obj["programs"]["cb_region_end"] == [103712 + 8192]  # the relu to DRAM ran; the matmul did not


@pytest.mark.parametrize("change,message", [
    (lambda o: o["buffers"]["address"].__setitem__(2, -1),
     "buffers.address[2]: expected an integer in [0, 2^64 - 1], found -1"),
    (lambda o: o["buffers"]["name"].pop(), "buffers.name: expected 4 entries (count), found 3"),
    (lambda o: o["verdict"].__setitem__("kind", "tired"),
     "verdict.kind: expected one of capacity, fragmentation, cb_grow, cb_clash, trace, shards, found \"tired\""),
    (lambda o: o.__setitem__("colour", 3), "report: unknown field 'colour'"),
    (lambda o: o.__setitem__("format", 9), "format: unsupported format 9"),
    (lambda o: o["verdict"].__setitem__("message", "x"),
     "verdict: expected a message and a kind exactly when it does not fit"),
    (lambda o: o["circular_buffers"]["ranges"].__setitem__(0, [0, 0, 7]),
     "circular_buffers.ranges[0]: expected x0, y0, x1, y1 for each core range, found 3 numbers"),
])
def test_a_malformed_report_is_one_line_naming_its_place(change, message, tmp_path) -> None:
    obj = report_json("mlp")
    change(obj)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(InputError) as e:
        read_any_report(str(path))
    assert str(e.value).startswith(f"{path}: {message}"), str(e.value)
    assert "\n" not in str(e.value)
