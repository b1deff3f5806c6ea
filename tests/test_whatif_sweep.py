"""`tileplan plan`'s what-if rows (which knobs make F16 weights fit, each row re-derived
from its command), the sweep's rows in order, one-line errors for a bad sweep, the CI
gate (exit 3, kept through a pipe), the worst tile's split and the Python API writing
what the CLI writes."""

import json

import pytest

from tileplan.cli.main import main
from tileplan.app.request import PlanRequest
from tileplan.app.whatif import layers_text, most_layers_that_fit, outcome, what_if
from tileplan.app.build_whatif import outcome_section


@pytest.fixture(scope="module")
def f16_rows():
    base = PlanRequest(weights="f16")
    return base, base.plan(), what_if(base)


def test_f16_what_if_shows_which_knobs_make_it_fit(f16_rows):
    base, plan, rows = f16_rows
    assert not plan.verdict.fits
    by_knob = {(r.knob, r.value.split(" ")[0]): r for r in rows}
    weights = by_knob[("weights", "f8f143:-4")]
    assert weights.outcome.fits and weights.outcome.margin > 0
    layers = next(r for r in rows if r.knob == "layers")
    n = layers.request.layers
    assert layers.outcome.fits and 1 <= n < 27
    assert not base.with_(layers=n + 1).plan().verdict.fits  # the most that fit, not fewer
    assert {r.knob for r in rows} == {"weights", "partials", "attention_products", "gemm_output_packing", "layers",
                                      "batch", "batch on 2 IPUs", "available_memory_proportion"}
    half = by_knob[("partials", "f16")]  # F16 weights: the products' partials in F16 (half partials)
    assert half.request.partials == "f16" and half.request.weights == "f16"
    assert by_knob[("batch", "1")].value == "1 (none fit up to 3)"  # F16 weights alone overflow one IPU
    two = next(r for r in rows if r.knob == "batch on 2 IPUs")
    assert two.request.batch >= 1 and two.request.pipelined and two.outcome.fits
    bigger = two.request.with_(batch=two.request.batch + 1, ipus="auto", layers_per_ipu=None).pipeline()
    assert bigger is None or len(bigger.plans) > 2  # the largest batch two IPUs hold, not less
    for r in rows:  # each row re-derives from its command's request
        if r.request.pipelined:
            stages = r.request.pipeline().plans
            assert r.outcome == min((outcome(p) for p in stages), key=lambda o: o.margin)
        else:
            assert r.outcome == outcome(r.request.plan())
        assert r.request.command().startswith("tileplan plan siglip-so400m-patch14-384 --layers ")


def test_most_layers_that_fit_is_none_when_one_layer_does_not(monkeypatch):
    base = PlanRequest(layers=2)

    class Never:
        class verdict:
            fits = False

    found, plan = most_layers_that_fit(base, lambda r: Never)
    assert (found.best, found.upto) == (0, 3) and plan is Never
    assert layers_text(found, 2) == "1 (none fit up to 3)"


def test_plan_writes_the_what_if_table(tmp_path, capsys):
    out = tmp_path / "f16.json"
    assert main(["plan", "--weights", "f16", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["what_if"]["baseline"]["fits"] is False
    assert any(r["knob"] == "weights" and r["fits"] for r in doc["what_if"]["rows"])
    assert "what if (each row re-planned" in text and "(the most that fit up to " in text


def test_fail_over_budget_exits_3_after_writing(tmp_path, capsys):
    out = tmp_path / "f16.json"
    assert main(["plan", "--weights", "f16", "--no-what-if", "--fail-over-budget", "-o", str(out)]) == 3
    assert json.loads(out.read_text())["fits_budget"] is False
    assert main(["plan", "--layers", "2", "--no-what-if", "--fail-over-budget", "-o", str(tmp_path / "ok.json")]) == 0


def test_sweep_rows_in_order(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    code = main(["plan", "--sweep", "weights=f8f143:-4,f16", "--sweep", "layers=2,27", "-o", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["knobs"] == ["weights", "layers"]
    assert [(r["weights"], r["layers"]) for r in doc["rows"]] == [
        ("f8f143:-4", 2), ("f8f143:-4", 27), ("f16", 2), ("f16", 27)]
    assert [r["fits"] for r in doc["rows"]] == [True, True, True, False]
    single = outcome_section(outcome(PlanRequest(weights="f16", layers=27).plan())).to_json()
    del single["command"]  # a sweep row's own command is its combination's
    assert {k: doc["rows"][3][k] for k in single} == single
    text = capsys.readouterr().out
    assert "weights    layers  verdict" in text and "does not fit" in text


@pytest.mark.parametrize("spec,message", [
    ("weights", "expected KNOB=V1,V2"),
    ("colour=red", "unknown knob 'colour'"),
    ("layers=two", "expected integers, found 'two'"),
    ("weights=f12", "--sweep weights=f12: --weights 'f12': expected f16, f32, bf16, f8f143:SCALE or f8f152:SCALE"),
    ("attention-products=fast", "--sweep attention-products=fast: attention-products must be one of"),
    ("policy=smart", "--sweep policy=smart: unknown policy 'smart'"),
    ("layers=0,2", "--sweep layers=0: --layers must be in [1, 1000], found 0"),
])
def test_bad_sweeps_are_one_line_errors(tmp_path, capsys, spec, message):
    assert main(["plan", "--sweep", spec, "-o", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_gate_keeps_exit_3_when_the_reader_leaves_early(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "f16.json"
    code = subprocess.run(
        f"{sys.executable} -m tileplan.cli.main plan --weights f16 --no-what-if --fail-over-budget -o {out} | head -1",
        shell=True, executable="/bin/bash", capture_output=True, text=True)
    assert code.stdout.startswith("wrote ") and "Traceback" not in code.stderr
    status = subprocess.run(
        f"set -o pipefail; {sys.executable} -m tileplan.cli.main check --budget {out} | head -1",
        shell=True, executable="/bin/bash", capture_output=True, text=True)
    assert status.returncode == 3 and "Traceback" not in status.stderr


def test_plan_splits_the_worst_tile_into_resident_and_step_dependent(tmp_path, capsys):
    import re

    out = tmp_path / "r.json"
    assert main(["plan", "--layers", "3", "--no-what-if", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    m = re.search(r"on tile (\d+): (\d+) B always live .*, (\d+) B not always live .*, (\d+) B exchange rows", text)
    doc = json.loads(out.read_text())
    total = doc["verdict"]["regions"][-1]
    assert m and int(m.group(1)) == total["tile"]
    assert int(m.group(2)) + int(m.group(3)) + int(m.group(4)) == total["peak"]
    assert int(m.group(2)) > 0 and int(m.group(3)) > 0
    top = doc["verdict"]["peak_tile"]["values"][0]
    assert f"largest live values on tile {total['tile']} (bytes there):" in text
    assert f"{top['bytes']:>8} B  " in text and f"(value {top['id']})" in text


def test_the_python_api_gives_what_plan_writes(tmp_path):
    """`PlanResult.to_json()` is what `tileplan plan -o` writes for the same arguments:
    with the what-if table, unless asked not to."""
    import tileplan

    assert main(["plan", "synthetic:500", "-o", str(tmp_path / "a.json")]) == 0
    text = tileplan.plan("synthetic:500").to_json()
    assert '"what_if":{"baseline":' in text and text == (tmp_path / "a.json").read_text()
    assert main(["plan", "synthetic:500", "--no-what-if", "-o", str(tmp_path / "b.json")]) == 0
    text = tileplan.plan("synthetic:500", what_if=False).to_json()
    assert '"what_if"' not in text and text == (tmp_path / "b.json").read_text()
