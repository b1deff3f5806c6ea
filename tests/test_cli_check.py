import json
import subprocess
import sys

import pytest

from tileplan.cli.main import main

from conftest import REFERENCE


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_reference_exits_1_and_names_every_problem(capsys):
    code, out, err = run(capsys, "check", str(REFERENCE))
    assert code == 1
    assert "28 of 28 representable values' shard, aligned and total bytes agree; 43 unrepresentable" in out
    assert out.count("unrepresentable: timeline.values") == 43
    assert ("unrepresentable: timeline.values[2] (vit.embedding.bias): Linear tiling of 288 blocks of 4 "
            "elements cannot fill 1472 partitions (padding Reject)") in out
    assert "vit.map.mlp.up.bias): Linear tiling of 1076 blocks" in out
    for i in range(4):
        assert f"defect: timeline.steps[{i}].usage.standard: reports 18446744073709551615 (the sentinel" in out
    for field in ("peak.standard", "peak.total", "peak.maximum_standard_allocation", "effective_peak_bytes"):
        assert f"defect: {field}: reports 18446744073709551615 (the sentinel 2^64 - 1)" in out
    assert ("defect: standard_contiguous_overflow_bytes: reports 18446744073709126735 "
            "(= 2^64 - 1 - 424880: wrapped arithmetic)") in out
    assert "standard peak 93432 B at step 1, interleaved peak 33920 B at step 3" in out
    assert "timeline.steps[3].usage.interleaved" not in out  # 33920 re-derives
    assert err == ""


def test_check_of_a_consistent_report_exits_0(tmp_path, capsys, reference_json):
    # drop the unrepresentable values and fix the sentinel figures by hand
    doc = json.loads(json.dumps(reference_json))
    bad = {v["id"] for v in doc["timeline"]["values"] if v["shard_bytes"] == 2**64 - 1}
    doc["timeline"]["values"] = [v for v in doc["timeline"]["values"] if v["id"] not in bad]
    for s, std in zip(doc["timeline"]["steps"], [90872, 93432, 88312, 58744]):
        s["live"] = [i for i in s["live"] if i not in bad]
        s["usage"]["standard"] = std
    doc["peak"].update(standard=93432, total=88312 + 32768, exchange_rows=1, maximum_standard_allocation=32768)
    doc.update(standard_peak_step=1, total_peak_step=2, effective_peak_bytes=88312 + 32768,
               standard_contiguous_overflow_bytes=0, exchange_row_bytes=0)
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", str(path))
    assert code == 0, out
    assert "consistent" in out
    doc["timeline"]["steps"][1]["usage"]["standard"] = 93433
    broken = tmp_path / "bad-usage.json"
    broken.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", str(broken))
    assert code == 1
    assert "disagree: timeline.steps[1].usage.standard: reports 93433; re-derived 93432" in out


def _write(tmp_path, reference_json, mutate):
    doc = json.loads(json.dumps(reference_json))
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


ZERO_PARTITIONS = ("Layout { order: RowMajor, tiling: TensorTiling { tile_count: 1472, replicas: 1, axes: "
                   "[AxisTiling { axis: Linear, partitions: 0, padding_groups: 1, block_size: 4, padding_multiple: 4, "
                   "shard_padding_multiple: 1, padding: Reject, tile_stride: None }] }, memory_class: Ipu21Standard }")
WRONG_PRODUCT = ZERO_PARTITIONS.replace("partitions: 0", "partitions: 1000")


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["timeline"]["values"][3].update(layout="Layout { order: RowMajor, tiling: ??? }"),
     "timeline.values[3].layout: layout: unexpected character '?'"),
    (lambda d: d["timeline"]["values"][3].update(shape=[1, -729, 1152]), "timeline.values[3].shape[1]"),
    (lambda d: d["timeline"]["values"][3].update(shape=[1, 0, 1152]), "timeline.values[3].shape[1]"),
    (lambda d: d["timeline"]["values"][3].update(layout=ZERO_PARTITIONS), "partitions must be >= 1, found 0"),
    (lambda d: d["timeline"]["values"][3].update(layout=WRONG_PRODUCT),
     "partitions (1000) x replicas 1 = 1000, expected tile_count 1472"),
    (lambda d: d["timeline"]["values"][3].update(precision="F7"), "unknown precision 'F7'"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, reference_json, mutate, message):
    path = _write(tmp_path, reference_json, mutate)
    code, out, err = run(capsys, "check", str(path))
    assert code == 2
    assert err.count("\n") == 1 and message in err and str(path) in err
    assert "Traceback" not in err


def test_truncated_json_exit_2_without_traceback(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(REFERENCE.read_text()[:5000])
    proc = subprocess.run([sys.executable, "-m", "tileplan.cli.main", "check", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"tileplan: error: {path}: not valid JSON")
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""


def test_missing_file_and_unknown_verb(capsys, tmp_path):
    code, _, err = run(capsys, "check", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read: No such file or directory" in err
    code, _, err = run(capsys, "frobnicate")
    assert code == 2 and "invalid choice: 'frobnicate'" in err


@pytest.mark.parametrize("target,message", [
    ("", "names no file"),
    (".", "names no file"),
    ("DIR", "exists and is not a regular file"),
    ("/proc/x.json", "cannot write in /proc"),
])
def test_unwritable_outputs_are_one_line_errors(tmp_path, capsys, target, message):
    target = str(tmp_path) if target == "DIR" else target
    assert main(["plan", "--layers", "1", "--no-what-if", "-f", "-o", target]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_a_tampered_exact_figure_is_named_by_its_path(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["plan", "--layers", "1", "--no-what-if", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    doc["exact"]["tiles"]["peak"][17] += 1
    doc["verdict"]["regions"][1]["margin"] -= 1
    broken = tmp_path / "bad-exact.json"
    broken.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["check", str(broken)]) == 1
    out_text = capsys.readouterr().out
    expected = doc["exact"]["tiles"]["peak"][17]
    assert f"disagree: exact.tiles.peak[17]: reports {expected}; re-derived {expected - 1}" in out_text
    assert "disagree: verdict.regions[1].margin: reports" in out_text


@pytest.mark.parametrize("field,value,message", [
    ("cap_bytes", 1, "available_memory_proportion.cap_bytes: reports 1; re-derived 383385 = floor(proportion 0.6 "
                     "x tile_bytes 638976)"),
    ("tile_bytes", 2, "available_memory_proportion.tile_bytes: reports 2, less than the tile holds: budget_bytes "
                      "626495 + support_reserve_bytes 12481 = 638976"),
    ("tile_bytes", None, "available_memory_proportion.tile_bytes: expected an integer (the cap's basis), found null"),
    ("exceeded", [{"operation": 3, "name": "m", "temporary_bytes": 383385}],
     "available_memory_proportion.exceeded[0].temporary_bytes: reports 383385, listed over the cap but within "
     "cap_bytes 383385"),
])
def test_check_re_derives_the_memory_proportions_cap(tmp_path, capsys, field, value, message):
    """cap_bytes = floor(proportion x tile_bytes), the tile holding at least the budgets
    and the reserve; a product listed over the cap is over it."""
    path = tmp_path / "r.json"
    assert main(["plan", "--layers", "2", "--no-what-if", "-o", str(path)]) == 0
    assert run(capsys, "check", str(path))[0] == 0
    doc = json.loads(path.read_text())
    doc["available_memory_proportion"][field] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", str(bad))
    assert code == 1 and f"disagree: {message}" in out
