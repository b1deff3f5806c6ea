"""`tileplan diff`: what changed between two reports."""

import json

from tileplan.cli.main import main
from tileplan.report.build import build_report
from tileplan.report.diff import diff_reports, pair_values
from tileplan.report.views import ValueRow

from helpers import plan
from report_files import read_back

pytest_plugins = ["report_fixtures"]


def doubled_weights(a_path, b_path) -> set[str]:
    """Straight from the two JSON files: weights whose per-tile bytes doubled (to
    within the alignment padding of one shard)."""
    a = {v["name"]: v for v in json.loads(a_path.read_text())["timeline"]["values"]}
    b = {v["name"]: v for v in json.loads(b_path.read_text())["timeline"]["values"]}
    return {n for n, v in a.items() if n.endswith(".weight") and n in b
            and 1.99 <= b[n]["bytes"] / v["bytes"] <= 2.0}


def test_f8_to_f16_names_the_weights_whose_bytes_doubled(f8_path, f16_path, capsys):
    assert main(["diff", str(f8_path), str(f16_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    resized = {v["name"]: v for v in doc["values"]["resized"]}
    expected = doubled_weights(f8_path, f16_path)
    assert len(expected) == 27 * 4 + 5  # four weights a layer, five in the MAP head
    doubled = {n for n, v in resized.items() if n.endswith(".weight") and 1.99 <= v["ratio"] <= 2.0}
    assert doubled == expected
    up = resized["vit.encoder.layer3.mlp.up.weight"]
    assert (up["a"]["bytes"], up["b"]["bytes"], up["delta"]) == (3376, 6744, 3368)
    assert (up["a"]["precision"], up["b"]["precision"]) == ("F8 E4M3 x2^-4", "F16")  # the display form
    # the embedding weight changed precision, yet its shard stays 32 KiB
    changed = {v["name"] for v in doc["values"]["changed"]}
    assert "vit.embedding.weight" in changed and "vit.embedding.weight" not in resized
    assert doc["verdict"]["a_fits"] is True and doc["verdict"]["b_fits"] is False and doc["verdict"]["changed"]
    assert doc["program"] == [{"field": "weights", "a": "F8 E4M3 x2^-4", "b": "F16"}]
    peaks = {p["region"]: p for p in doc["peaks"]}
    f8_total, f16_total = _total_peak(f8_path), _total_peak(f16_path)
    assert peaks["total"]["a"]["peak"] == f8_total and peaks["total"]["b"]["peak"] == f16_total
    assert peaks["total"]["delta"] == f16_total - f8_total
    assert doc["steps"] == {"a": 97, "b": 87}
    counts = doc["counts"]
    total = sum(counts[k] for k in ("resized", "changed", "unchanged", "removed"))
    assert total == len(json.loads(f8_path.read_text())["timeline"]["values"])


def test_the_table_folds_the_layers_of_each_weight(f8_path, f16_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # piped: 120 columns
    assert main(["diff", str(f8_path), str(f16_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"A {f8_path}: Fits: worst tile ")
    assert lines[1].startswith(f"B {f16_path}: Out of memory on tile ")
    assert "verdict changed: fits -> does not fit" in out
    for group in ("vit.encoder.mlp.up.weight", "vit.encoder.mlp.down.weight", "vit.encoder.attention.qkv.weight",
                  "vit.encoder.attention.output.weight"):
        row = next(line for line in lines if f" {group} " in line)
        assert row.split()[0] == "27" and "x2.00" in row and "F8 E4M3 x2^-4 -> F16" in row


def test_a_report_against_itself_has_no_changes(f8_path):
    d = diff_reports(read_back(f8_path), read_back(f8_path))
    assert d.values == () and d.resized_groups == () and d.program == ()
    assert not d.verdict_changed and all(p.delta == 0 for p in d.peaks)
    assert d.unchanged == len(read_back(f8_path).values)


def test_more_layers_add_values():
    two, three = build_report(plan(layers=2)), build_report(plan(layers=3))
    d = diff_reports(two, three)
    added = {v.name for v in d.of_kind("added")}
    assert {"vit.encoder.layer2.mlp.up.weight", "vit.encoder.layer2.attention.qkv.weight"} <= added
    assert not any(".layer2." in v.name for v in d.of_kind("removed"))
    assert d.program == (("layers", "2", "3"),)
    back = diff_reports(three, two)
    assert {v.name for v in back.of_kind("removed")} == added


def test_diff_with_a_stopped_plan_keeps_unknowns(f8_path, rejected_path, capsys):
    d = diff_reports(read_back(rejected_path), read_back(f8_path))
    total = d.peaks[0]
    assert total.a.peak is None and total.b.peak == _total_peak(f8_path) and total.delta is None
    assert d.a_scope == "rejected-op0" and d.verdict_changed
    assert main(["diff", str(rejected_path), str(f8_path)]) == 0
    out = capsys.readouterr().out
    assert "verdict changed: rejected-op0 -> fits" in out and "unknown" in out


def _row(id_, name, shape, precision, bytes_):
    return ValueRow(id_, name, name, name, "intermediate", shape, precision, "", "", "standard", id_, bytes_, 0, 0)


def test_namesakes_pair_by_shape_and_precision_first():
    a = (_row(1, "op result", (4, 4), "F16", 32), _row(2, "op result", (8,), "F16", 16))
    b = (_row(7, "op result", (8,), "F16", 16), _row(8, "op result", (4, 4), "F32", 64),
         _row(9, "op result", (2,), "F16", 4))
    pairs = [(x and x.id, y and y.id) for x, y in pair_values(a, b)]
    assert pairs == [(1, 8), (2, 7), (None, 9)]


def _total_peak(path) -> int:
    """The verdict's total peak (exact worst tile plus exchange) of a written report."""
    return next(r["peak"] for r in read_back(path).extra["verdict"]["regions"] if r["region"] == "total")
