"""Summarize a report in the terminal: the verdict line first, then each region's peak
against its budget, the largest values live at the peak step and usage per step as a
chart. `--json` prints the same summary as JSON (this needs no extra).
"""

from __future__ import annotations

import argparse
import json

from tileplan.errors import InputError
from tileplan.render import require_extra
from tileplan.report.format import read_report
from tileplan.report.summary import TOP_VALUES, build_summary


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="a report (JSON) written by tileplan plan")
    p.add_argument("--top", type=int, default=TOP_VALUES, metavar="N",
                   help=f"values to list at the peak step (default {TOP_VALUES})")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead")


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise InputError(f"--top must be >= 1, found {args.top}")
    if not args.json:
        require_extra("summary", "rich")
    summary = build_summary(read_report(args.report), top=args.top)
    if args.json:
        print(json.dumps(summary.to_json(), sort_keys=True, indent=1, ensure_ascii=False))
        return 0
    from tileplan.render.terminal import render_summary  # noqa: PLC0415 (the optional extra)

    render_summary(summary)
    return 0
