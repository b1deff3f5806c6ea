"""`tileplan plan synthetic:N` plans a chain of N timeline values (within two; the
report's `values` within 1 %) that passes check, names its report after N, varies
only the chain's knobs in its what-if and refuses the knobs of other models."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.cli.main import main
from tileplan.errors import InputError
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.lowering.program import lower_program
from tileplan.model.machine import IPU21
from tileplan.model.precision import F16, from_option
from tileplan.builtins.synthetic import (
    MAX_TIMELINE_VALUES, build_synthetic, config_for_timeline, smallest_timeline, timeline_count,
    timeline_per_operation,
)
from tileplan.app.request import PlanRequest
from tileplan.report.format import read_report


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_synthetic_20000_has_20000_values_within_1_percent_and_passes_check(tmp_path_factory, capsys):
    # not under tmp_path: `tileplan check` runs here, conftest's own check would double the time
    path = tmp_path_factory.mktemp("synthetic") / "X.json"
    code, out, err = run(capsys, "plan", "synthetic:20000", "-o", str(path), "--no-what-if")
    assert code == 0, err
    report = read_report(str(path))
    assert report.scope == "program"
    assert abs(len(report.values) - 20_000) <= 200, len(report.values)
    assert out.startswith(f"wrote {path}: scope program, {len(report.values)} values")
    assert "(tileplan plan synthetic:20000 --weights f8f143:-4)" in out.splitlines()[0]
    code, out, err = run(capsys, "check", str(path))
    assert code == 0, out


def test_default_output_is_named_after_n_and_what_if_varies_only_the_chains_knobs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "plan", "synthetic:1_000", "--weights", "f16")
    assert code == 0, err
    doc = json.loads((tmp_path / "synthetic-1000.json").read_text())
    assert abs(len(doc["timeline"]["values"]) - 1000) <= 2
    rows = doc["what_if"]["rows"]
    assert {r["knob"] for r in rows} == {"weights", "partials", "attention_products", "available_memory_proportion",
                                         "gemm_output_packing"}  # no batch, no layers: N is its size
    assert all(r["command"].startswith("tileplan plan synthetic:1_000 --weights ") for r in rows)
    assert doc["what_if"]["baseline"]["command"] == "tileplan plan synthetic:1_000 --weights f16"


@settings(max_examples=25, deadline=None)
@given(st.integers(smallest_timeline(), 3000), st.sampled_from(["f16", "f8f143:-4", "f32"]))
def test_the_planned_count_is_n_within_two_values(n, weights):
    """Whole blocks and the prefix of one more: within half the most one operation
    makes (2 with F8 or F32 weights: 1), except where N is below the smallest chain of
    these weights."""
    precision = from_option(weights)
    program = build_synthetic(config_for_timeline(n, precision), precision)
    made = len(lower_program(program, IPU21, policy("default"), Options()).values)
    declared, per_operation = timeline_per_operation(precision)
    smallest = declared + 4 * sum(per_operation)
    tolerance = max(per_operation) // 2
    assert tolerance <= 2 and abs(made - max(n, smallest)) <= tolerance, (n, made)


def test_the_ratio_with_default_sizes():
    # F16 weights: each operation makes its result and nothing else (weights read where
    # they rest, partials as scratch, the biases created in their add's layout): one
    # timeline value per graph value, the 25 declared tensors (input, 4 sets of 6) included
    declared, per_operation = timeline_per_operation(F16)
    assert (declared, per_operation) == (25, (1, 1, 1, 1, 1, 1, 1))
    assert config_for_timeline(100_000).values == 100_000
    assert smallest_timeline() == 25 + 4 * 7 == 53  # one block per set
    # F8 and F32 weights: the norm's and the gelu's F16 results are converted for the AMP
    for weights in ("f8f143:-4", "f32"):
        assert timeline_per_operation(from_option(weights)) == (25, (2, 1, 1, 2, 1, 1, 1))


@pytest.mark.parametrize("model,message", [
    ("synthetic:", "synthetic:N needs N, the timeline values, as a whole number (e.g. synthetic:100000), found ''"),
    ("synthetic:1e6", "synthetic:N needs N, the timeline values, as a whole number (e.g. synthetic:100000), "
                      "found '1e6'"),
    ("synthetic:-5", "synthetic:N needs N, the timeline values, as a whole number (e.g. synthetic:100000), "
                     "found '-5'"),
    ("synthetic:52", f"synthetic:N: N must be in [53, {MAX_TIMELINE_VALUES}] timeline values, found 52"),
    ("synthetic:20000001", f"synthetic:N: N must be in [53, {MAX_TIMELINE_VALUES}] timeline values, "
                           "found 20000001"),
    ("synthetic:" + "9" * 40, "synthetic:N needs N, the timeline values, as a whole number (e.g. synthetic:100000), "
                              f"found '{'9' * 40}'"),
])
def test_bad_n_is_a_one_line_error(model, message, capsys, tmp_path):
    with pytest.raises(InputError) as info:
        timeline_count(model)
    assert info.value.detail == message
    code, out, err = run(capsys, "plan", model, "-o", str(tmp_path / "bad.json"))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


@pytest.mark.parametrize("flag", [["--layers", "3"], ["--batch", "2"], ["--unroll"], ["--sequence-length", "9"]])
def test_knobs_of_other_models_are_refused(flag, capsys, tmp_path):
    code, out, err = run(capsys, "plan", "synthetic:500", *flag, "-o", str(tmp_path / "bad.json"))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "is not a knob of synthetic:N" in err, err


def test_a_request_names_and_builds_it():
    request = PlanRequest(model="synthetic:5000", weights="f16")
    assert request.imported and not request.batch_varies
    assert request.name == "synthetic-5000"
    assert request.program().name == "synthetic"
    assert request.command() == "tileplan plan synthetic:5000 --weights f16"
