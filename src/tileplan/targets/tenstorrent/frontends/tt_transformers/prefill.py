"""One prefill of tt-transformers, as one chip runs it (tt-metal models/tt_transformers/
tt/: model.py `ttnn_prefill_forward`, decoder.py `forward`, attention.py
`forward_prefill`, mlp.py prefill, distributed_norm.py, lm_head.py; tt-frontends A6):

embedding (tokens, row-major DRAM) -> [1, 1, S, dim / devices] bf16 DRAM; cos / sin sliced
to [1, 1, S, D]; then per layer:
- attention norm (n300: all_gather_async of the residual on dim 3 into DRAM first):
  interleaved RMS norm, output DRAM;
- QKV: reshaped to 2,048-row batches past 2,048, `linear(x, wqkv)` with XQKV_PREFILL_PROGCFG,
  output DRAM (activation dtype, else bf16); + the QKV bias (Qwen2); the input freed;
- nlp_create_qkv_heads -> Q [1, h, S, D], K, V [1, kv, S, D] in DRAM; q / k norms
  (Qwen3, Gemma-3); rotary_embedding_llama on Q and on K (each input freed);
- K and V typecast to the KV-cache dtype; unpaged, from `min_kv_prefill_shard_seqlen`
  tokens on, height-sharded into L1 (KV_PREFILL_MEM_CFG) before fill_cache; paged:
  paged_fill_cache through the page table;
- Q typecast to the activation dtype or bfp8; SDPA (causal, SDPA_PROGCFG, the prefill
  SDPA fidelity), then Q, K, V freed; nlp_concat_heads; reshaped to 1,024-row batches
  past 1,024; `linear(., wo)` WO_PREFILL_PROGCFG, output bfp8 (or the activation dtype);
  on a T3K with USE_FUSED_ALL_GATHER_MATMUL the concatenated heads are first
  all-gathered on dim 3 into DRAM (the ungathered tensor dropped), wo gives this chip's
  dim / 8 columns and no reduce-scatter follows;
- n300, t3k: reduce_scatter_minimal_async on dim 3 (intermediate DRAM); the residual add (the
  layer input freed); the MLP norm (n300: all-gathered first); Gemma-3's extra norms;
- MLP: reshaped to `prefill_len_cutoff`-row batches from the cutoff on; w1 and w3
  (PREFILL_MLP_W1_W3_PRG_CONFIG), the norm output freed; mul(silu(w1_out), w3_out) in
  bfp8, w1_out and w3_out freed; w2 (PREFILL_MLP_W2_PRG_CONFIG); n300: reduce-scatter;
  the residual add.
After the last layer: the 32 rows holding the last token sliced out, the final norm (n300:
all-gathered), sharded into LM_HEAD_INPUT_MEMCFG, one DRAM-sharded matmul per LM-head
split into L1 (bfp8), each moved to L1 interleaved, concatenated in L1 (the logits).

Every activation lives in DRAM interleaved (asserted by decoder.py); what tileplan leaves
out: the logits' move to the host, and Python's garbage collector's timing (a tensor
tt-transformers drops by rebinding is freed at the rebinding here).
"""

from __future__ import annotations

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.frontends.tt_transformers.configs import Configs
from tileplan.targets.tenstorrent.frontends.tt_transformers.emit import Emit
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import MAX_QKV_MM_SEQ_LEN, ModelArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import (
    LM_HEAD_COMPUTE,
    NORM_COMPUTE,
    DecodersPrecision,
)
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_weights import MllamaWeights
from tileplan.targets.tenstorrent.frontends.tt_transformers.weights import Layer, Weights, row_major
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, L1_INTERLEAVED, BufferType, MemoryLayout
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_ccl import Topology
from tileplan.targets.tenstorrent.ops.tt_data_movement import ConcatAttrs
from tileplan.targets.tenstorrent.ops.tt_eltwise import BinaryAttrs
from tileplan.targets.tenstorrent.ops.tt_embedding import EmbeddingAttrs
from tileplan.targets.tenstorrent.ops.tt_heads import CreateHeadsAttrs
from tileplan.targets.tenstorrent.ops.tt_kv_cache import CacheAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_norm import NormAttrs
from tileplan.targets.tenstorrent.ops.tt_rotary import RotaryAttrs
from tileplan.targets.tenstorrent.ops.tt_sdpa import SdpaAttrs
from tileplan.targets.tenstorrent.ops.tt_tm import SliceAttrs
from tileplan.targets.tenstorrent.tiles import TILE, DataType

DRAM = OutputRequest(BufferType.DRAM)
#: model_config.py `is_distributed_norm`: a multi-chip prefill past this dim distributes the norm
DISTRIBUTED_NORM_DIM = 4096


def padded_prefill_len(n: int) -> int:
    """common.py `get_padded_prefill_len`: 128 up to 128 tokens, else the smaller of the
    next power of two and the next multiple of 2,048."""
    if n <= 128:
        return 128
    pow2 = 1 << (n - 1).bit_length()
    return min(pow2, -(-n // 2048) * 2048)


def gemma_all_reduce(e: Emit, a: ModelArgs, x: int, name: str) -> int:
    """decoder.py's Gemma all-reduce in prefill and decode: tt_all_reduce's reduce-scatter
    into DRAM (`topology=ttnn.Topology.Ring` written into decoder.py's call: a Ring on four
    chips too, Linear on two as tt-metal runs two), then `ttnn.div(., num_devices)`; x and
    the reduced tensor freed."""
    reduced = e.one(OpKind.REDUCE_SCATTER_ASYNC, name + ".reduce_scatter", (x,), DRAM, a.ccl(topology=Topology.RING))
    e.free(x)
    out = e.one(OpKind.DIVIDE, name + ".div", (reduced,), DRAM, BinaryAttrs(scalar=True))
    e.free(reduced)
    return out


class Prefill:
    """The lowering of one prefill (see the module docstring)."""

    def __init__(self, e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision,
                 w: Weights | MllamaWeights, seq: int) -> None:
        self.e, self.a, self.o, self.p, self.w, self.seq = e, a, o, p, w, seq
        self.c = Configs(a, 1)
        self.multichip = a.num_devices > 1
        self.page_table: int | None = None

    # -- helpers --------------------------------------------------------------------------
    def dram(self, dtype: DataType | None = None) -> OutputRequest:
        return OutputRequest(BufferType.DRAM, dtype=dtype)

    def gather(self, x: int, name: str) -> int:
        """distributed_norm.py: all_gather_async(x, dim=3, DRAM, num_workers_per_link=2)."""
        return self.e.one(OpKind.ALL_GATHER_ASYNC, name, (x,), DRAM, self.a.ccl())

    def reduce_scatter(self, x: int, name: str, topology: Topology | None = None) -> int:
        """ccl.py tt_all_reduce on a 1 x N mesh: reduce_scatter_minimal_async(dim=3) on the
        model's topology unless the caller names one, input freed."""
        out = self.e.one(OpKind.REDUCE_SCATTER_ASYNC, name, (x,), DRAM, self.a.ccl(topology=topology))
        self.e.free(x)
        return out

    def norm(self, x: int, weight: int, name: str, width: int) -> int:
        gamma = row_major((1, 1, width // TILE, TILE), DataType.BFLOAT16)
        return self.e.one(OpKind.RMS_NORM, name, (x,), DRAM, NormAttrs(gamma=gamma), NORM_COMPUTE)

    def typecast(self, x: int, want: DataType, name: str) -> int:
        """ttnn.typecast to `want`, its input freed (attention.py deallocates it): a new
        tensor even when the type is the same, as tt-metal's typecast always runs its
        device operation (ttnn/cpp/ttnn/operations/copy/typecast/typecast.cpp
        `typecast_impl` calls `ttnn::prim::typecast`, whose output is allocated anew)."""
        out = self.e.one(OpKind.TYPECAST, name, (x,), self.dram(want))
        self.e.free(x)
        return out

    # -- the program ----------------------------------------------------------------------
    def run(self) -> tuple[int, ...]:
        e, a, s = self.e, self.a, self.seq
        assert isinstance(self.w, Weights)
        e.module, e.layer = "inputs", None
        tokens = e.upload("tokens", row_major((1, s), DataType.UINT32), Role.INPUT)
        if self.o.paged:
            blocks = -(-s // self.o.page_block_size)
            self.page_table = e.upload("page_table", row_major((1, blocks), DataType.INT32), Role.INPUT)
        e.module = "embedding"
        x = e.one(OpKind.EMBEDDING, "embedding", (tokens, self.w.embedding), DRAM, EmbeddingAttrs())
        if a.scaled_embedding:
            scaled = e.one(OpKind.MULTIPLY, "embedding.embed_scale", (x,), DRAM, BinaryAttrs(scalar=True))
            e.free(x)
            x = scaled
        e.module = "rope"
        rot = self.rot_mats(self.w.cos, self.w.sin, "rope")
        local = self.rot_mats(self.w.cos_local, self.w.sin_local, "rope_local") if self.w.cos_local is not None \
            else rot
        for i, layer in enumerate(self.w.layers):
            e.layer = i
            sliding = i < len(a.sliding_layers) and a.sliding_layers[i]
            x = self.decoder(x, layer, i, local if sliding else rot)
        e.layer = None
        e.free(*rot, *(local if local is not rot else ()))
        return self.lm_head(x)

    def rot_mats(self, cos: int | None, sin: int | None, name: str) -> tuple[int, int]:
        """model.py: cos / sin `[:, :, 0:S, :]` of the DRAM tables."""
        assert cos is not None and sin is not None
        sl = SliceAttrs((0, 0, 0, 0), (1, 1, self.seq, self.a.head_dim))
        return (self.e.one(OpKind.SLICE, f"{name}.cos", (cos,), DRAM, sl),
                self.e.one(OpKind.SLICE, f"{name}.sin", (sin,), DRAM, sl))

    def decoder(self, x: int, layer: Layer, i: int, rot: tuple[int, int]) -> int:
        """decoder.py TransformerBlock.forward, prefill (Gemma-3: the attention output
        normed before the residual add, pre / post feed-forward norms)."""
        e = self.e
        pre = f"layers.{i}."
        e.module = pre + "attention_norm"
        attn_in = self.distributed_norm(x, layer.attention_norm, pre + "attention_norm")
        attn_out = self.attention(attn_in, layer, i, rot)
        gemma = layer.pre_ff_norm is not None
        if not gemma:
            e.module = pre[:-1]
            residual = e.one(OpKind.ADD, pre + "add_attention", (x, attn_out), DRAM)
            e.free(x)
            e.module = pre + "ffn_norm"
            f_in = self.distributed_norm(residual, layer.ffn_norm, pre + "ffn_norm")
        else:
            assert layer.pre_ff_norm is not None
            e.module = pre + "ffn_norm"
            post_attention = self.distributed_norm(attn_out, layer.ffn_norm, pre + "ffn_norm")
            normed = self.all_reduce(post_attention, pre + "ffn_norm")
            e.module = pre[:-1]
            residual = e.one(OpKind.ADD, pre + "add_attention", (x, normed), DRAM)
            e.free(normed)
            f_in = self.distributed_norm(residual, layer.pre_ff_norm, pre + "pre_feedforward_layernorm")
        e.free(attn_out)
        mlp_out = self.mlp(f_in, i)
        if layer.post_ff_norm is not None:
            normed = self.distributed_norm(mlp_out, layer.post_ff_norm, pre + "post_feedforward_layernorm")
            e.free(mlp_out)
            mlp_out = self.all_reduce(normed, pre + "post_feedforward_layernorm")
        e.module = pre[:-1]
        act = self.p.layer(i).activation or DataType.BFLOAT16
        out = e.one(OpKind.ADD, pre + "add_mlp", (residual, mlp_out), self.dram(act))
        e.free(residual, mlp_out)
        if gemma:
            e.free(x)
        return out

    def all_reduce(self, x: int, name: str) -> int:
        """decoder.py's Gemma all-reduce on a mesh (`gemma_all_reduce`); one chip: the
        tensor itself."""
        return gemma_all_reduce(self.e, self.a, x, name) if self.multichip else x

    def distributed_norm(self, x: int, weight: int, name: str) -> int:
        """distributed_norm.py prefill: n300 gathers the fractured input, then the norm;
        past dim 4,096 (`is_distributed_norm`) the distributed RMS norm on each chip's
        slice, then the gather."""
        e, a = self.e, self.a
        if not self.multichip:
            return self.norm(x, weight, name, a.dim)
        if a.dim <= DISTRIBUTED_NORM_DIM:
            gathered = self.gather(x, name + ".all_gather")
            out = self.norm(gathered, weight, name, a.dim)
            e.free(gathered)
            return out
        stats = e.one(OpKind.RMS_NORM_PRE_ALL_GATHER, name + ".pre_all_gather", (x,), self.dram(DataType.BFLOAT16),
                      None, NORM_COMPUTE)
        gathered = self.gather(stats, name + ".stats_all_gather")
        e.free(stats)
        gamma = row_major((1, 1, a.dim // a.num_devices // TILE, TILE), DataType.BFLOAT16)
        local = e.one(OpKind.RMS_NORM_POST_ALL_GATHER, name + ".post_all_gather", (x, gathered), DRAM,
                      NormAttrs(gamma=gamma), NORM_COMPUTE)
        e.free(gathered)
        out = self.gather(local, name + ".all_gather")
        e.free(local)
        return out

    def attention(self, x: int, layer: Layer, i: int, rot: tuple[int, int]) -> int:
        """attention.py forward_prefill."""
        e, a, s, prec = self.e, self.a, self.seq, self.p.layer(i)
        pre = f"layers.{i}.attention."
        e.module = pre[:-1]
        act = prec.activation
        x_in = e.view(x, (1, s // MAX_QKV_MM_SEQ_LEN, MAX_QKV_MM_SEQ_LEN, a.dim), pre + "x_reshaped") \
            if s > MAX_QKV_MM_SEQ_LEN else x
        xqkv = e.one(OpKind.LINEAR, pre + "wqkv", (x_in, layer.wqkv), self.dram(act or DataType.BFLOAT16),
                     MatmulAttrs(self.c.xqkv_prefill(s)), prec.li_qkv_prefill.compute)
        if layer.bias_prefill is not None:
            biased = e.one(OpKind.ADD, pre + "wqkv_bias", (xqkv, layer.bias_prefill), DRAM)
            e.free(xqkv)
            xqkv = biased
        if s > MAX_QKV_MM_SEQ_LEN:
            xqkv = e.view(xqkv, (1, 1, s, a.qkv_size // a.num_devices), pre + "xqkv_reshaped")
        e.free(x)
        q, k, v = e.op(OpKind.NLP_CREATE_QKV_HEADS, pre + "create_qkv_heads", (xqkv,), DRAM,
                       CreateHeadsAttrs(a.n_local_heads, a.n_local_kv_heads), outputs=3)
        if layer.q_norm is not None and layer.k_norm is not None:
            # attention.py: q = self.q_norm(q), k = self.k_norm(k) (each pre-norm head
            # freed as its name is rebound), then ttnn.deallocate(xqkv_fused)
            qn = self.norm(q, layer.q_norm, pre + "q_norm", a.head_dim)
            e.free(q)
            kn = self.norm(k, layer.k_norm, pre + "k_norm", a.head_dim)
            e.free(k)
            q, k = qn, kn
        e.free(xqkv)
        cos, sin = rot
        q_rot = e.one(OpKind.ROTARY_EMBEDDING_LLAMA, pre + "rotary_q", (q, cos, sin, self.w.trans_prefill), DRAM,
                      RotaryAttrs())
        e.free(q)
        k_rot = e.one(OpKind.ROTARY_EMBEDDING_LLAMA, pre + "rotary_k", (k, cos, sin, self.w.trans_prefill), DRAM,
                      RotaryAttrs())
        e.free(k)
        kv = prec.dtype("kv_cache")
        k8 = self.typecast(k_rot, kv, pre + "k_typecast")
        v8 = self.typecast(v, kv, pre + "v_typecast")
        self.fill(layer, k8, v8, pre)
        q8 = self.typecast(q_rot, act or DataType.BFLOAT8_B, pre + "q_typecast")
        attn = e.one(OpKind.SDPA, pre + "sdpa", (q8, k8, v8), DRAM,
                     SdpaAttrs(is_causal=True, program_config=self.c.sdpa_prefill(s)), prec.sdpa_prefill.compute)
        e.free(q8, k8, v8)
        cat = e.one(OpKind.NLP_CONCAT_HEADS, pre + "concat_heads", (attn,), DRAM)
        e.free(attn)
        heads = a.n_heads * a.head_dim // a.num_devices
        cat_in = e.view(cat, (1, s // 1024, 1024, heads), pre + "concat_reshaped") if s > 1024 else cat
        fused = a.fused_all_gather_matmul
        if fused:
            wo_in = e.one(OpKind.ALL_GATHER_ASYNC, pre + "all_gather", (cat_in,), DRAM, a.ccl())
            e.free(cat)
        else:
            wo_in = cat_in
        width = a.dim // a.num_devices if fused else a.dim
        out = e.one(OpKind.LINEAR, pre + "wo", (wo_in, layer.wo), self.dram(act or DataType.BFLOAT8_B),
                    MatmulAttrs(self.c.wo_prefill(s)), prec.li_o_prefill.compute)
        if s > 1024:
            out = e.view(out, (1, 1, s, width), pre + "wo_reshaped")
        e.free(wo_in if fused else cat)
        if self.multichip and not fused:
            out = self.reduce_scatter(out, pre + "reduce_scatter")
        return out

    def fill(self, layer: Layer, k8: int, v8: int, pre: str) -> None:
        """The KV-cache fill: paged_fill_cache, or fill_cache (K and V sharded into L1 first
        from min_kv_prefill_shard_seqlen tokens on)."""
        e, a, s = self.e, self.a, self.seq
        if self.page_table is not None:
            table = row_major((1, -(-s // self.o.page_block_size)), DataType.INT32)
            for cache, t, n in ((layer.keys, k8, "k"), (layer.values, v8, "v")):
                e.op(OpKind.PAGED_FILL_CACHE, pre + f"paged_fill_cache_{n}", (cache, t, self.page_table), DRAM,
                     CacheAttrs(page_table=table), outputs=0)
            return
        shard = s >= a.min_kv_prefill_shard_seqlen
        for cache, t, n in ((layer.keys, k8, "k"), (layer.values, v8, "v")):
            fill_in = e.one(OpKind.INTERLEAVED_TO_SHARDED, pre + f"{n}_fill_sharded", (t,),
                            OutputRequest.of(self.c.kv_prefill_memory(s))) if shard else t
            e.op(OpKind.FILL_CACHE, pre + f"fill_cache_{n}", (cache, fill_in), DRAM, CacheAttrs(), outputs=0)
            if shard:
                e.free(fill_in)

    def mlp(self, x: int, i: int, weights: tuple[int, int, int] | None = None, prefix: str | None = None) -> int:
        """mlp.py prefill (decoder i's precisions; `weights`: w1, w2, w3 other than layer
        i's, a Llama-3.2-Vision cross-attention block's, named by `prefix`)."""
        e, a, s, prec = self.e, self.a, self.seq, self.p.layer(i)
        pre = prefix or f"layers.{i}.feed_forward."
        e.module = pre[:-1]
        cutoff = a.prefill_len_cutoff
        w1_w, w2_w, w3_w = weights or (self.w.layers[i].w1, self.w.layers[i].w2, self.w.layers[i].w3)
        act = prec.activation
        x_in = e.view(x, (1, s // cutoff, cutoff, a.dim), pre + "x_reshaped") if s >= cutoff else x
        compute13 = prec.li_ff1_ff3.compute
        w1 = e.one(OpKind.LINEAR, pre + "w1", (x_in, w1_w), self.dram(act or DataType.BFLOAT16),
                   MatmulAttrs(self.c.w1_w3_prefill(s)), compute13)
        w3 = e.one(OpKind.LINEAR, pre + "w3", (x_in, w3_w), self.dram(act or DataType.BFLOAT16),
                   MatmulAttrs(self.c.w1_w3_prefill(s)), compute13)
        e.free(x)
        w2_in = e.one(OpKind.MULTIPLY, pre + "mul", (w1, w3), self.dram(act or DataType.BFLOAT8_B),
                      BinaryAttrs(lhs_activation=True))
        e.free(w1, w3)
        w2 = e.one(OpKind.LINEAR, pre + "w2", (w2_in, w2_w), self.dram(act or DataType.BFLOAT16),
                   MatmulAttrs(self.c.w2_prefill(s)), prec.li_ff2.compute)
        e.free(w2_in)
        if s >= cutoff:
            w2 = e.view(w2, (1, 1, s, a.dim), pre + "w2_reshaped")
        if self.multichip:
            w2 = self.reduce_scatter(w2, pre + "reduce_scatter")
        return w2

    def lm_head(self, x: int) -> tuple[int, ...]:
        """model.py: the last token's 32 rows, the final norm, lm_head.py."""
        e, a, s = self.e, self.a, self.seq
        assert isinstance(self.w, Weights)
        e.module = "norm"
        last = e.one(OpKind.SLICE, "last_token_rows", (x,),
                     DRAM, SliceAttrs((0, 0, s - TILE, 0), (1, 1, s, a.dim // a.num_devices)))
        e.free(x)
        normed = self.distributed_norm(last, self.w.norm, "norm")
        e.free(last)
        e.module = "lm_head"
        lm_in = e.one(OpKind.INTERLEAVED_TO_SHARDED, "lm_head.input", (normed,),
                      OutputRequest.of(self.c.lm_head_input()))
        e.free(normed)
        parts = []
        for i, (weight, split) in enumerate(zip(self.w.lm_head, a.lm_head_splits)):
            out = e.one(OpKind.LINEAR, f"lm_head.split{i}", (lm_in, weight),
                        OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED, dtype=DataType.BFLOAT8_B),
                        MatmulAttrs(self.c.lm_head(split)), LM_HEAD_COMPUTE)
            flat = e.one(OpKind.SHARDED_TO_INTERLEAVED, f"lm_head.split{i}.interleaved", (out,),
                         OutputRequest.of(L1_INTERLEAVED))
            e.free(out)
            parts.append(flat)
        e.free(lm_in)
        if len(parts) == 1:
            return (parts[0],)
        logits = e.one(OpKind.CONCAT, "lm_head.concat", tuple(parts), OutputRequest.of(L1_INTERLEAVED),
                       ConcatAttrs(-1))
        e.free(*parts)
        return (logits,)


__all__ = ["DRAM_INTERLEAVED", "Prefill", "padded_prefill_len"]
