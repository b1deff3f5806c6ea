"""Show what changed from report A to report B.

The verdict, the peak of each region and the worst tile where it peaks, the program's
options, and the values added, removed and resized (bytes per tile; values match by
name and shape). Where either report has them: the memory that is not tensors by class,
the placement verdict and the worst placed tile, and which IPU of a pipeline each is.
Two Tenstorrent reports: the verdicts, each memory's peak, the largest CB region and the
buffers added, removed or resized (bytes per bank). A table, or `--json` for every
value. Plain text, coloured on a terminal; it needs no
optional extra.
"""

from __future__ import annotations

import argparse
import json
import sys

from tileplan.errors import InputError
from tileplan.render.terminal import render_diff, terminal_style
from tileplan.views.diff import diff_reports
from tileplan.render.tt_terminal import render_tt_diff
from tileplan.report.reading import read_any_report
from tileplan.report.tt_report import TtReport
from tileplan.views.tt_diff import diff_tt_reports

TOP_ROWS = 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A", help="the report before (JSON)")
    p.add_argument("b", metavar="B", help="the report after (JSON)")
    p.add_argument("--top", type=int, default=TOP_ROWS, metavar="N", help=f"rows per table (default {TOP_ROWS})")
    p.add_argument("--json", action="store_true", help="print the whole diff as JSON instead")


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise InputError(f"--top must be >= 1, found {args.top}")
    a, b = read_any_report(args.a), read_any_report(args.b)
    if isinstance(a, TtReport) or isinstance(b, TtReport):
        tt = diff_tt_reports(a, b)
        args.decided = 0
        if args.json:
            sys.stdout.write(json.dumps({"a": args.a, "b": args.b, **tt.to_json()}, sort_keys=True, indent=1,
                                        ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(render_tt_diff(tt, args.top, args.a, args.b))
        return args.decided
    diff = diff_reports(a, b)
    args.decided = 0  # what a reader that leaves early (| head) does not change
    if args.json:
        doc = {"a": args.a, "b": args.b, **diff.to_json()}
        text = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    else:
        text = render_diff(diff, top=args.top, a_path=args.a, b_path=args.b, style=terminal_style(sys.stdout))
    sys.stdout.write(text)
    return args.decided
