"""One decode step of tt-transformers on one chip: every user's next token with a KV cache
of `kv_cache` positions (tt-metal models/tt_transformers/tt/: model.py
`ttnn_decode_forward` and `_transform_decode_inputs_device`, rope.py `get_rot_mats`,
decoder.py, attention.py `forward_decode`, mlp.py decode, lm_head.py; tt-frontends A7).

Inputs: the tokens [1, 32] (uint32), the positions [B] (int32), the rotary indices [1, 32]
(uint32), the page table [B, blocks a user] (int32), all row-major DRAM. The embedding
[1, 1, 32, dim / devices] moves into DECODE_RESIDUAL_MEMCFG (L1 width-sharded); the
rotary cos / sin: an embedding of the position into each table, transposed to
[1, 32, 32, D] and sharded one user per core. Per layer:
- the attention norm: the residual resharded into SHARDED_ATTN_INPUT_MEMCFG (n300: the
  all-gather writes it there), the sharded RMS norm (SHARDED_NORM_ATTN_PRGM_CFG);
- `linear(x, wqkv)` DRAM-sharded (XQKV_DECODE_PROGCFG) into L1 width-sharded; + the bias
  (Qwen2); the norm output freed; moved to L1 interleaved bf16; the heads
  (nlp_create_qkv_heads_decode, height-sharded one user per core); q / k norms (Qwen3,
  Gemma-3: through L1 interleaved and back); rotary embedding on Q and K;
- paged_update_cache of K and V at each user's position; SDPA decode (paged: the page
  table; SDPA_DECODE_PROGCFG, chunk sizes chosen by the factory) into DRAM; resharded into
  SCORES_BATCHED_MM_OUTPUT_MEMCFG; nlp_concat_heads_decode; `matmul(., wo)` DRAM-sharded
  (ATTN_OUTPUT_PROGCFG) into the concat's width-sharded config;
- n300: reduce_scatter into DECODE_RESIDUAL_MEMCFG; resharded into it; the residual add
  (Gemma-3: the output normed, on a mesh all-reduced (L1 interleaved, a Ring
  reduce-scatter into DRAM, divided by the chips), then added; the pre-feed-forward norm);
- the MLP norm (SHARDED_MLP_INPUT_MEMCFG); w1, w3 (DECODE_MLP_W1_W3_PRG_CONFIG) into L1
  width-sharded; mul(silu(w1), w3) in w1's config; resharded into
  SHARDED_MLP2_INPUT_MEMCFG; w2; n300: reduce-scatter; resharded into the residual
  config (Gemma-3: the post-feed-forward norm, all-reduced on a mesh); the residual add.
After the last layer: the final norm into LM_HEAD_INPUT_MEMCFG, the LM head splits as in
prefill, concatenated in L1 (on a mesh all-gathered on dim 3 into the same L1 config).
What tileplan leaves out: the trace capture (its buffers go to the trace region) and what
follows the logits, which depends on the generation: before tt-metal PR #31046 (October
2025) the logits untilized, then a greedy argmax on device (the demo at batch 1) or a copy to
DRAM (host sampling); from it, tt-transformers' on-device sampling module when the
vocabulary fits (vocab_size // sampling_splits <= 64k), else the untilize and the copy to
DRAM, whose factory PR #40964 (2026) changed. Untilize's block factory, which such a
128,256-wide row needs, is modelled (ops/tt_layout.py); which tail a build runs is not.
"""

from __future__ import annotations

from dataclasses import replace

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import Arch
from tileplan.targets.tenstorrent.frontends.tt_transformers.configs import Configs
from tileplan.targets.tenstorrent.frontends.tt_transformers.emit import Emit
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.prefill import gemma_all_reduce
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import (
    LM_HEAD_COMPUTE,
    NORM_COMPUTE,
    DecodersPrecision,
    Fidelity,
)
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_weights import MllamaWeights
from tileplan.targets.tenstorrent.frontends.tt_transformers.weights import Layer, Weights, row_major
from tileplan.targets.tenstorrent.memory import L1_INTERLEAVED, BufferType, MemoryConfig, MemoryLayout
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.tt_all_gather_matmul import AllGatherMatmulAttrs
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import ConcatAttrs, TransposeAttrs
from tileplan.targets.tenstorrent.ops.tt_eltwise import BinaryAttrs
from tileplan.targets.tenstorrent.ops.tt_embedding import EmbeddingAttrs
from tileplan.targets.tenstorrent.ops.tt_heads import ConcatHeadsDecodeAttrs, CreateHeadsAttrs
from tileplan.targets.tenstorrent.ops.tt_kv_cache import CacheAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_norm import NormAttrs
from tileplan.targets.tenstorrent.ops.tt_rotary import RotaryAttrs
from tileplan.targets.tenstorrent.ops.tt_sdpa import SdpaAttrs
from tileplan.targets.tenstorrent.ops.tt_tm import SliceAttrs
from tileplan.targets.tenstorrent.tiles import TILE, DataType

DRAM = OutputRequest(BufferType.DRAM)
L1 = OutputRequest.of(L1_INTERLEAVED)
WIDTH = OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED)
#: model_config.py CREATE_QKV_DECODE_SHARD on Blackhole: CoreGrid(y=4, x=8)
BLACKHOLE_HEADS_GRID = (8, 4)
#: attention.py `all_gather_core_grid_offset`: the fused all-gather's workers from (0, 4)
AG_MATMUL_OFFSET = (0, 4)


class Decode:
    """The lowering of one decode step (see the module docstring)."""

    def __init__(self, e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision,
                 w: Weights | MllamaWeights, grid: tuple[int, int]) -> None:
        self.e, self.a, self.o, self.p, self.w, self.grid = e, a, o, p, w, grid
        self.c = Configs(a, o.batch)
        self.multichip = a.num_devices > 1
        self.residual = self.c.decode_residual()
        self.positions = self.table = 0
        self.table_spec = row_major((o.batch, -(-o.kv_cache // o.page_block_size)), DataType.INT32)
        self.positions_spec = row_major((o.batch,), DataType.INT32)

    def to(self, x: int, memory: MemoryConfig, name: str) -> int:
        """ttnn.to_memory_config: a new tensor unless x is already there."""
        if self.e.memory.get(x) == memory:
            return x
        return self.e.one(OpKind.TO_MEMORY_CONFIG, name, (x,), OutputRequest.of(memory))

    def norm(self, x: int, weight: int, grid_memory: MemoryConfig, name: str) -> int:
        """distributed_norm.py decode: the residual into the norm's sharded config (n300:
        all-gathered into it), then the sharded RMS norm into the same config."""
        e = self.e
        assert grid_memory.shard is not None
        if self.multichip:
            src = e.one(OpKind.ALL_GATHER_ASYNC, name + ".all_gather", (x,), OutputRequest.of(grid_memory),
                        self.a.ccl())
        else:
            src = self.to(x, grid_memory, name + ".input")
        box = grid_memory.shard.bounding_box()
        gamma = row_major((1, 1, self.a.dim // TILE, TILE), DataType.BFLOAT16)
        out = e.one(OpKind.RMS_NORM, name, (src,), OutputRequest.of(grid_memory),
                    NormAttrs(gamma=gamma, program_config=self.c.norm(box)), NORM_COMPUTE)
        if src != x:
            e.free(src)
        return out

    def run(self) -> tuple[int, ...]:
        e, a, o = self.e, self.a, self.o
        assert isinstance(self.w, Weights)
        e.module, e.layer = "inputs", None
        tokens = e.upload("tokens", row_major((1, TILE), DataType.UINT32), Role.INPUT)
        self.positions = e.upload("current_pos", self.positions_spec, Role.INPUT)
        rot_idxs = e.upload("rot_idxs", row_major((1, TILE), DataType.UINT32), Role.INPUT)
        if o.paged:
            self.table = e.upload("page_table", self.table_spec, Role.INPUT)
        e.module = "embedding"
        emb = e.one(OpKind.EMBEDDING, "embedding", (tokens, self.w.embedding), DRAM, EmbeddingAttrs())
        x = self.to(emb, self.residual, "embedding.to_residual")
        e.free(emb)
        e.module = "rope"
        rot = self.rot_mats(rot_idxs, self.w.cos, self.w.sin, "rope")
        local = self.rot_mats(rot_idxs, self.w.cos_local, self.w.sin_local, "rope_local") \
            if self.w.cos_local is not None else rot
        for i, layer in enumerate(self.w.layers):
            e.layer = i
            sliding = i < len(a.sliding_layers) and a.sliding_layers[i]
            out = self.decoder(x, layer, i, local if sliding else rot)
            e.free(x)
            x = out
        e.layer = None
        e.free(*rot, *(local if local is not rot else ()))
        return self.lm_head(x)

    def rot_mats(self, idxs: int, cos: int | None, sin: int | None, name: str) -> tuple[int, int]:
        """rope.py get_rot_mats (@013eaee): cos and sin step by step side by side (both
        embeddings, both transposes (1, 2), [both slices], both interleaved_to_sharded),
        each step's inputs dropped as its outputs rebind them."""
        assert cos is not None and sin is not None
        e, o = self.e, self.o
        names = ("cos", "sin")
        cur = [e.one(OpKind.EMBEDDING, f"{name}.{n}.embedding", (idxs, table), DRAM, EmbeddingAttrs())
               for table, n in ((cos, "cos"), (sin, "sin"))]
        steps: list[tuple[str, OpKind, object, OutputRequest]] = [
            ("transpose", OpKind.TRANSPOSE, TransposeAttrs(1, 2), DRAM)]
        if o.batch % TILE:
            steps.append(("slice", OpKind.SLICE, SliceAttrs((0, 0, 0, 0), (1, o.batch, 1, self.a.head_dim)), DRAM))
        steps.append(("", OpKind.INTERLEAVED_TO_SHARDED, None, OutputRequest.of(self.c_rot_memory())))
        for step, kind, attrs, out in steps:
            for k, n in enumerate(names):
                made = e.one(kind, f"{name}.{n}.{step}" if step else f"{name}.{n}", (cur[k],), out, attrs)
                e.free(cur[k])
                cur[k] = made
        return cur[0], cur[1]

    def c_rot_memory(self) -> MemoryConfig:
        """rope.py: (32, D) height shards on `num_cores_to_corerangeset(batch)` row-wise."""
        from tileplan.targets.tenstorrent.frontends.tt_transformers.configs import sharded
        from tileplan.targets.tenstorrent.memory import CoreRangeSet
        return sharded(MemoryLayout.HEIGHT_SHARDED, (TILE, self.a.head_dim),
                       CoreRangeSet.from_count(self.o.batch, *self.grid, row_wise=True))

    def decoder(self, x: int, layer: Layer, i: int, rot: tuple[int, int]) -> int:
        """decoder.py TransformerBlock.forward, decode (Gemma-3: the attention output
        normed and all-reduced before the residual add, pre / post feed-forward norms, as
        in prefill; the norms in SHARDED_MLP_INPUT_MEMCFG)."""
        e, pre = self.e, f"layers.{i}."
        e.module = pre + "attention_norm"
        attn_in = self.norm(x, layer.attention_norm, self.c.attn_input(), pre + "attention_norm")
        attn_out = self.attention(attn_in, layer, i, rot)
        if layer.pre_ff_norm is None:
            e.module = pre[:-1]
            h = e.one(OpKind.ADD, pre + "add_attention", (x, attn_out), OutputRequest.of(self.residual))
            e.module = pre + "ffn_norm"
            f_in = self.norm(h, layer.ffn_norm, self.c.mlp_input(), pre + "ffn_norm")
        else:
            e.module = pre + "ffn_norm"
            post_attention = self.norm(attn_out, layer.ffn_norm, self.c.mlp_input(), pre + "ffn_norm")
            normed = self.all_reduce(post_attention, pre + "ffn_norm")
            e.module = pre[:-1]
            h = e.one(OpKind.ADD, pre + "add_attention", (x, normed), OutputRequest.of(self.residual))
            e.free(normed)
            e.module = pre + "pre_feedforward_layernorm"
            f_in = self.norm(h, layer.pre_ff_norm, self.c.mlp_input(), pre + "pre_feedforward_layernorm")
        e.free(attn_out)
        mlp_out = self.mlp(f_in, i)
        if layer.post_ff_norm is not None:
            e.module = pre + "post_feedforward_layernorm"
            normed = self.norm(mlp_out, layer.post_ff_norm, self.c.mlp_input(), pre + "post_feedforward_layernorm")
            e.free(mlp_out)
            mlp_out = self.all_reduce(normed, pre + "post_feedforward_layernorm")
        e.module = pre[:-1]
        act = self.p.layer(i).activation or DataType.BFLOAT16
        out = e.one(OpKind.ADD, pre + "add_mlp", (h, mlp_out), OutputRequest.of(self.residual, act))
        e.free(h, mlp_out)
        return out

    def all_reduce(self, x: int, name: str) -> int:
        """decoder.py's Gemma all-reduce in decode on a mesh: ccl.py tt_all_reduce first moves
        the sharded norm output to L1 interleaved (`sharded_to_interleaved`), then as in
        prefill (`gemma_all_reduce`); one chip: the tensor itself."""
        if not self.multichip:
            return x
        flat = self.e.one(OpKind.SHARDED_TO_INTERLEAVED, name + ".interleaved", (x,), L1)
        self.e.free(x)
        return gemma_all_reduce(self.e, self.a, flat, name)

    def attention(self, x: int, layer: Layer, i: int, rot: tuple[int, int]) -> int:
        """attention.py forward_decode."""
        e, a, o, c, prec = self.e, self.a, self.o, self.c, self.p.layer(i)
        pre = f"layers.{i}.attention."
        e.module = pre[:-1]
        xqkv = e.one(OpKind.LINEAR, pre + "wqkv", (x, layer.wqkv),
                     OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED,
                                   dtype=prec.activation or DataType.BFLOAT16),
                     MatmulAttrs(c.xqkv_decode()), prec.li_qkv_decode.compute)
        if layer.bias_decode is not None:
            biased = e.one(OpKind.ADD, pre + "wqkv_bias", (xqkv, layer.bias_decode), WIDTH)
            e.free(xqkv)
            xqkv = biased
        e.free(x)
        flat = e.one(OpKind.SHARDED_TO_INTERLEAVED, pre + "xqkv_interleaved", (xqkv,),
                     OutputRequest(BufferType.L1, dtype=DataType.BFLOAT16))
        e.free(xqkv)
        qkv_local = a.qkv_size // a.num_devices
        view = e.view(flat, (1, 1, o.batch, qkv_local), pre + "xqkv_reshaped",
                      padded=(1, 1, c.rows, qkv_local)) if o.batch != c.rows else flat
        heads = OutputRequest.of(self.head_memory()) if a.arch is Arch.BLACKHOLE else \
            OutputRequest(BufferType.L1, MemoryLayout.HEIGHT_SHARDED)
        q, k, v = e.op(OpKind.NLP_CREATE_QKV_HEADS_DECODE, pre + "create_qkv_heads", (view,), heads,
                       CreateHeadsAttrs(a.n_local_heads, a.n_local_kv_heads), outputs=3)
        if layer.q_norm is not None and layer.k_norm is not None:
            q = self.head_norm(q, layer.q_norm, pre + "q_norm")
            k = self.head_norm(k, layer.k_norm, pre + "k_norm")
        e.free(flat)  # attention.py: ttnn.deallocate(xqkv_fused) after the head norms
        cos, sin = rot
        decode = RotaryAttrs(decode=True)
        trans = self.w.trans_decode
        q_rot = e.one(OpKind.ROTARY_EMBEDDING_LLAMA, pre + "rotary_q", (q, cos, sin, trans), heads, decode)
        k_rot = e.one(OpKind.ROTARY_EMBEDDING_LLAMA, pre + "rotary_k", (k, cos, sin, trans), heads, decode)
        e.free(q, k)
        table = self.table_spec if o.paged else None
        extra = (self.positions, self.table) if o.paged else (self.positions,)
        for cache, t, n in ((layer.keys, k_rot, "k"), (layer.values, v, "v")):
            e.op(OpKind.PAGED_UPDATE_CACHE, pre + f"update_cache_{n}", (cache, t, *extra), DRAM,
                 CacheAttrs(page_table=table, positions=self.positions_spec), outputs=0)
        e.free(k_rot, v)
        attrs = SdpaAttrs(is_causal=True, program_config=c.sdpa_decode(), cur_pos=self.positions_spec,
                          page_table=table)
        attn = e.one(OpKind.SDPA_DECODE, pre + "sdpa_decode", (q_rot, layer.keys, layer.values, *extra), DRAM, attrs,
                     prec.sdpa_decode.compute)
        e.free(q_rot)
        scores = e.one(OpKind.INTERLEAVED_TO_SHARDED, pre + "scores_sharded", (attn,),
                       OutputRequest.of(c.scores(o.batch)))
        cat = e.one(OpKind.NLP_CONCAT_HEADS_DECODE, pre + "concat_heads", (scores,), WIDTH,
                    ConcatHeadsDecodeAttrs(a.n_local_heads))
        e.free(scores, attn)
        if a.fused_all_gather_matmul:
            return self.all_gather_matmul(cat, layer.wo, pre)
        out = e.one(OpKind.MATMUL, pre + "wo", (cat, layer.wo), WIDTH, MatmulAttrs(c.wo_decode()),
                    prec.li_o_decode.compute)
        e.free(cat)
        if self.multichip:
            reduced = e.one(OpKind.REDUCE_SCATTER_ASYNC, pre + "reduce_scatter", (out,),
                            OutputRequest.of(self.residual), self.a.ccl())
            e.free(out)
            return reduced
        moved = self.to(out, self.residual, pre + "to_residual")
        if moved != out:
            e.free(out)
        return moved

    def all_gather_matmul(self, cat: int, wo: int, pre: str) -> int:
        """attention.py under USE_FUSED_ALL_GATHER_MATMUL (a T3K's ring): the heads into
        ATTN_ALL_GATHER_MATMUL_OUTPUT_MEMCFG, all_gather_matmul_async (workers from (0, 4),
        `compute_kernel_config_hifi2`), the gathered tensor kept to the function's end, the
        product resharded into DECODE_RESIDUAL_MEMCFG; no reduce-scatter."""
        e, c = self.e, self.c
        memory = c.all_gather_matmul_memory()
        src = self.to(cat, memory, pre + "all_gather_matmul_input")
        if src != cat:
            e.free(cat)
        attrs = AllGatherMatmulAttrs(replace(self.a.ccl(), core_offset=AG_MATMUL_OFFSET), c.all_gather_matmul(),
                                     memory)
        full, dense = e.op(OpKind.ALL_GATHER_MATMUL_ASYNC, pre + "wo", (src, wo), WIDTH, attrs,
                           Fidelity.HIFI2.compute, outputs=2)
        e.free(src)
        out = self.to(dense, self.residual, pre + "to_residual")
        e.free(full, *((dense,) if out != dense else ()))
        return out

    def head_norm(self, x: int, weight: int, name: str) -> int:
        """attention.py `norm_reshard`: Q / K to L1 interleaved for the norm and back
        ("Hack until RMSNorm supports height-sharded output config"); each step's input
        freed as the local name is rebound, the caller's sharded head when the caller
        rebinds it, after the call."""
        e = self.e
        flat = e.one(OpKind.SHARDED_TO_INTERLEAVED, name + ".interleaved", (x,), L1)
        gamma = row_major((1, 1, self.a.head_dim // TILE, TILE), DataType.BFLOAT16)
        normed = e.one(OpKind.RMS_NORM, name, (flat,), L1, NormAttrs(gamma=gamma), NORM_COMPUTE)
        e.free(flat)
        back = e.one(OpKind.INTERLEAVED_TO_SHARDED, name + ".sharded", (normed,),
                     OutputRequest.of(self.head_memory()))
        e.free(normed)
        e.free(x)
        return back

    def head_memory(self) -> MemoryConfig:
        """nlp_create_qkv_heads_decode's output config: (32 ceil(heads / 32), D) one user a
        core, row-wise on the device's grid; on Blackhole inside CREATE_QKV_DECODE_SHARD's
        8 x 4 grid (model_config.py: height-sharded (TILE, head_dim) on CoreGrid(y=4, x=8))."""
        from tileplan.targets.tenstorrent.frontends.tt_transformers.configs import sharded
        from tileplan.targets.tenstorrent.memory import CoreRangeSet
        padded = TILE * -(-self.a.n_local_heads // TILE)
        grid = BLACKHOLE_HEADS_GRID if self.a.arch is Arch.BLACKHOLE else self.grid
        return sharded(MemoryLayout.HEIGHT_SHARDED, (padded, self.a.head_dim),
                       CoreRangeSet.from_count(self.o.batch, *grid, row_wise=True))

    def mlp(self, x: int, i: int, weights: tuple[int, int, int] | None = None, prefix: str | None = None) -> int:
        """mlp.py decode (decoder i's precisions; `weights`: w1, w2, w3 other than layer
        i's, a Llama-3.2-Vision cross-attention block's, named by `prefix`)."""
        e, c, prec = self.e, self.c, self.p.layer(i)
        pre = prefix or f"layers.{i}.feed_forward."
        e.module = pre[:-1]
        w1_w, w2_w, w3_w = weights or (self.w.layers[i].w1, self.w.layers[i].w2, self.w.layers[i].w3)
        act = prec.activation
        out13 = OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED, dtype=act or DataType.BFLOAT16)
        w1 = e.one(OpKind.LINEAR, pre + "w1", (x, w1_w), out13, MatmulAttrs(c.w1_w3_decode()),
                   prec.li_ff1_ff3.compute)
        w3 = e.one(OpKind.LINEAR, pre + "w3", (x, w3_w), out13, MatmulAttrs(c.w1_w3_decode()),
                   prec.li_ff1_ff3.compute)
        e.free(x)
        w2_in = e.one(OpKind.MULTIPLY, pre + "mul", (w1, w3),
                      OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED, dtype=act or DataType.BFLOAT8_B),
                      BinaryAttrs(lhs_activation=True))
        e.free(w1, w3)
        w2_sharded = self.to(w2_in, c.mlp2_input(), pre + "w2_input")
        if w2_sharded != w2_in:
            e.free(w2_in)
        w2 = e.one(OpKind.LINEAR, pre + "w2", (w2_sharded, w2_w),
                   OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED, dtype=act or DataType.BFLOAT16),
                   MatmulAttrs(c.w2_decode()), prec.li_ff2.compute)
        e.free(w2_sharded)
        if self.multichip:
            reduced = e.one(OpKind.REDUCE_SCATTER_ASYNC, pre + "reduce_scatter", (w2,), OutputRequest.of(self.residual),
                            self.a.ccl())
            e.free(w2)
            return reduced
        moved = self.to(w2, self.residual, pre + "to_residual")
        if moved != w2:
            e.free(w2)
        return moved

    def lm_head(self, x: int) -> tuple[int, ...]:
        e, a = self.e, self.a
        assert isinstance(self.w, Weights)
        e.module = "norm"
        normed = self.norm(x, self.w.norm, self.c.lm_head_input(), "norm")
        e.free(x)
        e.module = "lm_head"
        parts = []
        for i, (weight, split) in enumerate(zip(self.w.lm_head, a.lm_head_splits)):
            out = e.one(OpKind.LINEAR, f"lm_head.split{i}", (normed, weight),
                        OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED, dtype=DataType.BFLOAT8_B),
                        MatmulAttrs(self.c.lm_head(split)), LM_HEAD_COMPUTE)
            flat = e.one(OpKind.SHARDED_TO_INTERLEAVED, f"lm_head.split{i}.interleaved", (out,), L1)
            e.free(out)
            parts.append(flat)
        e.free(normed)
        logits = parts[0]
        if len(parts) > 1:
            logits = e.one(OpKind.CONCAT, "lm_head.concat", tuple(parts), L1, ConcatAttrs(-1))
            e.free(*parts)
        if self.multichip:
            # model.py ttnn_decode_forward: memory_config=tt_logits.memory_config() (L1)
            gathered = e.one(OpKind.ALL_GATHER_ASYNC, "lm_head.all_gather", (logits,), L1, self.a.ccl())
            e.free(logits)
            logits = gathered
        return (logits,)
