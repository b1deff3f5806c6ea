"""Write a report as one self-contained HTML page that works offline.

It shows the verdict, the liveness chart (usage per step stacked by value group, both
regions, budgets, the peak, repeat blocks; click a step to list its live values), the
largest allocations, the per-tile view (histogram and heat map of the tiles' peaks)
and the what-if table.
The page is REPORT.html beside REPORT.json unless -o says otherwise.
"""

from __future__ import annotations

import argparse

from tileplan.ioutil import output_path, write_atomic
from tileplan.render import human_bytes, require_extra
from tileplan.report.format import read_report
from tileplan.views.liveness import build_liveness


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="a report (JSON) written by tileplan plan")
    p.add_argument("-o", "--output", help="page path (default: the report's path with .html)")
    p.add_argument("-f", "--force", action="store_true", help="overwrite an existing page")


def run(args: argparse.Namespace) -> int:
    require_extra("html", "jinja2")
    from tileplan.render.html import render_html  # noqa: PLC0415 (the optional extra)

    output = output_path(args.report, args.output, ".html", args.force)
    page = render_html(build_liveness(read_report(args.report)))
    write_atomic(output, page, overwrite=args.force)
    print(f"wrote {output} ({human_bytes(len(page.encode()))}, self-contained)")
    return 0
