"""Report files for the tests of the reading verbs (summary, html, plot, diff): the
hostile program and helpers. The fixtures that write the reports are in
`report_fixtures.py` (`pytest_plugins = ["report_fixtures"]` in a test module).
"""

from __future__ import annotations

from pathlib import Path

from tileplan.model.info import ModelShape, ProgramInfo
from tileplan.model.ir import Operation, Program, Tensor
from tileplan.model.precision import F16
from tileplan.model.role import Role
from tileplan.report.format import Report, from_json_text, to_json_text

HOSTILE_TENSOR = "</script><script>alert(1)</script>"
HOSTILE_OPERATION = "<img src=x onerror=alert(2)>"
HOSTILE_PROGRAM = "<u>hostile</u> & \u2028 model"
HOSTILE_INPUT = "input $\\frac$ [bold]x[/bold]"  # matplotlib's mathtext, rich's markup


def hostile_program() -> Program:
    """x [1, 64, 256] @ w [256, 256] where w is named `</script><script>alert(1)</script>`,
    the operation `<img src=x onerror=alert(2)>` and x `input $\\frac$ [bold]x[/bold]`."""
    x = Tensor(0, HOSTILE_INPUT, (1, 64, 256), F16, Role.INPUT)
    w = Tensor(1, HOSTILE_TENSOR, (256, 256), F16, Role.WEIGHT)
    op = Operation(2, 0, "matmul", HOSTILE_OPERATION, (HOSTILE_INPUT, HOSTILE_TENSOR), "y", (1, 64, 256), F16)
    return Program(HOSTILE_PROGRAM, (x, w), (op,), ("y",), ProgramInfo(shape=ModelShape(layers=1)))


def write_report(report: Report, path: Path) -> Path:
    path.write_text(to_json_text(report), encoding="utf-8")
    return path


def read_back(path: Path) -> Report:
    return from_json_text(path.read_text(encoding="utf-8"), str(path))
