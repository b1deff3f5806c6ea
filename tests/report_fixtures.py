"""Session fixtures: report files from real plans, written once per test session.

The so400m tower with F8 weights (fits) and F16 weights (does not fit), the reference
policy on 4 layers (planning stops at operation 0: nulls and rejections), and a tiny
program whose names are HTML, script, math and markup (`report_files.hostile_program`).
Load with `pytest_plugins = ["report_fixtures"]`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tileplan.kernel.options import AttentionProducts, GemmOutputPacking, Options
from tileplan.lowering.policy import policy
from tileplan.model.machine import IPU21
from tileplan.planner.plan import plan_program
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.report.format import Report

from helpers import plan
from report_files import hostile_program, read_back, write_report


def checked(report: Report, path: Path) -> Path:
    """Write the report; like every report the suite writes, it must pass `tileplan check`."""
    write_report(report, path)
    assert check_report(read_back(path)).consistent, path
    return path


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("reports")


@pytest.fixture(scope="session")
def f8_path(report_dir) -> Path:
    return checked(build_report(plan()), report_dir / "f8.json")


@pytest.fixture(scope="session")
def f16_path(report_dir) -> Path:
    return checked(build_report(plan(weights="f16")), report_dir / "f16.json")


@pytest.fixture(scope="session")
def rejected_path(report_dir) -> Path:
    return checked(build_report(plan(layers=4, policy_name="reference")), report_dir / "rejected.json")


@pytest.fixture(scope="session")
def hostile_path(report_dir) -> Path:
    p = plan_program(hostile_program(), IPU21, policy("default"),
                     Options(GemmOutputPacking("Native"), AttentionProducts("Automatic")))
    return checked(build_report(p), report_dir / "hostile.json")
