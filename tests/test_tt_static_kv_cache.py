"""A static KV cache (importers/decode.py `CacheKind.STATIC`, tt-xla's LLM benchmark's
StaticCache) and how tt-mlir writes into it (frontends/tt_mlir/convert_cache.py:
`CacheFillUpdatePattern`'s fill_cache per user and update_cache, in place), with
ttnn.update_cache's circular buffers (UpdateCacheMultiCoreProgramFactory)."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from tt_ops_support import DRAM, MLIR, tile
from tt_mlir_support import BF16, n150

from tileplan.errors import InputError
from tileplan.importers.decode import decode_step
from tileplan.model.cache import CacheKind
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import plan_tt

#: a decoder of 2 layers, 4 query and 2 key/value heads of 64
TINY = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 512, "max_position_embeddings": 256}
BATCH, CACHE = 4, 128


def llama() -> LlamaForCausalLM:
    with torch.device("meta"):
        return LlamaForCausalLM(LlamaConfig(**TINY)).to(torch.bfloat16).eval()


def program(tokens: int):
    graph = decode_step(llama(), CACHE, BATCH, tokens, "tiny", CacheKind.STATIC)
    return graph.to_program(BF16, BF16, repeat=False)


def test_the_static_cache_is_each_layers_buffer_of_max_cache_len_positions_written_by_scatter() -> None:
    """init_static_cache: [batch, kv heads, max_cache_len, head_dim] per layer; the step
    takes input_ids [batch, tokens] and cache_position [tokens]; each layer's keys and
    values are written along axis 2 at cache_position."""
    p = program(5)
    caches = [t for t in p.tensors if "kv_cache" in t.name]
    assert len(caches) == 2 * 2
    assert {t.shape for t in caches} == {(BATCH, 2, CACHE, 64)} and {t.role for t in caches} == {Role.BUFFER}
    inputs = {t.name: t.shape for t in p.tensors if t.role is Role.INPUT}
    assert inputs == {"input_ids": (BATCH, 5), "cache_position": (5,)}
    writes = [op for op in p.operations() if op.kind == "scatter"]
    assert len(writes) == 4 and all(op.attr("axes") == (2,) for op in writes)
    assert all(op.inputs[1] == "cache_position" and op.output_shape == (BATCH, 2, CACHE, 64) for op in writes)


def test_a_dynamic_cache_has_no_write_and_its_attention_reads_length_plus_tokens() -> None:
    graph = decode_step(llama(), CACHE - 1, BATCH, 1, "tiny", CacheKind.DYNAMIC)
    p = graph.to_program(BF16, BF16, repeat=False)
    assert not [op for op in p.operations() if op.kind == "scatter"]
    assert any(op.kind == "concat" and op.output_shape == (BATCH, 2, CACHE, 64) for op in p.operations())


def test_a_step_longer_than_the_static_cache_is_one_line() -> None:
    with pytest.raises(InputError, match="static cache of 128 positions cannot take a step of 129"):
        decode_step(llama(), CACHE, BATCH, CACHE + 1, "tiny", CacheKind.STATIC)


def test_the_kind_parses_its_flag_spelling_and_refuses_others() -> None:
    assert CacheKind.parse("Static") is CacheKind.STATIC and CacheKind.parse(CacheKind.DYNAMIC) is CacheKind.DYNAMIC
    with pytest.raises(InputError, match="expected dynamic or static"):
        CacheKind.parse("paged")


def test_prefill_fills_each_users_row_in_place_and_decode_updates_one_position() -> None:
    """CacheFillUpdatePattern: S > 1 -> a slice and a fill_cache per user; S = 1 -> the
    updates permuted to [1, heads, B, D] and one update_cache; neither makes a tensor,
    and the cache stays the uploaded DRAM argument."""
    options = TtMlirOptions.of(0)
    prefill = lower_graph(program(5), options, n150())
    fills = [n for n in prefill.nodes if n.kind is OpKind.FILL_CACHE]
    assert len(fills) == 4 * BATCH and all(n.outputs == () for n in fills)
    slices = {prefill.values[n.inputs[1]].shape for n in fills}
    assert slices == {(1, 2, 5, 64)}
    cache_ids = {n.inputs[0] for n in fills}
    assert {prefill.tensors[t].name for t in cache_ids} == {
        f"model.layers.{i}.kv_cache_{kv}" for i in range(2) for kv in ("key", "value")}
    decode = lower_graph(program(1), options, n150())
    updates = [n for n in decode.nodes if n.kind is OpKind.UPDATE_CACHE]
    assert len(updates) == 4 and {decode.values[n.inputs[1]].shape for n in updates} == {(1, 2, BATCH, 64)}
    assert not [n for n in decode.nodes if n.kind is OpKind.FILL_CACHE]


def test_the_cache_is_resident_in_dram_for_the_whole_step() -> None:
    """Each cache [4, 2, 128, 64] bf16 is 4 x 2 x 4 x 2 = 64 tiles of 2,048 B, dealt over
    n150's 12 DRAM banks: ceil(64 / 12) = 6 pages, 12,288 B a bank. tt-xla hands it over
    from the host, so it first lands row-major (1,024 rows of 128 B: ceil(1,024 / 12) =
    86 a bank, 11,008 B), tilized on the device and freed during the uploads."""
    from tileplan.targets.tenstorrent.memory import BufferType
    plan = plan_tt(lower(program(1)), n150())
    assert plan.verdict.fits
    caches = [b for b in plan.buffers if "kv_cache" in b.name and b.freed is None]
    assert len(caches) == 4
    assert {(b.buffer_type, b.bytes_per_bank) for b in caches} == {(BufferType.DRAM, 6 * 2048)}
    staged = [b for b in plan.buffers if "kv_cache" in b.name and b.freed is not None]
    assert {(b.page_bytes, b.bytes_per_bank, b.first_op, b.last_op) for b in staged} == {(128, 86 * 128, -1, -1)}
    assert len(staged) == 4


def lower(p):
    from tileplan.targets.tenstorrent.frontends.tt_mlir import lower as lower_program
    return lower_program(p, TtMlirOptions.of(0), n150())


def test_update_cache_circular_buffers_follow_its_factory() -> None:
    """Falcon3-7B's decode K [1, 4, 32, 256] into the bf16 cache [32, 4, 128, 256],
    interleaved: g = 2, Wt = 8; c_0 2 g Wt = 32 cache tiles, c_1 2 Wt = 16 input tiles,
    c_24 and c_26 32 Float16_b tiles each, c_16 B Wt = 256 cache tiles (all 2,048 B):
    (32 + 16 + 32 + 32 + 256) x 2,048 = 753,664 B on the cores of 4 x 32 / 32 = 4 rows."""
    cache = tile((32, 4, 128, 256), DRAM)
    x = tile((1, 4, 32, 256), DRAM)
    plan = plan_op(OpKind.UPDATE_CACHE, OpRequest((cache, x), OutputRequest.of(DRAM), MLIR))
    assert plan.outputs == () and plan.buffers == ()
    assert plan.cb_peak == (32 + 16 + 32 + 32 + 256) * 2048
    assert plan.programs[0].cores.cores == 4


def test_update_cache_refuses_an_input_whose_batch_is_not_one() -> None:
    cache = tile((32, 4, 128, 256), DRAM)
    with pytest.raises(InputError, match="batch is 1"):
        plan_op(OpKind.UPDATE_CACHE, OpRequest((cache, tile((2, 4, 32, 256), DRAM)), OutputRequest.of(DRAM), MLIR))


def test_the_frontend_takes_the_cache_and_its_kind_and_lowers_the_writes(tmp_path) -> None:
    """`kv_cache` and `kv_cache_kind` reach the importer through the frontend contract:
    a static cache's prefill of 5 tokens is a fill_cache per user and layer, words say
    both, and a turn of the kind plans the dynamic cache (no writes)."""
    import json

    from tileplan.app.tenstorrent import tt_mlir_models  # noqa: F401  (registers the loader)
    from tileplan.targets.tenstorrent.frontend import frontend

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                                "torch_dtype": "bfloat16", **TINY}))
    fe = frontend("tt-mlir")
    opts = fe.options(str(path), {"batch": BATCH, "sequence_length": 5, "kv_cache": CACHE,
                                  "kv_cache_kind": "static"}, n150())
    assert (opts.kv_cache, opts.kv_cache_kind) == (CACHE, CacheKind.STATIC)
    assert dict(fe.words(opts))["kv_cache_kind"] == "static" and dict(fe.words(opts))["kv_cache"] == CACHE
    kinds = [op.kind for op in fe.lower(str(path), opts, n150()).ops]
    assert kinds.count(OpKind.FILL_CACHE) == 2 * 2 * BATCH
    dynamic = fe.lower(str(path), fe.turn(opts, "kv_cache_kind", "dynamic"), n150())
    assert not [op for op in dynamic.ops if op.kind in (OpKind.FILL_CACHE, OpKind.UPDATE_CACHE)]


@pytest.mark.parametrize(("argv", "words"), [
    (["--kv-cache", "128", "--kv-cache-kind", "paged"], "--kv-cache-kind paged: expected dynamic or static"),
    (["--kv-cache-kind", "static"], "--kv-cache-kind static needs --kv-cache"),
    (["--kv-cache", "4", "--kv-cache-kind", "static", "--sequence-length", "5"],
     "a static cache of 4 positions cannot take a step of 5 tokens"),
    (["--frontend", "tt-transformers", "--kv-cache", "128", "--kv-cache-kind", "static"],
     "--kv-cache-kind is not an option of the tt-transformers frontend; tt-mlir takes it"),
])
def test_bad_cache_flags_are_one_line(tmp_path, capsys, argv, words) -> None:
    import json

    from tileplan.cli.main import main

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"], **TINY}))
    code = main(["plan", str(path), "--machine", "n150", *argv, "--no-what-if", "-o", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert code != 0 and words in err and "\n" not in err
