"""A request's `tileplan plan` line (the what-if rows' and the plan's `command`) plans
exactly that request when a shell splits it: a path with a space stays one argument."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

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
