"""Summarize a report in the terminal, the verdict line first.

A Tenstorrent report: tt-metal's message (or the fit), where the run stopped and the
buffers responsible, each memory's peak, the largest buffers and what to change.
An IPU report: then each region's peak against its budget, the largest values live at the peak step
and usage per step as a chart. `--json` prints the same summary as JSON. Plain text,
coloured on a terminal; it needs no optional extra.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from tileplan.errors import InputError
from tileplan.render.terminal import render_summary, terminal_style
from tileplan.render.tt_terminal import render_tt_summary
from tileplan.report.reading import read_any_report
from tileplan.report.tt_report import TtReport
from tileplan.views.summary import TOP_VALUES, Summary, build_summary
from tileplan.views.tt_summary import build_tt_summary


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="a report (JSON) written by tileplan plan")
    p.add_argument("--top", type=int, default=TOP_VALUES, metavar="N",
                   help=f"values to list at the peak step (default {TOP_VALUES})")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead")


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise InputError(f"--top must be >= 1, found {args.top}")
    report = read_any_report(args.report)
    if isinstance(report, TtReport):
        tt = build_tt_summary(report, top=args.top)
        args.decided = 0
        if args.json:
            sys.stdout.write(json.dumps(tt.to_json(), sort_keys=True, indent=1, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(render_tt_summary(tt, terminal_style(sys.stdout)))
        return args.decided
    summary = build_summary(report, top=args.top)
    args.decided = 0  # what a reader that leaves early (| head) does not change
    if args.json:
        write_json(summary, sys.stdout)
    else:
        sys.stdout.write(render_summary(summary, terminal_style(sys.stdout)))
    return args.decided


#: stands for the steps in the JSON text, which are then streamed in its place
_STEPS = "\x00steps\x00"
_CHUNK = 4096


def write_json(summary: Summary, out: TextIO) -> None:
    """`json.dumps(summary.to_json(), sort_keys=True, indent=1)` and a newline, with
    the steps streamed from the columns (bounded memory at a million steps)."""
    head = summary.to_json()
    head["steps"] = _STEPS
    text = json.dumps(head, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    before, after = text.split(json.dumps(_STEPS), 1)
    out.write(before)
    if not len(summary.steps):
        out.write("[]")
    else:
        out.write("[\n")
        batch: list[str] = []
        for k, line in enumerate(summary.steps.json_lines()):
            batch.append(line)
            if len(batch) == _CHUNK:
                out.write(",\n".join(batch) + (",\n" if k + 1 < len(summary.steps) else ""))
                batch = []
        if batch:
            out.write(",\n".join(batch))
        out.write("\n ]")
    out.write(after)
