"""`tileplan check` on Tenstorrent reports (check/tenstorrent.py): every report the
planner writes re-derives from the report and the documented rules alone, whatever its
verdict; a report changed anywhere (an address, a per-bank size, a CB region, the
message, the statistics, the buffers responsible, a peak) is named where it disagrees."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tileplan.app.tenstorrent.build import build_tt_report
from tileplan.check.tenstorrent import check_tt_report
from tileplan.report.tt_report import read_tt_report
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.plan import plan_tt

from tt_plan_support import PROGRAMS

N150 = load_device("n150", version="2026-04-21")


def report_json(name: str, version: str = "2026-04-21") -> dict[str, Any]:
    plan = plan_tt(PROGRAMS[name]().program(), load_device("n150", version=version))
    return json.loads(build_tt_report(plan, name, "tt-mlir", (("opt_level", 0),)).to_bytes())


def findings(obj: dict[str, Any]) -> list[str]:
    return [f.to_text() for f in check_tt_report(read_tt_report(obj)).findings]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("version", ["2025-04-25", "2025-10-03", "2026-04-21"])
def test_every_report_the_planner_writes_re_derives(name: str, version: str) -> None:
    obj = report_json(name, version)
    result = check_tt_report(read_tt_report(obj))
    assert result.consistent, [f.to_text() for f in result.findings]
    assert result.buffers_agreeing == sum(1 for _ in obj["buffers"]["name"])
    assert result.programs_agreeing == obj["programs"]["count"]


def test_a_moved_buffer_is_found_by_the_replay() -> None:
    obj = report_json("mlp")
    obj["buffers"]["address"][3] -= 32
    assert findings(obj) == [
        "disagree: buffers[3] (mlp.relu).address: the report gives 1372128, the rules give 1372160",
        "disagree: programs[1].lowest_l1: the report gives 1372160, the rules give 1372128"]  # by the report's own


def test_a_per_bank_size_off_by_a_page_is_found() -> None:
    obj = report_json("mlp")
    obj["buffers"]["bytes_per_bank"][0] += 2048
    assert findings(obj)[0] == ("disagree: buffers[0] (x).bytes_per_bank: the report gives 178176, the rules give "
                                "176128")


def test_a_cb_region_end_and_l1_in_use_are_re_derived() -> None:
    obj = report_json("mlp")
    obj["programs"]["cb_region_end"][1] += 16
    assert findings(obj) == ["disagree: programs[1].cb_region_end: the report gives 111920, the rules give 111904"]


def test_the_fragmentation_verdicts_figures_and_words_are_re_derived() -> None:
    obj = report_json("falcon_8044")
    obj["verdict"]["statistics"]["largest_free_block"] = 552960
    obj["verdict"]["message"] = obj["verdict"]["message"].replace("largest free block: 522240", "largest free block: "
                                                                  "552960")
    assert findings(obj) == [
        "disagree: verdict.statistics: the report gives (1329888, 417792, 912096, 552960), the rules give "
        "(1329888, 417792, 912096, 522240)",
        "disagree: verdict.message: the report gives Out of Memory: Not enough space to allocate 26542080 B L1 "
        "buffer across 48 banks, where each bank needs to store 552960 B, but bank size is 1329888 B (allocated: "
        "417792 B, free: 912096 B, largest free block: 552960 B), the rules give Out of Memory: Not enough space to "
        "allocate 26542080 B L1 buffer across 48 banks, where each bank needs to store 552960 B, but bank size is "
        "1329888 B (allocated: 417792 B, free: 912096 B, largest free block: 522240 B)"]


def test_a_verdict_calling_fragmentation_capacity_is_found() -> None:
    obj = report_json("falcon_8044")
    obj["verdict"]["kind"] = "capacity"
    assert findings(obj) == ["disagree: verdict.kind: the report gives capacity, the rules give fragmentation"]


def test_a_clash_the_report_hides_is_found() -> None:
    """A report claiming the clash program fits: tt-metal stops at that program."""
    obj = report_json("clash")
    obj["verdict"] = {"fits": True, "message": None, "kind": None, "buffer_type": None, "operation": None,
                      "program": None, "responsible": []}
    found = findings(obj)
    assert found == ["disagree: programs[0]: its circular buffers on core range [(x=0,y=0) - (x=7,y=8)] end at "
                     "111904 (L1 1499136 B, lowest L1 buffer 104448): tt-metal stops here, the report runs on"]


def test_the_buffers_responsible_and_the_peaks_are_re_derived() -> None:
    obj = report_json("bloom")
    obj["verdict"]["responsible"] = obj["verdict"]["responsible"][::-1]
    obj["memory"]["peaks"][2]["bytes_per_bank"] -= 1
    found = findings(obj)
    assert found[0].startswith("disagree: verdict.responsible: the report gives (9, 8, 7")
    assert found[1].startswith("disagree: memory.peaks: the report gives (('L1', 0, None), ('L1_SMALL', 0, None), "
                               "('DRAM', 1023999999, 9)")


def test_the_device_arithmetic_is_re_derived() -> None:
    obj = report_json("mlp")
    obj["device"]["l1_bank_size"] += 32
    assert findings(obj)[0] == "disagree: device.l1_bank_size: the report gives 1329920, the rules give 1329888"


@pytest.mark.parametrize("trace_region_size", [0, 2048, 50_000_000])
def test_reports_with_a_trace_re_derive(trace_region_size: int) -> None:
    plan = plan_tt(PROGRAMS["traced"]().program(), load_device("n150", trace_region_size=trace_region_size))
    obj = json.loads(build_tt_report(plan, "traced", "tt-mlir", ()).to_bytes())
    assert findings(obj) == []
    if trace_region_size == 2048:
        obj["verdict"]["trace"]["trace_buffers_size"] = 2000
        obj["verdict"]["message"] = obj["verdict"]["message"].replace("5120B", "2000B")
        assert findings(obj) == ["disagree: verdict: 2000 B of trace buffers fit the 2304 B region"]
