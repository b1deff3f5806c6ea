"""Write a report as one self-contained HTML page that works offline.

It shows the verdict, the liveness chart (usage per step stacked by value group, both
regions, budgets, the peak, repeat blocks; click a step to list its live values), the
largest allocations, the per-tile view (histogram and heat map of the tiles' peaks)
and the what-if table. A Tenstorrent report's page draws each program's L1 on one core:
circular buffers growing up from l1_unreserved_base, L1 buffers growing down from the top,
where they meet; then the buffers responsible, the peaks and the what-if rows.
The page is REPORT.html beside REPORT.json unless -o says otherwise.
"""

from __future__ import annotations

import argparse

from tileplan.ioutil import output_path, write_atomic
from tileplan.render import human_bytes, require_extra
from tileplan.report.reading import read_any_report
from tileplan.report.tt_report import TtReport
from tileplan.views.liveness import build_liveness


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="a report (JSON) written by tileplan plan")
    p.add_argument("-o", "--output", help="page path (default: the report's path with .html)")
    p.add_argument("-f", "--force", action="store_true", help="overwrite an existing page")


def run(args: argparse.Namespace) -> int:
    require_extra("html", "jinja2")
    from tileplan.render.html import render_html  # noqa: PLC0415 (the optional extra)

    output = output_path(args.report, args.output, ".html", args.force)
    report = read_any_report(args.report)
    if isinstance(report, TtReport):
        from tileplan.render.tt_html import render_tt_html  # noqa: PLC0415 (the optional extra)
        from tileplan.views.tt_page import build_tt_page
        page = render_tt_html(build_tt_page(report))
    else:
        page = render_html(build_liveness(report))
    write_atomic(output, page, overwrite=args.force)
    print(f"wrote {output} ({human_bytes(len(page.encode()))}, self-contained)")
    return 0
