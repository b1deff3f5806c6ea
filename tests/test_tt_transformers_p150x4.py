"""tt-transformers on a P150x4 (four Blackhole p150 chips, mesh (1, 4), Linear
collectives): the device as the demo opens it (worker dispatch, one column; the
trace regions of trace_region_config.py @075e2b4e), each chip's quarter of the model,
Blackhole's own sizes (8 DRAM banks for per_core_N, 512-row MLP batches, 16,032 LM-head
columns a split), the refusals in tt-transformers' order (ModelArgs' table before
attention.py's head split)."""

from __future__ import annotations

import pytest
from tt_transformers_support import CONFIGS, config, device, plan

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Arch
from tileplan.targets.tenstorrent.frontends.tt_transformers import FRONTEND, Mode, TtTransformersOptions, build
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import model_args
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_ccl import Topology
from tileplan.targets.tenstorrent.versions import DispatchCoreType

LLAMA_70B = "Llama-3.1-70B-Instruct"
PREFILL = TtTransformersOptions(prefill_chunk=2048, kv_cache=4096)


def test_the_device_is_four_p150_chips_with_the_demos_parameters() -> None:
    """determine_device_name: four Blackhole devices are 'P150x4'; each chip a p150 (13 x 10
    workers, 8 DRAM banks, worker dispatch); trace_region_config.py @075e2b4e: P150x4
    Llama-3.1-70B 90,000,000, Llama-3.3-70B 95,000,000, DeepSeek-R1-Distill-Llama-70B
    90,000,000; other models the demo's 23,887,872."""
    d, one = device("p150x4"), device("p150")
    assert d.chips == 4 and d.arch is Arch.BLACKHOLE and d.dispatch_core_type is DispatchCoreType.WORKER
    assert (d.worker_grid, d.dram_banks, d.l1_base, d.dram_bank_size) == (
        one.worker_grid, one.dram_banks, one.l1_base, one.dram_bank_size)
    o = TtTransformersOptions()
    regions = {name: FRONTEND.device_defaults({"_name_or_path": f"meta-llama/{name}"}, o, "p150x4")
               for name in ("Llama-3.1-70B-Instruct", "Llama-3.3-70B-Instruct", "Llama-3.1-8B-Instruct")}
    assert regions == {"Llama-3.1-70B-Instruct": {"trace_region_size": 90_000_000},
                       "Llama-3.3-70B-Instruct": {"trace_region_size": 95_000_000},
                       "Llama-3.1-8B-Instruct": {"trace_region_size": 23_887_872}}
    assert FRONTEND.device_defaults(str(CONFIGS / "DeepSeek-R1-Distill-Llama-70B"), o, "p150x4") == {
        "trace_region_size": 90_000_000}
    # the single p150's own entries (a data-parallel submesh or one card)
    assert FRONTEND.device_defaults(str(CONFIGS / LLAMA_70B), o, "p150") == {"trace_region_size": 90_000_000}


def test_model_args_on_four_blackhole_chips() -> None:
    """Linear (Ring only on eight chips), no fused all-gather matmul; per_core_N over 8 DRAM
    banks; the MLP in 512-row batches; 70B's vocabulary a chip (32,064) in two splits of
    16,032 (128256 // 8); 2 of the 8 KV heads a chip."""
    a = model_args(config(LLAMA_70B), device("p150x4"), LLAMA_70B)
    assert (a.device_name, a.num_devices, a.ccl_topology, a.fused_all_gather_matmul) == (
        "P150x4", 4, Topology.LINEAR, False)
    assert (a.dram_shard_grid_width, a.prefill_len_cutoff, a.n_local_kv_heads) == (8, 512, 2)
    assert a.lm_head_splits == (16032, 16032)
    assert a.max_prefill_chunk_size == 128 * 1024


def test_prefill_gathers_and_scatters_over_four_chips() -> None:
    """70B prefill on P150x4: wo split by rows ([8192 / 4, 8192] a chip) and reduced by a
    reduce-scatter whose Linear intermediate doubles dimension 0 ([2, 1, 2048, 8192] bf16);
    the norm's all-gather makes [1, 1, 2048, 8192] of a chip's [.., 2048]."""
    program = build(config(LLAMA_70B), PREFILL, device("p150x4"), LLAMA_70B)
    wo = next(t for t in program.tensors if t.name == "layers.0.attention.wo")
    assert wo.spec is not None and wo.spec.shape == (1, 1, 8192 // 4, 8192)
    names = [op.name for op in program.ops]
    assert "layers.0.attention.reduce_scatter" in names and "layers.0.attention.all_gather" not in names
    p = plan(LLAMA_70B, "p150x4", PREFILL)
    inter = next(b for b in p.buffers if b.name == "layers.0.feed_forward.reduce_scatter.intermediate")
    assert inter.bytes == 2 * 2048 * 8192 * 2
    gathered = next(b for b in p.buffers if b.name == "layers.0.attention_norm.all_gather")
    assert gathered.bytes == 2048 * 8192 * 2
    assert p.fits


def test_decode_plans_and_a_cache_too_long_does_not_fit() -> None:
    """A decode step of 70B at batch 32 on P150x4 fits with 4k a user; 32k a user does not:
    the bfp8 caches a chip (80 layers, 2 KV heads, 32 x 32,768 positions) alone are
    80 x 2 x 2 x 128 x 1,048,576 x 1.0625 B = 45.6 GB, beyond the 34 GB of a chip."""
    ok = plan(LLAMA_70B, "p150x4", TtTransformersOptions(Mode.DECODE, kv_cache=4096, batch=32))
    assert ok.fits and any(op.kind is OpKind.REDUCE_SCATTER_ASYNC for op in ok.ops)
    big = plan(LLAMA_70B, "p150x4", TtTransformersOptions(Mode.DECODE, kv_cache=32768, batch=32))
    assert not big.fits and big.verdict.message is not None
    assert big.verdict.message.startswith("Out of Memory: Not enough space to allocate")
    assert "DRAM buffer across 8 banks" in big.verdict.message


@pytest.mark.parametrize("machine", ["p150x4", "t3k"])
def test_the_table_refuses_before_the_heads_do(machine: str) -> None:
    """Qwen2.5-VL-3B (2 KV heads) has no P150x4 or T3K chunk (None): ModelArgs asserts
    'Unsupported model' before attention.py would find 2 KV heads do not split."""
    with pytest.raises(InputError, match="Unsupported model Qwen2.5-VL-3B-Instruct on device"):
        build(config("Qwen2.5-VL-3B-Instruct"), PREFILL, device(machine), "Qwen2.5-VL-3B-Instruct")


def test_gemmas_all_reduce_runs_the_ring_it_asks_for() -> None:
    """decoder.py passes topology=ttnn.Topology.Ring to Gemma-3's feed-forward all-reduces:
    on four chips the reduce-scatter's intermediate keeps the input's size (a Linear line
    would double it); on two chips tt-metal runs Linear whatever is asked (doubled)."""
    def ratio(machine: str) -> float:
        p = plan("gemma-3-4b-it", machine, PREFILL)
        names = {b.name: b for b in p.buffers}
        inter = names["layers.0.post_feedforward_layernorm.reduce_scatter.intermediate"]
        source = names["layers.0.post_feedforward_layernorm"]
        return inter.bytes / source.bytes
    assert ratio("p150x4") == 1 and ratio("n300") == 2


def test_blackhole_puts_the_decode_heads_on_an_8_by_4_grid() -> None:
    """model_config.py CREATE_QKV_DECODE_SHARD on Blackhole: height-sharded (TILE, head_dim)
    on CoreGrid(y=4, x=8); nlp_create_qkv_heads_decode puts the users' heads inside it
    row-wise: 16 users on (0, 0)-(7, 1), not the first 16 cores of the 13-wide grid."""
    p = plan(LLAMA_70B, "p150x4", TtTransformersOptions(Mode.DECODE, kv_cache=4096, batch=16))
    op = next(o for o in p.ops if o.name == "layers.0.attention.create_qkv_heads")
    program = p.programs[op.programs[0]].program
    assert {(r.start, r.end) for cb in program.circular_buffers for r in cb.core_ranges} == {((0, 0), (7, 1))}
