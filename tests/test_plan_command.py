"""A request's `tileplan plan` line (the what-if rows' and the plan's `command`) plans
exactly that request when a shell splits it: a path with a space stays one argument."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from tileplan.app.request import PlanRequest
from tileplan.app.training import TrainingOptions
from tileplan.cli.main import build_parser
from tileplan.cli.plan import request_from

MACHINES = Path(__file__).resolve().parent / "data" / "machines"


def _parsed(command: str) -> PlanRequest:
    words = shlex.split(command)
    assert words[:2] == ["tileplan", "plan"]
    return request_from(build_parser("plan").parse_args(words[1:]))


def test_a_machine_file_with_a_space_in_its_path_is_one_argument(tmp_path):
    machine = tmp_path / "my machines" / "my machine.toml"
    machine.parent.mkdir()
    shutil.copy(MACHINES / "mk2-2tiles.toml", machine)
    request = PlanRequest(model="synthetic:300", machine=str(machine)).resolved()
    command = request.command()
    assert f"--machine '{machine}'" in command
    assert _parsed(command).resolved() == request


def test_a_training_request_reads_back_from_its_command(tmp_path):
    """Its flags too: a list given with a space (`--serialized-embedding-splits-per-ipu
    "1, 1"`) stays one argument."""
    folder = tmp_path / "a model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    request = PlanRequest(model=str(folder / "config.json"), batch=2, weights="f16", activations="f16",
                          available_memory_proportion="0.15,0.25", ipus="2",
                          training=TrainingOptions(optimizer="sgd-momentum", weight_decay=0.01,
                                                   serialized_embedding_splits_per_ipu="1, 1"))
    assert _parsed(request.command()).resolved() == request.resolved()


def test_plan_help_groups_its_flags_and_names_every_model_form(capsys, monkeypatch):
    """`plan --help`: the flags in groups a reader scans (the model, precisions, the
    machine, several IPUs, training, what-if, the report), none left in one block; MODEL
    names every form it takes."""
    from tileplan.builtins.siglip import CONFIGS
    from tileplan.cli.main import main

    parser = build_parser("plan")
    verb = next(a for a in parser._actions if a.choices and "plan" in a.choices).choices["plan"]
    groups = {g.title: [a.option_strings[0] if a.option_strings else a.dest for a in g._group_actions]
              for g in verb._action_groups}
    assert groups["options"] == ["-h"]  # argparse's own group: nothing else left there
    assert {"the model", "precisions", "the machine and how Poplar plans on it", "several IPUs (a pipeline)",
            "training (docs/training.md)", "what-if and sweeps",
            "the report and the exit code"} <= set(groups)
    assert {"model", "--layers", "--batch"} <= set(groups["the model"])
    assert groups["precisions"] == ["--weights", "--activations", "--partials"]
    assert {"-o", "--report-version", "--fail-over-budget"} <= set(groups["the report and the exit code"])
    assert max(len(flags) for flags in groups.values()) < 20
    monkeypatch.setenv("COLUMNS", "1000")  # no line breaks inside a name
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = capsys.readouterr().out
    start = text.index("MODEL ")
    model = text[start:text.index("--layers LAYERS", start)]
    for form in (*CONFIGS, "synthetic:N", ".onnx", ".pt2", "config.json", "hub id (org/name"):
        assert form in model, form


@pytest.mark.parametrize("given,hint", [
    ("f8", "FP8 is f8f143:SCALE (E4M3) or f8f152:SCALE (E5M2), e.g. f8f143:-4"),
    ("", "give a precision, or leave the option out for the model's own (e.g. f16)"),
    ("f8f152", "an FP8 format takes its scale exponent after ':', e.g. f8f152:-4"),
    ("f8f143:99", "scale_exponent must be in [-31, 31], found 99"),
    ("f12", "e.g. f16 or f8f143:-4"),
])
def test_a_bad_weights_value_is_one_line_in_the_options_grammar(tmp_path, capsys, given, hint):
    """Not the precisions' internal names (`F8F143, F8F152`), and never the default
    planned in place of an empty value."""
    from tileplan.cli.main import main

    out = tmp_path / "w.json"
    assert main(["plan", "--weights", given, "--layers", "1", "--no-what-if", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"tileplan: error: --weights {given!r}: expected f16, f32, bf16, f8f143:SCALE or f8f152:SCALE; "
                   f"{hint}\n")
    assert "F8F143" not in err and not out.exists()


@pytest.mark.parametrize("given", ["f8", ""])
def test_the_python_api_reads_weights_by_the_same_grammar(given):
    import torch

    import tileplan
    from tileplan.errors import InputError

    with pytest.raises(InputError, match=rf"weights={given!r}: expected f16, f32, bf16, f8f143:SCALE or f8f152"):
        tileplan.plan(torch.nn.Linear(4, 4), example_inputs=(torch.zeros(2, 4),), weights=given)


def test_a_folder_holding_a_config_json_is_that_config_json(tmp_path, capsys):
    """A downloaded model's folder (or a hub snapshot) names the config.json in it, for
    every frontend, as tt-transformers' HF_MODEL does; a folder without one is one line."""
    from tileplan.app.sources import kind_of, locate
    from tileplan.cli.main import main
    from tileplan.errors import InputError

    folder = tmp_path / "Llama-3.2-1B-Instruct"
    folder.mkdir()
    source = Path(__file__).parent / "data" / "tt_transformers" / "Llama-3.2-1B-Instruct" / "config.json"
    shutil.copy(source, folder / "config.json")
    assert locate(str(folder)) == str(folder / "config.json")
    assert kind_of(str(folder)) == "hf-config"
    out = tmp_path / "r.json"
    assert main(["plan", str(folder), "--machine", "n150", "--sequence-length", "32", "-o", str(out)]) == 0
    assert out.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="a directory without a config.json"):
        locate(str(empty))
    assert main(["plan", str(empty), "--machine", "n150", "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "a directory without a config.json" in err and "\n" not in err
