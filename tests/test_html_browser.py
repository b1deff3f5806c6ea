"""The HTML report in a real browser: Debian's headless Chromium driven by playwright
(never a downloaded browser), with the network off.

`make test` installs /usr/bin/chromium when it is missing; without it these tests fail.
"""

import json

import pytest
from playwright.sync_api import sync_playwright

from tileplan.cli.main import main
from tileplan.render import human_bytes
from tileplan.views.common import precision_display

from report_files import HOSTILE_OPERATION, HOSTILE_PROGRAM, HOSTILE_TENSOR

pytest_plugins = ["report_fixtures"]


CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
ROWS = """rows => rows.map(r => ({id: Number(r.dataset.value), cells: Array.from(r.cells).map(c => c.textContent),
                                 title: r.cells[0].title}))"""


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Opened:
    """A page opened from a file in an offline context, with what happened on it."""

    def __init__(self, browser, path) -> None:
        self.context = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("dialog", self._dialog)
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']", timeout=15_000)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def click_step(self, step: int) -> list[dict]:
        self.page.click(f"#hit-step-{step}")
        self.page.wait_for_selector(f"body[data-selected-step='{step}']")
        return self.page.eval_on_selector_all("#live-values tbody tr", ROWS)

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def so400m_page(tmp_path_factory):
    """The default model planned by `tileplan plan` (with its what-if table), then
    `tileplan html` beside it."""
    folder = tmp_path_factory.mktemp("so400m")
    report = folder / "so400m.json"
    assert main(["plan", "-o", str(report)]) == 0
    assert main(["html", str(report)]) == 0
    return json.loads(report.read_text()), folder / "so400m.html"


def test_clicking_the_peak_step_lists_its_live_values_offline(browser, so400m_page):
    doc, page_path = so400m_page
    values = {v["id"]: v for v in doc["timeline"]["values"]}
    steps = doc["timeline"]["steps"]
    total = doc["verdict"]["regions"][-1]
    peak, worst_tile = total["step"], total["tile"]
    assert total["region"] == "total" and peak == doc["verdict"]["peak_tile"]["step"]
    op = next(o for o in doc["operations"] if o["index"] == steps[peak]["source"])
    opened = Opened(browser, page_path)
    try:
        page = opened.page
        # another step first, so the table the peak click shows is the click's doing
        rows = opened.click_step(0)
        assert sorted(r["id"] for r in rows) == sorted(steps[0]["live"])
        assert page.text_content("#step-title") == "Live values at step 0"

        rows = opened.click_step(peak)
        assert page.text_content("#step-title") == f"Live values at step {peak}"
        assert sorted(r["id"] for r in rows) == sorted(steps[peak]["live"]) and len(rows) > 200
        expected = sorted(steps[peak]["live"], key=lambda i: (-values[i]["bytes"], i))
        assert [r["id"] for r in rows] == expected  # largest first
        for r in rows[:20]:
            v = values[r["id"]]
            bytes_cell, name, shape, precision, layout, region, role, live = r["cells"]
            assert (name, precision, role) == (v["name"], precision_display(v["precision"]), v["role"])
            assert "scale_exponent" not in precision  # one display form for people
            assert shape == "x".join(map(str, v["shape"]))
            assert bytes_cell == human_bytes(v["bytes"]) and r["title"] == f"{v['bytes']} B"
            assert layout and region in ("standard", "interleaved")
        top = values[rows[0]["id"]]
        assert top["bytes"] == max(values[i]["bytes"] for i in steps[peak]["live"])
        assert f"operation {op['index']} ({op['name']}), runs 27 times" in page.text_content("#step-info")

        # the rest of the page drew from the embedded data
        assert page.locator("#peak-marker").count() == 1
        assert page.locator("#step-targets rect").count() == len(steps)
        assert page.locator("#heatmap-svg rect.tile").count() == 1472
        assert page.locator("#histogram rect").count() == len(doc["exact"]["histogram"]["counts"])
        assert page.locator("#what-if-table tbody tr").count() == 1 + len(doc["what_if"]["rows"])
        assert page.text_content("#verdict").startswith(f"Fits: worst tile {worst_tile} at step {peak}")
        placed = doc["placement"]["tiles"][0]  # the worst tile's address map, drawn inline
        assert page.locator("#address-map svg rect.buffer").count() == len(placed["buffers"])
        # a tile of the heat map selects the step of its peak
        page.click(f"#heatmap-svg rect[data-tile='{worst_tile}']")
        assert page.get_attribute("body", "data-selected-step") == str(doc["exact"]["tiles"]["peak_step"][worst_tile])

        assert opened.requests == [opened.url]  # nothing but the file itself, with the network off
        assert opened.errors == [] and opened.dialogs == []
    finally:
        opened.close()


def test_hostile_names_render_as_text_and_run_no_script(browser, hostile_path):
    assert main(["html", str(hostile_path)]) == 0
    opened = Opened(browser, hostile_path.with_suffix(".html"))
    try:
        page = opened.page
        rows = opened.click_step(0)
        names = [r["cells"][1] for r in rows]
        assert HOSTILE_TENSOR in names
        assert HOSTILE_TENSOR in page.eval_on_selector_all("#top-allocations td", "tds => tds.map(t => t.textContent)")
        assert HOSTILE_OPERATION in page.text_content("#step-info")
        assert page.title().startswith(HOSTILE_PROGRAM)
        assert page.text_content("h1") == HOSTILE_PROGRAM
        # no element came from a name: only the page's two scripts, no image, no <u>
        assert page.eval_on_selector_all("script", "s => s.length") == 2
        assert page.locator("img").count() == 0 and page.locator("u").count() == 0
        assert opened.dialogs == []  # alert(1) and alert(2) never ran
        assert opened.errors == []  # not even blocked by the page's policy: nothing tried to run
    finally:
        opened.close()


@pytest.fixture(scope="module")
def large_page(tmp_path_factory):
    """A synthetic chain of about 50,000 timeline values planned, written as a report
    and turned into a page by `tileplan html`: more steps than the chart has columns.
    With F16 weights each graph value is one timeline value (no copies; partials are
    the products' scratch)."""
    from tileplan.kernel.options import Options
    from tileplan.lowering.policy import policy
    from tileplan.model.machine import IPU21
    from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic
    from tileplan.planner.plan import plan_program
    from tileplan.app.build import build_report
    from tileplan.report.format import write_report

    folder = tmp_path_factory.mktemp("large")
    report = build_report(plan_program(build_synthetic(SyntheticConfig(values=50_500)), IPU21, policy("default"),
                                       Options()))
    path = folder / "chain.json"
    write_report(path, report, version=2)
    assert main(["html", str(path)]) == 0
    return report, folder / "chain.html"


def test_a_large_program_page_is_small_opens_and_lists_a_steps_live_values(browser, large_page):
    report, page_path = large_page
    n_values, n_steps = len(report.values), len(report.steps)
    assert n_values > 50_000 and n_steps > 50_000
    # bounded: the chart's columns and a few bytes a value (0.7 MB here; 1.0 MB at 100,000 values)
    assert page_path.stat().st_size < 1_000_000, page_path.stat().st_size
    values = {v.id: v for v in report.values}
    opened = Opened(browser, page_path)
    try:
        page = opened.page
        hits = page.eval_on_selector_all("#step-targets rect", "r => r.map(e => Number(e.dataset.step))")
        assert len(hits) == 1500 and hits == sorted(hits)
        peak = report.extra["verdict"]["regions"][-1]["step"]
        assert page.get_attribute("body", "data-selected-step") == str(peak)  # the page opens at the peak
        assert page.locator("#peak-marker").count() == 1
        for step in (hits[0], hits[777], hits[-1]):
            rows = opened.click_step(step)
            live = report.steps[step].live
            assert sorted(r["id"] for r in rows) == sorted(live) and rows
            expected = sorted(live, key=lambda i: (-(values[i].bytes or 0), i))
            assert [r["id"] for r in rows] == expected  # largest first
            first = values[rows[0]["id"]]
            assert rows[0]["cells"][1] == first.name and rows[0]["title"] == f"{first.bytes} B"
            s = report.steps[step]
            assert page.text_content("#step-title") == f"Live values at step {step}"
            assert f"of operation {s.source} (" in page.text_content("#step-info")
            assert f"{len(live)} values live" in page.text_content("#step-info")
        assert opened.requests == [opened.url] and opened.errors == [] and opened.dialogs == []
    finally:
        opened.close()
