"""The SigLIP encoder unrolled (`--unroll`), one copy of the body per layer: the same
tensors, ids and layouts as the repeat block, the same peaks for few layers, a plan
that runs to the end and passes check; the repeat block stands for its first iteration
and counts the parameters later iterations need."""

import json
from dataclasses import replace

import pytest

from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.builtins import siglip
from tileplan.model.ir import RepeatBlock
from tileplan.model.machine import IPU21
from tileplan.model.precision import from_option
from tileplan.planner.plan import plan_program
from tileplan.check.driver import check_report

from helpers import plan as repeat_plan
from helpers import round_trip

BASE = "siglip-base-patch16-224"
LAYER_OPERATIONS = 14
_CACHE: dict = {}


def unrolled(layers: int, model: str = siglip.DEFAULT_MODEL, weights: str = "f8f143:-4"):
    key = (layers, model, weights)
    if key not in _CACHE:
        program = siglip.build_vit(siglip.config(model, layers=layers), from_option(weights), unroll=True)
        _CACHE[key] = plan_program(program, IPU21, policy("default"), Options())
    return _CACHE[key]


def _programs(layers: int, model: str = BASE):
    cfg = siglip.config(model, layers=layers)
    weights = from_option("f8f143:-4")
    return siglip.build_vit(cfg, weights), siglip.build_vit(cfg, weights, unroll=True)


def _layer(name: str) -> int | None:
    """The layer index in an encoder name (`vit.encoder.layer3.mlp.up` -> 3)."""
    prefix = "vit.encoder.layer"
    if not name.startswith(prefix) or name[len(prefix)] == "{":
        return None
    return int(name[len(prefix):].split(".")[0])


def test_unrolled_program_has_one_copy_of_the_body_per_layer():
    repeat, flat = _programs(3)
    assert not any(isinstance(item, RepeatBlock) for item in flat.items)
    ops = flat.operations()
    assert [op.index for op in ops] == list(range(3 + 3 * LAYER_OPERATIONS + 1 + 14))
    assert [op.origin for op in ops] == sorted(op.origin for op in ops)
    body = next(item for item in repeat.items if isinstance(item, RepeatBlock)).body
    for i in range(3):
        layer = ops[3 + i * LAYER_OPERATIONS: 3 + (i + 1) * LAYER_OPERATIONS]
        assert [op.name for op in layer] == [op.name.replace("{i}", str(i)) for op in body]
        assert [op.kind for op in layer] == [op.kind for op in body]
        for op in layer:  # every layer reads its own parameters, never another layer's
            assert {_layer(name) for name in op.inputs if name.startswith("vit.encoder.")} <= {i, i - 1, None}
            assert not any("{i}" in name for name in (*op.inputs, op.output, op.name))
    # layer i + 1 starts from layer i's output; the final norm reads the last layer's
    assert ops[3 + LAYER_OPERATIONS].inputs[0] == "vit.encoder.layer0.mlp.residual.out"
    assert ops[3 + 3 * LAYER_OPERATIONS].inputs[0] == "vit.encoder.layer2.mlp.residual.out"


def test_unrolled_program_declares_the_same_tensors_in_the_same_order():
    repeat, flat = _programs(3)
    # origins number the graph's nodes, operations included: those of the tensors
    # declared after the encoder move, in the same order
    strip = lambda ts: [(t.name, t.shape, t.precision, t.role) for t in ts]  # noqa: E731
    assert strip(flat.tensors) == strip(repeat.tensors)
    assert [t.origin for t in flat.tensors] == sorted(t.origin for t in flat.tensors)
    through_encoder = 1 + max(i for i, t in enumerate(repeat.tensors) if t.name.startswith("vit.encoder.layer"))
    assert flat.tensors[:through_encoder] == repeat.tensors[:through_encoder]
    assert flat.tensor("vit.encoder.layer2.attention.qkv.weight").precision == from_option("f8f143:-4")
    assert flat.info == replace(repeat.info, unroll=True)
    assert not repeat.info.unroll


def test_unrolled_plan_runs_to_the_end_once_per_step_and_passes_check():
    flat = unrolled(2)
    assert flat.scope == "program" and flat.rejections == ()
    assert {s.execution_count for s in flat.steps} == {1}
    assert {o.execution_count for o in flat.operations} == {1}
    findings = check_report(round_trip(flat))
    assert findings.consistent, [f.to_text() for f in findings.findings][:5]
    names = [o.name for o in flat.operations]
    assert "vit.encoder.layer1.mlp.down" in names and not any("{i}" in n for n in names)


def test_declared_values_keep_their_ids_names_and_layouts():
    flat, repeat = unrolled(2), repeat_plan(layers=2)
    declared = [v for v in repeat.values if v.resident]
    assert [v.id for v in declared] == list(range(1 + 2 + 1 + 12 * 2 + 2 + 13))
    by_id = {v.id: v for v in flat.values}
    for v in declared:
        assert (by_id[v.id].name, by_id[v.id].layout, by_id[v.id].bytes) == (v.name, v.layout, v.bytes)


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_peaks_agree_with_the_repeat_block_for_few_layers(layers):
    # with few layers the peak is past the encoder (in the MAP head), where both
    # plans hold the same values
    flat, repeat = unrolled(layers), repeat_plan(layers=layers)
    for region in ("standard", "interleaved", "total"):
        assert getattr(flat.peaks, region) == getattr(repeat.peaks, region), region
        assert flat.exact.peak(region)[0] == repeat.exact.peak(region)[0], region
    assert flat.verdict.fits == repeat.verdict.fits


def _later_parameters(plan, live, layer: int) -> set[int]:
    by_id = {v.id: v for v in plan.values}
    return {v for v in live if by_id[v].resident and (_layer(by_id[v].name) or 0) > layer}


def _layer0_steps(plan) -> list:
    first = min(o.index for o in plan.operations if o.name.startswith("vit.encoder.layer"))
    return [s for s in plan.steps if first <= s.source < first + LAYER_OPERATIONS]


@pytest.mark.parametrize("layers", [3, 27])
def test_the_repeat_block_stands_for_its_first_iteration(layers):
    """Each step of layer 0 unrolled holds what the repeat block's step holds: the
    block's steps stand for the first iteration, so the later layers' parameters
    stay live there, and the usage is the same byte for byte."""
    flat, repeat = unrolled(layers), repeat_plan(layers=layers)
    steps = _layer0_steps(flat)
    assert len(steps) == len(_layer0_steps(repeat)) > LAYER_OPERATIONS
    later_seen = 0
    for s in steps:
        r = repeat.steps[s.index]
        assert (r.source, r.operation, r.scratch) == (s.source, s.operation, s.scratch)
        assert s.usage == r.usage, s.index
        later = _later_parameters(flat, set(s.live), 0)
        later_seen += bool(later)
    assert later_seen == len(steps)  # later layers' parameters wait in every step of layer 0


def test_so400m_unrolled_plans_to_the_end_and_fits():
    flat, repeat = unrolled(27), repeat_plan()
    assert flat.scope == "program" and flat.verdict.fits
    assert len(flat.operations) == 3 + 27 * LAYER_OPERATIONS + 1 + 14
    # the estimate and the exact accounting agree on the worst tile's bytes (as for the repeat block)
    assert flat.exact.peak("total")[0] <= flat.peaks.total
    # unrolled, the peak is in layer 0, where every later layer's parameters still wait
    peak = flat.steps[flat.peaks.total_step]
    assert peak.source in {s.source for s in _layer0_steps(flat)}
    assert flat.peaks.total >= repeat.peaks.total


def test_repeat_block_peak_counts_the_parameters_later_iterations_need():
    assert repeat_plan().peaks.total == unrolled(27).peaks.total


def test_cli_unroll_flag(tmp_path, capsys):
    from tileplan.cli.main import main

    out = tmp_path / "u.json"
    assert main(["plan", "--layers", "2", "--unroll", "--no-what-if", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["program"]["unroll"] is True
    assert {o["execution_count"] for o in doc["operations"]} == {1}
    assert "--unroll" in capsys.readouterr().out
