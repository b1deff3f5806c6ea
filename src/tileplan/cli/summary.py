"""Summarize a report in the terminal, the verdict line first.

Then each region's peak against its budget, the largest values live at the peak step
and usage per step as a chart. `--json` prints the same summary as JSON. Plain text,
coloured on a terminal; it needs no optional extra.
"""

from __future__ import annotations

import argparse
import json
import sys

from tileplan.errors import InputError
from tileplan.render.terminal import render_summary, terminal_style
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
    summary = build_summary(read_report(args.report), top=args.top)
    args.decided = 0  # what a reader that leaves early (| head) does not change
    if args.json:
        text = json.dumps(summary.to_json(), sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    else:
        text = render_summary(summary, terminal_style(sys.stdout))
    sys.stdout.write(text)
    return args.decided
