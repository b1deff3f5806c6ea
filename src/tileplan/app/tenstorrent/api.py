"""`tileplan.plan(model, machine="n150", ...)`: the Python API's Tenstorrent entry.

`model` is what the frontend takes: a path or a name as `tileplan plan` takes it (and,
for a frontend that imports objects, a torch module). The result holds the report:
`.fits`, `.verdict` (tt-metal's message when it does not fit), `.to_json()` (exactly
what `tileplan plan -o` writes for the same arguments) and `.to_html()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tileplan.errors import InputError
from tileplan.app.tenstorrent.run import plan_report, request_from
from tileplan.report.tt_report import TtReport
from tileplan.views.tt_summary import verdict_text


@dataclass(frozen=True)
class TtPlanResult:
    """A model planned on a Tenstorrent machine: its report."""

    report: TtReport

    @property
    def fits(self) -> bool:
        return self.report.fits

    @property
    def verdict(self) -> str:
        return verdict_text(self.report)

    def to_json(self) -> str:
        return self.report.to_bytes().decode("utf-8")

    def to_html(self) -> str:
        from tileplan.render.tt_html import render_tt_html
        from tileplan.views.tt_page import build_tt_page
        return render_tt_html(build_tt_page(self.report))

    def _repr_html_(self) -> str:  # notebooks show the page
        return self.to_html()

    def __repr__(self) -> str:
        return f"TtPlanResult({self.verdict!r})"


def plan_tt_model(model: Any, example_inputs: Any = None, *, machine: str, what_if: bool = True,
                  **given: Any) -> TtPlanResult:
    """Plan `model` on the Tenstorrent `machine`; `given`: the frontend and its options
    (`frontend=`, `opt_level=`, `prefill_chunk=`, `weights=`, ...), the device
    parameters (`l1_small_size=`, `trace_region_size=`, `tt_version=`, `dispatch=`) and
    `to_dram=` (operation names)."""
    if example_inputs is not None:
        raise InputError("example_inputs= is for a module planned on an IPU; on a Tenstorrent machine give the "
                         "model by path or name (a config.json, a hub id, .onnx, .pt2)")
    request = request_from({"model": model, "machine": machine, **given})
    return TtPlanResult(plan_report(request, what_if))
