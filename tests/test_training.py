"""Training: `tileplan plan MODEL --train` and `tileplan.plan(..., train=True)`
on small models of the published architectures (a BERT QA head, BERT's pre-training
heads, GPT-2's tied LM head, mT5), one IPU and pipelines: the training state, the
stash, recomputation, `--ipu-config`, and every report passing `tileplan check` (the
autouse fixture of conftest.py checks each report a test writes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tileplan
from tileplan.app.ipuconfig import read_ipu_config
from tileplan.app.request import PlanRequest
from tileplan.app.training import TrainingOptions
from tileplan.app.whatif import training_what_if
from tileplan.cli.main import main
from tileplan.errors import InputError

BERT = {"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 2,
        "intermediate_size": 128, "vocab_size": 500, "max_position_embeddings": 64}


def config(tmp_path: Path, name: str, architecture: str, **fields: object) -> str:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    doc = {**(BERT if architecture.startswith("Bert") else {}), "architectures": [architecture], **fields}
    (folder / "config.json").write_text(json.dumps(doc))
    return str(folder / "config.json")


def report(path: Path) -> dict:
    return json.loads(path.read_text())


def values(doc: dict) -> list[dict]:
    return doc["timeline"]["values"]


@pytest.fixture(scope="module")
def qa(tmp_path_factory) -> str:
    return config(tmp_path_factory.mktemp("models"), "qa", "BertForQuestionAnswering")


def plan(qa: str, tmp_path: Path, *flags: str, name: str = "r.json") -> dict | None:
    """The report `tileplan plan --train` writes (None for a pipeline: one per IPU)."""
    out = tmp_path / name
    assert main(["plan", qa, "--train", "--sequence-length", "16", "--batch", "2", "--no-what-if", "-o", str(out),
                 *flags]) == 0
    return report(out) if out.exists() else None


def test_a_qa_head_trains_on_one_ipu_with_adamw_state_always_live(qa, tmp_path, capsys):
    doc = plan(qa, tmp_path)
    program = doc["program"]
    assert program["mode"] == "training" and program["architecture"] == "BertForQuestionAnswering"
    assert (program["optimizer"], program["first_order_precision"], program["gradient_accumulation"]) == \
        ("adamw", "F32", 1)
    names = {v["name"]: v for v in values(doc)}
    weight = "bert.encoder.layer.0.attention.self.query.weight"
    for state in ("first moment", "second moment"):  # PopTorch's defaults: FP32 moments, declared: always live
        v = names[f"{weight} [optimizer {state}]"]
        assert (v["role"], v["precision"], v["shape"]) == ("optimizer_state", "F32", [64, 64])
    assert not any("[gradient accumulator]" in n for n in names)  # no accumulation on one IPU by default
    assert f"{weight} [gradient]" in names and names[f"{weight} [gradient]"]["role"] == "gradient"
    assert names[weight]["role"] == "parameter" and names[f"{weight} [optimizer update]"]["role"] == "update"
    classes = doc["verdict"]["peak_tile"]["classes"]
    assert {(c["name"], c["always_live"]) for c in classes} >= {("weights", True), ("optimizer state", True)}
    out = capsys.readouterr().out
    assert "always live by class: weights" in out
    assert main(["summary", str(tmp_path / "r.json")]) == 0
    assert "Training memory on tile" in capsys.readouterr().out
    assert main(["html", str(tmp_path / "r.json")]) == 0
    assert 'id="training-table"' in (tmp_path / "r.html").read_text()
    assert main(["diff", str(tmp_path / "r.json"), str(tmp_path / "r.json")]) == 0
    assert "Training memory on the worst tile at its peak, by class" in capsys.readouterr().out


def test_accumulation_sharding_and_offchip_state(qa, tmp_path):
    weight = "bert.encoder.layer.0.intermediate.dense.weight"
    doc = plan(qa, tmp_path, "--gradient-accumulation", "4", "--optimizer-preset", "optimum",
               "--replication-factor", "2", "--replicated-tensor-sharding", name="a.json")
    names = {v["name"]: v for v in values(doc)}
    acc = names[f"{weight} [gradient accumulator]"]
    assert (acc["role"], acc["precision"], acc["shape"]) == ("accumulator", "F16", [64, 128])
    first, second = names[f"{weight} [optimizer first moment]"], names[f"{weight} [optimizer second moment]"]
    assert (first["precision"], second["precision"]) == ("F16", "F32")  # optimum-graphcore's trainer
    assert first["shape"] == second["shape"] == [64 * 128 // 2]  # a shard of each of the 2 replicas
    doc = plan(qa, tmp_path, "--optimizer", "lamb", "--optimizer-state-offchip", name="o.json")
    names = {v["name"]: v for v in values(doc)}
    assert not any(v["role"] == "optimizer_state" for v in names.values())
    loaded = names[f"{weight} [optimizer update] first moment loaded"]  # live at its update only
    assert loaded["role"] == "update" and loaded["precision"] == "F32"



def test_the_updater_term_takes_the_first_moments_precision_where_no_weight_decay_reaches_the_weight(qa, tmp_path):
    """PopART connects a weight to its AdamUpdaterOp only for a decay that is variable
    or above 0 (adamdecompose.cpp); the updater then takes the weight's type, else the
    first moment's (AdamUpdaterOp::setup). F16 weights, F32 moments."""
    matrix, bias = "bert.encoder.layer.0.intermediate.dense.weight", "bert.encoder.layer.0.intermediate.dense.bias"

    def updaters(*flags: str) -> tuple[str, str]:
        doc = plan(qa, tmp_path, *flags, name=f"u{'_'.join(flags)}.json")
        names = {v["name"]: v for v in values(doc)}
        return names[f"{matrix} [optimizer update]"]["precision"], names[f"{bias} [optimizer update]"]["precision"]

    assert updaters() == ("F16", "F16")  # PopTorch's own default: a variable decay on every weight
    assert updaters("--weight-decay", "0") == ("F32", "F32")  # Graphcore's BERT SQuAD: 0, marked constant
    assert updaters("--weight-decay", "0.01", "--optimizer", "lamb") == ("F16", "F32")  # biases never decay
    # optimum-graphcore's trainer: decay 0.0 constant, and an F16 first moment
    assert updaters("--optimizer-preset", "optimum") == ("F16", "F16")
    with pytest.raises(InputError, match="--weight-decay must be in"):
        TrainingOptions(weight_decay=-1)

def test_a_pipeline_stashes_each_ipus_inputs_2n_minus_1_minus_i_deep(qa, tmp_path):
    plan(qa, tmp_path, "--layers-per-ipu", "1,1,2", name="p.json")
    depths = []
    for ipu in range(3):
        doc = report(tmp_path / f"p.ipu{ipu}.json")
        assert doc["program"]["gradient_accumulation"] == 5  # 2N - 1 with N = 3, PopART's least
        assert doc["program"]["recompute"] == "pipeline"  # PopTorch's default over several IPUs
        assert doc["pipeline"]["layers_per_ipu"] == [1, 1, 2]
        stashes = [v for v in values(doc) if v["role"] == "stash"]
        depths.append(sorted({v["shape"][0] for v in stashes}))
        if ipu == 1:  # what IPU 1 receives: layer 0's output (and the attention mask)
            assert "bert.encoder.layer.0.output.LayerNorm.layernorm [stash]" in {v["name"] for v in stashes}
    assert depths == [[5], [3], []]  # 2 (3 - 1 - i) + 1; the last IPU runs its backward right after
    fragment = json.loads((tmp_path / "p.ipu_config.json").read_text())
    assert fragment["layers_per_ipu"] == [1, 1, 2] and fragment["gradient_accumulation_steps"] == 5
    # the IPUConfig tileplan writes is one --ipu-config reads back
    assert main(["plan", qa, "--train", "--sequence-length", "16", "--batch", "2", "--no-what-if", "-o",
                 str(tmp_path / "q.json"), "--ipu-config", str(tmp_path / "p.ipu_config.json")]) == 0
    assert report(tmp_path / "q.ipu0.json")["pipeline"]["layers_per_ipu"] == [1, 1, 2]


def test_every_layer_recomputation_checkpoints_layer_outputs(qa, tmp_path):
    plan(qa, tmp_path, "--layers-per-ipu", "2,2", "--recompute", "every-layer", name="e.json")
    first = report(tmp_path / "e.ipu0.json")
    doc = first
    stashed = {v["name"] for v in values(first) if v["role"] == "stash"}
    # IPU 0 recomputes the embeddings from the token ids and layer 1 from layer 0's output
    assert stashed == {"input_ids [stash]", "bert.encoder.layer.0.output.LayerNorm.layernorm [stash]"}
    assert any(v["name"].endswith("[recomputed]") for v in values(first))
    assert doc["program"]["recompute"] == "every-layer"


def test_a_tied_head_runs_on_ipu_0_as_the_last_stage(tmp_path):
    """GPT-2's LM head runs on IPU 0, its final norm on the last IPU after the last
    layer (Graphcore's GPT-2 gives `lm_head` a block on IPU 0 and `ln_f` none)."""
    gpt2 = config(tmp_path, "gpt2", "GPT2LMHeadModel", model_type="gpt2", n_embd=64, n_layer=2, n_head=2,
                  vocab_size=500, n_positions=64, bos_token_id=0, eos_token_id=0)
    assert main(["plan", gpt2, "--train", "--sequence-length", "16", "--no-what-if", "-o", str(tmp_path / "g.json"),
                 "--layers-per-ipu", "1,1", "--embedding-serialization-factor", "2"]) == 0
    first = report(tmp_path / "g.ipu0.json")["program"]
    assert (first["stages"], first["stash_depths"]) == ("0,2", "5,0")  # 3 stages: the head is the third
    names = {v["name"] for v in values(report(tmp_path / "g.ipu0.json"))}
    assert {"transformer.wte.splits.split0.weight", "transformer.wte.splits.split1.weight"} <= names
    last = {v["name"] for v in values(report(tmp_path / "g.ipu1.json"))}
    assert "transformer.ln_f.weight" in last and "transformer.ln_f.weight" not in names


def test_bert_pretrainings_pooler_and_heads_run_on_ipu_0(tmp_path):
    """BERT's pre-training heads read the token embedding: over two IPUs the pooler and
    both heads run on IPU 0 beside it (Graphcore's BERT: "Pooler --> IPU 0",
    "Classifier --> IPU 0"), the layers on their IPUs."""
    from tileplan.app.training import training_program

    pre = config(tmp_path, "pre", "BertForPreTraining")
    request = PlanRequest(model=pre, sequence_length=16, training=TrainingOptions()).resolved()
    first, last = (training_program(request, (2, 2), ipu) for ipu in (0, 1))
    weights = [{t.name for t in p.tensors if t.role == "parameter"} for p in (first, last)]
    for head in ("bert.pooler.dense.weight", "cls.predictions.transform.dense.weight", "cls.seq_relationship.weight"):
        assert head in weights[0] and head not in weights[1]
    assert "bert.encoder.layer.3.output.dense.weight" in weights[1]


def test_bert_pretraining_and_mt5_plan(tmp_path):
    pre = config(tmp_path, "pre", "BertForPreTraining")
    assert main(["plan", pre, "--train", "--sequence-length", "16", "--no-what-if", "-o",
                 str(tmp_path / "pre.json")]) == 0
    mt5 = config(tmp_path, "mt5", "MT5ForConditionalGeneration", model_type="mt5", d_model=32, d_ff=64,
                 num_layers=1, num_decoder_layers=1, num_heads=2, d_kv=16, vocab_size=300,
                 tie_word_embeddings=False, decoder_start_token_id=0)
    assert main(["plan", mt5, "--train", "--sequence-length", "8", "--no-what-if", "-o",
                 str(tmp_path / "mt5.json"), "--layers-per-ipu", "1,1"]) == 0
    assert report(tmp_path / "mt5.ipu1.json")["program"]["stages"] == "1"  # untied: the head on the last IPU


def test_a_model_without_a_loss_and_flags_without_train_are_one_line_errors(tmp_path, capsys):
    base = config(tmp_path, "base", "BertModel")
    assert main(["plan", base, "--train", "--no-what-if", "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--train needs a loss" in err and "ForQuestionAnswering" in err
    assert main(["plan", base, "--optimizer", "sgd", "-o", str(tmp_path / "y.json")]) == 2
    assert "training option: add --train" in capsys.readouterr().err


def test_the_ipu_config_sets_the_defaults_and_lists_what_is_not_modelled(qa, tmp_path, capsys):
    path = tmp_path / "ipu_config.json"
    path.write_text(json.dumps({
        "layers_per_ipu": [1, 3], "matmul_proportion": [0.2, 0.25], "recompute_checkpoint_every_layer": True,
        "optimizer_state_offchip": True, "gradient_accumulation_steps": 8, "seed": 42,
        "explicit_ir_inference": False, "inference_layers_per_ipu": [4]}))
    config_read = read_ipu_config(str(path), training=True)
    assert config_read.defaults == {"layers_per_ipu": "1,3", "available_memory_proportion": "0.2,0.25",
                                    "recompute": "every-layer", "optimizer_state_offchip": True,
                                    "gradient_accumulation": 8, "partials": "f16"}
    assert set(config_read.unmodelled) == {"seed", "explicit_ir_inference", "inference_layers_per_ipu"}
    inference = read_ipu_config(str(path), training=False)
    assert inference.defaults["layers_per_ipu"] == "4" and "optimizer_state_offchip" in inference.unmodelled
    # a flag given wins over the file
    assert main(["plan", qa, "--train", "--sequence-length", "16", "--no-what-if", "-o", str(tmp_path / "c.json"),
                 "--ipu-config", str(path), "--gradient-accumulation", "16"]) == 0
    out = capsys.readouterr().out
    assert "seed not modelled" in out and "explicit_ir_inference not modelled" in out
    first = report(tmp_path / "c.ipu0.json")["program"]
    assert (first["gradient_accumulation"], first["recompute"], first["optimizer_state_offchip"]) == \
        (16, "every-layer", True)
    bad = tmp_path / "bad.json"
    bad.write_text('{"layers_per_ipu": "3,7"}')
    with pytest.raises(InputError, match="layers_per_ipu must be a non-empty list"):
        read_ipu_config(str(bad), training=True)


def test_an_ipu_configs_unmodelled_fields_are_listed_escaped_and_bounded(tmp_path):
    """A field's name is the file's text: a newline or NUL in it cannot forge a line,
    and a file of thousands of unknown fields lists 20 and counts the rest."""
    path = tmp_path / "ipu_config.json"
    path.write_text(json.dumps({"evil\nTileplan: error: forged\u0000": 1, **{f"field{i:04d}": i for i in range(500)}}))
    lines = read_ipu_config(str(path), training=True).lines()
    assert len(lines) == 21 and lines[-1].endswith(": 481 more fields not modelled")
    assert all("\n" not in line and "\x00" not in line for line in lines)
    assert "evil\\nTileplan: error: forged\\x00 not modelled" in lines[0]


def test_the_api_plans_a_module_with_its_own_loss():
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up, self.down = torch.nn.Linear(32, 64), torch.nn.Linear(64, 8)

        def forward(self, x, y):
            return torch.nn.functional.cross_entropy(self.down(torch.relu(self.up(x))), y)

    result = tileplan.plan(Net(), example_inputs=(torch.zeros(16, 32), torch.zeros(16, dtype=torch.long)),
                           train=TrainingOptions(optimizer="sgd-momentum"))
    doc = json.loads(result.to_json())
    assert result.fits and doc["program"]["optimizer"] == "sgd-momentum"
    assert "up.weight [optimizer velocity]" in {v["name"] for v in values(doc)}


def test_the_what_if_names_the_largest_micro_batch_and_the_fewest_ipus(tmp_path):
    machine = tmp_path / "tile.toml"  # a small model on one tile: the largest batch is small, the search short
    machine.write_text(SMALL)
    small = config(tmp_path, "small", "BertForQuestionAnswering", hidden_size=32, num_hidden_layers=2,
                   intermediate_size=64, vocab_size=700, max_position_embeddings=16)
    base = PlanRequest(model=small, sequence_length=8, batch=8, machine=str(machine), training=TrainingOptions())
    rows = {r.knob: r for r in training_what_if(base, lambda r: r.plan())}
    batch = rows["batch"]  # from 8: 16 does not fit, 12 does, 14 not, 13 not; then 13 to 15 checked
    assert batch.value == "12 (the largest micro-batch that fits up to 15)" and batch.outcome.fits
    assert not any(base.with_(batch=b).plan().verdict.fits for b in (13, 14, 15))
    assert rows["ipus"].value.startswith("1 (the fewest that fit") and "--train" in rows["ipus"].request.command()
    assert rows["optimizer_state_offchip"].outcome.peak < rows["batch"].outcome.peak


SMALL = """name = "ipu21-tile"
class_prefix = "Ipu21"
tile_count = 1
tile_bytes = 638976
non_interleaved_bytes = 212992
interleaved_bytes = 425984
support_reserve_bytes = 49152
standard_budget_bytes = 162080
interleaved_budget_bytes = 424880
element_pair_bytes = 32768
exchange_row_bytes = 16

[[amp]]
multiply = "F16"
input_channels = 16
output_channels = 8
accumulate = "F32"

[[amp]]
multiply = "F32"
input_channels = 8
output_channels = 8
accumulate = "F32"
"""


def test_a_vision_transformer_trains_through_its_patch_convolution(tmp_path):
    vit = config(tmp_path, "vit", "ViTForImageClassification", model_type="vit", hidden_size=32,
                 intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=16, patch_size=8,
                 num_labels=4)
    assert main(["plan", vit, "--train", "--no-what-if", "-o", str(tmp_path / "vit.json")]) == 0
    names = {v["name"] for v in values(report(tmp_path / "vit.json"))}
    assert "vit.embeddings.patch_embeddings.projection.weight [gradient]" in names  # conv_grad_weight


def test_poptorchs_state_types_override_the_preset_one_by_one(tmp_path, capsys):
    """`--accum-type` and the moments' types, as PopTorch's optimizer arguments:
    Graphcore's BERT examples train with an FP16 accumulator and FP32 moments, which
    neither preset is."""
    setup = TrainingOptions(accum_type="f16").setup()
    assert (setup.accumulator.name, setup.first_order.name, setup.second_order.name) == ("F16", "F32", "F32")
    setup = TrainingOptions(optimizer_preset="optimum", first_order_momentum_accum_type="f32").setup()
    assert (setup.accumulator.name, setup.first_order.name, setup.second_order.name) == ("F16", "F32", "F32")
    assert "--accum-type f16" in " ".join(TrainingOptions(accum_type="f16").command())
    with pytest.raises(InputError, match="--second-order-momentum-accum-type must be f16 or f32"):
        TrainingOptions(second_order_momentum_accum_type="bf16")
    assert main(["plan", "bert-base-uncased", "--accum-type", "f16", "-o", str(tmp_path / "x.json")]) == 2
    assert "--accum-type is a training option: add --train" in capsys.readouterr().err
