"""A page of more steps than the chart has columns, in a real browser (Debian's
headless Chromium, offline): the chart draws one column per run of steps, clicking
a column lists the live values of its tallest step, and the script raises nothing."""

from __future__ import annotations

from tileplan.render.html import render_html
from tileplan.views.liveness import build_liveness

from test_hostile_resources import many_groups_report
from test_html_browser import Opened, browser  # noqa: F401 (the module's browser fixture)

STEPS = 3100  # more than the page's 1500 columns: two or three steps a column


def test_a_page_of_many_steps_draws_columns_and_lists_live_values(browser, tmp_path):  # noqa: F811
    lv = build_liveness(many_groups_report(STEPS))
    path = tmp_path / "many.html"
    path.write_text(render_html(lv))
    page = Opened(browser, path)
    try:
        hits = page.page.eval_on_selector_all("#step-targets rect", "r => r.map(e => Number(e.dataset.step))")
        assert len(hits) == 1500 and hits == sorted(hits) and hits[-1] >= STEPS - 3
        rows = page.click_step(hits[700])
        live = lv.live[hits[700]]
        assert sorted(r["id"] for r in rows) == sorted(live) and rows
        titles = page.page.eval_on_selector_all("#live-values tbody tr", "rs => rs.map(r => r.cells[4].title)")
        by_id = {v.id: v for v in lv.values}
        assert titles == [by_id[r["id"]].layout_text for r in rows]  # each layout's text given once in the data
        assert page.errors == [] and page.requests == [page.url]
    finally:
        page.close()
