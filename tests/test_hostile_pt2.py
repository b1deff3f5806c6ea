"""A `.pt2` is untrusted input: planning one never runs code from it (no unpickling,
no call of a non-ATen target, no `sympify` of a shape expression, no generated source
from a hostile name), stays within its size budgets and fails in one line."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from tileplan.cli.main import main
from tileplan.importers import pt2


class _Payload:
    """Unpickling this creates `marker`: proof that code from the file ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.register_buffer("shift", torch.ones(4))

    def forward(self, x):
        return torch.relu(self.fc(x)) + self.shift


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, bytes]:
    """The members of a real torch.export.save archive, by name."""
    path = tmp_path_factory.mktemp("pt2") / "small.pt2"
    ep = torch.export.export(_Small().eval(), (torch.zeros(2, 8),), strict=False)
    torch.export.save(ep, path)
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _root(members: dict[str, bytes]) -> str:
    return next(n for n in members if n.endswith("archive_format"))[: -len("archive_format")]


def _write(path: Path, members: dict[str, bytes], compress: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _program(members: dict[str, bytes]) -> dict:
    return json.loads(members[_root(members) + "models/model.json"])


def _with_program(members: dict[str, bytes], doc: dict) -> dict[str, bytes]:
    out = dict(members)
    out[_root(members) + "models/model.json"] = json.dumps(doc).encode()
    return out


def _plan(path: Path, tmp_path: Path, capsys) -> tuple[int, list[str]]:
    code = main(["plan", str(path), "--no-what-if", "-o", str(tmp_path / "out.json"), "-f"])
    return code, capsys.readouterr().err.splitlines()


def test_a_pickled_sample_input_and_pickled_weights_are_never_unpickled(saved, tmp_path, capsys):
    marker = tmp_path / "MARKER"
    members = dict(saved)
    root = _root(members)
    bomb = pickle.dumps(_Payload(marker))
    members[root + "data/sample_inputs/model.pt"] = bomb
    config = json.loads(members[root + "data/weights/model_weights_config.json"])
    for entry in config["config"].values():
        entry["use_pickle"] = True
        members[root + "data/weights/" + entry["path_name"]] = bomb
    members[root + "data/weights/model_weights_config.json"] = json.dumps(config).encode()
    members[root + "data/constants/custom_obj_0"] = bomb
    code, err = _plan(_write(tmp_path / "m.pt2", members), tmp_path, capsys)
    assert code == 0, err
    assert not marker.exists()
    report = json.loads((tmp_path / "out.json").read_text())
    assert any(v["name"] == "fc.weight" for v in report["timeline"]["values"])  # planned from the graph alone


def test_torch_export_load_would_have_run_the_payload(saved, tmp_path):
    """The threat is real: torch's own loader unpickles the sample inputs."""
    marker = tmp_path / "MARKER"
    members = dict(saved)
    members[_root(members) + "data/sample_inputs/model.pt"] = pickle.dumps(_Payload(marker))
    path = _write(tmp_path / "m.pt2", members)
    try:
        torch.export.load(path)
    except Exception:
        pass
    assert marker.exists()


@pytest.mark.parametrize("target", ["torch.os.system", "builtins.eval", "torch.hub.load", "torch.ops.higher_order.cond",
                                    "#custom.op"])
def test_a_target_that_is_not_an_aten_operator_is_refused_before_anything_runs(saved, tmp_path, capsys, target):
    doc = _program(saved)
    node = doc["graph_module"]["graph"]["nodes"][0]
    node["target"] = target
    code, err = _plan(_write(tmp_path / "m.pt2", _with_program(saved, doc)), tmp_path, capsys)
    assert code == 2 and len(err) == 1
    assert "not ATen operators" in err[0] and target[:20] in err[0]


def test_a_shape_expression_is_never_evaluated(saved, tmp_path, capsys):
    marker = tmp_path / "MARKER"
    doc = _program(saved)
    tensors = doc["graph_module"]["graph"]["tensor_values"]
    first = next(iter(tensors.values()))
    first["sizes"][0] = {"as_expr": {"expr_str": f"__import__('os').system('touch {marker}')", "hint": None}}
    code, err = _plan(_write(tmp_path / "m.pt2", _with_program(saved, doc)), tmp_path, capsys)
    assert code == 2 and len(err) == 1 and "dynamic" in err[0]
    assert not marker.exists()


@pytest.mark.parametrize("where", ["node", "tensor", "input_arg"])
def test_a_name_that_is_not_an_identifier_is_refused(saved, tmp_path, capsys, where):
    doc = _program(saved)
    graph = doc["graph_module"]["graph"]
    evil = "x\nimport os; os.system('touch /tmp/never')\ntileplan: error: forged"
    if where == "node":
        graph["nodes"][0]["name"] = evil
    elif where == "tensor":
        graph["nodes"][0]["outputs"][0]["as_tensor"]["name"] = evil
    else:
        graph["nodes"][0]["inputs"][0]["name"] = evil
    code, err = _plan(_write(tmp_path / "m.pt2", _with_program(saved, doc)), tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    assert "identifier" in err[0] and "\\n" in err[0]


def test_a_module_path_with_a_newline_is_refused_in_one_line(saved, tmp_path, capsys):
    doc = _program(saved)
    doc["graph_module"]["graph"]["nodes"][0]["metadata"]["nn_module_stack"] = "L__self__,a\nb,torch.nn.Linear"
    code, err = _plan(_write(tmp_path / "m.pt2", _with_program(saved, doc)), tmp_path, capsys)
    assert code == 2 and len(err) == 1 and "control character" in err[0]


def test_stack_traces_and_guards_are_dropped_not_run(saved, tmp_path, capsys):
    marker = tmp_path / "MARKER"
    doc = _program(saved)
    doc["guards_code"] = [f"__import__('os').system('touch {marker}')"]
    doc["graph_module"]["graph"]["nodes"][0]["metadata"]["stack_trace"] = "line\n    evil()\n"
    code, err = _plan(_write(tmp_path / "m.pt2", _with_program(saved, doc)), tmp_path, capsys)
    assert code == 0, err
    assert not marker.exists()


def test_a_member_larger_than_the_budget_is_refused_before_it_is_inflated(saved, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pt2, "MAX_PROGRAM_BYTES", 1 << 20)
    doc = _program(saved)
    doc["padding"] = " " * (4 << 20)  # 4 MB that deflate to a few KB
    path = _write(tmp_path / "m.pt2", _with_program(saved, doc), compress=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 100_000
    code, err = _plan(path, tmp_path, capsys)
    assert code == 2 and len(err) == 1
    assert "more than the 1048576" in err[0] and "models/model.json" in err[0]


def test_a_directory_of_too_many_entries_is_refused_before_it_is_read(saved, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pt2, "MAX_MEMBERS", 10)
    members = dict(saved)
    members.update({f"{_root(saved)}extra/{i}": b"" for i in range(20)})
    code, err = _plan(_write(tmp_path / "m.pt2", members), tmp_path, capsys)
    assert code == 2 and len(err) == 1 and "entries" in err[0]


@pytest.mark.parametrize("kind", ["fifo", "text", "empty", "truncated", "old-format", "no-program"])
def test_files_that_are_not_archives_fail_in_one_line(saved, tmp_path, capsys, kind):
    path = tmp_path / "m.pt2"
    if kind == "fifo":
        os.mkfifo(path)  # no writer: opening must not block
    elif kind == "text":
        path.write_text("not a zip\n")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        _write(path, saved)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "old-format":
        _write(path, {"version": b"1", "serialized_exported_program.json": b"{}"})
    else:
        members = {k: v for k, v in saved.items() if "models/" not in k}
        _write(path, members)
    code, err = _plan(path, tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    assert str(path) in err[0]


def test_the_cli_prints_one_line_on_stderr_whatever_torch_prints(saved, tmp_path):
    """torch warns (a FutureWarning) while deserializing; the CLI captures it at the
    descriptor level, so stderr holds tileplan's line only; --verbose shows it."""
    doc = _program(saved)
    doc["graph_module"]["graph"]["nodes"][-1]["target"] = "torch.os.system"
    bad = _write(tmp_path / "bad.pt2", _with_program(saved, doc))
    good = _write(tmp_path / "good.pt2", saved)
    exe = [sys.executable, "-m", "tileplan.cli.main"]
    run = subprocess.run([*exe, "plan", str(bad), "--no-what-if", "-o", str(tmp_path / "b.json")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and run.stderr.startswith("tileplan: error: ")
    run = subprocess.run([*exe, "plan", str(good), "--no-what-if", "-o", str(tmp_path / "g.json")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stderr == ""
    run = subprocess.run([*exe, "plan", str(good), "--no-what-if", "--verbose", "-o", str(tmp_path / "v.json")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "Warning" in run.stderr


class _NoGrad(torch.nn.Module):
    """A forward with a `torch.no_grad()` region, as M2M100's and RWKV's position
    ids are made: torch.export saves it as a `wrap_with_set_grad_enabled` sub-graph."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        with torch.no_grad():
            scale = torch.sigmoid(x.sum(-1, keepdim=True)) * 2
        return self.fc(x * scale)


def test_a_no_grad_region_is_inlined_and_plans_as_the_module_does(tmp_path, capsys):
    from tileplan.importers.torch_export import from_exported, load_exported

    ep = torch.export.export(_NoGrad().eval(), (torch.zeros(2, 8),), strict=False)
    path = tmp_path / "nograd.pt2"
    torch.export.save(ep, path)
    with zipfile.ZipFile(path) as z:
        text = next(z.read(n) for n in z.namelist() if n.endswith("models/model.json")).decode()
    assert "wrap_with_set_grad_enabled" in text  # the file holds the region as a sub-graph
    read = load_exported(str(path))
    kinds = sorted(o.kind for o in read.ops)
    assert kinds == sorted(o.kind for o in from_exported(ep).ops) and "sigmoid" in kinds
    assert read.parameter_count == 8 * 4 + 4
    code, err = _plan(path, tmp_path, capsys)
    assert code == 0 and err == []
    assert main(["check", str(tmp_path / "out.json")]) == 0


def test_a_region_nested_too_deep_is_one_line(tmp_path, capsys):
    ep = torch.export.export(_NoGrad().eval(), (torch.zeros(2, 8),), strict=False)
    path = tmp_path / "nograd.pt2"
    torch.export.save(ep, path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    doc = _program(members)
    nodes = doc["graph_module"]["graph"]["nodes"]
    region = next(n for n in nodes if n["target"].endswith("wrap_with_set_grad_enabled"))
    inner = region
    for _ in range(12):  # wrap the region's own graph in itself, deeper than the limit
        sub = next(a for a in inner["inputs"] if "as_graph" in a["arg"])["arg"]["as_graph"]["graph"]
        sub["nodes"] = [json.loads(json.dumps(inner))]
        inner = sub["nodes"][0]
    code, err = _plan(_write(tmp_path / "deep.pt2", _with_program(members, doc)), tmp_path, capsys)
    assert code == 2 and len(err) == 1 and "nested more than 8 deep" in err[0]


class _Asserts(torch.nn.Module):
    """FlauBERT's and XLM's check on their data: `assert lengths.max().item() <= slen`,
    a run-time assertion on an unbacked `.item()`."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)

    def forward(self, ids):
        lengths = (ids != 2).sum(dim=1).long()
        # FlauBERT's `assert` (pytest rewrites an assert in a test module: torch._check is the same check)
        torch._check(lengths.max().item() <= ids.shape[1])
        return self.emb(ids)


def test_a_runtime_assertion_on_the_data_is_dropped_never_evaluated(tmp_path, capsys):
    from tileplan.importers.torch_export import from_exported, load_exported

    args = (torch.zeros(2, 8, dtype=torch.long),)
    ep = torch.export.export(_Asserts().eval(), args, strict=False)
    assert from_exported(ep).parameter_count == 10 * 4  # in process: the assertion erased
    path = tmp_path / "asserts.pt2"
    torch.export.save(ep, path)
    with zipfile.ZipFile(path) as z:
        text = next(z.read(n) for n in z.namelist() if n.endswith("models/model.json")).decode()
    assert "_assert_scalar" in text and "expr_str" in text  # the file holds the assertion's expression
    assert [o.kind for o in load_exported(str(path)).ops] == ["gather"]  # the lookup; the check gone
    code, err = _plan(path, tmp_path, capsys)
    assert code == 0 and err == []


class _DataShape(torch.nn.Module):
    def forward(self, x, lengths):
        n = lengths.max().item()
        torch._check_is_size(n)
        torch._check(n <= 8)
        return torch.zeros(n, 4) + x[0, :4]


def test_a_shape_that_depends_on_the_data_is_still_refused(tmp_path, capsys):
    args = (torch.zeros(2, 8), torch.ones(2, dtype=torch.long))
    ep = torch.export.export(_DataShape().eval(), args, strict=False)
    path = tmp_path / "datashape.pt2"
    torch.export.save(ep, path)
    code, err = _plan(path, tmp_path, capsys)
    assert code == 2 and len(err) == 1 and "symbolic (dynamic) shapes" in err[0]


@pytest.mark.parametrize("member,name,declared", [
    ("data/weights/model_weights_config.json", "fc.weight", [2**31, 2**31]),
    ("data/weights/model_weights_config.json", "shift", [5]),
])
def test_a_weights_config_that_contradicts_the_graph_is_refused(saved, tmp_path, capsys, member, name, declared):
    """The graph says fc.weight is [4, 8]; a config declaring another shape is an
    inconsistent file, not a plan of either (the weights are never read to tell)."""
    members = dict(saved)
    root = _root(members)
    config = json.loads(members[root + member])
    config["config"][name]["tensor_meta"]["sizes"] = [{"as_int": n} for n in declared]
    members[root + member] = json.dumps(config).encode()
    code, err = _plan(_write(tmp_path / "m.pt2", members), tmp_path, capsys)
    graph = {"fc.weight": "[4, 8]", "shift": "[4]"}[name]  # a buffer is in the weights config too
    assert code == 2 and len(err) == 1, err
    assert (f"m.pt2: weight {name}: {member} declares the shape [{', '.join(map(str, declared))}], the program's "
            f"graph {graph}") in err[0]
    assert not (tmp_path / "out.json").exists()


def test_a_weights_config_that_is_not_json_is_refused(saved, tmp_path, capsys):
    members = dict(saved)
    members[_root(members) + "data/weights/model_weights_config.json"] = b"{not json"
    code, err = _plan(_write(tmp_path / "m.pt2", members), tmp_path, capsys)
    assert code == 2 and len(err) == 1 and "model_weights_config.json: not valid JSON" in err[0]
