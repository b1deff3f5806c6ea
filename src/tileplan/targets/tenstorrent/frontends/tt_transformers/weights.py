"""What tt-transformers keeps on each chip for the whole run (uploaded before the first
operation): the weights, the KV caches, the rotary tables, the CCL semaphores.

Sources (tt-metal models/tt_transformers/tt/): model_config.py
`create_dram_sharded_mem_config(k, n)` (n padded to 32 x DRAM banks, WIDTH_SHARDED over
the DRAM banks, shards (k, padded / banks)); attention.py (wqkv [1, 1, dim, qkv / devices]
its columns split per device, wo [1, 1, heads x D / devices, dim] its rows split, or
under USE_FUSED_ALL_GATHER_MATMUL (a T3K, dim a multiple of 2,048) [1, 1, heads x D,
dim / devices] its columns split, DRAM interleaved (`ShardTensor2dMesh` dims (2, 3)); Qwen's
QKV bias [1, 1, 1, qkv / devices] for prefill and [32, qkv / devices] per 32 users for
decode, bf16; q / k norm weights; `init_kv_cache`: paged [blocks, kv / devices, block, D]
or [batch, kv / devices, max_seq_len, D], K and V per layer, the KV_CACHE dtype, TILE,
DRAM interleaved); mlp.py (w1, w3 [1, 1, dim, hidden / devices], w2 [1, 1, hidden /
devices, dim], DRAM-sharded); models/common/rmsnorm.py (norm weights [1, 1, dim / 32, 32]
bf16 ROW_MAJOR DRAM); embedding.py ([vocab, dim / devices] bf16 ROW_MAJOR DRAM: "Row
major layout requires bfloat16"); rope.py `RotarySetup` (cos / sin [1, 1, max_seq_len,
D] bf16 TILE DRAM, the decode transformation matrix [1, 1, 32 x batch, 32] height-sharded
32 x 32 over the batch's cores in L1, the prefill one [1, 1, 32, 32] in DRAM); lm_head.py
(each split [dim, split] bfp8 DRAM-sharded); ccl.py `TT_CCL` (3 axes x 2 x (1 barrier +
2 all-gather + 3 reduce-scatter) = 36 global semaphores, each an L1 buffer of one 4-B page
a core over the whole grid, height-sharded: one 32-B slot of the L1 free list a core).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.frontends.tt_transformers.emit import Emit
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import DecodersPrecision
from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED,
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout

#: TT_CCL: 3 cluster axes x 2 (double-buffered) x (1 barrier + 2 all-gather + 3 reduce-scatter)
CCL_SEMAPHORES = 3 * 2 * (1 + 2 + 3)


def dram_sharded(k: int, n: int, banks: int) -> MemoryConfig:
    """create_dram_sharded_mem_config(k, n): WIDTH_SHARDED over the DRAM banks."""
    padded = math.ceil(n / (TILE * banks)) * TILE * banks
    return MemoryConfig(BufferType.DRAM, MemoryLayout.WIDTH_SHARDED,
                        ShardSpec(CoreRange.grid(banks, 1), (k, padded // banks)))


def tile(shape: tuple[int, ...], dtype: DataType, memory: MemoryConfig = DRAM_INTERLEAVED) -> TensorSpec:
    return TensorSpec(shape, dtype, Layout.TILE, memory)


def row_major(shape: tuple[int, ...], dtype: DataType, memory: MemoryConfig = DRAM_INTERLEAVED) -> TensorSpec:
    return TensorSpec(shape, dtype, Layout.ROW_MAJOR, memory)


@dataclass
class Layer:
    """One decoder layer's tensors (ids in the program)."""

    attention_norm: int
    ffn_norm: int
    wqkv: int
    wo: int
    w1: int
    w2: int
    w3: int
    keys: int
    values: int
    bias_prefill: int | None = None
    bias_decode: int | None = None
    q_norm: int | None = None
    k_norm: int | None = None
    pre_ff_norm: int | None = None
    post_ff_norm: int | None = None


@dataclass
class Weights:
    """Every persistent tensor of one chip."""

    embedding: int
    cos: int
    sin: int
    cos_local: int | None
    sin_local: int | None
    trans_decode: int
    trans_prefill: int
    layers: list[Layer]
    norm: int
    lm_head: list[int]
    semaphores: list[int]


def norm_weight(dim: int) -> TensorSpec:
    """RMSNorm's weight: [1, 1, dim / 32, 32] bf16 ROW_MAJOR DRAM."""
    return row_major((1, 1, dim // TILE, TILE), DataType.BFLOAT16)


def _norm(e: Emit, a: ModelArgs, name: str) -> int:
    """rmsnorm.py: the weight, and its per-device slice `weight_distributed` ([1, 1,
    dim / devices / 32, 32]) for the distributed norm, on every mesh: decoder.py and
    model.py pass `is_distributed=self.args.is_distributed_norm`, a bound method and so
    always true, and RMSNorm creates the slice `if self.is_distributed` (on a 1 x 1 mesh
    ShardTensor2dMesh gives the one chip all of it)."""
    weight = e.upload(name + ".weight", norm_weight(a.dim))
    e.upload(name + ".weight_distributed", norm_weight(a.dim // a.num_devices))
    return weight


def upload_weights(e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision, grid: tuple[int, int],
                   banks: int) -> Weights:
    """The persistent tensors, in the order tt-transformers creates them (TT_CCL, the
    embedding, the rotary setup, each layer's attention, MLP and norms, the final norm,
    the LM head)."""
    sems = ccl_semaphores(e, grid)
    ndev = a.num_devices
    e.module = "embedding"
    emb = e.upload("tok_embeddings.weight", row_major((a.vocab_size, a.dim // ndev), DataType.BFLOAT16))
    cos, sin, trans_decode, trans_prefill = rotary_setup(e, a, o, grid)
    cos_local = sin_local = None
    if a.local_rope:
        e.module = "rope"
        table = tile((1, 1, o.kv_cache, a.head_dim), DataType.BFLOAT16)
        cos_local = e.upload("rope_local.cos_matrix", table)
        sin_local = e.upload("rope_local.sin_matrix", table)
    layers = [_layer(e, a, o, p, i, banks) for i in range(a.n_layers)]
    e.layer = None
    e.module = "norm"
    norm = _norm(e, a, "norm")
    e.module = "lm_head"
    lm = [e.upload(f"lm_head.output_weights.{i}", tile((a.dim, split), DataType.BFLOAT8_B,
                                                        dram_sharded(a.dim, split, banks)))
          for i, split in enumerate(a.lm_head_splits)]
    if o.vllm:
        for i, layer in enumerate(layers):
            e.layer = i
            layer.keys, layer.values = _caches(e, a, o, p, i)
        e.layer = None
    return Weights(emb, cos, sin, cos_local, sin_local, trans_decode, trans_prefill, layers, norm, lm, sems)


def ccl_semaphores(e: Emit, grid: tuple[int, int]) -> list[int]:
    """TT_CCL's global semaphores (see the module docstring)."""
    cores = grid[0] * grid[1]
    sem_memory = MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED, ShardSpec(CoreRange.grid(*grid), (1, 1)))
    e.module = "tt_ccl"
    return [e.upload(f"tt_ccl.semaphore{i}", row_major((cores, 1), DataType.UINT32, sem_memory), Role.BUFFER)
            for i in range(CCL_SEMAPHORES)]


def rotary_setup(e: Emit, a: ModelArgs, o: TtTransformersOptions, grid: tuple[int, int]) -> tuple[int, int, int, int]:
    """rope.py `RotarySetup`: cos, sin, the decode and the prefill transformation matrices."""
    e.module = "rope"
    table = tile((1, 1, o.kv_cache, a.head_dim), DataType.BFLOAT16)
    cos, sin = e.upload("rope.cos_matrix", table), e.upload("rope.sin_matrix", table)
    batch_grid = CoreRangeSet.from_count(o.batch, *grid, row_wise=True)
    trans_memory = MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED, ShardSpec(batch_grid, (TILE, TILE)))
    trans_decode = e.upload("rope.transformation_mat", tile((1, 1, TILE * o.batch, TILE), DataType.BFLOAT16,
                                                              trans_memory))
    trans_prefill = e.upload("rope.transformation_mat_prefill", tile((1, 1, TILE, TILE), DataType.BFLOAT16))
    return cos, sin, trans_decode, trans_prefill


def decoder_layer(e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision, i: int,
                  banks: int) -> Layer:
    """Layer i's weights (and, unless vLLM allocates them later, its caches)."""
    return _layer(e, a, o, p, i, banks)


def mlp_weights(e: Emit, a: ModelArgs, p: DecodersPrecision, i: int, pre: str, banks: int) -> tuple[int, int, int]:
    """mlp.py: w1, w2, w3 DRAM-sharded, decoder i's precisions (prefix `pre`)."""
    ndev = a.num_devices
    prec = p.layer(i)
    e.module = pre + "feed_forward"
    hid = a.hidden_dim // ndev
    ff13 = prec.dtype("ff1_ff3")
    w1 = e.upload(pre + "feed_forward.w1", tile((1, 1, a.dim, hid), ff13, dram_sharded(a.dim, hid, banks)))
    w2 = e.upload(pre + "feed_forward.w2", tile((1, 1, hid, a.dim), prec.dtype("ff2"), dram_sharded(hid, a.dim, banks)))
    w3 = e.upload(pre + "feed_forward.w3", tile((1, 1, a.dim, hid), ff13, dram_sharded(a.dim, hid, banks)))
    return w1, w2, w3


def norm(e: Emit, a: ModelArgs, name: str) -> int:
    """An RMSNorm's weight and its distributed slice (`_norm`)."""
    return _norm(e, a, name)


def _layer(e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision, i: int, banks: int) -> Layer:
    ndev = a.num_devices
    prec = p.layer(i)
    e.layer = i
    pre = f"layers.{i}."
    e.module = pre + "attention"
    qkv_local = a.qkv_size // ndev
    bias_prefill = bias_decode = None
    if a.qkv_bias:
        bias_prefill = e.upload(pre + "attention.wqkv_bias_prefill", tile((1, 1, 1, qkv_local), DataType.BFLOAT16))
        bias_decode = e.upload(pre + "attention.wqkv_bias_decode.0", tile((TILE, qkv_local), DataType.BFLOAT16))
    wqkv = e.upload(pre + "attention.wqkv", tile((1, 1, a.dim, qkv_local), prec.dtype("wqkv"),
                                                 dram_sharded(a.dim, qkv_local, banks)))
    if a.fused_all_gather_matmul:
        wo_shape = (1, 1, a.n_heads * a.head_dim, a.dim // ndev)
        wo = e.upload(pre + "attention.wo", tile(wo_shape, prec.dtype("wo")))
    else:
        o_in = a.n_heads * a.head_dim // ndev
        wo = e.upload(pre + "attention.wo", tile((1, 1, o_in, a.dim), prec.dtype("wo"),
                                                 dram_sharded(o_in, a.dim, banks)))
    q_norm = k_norm = None
    if a.qk_norm:
        q_norm = e.upload(pre + "attention.q_norm.weight", norm_weight(a.head_dim))
        k_norm = e.upload(pre + "attention.k_norm.weight", norm_weight(a.head_dim))
    keys = values = -1
    if not o.vllm:
        keys, values = _caches(e, a, o, p, i)
    w1, w2, w3 = mlp_weights(e, a, p, i, pre, banks)
    e.module = pre[:-1]
    attention_norm = _norm(e, a, pre + "attention_norm")
    ffn_norm = _norm(e, a, pre + "ffn_norm")
    pre_ff = post_ff = None
    if a.ff_norms:
        pre_ff = _norm(e, a, pre + "pre_feedforward_layernorm")
        post_ff = _norm(e, a, pre + "post_feedforward_layernorm")
    return Layer(attention_norm, ffn_norm, wqkv, wo, w1, w2, w3, keys, values, bias_prefill, bias_decode, q_norm,
                 k_norm, pre_ff, post_ff)


def _caches(e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision, i: int) -> tuple[int, int]:
    """Layer i's K and V caches (attention.py `init_kv_cache`; vLLM's `allocate_kv_cache`
    gives the same shapes): paged [blocks, kv / devices, block, D] or [batch, kv /
    devices, max_seq_len, D], the KV_CACHE dtype, DRAM interleaved."""
    e.module = f"layers.{i}.attention"
    kv = p.layer(i).dtype("kv_cache")
    if o.paged:
        shape: tuple[int, ...] = (o.max_num_blocks, a.n_local_kv_heads, o.page_block_size, a.head_dim)
    else:
        shape = (o.batch, a.n_local_kv_heads, o.kv_cache, a.head_dim)
    keys = e.upload(f"layers.{i}.attention.layer_past.k", tile(shape, kv), Role.BUFFER)
    values = e.upload(f"layers.{i}.attention.layer_past.v", tile(shape, kv), Role.BUFFER)
    return keys, values
