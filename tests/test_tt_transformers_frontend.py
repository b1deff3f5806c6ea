"""The tt-transformers frontend end to end: `FRONTEND` as the planner and the CLI call
it (options from the flags, words, knobs, turn, reproduce, device defaults), the
programs it lowers (prefill, decode, n300's collectives, paged and per-user caches,
vLLM's cache order) and verdicts through `tileplan plan` (reports re-derived by check:
conftest)."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path

import pytest
from tt_transformers_support import CONFIGS, config, device, plan

from tileplan.cli.main import main
from tileplan.errors import InputError
from tileplan.targets.tenstorrent.frontend import Search, frontend
from tileplan.targets.tenstorrent.frontends.tt_transformers import (
    FRONTEND,
    Mode,
    Preset,
    TtTransformersOptions,
    build,
    read_config,
)
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.versions import DispatchCoreType

LLAMA_1B = str(CONFIGS / "Llama-3.2-1B-Instruct")
LLAMA_8B = str(CONFIGS / "Llama-3.1-8B-Instruct")


def cli(tmp_path: Path, *argv: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["plan", *argv, "-o", str(tmp_path / "r.json")])
    return code, out.getvalue().splitlines()


def test_the_registry_finds_it() -> None:
    assert frontend("tt-transformers") is FRONTEND


def test_read_config_takes_a_mapping_a_folder_or_a_file() -> None:
    cfg, name = read_config(LLAMA_1B)
    assert name == "Llama-3.2-1B-Instruct" and cfg["hidden_size"] == 2048
    assert read_config(LLAMA_1B + "/config.json")[1] == "Llama-3.2-1B-Instruct"
    assert read_config(cfg) == (cfg, None)
    with pytest.raises(InputError, match="takes a config.json"):
        read_config(42)


def test_options_from_the_flags() -> None:
    """No flag: a prefill of tt-transformers' chunk (8B on N150: 4k) on 128k positions;
    --kv-cache alone: a decode step; --precision accuracy."""
    n150 = device("n150")
    o = FRONTEND.options(LLAMA_8B, {}, n150)
    assert (o.mode, o.prefill_chunk, o.kv_cache, o.batch, o.preset) == (
        Mode.PREFILL, 4096, 131072, 1, Preset.PERFORMANCE)
    d = FRONTEND.options(LLAMA_8B, {"kv_cache": 8192, "batch": 32, "precision": "accuracy"}, n150)
    assert (d.mode, d.kv_cache, d.batch, d.preset) == (Mode.DECODE, 8192, 32, Preset.ACCURACY)
    assert FRONTEND.words(d) == (("batch", 32), ("kv_cache", 8192), ("prefill_chunk", None), ("precision", "accuracy"))
    assert FRONTEND.words(o) == (("batch", 1), ("kv_cache", 131072), ("prefill_chunk", 4096),
                                 ("precision", "performance"))


def test_knobs_turn_and_reproduce() -> None:
    o = FRONTEND.options(LLAMA_8B, {"prefill_chunk": 4096, "kv_cache": 65536}, device("n150"))
    knobs = {k.key: k for k in FRONTEND.knobs(o, device("n150"))}
    assert knobs["prefill_chunk"].search is Search.LARGEST and knobs["prefill_chunk"].current == 4096
    assert knobs["prefill_chunk"].values[0] == 128 and knobs["prefill_chunk"].values[-1] == 65536
    assert knobs["kv_cache"].values[-1] == 131072 and knobs["precision"].values == ("performance", "accuracy")
    turned = FRONTEND.turn(o, "precision", "accuracy")
    assert turned.preset is Preset.ACCURACY and FRONTEND.turn(o, "prefill_chunk", 8192).prefill_chunk == 8192
    decode = FRONTEND.options(LLAMA_8B, {"kv_cache": 4096}, device("n150"))
    assert {k.key for k in FRONTEND.knobs(decode, device("n150"))} == {"kv_cache", "batch", "precision"}
    assert FRONTEND.reproduce(o, FRONTEND.lower(LLAMA_8B, decode, device("n150")), device("n150"),
                              ("layers.0.feed_forward.w1",)).settings == (
        "MAX_PREFILL_CHUNK_SIZE=4 (environment, in units of 1024 tokens)",
        "ModelArgs(mesh_device, max_batch_size=1, max_seq_len=65536, optimizations=DecodersPrecision.performance)",
        "PagedAttentionConfig(block_size=32, max_num_blocks=2048)",
        "layers.0.feed_forward.w1: memory_config=ttnn.DRAM_MEMORY_CONFIG")


def test_device_defaults_are_the_demos() -> None:
    """trace_region_config.py: Llama-3.1-8B N150 25,000,000, N300 38,000,000; others the
    demo's 23,887,872; n300 dispatches on ethernet cores for the 8 x 8 grids."""
    o = TtTransformersOptions()
    assert FRONTEND.device_defaults(LLAMA_8B, o, "n150") == {"trace_region_size": 25_000_000}
    assert FRONTEND.device_defaults(LLAMA_8B, o, "n300") == {"trace_region_size": 38_000_000,
                                                             "dispatch_core_type": DispatchCoreType.ETH}
    assert FRONTEND.device_defaults(LLAMA_1B, o, "n150") == {"trace_region_size": 23_887_872}


def kinds(model: str, machine: str, options: TtTransformersOptions) -> Counter[OpKind]:
    return Counter(op.kind for op in build(config(model), options, device(machine)).ops)


def test_a_prefill_program() -> None:
    """Llama-3.2-1B 4k prefill on N150, 16 layers: per layer one fused QKV, WO, w1, w3, w2
    linear (MLP in four 1,024-row batches reshaped, not split), two rotary embeddings, two
    paged cache fills, one SDPA; the LM head on the last 32 rows; no collective."""
    k = kinds("Llama-3.2-1B-Instruct", "n150", TtTransformersOptions(prefill_chunk=4096, kv_cache=8192))
    assert k[OpKind.ROTARY_EMBEDDING_LLAMA] == 32 and k[OpKind.PAGED_FILL_CACHE] == 32 and k[OpKind.SDPA] == 16
    assert k[OpKind.NLP_CREATE_QKV_HEADS] == 16
    assert k[OpKind.ALL_GATHER_ASYNC] == k[OpKind.REDUCE_SCATTER_ASYNC] == 0


def test_n300_runs_the_collectives_and_half_the_heads() -> None:
    """On n300 each layer all-gathers the attention output before WO and reduce-scatters
    / all-gathers around the MLP (tt-frontends A12); the KV caches hold 4 of 8 heads."""
    o = TtTransformersOptions(prefill_chunk=1024, kv_cache=4096)
    k = kinds("Llama-3.1-8B-Instruct", "n300", o)
    assert k[OpKind.ALL_GATHER_ASYNC] >= 32 and k[OpKind.REDUCE_SCATTER_ASYNC] >= 32
    program = build(config("Llama-3.1-8B-Instruct"), o, device("n300"))
    cache = next(t for t in program.tensors if t.name == "layers.0.attention.layer_past.k")
    assert cache.spec is not None and cache.spec.shape == (128, 4, 32, 128)


def test_a_decode_program_and_per_user_caches() -> None:
    o = TtTransformersOptions(Mode.DECODE, kv_cache=2048, batch=8, paged=False)
    k = kinds("Llama-3.2-1B-Instruct", "n150", o)
    assert k[OpKind.NLP_CREATE_QKV_HEADS_DECODE] == 16 and k[OpKind.PAGED_UPDATE_CACHE] == 32
    assert k[OpKind.SDPA_DECODE] == 16 and k[OpKind.NLP_CONCAT_HEADS_DECODE] == 16
    program = build(config("Llama-3.2-1B-Instruct"), o, device("n150"))
    cache = next(t for t in program.tensors if t.name == "layers.0.attention.layer_past.v")
    assert cache.spec is not None and cache.spec.shape == (8, 8, 2048, 64)


def test_gemma_decode_norms_the_attention_and_the_mlp_outputs() -> None:
    """decoder.py in decode as in prefill for Gemma-3: the attention output normed
    (ffn_norm) and, on a mesh, all-reduced (L1 interleaved, reduce-scatter, divide) before
    the residual add, then pre_feedforward_layernorm; the MLP output normed
    (post_feedforward_layernorm) and all-reduced. One chip: the norms, no collective."""
    o = TtTransformersOptions(Mode.DECODE, kv_cache=4096)
    names = [op.name for op in build(config("gemma-3-4b-it"), o, device("n300")).ops]
    layer0 = [n for n in names if n.startswith("layers.0.") and ("norm" in n or n.endswith(("attention", "mlp")))]
    assert layer0[layer0.index("layers.0.ffn_norm"):] == [
        "layers.0.ffn_norm", "layers.0.ffn_norm.interleaved", "layers.0.ffn_norm.reduce_scatter",
        "layers.0.ffn_norm.div", "layers.0.add_attention", "layers.0.pre_feedforward_layernorm.all_gather",
        "layers.0.pre_feedforward_layernorm", "layers.0.post_feedforward_layernorm.all_gather",
        "layers.0.post_feedforward_layernorm", "layers.0.post_feedforward_layernorm.interleaved",
        "layers.0.post_feedforward_layernorm.reduce_scatter", "layers.0.post_feedforward_layernorm.div",
        "layers.0.add_mlp"]
    k = kinds("gemma-3-4b-it", "n150", o)
    assert k[OpKind.RMS_NORM] >= 4 * 34 and k[OpKind.REDUCE_SCATTER_ASYNC] == 0
    assert plan("gemma-3-4b-it", "n300", o).fits


def test_decode_gathers_the_logits_in_l1() -> None:
    """model.py ttnn_decode_forward gathers the logits with memory_config=
    tt_logits.memory_config(): the LM head's concat, L1 interleaved."""
    p = plan("Llama-3.1-8B-Instruct", "n300", TtTransformersOptions(Mode.DECODE, kv_cache=4096))
    gathered = next(b for b in p.buffers if b.name == "lm_head.all_gather")
    assert gathered.buffer_type is BufferType.L1 and gathered.bytes == 4008 * 1088


def test_a_typecast_to_the_same_type_is_a_new_tensor() -> None:
    """attention.py casts K and V to the cache's type and Q to the activation type or
    bfloat8_b whatever they are (ttnn.typecast always runs its device operation): with
    Qwen2.5-7B's bf16 cache each cast is an operation whose output is a buffer of its
    own, the head it read freed after it."""
    p = plan("Qwen2.5-7B-Instruct", "n300", TtTransformersOptions(prefill_chunk=1024, kv_cache=4096))
    ops = {op.name: op for op in p.ops}
    for n in ("k", "v", "q"):
        cast = ops[f"layers.0.attention.{n}_typecast"]
        assert cast.kind is OpKind.TYPECAST
        out = next(b for b in p.buffers if b.name == f"layers.0.attention.{n}_typecast")
        assert out.first_op == cast.index and out.buffer_type is BufferType.DRAM


def test_qwen3_frees_the_fused_qkv_after_the_head_norms() -> None:
    """attention.py (prefill and decode) norms Q then K, each pre-norm head freed as its
    name is rebound, and deallocates the fused QKV only then."""
    for o in (TtTransformersOptions(prefill_chunk=1024, kv_cache=4096), TtTransformersOptions(Mode.DECODE,
                                                                                              kv_cache=4096)):
        p = plan("Qwen3-8B", "n150", o)
        ops = {op.name: op.index for op in p.ops}
        bufs = {b.name: b for b in p.buffers}
        fused = bufs["layers.0.attention.xqkv_interleaved" if o.mode is Mode.DECODE else "layers.0.attention.wqkv"]
        k_norm = ops["layers.0.attention.k_norm"]
        assert fused.last_op is not None and fused.last_op >= k_norm, o.mode


def test_every_norm_has_its_distributed_weight_on_one_chip_too() -> None:
    """decoder.py passes is_distributed=self.args.is_distributed_norm, a bound method,
    so RMSNorm creates weight_distributed on every mesh, a 1 x 1 one included."""
    program = build(config("Llama-3.2-1B-Instruct"), TtTransformersOptions(kv_cache=4096), device("n150"))
    names = {program.tensors[t].name for t in program.uploads}
    assert {"norm.weight_distributed", "layers.0.attention_norm.weight_distributed",
            "layers.15.ffn_norm.weight_distributed"} <= names


def test_vllm_allocates_the_caches_after_the_model() -> None:
    program = build(config("Llama-3.2-1B-Instruct"), TtTransformersOptions(kv_cache=4096, vllm=True), device("n150"))
    names = [program.tensors[t].name for t in program.uploads]
    assert names.index("layers.0.attention.layer_past.k") > names.index("lm_head.output_weights.0")


def test_21904_kv_cache_oom_to_the_byte() -> None:
    """tt-metal #21904: Llama-3.1-8B on N150 under vLLM, accuracy, paged (1034, 8, 64, 128)
    bfp8 caches, a 2025-04-25 build: the message as published."""
    options = TtTransformersOptions(kv_cache=1034 * 64, preset=Preset.ACCURACY, page_block_size=64, vllm=True)
    p = plan("Llama-3.1-8B-Instruct", "n150", options, version="2025-04-25", trace_region_size=25_000_000)
    assert p.verdict.message == ("Out of Memory: Not enough space to allocate 71999488 B DRAM buffer across 12 banks, "
                                 "where each bank needs to store 6000320 B")
    assert (p.verdict.request_name or "").endswith("attention.layer_past.k")


def test_35410_p100_qkv_circular_buffers_to_the_byte() -> None:
    """tt-metal #35410 (2026-01-07): Llama-3.1-8B's long-context demo on a P100. The QKV
    prefill matmul's per_core_N is ceil(6144 / 32 / 7) = 28 over the P100's 7 DRAM banks:
    out 8 x 28 bf16 tiles (458,752 B), its fp32 partials (917,504 B, HiFi2 accumulates in
    fp32), in0 2 x 8 x 2,048 and in1 2 x 28 x 1,088 B = 1,469,952 B above that build's
    l1_unreserved_base 104,128 (blackhole.toml, from dev_mem_map.h @cddd0eb6)."""
    options = TtTransformersOptions(prefill_chunk=4096, kv_cache=32768)
    p = plan("Llama-3.1-8B-Instruct", "p100", options, version="2026-01-07")
    assert p.verdict.message == ("Statically allocated circular buffers on core range [(x=0,y=0) - (x=6,y=7)] grow "
                                 "to 1574080 B which is beyond max L1 size of 1572864 B")
    assert (p.verdict.request_name or p.ops[p.verdict.op or 0].name).endswith("attention.wqkv")


def test_cli_plans_a_fit_with_its_knobs(tmp_path: Path) -> None:
    code, lines = cli(tmp_path, LLAMA_1B, "--machine", "n150", "--frontend", "tt-transformers", "--prefill-chunk",
                      "4096", "--kv-cache", "8192")
    assert code == 0
    assert lines[0].endswith("--frontend tt-transformers --batch 1 --kv-cache 8192 --prefill-chunk 4096 "
                             "--precision performance)")
    assert lines[1].startswith("fits on n150")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["frontend"]["name"] == "tt-transformers"
    assert report["frontend"]["options"] == {"batch": 1, "kv_cache": 8192, "prefill_chunk": 4096,
                                             "precision": "performance"}
    assert "MAX_PREFILL_CHUNK_SIZE=4 (environment, in units of 1024 tokens)" in report["reproduce"]["settings"]


def test_cli_8b_on_n150_at_128k_runs_out_of_dram_and_64k_fits(tmp_path: Path) -> None:
    """ModelArgs' default max_seq_len of 128k does not fit an N150 beside Llama-3.1-8B's
    weights; the what-if row finds 64k, the N150 context of tt-metal PR #16508."""
    code, lines = cli(tmp_path, LLAMA_8B, "--machine", "n150", "--frontend", "tt-transformers")
    assert code == 0
    assert lines[1].startswith("does not fit: Out of Memory: Not enough space to allocate 142606336 B DRAM buffer "
                               "across 12 banks")
    assert any(line.startswith("  change: kv_cache 65536 (the largest that fits") for line in lines)


def test_cli_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, words in (
            ((str(CONFIGS / "Qwen2.5-7B-Instruct"), "--machine", "n150"), "only supported on 2 or 4 devices"),
            ((str(CONFIGS / "Llama-3.2-11B-Vision-Instruct"), "--machine", "n300", "--precision", "performance"),
             "DecodersPrecision.accuracy"),
            ((LLAMA_1B, "--machine", "n150", "--prefill-chunk", "100"), "multiple of 32")):
        assert cli(tmp_path, *argv, "--frontend", "tt-transformers")[0] == 2
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err


def test_a_hub_id_is_read_from_the_local_hugging_face_cache(tmp_path, monkeypatch):
    """The frontend sits below the application: a hub id reaches its config.json through
    the lookup the application registers (app/tenstorrent/tt_transformers_hub.py), and
    the model is named by the id, not by the cache's snapshot folder."""
    import json
    from pathlib import Path

    import tileplan.app.tenstorrent.tt_transformers_hub  # noqa: F401  (registers the lookup on import)
    from tileplan.app import sources
    from tileplan.targets.tenstorrent.frontends.tt_transformers.frontend import read_config

    config = json.loads((Path(__file__).parent / "data" / "tt_transformers" / "Llama-3.2-1B-Instruct"
                         / "config.json").read_text())
    config.pop("_name_or_path", None)
    snapshot = tmp_path / "hub" / "models--meta-llama--Llama-3.2-1B-Instruct" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0123abcd")
    (snapshot / "config.json").write_text(json.dumps(config))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    sources.locate.cache_clear()
    try:
        doc, name = read_config("meta-llama/Llama-3.2-1B-Instruct")
    finally:
        sources.locate.cache_clear()
    assert doc == config and name == "meta-llama/Llama-3.2-1B-Instruct"


def test_a_model_folder_names_the_default_report_with_its_dots_kept(tmp_path: Path) -> None:
    """A folder holding config.json names the report as the folder does (its dots are no
    file extension), the same as the config.json inside it."""
    from tileplan.cli.plan import target_stem
    folder = tmp_path / "Llama-3.2-1B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert target_stem(str(folder)) == target_stem(str(folder / "config.json")) == "Llama-3.2-1B-Instruct"
