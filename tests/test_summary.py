"""`tileplan summary`: the summary view model, its terminal rendering and --json."""

import json
import sys
from pathlib import Path

import pytest

from tileplan.cli.main import main
from tileplan.render import human_bytes
from tileplan.render.terminal import bucket, usage_chart
from tileplan.views.summary import build_summary
from tileplan.views.common import layout_brief, precision_display, verdict_line

from report_files import HOSTILE_INPUT, HOSTILE_OPERATION, HOSTILE_TENSOR, read_back

pytest_plugins = ["report_fixtures"]


def test_fitting_report_summary_follows_the_verdict(f8_path):
    report = read_back(f8_path)
    s = build_summary(report)
    verdict = report.extra["verdict"]
    total = next(r for r in verdict["regions"] if r["region"] == "total")
    assert s.fits and s.judged_on == "exact"
    band = verdict["error_band"]
    assert not band["inside"] and band["margin_percent"] == round(100 * total["margin"] / band["tile_bytes"], 1)
    reserve = report.support_reserve_bytes  # the memory that is not tensors, counted with them
    assert report.budget_bytes + reserve == band["tile_bytes"] == 638_976
    assert s.verdict == (f"Fits: worst tile {total['tile']} at step {total['step']}: {total['peak'] + reserve} bytes "
                         f"used of the tile's 638976 ({total['peak']} B of tensors, {reserve} B not tensors; margin "
                         f"{total['margin']} B); fits by "
                         f"{band['margin_percent']:.1f} % of the tile, outside tileplan's measured band of "
                         f"{band['lower_percent']:+.1f} % to {band['upper_percent']:+.1f} %")
    assert [r.region for r in s.regions] == ["total", "standard", "interleaved"]
    for r in s.regions:
        stated = next(x for x in verdict["regions"] if x["region"] == r.region)
        assert (r.peak, r.step, r.tile) == (stated["peak"], stated["step"], stated["tile"])
        assert r.percent == round(100 * r.peak / r.budget, 1)
        assert r.margin == r.budget - r.peak
    assert s.peak_step == total["step"]
    assert s.over_budget_steps == 0
    # the operation of the peak step, in the encoder's repeat block
    step = report.steps[total["step"]]
    name = next(o for o in report.extra["operations"] if o["index"] == step.source)["name"]
    assert name.startswith("vit.encoder.layer{i}.") and step.execution_count == 27
    assert f"operation {step.source} ({name}), runs 27 times" in s.peak_operation


def test_top_values_are_the_largest_live_at_the_peak_step(f8_path):
    report = read_back(f8_path)
    s = build_summary(report, top=7)
    live = set(report.steps[s.peak_step].live)
    assert s.values_live == len(live)
    assert len(s.top_values) == 7 and {v.id for v in s.top_values} <= live
    sizes = [v.bytes for v in s.top_values]
    assert sizes == sorted(sizes, reverse=True)
    all_live = sorted((v.bytes for v in report.values if v.id in live), reverse=True)
    assert sizes == all_live[:7]


def test_over_budget_report_counts_the_steps_the_verdict_counts(f16_path):
    report = read_back(f16_path)
    s = build_summary(report)
    assert not s.fits
    band = report.extra["verdict"]["error_band"]
    assert s.verdict == (f"{report.extra['verdict']['out_of_memory']}; over by {-band['margin_percent']:.1f} % of "
                         f"the tile, outside tileplan's measured band of {band['lower_percent']:+.1f} % to "
                         f"{band['upper_percent']:+.1f} %")
    exchange = report.peak.exchange_rows * report.exchange_row_bytes
    over_by_hand = sum(1 for _, total, _, inter in report.extra["exact"]["steps"]
                       if total + exchange > report.budget_bytes or inter > report.interleaved_budget_bytes)
    assert s.over_budget_steps == report.extra["verdict"]["over_budget"]["steps"] == over_by_hand > 0
    over = [st.index for st in s.steps if st.over]
    assert over[0] == report.extra["verdict"]["over_budget"]["first"]["step"]
    # a step's total is its worst tile plus the exchange rows, as the verdict judges it
    columns = report.extra["exact"]["steps_columns"]
    row = dict(zip(columns, report.extra["exact"]["steps"][s.peak_step], strict=True))
    assert s.steps[s.peak_step].total == row["total"] + s.exchange_bytes == s.regions[0].peak


def test_stopped_plan_keeps_its_nulls(rejected_path):
    report = read_back(rejected_path)
    s = build_summary(report)
    assert s.scope == "rejected-op0" and not s.fits
    assert s.verdict == ("Not planned: stopped at operation 0 (vit.embedding): unrepresentable values are live in "
                         "its steps; 43 values of unknown size")
    total, standard, interleaved = s.regions
    assert (total.peak, total.percent, total.margin, total.step) == (None, None, None, None)
    assert standard.peak is None
    assert interleaved.peak == report.peak.interleaved and interleaved.percent is not None
    assert s.peak_step is None and s.top_values == () and s.values_live == 0
    assert all(st.total is None for st in s.steps)
    assert s.rejections_total == 43 and len(s.rejections) == 5
    doc = json.loads(json.dumps(s.to_json()))
    assert doc["regions"][0]["peak"] is None and doc["peak_step"] is None


def test_summary_prints_the_verdict_line_first_and_a_chart(f16_path, capsys):
    assert main(["summary", str(f16_path), "--top", "3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    report = read_back(f16_path)
    assert lines[0] == verdict_line(report)
    s = build_summary(report)
    total = s.regions[0]
    assert f"Top 3 of {len(report.steps[s.peak_step].live)} values live at step {s.peak_step}" in out
    assert f"{100 * total.peak / total.budget:.1f}%" in out  # the total peak against the budget
    assert f"▲ peak at step {s.peak_step}" in out
    assert f"{s.over_budget_steps} of {len(report.steps)} steps over budget" in out


def test_summary_of_a_stopped_plan_says_unknown(rejected_path, capsys):
    assert main(["summary", str(rejected_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Not planned: stopped at operation 0")
    assert "No peak step" in out and "unknown" in out
    assert "43 values rejected" in out and "vit.embedding.bias" in out
    assert "? = usage unknown" in out


def test_summary_json_is_the_view_model(f8_path, capsys):
    assert main(["summary", str(f8_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == json.loads(json.dumps(build_summary(read_back(f8_path)).to_json()))
    assert doc["fits"] is True and len(doc["steps"]) == len(read_back(f8_path).steps)


def test_summary_and_diff_need_no_extra(f8_path, f16_path, capsys, monkeypatch):
    """After a bare `pip install tileplan` (no rich, jinja2 or matplotlib)."""
    for name in ("rich", "jinja2", "matplotlib"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    assert main(["summary", str(f8_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == verdict_line(read_back(f8_path)) and "▲ peak at step" in out
    assert main(["diff", str(f8_path), str(f16_path)]) == 0
    assert "verdict changed: fits -> does not fit" in capsys.readouterr().out
    assert main(["summary", str(f8_path), "--json"]) == 0


def test_summary_rejects_bad_arguments(f8_path, tmp_path, capsys):
    assert main(["summary", str(f8_path), "--top", "0"]) == 2
    assert "--top must be >= 1, found 0" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["summary", str(bad)]) == 2
    assert f"{bad}: not valid JSON" in capsys.readouterr().err


def test_bucket_keeps_every_peak():
    values = [1, 9, 2, None, None, 3, 4, 8]
    assert bucket(values, 8) == values
    assert bucket(values, 4) == [9, 2, 3, 8]
    assert bucket([None, None, 5, 1], 2) == [None, 5]
    with pytest.raises(ValueError):
        bucket(values, 0)


def test_usage_chart_scales_to_the_budget_and_marks_unknown():
    lines = [line for line in usage_chart([100, 50, None, 200], budget=100, width=4, height=4, peak_step=3)]
    # 4 rows, the axis, the step labels, the peak marker
    assert len(lines) == 7
    columns = [line.split("│")[1] for line in lines[:4]]
    assert columns[0][3] == "█" and columns[0][0] == " "  # 200 reaches the top; 100 is half of it
    assert columns[3] == "██?█"  # bottom row: every known step has usage; step 2 is unknown
    assert lines[0].strip().startswith("200 B")
    assert lines[-1].endswith("▲ peak at step 3")


def test_human_bytes_and_briefs():
    assert human_bytes(None) == "unknown"
    assert human_bytes(1023) == "1023 B"
    assert human_bytes(368480) == "359.8 KiB"
    assert human_bytes(-89584) == "-87.5 KiB"
    assert human_bytes(3 * 1024**3) == "3.0 GiB"
    assert precision_display("F8F143 { scale_exponent: -4 }") == "F8 E4M3 x2^-4"
    assert precision_display("F8F152 { scale_exponent: 3 }") == "F8 E5M2 x2^3"
    assert precision_display("F16") == "F16"


def test_layout_brief_names_order_partitions_replicas_region(f8_path):
    report = read_back(f8_path)
    layouts = {v.name: v.layout for v in report.values}
    # a vector no operation creates, as PopART's linear mapper creates it: 1152 F16
    # elements = 2,304 B in 128-byte parts (18 tiles), starting where the tensors
    # declared before it ended (tile 1456: the 18 parts wrap to tiles 0 and 1)
    assert layout_brief(layouts["vit.embedding.bias"]) == \
        "row-major; elements in at most 1472 parts of 16 blocks or more, from tile 1456; standard region"
    # a one-row product's weights, created in its plan's AMP order: K over 16 tiles, N over 92
    assert layout_brief(layouts["vit.map.attention.query.weight"]) == \
        "transposed for the AMP; rows in 16 x columns in 92 parts; standard region"


def test_the_summary_and_the_page_speak_words_not_the_report_internals(tmp_path, capsys):
    """No `map_head True` (the default knob) and no layout in the planner's notation
    (`Amp(TransposedLeft), FromEnd(2)/16 x ...`) in the summary or the page's data; a
    knob off its default in words; the page keeps the report's full layout text for
    hover (`layout_text`)."""
    from tileplan.views.liveness import build_liveness

    for flags, shown in (((), None), (("--no-map-head",), "MAP head left out")):
        path = tmp_path / f"r{len(flags)}.json"
        assert main(["plan", "--layers", "2", *flags, "--no-what-if", "-o", str(path)]) == 0
        capsys.readouterr()
        assert main(["summary", str(path)]) == 0
        out = capsys.readouterr().out
        program_line = out.splitlines()[1]
        assert "map_head" not in out and "FromEnd(" not in out and "Amp(" not in out
        assert (shown in program_line) if shown else "MAP head" not in program_line
        assert " parts; standard region" in out
        page = build_liveness(read_back(path))
        assert [f for f in page.program if f[0] in ("map_head", "MAP head")] == ([] if shown is None else
                                                                                [("MAP head", "left out")])
        data = page.to_json()
        assert not any("FromEnd(" in r["layout"] or "Amp(" in r["layout"] for r in data["values"])
        assert data["layout_texts"] and all(t.startswith("Layout { order: ") for t in data["layout_texts"])


def test_names_print_as_they_are(hostile_path, capsys):
    assert main(["summary", str(hostile_path)]) == 0
    out = capsys.readouterr().out
    for name in (HOSTILE_TENSOR, HOSTILE_OPERATION):  # the values live at the peak; the input's is in the diff test
        assert name in out


def test_rich_markup_in_names_stays_text(hostile_path, f8_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["diff", str(hostile_path), str(f8_path), "--top", "50"]) == 0
    out = capsys.readouterr().out
    assert HOSTILE_INPUT in out and HOSTILE_TENSOR in out


def test_summary_json_streams_the_same_text_json_dumps_would_write(monkeypatch) -> None:
    import io
    import json

    import tileplan.cli.summary as summary_cli
    from tileplan.app.request import PlanRequest
    from tileplan.app.build import build_report
    from tileplan.report.format import read_report
    from tileplan.views.summary import build_summary

    reports = [build_report(PlanRequest(model="synthetic:200").plan()),
               read_report(str(Path(__file__).parent / "data" / "reference_000.json"))]
    for chunk in (3, 7, 4096):
        monkeypatch.setattr(summary_cli, "_CHUNK", chunk)
        for report in reports:
            s = build_summary(report)
            out = io.StringIO()
            summary_cli.write_json(s, out)
            assert out.getvalue() == json.dumps(s.to_json(), sort_keys=True, indent=1, ensure_ascii=False) + "\n"
