"""One Llama-3.2-Vision (Mllama) decode step for `batch` users, as one chip runs it in
tt-transformers (tt-metal models/tt_transformers/tt/multimodal/llama_vision_model.py
@051626f `prepare_inputs_decode` and `ttnn_decode_forward`; docs/notes/MLLAMA-DECODE.md
lists every call with its source):

1. Inputs (`prepare_decode_inputs_host`, `copy_host_to_device`, in this order, DRAM): the
   embedded tokens [1, 1, 32, dim / devices] bf16 TILE (the embeddings run on the host),
   the cross-attention mask [1, B, heads / devices, 6528] and the row masks [1, B,
   heads / devices, 128] and [1, 1, 32, dim / devices], bf16 row-major, the positions, the
   rotary indices, under vLLM the page tables. Then `transform_decode_inputs_device`: the
   residual into DECODE_RESIDUAL_MEMCFG (held by the generator's lists for the whole
   step), the rotary matrices (rope.py `get_rot_mats`), the three masks tilized (their
   row-major forms go when the function returns).
2. The text model (llama_cross_attention_transformer_text.py `forward`, decode): for each
   decoder layer, the cross-attention block first where the fusion schedule says
   (llama_cross_block.py, llama_cross_attention.py `forward_decode`: the sharded
   attention norm; the input to L1 interleaved; Q by VISION_XATTN_Q_PROGCFG(B) into DRAM;
   heads (the discarded V half kept by Python's `_`); row-major, sliced to the users,
   transposed, tilized; q_norm; SDPA decode over the cross cache (the demo's, or vLLM's
   pool through the cross page table; q chunk 32, k chunk 128) with the mask; x the 1NSH
   mask; back to [1, heads, B, 128] and concatenated; wo by VISION_XATTN_DENSE_PROGCFG(B);
   on a mesh the reduce-scatter; into the residual config. Then the block: to DRAM, x
   tanh(gate_attn), the residual, the MLP norm and MLP (decoder 0's precisions), to DRAM,
   x the 11SD mask, x tanh(gate_ffwd), the residual), then the decoder layer as for the
   text models (decode.py).
3. The LM head: the final norm into LM_HEAD_INPUT_MEMCFG, to DRAM, one bf16 linear a
   split (CROSS_TRANSFORMER_TEXT_OUTPUT_PROGCFG(32, 1024)), on a mesh ttnn.all_gather, the
   concat.

Not modelled: the trace capture (the same operations, their inputs persistent: traced,
the row-major inputs stay for the whole step, up to 13.4 MB of DRAM more at batch 32 on
an N150; the demo's and vLLM's default, as for the text models' decode) and whether
full-range slices copy (taken as views, as in the prefill). B <= 32. The logits end
row-major (`ttnn_decode_forward`'s `ttnn.to_layout`: one tile row 4,008 tiles wide, which
untilize's block factory splits; mllama_common.row_major_logits).
"""

from __future__ import annotations

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.frontends.tt_transformers.configs import matmul_config
from tileplan.targets.tenstorrent.frontends.tt_transformers.decode import DRAM, L1, Decode
from tileplan.targets.tenstorrent.frontends.tt_transformers.emit import Emit
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_common import (
    DRAM_BF16,
    GRID,
    gate,
    lm_head_splits,
    row_major_logits,
)
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_weights import CrossBlock, MllamaWeights
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import (
    NORM_COMPUTE,
    SDPA_COMPUTE,
    DecodersPrecision,
    Fidelity,
)
from tileplan.targets.tenstorrent.frontends.tt_transformers.weights import row_major, tile
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_all_gather import AllGatherFactory
from tileplan.targets.tenstorrent.ops.tt_data_movement import TransposeAttrs
from tileplan.targets.tenstorrent.ops.tt_heads import CreateHeadsAttrs
from tileplan.targets.tenstorrent.ops.tt_host import HostWriteAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_norm import NormAttrs
from tileplan.targets.tenstorrent.ops.tt_sdpa import SDPAProgramConfig, SdpaAttrs
from tileplan.targets.tenstorrent.ops.tt_tm import SliceAttrs
from tileplan.targets.tenstorrent.tiles import TILE, DataType

BF16 = DataType.BFLOAT16
HIFI4 = Fidelity.HIFI4.compute
#: forward_decode's SDPA chunks
Q_CHUNK, K_CHUNK = 32, 128


class MllamaDecode(Decode):
    """The lowering of one Llama-3.2-Vision decode step (see the module docstring)."""

    def __init__(self, e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision, w: MllamaWeights,
                 grid: tuple[int, int], all_gather: AllGatherFactory | None) -> None:
        super().__init__(e, a, o, p, w, grid)
        assert a.vision is not None
        self.vision_tokens = a.vision.vision_tokens
        self.mw = w
        self.factory = all_gather

    def host(self, name: str, shape: tuple[int, ...], dtype: DataType = BF16, tiled: bool = False) -> int:
        """A host tensor written to the device (`ttnn.to_device`, DRAM)."""
        spec = tile(shape, dtype) if tiled else row_major(shape, dtype)
        return self.e.op(OpKind.FROM_TORCH, name, (), OutputRequest.of(DRAM_INTERLEAVED), HostWriteAttrs(spec),
                         role=Role.INPUT)[0]

    def run(self) -> tuple[int, ...]:
        e, a, o = self.e, self.a, self.o
        ndev, b = a.num_devices, o.batch
        heads = a.n_heads // ndev
        e.module, e.layer = "inputs", None
        h_host = self.host("h", (1, 1, TILE, a.dim // ndev), tiled=True)
        xattn_rm = self.host("xattn_mask.host", (1, b, heads, self.vision_tokens))
        mask_1nsh_rm = self.host("full_text_mask_expand_1NSH.host", (1, b, heads, a.head_dim))
        mask_11sd_rm = self.host("full_text_mask_expand_11SD.host", (1, 1, TILE, a.dim // ndev))
        self.positions = self.host("current_pos", (b,), DataType.INT32)
        rot_idxs = self.host("rot_idxs", (1, TILE), DataType.UINT32)
        cross_table = None
        if o.vllm:
            self.table = self.host("page_table", self.table_spec.shape, DataType.INT32)
            cross_table = self.host("cross_page_table", (b, -(-self.vision_tokens // o.page_block_size)),
                                    DataType.INT32)
        h0 = self.to(h_host, self.residual, "h.to_residual")
        e.module = "rope"
        rot = self.rot_mats(rot_idxs, self.mw.cos, self.mw.sin, "rope")
        e.module = "inputs"
        xattn = e.one(OpKind.TO_LAYOUT, "xattn_mask", (xattn_rm,), DRAM)
        mask_1nsh = e.one(OpKind.TO_LAYOUT, "full_text_mask_expand_1NSH", (mask_1nsh_rm,), DRAM)
        mask_11sd = e.one(OpKind.TO_LAYOUT, "full_text_mask_expand_11SD", (mask_11sd_rm,), DRAM)
        e.free(h_host, xattn_rm, mask_1nsh_rm, mask_11sd_rm, rot_idxs)  # prepare_inputs_decode returns
        masks = (xattn, mask_1nsh, mask_11sd)
        x = h0
        for i, layer in enumerate(self.mw.layers):
            e.layer = i
            if i in self.mw.cross:
                h = self.cross_block(x, self.mw.cross[i], i, masks, cross_table)
                if x != h0:
                    e.free(x)
                x = h
            out = self.decoder(x, layer, i, rot)
            if x != h0:
                e.free(x)
            x = out
        e.layer = None
        rows = row_major_logits(e, self.lm_head_mllama(x))  # inside ttnn_decode_forward: the inputs still held
        e.free(h0, *rot, *masks, self.positions, *((self.table, cross_table) if cross_table is not None else ()))
        return (rows,)

    # -- the cross-attention block --------------------------------------------------------
    def cross_block(self, x: int, b: CrossBlock, layer: int, masks: tuple[int, int, int],
                    cross_table: int | None) -> int:
        """llama_cross_block.py forward, decode (x stays the caller's)."""
        e, c = self.e, self.c
        index = sorted(self.mw.cross).index(layer)
        pre = f"text_model.cross_attention_layers.{index}."
        e.module = pre + "attention_norm"
        normed = self.norm(x, b.attention_norm, c.attn_input(), pre + "attention_norm")
        attn = self.cross_attention(normed, b, pre + "attention.", masks, cross_table)
        e.free(normed)  # the attention's argument
        e.module = pre[:-1]
        attn_dram = e.one(OpKind.TO_MEMORY_CONFIG, pre + "attention.to_dram", (attn,), DRAM)
        e.free(attn)
        attn_out = gate(e, attn_dram, b.gate_attn, pre + "gate_attn")
        res = e.one(OpKind.ADD, pre + "add_attention", (x, attn_out), OutputRequest.of(self.residual))
        e.module = pre + "ffn_norm"
        f_in = self.norm(res, b.ffn_norm, c.mlp_input(), pre + "ffn_norm")
        mlp_out = self.mlp(f_in, 0, (b.w1, b.w2, b.w3), pre + "feed_forward.")
        e.module = pre[:-1]
        mlp_dram = e.one(OpKind.TO_MEMORY_CONFIG, pre + "feed_forward.to_dram", (mlp_out,), DRAM)
        e.free(mlp_out)
        masked = e.one(OpKind.MULTIPLY, pre + "mask_11SD", (mlp_dram, masks[2]), DRAM)
        e.free(mlp_dram)
        gated = gate(e, masked, b.gate_ffwd, pre + "gate_ffwd")
        out = e.one(OpKind.ADD, pre + "add_mlp", (res, gated), OutputRequest.of(self.residual))
        e.free(attn_out, res, gated)
        return out

    def cross_attention(self, x: int, b: CrossBlock, att: str, masks: tuple[int, int, int],
                        cross_table: int | None) -> int:
        """llama_cross_attention.py forward_decode."""
        e, a, o = self.e, self.a, self.o
        ndev, batch = a.num_devices, o.batch
        heads = a.n_local_heads
        e.module = att[:-1]
        flat = e.one(OpKind.SHARDED_TO_INTERLEAVED, att + "x_interleaved", (x,), L1)
        width = a.n_heads * a.head_dim // ndev
        cfg_q = matmul_config(min(batch, 1024), a.dim, width, GRID, in0_block_w=1, fuse_batch=batch <= 1024)
        xq = e.one(OpKind.LINEAR, att + "wq", (flat, b.wq), DRAM_BF16, MatmulAttrs(cfg_q), HIFI4)
        q, k, v_half = e.op(OpKind.NLP_CREATE_QKV_HEADS, att + "q_heads", (xq, xq), DRAM,
                            CreateHeadsAttrs(heads, heads // 2), outputs=3)
        e.free(k, xq)
        q_rm = e.one(OpKind.TO_LAYOUT, att + "q_row_major", (q,), DRAM)
        e.free(q)
        if batch < TILE:
            sliced = e.one(OpKind.SLICE, att + "q_users", (q_rm,), DRAM,
                           SliceAttrs((0, 0, 0, 0), (1, heads, batch, a.head_dim)))
            e.free(q_rm)
            q_rm = sliced
        q_t = e.one(OpKind.TRANSPOSE, att + "q_transposed", (q_rm,), DRAM, TransposeAttrs(1, 2))
        e.free(q_rm)
        q_tile = e.one(OpKind.TO_LAYOUT, att + "q_tile", (q_t,), DRAM)
        e.free(q_t)
        gamma = row_major((1, 1, a.head_dim // TILE, TILE), BF16)
        qn = e.one(OpKind.RMS_NORM, att + "q_norm", (q_tile,), DRAM, NormAttrs(gamma=gamma), NORM_COMPUTE)
        e.free(q_tile)
        table_spec = row_major((batch, -(-self.vision_tokens // o.page_block_size)), DataType.INT32) \
            if cross_table is not None else None
        attrs = SdpaAttrs(is_causal=False, mask=tile((1, batch, TILE, self.vision_tokens), BF16),
                          program_config=SDPAProgramConfig(self.grid, Q_CHUNK, K_CHUNK), k_chunk_size=K_CHUNK,
                          page_table=table_spec)
        extra = (cross_table,) if cross_table is not None else ()
        attn = e.one(OpKind.SDPA_DECODE, att + "sdpa_decode", (qn, b.keys, b.values, masks[0], *extra), DRAM, attrs,
                     SDPA_COMPUTE)
        masked = e.one(OpKind.MULTIPLY, att + "mask_1NSH", (attn, masks[1]), DRAM)
        e.free(attn)
        out_rm = e.one(OpKind.TO_LAYOUT, att + "out_row_major", (masked,), DRAM)
        e.free(masked)
        out_t = e.one(OpKind.TRANSPOSE, att + "out_transposed", (out_rm,), DRAM, TransposeAttrs(1, 2))
        e.free(out_rm)
        out_tile = e.one(OpKind.TO_LAYOUT, att + "out_tile", (out_t,), DRAM)
        e.free(out_t)
        cat = e.one(OpKind.NLP_CONCAT_HEADS, att + "concat_heads", (out_tile,), DRAM)
        e.free(out_tile)
        if batch < TILE:
            cat = e.view(cat, (1, 1, TILE, width), att + "concat_padded", padded=(1, 1, TILE, width))
        cfg_o = matmul_config(min(batch, 1024), a.dim // ndev, a.dim, GRID, in0_block_w=1)
        out = e.one(OpKind.MATMUL, att + "wo", (cat, b.wo), DRAM_BF16, MatmulAttrs(cfg_o), HIFI4)
        e.free(cat)
        if self.multichip:
            reduced = e.one(OpKind.REDUCE_SCATTER_ASYNC, att + "reduce_scatter", (out,), DRAM, a.ccl())
            e.free(out)
            out = reduced
        moved = e.one(OpKind.TO_MEMORY_CONFIG, att + "to_residual", (out,), OutputRequest.of(self.residual))
        e.free(out, flat, v_half, qn)  # forward_decode returns
        return moved

    # -- the LM head ----------------------------------------------------------------------
    def lm_head_mllama(self, x: int) -> int:
        """The text model's decode tail (see the module docstring)."""
        e, a = self.e, self.a
        e.module = "text_model.norm"
        normed = self.norm(x, self.mw.norm, self.c.lm_head_input(), "text_model.norm")
        e.free(x)
        h = e.one(OpKind.TO_MEMORY_CONFIG, "text_model.norm.to_dram", (normed,), DRAM)
        e.free(normed)
        e.module = "text_model.lm_head"
        logits = lm_head_splits(e, a, h, self.mw.lm_head, self.factory)
        e.free(h)
        return logits


__all__ = ["MllamaDecode"]
