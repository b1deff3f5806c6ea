"""tt-transformers on a T3K (eight Wormhole chips, mesh (1, 8), Ring collectives): the
device as the demo opens it, the per-chip eighth of the model, the fused all-gather +
matmul for wo when dim is a multiple of 2,048 (USE_FUSED_ALL_GATHER_MATMUL) and the
ordinary reduce-scatter path otherwise, against tt-transformers' model_config.py and
attention.py and tt-metal's all_gather_matmul_async (ops/tt_all_gather_matmul.py)."""

from __future__ import annotations

import pytest
from tt_transformers_support import CONFIGS, config, device, plan

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.frontends.tt_transformers import FRONTEND, Mode, TtTransformersOptions, build
from tileplan.targets.tenstorrent.frontends.tt_transformers.configs import Configs
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs, model_args
from tileplan.targets.tenstorrent.memory import MemoryLayout
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_ccl import Topology
from tileplan.targets.tenstorrent.versions import DispatchCoreType

LLAMA_8B = "Llama-3.1-8B-Instruct"
PREFILL = TtTransformersOptions(prefill_chunk=2048, kv_cache=4096)
DECODE = TtTransformersOptions(Mode.DECODE, kv_cache=4096)


def args(model: str, machine: str = "t3k") -> ModelArgs:
    return model_args(config(model), device(machine), model)


def test_the_device_is_eight_n300_chips_with_the_demos_parameters() -> None:
    """simple_text_demo.py MESH_DEVICE T3K = (1, 8); trace_region_config.py T3K:
    Llama-3.1-8B 50,000,000 and Llama-3.1-70B 90,000,000; ETH dispatch, 8 x 8 a chip."""
    t3k = device("t3k")
    assert t3k.chips == 8 and (t3k.worker_grid.columns, t3k.worker_grid.rows) == (8, 8) and t3k.dram_banks == 12
    o = TtTransformersOptions()
    assert FRONTEND.device_defaults(str(CONFIGS / LLAMA_8B), o, "t3k") == {
        "trace_region_size": 50_000_000, "dispatch_core_type": DispatchCoreType.ETH}
    assert FRONTEND.device_defaults(str(CONFIGS / "Llama-3.1-70B-Instruct"), o, "t3k")["trace_region_size"] == \
        90_000_000


def test_ring_and_the_fused_path_follow_dim() -> None:
    """Ring on eight chips; the fused all-gather matmul when (dim / 32 / 8) % 8 == 0:
    Llama-3.1-8B (4,096) and 70B (8,192) yes, Llama-3.2-3B (3,072) and Qwen3-32B (5,120)
    no; never on n300."""
    fused = {m: args(m).fused_all_gather_matmul
             for m in (LLAMA_8B, "Llama-3.1-70B-Instruct", "Llama-3.2-3B-Instruct", "Qwen3-32B")}
    assert fused == {LLAMA_8B: True, "Llama-3.1-70B-Instruct": True, "Llama-3.2-3B-Instruct": False,
                     "Qwen3-32B": False}
    a = args(LLAMA_8B)
    assert a.ccl_topology is Topology.RING and a.device_name == "T3K" and a.n_local_kv_heads == 1
    n300 = args(LLAMA_8B, "n300")
    assert n300.ccl_topology is Topology.LINEAR and not n300.fused_all_gather_matmul


def test_the_fused_paths_configs() -> None:
    """ATTN_ALL_GATHER_MATMUL_PROGCFG (8B: in0_block_w 16, per_core_N 2; 70B: 32, 4),
    its memory [32, dim / 8] on (0, 0)-(7, 0); WO_PREFILL_PROGCFG n 1,024, per_core_N 4
    (not over the DRAM banks: wo is interleaved), in0_block_w from one chip's heads."""
    c8 = Configs(args(LLAMA_8B), 1)
    c70 = Configs(args("Llama-3.1-70B-Instruct"), 1)
    p8, p70 = c8.all_gather_matmul(), c70.all_gather_matmul()
    assert (p8.in0_block_w, p8.per_core_N, p8.out_subblock_w, p8.per_core_M) == (16, 2, 2, 1)
    assert (p70.in0_block_w, p70.per_core_N, p70.out_subblock_w) == (32, 4, 4)
    memory = c8.all_gather_matmul_memory()
    assert memory.shard is not None and memory.shard.shape == (32, 512) and memory.shard.num_cores == 8
    wo = c8.wo_prefill(4096)
    assert (wo.per_core_M, wo.per_core_N, wo.in0_block_w) == (4, 4, 2)
    assert c70.wo_prefill(128).in0_block_w == 4


def test_prefill_gathers_the_heads_before_wo_and_scatters_after_the_mlp() -> None:
    """8B on a T3K: wo [4096, 512] per chip in DRAM interleaved; per layer one all-gather
    before wo and none of the reduce-scatters after the attention; the MLP's reduce-
    scatter on a Ring keeps its intermediate at the input's size ([1, 1, 2048, 4096] bf16)."""
    program = build(config(LLAMA_8B), PREFILL, device("t3k"))
    wo = next(t for t in program.tensors if t.name == "layers.0.attention.wo")
    assert wo.spec is not None and wo.spec.shape == (1, 1, 4096, 512)
    assert wo.spec.memory.layout is MemoryLayout.INTERLEAVED
    names = [op.name for op in program.ops]
    assert "layers.0.attention.all_gather" in names and "layers.0.attention.reduce_scatter" not in names
    p = plan(LLAMA_8B, "t3k", PREFILL)
    inter = next(b for b in p.buffers if b.name == "layers.0.feed_forward.reduce_scatter.intermediate")
    assert inter.bytes == 2048 * 4096 * 2
    assert p.fits


def test_without_the_fused_path_wo_splits_its_rows_and_the_output_is_reduced() -> None:
    program = build(config("Llama-3.2-3B-Instruct"), PREFILL, device("t3k"))
    wo = next(t for t in program.tensors if t.name == "layers.0.attention.wo")
    assert wo.spec is not None and wo.spec.shape == (1, 1, 3072 // 8, 3072)
    names = [op.name for op in program.ops]
    assert "layers.0.attention.reduce_scatter" in names and "layers.0.attention.all_gather" not in names


def test_decode_runs_the_fused_all_gather_matmul() -> None:
    """8B decode on a T3K: per layer one all_gather_matmul_async; its matmul on (0, 0)-(7, 0)
    with in0 32 x 2,048 B, in1 64 bfp8 pages, interm0 two float32 tiles (HiFi2, fp32
    accumulation) and the gathered in0 / the output globally allocated; its workers from
    (0, 4) with 6 bf16 pages each; the product resharded into DECODE_RESIDUAL_MEMCFG."""
    p = plan(LLAMA_8B, "t3k", DECODE)
    ops = [op for op in p.ops if op.kind is OpKind.ALL_GATHER_MATMUL_ASYNC]
    assert len(ops) == 32
    matmul, gather = (p.programs[i].program for i in ops[0].programs)
    cbs = {cb.name: cb for cb in matmul.circular_buffers}
    assert (cbs["in0"].pages * cbs["in0"].page_bytes, cbs["in1"].pages * cbs["in1"].page_bytes,
            cbs["interm0"].pages * cbs["interm0"].page_bytes) == (65_536, 69_632, 8_192)
    assert cbs["in2"].globally_allocated and cbs["output"].globally_allocated
    assert {r.start for r in gather.cores.ranges} == {(1, 4), (2, 4), (4, 4), (5, 4)}
    assert gather.cb_bytes == 6 * 2048
    names = [op.name for op in p.ops]
    assert "layers.0.attention.to_residual" in names and "layers.0.attention.reduce_scatter" not in names
    assert p.fits


def test_refusals() -> None:
    """Qwen2.5-7B is "only supported on 2 or 4 devices"; builds before tt-metal PR #25222
    ran collectives tileplan does not model."""
    with pytest.raises(InputError, match="only supported on 2 or 4 devices"):
        build(config("Qwen2.5-7B-Instruct"), PREFILL, device("t3k"))
    with pytest.raises(InputError, match="PR #25222"):
        build(config(LLAMA_8B), PREFILL, device("t3k", version="2025-04-25"))
