"""`tileplan plan --machine n150|n300|p150` and the other verbs on Tenstorrent reports,
through the target seam, with a hand-built frontend (tests/tt_frontend_support.py): the
report written (and checked: conftest), the verdict printed first in tt-metal's words,
exit codes as for the IPU, and bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tileplan.cli.main import build_parser, main

from tt_frontend_support import hand_frontend


@pytest.fixture(autouse=True)
def hand():
    with hand_frontend() as fe:
        yield fe


def plan(tmp_path: Path, *argv: str) -> tuple[int, list[str]]:
    import io
    import contextlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["plan", *argv, "-o", str(tmp_path / "r.json")])
    return code, out.getvalue().splitlines()


def test_a_fit_writes_the_report_and_prints_the_fit_and_how_far_each_knob_goes(tmp_path, capsys):
    code, lines = plan(tmp_path, "chunked", "--machine", "n150", "--frontend", "hand", "--prefill-chunk", "4096")
    assert code == 0
    assert lines[0] == (f"wrote {tmp_path / 'r.json'} (tileplan plan chunked --machine n150 --frontend hand --batch 1 "
                        "--prefill-chunk 4096 --weights bf16)")
    assert lines[1].startswith("fits on n150: L1 peak 466,944 of 1,329,376 B a bank")
    assert lines[2].startswith("  what-if: prefill_chunk 8192 (the largest that fits; every value up to 32768 tried): "
                               "also fits (tileplan plan chunked --machine n150 --frontend hand --batch 1 "
                               "--prefill-chunk 8192")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["target"] == "tenstorrent" and report["verdict"]["fits"] is True
    assert report["frontend"] == {"name": "hand", "options": {"batch": 1, "prefill_chunk": 4096, "weights": "bf16"}}
    assert report["reproduce"]["device_parameters"] == {"l1_small_size": 65536, "trace_region_size": 0}


def test_a_plan_that_does_not_fit_prints_tt_metals_message_first_and_exits_3_when_asked(tmp_path):
    code, lines = plan(tmp_path, "chunked", "--machine", "n150", "--frontend", "hand", "--prefill-chunk", "16384",
                       "--fail-over-budget", "--tt-version", "2026-04-21")
    assert code == 3
    assert lines[1] == ("does not fit: Out of Memory: Not enough space to allocate 134217728 B L1 buffer across 72 "
                        "banks, where each bank needs to store 1865728 B, but bank size is 1329888 B (allocated: 0 B, "
                        "free: 1329888 B, largest free block: 1329888 B)")
    assert lines[2] == "  why: not enough free memory"
    assert lines[3] == "  where: operation 0 layers.0.matmul (ttnn.matmul), allocating layers.0.matmul"
    assert lines[4].startswith("  change: prefill_chunk 8192 (the largest that fits; every value up to 32768 "
                               "tried): fits (tileplan plan chunked --machine n150")
    assert main(["plan", "chunked", "--machine", "n150", "--frontend", "hand", "--prefill-chunk", "16384",
                 "--no-what-if", "-o", str(tmp_path / "again.json")]) == 0  # not asked: 0


def test_each_what_if_row_is_a_command_that_re_derives_it(tmp_path):
    """The largest chunk's row: its command, run, fits; the chunk above it does not."""
    import shlex
    plan(tmp_path, "chunked", "--machine", "n150", "--frontend", "hand", "--prefill-chunk", "16384")
    rows = json.loads((tmp_path / "r.json").read_text())["what_if"]["rows"]
    chunk = next(r for r in rows if r["knob"] == "prefill_chunk")
    words = shlex.split(chunk["command"])[2:]
    assert main(["plan", *words, "--no-what-if", "-o", str(tmp_path / "row.json")]) == 0
    assert json.loads((tmp_path / "row.json").read_text())["verdict"]["fits"] is True
    assert "--prefill-chunk 8192" in chunk["command"]


def test_n300_and_p150_plan_per_chip(tmp_path):
    for machine, banks in (("n300", 64), ("p150", 130)):
        code, _ = plan(tmp_path, "mlp", "--machine", machine, "--frontend", "hand", "--no-what-if", "-f")
        assert code == 0
        device = json.loads((tmp_path / "r.json").read_text())["device"]
        assert (device["machine"], device["l1_banks"]) == (machine, banks)
    assert device["chips"] == 1 and device["arch"] == "blackhole"


@pytest.mark.parametrize("argv,message", [
    (["--machine", "n151"], "unknown machine 'n151'; expected one of ipu21, mk2, bow, mk1, a machine .toml file "
                            "(Graphcore IPU); n150, n300, t3k, p100, p150, p150x4 (Tenstorrent)"),
    (["--machine", "n150", "--frontend", "hand", "--prefill-chunk", "100"],
     "--prefill-chunk 100: expected a multiple of 32 tokens (tt-transformers prefills whole tiles of 32 rows), "
     "e.g. 4096"),
    (["--machine", "n150", "--frontend", "hand", "--l1-small-size", "1400000"],
     "l1_small_size 1,400,000 B on n150: Reserved size must be less than bank size"),
    (["--machine", "n150", "--frontend", "hand", "--opt-level", "1"],
     "--opt-level is not an option of the hand frontend"),
    (["--machine", "n150", "--layers", "2"], "--layers is not an option for n150 (Tenstorrent); it is one for "
                                             "Graphcore IPU machines"),
    (["--machine", "ipu21", "--opt-level", "1"], "--opt-level is not an option for ipu21 (Graphcore IPU); it is one "
                                                 "for Tenstorrent machines (n150, n300, t3k, p100, p150, p150x4)"),
    (["--machine", "n150", "--frontend", "nope"], "unknown frontend 'nope'; expected one of tt-mlir, "
                                                  "tt-transformers, hand"),
    (["--machine", "ipu21", "--activations", "bfp8"], "--activations 'bfp8': expected f16 or f32 on an IPU"),
])
def test_bad_input_is_one_line_naming_the_place_and_the_rule(tmp_path, capsys, argv, message):
    model = ["gpt-9000"] if "--frontend" not in argv or "nope" in argv else ["chunked"]
    if "ipu21" in argv:
        model = []
    assert main(["plan", *model, *argv, "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "x.json").exists()


def test_a_model_the_frontend_does_not_implement_is_its_one_line(tmp_path, capsys):
    assert main(["plan", "gpt-9000", "--machine", "n150", "--frontend", "hand", "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tileplan: error: the hand frontend does not implement 'gpt-9000'; it implements chunked, "
                          "activation_clash, bloom") and err.count("\n") == 1


def test_plan_help_groups_the_tenstorrent_flags():
    parser = build_parser("plan")
    verb = next(a for a in parser._actions if a.choices and "plan" in a.choices).choices["plan"]
    groups = {g.title: [a.option_strings[0] for a in g._group_actions if a.option_strings]
              for g in verb._action_groups}
    assert groups["Tenstorrent machines (n150, n300, t3k, p100, p150, p150x4)"] == [
        "--frontend", "--opt-level", "--kv-cache-kind", "--prefill-chunk", "--precision", "--l1-small-size",
        "--trace-region-size", "--tt-version", "--dispatch", "--to-dram"]


def test_summary_html_plot_and_diff_read_tenstorrent_reports(tmp_path, capsys):
    plan(tmp_path, "falcon_8044", "--machine", "n150", "--frontend", "hand", "--tt-version", "2026-04-21")
    report = str(tmp_path / "r.json")
    capsys.readouterr()
    assert main(["summary", report]) == 0
    text = capsys.readouterr().out
    assert text.startswith("does not fit: Out of Memory: Not enough space to allocate 26542080 B L1 buffer")
    assert "where: operation 1 lm.matmul (ttnn.matmul), allocating lm.matmul" in text
    assert "a different order would fit" not in text or "placement solver" in text
    assert main(["check", report]) == 0
    assert "consistent: every number re-derives" in capsys.readouterr().out
    assert main(["check", "--budget", report]) == 3
    assert main(["html", report, "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "clash" not in page and "lm.matmul" in page and "<script" not in page
    assert main(["plot", report, "-o", str(tmp_path / "r.png")]) == 0
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["plan", "mlp", "--machine", "n150", "--frontend", "hand", "-o", str(tmp_path / "b.json")]) == 0
    capsys.readouterr()
    assert main(["diff", report, str(tmp_path / "b.json")]) == 0
    assert "buffers added, removed or resized" in capsys.readouterr().out
    assert main(["diff", report, str(Path(__file__).parent / "data" / "reference_000.json")]) == 2
    assert "diff compares two reports of one kind" in capsys.readouterr().err


def test_the_python_api_plans_a_tenstorrent_machine_as_plan_does(tmp_path):
    import tileplan
    result = tileplan.plan("chunked", machine="n150", frontend="hand", prefill_chunk=16384, tt_version="2026-04-21")
    assert not result.fits
    assert result.verdict.startswith("Out of Memory: Not enough space to allocate 134217728 B L1 buffer")
    assert main(["plan", "chunked", "--machine", "n150", "--frontend", "hand", "--prefill-chunk", "16384",
                 "--tt-version", "2026-04-21", "-o", str(tmp_path / "cli.json")]) == 0
    assert result.to_json() == (tmp_path / "cli.json").read_text()
    assert "<svg" in result.to_html()


def test_the_python_api_refuses_an_ipu_keyword_on_a_tenstorrent_machine():
    import tileplan
    from tileplan.errors import InputError
    with pytest.raises(InputError, match=r"^policy= is not an option for n150 \(Tenstorrent\); it is one for "
                                         r"Graphcore IPU machines"):
        tileplan.plan("chunked", machine="n150", frontend="hand", policy="min-tiles")
    with pytest.raises(InputError, match=r"^opt_level= is not an option for ipu21 \(Graphcore IPU\)"):
        tileplan.plan("tiny", machine="ipu21", opt_level=1)
