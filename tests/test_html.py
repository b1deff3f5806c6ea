"""`tileplan html`: a self-contained page; model names reach it only as text."""

import base64
import hashlib
import html
import json
import re
from html.parser import HTMLParser

import pytest

from tileplan.cli.main import main
import numpy as np

from tileplan.render.html import embed_json, page_data, read_page, render_html
from tileplan.views.liveness import build_liveness

from report_files import HOSTILE_OPERATION, HOSTILE_PROGRAM, HOSTILE_TENSOR, read_back

pytest_plugins = ["report_fixtures"]


class Page(HTMLParser):
    """The parts of a page the tests look at: elements with their attributes, the
    text of each <script>, and the text of table cells."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.cells: list[str] = []
        self.title = ""
        self._in: list[str] = []
        self._text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag in ("script", "td", "title"):
            self._in.append(tag)
            self._text = []
            self._attrs = dict(attrs)

    def handle_endtag(self, tag):
        if self._in and self._in[-1] == tag:
            self._in.pop()
            text = "".join(self._text)
            if tag == "script":
                self.scripts.append((self._attrs, text))
            elif tag == "td":
                self.cells.append(text)
            else:  # the document's own, in <head>: an inline SVG's titles come later
                self.title = self.title or text

    def handle_data(self, data):
        if self._in:
            self._text.append(data)


def data_of(page: Page) -> dict:
    (blob,) = [text for attrs, text in page.scripts if attrs.get("type") == "application/json"]
    return json.loads(blob)


def test_embedded_json_cannot_close_its_script():
    obj = {"name": HOSTILE_TENSOR, "op": HOSTILE_OPERATION, "p": HOSTILE_PROGRAM, "sep": "a\u2029b", "n": [1, None]}
    text = embed_json(obj)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    assert json.loads(text) == obj
    assert embed_json(obj) == embed_json(dict(reversed(list(obj.items()))))  # sorted keys


def test_hostile_names_are_text_everywhere(hostile_path):
    lv = build_liveness(read_back(hostile_path))
    assert HOSTILE_TENSOR in {v.name for v in lv.values}
    text = render_html(lv)
    assert HOSTILE_TENSOR not in text and HOSTILE_OPERATION not in text and "<u>hostile" not in text
    page = Page(text)
    # only the page's own two scripts, and no element a name could have made
    assert [attrs.get("type") for attrs, _ in page.scripts] == ["application/json", None]
    assert not [tag for tag, _ in page.elements if tag in ("img", "u", "iframe", "object", "embed")]
    assert HOSTILE_TENSOR in page.cells  # the largest allocations table shows it as text
    assert page.title.startswith(HOSTILE_PROGRAM)
    texts = read_page(text)["detail"]["texts"]  # compressed in the page: no name is readable there
    assert HOSTILE_TENSOR in texts["names"]
    assert [HOSTILE_OPERATION] == texts["operation_names"]


def test_the_page_allows_its_own_script_and_nothing_else(f8_path):
    page = Page(render_html(build_liveness(read_back(f8_path))))
    (csp,) = [a["content"] for t, a in page.elements
              if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    (script,) = [text for attrs, text in page.scripts if "type" not in attrs]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp
    # nothing is fetched: no linked style sheet, script, image or font
    for tag, attrs in page.elements:
        assert tag != "link"
        assert "src" not in attrs, (tag, attrs)
        assert not attrs.get("href", "#").startswith(("http:", "https:", "//")), (tag, attrs)


def test_the_page_embeds_the_view_model_and_is_deterministic(f8_path):
    lv = build_liveness(read_back(f8_path))
    text = render_html(lv)
    assert text == render_html(build_liveness(read_back(f8_path)))
    data = data_of(Page(text))
    assert data == json.loads(embed_json(page_data(lv)))
    # every step's and every value's figures, unpacked, are the view model's
    detail = read_page(text)["detail"]
    a, t = detail["arrays"], detail["texts"]
    steps = lv.steps
    assert len(lv.values) == detail["values"] == len(t["names"])
    for i, s in enumerate(steps):
        assert t["briefs"][a["operation"][i]] == s.operation
        assert (a["source"][i], a["execution_count"][i], a["tile"][i]) == (s.source, s.execution_count, s.tile)
        assert (a["standard"][i], a["interleaved"][i], a["total"][i]) == (s.standard, s.interleaved, s.total)
        assert a["unknown"][i] == lv.unknown[i]
    for k, v in enumerate(lv.values):
        layout = a["value_layout"][k]
        assert (a["value_id"][k], a["value_bytes"][k], t["names"][k]) == (v.id, v.bytes, v.name)
        assert t["shapes"][a["value_shape"][k]] == "x".join(map(str, v.shape))
        assert t["precisions"][a["value_precision"][k]] == v.precision
        assert (t["layouts"][layout], t["layout_texts"][layout]) == (v.layout, v.layout_text)
        assert (t["layout_regions"][layout], t["roles"][a["value_role"][k]]) == (v.region, v.role)
    runs: dict[int, list[int]] = {}
    for row, first, length in zip(a["run_value"], a["run_first"], a["run_length"], strict=True):
        runs.setdefault(int(a["value_id"][row]), []).extend([int(first), int(first + length - 1)])
    assert runs == {vid: list(r) for vid, r in lv.live_runs.items()}
    assert list(zip(t["operation_index"], t["operation_names"], strict=True)) == list(lv.operations)
    # the chart's columns: one per step here, each band's bytes at its step
    assert data["columns"] == [[i, i, i] for i in range(len(steps))]
    for band, shown in zip(lv.bands, data["bands"], strict=True):
        assert shown["bytes"] == band.bytes.tolist()


def test_a_large_page_stays_bounded_and_keeps_every_peak():
    """More steps than columns: each column shows its tallest step, the exact line the
    highest total of its steps; the page grows with the report's values only by their
    compressed detail."""
    from test_hostile_resources import many_groups_report

    lv = build_liveness(many_groups_report(4000))
    data = page_data(lv)
    assert len(data["columns"]) == 1500 and all(len(b["bytes"]) == 1500 for b in data["bands"])
    height = sum(b.bytes for b in lv.bands)
    for first, last, shown in data["columns"]:
        assert height[shown] == height[first:last + 1].max() and first <= shown <= last
    assert [c[0] for c in data["columns"]][:3] == [0, 2, 5] and data["columns"][-1][1] == 3999
    assert len(embed_json(data)) < 400_000
    assert np.array_equal(read_page(render_html(lv))["detail"]["arrays"]["value_id"], np.arange(4000))


def test_the_page_says_what_a_stopped_plan_does_not_know(rejected_path):
    page = Page(render_html(build_liveness(read_back(rejected_path))))
    assert "unknown" in page.cells
    text = " ".join(page.cells)
    assert "Linear tiling of 288 blocks of 4 elements cannot fill 1472 partitions" in text
    raw = render_html(build_liveness(read_back(rejected_path)))
    assert "No per-tile accounting in this report" in raw
    assert "No what-if in this report." in raw


def test_cli_writes_beside_the_report_and_needs_force_to_overwrite(f8_path, tmp_path, capsys):
    report = tmp_path / "model.json"
    report.write_text(f8_path.read_text())
    assert main(["html", str(report)]) == 0
    page = tmp_path / "model.html"
    assert f"wrote {page}" in capsys.readouterr().out
    assert page.stat().st_size > 100_000
    assert main(["html", str(report)]) == 2
    assert f"{page} exists; pass -f to overwrite it" in capsys.readouterr().err
    assert main(["html", str(report), "-f"]) == 0
    other = tmp_path / "other.html"
    assert main(["html", str(report), "-o", str(other)]) == 0 and other.read_text() == page.read_text()
    assert main(["html", str(report), "-o", str(report), "-f"]) == 2
    assert "is the input report" in capsys.readouterr().err


def test_cli_needs_the_render_extra(f8_path, tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jinja2", None)
    monkeypatch.delitem(sys.modules, "tileplan.render.html", raising=False)
    assert main(["html", str(f8_path), "-o", str(tmp_path / "x.html")]) == 2
    assert "tileplan html needs the optional 'render' extra, and jinja2 is not installed" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("name,expected", [("a/r.json", "a/r.html"), ("a/r.JSON", "a/r.html"), ("a/r", "a/r.html"),
                                           ("a/r.v1.json", "a/r.v1.html")])
def test_default_output_names(name, expected):
    from tileplan.ioutil import derived_path

    assert str(derived_path(name, ".html")) == expected


def test_the_worst_placed_tile_has_an_address_map_named_by_storage_group(f8_path, hostile_path):
    report = read_back(f8_path)
    lv = build_liveness(report)
    tile = report.extra["placement"]["tiles"][0]
    assert lv.placed_tile == tile
    # each storage group placed is named after its largest member (ties: the lowest id)
    groups = {b[1] for b in tile["buffers"] if b[0] == "group"}
    assert set(lv.placed_names) == groups
    for g in groups:
        members = [v for v in report.values if v.storage_group == g]
        assert lv.placed_names[g] == min(members, key=lambda v: (-(v.bytes or 0), v.id)).name
    text = render_html(lv)
    section = text[text.index('<section id="address-map">'):]
    section = section[:section.index("</section>")]
    assert f"Address map of the worst tile <small>tile {tile['tile']}:" in section
    assert section.count('<rect class="buffer"') == len(tile["buffers"])
    hover = [html.unescape(t) for t in re.findall(r"<title>(.*?)</title>", section, re.S)]
    biggest = max((b for b in tile["buffers"] if b[0] == "group"), key=lambda b: b[5])
    assert any(t.startswith(lv.placed_names[biggest[1]] + "\n") for t in hover)  # hover text names its group
    # the largest buffer of all is a product's temporary memory (poplin's, the step's
    # scratch, far larger than any weight's shard): its hover says scratch
    largest = max(tile["buffers"], key=lambda b: b[5])
    assert largest[0] == "scratch" and any(t.startswith("scratch\n") and f"{largest[5]:,} B" in t for t in hover)
    # names stay text there too, and a report without placement has no section
    hostile = render_html(build_liveness(read_back(hostile_path)))
    assert '<section id="address-map">' in hostile and HOSTILE_TENSOR not in hostile
    del report.extra["placement"]
    lv = build_liveness(report)
    assert lv.placed_tile is None and '<section id="address-map">' not in render_html(lv)
