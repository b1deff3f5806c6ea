"""Hostile reports through the reader and every view: a real report with any one field
replaced, deleted or tampered reads into a Report whose summary, liveness (HTML) view,
diff and terminal text are built without error, or fails with one line naming the
file and the place. Never another exception."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tileplan.errors import TileplanError
from tileplan.model.machine import IPU21
from tileplan.render.terminal import render_diff, render_summary
from tileplan.app.build import build_report
from tileplan.views.diff import diff_reports
from tileplan.report.format import from_json_text
from tileplan.views.liveness import build_liveness
from tileplan.views.summary import build_summary

from helpers import DELETE, json_paths, plan, report_json, with_field

DOC = report_json(plan(layers=2))
DOC["what_if"] = {  # as `tileplan plan` adds it (the planner's report has none)
    "baseline": {"fits": True, "scope": "program", "peak": 1000, "budget": 586960, "margin": 585960, "tile": 3,
                 "step": 2, "command": "tileplan plan --layers 2"},
    "rows": [{"knob": "weights", "value": "f16", "fits": False, "scope": "program", "peak": 9, "margin": -1,
              "command": "tileplan plan --layers 2 --weights f16"}],
    "note": "each row is a separate plan",
}
TEXT = json.dumps(DOC, separators=(",", ":"))
BASE = from_json_text(TEXT, "base.json")


PATHS = [p for p in json_paths(DOC, 2) if p]  # the first entries of each list are enough
EXTRA_PATHS = [p for p in PATHS if p[0] in ("verdict", "exact", "operations", "what_if", "program")]

hostile = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 1, 2**63, 2**64, 2**64 - 1, -(2**64), 10**30, 1.5, -0.0, 1e308,
                     "", "x", "\ud800", "<script>", [], {}, [0], [[0]], {"region": "total"}, DELETE]),
    st.integers(-(2**70), 2**70),
    st.text(max_size=8),
    st.lists(st.integers(-3, 2**17), max_size=4),
)


def read_and_view(text: str) -> None:
    """Everything a person can ask of a report; raises only TileplanError."""
    try:
        report = from_json_text(text, "fuzz.json")
    except TileplanError as e:
        message = str(e)
        assert "\n" not in message and message.startswith("fuzz.json: "), message
        return
    summary = build_summary(report)
    render_summary(summary)
    json.dumps(summary.to_json(), allow_nan=False)
    liveness = build_liveness(report)
    json.dumps(liveness.to_json(), allow_nan=False)
    for d in (diff_reports(BASE, report), diff_reports(report, BASE)):
        render_diff(d)
        json.dumps(d.to_json(), allow_nan=False)


@settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), hostile)
def test_any_field_replaced_reads_and_views_or_fails_in_one_line(path, value):
    read_and_view(json.dumps(with_field(DOC, path, value)))


@settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(EXTRA_PATHS), hostile)
def test_the_sections_tileplan_adds_are_checked_before_any_view_reads_them(path, value):
    read_and_view(json.dumps(with_field(DOC, path, value)))


def test_known_crashers_are_one_line_errors():
    """Cases the hostile campaign found, one per code site."""
    cases = {
        ("exact", "steps", 0): [1, 2],  # a row shorter than its columns
        ("exact", "steps_columns"): ["total"],  # no worst_tile column
        ("exact", "tiles", "peak"): [1],  # not one peak per tile
        ("exact", "tiles", "peak_step"): [10**9] * DOC["tile_count"],  # a step beyond the report
        ("operations", 0, "steps"): [5, 1],
        ("operations", 0, "index"): "zero",
        ("verdict", "regions", 0, "region"): "everywhere",
        ("verdict", "regions", 0, "peak"): "1e3",
        ("verdict", "over_budget"): {"steps": -1},
        ("what_if", "rows", 0, "peak"): [1],
        ("what_if", "baseline"): [],
        ("program", "name"): {"nested": 1},
        ("tile_count",): 1 << 40,
        ("timeline", "steps", 0, "index"): 7,
    }
    for path, value in cases.items():
        doc = with_field(DOC, path, value)
        try:
            from_json_text(json.dumps(doc), "bad.json")
        except TileplanError as e:
            assert str(e).startswith("bad.json: ") and "\n" not in str(e), (path, str(e))
            assert "expected" in str(e) or "must" in str(e), (path, str(e))
            continue
        raise AssertionError(f"{path} = {value!r} was read")


def test_numbers_past_the_digit_limit_and_lone_surrogates_are_one_line_errors():
    big = TEXT.replace('"budget_bytes":', '"budget_bytes":' + "9" * 5000 + ',"was":', 1)
    for text, expected in ((big, "Exceeds the limit (4300 digits)"),
                           (TEXT.replace('"name":"', '"name":"\\udc80', 1), "lone UTF-16 surrogate"),
                           (TEXT.replace('"budget_bytes":', '"budget_bytes":NaN,"was":', 1), "NaN")):
        try:
            from_json_text(text, "bad.json")
        except TileplanError as e:
            assert expected in str(e) and "\n" not in str(e), str(e)
        else:
            raise AssertionError(expected)


def test_summary_counts_the_steps_the_verdict_counts_with_an_interleaved_only_overflow():
    """The drift: `plan` said 'Out of memory ... N steps over budget' while `summary`
    said 0, because it judged only the total. It reads the verdict's count now."""
    # the interleaved budget at three quarters of the 2-layer plan's interleaved peak
    # (its matmuls' partials), the standard region large enough for everything else
    interleaved_peak = plan(layers=2).exact.peak("interleaved")[0]
    interleaved = interleaved_peak * 3 // 4 + 1000
    small = dataclasses.replace(IPU21, name="small-interleaved", non_interleaved_bytes=IPU21.tile_bytes - interleaved,
                                interleaved_bytes=interleaved,
                                standard_budget_bytes=IPU21.tile_bytes - interleaved - IPU21.support_reserve_bytes,
                                interleaved_budget_bytes=interleaved_peak * 3 // 4)
    report = build_report(plan(layers=2, machine=small))
    assert not report.fits_budget
    over = report.extra["verdict"]["over_budget"]
    assert over["steps"] > 0 and {over["first"]["region"], over["worst"]["region"]} == {"interleaved"}
    summary = build_summary(from_json_text(json.dumps(report_json(plan(layers=2, machine=small)))))
    assert summary.over_budget_steps == over["steps"]
    assert sum(s.over for s in summary.steps) == over["steps"]
    assert f"{over['steps']} of {len(summary.steps)} steps over budget" in render_summary(summary)
