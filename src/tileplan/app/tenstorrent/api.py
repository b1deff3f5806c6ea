"""`tileplan.plan(model, machine="n150", ...)`: the Python API's Tenstorrent entry.

`model` is what the frontend takes: a path or a name as `tileplan plan` takes it, or for
the tt-mlir frontend a Python object (a `torch.nn.Module` with `example_inputs`, a
`torch.export.ExportedProgram`, an imported `Graph`: app/tenstorrent/tt_mlir_models.py
`ObjectModel`), planned at its example inputs' shapes in its own dtype, its what-if rows
re-planned from the object (their commands are the `tileplan.plan(...)` calls). The result holds the report:
`.fits`, `.verdict` (tt-metal's message when it does not fit), `.to_json()` (exactly
what `tileplan plan -o` writes for the same arguments) and `.to_html()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tileplan.errors import InputError
from tileplan.app.tenstorrent.request import DEFAULT_FRONTEND
from tileplan.app.tenstorrent.run import plan_report, request_from
from tileplan.app.tenstorrent.tt_mlir_models import ObjectModel
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
    if isinstance(model, Path):
        model = str(model)
    if not isinstance(model, str):
        if given.get("frontend", DEFAULT_FRONTEND) != DEFAULT_FRONTEND:
            raise InputError(f"the {given['frontend']} frontend plans a model by its name or config.json (it "
                             f"implements its own decoders); a {type(model).__name__} object is planned by the "
                             f"{DEFAULT_FRONTEND} frontend")
        model = ObjectModel.of(model, example_inputs)
    elif example_inputs is not None:
        raise InputError("example_inputs= is for a model given as a torch.nn.Module; a model named by path or name "
                         "has its own inputs")
    request = request_from({"model": model, "machine": machine, **given})
    return TtPlanResult(plan_report(request, what_if))
