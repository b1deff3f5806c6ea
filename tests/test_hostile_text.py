"""What people read: help that says what tileplan is and what each verb does in a
whole sentence; one display form for precisions; the standard region's overflow into
the interleaved region shown as such, not as a failure."""

from __future__ import annotations

import re

from tileplan.cli.main import COMMANDS, build_parser, main, purpose
from tileplan.render.html import render_html
from tileplan.views.liveness import build_liveness
from tileplan.views.summary import build_summary

from report_files import read_back

pytest_plugins = ["report_fixtures"]


def test_top_level_help_says_what_tileplan_is(capsys):
    text = build_parser().format_help()
    assert "per-tile SRAM" in text and "Graphcore IPU" in text
    assert "only place" not in text and "`tileplan VERB ...`" not in text
    for verb, module in COMMANDS.items():
        line = purpose(module.__doc__)
        assert line.endswith(".") and len(line) < 160, (verb, line)  # a whole sentence, not a cut line
        assert re.search(rf"^\s+{verb}\s+{re.escape(line.split()[0])}", text, re.M), verb


def test_no_reference_precision_text_where_people_read(f8_path, f16_path, capsys):
    assert main(["summary", str(f8_path)]) == 0
    summary = capsys.readouterr().out
    assert main(["diff", str(f8_path), str(f16_path), "--top", "200"]) == 0
    diff = capsys.readouterr().out
    page = render_html(build_liveness(read_back(f8_path)))
    table = page[:page.index('<script type="application/json"')]
    for text in (summary, diff, table):
        assert "scale_exponent" not in text and "F8F143" not in text
    assert "F8 E4M3 x2^-4" in summary and "F8 E4M3 x2^-4 -> F16" in diff and "F8 E4M3 x2^-4" in table


def test_the_standard_region_overflows_into_the_interleaved_one_legally(f16_path, capsys):
    report = read_back(f16_path)
    standard = build_summary(report).regions[1]
    assert standard.region == "standard" and standard.overflow == standard.peak - standard.budget > 0
    assert main(["summary", str(f16_path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("standard "))
    assert "overflows" in row and "into interleaved" in row and "%" not in row and " -" not in row
    page = render_html(build_liveness(report))
    assert "into interleaved</td>" in page


def test_an_absurd_argument_is_one_short_line(f8_path, capsys):
    assert main(["summary", str(f8_path), "--top", "9" * 5000]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400 and "invalid int value" in err
