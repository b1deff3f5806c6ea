"""Re-derive every number of a report from the report alone.

With its own code (`tileplan.check.driver`, which imports nothing of the planner):
each value's shard bytes from its layout text, shape and precision; the live sets'
rules; each step's usage from its live set, storage groups and scratch; the peaks,
their steps, the overflow, the exchange rows, the exact per-tile accounting and the
verdict; the sections views read. Prints each disagreement and each defect (sentinel,
wrapped arithmetic), one line each, saying what the report gives and what re-derives.
Exit 0: consistent; 1: not; 2: the report cannot be read.

`--budget` makes it a CI gate: after the check, a consistent report whose program
does not fit (`fits_budget` false) prints the verdict line and exits 3.

A Tenstorrent report is re-derived by check's own rules for it (check/tenstorrent.py):
every buffer's per-bank size and address (first fit replayed over the report's events),
every program's live buffers and circular-buffer region, the verdict's figures and
tt-metal's message, the peaks.
"""

from __future__ import annotations

import argparse

from tileplan.cli import EXIT_OVER_BUDGET
from tileplan.check.driver import check_report
from tileplan.check.tenstorrent import check_tt_report
from tileplan.report.reading import read_any_report
from tileplan.report.tt_report import TtReport
from tileplan.views.common import verdict_line
from tileplan.views.tt_summary import verdict_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="a report (JSON, version 1 or 2)")
    p.add_argument("--budget", action="store_true",
                   help="also gate on the budget: exit 3 when the (consistent) report does not fit")


def run(args: argparse.Namespace) -> int:
    report = read_any_report(args.report)
    if isinstance(report, TtReport):
        return run_tt(args, report)
    result = check_report(report)
    args.decided = (1 if not result.consistent else
                    EXIT_OVER_BUDGET if args.budget and not report.fits_budget else 0)
    unrepresentable = [f for f in result.findings if f.kind in ("unrepresentable", "rejected")]
    representable = result.values_total - len(unrepresentable)
    print(f"{args.report}: {result.values_total} values, {len(report.steps)} steps, scope {report.scope}")
    print(f"values: {result.values_agreeing} of {representable} representable values' shard, aligned "
          f"and total bytes agree; {len(unrepresentable)} unrepresentable")
    print(f"steps: {result.steps_agreeing} of {result.steps_total} steps' usage agrees")
    if result.known_peaks is not None:
        k = result.known_peaks
        print(f"without the unrepresentable values (a lower bound): standard peak {k.standard} B at step "
              f"{k.standard_step}, interleaved peak {k.interleaved} B at step {k.interleaved_step}")
    for kind in ("rejected", "unrepresentable", "defect", "disagree"):
        for f in result.findings:
            if f.kind == kind:
                print(f.to_text())
    counts = {k: sum(f.kind == k for f in result.findings) for k in ("unrepresentable", "defect", "disagree")}
    what_if = report.sections.what_if
    if what_if is not None and what_if.baseline is not None:  # any other shape is a finding above
        print(f"what_if: the baseline re-derives; {len(what_if.rows)} rows are separate plans, not re-derived here; "
              "run each row's command")
    if result.consistent:
        rejected = sum(f.kind == "rejected" for f in result.findings)
        note = f" ({rejected} unrepresentable values are null and listed under rejections)" if rejected else ""
        print(f"consistent: every number re-derives from the report{note}")
        if args.budget:
            print(verdict_line(report))
        return args.decided
    print(f"inconsistent: {counts['unrepresentable']} unrepresentable, {counts['defect']} defects, "
          f"{counts['disagree']} disagreements")
    return args.decided


def run_tt(args: argparse.Namespace, report: TtReport) -> int:
    result = check_tt_report(report)
    args.decided = (1 if not result.consistent else
                    EXIT_OVER_BUDGET if args.budget and not report.fits else 0)
    d = report.device
    print(f"{args.report}: Tenstorrent report of {report.model} on {d.machine}: {report.buffers.count} buffers, "
          f"{report.operations.count} operations, {report.programs.count} programs")
    print(f"buffers: {result.buffers_agreeing} of {report.buffers.count} addresses re-derive by first fit over the "
          "events")
    print(f"programs: {result.programs_agreeing} of {report.programs.count} programs' live buffers and circular "
          "buffers re-derive")
    if report.reproduce is not None:
        n = len(report.reproduce.output_layouts)
        print(f"reproduce: the device parameters re-derive; {result.layouts_agreeing} of {n} output layouts agree with "
              "their operations and buffers" + ("; the override line re-derives from them" if n else ""))
    for f in result.findings:
        print(f.to_text())
    if report.what_if is not None:
        print(f"what_if: {len(report.what_if.rows)} rows are separate plans, not re-derived here; run each row's "
              "command")
    if result.consistent:
        print("consistent: every number re-derives from the report, the verdict and its message too")
        if args.budget:
            print(verdict_text(report))
        return args.decided
    print(f"inconsistent: {len(result.findings)} findings")
    return args.decided
