"""`tileplan check --budget`: the CI gate (exit 3 when a consistent report does not fit)."""

import json

from tileplan.cli.main import main
from tileplan.views.common import verdict_line

from report_files import read_back

pytest_plugins = ["report_fixtures"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_report_that_fits_passes_the_gate(f8_path, capsys):
    code, out, err = run(capsys, "check", "--budget", str(f8_path))
    assert code == 0, out
    assert out.splitlines()[-1] == verdict_line(read_back(f8_path))
    total = next(r for r in read_back(f8_path).extra["verdict"]["regions"] if r["region"] == "total")
    assert out.splitlines()[-1].startswith(f"Fits: worst tile {total['tile']} at step {total['step']}: ")


def test_a_report_over_budget_exits_3_with_the_verdict_line(f16_path, capsys):
    code, out, err = run(capsys, "check", "--budget", str(f16_path))
    assert code == 3
    assert "consistent: every number re-derives" in out
    oom = read_back(f16_path).extra["verdict"]["out_of_memory"]
    assert out.splitlines()[-1].startswith(f"{oom}; over by ") and oom.startswith("Out of memory on tile ")
    # without --budget the same report is only checked
    code, out, _ = run(capsys, "check", str(f16_path))
    assert code == 0 and "Out of memory" not in out


def test_a_plan_that_stopped_does_not_pass(rejected_path, capsys):
    code, out, _ = run(capsys, "check", "--budget", str(rejected_path))
    assert code == 3
    assert out.splitlines()[-1].startswith("Not planned: stopped at operation 0 (vit.embedding)")


def test_an_inconsistent_report_fails_the_check_before_the_budget(f8_path, tmp_path, capsys):
    doc = json.loads(f8_path.read_text())
    doc["timeline"]["steps"][3]["usage"]["standard"] += 8
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", "--budget", str(bad))
    assert code == 1
    assert "disagree: timeline.steps[3].usage.standard" in out
    assert "Fits:" not in out
