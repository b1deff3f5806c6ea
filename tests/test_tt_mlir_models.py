"""The tt-mlir frontend on models built from config.json files (a BERT layer, a small
Llama), through the loader the application registers: what tt-xla's and tt-mlir's
fusions make of them, the embedding's workarounds, the per-level attention, and the
planner's verdict end to end (the FRONTEND contract and `tileplan plan`)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tileplan.app.tenstorrent.tt_mlir_models import ImportedModel
from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontend import frontend
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.tiles import DataType, Layout

from tt_mlir_support import BERT, LLAMA, config_program, kinds, lowered, n150


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return config_program(BERT, tmp_path_factory.mktemp("bert"), 128)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return config_program(LLAMA, tmp_path_factory.mktemp("llama"), 64)


def test_the_config_dtype_is_the_models_dtype(bert):
    assert {t.precision.name for t in bert.tensors if t.name.endswith(".weight")} == {"BF16"}


def test_bert_fuses_qkv_into_one_linear_and_slices_it(bert):
    counts = Counter(kinds(lowered(bert, 0)))
    # q, k, v of the layer share their input: one linear by the concatenated weights
    # (SharedLHSMatmulFusion), three slices; then the output, intermediate and output
    # dense layers and the pooler
    assert counts["ttnn.linear"] == 5 and counts["ttnn.slice"] >= 3
    assert counts["ttnn.layer_norm"] == 3  # embeddings, attention output, layer output
    assert counts["ttnn.embedding"] == 1  # position and token-type lookups are constant: const-evaluated


def test_bert_attention_is_decomposed_at_level_0_and_fused_above(bert):
    assert "ttnn.softmax" in kinds(lowered(bert, 0))
    fused = kinds(lowered(bert, 1))
    assert "ttnn.transformer.scaled_dot_product_attention" in fused and "ttnn.softmax" not in fused


def test_the_embedding_reads_row_major_uint32_indices_and_a_row_major_bf16_table(bert):
    p = lowered(bert, 0)
    emb = next(op for op in p.ops if op.kind is OpKind.EMBEDDING)
    indices, table = emb.inputs
    assert p.tensors[table].spec.layout is Layout.ROW_MAJOR and p.tensors[table].spec.dtype is DataType.BFLOAT16
    cast = next(op for op in p.ops if indices in op.outputs)
    assert cast.kind is OpKind.TYPECAST and cast.out.dtype is DataType.UINT32


def test_llama_rms_norm_is_fused_and_the_kv_heads_repeated(llama):
    """Each MLP's SiLU is its gate projection's fused activation (TTNNFusing.cpp
    `TTNNMatmulAndLinearWithActivation`): gate and up are not concatenated
    (SharedLHSMatmulFusion takes three or more), so the SiLU reads the gate matmul."""
    p = lowered(llama, 0)
    counts = Counter(kinds(p))
    assert counts["ttnn.rms_norm"] == 5  # two per layer and the final norm
    assert counts["ttnn.repeat_interleave"] == 4  # K and V of each layer: 4 query heads over 2 KV heads
    assert "ttnn.silu" not in counts and "ttnn.sigmoid" not in counts
    graph = lower_graph(llama, TtMlirOptions(opt_level=0), n150())
    assert sum(1 for n in graph.nodes if n.fused == ("silu",)) == 2


def test_a_fused_weight_belongs_to_the_module_holding_its_parts(llama):
    p = lowered(llama, 0)
    fused = [t for t in p.tensors if "self_attn.q_proj.weight+" in t.name]
    assert fused and all(t.module is not None and t.module.endswith(".self_attn") and "+" not in t.module
                         for t in fused)


@pytest.mark.parametrize("version, fused", [
    ("2025-10-08", set()),  # before tt-mlir ca6e330be3: no weights concatenated
    ("2025-12-18", {"self_attn.q_proj.weight"}),  # Q, K and V only (SplitQueryKeyValueAndSplitHeads)
    # SharedLHSMatmulFusion: groups of three or more, so not gate/up
    ("2026-07-15", {"self_attn.q_proj.weight"}),
])
def test_which_projections_are_concatenated_follows_the_build(llama, version, fused):
    p = lower(llama, TtMlirOptions(opt_level=0), load_device("n150", version=version))
    concatenated = {t.name for t in p.tensors if "+" in t.name and t.name.endswith(".weight")}
    firsts = {n.split("+")[0].split(".", 3)[-1] for n in concatenated}
    assert firsts == fused
    # what is concatenated is whole layers' projections: one fused weight per layer each
    assert len(concatenated) == 2 * len(fused)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_bert_and_llama_fit_n150_at_every_level(bert, llama, level):
    for model in (bert, llama):
        assert plan_tt(lowered(model, level), n150()).fits


def test_the_frontend_contract_imports_a_config_at_its_batch(tmp_path):
    path = tmp_path / "bert.json"
    path.write_text(json.dumps(BERT))
    fe = frontend("tt-mlir")
    opts = fe.options(str(path), {"opt_level": 2, "weights": "bfp8", "sequence_length": 64}, n150())
    assert (opts.opt_level, opts.weights, opts.batch, opts.sequence_length) == (2, DataType.BFLOAT8_B, 1, 64)
    assert dict(fe.words(opts)) == {"opt_level": 2, "weights": "bfp8", "activations": None, "batch": 1,
                                    "sequence_length": 64, "kv_cache": None, "kv_cache_kind": None}
    program = fe.lower(str(path), fe.turn(opts, "batch", 2), n150())
    x = next(program.tensors[t] for t in program.uploads if program.tensors[t].name == "input_ids")
    assert x.spec.shape == (2, 64)
    knobs = {k.key: k for k in fe.knobs(opts, n150())}
    assert set(knobs) == {"opt_level", "weights", "batch"} and knobs["opt_level"].values == (0, 1, 2)


def test_a_program_given_as_it_is_has_no_batch_knob_and_refuses_one(bert):
    fe = frontend("tt-mlir")
    opts = fe.options(bert, {}, n150())
    assert opts.batch is None and "batch" not in {k.key for k in fe.knobs(opts, n150())}
    with pytest.raises(InputError, match="fixed shapes"):
        fe.options(bert, {"batch": 4}, n150())


def test_tileplan_plan_runs_the_tt_mlir_frontend_on_a_config(tmp_path, capsys):
    from tileplan.cli.main import main

    path = tmp_path / "bert.json"
    path.write_text(json.dumps(BERT))
    out = tmp_path / "report.json"
    code = main(["plan", str(path), "--machine", "n150", "--sequence-length", "64", "--opt-level", "2",
                 "--no-what-if", "-o", str(out)])
    assert code == 0, capsys.readouterr()
    report = json.loads(out.read_text())
    assert report["frontend"] == {"name": "tt-mlir", "options": {"activations": None, "batch": 1, "opt_level": 2,
                                                                 "sequence_length": 64, "weights": None,
                                                                 "kv_cache": None, "kv_cache_kind": None}}
    assert report["verdict"]["fits"] is True
    assert "fits on n150" in capsys.readouterr().out


def test_level_2_moves_activations_into_l1(bert):
    p = lowered(bert, 2)
    l1 = [op for op in p.ops if op.out.buffer_type is BufferType.L1]
    assert len(l1) > len(p.ops) // 2


def test_an_october_2025_build_fails_on_the_projection_tt_xla_published():
    """tt-xla #1722 (2025-10-17): Qwen2-7B token classification on n150 ran out of DRAM on one
    MLP projection's weight; that build concatenated no projections (software.toml
    `matmul_fusion`), so the failing request is that weight alone, message for message."""
    config = Path(__file__).parent / "data" / "tt_configs" / "qwen2-7b-token-classification.json"
    device = load_device("n150", version="2025-10")
    plan = plan_tt(lower(ImportedModel(str(config)).program(1, 32), TtMlirOptions(opt_level=0), device), device)
    assert plan.verdict.message == (
        "Out of Memory: Not enough space to allocate 135790592 B DRAM buffer across 12 banks, where each bank needs "
        "to store 11317248 B, but bank size is only 1073741792 B")
