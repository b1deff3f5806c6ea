"""The views of a Tenstorrent report, as data (views/tt_summary.py, tt_page.py,
tt_diff.py), and their renderings: the verdict first in tt-metal's words, the buffers
responsible by the user's names, the L1 picture's geometry (programs as columns, L1
buffers as rectangles over the columns where they live), a hostile name inert in the
page."""

from __future__ import annotations

import json

from tileplan.app.tenstorrent.build import build_tt_report
from tileplan.render.tt_html import render_tt_html
from tileplan.render.tt_terminal import render_tt_summary
from tileplan.report.tt_report import TtReport, read_tt_report
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.views.tt_diff import diff_tt_reports
from tileplan.views.tt_page import build_tt_page, column_runs
from tileplan.views.tt_summary import build_tt_summary

from tt_plan_support import PROGRAMS, Builder, mlp

N150 = load_device("n150", version="2026-04-21")


def report(name: str | Builder) -> TtReport:
    builder = PROGRAMS[name]() if isinstance(name, str) else name
    plan = plan_tt(builder.program(), N150)
    return read_tt_report(json.loads(build_tt_report(plan, builder.name, "tt-mlir", ()).to_bytes()))


def test_the_summary_puts_the_verdict_first_then_where_and_who() -> None:
    s = build_tt_summary(report("clash"))
    assert s.verdict.startswith("Statically allocated circular buffers in program 0 clash with L1 buffers")
    assert s.where == "operation 0 relu (ttnn.relu), its program UnaryProgramFactory"
    assert [b.name for b in s.responsible] == ["resident"]
    assert s.responsible[0].made_by == "the uploads" and s.responsible[0].address == 104448
    assert s.changes[0].startswith("the lowest L1 buffer resident (at 104,448) meets the circular buffers")
    text = render_tt_summary(s)
    assert text.splitlines()[0] == f"does not fit: {s.verdict}"


def test_a_fit_summarises_its_peaks() -> None:
    s = build_tt_summary(report("mlp"))
    assert s.fits and s.verdict == ("fits on n150: L1 peak 61,440 of 1,329,888 B a bank, circular buffers to "
                                    "890,144 B, DRAM peak 352,256 of 1,071,821,792 B a bank")
    assert [p.memory for p in s.peaks] == ["L1", "DRAM", "circular buffers (region end)", "L1 in use on a core"]
    assert s.peaks[0].where == "allocating mlp.relu (mlp.relu)"


def test_the_page_draws_programs_as_columns_and_l1_buffers_over_their_lives() -> None:
    page = build_tt_page(report("mlp"))
    assert [(c.first, c.last, c.cb_end) for c in page.columns] == [(0, 0, 890144), (1, 1, 111904)]
    assert [(r.name, r.first, r.last) for r in page.rects] == [("mlp.matmul", 0, 1), ("mlp.relu", 1, 1)]
    assert page.l1_base == 103712 and page.l1_bank_top == 103712 + 1329888


def test_columns_are_bounded_and_cover_every_program() -> None:
    runs = column_runs(2500, most=1000)
    assert len(runs) <= 1000 and runs[0] == (0, 2) and runs[-1][1] == 2499
    assert all(b[0] == a[1] + 1 for a, b in zip(runs, runs[1:]))


def test_a_hostile_name_is_inert_in_the_page() -> None:
    b = mlp()
    b.tensors[1] = type(b.tensors[1])(1, "<script>alert(1)</script>", b.tensors[1].role, b.tensors[1].spec,
                                      "<img src=x onerror=alert(1)>")
    page = render_tt_html(build_tt_page(report(b)))
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page and "default-src 'none'" in page


def test_the_diff_names_resized_buffers_and_changed_peaks() -> None:
    d = diff_tt_reports(report("mlp"), report("reduce"))
    assert d.fits_a and d.fits_b
    figures = {f.what: f.change for f in d.figures}
    assert figures["L1 peak (bytes per bank)"] == 2048 * 2 - 61440
    assert {c.name for c in d.buffers} >= {"mlp.matmul", "sum", "x"}


def test_a_failed_allocation_adds_a_column_of_l1_at_the_failure() -> None:
    """tt-mlir #8044's state: after the hole is freed, the two L1 tensors the request
    could not fit between are drawn in one more column, the need in a note."""
    page = build_tt_page(report("falcon_8044"))
    assert len(page.columns) == 2 and page.failing_column == 1
    assert page.columns[1].factory == "allocation failed" and page.columns[1].operation == "lm.matmul"
    assert sorted((r.name, r.first, r.last, r.responsible) for r in page.rects) == [
        ("a", 0, 1, True), ("b", 0, 1, True), ("hole", 0, 0, False)]
    assert page.failure_note == ("lm.matmul needs 552,960 B in each of 48 L1 banks: 912,096 B free, the largest free "
                                 "block 522,240 B")
