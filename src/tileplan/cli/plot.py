"""Draw a report's liveness chart as a PNG image.

Usage per step stacked by value group, both regions against their budgets, the peak
and the repeat blocks; for a Tenstorrent report, each program's L1 on one core (circular
buffers up, L1 buffers down, where they meet). The image is REPORT.png beside REPORT.json unless -o says
otherwise.
"""

from __future__ import annotations

import argparse

from tileplan.errors import InputError
from tileplan.ioutil import output_path, write_atomic
from tileplan.render import human_bytes, require_extra
from tileplan.report.reading import read_any_report
from tileplan.report.tt_report import TtReport
from tileplan.views.liveness import build_liveness


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="a report (JSON) written by tileplan plan")
    p.add_argument("-o", "--output", metavar="FILE.png", help="image path (default: the report's path with .png)")
    p.add_argument("-f", "--force", action="store_true", help="overwrite an existing image")


def run(args: argparse.Namespace) -> int:
    if args.output and not args.output.lower().endswith(".png"):
        raise InputError(f"{args.output}: the image is a PNG; give a path ending in .png")
    require_extra("plot", "matplotlib")
    from tileplan.render.plot import render_png  # noqa: PLC0415 (the optional extra)

    output = output_path(args.report, args.output, ".png", args.force)
    report = read_any_report(args.report)
    if isinstance(report, TtReport):
        from tileplan.render.tt_plot import render_tt_png  # noqa: PLC0415 (the optional extra)
        from tileplan.views.tt_page import build_tt_page
        image = render_tt_png(build_tt_page(report))
    else:
        image = render_png(build_liveness(report))
    write_atomic(output, image, overwrite=args.force)
    print(f"wrote {output} ({human_bytes(len(image))})")
    return 0
