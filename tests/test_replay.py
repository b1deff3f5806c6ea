"""Lowering each operation signature once and replaying it gives exactly the lowering
of every operation from scratch: the same values (names included) and steps."""

from __future__ import annotations

import pytest

from tileplan.lowering.core import Options
from tileplan.lowering.policy import policy
from tileplan.lowering.program import lower_program
from tileplan.model.machine import IPU21
from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic
from tileplan.planner.request import PlanRequest

CASES = {
    "so400m": (PlanRequest(), "default"),
    "so400m-unrolled": (PlanRequest(unroll=True), "default"),
    "so400m-reference-names": (PlanRequest(policy="reference"), "reference"),
    "so400m-f16-memory-proportion": (PlanRequest(weights="f16", available_memory_proportion="0.05"), "default"),
    "so400m-batch2-streamed": (PlanRequest(batch=2, attention_products="streamed"), "default"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_replay_equals_plain_lowering(case: str) -> None:
    request, layout_policy = CASES[case]
    program, options = request.program(), request.options
    plain = lower_program(program, IPU21, policy(layout_policy), options, replay=False)
    replayed = lower_program(program, IPU21, policy(layout_policy), options, replay=True)
    assert replayed == plain


def test_replay_equals_plain_lowering_on_a_long_chain() -> None:
    program = build_synthetic(SyntheticConfig(2000))
    plain = lower_program(program, IPU21, policy("default"), Options(), replay=False)
    replayed = lower_program(program, IPU21, policy("default"), Options(), replay=True)
    assert replayed == plain
