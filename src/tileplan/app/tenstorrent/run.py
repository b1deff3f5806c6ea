"""The Tenstorrent planning run shared by `tileplan plan` and the Python API: the
request from the options given, planned, reported (with what reproduces it when it
fits: the frontend's `reproduce`), with its what-if rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# the tt-mlir frontend imports model names through the application's importers, and the
# tt-transformers frontend finds a hub id's config.json through the application
from tileplan.app.tenstorrent import tt_mlir_models, tt_transformers_hub  # noqa: F401
from tileplan.app.tenstorrent.build import build_tt_report
from tileplan.app.tenstorrent.request import TtRequest, tt_request
from tileplan.app.tenstorrent.whatif import with_tt_what_if
from tileplan.report.tt_report import TtReport
from tileplan.targets.tenstorrent.option_keys import OPTION_KEYS


def request_from(given: Mapping[str, Any]) -> TtRequest:
    """The request `tileplan plan`'s options (or `tileplan.plan`'s keywords) ask for."""
    options = {k: v for k, v in given.items() if k in OPTION_KEYS and v is not None}
    return tt_request(given["model"], given["machine"], given.get("frontend"), options,
                      l1_small_size=given.get("l1_small_size"), trace_region_size=given.get("trace_region_size"),
                      version=given.get("tt_version"), dispatch=given.get("dispatch"),
                      to_dram=tuple(given.get("to_dram") or ()))


def plan_report(request: TtRequest, what_if: bool = True, progress: Callable[[str], None] = lambda _: None
                ) -> TtReport:
    """The request planned and reported, with its what-if rows unless told not to."""
    progress(f"planning {request.command()}")
    plan = request.plan()
    found = request.stack().reproduce(request.options, plan.program, plan.device, request.to_dram) \
        if plan.fits else None
    report = build_tt_report(plan, request.name, request.frontend, request.words(), found)
    return with_tt_what_if(report, request, plan, progress) if what_if else report


