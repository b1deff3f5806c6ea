"""A `.pt2` whose outputs are an instance of a class (a transformers model's output
class, DETR's `DetrModelOutput`) plans in a process that never imported that class:
tileplan reads the output structure as tuples (meta-device `.pt2` files as they
come). A constant input of a plain value (`use_cache=False`) is read too."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from tileplan.importers.pt2 import _plain_outputs


@dataclass
class Pair:
    first: torch.Tensor
    second: torch.Tensor


torch.export.register_dataclass(Pair, serialized_type_name="test_pt2_outputs.Pair")


class TwoHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 4), torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor, use_cache: bool = True) -> Pair:
        return Pair(self.a(x), self.b(x))


def test_an_output_class_the_reading_process_never_imported(tmp_path: Path):
    with torch.device("meta"):
        model = TwoHeads().eval()
    ep = torch.export.export(model, (torch.zeros(3, 8, device="meta"),), kwargs={"use_cache": False}, strict=False)
    path = tmp_path / "two.pt2"
    torch.export.save(ep, str(path))
    out = tmp_path / "two.json"
    run = subprocess.run([sys.executable, "-m", "tileplan.cli.main", "plan", str(path), "-o", str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    names = {v["name"] for v in json.loads(out.read_text())["timeline"]["values"]}
    assert {"a.weight", "b.weight"} <= names


def test_the_output_structure_is_read_as_tuples():
    spec = [1, {"type": "transformers.models.detr.modeling_detr.DetrModelOutput", "context": "[\"x\", \"y\"]",
                "children_spec": [{"type": None, "context": None, "children_spec": []},
                                  {"type": "builtins.dict", "context": "[\"k\"]", "children_spec": [
                                      {"type": "some.Class", "context": "[]", "children_spec": []}]}]}]
    doc = {"graph_module": {"module_call_graph": [{"signature": {"out_spec": json.dumps(spec)}}]}}
    _plain_outputs(doc)
    tree = json.loads(doc["graph_module"]["module_call_graph"][0]["signature"]["out_spec"])
    assert tree[1]["type"] == "builtins.tuple" and tree[1]["context"] == "null"
    assert tree[1]["children_spec"][1]["type"] == "builtins.dict"  # a container stays
    assert tree[1]["children_spec"][1]["children_spec"][0]["type"] == "builtins.tuple"
