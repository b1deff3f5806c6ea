"""Memory that is not tensors: the estimate, its calibration and its check."""

from __future__ import annotations

import json

from collections import Counter

from tileplan.cli.main import main
from tileplan.kernel.fragment import StepKind
from tileplan.planner.nontensor import STACK_BYTES, NonTensor, estimate_non_tensor, step_kind


def estimate(ops: list[str], exchanging: set[str]) -> NonTensor:
    """The estimate of steps running `ops` (texts; the kind is each text's first word,
    the ones in `exchanging` exchange)."""
    uses = Counter(ops)
    texts = list(uses)
    return estimate_non_tensor(texts, [StepKind(t.split(" ")[0]) for t in texts], [t in exchanging for t in texts],
                               [uses[t] for t in texts])


def test_each_class_counts_what_the_model_says():
    ops = ["Gemm { multiply: F16, accumulate: F32 }", "Gemm { multiply: F16, accumulate: F32 }",
           "Sum { axis: 0, staging: Complete }", "Copy { mapping: Reshape, reuse_local: false }",
           "View { op: Reshape }", "Binary { op: Add, broadcast: false, in_place: true }"]
    nt = estimate(ops, {ops[2], ops[3]})
    assert step_kind(ops[0]) == "Gemm { multiply: F16"
    assert (nt.kinds, nt.compute_steps, nt.program_steps, nt.exchange_steps) == (3, 4, 5, 2)
    assert (nt.vertex_code, nt.vertex_state, nt.control_code, nt.exchange_code) == (3 * 550, 4 * 229, 5 * 165,
                                                                                    2 * 221)
    assert nt.stack == STACK_BYTES == 6 * 512 + 128
    assert nt.total == 1650 + 916 + 825 + 442 + 3200


def test_the_calibration_reproduces_the_published_bert_large_breakdown():
    """12 kinds, 38 compute steps, 68 program steps and 48 exchanging steps (tileplan's
    plan of BERT-Large's first IPU) give Graphcore's per-tile averages within 1 %."""
    kinds = [f"{kind.value} {{ x: 1 }}" for kind in list(StepKind)[2:14]]
    ops = kinds + [kinds[0]] * 26 + ["Copy { mapping: Reshape, reuse_local: true }"] * 30
    ops[:48] = [op.replace("}", ", exchange: true }") for op in ops[:48]]
    nt = estimate(ops, {op for op in ops if "exchange: true" in op})
    assert (nt.kinds, nt.compute_steps, nt.program_steps, nt.exchange_steps) == (12, 38, 68, 48)
    for got, published in ((nt.vertex_code, 6600), (nt.vertex_state, 8700), (nt.exchange_code, 10600),
                           (nt.control_code, 11200)):
        assert abs(got - published) <= 0.01 * published


def test_reports_carry_the_estimate_and_check_catches_a_changed_figure(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["plan", "--layers", "2", "--no-what-if", "-o", str(out)]) == 0
    assert "not tensors" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    nt = doc["non_tensor"]
    assert nt["total"] == sum(nt[k] for k in ("vertex_code", "vertex_state", "exchange_code", "control_code",
                                              "stack"))
    assert nt["reserve"] == doc["support_reserve_bytes"] == 49152
    nt["control_code"] += 1
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert main(["check", str(tmp_path / "bad.json")]) == 1
    assert "non_tensor.control_code" in capsys.readouterr().out


def test_summary_and_the_page_show_every_class_the_placement_and_the_ipu(tmp_path, capsys):
    from tileplan.report.format import read_report
    from tileplan.views.liveness import build_liveness
    from tileplan.views.summary import build_summary

    assert main(["plan", "--weights", "f16", "--layers-per-ipu", "1,1", "--layers", "2", "--no-what-if",
                 "-o", str(tmp_path / "m.json")]) == 0
    report = read_report(str(tmp_path / "m.ipu1.json"))
    x = build_summary(report).extras
    assert x is not None and [label for label, _ in x.non_tensor] == [
        "vertex code", "vertex state", "exchange code", "control code", "stack"]
    assert x.pipeline == "IPU 1 of 2 (inference pipeline): layers 1 to 1; layers_per_ipu [1, 1]"
    assert x.placement is not None and x.placement.startswith("fits by bytes and by placement")
    assert build_liveness(report).extras == x
    capsys.readouterr()
    assert main(["summary", str(tmp_path / "m.ipu1.json")]) == 0
    out = capsys.readouterr().out
    assert "Memory that is not tensors" in out and "vertex state" in out and "IPU 1 of 2" in out
    assert main(["html", str(tmp_path / "m.ipu1.json"), "-o", str(tmp_path / "m.html")]) == 0
    page = (tmp_path / "m.html").read_text()
    assert 'id="non-tensor"' in page and "exchange code" in page and "Placement: fits by bytes" in page
