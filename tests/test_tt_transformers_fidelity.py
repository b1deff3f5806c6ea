"""The fidelity benchmark's tt-transformers cases (benchmarks/
fidelity_tt_transformers_cases.py) pinned: the calibration rows this frontend was
checked against while it was written, and #21904's message to the byte."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import fidelity_tt_transformers_cases as cases  # noqa: E402

BY_KEY = {c.key: c for c in cases.cases()}


def test_the_split_is_written_down() -> None:
    calibration = sorted(k for k, c in BY_KEY.items() if c.set == cases.CALIBRATION)
    assert calibration == ["P1-n150", "P1-n300", "P2-n150", "P2-n300", "P3-n150", "P3-n300", "P4-n150", "P4-n300"]
    assert all(c.set == cases.HELD_OUT for k, c in BY_KEY.items() if k not in calibration)


@pytest.mark.parametrize(("key", "answer"), [
    ("P3-n150", "largest 8k"), ("P4-n300", "largest 32k"), ("P4-n150", "refused"),
    ("T3", "Out of Memory: Not enough space to allocate 71999488 B DRAM buffer across 12 banks, where each bank "
           "needs to store 6000320 B")])
def test_cases(key: str, answer: str) -> None:
    cells, agrees, _ = cases.evaluate(BY_KEY[key])
    assert agrees and cells[4].startswith(answer)
