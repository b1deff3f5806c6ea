"""`tileplan diff`: what changed between two reports."""

import json

import pytest

from tileplan.cli.main import main
from tileplan.app.build import build_report
from tileplan.views.diff import diff_reports, pair_values
from tileplan.report.format import report_bytes
from tileplan.views.common import ValueRow

from helpers import plan, round_trip
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
    # four weights a layer, spread linearly in 8-byte blocks (their products split the
    # rows: each tile receives its block). The MAP head's weights rest where their
    # one-row products create them, in the blocks each precision's plan picks (poplin's
    # plans, kernel/convplan.py): kv is spread linearly and doubles; of the others, whose
    # K blocks are padded to the AMP's input grain (32 channels in F8, 16 in F16), only
    # mlp.up's F16 plan needs no more padded rows than its F8 plan, so only it doubles
    assert len([n for n in expected if n.startswith("vit.encoder.")]) == 27 * 4
    assert {n for n in expected if n.startswith("vit.map.")} == {"vit.map.attention.kv.weight",
                                                                 "vit.map.mlp.up.weight"}
    doubled = {n for n, v in resized.items() if n.endswith(".weight") and 1.99 <= v["ratio"] <= 2.0}
    assert doubled == expected
    up = resized["vit.encoder.layer3.mlp.up.weight"]
    # 1152 x 4304 elements over 1472 tiles in 8-byte blocks: F8 ceil(619,776 / 1472) =
    # 422 blocks = 3376 B, F16 ceil(1,239,552 / 1472) = 843 blocks = 6744 B
    assert (up["a"]["bytes"], up["b"]["bytes"], up["delta"]) == (3376, 6744, 3368)
    assert (up["a"]["precision"], up["b"]["precision"]) == ("F8 E4M3 x2^-4", "F16")  # the display form
    # the patch embedding's weight [588, 1152] is spread likewise (no 32 KiB element
    # pairs): F8 ceil(84,672 / 1472) = 58 blocks = 464 B, F16 116 blocks = 928 B
    embedding = resized["vit.embedding.weight"]
    assert (embedding["a"]["bytes"], embedding["b"]["bytes"], embedding["ratio"]) == (464, 928, 2.0)
    assert doc["verdict"]["a_fits"] is True and doc["verdict"]["b_fits"] is False and doc["verdict"]["changed"]
    assert doc["program"] == [{"field": "weights", "a": "F8 E4M3 x2^-4", "b": "F16"}]
    peaks = {p["region"]: p for p in doc["peaks"]}
    f8_total, f16_total = _total_peak(f8_path), _total_peak(f16_path)
    assert peaks["total"]["a"]["peak"] == f8_total and peaks["total"]["b"]["peak"] == f16_total
    assert peaks["total"]["delta"] == f16_total - f8_total
    assert doc["steps"] == {"a": len(read_back(f8_path).steps), "b": len(read_back(f16_path).steps)}
    counts = doc["counts"]
    total = sum(counts[k] for k in ("resized", "changed", "unchanged", "removed"))
    assert total == len(json.loads(f8_path.read_text())["timeline"]["values"])


def test_a_precision_of_the_same_width_is_a_change_not_a_resize():
    """F8 E4M3 -> F8 E5M2: the same plan, every weight (and every value converted for the
    AMP) in another one-byte precision: listed as changed (same bytes), none resized."""
    a, b = round_trip(plan(layers=2)), round_trip(plan(layers=2, weights="f8f152:-4"))
    d = diff_reports(a, b)
    changed = d.of_kind("changed")
    assert d.of_kind("resized") == () and d.of_kind("added") == () and d.of_kind("removed") == ()
    weights = {v.name for v in a.values if v.role == "parameter" and v.name.endswith(".weight")}
    assert weights and weights <= {c.name for c in changed}
    for c in (c.to_json() for c in changed):
        assert c["a"]["bytes"] == c["b"]["bytes"] and c["delta"] == 0
        assert (c["a"]["precision"], c["b"]["precision"]) == ("F8 E4M3 x2^-4", "F8 E5M2 x2^-4")
    assert not d.verdict_changed


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


# Beyond the tensors: the memory that is not tensors, the placement, the pipeline stage --------------------------

BEYOND = ("non_tensor", "placement", "placement_skipped", "pipeline")


def test_f8_to_f16_shows_the_memory_that_is_not_tensors_and_the_placement(f8_path, f16_path, capsys, monkeypatch):
    a, b = (json.loads(p.read_text()) for p in (f8_path, f16_path))
    assert main(["diff", str(f8_path), str(f16_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    nt = {r["class"]: r for r in doc["non_tensor"]["rows"]}
    assert list(nt) == ["vertex_code", "vertex_state", "exchange_code", "control_code", "stack", "total", "reserve",
                        "over_reserve"]
    for key, row in nt.items():
        assert (row["a"], row["b"], row["delta"]) == (a["non_tensor"][key], b["non_tensor"][key],
                                                      b["non_tensor"][key] - a["non_tensor"][key])
    # F8 fits and is placed; F16 does not fit by bytes, so it is not placed at all
    placed = a["placement"]["tiles"][0]
    pl = doc["placement"]
    assert pl["a"]["state"] == "placed" and pl["a"]["verdict"] == a["placement"]["verdict"]
    assert (pl["a"]["tile"], pl["a"]["height"], pl["a"]["lower_bound"], pl["a"]["gaps"]) == (
        placed["tile"], placed["height"], placed["lower_bound"], placed["gaps"])
    assert "placement" not in b and pl["b"]["state"] == "not placed" and pl["b"]["height"] is None
    assert doc["pipeline"] is None
    # the exact worst tile of each region, A -> B, as the verdicts say
    worst = {w["region"]: w for w in doc["worst_tiles"]}
    for report, side in ((a, "a"), (b, "b")):
        for r in report["verdict"]["regions"]:
            assert worst[r["region"]][side] == {"tile": r["tile"], "step": r["step"], "judged_on": "exact"}

    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["diff", str(f8_path), str(f16_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "Memory that is not tensors (estimate per tile; docs/report-format.md)" in out
    for label in ("vertex code", "vertex state", "exchange code", "control code", "stack", "total", "reserve",
                  "over reserve"):
        assert any(line.startswith(label + " ") for line in lines), label
    assert f"A: {a['placement']['verdict']}" in lines and "B: not placed: the plan does not fit by bytes" in lines
    assert next(line for line in lines if line.startswith("placed height")).split()[-1] == "-"
    total = a["verdict"]["regions"][[r["region"] for r in a["verdict"]["regions"]].index("total")]
    f16_total = next(r for r in b["verdict"]["regions"] if r["region"] == "total")
    assert any(line.startswith("total ") and f"tile {total['tile']} at step {total['step']}" in line
               and f"tile {f16_total['tile']} at step {f16_total['step']}" in line for line in lines)
    assert " is IPU " not in out


def test_two_ipus_of_a_pipeline_show_their_stages(tmp_path, capsys, monkeypatch):
    assert main(["plan", "--weights", "f16", "--ipus", "auto", "--no-what-if", "-o", str(tmp_path / "m.json")]) == 0
    capsys.readouterr()
    ipu0, ipu1 = tmp_path / "m.ipu0.json", tmp_path / "m.ipu1.json"
    assert main(["diff", str(ipu0), str(ipu1), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # the split is the planner's (tests/test_pipeline.py checks it keeps the most margin);
    # the diff shows each stage as its report states it
    split = json.loads(ipu0.read_text())["pipeline"]["layers_per_ipu"]
    assert len(split) == 2 and sum(split) == 27 and json.loads(ipu1.read_text())["pipeline"]["layers_per_ipu"] == split
    first, second = split
    assert doc["pipeline"]["a"] == {"ipu": 0, "ipus": 2, "layers": [0, first], "layers_per_ipu": split,
                                    "text": f"IPU 0 of 2: layers 0 to {first - 1} (layers_per_ipu {split})"}
    assert doc["pipeline"]["b"]["layers"] == [first, 27] and doc["pipeline"]["same_pipeline"] is True
    assert doc["placement"]["a"]["state"] == doc["placement"]["b"]["state"] == "placed"
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["diff", str(ipu0), str(ipu1)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3:6] == [f"A is IPU 0 of 2: layers 0 to {first - 1} (layers_per_ipu {split})",
                          f"B is IPU 1 of 2: layers {first} to 26 (layers_per_ipu {split})",
                          "two stages of one pipeline: their values differ by the layers each holds"]
    # a whole program against one of its stages
    assert main(["plan", "--weights", "f16", "--no-what-if", "-o", str(tmp_path / "one.json")]) in (0, 3)
    capsys.readouterr()
    d = diff_reports(read_back(tmp_path / "one.json"), read_back(ipu1))
    assert d.pipeline is not None and d.pipeline.a is None and d.pipeline.b is not None
    assert not d.pipeline.same_pipeline and d.pipeline.b.text().startswith("IPU 1 of 2")


def _without(path, tmp_path, name, drop=BEYOND) -> str:
    """The report at `path` as an older tileplan wrote it: without the sections `drop`."""
    doc = json.loads(path.read_text())
    for key in drop:
        doc.pop(key, None)
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return str(out)


def test_a_report_without_those_sections_still_diffs(f8_path, f16_path, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    old_a = _without(f8_path, tmp_path, "old_a.json", (*BEYOND, "verdict", "exact"))  # before the exact accounting too
    old_b = _without(f16_path, tmp_path, "old_b.json")
    assert main(["diff", old_a, old_b, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["non_tensor"] is None and doc["placement"] is None and doc["pipeline"] is None
    worst = {w["region"]: w for w in doc["worst_tiles"]}
    assert worst["total"]["a"]["tile"] is None and worst["total"]["a"]["judged_on"] == "estimate"
    assert main(["diff", old_a, old_b]) == 0
    out = capsys.readouterr().out
    assert "Memory that is not tensors" not in out and "Placement" not in out and " is IPU " not in out
    step = json.loads(f8_path.read_text())["total_peak_step"]
    assert any(line.startswith("total ") and f"step {step} (estimate)" in line for line in out.splitlines())
    # one side with the sections, the other without: "-" where a report does not say
    assert main(["diff", str(f8_path), old_b]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("vertex code"))
    assert row.split()[-2:] == ["-", "-"]
    assert "B: no placement in the report" not in out  # B does not fit: not placed, as tileplan does
    assert "B: not placed: the plan does not fit by bytes" in out


HOSTILE_SECTIONS = [
    {"non_tensor": "lots", "placement": [1, 2], "placement_skipped": 7, "pipeline": "IPU 9"},
    {"non_tensor": {"vertex_code": -1, "vertex_state": True, "exchange_code": 1.5, "control_code": "x",
                    "stack": 2 ** 64 - 1, "total": 10 ** 30, "reserve": None, "over_reserve": [1]},
     "placement": {"verdict": 7, "tiles": "none"},
     "pipeline": {"ipu": -1, "ipus": True, "layers": [3], "layers_per_ipu": "x"}},
    {"non_tensor": {}, "placement": {"verdict": "v", "tiles": [{"tile": "a", "height": -5, "gaps": None}]},
     "pipeline": {"ipu": 2 ** 70, "layers": [5, 2], "layers_per_ipu": [1, -1, None]}},
    {"placement": {"tiles": []}, "pipeline": {"layers": ["a", "b"], "layers_per_ipu": [[1]]}},
    {"placement_skipped": {"tile": 2 ** 70, "reason": {"x": 1}}, "pipeline": {}},
    {"placement_skipped": {"tile": 3, "buffers": 5000, "limit": 4096, "reason": "tile 3 holds 5000 buffers"}},
]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("sections", HOSTILE_SECTIONS)
def test_malformed_sections_read_as_unknown(f8_path, tmp_path, capsys, version, sections):
    good = read_back(f8_path)
    doc = json.loads(report_bytes(good, version))
    for key in BEYOND:
        doc.pop(key, None)
    doc.update(sections)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    for a, b in ((bad, f8_path), (f8_path, bad), (bad, bad)):
        assert main(["diff", str(a), str(b)]) == 0
        assert capsys.readouterr().out.startswith("A ")
        assert main(["diff", str(a), str(b), "--json"]) == 0
        json.loads(capsys.readouterr().out)
    d = diff_reports(read_back(bad), good)
    nt = d.non_tensor
    if isinstance(sections.get("non_tensor"), dict):
        assert nt is not None and nt.a_present and all(r.a is None for r in nt.rows)
    placement = d.placement
    assert placement is not None and placement.b.state == "placed"
    if "placement_skipped" in sections and isinstance(sections["placement_skipped"], dict):
        assert placement.a.state == "skipped"
        assert placement.a.text() == ("not placed: tile 3 holds 5000 buffers" if placement.a.tile == 3
                                      else "not placed: a tile has too many buffers")
