"""ONNX files as they come: with their external data beside them the small
integer initializers it holds are read (shape operands), never the weights; without
it the file's value_info gives the shapes (and the plan says so once); only when
neither does is it a one-line error. Bad input dimensions and operands that do not
broadcast are one-line errors; the operators the coverage sweep met map onto the
registry."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tileplan
from tileplan.cli.main import main
from tileplan.errors import ModelError
from tileplan.importers.onnx import from_onnx


def _vi(name: str, shape: list[Any], elem: int = TensorProto.FLOAT) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any], value_info: list[Any] = (),
           opset: int = 18) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits, value_info=list(value_info))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _save(model: Any, path: Path, external: bool = False, data: str = "m.data") -> str:
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=data,
                        size_threshold=0)
    else:
        onnx.save_model(model, str(path))
    return str(path)


def _reshaped(value_info: bool) -> Any:
    """x [2, 6] @ w [6, 6] -> reshape to [2, 3, 2] by an int64 initializer -> y."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="/mlp/MatMul"),
             helper.make_node("Reshape", ["h", "shape"], ["y"], name="/mlp/Reshape")]
    inits = [numpy_helper.from_array(np.arange(36, dtype=np.float32).reshape(6, 6), "w"),
             numpy_helper.from_array(np.array([2, 3, 2], dtype=np.int64), "shape")]
    vi = [_vi("h", [2, 6])] if value_info else []
    out = _vi("y", [2, 3, 2]) if value_info else _vi("y", None)
    return _model(nodes, [_vi("x", [2, 6])], [out], inits, vi)


def test_with_the_data_file_the_small_integer_initializers_are_read(tmp_path: Path) -> None:
    path = _save(_reshaped(value_info=False), tmp_path / "m.onnx", external=True)
    graph = from_onnx(path)
    assert [o.kind for o in graph.ops] == ["matmul", "reshape"]
    assert graph.ops[-1].shape == (2, 3, 2) and graph.notes == ()
    # the weight is a parameter by its shape, its bytes never read; the shape operand is no parameter
    assert [(t.name, t.shape) for t in graph.tensors if t.role == "parameter"] == [("w", (6, 6))]


def test_without_it_the_value_info_gives_the_shapes_and_the_plan_says_so_once(tmp_path: Path, capsys) -> None:
    path = _save(_reshaped(value_info=True), tmp_path / "m.onnx", external=True)
    os.remove(tmp_path / "m.data")
    graph = from_onnx(path)
    assert graph.ops[-1].shape == (2, 3, 2)
    assert graph.notes == ("1 shape operand not in the file (its external data 'm.data' is absent); taken from the "
                           "static shapes it states (value_info): Reshape shape x1",)
    out = tmp_path / "r.json"
    assert main(["plan", path, "--no-what-if", "-o", str(out)]) == 0
    printed = capsys.readouterr()
    assert printed.err == "" and printed.out.count("(value_info)") == 1 and "\nnote: 1 shape operand" in printed.out
    assert "value_info" in json.loads(out.read_text())["program"]["note"]


def test_when_neither_gives_a_shape_the_error_is_one_line(tmp_path: Path) -> None:
    path = _save(_reshaped(value_info=False), tmp_path / "m.onnx", external=True)
    os.remove(tmp_path / "m.data")
    with pytest.raises(ModelError) as err:
        from_onnx(path)
    text = str(err.value)
    assert "\n" not in text and "Reshape shape is not in the file (its external data 'm.data' is absent)" in text
    assert "states no static shape for 'y' (value_info)" in text


def test_external_data_outside_the_models_folder_is_never_read(tmp_path: Path) -> None:
    inner = tmp_path / "model"
    inner.mkdir()
    model = _reshaped(value_info=False)
    _save(model, tmp_path / "outside.onnx", external=True, data="m.data")  # m.data written in tmp_path
    for t in model.graph.initializer:  # the copy inside the folder points at ../m.data
        for e in t.external_data:
            if e.key == "location":
                e.value = "../m.data"
    onnx.save_model(model, str(inner / "m.onnx"))
    with pytest.raises(ModelError, match="Reshape shape is not in the file"):
        from_onnx(str(inner / "m.onnx"))
    assert from_onnx(str(tmp_path / "outside.onnx")).ops[-1].shape == (2, 3, 2)  # beside it: read


def test_an_input_dimension_of_zero_or_less_is_an_error_not_batch_one(tmp_path: Path) -> None:
    for dim in (0, -3):
        nodes = [helper.make_node("Relu", ["x"], ["y"])]
        model = _model(nodes, [_vi("x", [4, 8])], [_vi("y", [4, 8])], [])
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = dim
        path = _save(model, tmp_path / f"d{dim + 5}.onnx")
        with pytest.raises(ModelError) as err:
            from_onnx(path)
        assert f"input 'x': dimension 0 is {dim} in the file: expected a size >= 1" in str(err.value)


def test_operands_that_do_not_broadcast_are_a_one_line_error(tmp_path: Path) -> None:
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="/block/Add")]
    model = _model(nodes, [_vi("x", [2, 3]), _vi("b", [4])], [_vi("y", None)], [])
    path = _save(model, tmp_path / "m.onnx")
    with pytest.raises(ModelError) as err:
        from_onnx(path)
    text = str(err.value)
    assert "\n" not in text and "Add node '/block/Add'" in text and "[2, 3] and [4] do not broadcast" in text
    assert main(["plan", path, "--no-what-if", "-o", str(tmp_path / "bad.json")]) == 2


def test_the_operators_the_sweep_met_map_onto_the_registry(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("InstanceNormalization", ["x", "s", "b"], ["n"], name="/fe/conv0/InstanceNormalization"),
        helper.make_node("Clip", ["n", "lo", "hi"], ["c"], name="/fe/act/Clip"),  # ReLU6, bounds not in the file
        helper.make_node("Tile", ["c", "reps"], ["t"], name="/head/Tile"),
        helper.make_node("ReduceL2", ["t", "axes"], ["r"], name="/grn/ReduceL2", keepdims=1),
        helper.make_node("Resize", ["r", "", "scales"], ["u"], name="/up/Resize", mode="nearest"),
        helper.make_node("GatherND", ["u", "idx"], ["y"], name="/pool/GatherND", batch_dims=1),
    ]
    inits = [numpy_helper.from_array(np.ones(4, np.float32), "s"),
             numpy_helper.from_array(np.zeros(4, np.float32), "b"),
             numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6.0, np.float32), "hi"),
             numpy_helper.from_array(np.array([1, 1, 2, 1], np.int64), "reps"),
             numpy_helper.from_array(np.array([3], np.int64), "axes"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             numpy_helper.from_array(np.array([[1], [0]], np.int64), "idx")]
    vi = [_vi("r", [2, 4, 6, 1]), _vi("t", [2, 4, 6, 5]), _vi("u", [2, 4, 12, 2])]
    model = _model(nodes, [_vi("x", [2, 4, 3, 5])], [_vi("y", [2, 12, 2])], inits, vi)
    path = _save(model, tmp_path / "m.onnx", external=True)
    os.remove(tmp_path / "m.data")  # graph-only: ReduceL2's axes from the value_info, Clip's bounds as operands
    graph = from_onnx(path)
    kinds = [o.kind for o in graph.ops]
    assert kinds == ["groupnorm", "maximum", "minimum", "tile", "reduce_l2", "resize", "gather_nd"], kinds
    assert graph.ops[-1].shape == (2, 12, 2)
    assert main(["plan", path, "-o", str(tmp_path / "r.json")]) == 0  # checked by conftest: passes check


def test_a_cumsum_whose_axis_the_file_does_not_hold_takes_the_last_and_says_so(tmp_path: Path) -> None:
    nodes = [helper.make_node("CumSum", ["x", "axis"], ["y"])]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "axis")]
    path = _save(_model(nodes, [_vi("x", [1, 8])], [_vi("y", [1, 8])], inits), tmp_path / "m.onnx", external=True)
    os.remove(tmp_path / "m.data")
    graph = from_onnx(path)
    assert dict(graph.ops[0].attrs)["axis"] == -1
    assert graph.notes[0].endswith("assumed: CumSum axis the last x1")


def test_a_fixed_batch_file_plans_with_the_default_command(tmp_path: Path, capsys) -> None:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="/fc/MatMul")]
    inits = [numpy_helper.from_array(np.ones((8, 4), np.float32), "w")]
    path = _save(_model(nodes, [_vi("x", [1, 8])], [_vi("y", [1, 4])], inits), tmp_path / "fixed.onnx")
    out = tmp_path / "fixed.json"
    assert main(["plan", path, "-o", str(out)]) == 0  # the what-if's batch 2 cannot be planned: its row says why
    printed = capsys.readouterr().out
    assert "batch 2 not planned: " in printed and "dimension 0 is fixed at 1 in the file, asked 2 (--batch)" in printed
    rows = json.loads(out.read_text())["what_if"]["rows"]
    batch = next(r for r in rows if r["knob"] == "batch")
    assert set(batch) == {"knob", "value", "command", "error"} and batch["value"] == "2"
    assert batch["command"].endswith("--batch 2") and "fixed at 1" in batch["error"]
    assert main(["check", str(out)]) == 0
    assert main(["summary", str(out)]) == 0
    capsys.readouterr()
    assert main(["html", str(out), "-o", str(tmp_path / "fixed.html")]) == 0
    assert "not planned: " in (tmp_path / "fixed.html").read_text()
    # the same from Python: the row speaks of the keyword
    report = json.loads(tileplan.plan(path).to_json())
    batch = next(r for r in report["what_if"]["rows"] if r["knob"] == "batch")
    assert "asked 2 (batch=)" in batch["error"]


def test_a_symbolic_dimension_without_a_value_names_the_flag_or_the_keyword(tmp_path: Path, capsys) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    path = _save(_model(nodes, [_vi("x", ["batch", "tokens", "width"])], [_vi("y", None)], []), tmp_path / "s.onnx")
    assert main(["plan", path, "--no-what-if", "-o", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dimension 1 ('tokens') is symbolic and has no value: pass --sequence-length " \
                                   "... (or export with static shapes)" in err
    with pytest.raises(ModelError, match=r"dimension 1 \('tokens'\) is symbolic and has no value: pass "
                                         r"sequence_length=\.\.\. \(or export"):
        tileplan.plan(path, what_if=False)
    with pytest.raises(ModelError, match=r"dimension 2 \('width'\) is symbolic and has no value: export with "
                                         r"static shapes \(only the batch and the sequence take batch= and "
                                         r"sequence_length=\)"):
        tileplan.plan(path, sequence_length=4, what_if=False)
