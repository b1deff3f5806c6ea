"""Lowering each operation signature once and replaying it gives exactly the lowering
of every operation from scratch: the same values (names included) and steps. And the
steps keep saying in their text what their lowering says of them: the kind is the
text's first word, and a step exchanges exactly when the report's rule (`tileplan
check`'s, from the text alone) says so."""

from __future__ import annotations

import pytest

from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.lowering.program import lower_program
from tileplan.model.machine import IPU21
from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic
from tileplan.app.request import PlanRequest
from tileplan.check.driver import exchanges

CASES = {
    "so400m": (PlanRequest(), "default"),
    "so400m-unrolled": (PlanRequest(unroll=True), "default"),
    "so400m-reference-names": (PlanRequest(policy="reference"), "reference"),
    "so400m-f16-memory-proportion": (PlanRequest(weights="f16", available_memory_proportion="0.05"), "default"),
    "so400m-batch2-streamed": (PlanRequest(batch=2, attention_products="streamed"), "default"),
    # a repeat block of one layer reads each family through one member, as the embedding
    # reads its bias: the same signature, and copies named after different things
    "so400m-one-layer": (PlanRequest(layers=1), "default"),
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


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_step_text_says_its_kind_and_whether_it_exchanges(case: str) -> None:
    request, layout_policy = CASES[case]
    lowering = lower_program(request.program(), IPU21, policy(layout_policy), request.options)
    for s in lowering.steps:
        assert s.operation.split(" ")[0] == s.kind.value, s
        assert s.exchange == exchanges(s.operation), s


def test_a_one_layer_block_names_its_values_after_the_family():
    """A one-layer block reads each family through its one member (layer 0's), as the
    embedding reads its own bias: the same signatures, replayed. What the block's
    operations make is named after the block (`layer{i}`), never after that member;
    and with the default policy no parameter is copied at all (each rests where its
    first reader asks, or compactly, and a product reads its weights where they rest),
    so the only new values beside results are the conversions for the AMP."""
    request, layout_policy = CASES["so400m-one-layer"]
    lowering = lower_program(request.program(), IPU21, policy(layout_policy), request.options)
    made = [v.name for v in lowering.values[lowering.declared:]]
    assert "vit.encoder.layer{i}.mlp_norm [as F8]" in made and "vit.encoder.layer{i}.mlp.down.bias_add" in made
    assert not any(n.startswith("vit.encoder.layer0.") for n in made)
    assert not any("copy" in n for n in made)
