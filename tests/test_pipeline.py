"""Several IPUs: a pipeline of contiguous layer ranges, one plan and one report per IPU."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.cli.main import main
from tileplan.errors import InputError
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.builtins import siglip
from tileplan.model.machine import IPU21
from tileplan.model.precision import from_option
from tileplan.model.stages import split_program
from tileplan.planner.pipeline import (
    ProgramSplit,
    best_split,
    expand_layers_per_ipu,
    fewest_ipus,
    fits_on,
    margin,
    pipeline_of,
)
from tileplan.planner.plan import plan_program
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.report.format import from_json_text, to_json_text


def run(program):
    return plan_program(program, IPU21, policy("default"), Options())


@pytest.mark.parametrize("spec,layers,ipus,expected", [
    ([-1], 9, 2, (4, 5)),  # evenly, the remainder on the last wildcard IPU (optimum-graphcore)
    ([-1, -1], 27, None, (13, 14)),
    ([3, -1, -1, -1], 24, None, (3, 7, 7, 7)),  # BERT-Large's published split
    ([1, 2, -1, -1], 10, None, (1, 2, 3, 4)),
    ([3, 7, 7, 7], 24, 4, (3, 7, 7, 7)),
])
def test_layers_per_ipu_follows_optimum_graphcore(spec, layers, ipus, expected):
    assert expand_layers_per_ipu(spec, layers, ipus) == expected


@pytest.mark.parametrize("spec,layers,ipus,message", [
    ([3, 7], 24, None, "places 10 layers; the model has 24"),
    ([20, -1], 12, None, "places 20 layers before its wildcards"),
    ([-2], 12, None, "expected counts >= 0 or -1"),
    ([-1, -1], 12, 3, "lists 2 IPUs, --ipus says 3"),
])
def test_bad_splits_are_one_line_errors(spec, layers, ipus, message):
    with pytest.raises(InputError, match=message):
        expand_layers_per_ipu(spec, layers, ipus)


def test_stages_hold_their_own_layers_and_receive_the_residual_stream():
    program = siglip.build_vit(siglip.config(siglip.DEFAULT_MODEL, layers=6), from_option("f16"))
    stages = split_program(program, (2, 3, 1))
    params = [{t.name for t in s.tensors if t.role == "parameter"} for s in stages]
    assert set.union(*params) == {t.name for t in program.tensors if t.role == "parameter"}
    assert not (params[0] & params[1]) and not (params[1] & params[2])
    assert "vit.embedding.weight" in params[0] and "vit.map.mlp.up.weight" in params[2]
    assert {n for n in params[1] if ".layer" in n and "qkv.weight" in n} == {
        f"vit.encoder.layer{i}.attention.qkv.weight" for i in (2, 3, 4)}
    received = [[t.name for t in s.tensors if t.role == "input"] for s in stages]
    assert received == [["vit.image.patches"], ["vit.encoder.layer1.mlp.residual.out [received]"],
                        ["vit.encoder.layer4.mlp.residual.out [received]"]]
    assert [s.outputs for s in stages[:2]] == [("vit.encoder.layer{i}.mlp.residual.out",)] * 2  # the send buffers
    assert [s.info.pipeline.layers for s in stages if s.info.pipeline] == [(0, 2), (2, 5), (5, 6)]
    assert [s.info.pipeline.ipu for s in stages if s.info.pipeline] == [0, 1, 2]


def test_so400m_with_f16_weights_needs_two_ipus_and_each_report_checks():
    program = siglip.build_vit(siglip.config(siglip.DEFAULT_MODEL), from_option("f16"))
    assert not run(program).verdict.fits
    pipeline = fewest_ipus(ProgramSplit(program, run))
    assert pipeline is not None and len(pipeline.plans) == 2 and pipeline.fits
    assert sum(pipeline.layers_per_ipu) == 27
    margins = [margin(p) for p in pipeline.plans]
    for other in ((13, 14), (15, 12)):  # the chosen split keeps the most margin on its tightest IPU
        alternative = pipeline_of(ProgramSplit(program, run), other)
        assert min(margin(p) for p in alternative.plans) <= min(margins)
    for p in pipeline.plans:
        assert check_report(from_json_text(to_json_text(build_report(p)))).consistent


def test_the_command_line_writes_a_report_per_ipu_and_the_ipu_config(tmp_path, capsys):
    out = tmp_path / "so.json"
    assert main(["plan", "--weights", "f16", "--layers-per-ipu", "3,-1,-1", "--no-what-if", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "3 IPUs, layers_per_ipu [3, 12, 12]: fits" in text and "rounds a replica up to 4 IPUs" in text
    config = json.loads((tmp_path / "so.ipu_config.json").read_text())
    assert config == {"ipus_per_replica": 3, "layers_per_ipu": [3, 12, 12],  # optimum-graphcore IPUConfig fields
                      "matmul_proportion": 0.6}
    for k in range(3):
        report = json.loads((tmp_path / f"so.ipu{k}.json").read_text())
        assert report["pipeline"] == {"ipu": k, "ipus": 3, "layers_per_ipu": [3, 12, 12],
                                      "layers": [[0, 3], [3, 15], [15, 27]][k]}
    assert main(["check", str(tmp_path / "so.ipu1.json")]) == 0
    assert main(["plan", "--weights", "f16", "--ipus", "auto", "--no-what-if", "-o", str(tmp_path / "a.json"),
                 "--fail-over-budget"]) == 0
    # the split `fewest_ipus` chooses (the most margin on the tightest IPU: checked above)
    split = json.loads((tmp_path / "a.ipu0.json").read_text())["pipeline"]["layers_per_ipu"]
    assert len(split) == 2 and sum(split) == 27
    assert f"2 IPUs, layers_per_ipu {split}: fits" in capsys.readouterr().out
    assert main(["plan", "--ipus", "two", "-o", str(tmp_path / "bad.json")]) == 2
    assert "--ipus must be a count" in capsys.readouterr().err


def test_the_largest_batch_on_one_and_on_two_ipus(tmp_path, capsys):
    from tileplan.app.request import PlanRequest
    from tileplan.app.whatif import largest_batch_rows, outcome

    base = PlanRequest()
    one, two = largest_batch_rows(base, lambda r: r.plan())
    b1, b2 = one.request.batch, two.request.batch
    assert one.outcome.fits and not base.with_(batch=b1 + 1).plan().verdict.fits
    assert b2 > b1 and two.request.pipelined and len(two.request.pipeline().plans) == 2
    assert one.outcome == outcome(one.request.plan())
    assert main(["plan", "--sweep", "batch=1,2,4", "-o", str(tmp_path / "s.sweep.json")]) == 0
    rows = json.loads((tmp_path / "s.sweep.json").read_text())["rows"]
    assert [r["batch"] for r in rows] == [1, 2, 4] and rows[0]["peak"] < rows[1]["peak"] < rows[2]["peak"]
    assert "--batch 4" in rows[2]["command"]


def test_a_7b_decoder_imported_on_the_meta_device_names_the_fewest_ipus(tmp_path, capsys):
    """A LLaMA-7B-shaped decoder (hidden 4096, 32 layers, vocabulary 32000; random
    weights on the meta device through torch.export) with F8 weights and F16
    activations (the model itself is FP32, which tileplan would plan in F32 unless
    told): the fewest IPU21s that hold it, the split, and the IPUConfig fragment
    (optimum-graphcore's fields, docs/notes/IPU-LOWERING.md section 5: layers_per_ipu,
    ipus_per_replica, matmul_proportion)."""
    from transformers import LlamaConfig

    folder = tmp_path / "llama-7b"
    folder.mkdir()
    LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                num_key_value_heads=32, vocab_size=32000).to_json_file(folder / "config.json")
    out = tmp_path / "l7.json"
    assert main(["plan", str(folder / "config.json"), "--weights", "f8f143:-4", "--activations", "f16",
                 "--ipus", "auto", "--no-what-if", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    config = json.loads((tmp_path / "l7.ipu_config.json").read_text())
    n = config["ipus_per_replica"]
    assert set(config) == {"ipus_per_replica", "layers_per_ipu", "matmul_proportion"}
    assert n == len(config["layers_per_ipu"]) and sum(config["layers_per_ipu"]) == 32
    assert config["matmul_proportion"] == 0.6 and 8 <= n <= 16  # 6.5 G F8 weights need more than 6 x 900 MB
    assert f"{n} IPUs, layers_per_ipu {config['layers_per_ipu']}: fits" in text
    for k in (0, n - 1):  # the embedding's IPU and the last one
        assert main(["check", str(tmp_path / f"l7.ipu{k}.json")]) == 0


def test_a_head_tied_to_the_embedding_runs_on_ipu_0(tmp_path):
    """GPT-2's LM head reads the token embedding: split over 2 IPUs it runs on IPU 0
    beside the embedding (optimum-graphcore's and Graphcore's own placement), after
    the last IPU's final norm, whose output IPU 0 receives; the last IPU holds no
    copy of the embedding and no logits."""
    from tileplan.app.request import PlanRequest

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 2, "n_positions": 32,
                                  "vocab_size": 500, "architectures": ["GPT2LMHeadModel"]}))
    request = PlanRequest(model=str(config), machine="mk2", sequence_length=16, layers_per_ipu="1,1").resolved()
    pipeline = request.pipeline()
    assert pipeline is not None
    first, last = (p.program for p in pipeline.plans)
    logits = [o for o in first.operations() if o.output_shape[-1] == 500 and o.kind == "matmul"]
    assert logits and not [o for o in last.operations() if o.output_shape[-1] == 500]
    embedding = [t.name for t in first.tensors if t.role == "parameter" and t.shape == (500, 64)]
    assert embedding and not [t for t in last.tensors if t.shape == (500, 64)]
    received = {t.name for t in first.tensors if t.role == "input"}
    assert any(name in received for name in last.outputs)  # the final norm's output, sent back to IPU 0
    for plan in pipeline.plans:
        assert check_report(from_json_text(to_json_text(build_report(plan)))).consistent


def test_a_masked_lm_head_runs_on_ipu_0_whole(tmp_path):
    """BERT's masked-LM head (`cls`: its transform, then the decoder tied to the token
    embedding) runs on IPU 0 from its first operation, as optimum-graphcore's
    `PipelinedBertForMaskedLM` places it; the last IPU runs only its layers."""
    from tileplan.app.request import PlanRequest

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2,
                                  "num_attention_heads": 2, "intermediate_size": 128, "vocab_size": 500,
                                  "max_position_embeddings": 64, "architectures": ["BertForMaskedLM"]}))
    request = PlanRequest(model=str(config), sequence_length=16, layers_per_ipu="1,1").resolved()
    first, last = split_program(request.program(), (1, 1))
    assert {o.module for o in last.operations()} <= {o.module for o in request.program().operations()
                                                     if o.layer is not None}
    assert any((o.module or "").startswith("cls.predictions.transform") for o in first.operations())


def test_when_no_split_fits_the_first_ipu_alone_says_why(tmp_path, capsys):
    """`--ipus auto` with an embedding (and the head tied to it) larger than an IPU of 4
    tiles: no split fits, and IPU 0 planned with no layers shows why."""
    from pathlib import Path

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 2, "n_positions": 32,
                                  "vocab_size": 20000, "architectures": ["GPT2LMHeadModel"]}))
    machine = Path(__file__).parent / "data" / "machines" / "mk2-4tiles.toml"
    assert main(["plan", str(config), "--machine", str(machine), "--sequence-length", "16", "--ipus", "auto",
                 "--no-what-if", "-o", str(tmp_path / "g.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("no split over up to 64 IPUs fits")
    assert lines[1].startswith("  IPU 0 with no layers (the embeddings, and a head tied to them) already does not "
                               "fit: Out of memory on tile ")
    assert not list(tmp_path.glob("g*.json"))  # nothing written


class TableSplit:
    """A split whose stage margins come from a table (n, k, count) -> margin, counting
    what the search asks."""

    def __init__(self, layers, table):
        self.layers, self.table, self.asked = layers, table, set()

    def margin(self, n, k, count):
        self.asked.add((n, k, count))
        return self.table(n, k, count)

    def plans(self, counts):
        return ()


def splits(layers, n):
    """Every contiguous split of `layers` over n stages, a middle stage with a layer."""
    if n == 1:
        yield (layers,)
        return
    for c in range(layers + 1):
        for rest in splits(layers - c, n - 1):
            if all(r >= 1 for r in rest[:-1]):
                yield (c, *rest)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 7), st.integers(1, 4),
       st.dictionaries(st.tuples(st.integers(1, 4), st.integers(0, 3), st.integers(0, 7)),
                       st.one_of(st.none(), st.integers(-3, 3)), max_size=80))
def test_fits_on_answers_as_fewest_ipus_whatever_the_margins(layers, ipus, table):
    """`fits_on` (some split over at most N IPUs fits) is `fewest_ipus(split, N)` finding
    one, even where a stage's margin does not shrink with its layers."""
    def margin(n, k, c):
        return table.get((n, k, c), c % 3 - 1)
    found = fewest_ipus(TableSplit(layers, margin), ipus)
    assert fits_on(TableSplit(layers, margin), ipus) == (found is not None)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7), st.integers(2, 4), st.lists(st.integers(0, 40), min_size=12, max_size=12))
def test_the_best_split_keeps_the_most_margin_on_its_tightest_stage(layers, n, budgets):
    """With margins that shrink with a stage's layers (the search's premise), the split
    `best_split` finds has the largest smallest margin of every split, and `fits_on`
    asks for no margin the search does not."""
    def margin(n_, k, c):
        return budgets[(k * 3 + n_) % 12] - 7 * c
    split = TableSplit(layers, margin)
    counts = best_split(split, n)
    feasible = [s for s in splits(layers, n) if all(margin(n, k, c) >= 0 for k, c in enumerate(s))]
    assert (counts is None) == (not feasible)
    if counts is not None:
        assert sum(counts) == layers and all(c >= 1 for c in counts[1:-1])
        best = max(min(margin(n, k, c) for k, c in enumerate(s)) for s in feasible)
        assert min(margin(n, k, c) for k, c in enumerate(counts)) == best
        cheap, full = TableSplit(layers, margin), TableSplit(layers, margin)
        assert fits_on(cheap, n) and fewest_ipus(full, n) is not None and cheap.asked <= full.asked
