"""What changed from report A to report B: the verdict, the peak of each region, the
program's options, and the values added, removed and resized (bytes per tile; values
match by name). A table, or `--json` for every value.
"""

from __future__ import annotations

import argparse
import json

from tileplan.errors import InputError
from tileplan.render import require_extra
from tileplan.report.diff import diff_reports
from tileplan.report.format import read_report

TOP_ROWS = 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A", help="the report before (JSON)")
    p.add_argument("b", metavar="B", help="the report after (JSON)")
    p.add_argument("--top", type=int, default=TOP_ROWS, metavar="N", help=f"rows per table (default {TOP_ROWS})")
    p.add_argument("--json", action="store_true", help="print the whole diff as JSON instead")


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise InputError(f"--top must be >= 1, found {args.top}")
    if not args.json:
        require_extra("diff", "rich")
    diff = diff_reports(read_report(args.a), read_report(args.b))
    if args.json:
        print(json.dumps({"a": args.a, "b": args.b, **diff.to_json()}, sort_keys=True, indent=1, ensure_ascii=False))
        return 0
    from tileplan.render.terminal import render_diff  # noqa: PLC0415 (the optional extra)

    render_diff(diff, top=args.top, a_path=args.a, b_path=args.b)
    return 0
