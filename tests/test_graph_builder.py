"""The importers' graph builder as the built-in models use it: output names, origins
numbered as declared, and repeat blocks the builder is told of."""

from __future__ import annotations

import pytest

from tileplan.builtins import siglip
from tileplan.errors import ModelError
from tileplan.importers.graph import GraphBuilder
from tileplan.model.ir import Operation, RepeatBlock
from tileplan.model.precision import F16, Precision

F8 = Precision("F8F143", -4)


def tower(layers: int, origins: str = "declared") -> GraphBuilder:
    """A residual chain of `layers` alike layers (norm, projection, residual) between a
    projection in and a norm out, parameters declared family by family."""
    b = GraphBuilder("net", origins=origins)
    x = b.input("net.x", (1, 4, 8), "float")
    w = b.parameter("net.in.weight", (8, 8), "float")
    x = b.op("matmul", (x, w), name="net.in", output="net.in.out")
    for suffix, shape in (("norm.scale", (1, 1, 8)), ("norm.bias", (1, 1, 8)), ("proj.weight", (8, 8))):
        for i in range(layers):
            b.parameter(f"net.layer{i}.{suffix}", shape, "float")

    def layer(path: str, h: str) -> str:
        n = b.op("layernorm", (h, f"{path}.norm.scale", f"{path}.norm.bias"), {"eps": 1e-6}, name=f"{path}.norm",
                 output=f"{path}.norm.out")
        p = b.op("matmul", (n, f"{path}.proj.weight"), name=f"{path}.proj", output=f"{path}.proj.out")
        return b.op("add", (h, p), name=f"{path}.residual", output=f"{path}.residual.out")

    x = b.repeat("net.layers", "net.layer{i}", layers, x, layer)
    scale = b.parameter("net.out.scale", (1, 1, 8), "float")
    bias = b.parameter("net.out.bias", (1, 1, 8), "float")
    b.output(b.op("layernorm", (x, scale, bias), {"eps": 1e-6}, name="net.out", output="net.out.out"))
    return b


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_a_repeat_becomes_one_block_numbered_as_declared(layers):
    program = tower(layers).build().to_program(F8)
    (block,) = [item for item in program.items if isinstance(item, RepeatBlock)]
    assert (block.count, block.name, block.carried_in, block.carried_out) == (
        layers, "net.layers", "net.in.out", "net.layer{i}.residual.out")
    assert block.families == ("net.layer{i}.norm.scale", "net.layer{i}.norm.bias", "net.layer{i}.proj.weight")
    assert [op.name for op in block.body] == ["net.layer{i}.norm", "net.layer{i}.proj", "net.layer{i}.residual"]
    assert block.body[0].inputs == ("net.in.out", "net.layer{i}.norm.scale", "net.layer{i}.norm.bias")
    # declaration order: x, in.weight, in, the families, the body once, out.scale, out.bias, out
    params = 3 * layers
    assert [t.origin for t in program.tensors] == [0, 1, *range(3, 3 + params), 6 + params, 7 + params]
    assert [(op.origin, op.index) for op in program.operations()] == [
        (2, 0), (3 + params, 1), (4 + params, 2), (5 + params, 3), (8 + params, 4)]
    last = program.operations()[-1]
    assert last.inputs[0] == "net.layer{i}.residual.out" and program.outputs == ("net.out.out",)
    assert program.tensor("net.layer0.proj.weight").precision == F8
    assert program.tensor("net.layer0.norm.scale").precision == F16


def test_unrolled_the_layers_run_one_after_another():
    program = tower(2).build().to_program(F8, repeat=False)
    assert not any(isinstance(item, RepeatBlock) for item in program.items)
    ops = program.operations()
    assert [op.name for op in ops] == ["net.in", "net.layer0.norm", "net.layer0.proj", "net.layer0.residual",
                                       "net.layer1.norm", "net.layer1.proj", "net.layer1.residual", "net.out"]
    assert ops[4].inputs[0] == "net.layer0.residual.out"
    assert [op.origin for op in ops] == [2, 9, 10, 11, 12, 13, 14, 17]


def test_by_default_tensors_are_numbered_first():
    program = tower(2, origins="tensors first").build().to_program(F8)
    assert [t.origin for t in program.tensors] == list(range(len(program.tensors)))
    n = len(program.tensors)
    assert [op.origin for op in program.operations()] == list(range(n, n + 5))


def test_layers_that_differ_are_refused():
    b = GraphBuilder("net")
    x = b.input("net.x", (1, 4, 8), "float")

    def layer(path: str, h: str) -> str:
        h = b.op("relu", (h,), name=f"{path}.act")
        return b.op("relu", (h,), name=f"{path}.again") if path.endswith("1") else h

    with pytest.raises(ModelError, match="layer 1 adds 2 operations, layer 0 1"):
        b.repeat("net.layers", "net.layer{i}", 2, x, layer)


def test_an_output_name_is_declared_once():
    b = GraphBuilder("net")
    x = b.input("net.x", (1, 4), "float")
    b.op("relu", (x,), name="a", output="y")
    with pytest.raises(ModelError, match="declared twice"):
        b.op("relu", (x,), name="b", output="y")


def test_the_so400m_tower_is_numbered_as_the_reference_numbers_it():
    """Patches, the embedding's weight and bias, then the embedding's two operations,
    the position table and its add; 27 x 12 encoder parameters; the block's 14
    operations once."""
    program = siglip.build_vit(siglip.config(siglip.DEFAULT_MODEL), F8)
    origin = {t.name: t.origin for t in program.tensors}
    assert [origin[n] for n in ("vit.image.patches", "vit.embedding.weight", "vit.embedding.bias",
                                "vit.position")] == [0, 1, 2, 5]
    ops = program.operations()
    assert [(op.name, op.origin, op.index) for op in ops[:3]] == [
        ("vit.embedding", 3, 0), ("vit.embedding.bias_add", 4, 1), ("vit.position_add", 6, 2)]
    assert isinstance(ops[3], Operation) and (ops[3].name, ops[3].origin) == (
        "vit.encoder.layer{i}.attention_norm", 7 + 27 * 12)
    assert origin["vit.encoder.final_norm.scale"] == 7 + 27 * 12 + 14
