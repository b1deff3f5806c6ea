"""ONNX operators the wider architecture sweep met. Einsum (ProphetNet, XLNet, Funnel,
BigBird, CvT export it): each equation
lowered to permutes, reshapes and one matmul, as PyTorch lowers `torch.einsum`
(`tileplan.importers.onnx.einsum`). The oracle is NumPy's `einsum` on arrays of the
operands' shapes (the output's shape) and a hand count of the product's M, K and N.
Then ScatterND, ScatterElements, TopK and the random generators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tileplan.cli.main import main
from tileplan.errors import ModelError
from tileplan.importers.onnx import from_onnx


def _einsum_file(tmp_path: Path, equation: str, shapes: list[list[int]], out: list[int]) -> str:
    names = [f"x{k}" for k in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                            for n, s in zip(names, shapes)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
    path = tmp_path / "e.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    return str(path)


CASES = [
    ("bhqd,bhkd->bhqk", [[2, 4, 8, 16], [2, 4, 10, 16]], (8, 16, 10)),  # attention scores
    ("bhqk,bhkd->bhqd", [[2, 4, 8, 10], [2, 4, 10, 16]], (8, 10, 16)),  # attention output
    ("ij,jk->ik", [[3, 5], [5, 7]], (3, 5, 7)),
    ("ij,jk", [[3, 5], [5, 7]], (3, 5, 7)),  # implicit output
    ("ibnd,jbnd->bnij", [[6, 2, 4, 8], [5, 2, 4, 8]], (6, 8, 5)),  # XLNet's relative attention
    ("...ij,...jk->...ik", [[2, 3, 4, 5], [3, 5, 6]], (8, 5, 6)),  # the ellipsis: the dimension B lacks in M
    ("...ij,...jk->...ik", [[1, 3, 4, 5], [2, 3, 5, 6]], (4, 5, 6)),  # a batch of 1 broadcast by the matmul
    ("bi,bj->bij", [[4, 3], [4, 5]], (3, 1, 5)),  # an outer product: K = 1
    ("bnij,jbnd->ibnd", [[2, 4, 6, 5], [5, 2, 4, 8]], (6, 5, 8)),
    ("abc,cd->abd", [[2, 3, 4], [4, 5]], (6, 4, 5)),  # a batch label one operand lacks: folded into M
]


@pytest.mark.parametrize("equation,shapes,mkn", CASES, ids=[c[0] for c in CASES])
def test_an_einsum_becomes_one_matmul_of_numpys_shape(tmp_path, equation, shapes, mkn):
    want = np.einsum(equation, *[np.zeros(s) for s in shapes]).shape
    graph = from_onnx(_einsum_file(tmp_path, equation, shapes, list(want)))
    products = [o for o in graph.ops if o.kind == "matmul"]
    assert len(products) == 1
    product = products[0]
    shapes_of = {t.name: t.shape for t in graph.tensors} | {o.output: o.shape for o in graph.ops}
    a, b = (shapes_of[i] for i in product.inputs)
    assert (a[-2], a[-1], b[-1]) == mkn and b[-2] == a[-1]
    assert graph.ops[-1].shape == want
    assert main(["plan", str(tmp_path / "e.onnx"), "--no-what-if", "-o", str(tmp_path / "e.json"), "-f"]) == 0
    assert main(["check", str(tmp_path / "e.json")]) == 0


@pytest.mark.parametrize("equation,shapes", [("ijk->kj", [[3, 4, 5]]), ("ij->", [[3, 4]]), ("ij,ij->i", [[3, 4]] * 2)])
def test_sums_and_permutes_need_no_product(tmp_path, equation, shapes):
    want = np.einsum(equation, *[np.zeros(s) for s in shapes]).shape
    graph = from_onnx(_einsum_file(tmp_path, equation, shapes, list(want) or [1]))
    assert graph.ops[-1].shape == (want or (1,))


@pytest.mark.parametrize("equation,shapes,message", [
    ("ii->i", [[3, 3]], "a label repeated within one operand"),
    ("ij,jk,kl->il", [[2, 3], [3, 4], [4, 5]], "3 operands"),
    ("ij,jk->iq", [[2, 3], [3, 4]], "the output's labels must"),
    ("ij,jk->ik", [[2, 3], [4, 5]], "label 'j' is 3 in one operand and 4"),
])
def test_what_einsum_cannot_be_is_one_line(tmp_path, equation, shapes, message):
    with pytest.raises(ModelError, match=message):
        from_onnx(_einsum_file(tmp_path, equation, shapes, [1]))


def _one_node_file(tmp_path: Path, node, inputs, outputs, inits=()) -> str:
    graph = helper.make_graph([node], "g", inputs, outputs, initializer=list(inits))
    path = tmp_path / "n.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    return str(path)


def _vi(name: str, shape: list[int], elem: int = TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_scatters_topk_and_random_map_onto_the_registry(tmp_path):
    """The ONNX operators RWKV, ViT-MAE and Funnel export beside Einsum: ScatterND and
    ScatterElements as `scatter` of the data's shape, TopK as its values and indices,
    RandomUniformLike as a `fill` of the input's shape."""
    cases = [
        (helper.make_node("ScatterND", ["d", "i", "u"], ["y"]),
         [_vi("d", [4, 6]), _vi("i", [2, 1], TensorProto.INT64), _vi("u", [2, 6])], [_vi("y", [4, 6])],
         [("scatter", (4, 6))]),
        (helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1, reduction="add"),
         [_vi("d", [4, 6]), _vi("i", [4, 2], TensorProto.INT64), _vi("u", [4, 2])], [_vi("y", [4, 6])],
         [("scatter", (4, 6))]),
        (helper.make_node("TopK", ["x", "k"], ["v", "j"], axis=1),
         [_vi("x", [4, 6])], [_vi("v", [4, 3]), _vi("j", [4, 3], TensorProto.INT64)],
         [("topk", (4, 3)), ("topk", (4, 3))]),
        (helper.make_node("RandomUniformLike", ["x"], ["y"]), [_vi("x", [4, 6])], [_vi("y", [4, 6])],
         [("fill", (4, 6))]),
    ]
    k = helper.make_tensor("k", TensorProto.INT64, [1], [3])
    for node, inputs, outputs, expected in cases:
        graph = from_onnx(_one_node_file(tmp_path, node, inputs, outputs, [k] if node.op_type == "TopK" else []))
        assert [(o.kind, o.shape) for o in graph.ops] == expected, node.op_type
    accumulate = dict(from_onnx(_one_node_file(tmp_path, *cases[1][:3])).ops[0].attrs)["accumulate"]
    assert accumulate is True


def test_a_parameter_reshaped_by_the_first_operation_passes_check(tmp_path):
    """A legacy export whose first node reshapes a large initializer (DPT's position
    embeddings): the view starts in step 0 with the parameter it aliases, and `check`
    reads the parameter as the owner of their storage, not as a write in its place."""
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.zeros((300, 300), np.float32), "w")  # too large to be folded as a constant
    shape = numpy_helper.from_array(np.array([900, 100], np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["w", "shape"], ["wr"], name="/emb/Reshape"),
             helper.make_node("Add", ["x", "wr"], ["y"], name="/emb/Add")]
    graph = helper.make_graph(nodes, "g", [_vi("x", [900, 100])], [_vi("y", [900, 100])], initializer=[w, shape])
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "r.onnx"))
    assert main(["plan", str(tmp_path / "r.onnx"), "--no-what-if", "-o", str(tmp_path / "r.json"), "-f"]) == 0
    assert main(["check", str(tmp_path / "r.json")]) == 0


def test_after_an_unknown_operator_only_unknown_operators_are_listed(tmp_path):
    """LED's and Longformer's NonZero: the Shape nodes reading its results are not
    listed as unknown (the importer reads Shape itself)."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Shape", ["nz"], ["s"]),
             helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "g", [_vi("x", [4, 6])], [_vi("y", [2])])
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(tmp_path / "nz.onnx"))
    with pytest.raises(ModelError, match=r"1 operator tileplan does not know: NonZero x1 \("):
        from_onnx(str(tmp_path / "nz.onnx"))
