"""Memory that is not tensors: the estimate, its calibration and its check."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from tileplan.cli.main import main
from tileplan.kernel.fragment import StepKind
from tileplan.kernel.options import Outlining
from tileplan.planner.nontensor import (
    CONTROL_CODE, EXCHANGE_CODE, STACK_BYTES, VERTEX_CODE, VERTEX_STATE, NonTensor, Rate, estimate_non_tensor,
    step_kind, uses,
)


def estimate(ops: list[str], exchanging: set[str], outlining: Outlining = Outlining.SHARED) -> NonTensor:
    """The estimate of steps running `ops` (texts; the kind is each text's first word,
    the ones in `exchanging` exchange)."""
    counted = Counter(ops)
    texts = list(counted)
    return estimate_non_tensor(texts, [StepKind(t.split(" ")[0]) for t in texts], [t in exchanging for t in texts],
                               [counted[t] for t in texts], outlining)


def test_each_class_counts_what_the_model_says():
    ops = ["Gemm { multiply: F16, accumulate: F32 }", "Gemm { multiply: F16, accumulate: F32 }",
           "Sum { axis: 0, staging: Complete }", "Copy { mapping: Reshape, reuse_local: false }",
           "View { op: Reshape }", "Binary { op: Add, broadcast: false, in_place: true }"]
    nt = estimate(ops, {ops[2], ops[3]})
    assert step_kind(ops[0]) == "Gemm { multiply: F16"
    assert (nt.kinds, nt.compute_steps, nt.program_steps, nt.exchange_steps) == (3, 4, 5, 2)
    # ceil(n x published / (1472 x calibration count)), each class its own figures
    assert nt.vertex_code == math.ceil(3 * 9_664_672 / (1472 * 13)) == 1516
    assert nt.vertex_state == math.ceil(4 * 12_826_418 / (1472 * 276)) == 127
    assert nt.control_code == math.ceil(5 * 16_535_740 / (1472 * 337)) == 167
    assert nt.exchange_code == math.ceil(2 * 15_544_264 / (1472 * 284)) == 75
    assert nt.stack == STACK_BYTES == 3168
    assert nt.total == 1516 + 127 + 167 + 75 + 3168 and nt.code_and_state == nt.total - 3168


def test_a_rate_on_its_own_calibration_count_gives_the_published_average():
    for rate, published in ((VERTEX_CODE, 9_664_672), (VERTEX_STATE, 12_826_418), (EXCHANGE_CODE, 15_544_264),
                            (CONTROL_CODE, 16_535_740)):
        assert rate.bytes_for(rate.count) == math.ceil(published / 1472)
        assert rate.bytes_for(0) == 0
    with pytest.raises(ValueError):
        Rate(0, 1472, 1)


def test_outlining_decides_what_counts():
    """Shared: each step once (a repeat block's once), a training program's distinct
    texts once; per layer: every run."""
    operation = np.array([0, 1, 0, 2])
    runs = np.array([24, 24, 1, 1])
    assert uses(operation, runs, 3, False, Outlining.SHARED) == [2, 1, 1]
    assert uses(operation, runs, 3, True, Outlining.SHARED) == [1, 1, 1]
    assert uses(operation, runs, 3, False, Outlining.PER_LAYER) == [25, 24, 1]
    assert uses(operation, runs, 3, True, Outlining.PER_LAYER) == [25, 24, 1]


def test_the_calibration_counts_are_tileplans_counts_of_the_calibration_program():
    """The rates divide PopLiner's BERT-Large stage 0 by tileplan's counts of that
    program (13 kinds, 276 compute, 337 program, 284 exchanging steps, per layer); a
    lowering that changes the counts must re-measure the rates on purpose."""
    from fidelity_cases import BERT_LARGE, _config
    from tileplan.app.request import PlanRequest

    request = PlanRequest(model=_config(BERT_LARGE), machine="mk2", weights="f16", activations="f16",
                          partials="f16", sequence_length=128, batch=1, layers_per_ipu="12,12",
                          outlining="per-layer").resolved()
    pipeline = request.pipeline()
    assert pipeline is not None
    nt = pipeline.plans[0].non_tensor
    assert (nt.kinds, nt.compute_steps, nt.program_steps, nt.exchange_steps) == (
        VERTEX_CODE.count, VERTEX_STATE.count, CONTROL_CODE.count, EXCHANGE_CODE.count) == (13, 276, 337, 284)
    assert nt.outlining is Outlining.PER_LAYER


def test_the_default_verdict_counts_all_memory_and_check_holds_it(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["plan", "--layers", "2", "--no-what-if", "-o", str(out)]) == 0
    first = capsys.readouterr().out.splitlines()[1]
    doc = json.loads(out.read_text())
    nt = doc["non_tensor"]
    assert nt["total"] == sum(nt[k] for k in ("vertex_code", "vertex_state", "exchange_code", "control_code",
                                              "stack"))
    assert nt["in_verdict"] is True and nt["outlining"] == "shared"
    # the budgets: the tile less the memory that is not tensors, no exchange rows
    assert nt["reserve"] == doc["support_reserve_bytes"] == nt["total"] and nt["over_reserve"] == 0
    assert doc["budget_bytes"] + doc["support_reserve_bytes"] == 638_976 and doc["exchange_row_bytes"] == 0
    assert doc["budget_bytes"] - doc["interleaved_budget_bytes"] == 212_992 - nt["total"]
    total = next(r for r in doc["verdict"]["regions"] if r["region"] == "total")
    assert first.startswith(f"Fits: worst tile {total['tile']} at step {total['step']}: "
                            f"{total['peak'] + nt['total']} bytes used of the tile's 638976 ")
    for key, change in (("control_code", 1), ("support_reserve_bytes", 8)):
        bad = json.loads(out.read_text())
        if key == "control_code":
            bad["non_tensor"][key] += change
        else:
            bad[key] += change
            bad["budget_bytes"] -= change
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        assert main(["check", str(tmp_path / "bad.json")]) == 1
        assert ("non_tensor.control_code" if key == "control_code" else "support_reserve_bytes") in \
            capsys.readouterr().out


def test_the_reference_policy_keeps_its_budgets_and_says_how_far_the_estimate_passes_them(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["plan", "--layers", "2", "--no-what-if", "--policy", "reference", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    nt = doc["non_tensor"]
    assert nt["in_verdict"] is False
    assert (doc["budget_bytes"], doc["support_reserve_bytes"], doc["exchange_row_bytes"]) == (586_960, 49_152, 16)
    assert nt["over_reserve"] == max(0, nt["total"] - 49_152)
    assert main(["check", str(out)]) == 0


def test_a_plan_over_its_memory_is_named_in_poplars_words(tmp_path, capsys):
    """The matmul chain of graphcore/tutorials tut4_profiling: its tensors fit the tile by
    3 KB, all its memory does not, and the verdict says so as Poplar does."""
    from fidelity_cases import matmul_chain

    answer = matmul_chain()
    assert not answer.fits and answer.peaks[0] < 638_976 < answer.all_memory[0]


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
