"""Every number of the pinned plans equals what the planner gave (tests/data/
golden_numbers.json, written by the planner of commit 097c91e before the columnar core,
rewritten on purpose where the physics changed, each time said in the commit: always-live
parameters; matmuls and convolutions as poplin plans them, expandDims, the
rearranged input, the reduction; created layouts; every-iteration reads in a block;
all the memory on a tile counted in the verdict, no exchange rows: verdicts, placements;
vectors created linearly as PopART's linear mapper creates them):
sizes, usage, peaks, verdicts and the exact per-tile figures,
not names or order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden import golden_plans, plan_numbers

GOLDEN = json.loads((Path(__file__).parent / "data" / "golden_numbers.json").read_text())
PLANS = golden_plans()


@pytest.mark.parametrize("case", sorted(PLANS))
def test_numbers_unchanged(case: str) -> None:
    got = json.loads(json.dumps(plan_numbers(PLANS[case]())))
    want = GOLDEN[case]
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], f"{case}: {key} changed"
