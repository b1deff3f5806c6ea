"""Resource bounds of the views: a report with many value groups and many steps is
turned into bands, a page and a chart in memory linear in its size (the bands were
an array per group per step: 20.8 GB for docs/performance.md's 100,000-value report)."""

from __future__ import annotations

import json
import tracemalloc

from tileplan.render.html import embed_json, read_page, render_html
from tileplan.render.plot import MAX_COLUMNS, chart_columns, render_png
from tileplan.report.format import from_json_text
from tileplan.views.liveness import BANDS_PER_REGION, build_liveness, compute_bands

from helpers import plan, report_json

N = 6000  # values, each its own group, and steps: the old bands held N x N numbers (36 M)


def many_groups_report(n: int = N):
    doc = report_json(plan(layers=1))
    template = next(v for v in doc["timeline"]["values"] if v["bytes"])
    values = []
    for i in range(n):
        v = dict(template, id=i, origin=0, root=i, name=f"value {i}", group=f"group {i}", storage_group=i)
        v.pop("role", None)
        values.append(v)
    steps = []
    for i in range(n):
        live = [i - 1, i] if i else [0]
        usage = template["bytes"] * len(live)
        steps.append({"index": i, "source": 0, "operation": "Copy", "execution_count": 1, "live": live,
                      "scratch": {"standard": 0, "interleaved": 0},
                      "usage": {"standard": usage if template["class"].endswith("Standard") else 0,
                                "interleaved": 0 if template["class"].endswith("Standard") else usage}})
    doc["timeline"] = {"values": values, "steps": steps}
    for key in ("exact", "verdict", "operations", "what_if"):
        doc.pop(key, None)
    return from_json_text(json.dumps(doc), "many.json")


REPORT = many_groups_report()


def test_bands_page_data_and_chart_are_linear_in_the_report():
    tracemalloc.start()
    try:
        bands, unknown = compute_bands(REPORT)
        lv = build_liveness(REPORT)
        data = embed_json(lv.to_json())
        columns = chart_columns(lv)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak  # the old bands alone took N x N list slots (about 300 MB here)
    assert len([b for b in bands if b.region == "standard"]) <= BANDS_PER_REGION + 2
    assert "other groups" in {b.group for b in bands} and len(unknown) == N
    assert len(data) < 1500 * N  # no steps x values data: each value's live steps are one run
    assert '"live_runs"' in data and lv.live_runs[5] == (5, 6)
    assert len(columns) == MAX_COLUMNS < N
    assert columns[0][0] == 0 and columns[-1][1] == N - 1  # every step in one column, in order
    assert all(a[1] + 1 == b[0] for a, b in zip(columns, columns[1:], strict=False))


def test_the_tallest_step_of_each_column_is_the_one_drawn():
    lv = build_liveness(REPORT)
    height = [sum(b.bytes[i] for b in lv.bands) for i in range(N)]
    for first, last, shown in chart_columns(lv):
        assert height[shown] == max(height[first:last + 1])


def test_a_many_step_report_renders_to_a_page_and_a_png():
    lv = build_liveness(many_groups_report(MAX_COLUMNS + 300))
    page = render_html(lv)
    assert page.startswith("<!DOCTYPE html>")
    assert f"value {MAX_COLUMNS + 299}" in read_page(page)["detail"]["texts"]["names"]  # compressed in the page
    png = render_png(lv)
    assert png.startswith(b"\x89PNG")
