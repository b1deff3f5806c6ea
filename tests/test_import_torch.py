"""Importing PyTorch models through torch.export: real transformers models built on the
meta device (no weights in memory), planned end to end, checked, and compared with the
built-in SigLIP builder."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
from transformers import (
    BertConfig, BertModel, LlamaConfig, LlamaModel, SiglipVisionConfig, SiglipVisionModel, ViTConfig, ViTModel,
)

import tileplan
from tileplan.cli.main import main
from tileplan.errors import ModelError
from tileplan.importers.repeats import find_repeats
from tileplan.importers.torch_export import from_torch
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.builtins import siglip
from tileplan.model.ir import RepeatBlock
from tileplan.model.machine import IPU21
from tileplan.model.precision import from_option
from tileplan.planner.plan import Plan, plan_program
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.report.format import from_json_text, to_json_text

warnings.filterwarnings("ignore", category=FutureWarning)


def planned(graph, weights: str = "f16") -> Plan:
    p = plan_program(graph.to_program(from_option(weights)), IPU21, policy("default"), Options())
    result = check_report(from_json_text(to_json_text(build_report(p))))
    assert result.consistent, [f.to_text() for f in result.findings if f.kind != "rejected"][:3]
    return p


def on_meta(build):
    with torch.device("meta"):
        return build().eval()


def ids(n: int) -> torch.Tensor:
    return torch.zeros(1, n, dtype=torch.long, device="meta")


@pytest.fixture(scope="module")
def llama():
    cfg = LlamaConfig(use_cache=False, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=160, vocab_size=1000)
    model = on_meta(lambda: LlamaModel(cfg))
    return model, from_torch(model, (ids(16),), "llama")


def test_vit_bert_and_a_grouped_query_decoder_plan_with_their_own_parameters(llama):
    vit = on_meta(lambda: ViTModel(ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=128, image_size=32, patch_size=8),
                                   add_pooling_layer=False))
    bert = on_meta(lambda: BertModel(BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                intermediate_size=128)))
    cases = [(vit, from_torch(vit, (torch.zeros(1, 3, 32, 32, device="meta"),), "vit")),
             (bert, from_torch(bert, (ids(16),), "bert")), llama]
    for model, graph in cases:
        assert graph.parameter_count == sum(p.numel() for p in model.parameters())
        names = {t.name for t in graph.tensors if t.role == "parameter"}
        assert names == {n for n, _ in model.named_parameters()}
        p = planned(graph)
        assert p.scope == "program" and p.verdict.fits
        assert not any(v.name.startswith("operation ") for v in p.values)
    # the decoder: attention kept whole, grouped-query heads, names from its modules
    p = planned(llama[1])
    kinds = {o.kind for o in p.program.operations()}
    assert "sdpa" in kinds and "bmm" not in kinds
    names = {v.name for v in p.values}
    assert "layers.{i}.self_attn.q_proj.matmul" in names  # the two layers: one repeat block
    assert "layers.1.mlp.down_proj.weight" in names and "layers.{i}.mlp.down_proj.matmul" in names
    # each product one poplin-planned Matmul step reading its weight where it rests:
    # no AMP copy of a weight, partials as the step's scratch, not values
    assert not any(n.endswith(("[AMP copy]", " partials")) for n in names)
    products = {o.index for o in p.program.operations() if o.kind == "matmul"}
    heads = {}
    for step in p.steps:
        if step.source in products:
            heads.setdefault(step.source, []).append(step.operation.split(" ")[0])
    assert products and heads == {i: ["Matmul"] for i in products}


def test_weights_of_linear_layers_are_declared_transposed_and_take_the_weight_precision(llama):
    _, graph = llama
    program = graph.to_program(from_option("f8f143:-4"))
    w = program.tensor("layers.0.self_attn.k_proj.weight")
    assert w.shape == (64, 32) and w.precision.is_fp8  # [in, out]: 2 kv heads x 16
    assert program.tensor("layers.0.input_layernorm.weight").precision == from_option("f16")
    assert program.tensor("embed_tokens.weight").precision == from_option("f16")  # a table, not a matmul weight


def test_the_so400m_tower_plans_within_one_percent_of_the_builtin_builder():
    """transformers' SiglipVisionModel (so400m, 2 layers, without its head) through
    torch.export against the built-in builder without the MAP head: the same parameters;
    the worst tile's total within 1 % (measured: 0.0 %)."""
    with_head = SiglipVisionConfig(hidden_size=1152, intermediate_size=4304, num_hidden_layers=2,
                                   num_attention_heads=16, image_size=384, patch_size=14)
    model = on_meta(lambda: SiglipVisionModel(with_head))
    graph = from_torch(model, (torch.zeros(1, 3, 384, 384, device="meta"),), "siglip")
    assert graph.parameter_count == sum(p.numel() for p in model.parameters())
    tower = on_meta(lambda: SiglipVisionModel(SiglipVisionConfig(**{**with_head.to_dict(), "vision_use_head": False})))
    graph = from_torch(tower, (torch.zeros(1, 3, 384, 384, device="meta"),), "siglip")
    assert graph.parameter_count == sum(p.numel() for p in tower.parameters())
    for weights in ("f8f143:-4", "f16"):
        imported = planned(graph, weights)
        builtin = plan_program(siglip.build_vit(siglip.config(siglip.DEFAULT_MODEL, layers=2, map_head=False),
                                                from_option(weights)), IPU21, policy("default"), Options())
        a, b = imported.exact.peak("total")[0], builtin.exact.peak("total")[0]
        assert abs(a - b) <= 0.01 * b, (weights, a, b)


def worst_tile_bytes(result) -> int:
    """What a plan's verdict line says is used on its worst tile: the exact peak of its
    tensors with the memory that is not tensors (all memory counted: no exchange rows)."""
    report = result.report
    assert report.exchange_row_bytes == 0
    return report.sections.exact.peak.total.bytes + report.support_reserve_bytes


@pytest.mark.parametrize("weights", ["f8f143:-4", "f16"])
def test_so400m_with_its_head_plans_within_one_percent_through_either_door(weights):
    """The two doors of issue 28 item 5: `tileplan plan siglip-so400m-patch14-384
    --layers 2 --weights W` and `tileplan.plan(SiglipVisionModel(cfg), ...,
    weights=W, activations="f16")`, MAP head included, agree within 1 % on the worst
    tile's tensors (measured: -0.3 % with F8 weights, -0.2 % with F16); all the memory
    the verdicts count differs by more (+2.0 %, +1.0 %), and exactly by the memory that
    is not tensors of the imported program's further steps: its views and copies (more
    kinds of vertex, 57 exchanging steps against 29; docs/models.md says which).
    transformers' head runs `nn.MultiheadAttention`, whose packed
    in-projection is sliced and transposed before its products: those views of an F8
    weight are F8, as a Poplar slice or transpose is of its tensor's type (they were
    planned F16, which multiplied the head's key/value product in F16 with float
    partials and took the peak to 153,254 B)."""
    cfg = SiglipVisionConfig(hidden_size=1152, intermediate_size=4304, num_hidden_layers=2, num_attention_heads=16,
                             image_size=384, patch_size=14)
    model = on_meta(lambda: SiglipVisionModel(cfg))
    imported = tileplan.plan(model, (torch.zeros(1, 3, 384, 384, device="meta"),), weights=weights,
                             activations="f16", what_if=False)
    builtin = tileplan.plan(siglip.DEFAULT_MODEL, layers=2, weights=weights, what_if=False)
    tensors = [r.report.sections.exact.peak.total.bytes for r in (imported, builtin)]
    assert abs(tensors[0] - tensors[1]) <= 0.01 * tensors[1], (weights, tensors)
    a, b = worst_tile_bytes(imported), worst_tile_bytes(builtin)
    nt = [r.report.sections.non_tensor for r in (imported, builtin)]
    assert a - b == tensors[0] - tensors[1] + nt[0].total - nt[1].total
    assert nt[0].counts.exchange_steps == 57 and nt[1].counts.exchange_steps == 29
    assert nt[0].counts.kinds > nt[1].counts.kinds and nt[0].counts.program_steps > nt[1].counts.program_steps
    program = from_torch(model, (torch.zeros(1, 3, 384, 384, device="meta"),), "siglip").to_program(
        from_option(weights), from_option("f16"))
    packed = program.tensor("head.attention.in_proj_weight").precision
    assert packed == from_option(weights)
    viewed, views = {"head.attention.in_proj_weight"}, []
    for o in program.operations():
        if o.kind in ("slice", "transpose") and o.inputs[0] in viewed:
            viewed.add(o.output)
            views.append(o)
    assert len(views) == 4  # the query's and the key/value's slices, each transposed for its product
    assert all(o.output_precision == packed for o in views), [(o.name, o.output_precision) for o in views]


def test_an_eight_bit_image_is_held_in_one_byte_an_element_and_a_long_in_four():
    """Graphcore's CNN inference feeds uint8 images normalised on the IPU (`eight_bit_io`):
    PopTorch holds a uint8 tensor as UNSIGNED_CHAR, an int8 as CHAR, an int16 in two
    bytes; int32 and int64 (cast to int32) in four."""
    class Normalise(torch.nn.Module):
        def forward(self, img, ids, small):
            return img.to(torch.float16).mul(0.5).sum() + ids.to(torch.float16).sum() + small.to(torch.float16).sum()

    graph = from_torch(Normalise(), (torch.zeros(2, 3, 8, 8, dtype=torch.uint8), torch.zeros(4, 5, dtype=torch.long),
                                     torch.zeros(6, dtype=torch.int16)), "normalise")
    program = graph.to_program(from_option("f16"), from_option("f16"))
    img, ids, small = (program.tensor(n) for n in ("img", "ids", "small"))
    assert (img.precision.name, img.precision.bytes) == ("U8", 1)
    assert (ids.precision.name, ids.precision.bytes) == ("I32", 4)
    assert (small.precision.name, small.precision.bytes) == ("I16", 2)
    p = planned(graph)
    assert p.verdict.fits


def test_an_unknown_operator_is_one_error_with_its_count_and_first_module():
    class Flips(torch.nn.Module):
        def forward(self, x):
            return x.flip(-1) + x.flip(0)

    with pytest.raises(ModelError, match=r"aten\.flip\.\w+ x2 \(first in the top level\).*Nothing was planned"):
        from_torch(Flips(), (torch.zeros(4, 8),))


def test_plan_a_saved_export_and_a_config_from_the_command_line(tmp_path, llama, capsys):
    model, _ = llama
    ep = torch.export.export(model, (ids(16),), strict=False)
    torch.export.save(ep, tmp_path / "llama.pt2")
    assert main(["plan", str(tmp_path / "llama.pt2"), "-o", str(tmp_path / "llama.json")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("Fits: worst tile")
    report = json.loads((tmp_path / "llama.json").read_text())
    assert report["program"]["source"] == str(tmp_path / "llama.pt2")
    folder = tmp_path / "bert"
    folder.mkdir()
    BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128).to_json_file(
        folder / "config.json")
    assert main(["plan", str(folder / "config.json"), "--sequence-length", "32", "--no-what-if",
                 "-o", str(tmp_path / "bert.json")]) == 0
    doc = json.loads((tmp_path / "bert.json").read_text())
    assert doc["program"]["sequence_length"] == 32 and doc["scope"] == "program"
    assert main(["plan", str(tmp_path / "llama.pt2"), "--batch", "2", "-o", str(tmp_path / "bad.json")]) == 2
    assert "fixed shapes" in capsys.readouterr().err


def test_the_python_api_returns_the_report_plan_writes(tmp_path, llama):
    model, _ = llama
    result = tileplan.plan(model, example_inputs=(ids(16),), weights="f16")
    assert result.fits and result.verdict.startswith("Fits: worst tile")
    assert from_json_text(result.to_json()).fits_budget
    assert "<html" in result.to_html()
    builtin = tileplan.plan(siglip.DEFAULT_MODEL, layers=2, what_if=False)  # as --no-what-if
    assert main(["plan", "--layers", "2", "--no-what-if", "-o", str(tmp_path / "b.json")]) == 0
    assert builtin.to_json() == (tmp_path / "b.json").read_text()


def test_repeated_layers_plan_as_one_repeat_block_with_the_peaks_of_the_unrolled_program():
    cfg = LlamaConfig(use_cache=False, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=160, vocab_size=1000)
    graph = from_torch(on_meta(lambda: LlamaModel(cfg)), (ids(16),), "llama3")
    (run,) = find_repeats(graph)
    assert (run.name, run.layer, run.count) == ("layers", "layers.{i}", 3)
    assert "layers.{i}.self_attn.q_proj.weight" in run.families
    repeat = graph.to_program(from_option("f8f143:-4"))
    (block,) = [item for item in repeat.items if isinstance(item, RepeatBlock)]
    assert block.count == 3 and all("layers.{i}." in op.name for op in block.body)
    flat = graph.to_program(from_option("f8f143:-4"), repeat=False)
    assert not any(isinstance(item, RepeatBlock) for item in flat.items)
    plans = [plan_program(p, IPU21, policy("default"), Options()) for p in (repeat, flat)]
    for p in plans:
        assert check_report(from_json_text(to_json_text(build_report(p)))).consistent
    assert len(plans[0].steps) < len(plans[1].steps) / 2
    for region in ("total", "standard", "interleaved"):
        a, b = (p.exact.peak(region)[0] for p in plans)
        assert abs(a - b) <= 0.01 * b, (region, a, b)


def test_with_fp8_weights_an_input_read_by_several_products_is_converted_apart(llama):
    """q, k and v projections read one norm output: converting it to F8 in place for the
    first would clobber it for the others, so the convert writes a value of its own and
    the report checks."""
    p = planned(llama[1], "f8f143:-4")
    converted = [v for v in p.values if v.name.endswith("[as F8]")]
    assert converted and all(v.storage_group == v.id for v in converted if "input_layernorm" in v.name)


def test_a_module_exported_in_training_mode_plans_as_in_eval_mode():
    """`model.eval()` forgotten before export: dropout is `native_dropout` and batch
    norm uses the batch's statistics (`_native_batch_norm_legit_functional`); the
    plan is the eval-mode module's (the mask and the running statistics' update are
    not inference memory)."""
    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8)
            self.drop, self.fc = torch.nn.Dropout(0.1), torch.nn.Linear(8 * 6 * 6, 4)

        def forward(self, x):
            return self.fc(self.drop(torch.relu(self.bn(self.conv(x)))).flatten(1))

    x = torch.zeros(2, 3, 8, 8)
    plans = {}
    for mode in ("train", "eval"):
        model = Net().train(mode == "train")
        graph = from_torch(model, (x,), "net")
        assert graph.parameter_count == sum(p.numel() for p in model.parameters())
        plans[mode] = planned(graph)
    kinds = {m: sorted(o.kind for o in p.program.operations()) for m, p in plans.items()}
    assert kinds["train"] == kinds["eval"] and "batchnorm" in kinds["train"]
    assert plans["train"].exact.peak("total") == plans["eval"].exact.peak("total")
