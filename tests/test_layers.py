"""Each operation's model layer (`Operation.layer`): stated by the built-ins, found
from the module paths of an importer's graph, kept through repeat blocks, pipeline
splits and the training program's builder."""

from __future__ import annotations

import json

from tileplan.app.request import PlanRequest
from tileplan.app.training import TrainingOptions, training_program
from tileplan.builtins import siglip
from tileplan.builtins.synthetic import BLOCK_OPERATIONS, SyntheticConfig, build_synthetic
from tileplan.importers.graph import GraphBuilder
from tileplan.model.ir import RepeatBlock
from tileplan.model.precision import F16
from tileplan.model.role import Role

BASE = "siglip-base-patch16-224"


def test_a_towers_block_body_is_layer_0_and_unrolled_layers_count_up():
    cfg = siglip.config(BASE, layers=3)
    repeat = siglip.build_vit(cfg, F16)
    block = next(item for item in repeat.items if isinstance(item, RepeatBlock))
    assert {op.layer for op in block.body} == {0}
    outside = [item for item in repeat.items if not isinstance(item, RepeatBlock)]
    assert all(op.layer is None for op in outside)  # the embedding, the final norm, the MAP head
    flat = siglip.build_vit(cfg, F16, unroll=True)
    for op in flat.operations():
        if op.name.startswith("vit.encoder.layer"):
            assert op.layer == int(op.name[len("vit.encoder.layer"):].split(".")[0]), op.name
        else:
            assert op.layer is None, op.name


def test_a_synthetic_chains_blocks_are_its_layers():
    program = build_synthetic(SyntheticConfig(200))
    ops = program.operations()
    assert [op.layer for op in ops] == [k // BLOCK_OPERATIONS for k in range(len(ops))]


def test_an_importers_layers_come_from_its_module_paths():
    """Entries of the model's module lists, numbered in the order they first run, a
    second list's after the first's (T5's decoder blocks after its encoder's)."""
    b = GraphBuilder("net")
    x = b.input("x", (2, 8), "float")
    x = b.op("relu", (x,), name="embed.relu", module="embed")
    for prefix in ("encoder.block", "decoder.block"):
        for i in range(2):
            x = b.op("tanh", (x,), name=f"{prefix}.{i}.act", module=f"{prefix}.{i}.layer.1.act")
    b.output(b.op("sigmoid", (x,), name="head.act", module="head"))
    graph = b.build()
    assert [(o.module, o.layer) for o in graph.ops] == [
        ("embed", None), ("encoder.block.0.layer.1.act", 0), ("encoder.block.1.layer.1.act", 1),
        ("decoder.block.0.layer.1.act", 2), ("decoder.block.1.layer.1.act", 3), ("head", None)]
    program = graph.to_program(F16, repeat=False)
    assert [op.layer for op in program.operations()] == [None, 0, 1, 2, 3, None]


def test_a_training_programs_operations_keep_their_layers(tmp_path):
    doc = {"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
           "intermediate_size": 128, "vocab_size": 500, "max_position_embeddings": 64,
           "architectures": ["BertForQuestionAnswering"]}
    (tmp_path / "config.json").write_text(json.dumps(doc))
    request = PlanRequest(model=str(tmp_path / "config.json"), sequence_length=8, batch=1,
                          training=TrainingOptions()).resolved()
    ops = training_program(request).operations()
    for op in ops:
        module = op.module or ""
        if module.startswith("bert.encoder.layer."):
            assert op.layer == int(module.split(".")[3]), (op.name, op.layer)
    query = "bert.encoder.layer.1.attention.self.query.weight"
    update = next(op for op in ops if op.name == f"{query} [optimizer update]")
    gradient = next(op for op in ops if op.name == f"{query} [gradient]")
    assert (update.layer, update.role) == (1, Role.UPDATE)
    assert (gradient.layer, gradient.role) == (1, Role.GRADIENT)
    assert {op.layer for op in ops if op.module and op.module.startswith("bert.embeddings")} == {None}
