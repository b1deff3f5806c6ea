"""One Llama-3.2-Vision (Mllama) prefill of one user with one image of 4 tiles, as one
chip runs it in tt-transformers (tt-metal models/tt_transformers/tt/generator.py
`_prefill_forward_single_user` of `prefill_forward_llama_vision`; docs/notes/MLLAMA.md
section 5 and MLLAMA-VISION.md sections 4-5 list every call with its source):

1. `compute_vision_tokens_masks`: the vision encoder (llama_vision_encoder.py @90b63ba):
   the host-unfolded patches uploaded and projected by conv1's linear; the pre-tile
   embedding (slice, tanh(gate), multiply, concat x 50) added; the class token
   concatenated row-major and tilized (ttnn.concat with row-major and tile inputs: the
   tile one untilized first, as concat.cpp's untilize_rm_retilize path does); the
   positional embeddings (x gate, concat x 4, add; the aspect ratio's gated embedding
   sliced and added); ln_pre; the 31 pad rows a tile (an uploaded zero tensor, the input
   untilized, concatenated, tilized); the encoder mask [1, 1, 6528, 6528] bf16 uploaded;
   the 32 local blocks (llama_image_block.py @82ea46e, llama_image_attention.py @07eb756,
   llama_image_mlp.py @089192d: layer norm, QKV linear [1, 4, 1632, .], heads of 96,
   SDPA (not causal, the mask, q / k chunks 128), concat heads, wo, on a mesh an
   all_gather_async on dim 1 and fast_reduce_nc; the residual; layer norm, c_fc with its
   bias and GELU, c_proj, the reduction, c_proj's bias; the residual) keeping the inputs
   of layers 3, 7, 15, 23, 30; ln_post, the post-tile embedding; the 8 gated blocks
   (tanh(gate) x the attention and the MLP); the final and intermediate outputs sliced
   to 1,601 rows a tile and concatenated to [1, 4, 1601, 7680]; the projection (with its
   bias) to [1, 4, 1601, 4096 / devices], on a mesh ttnn.all_gather on dim 3 (one chip:
   no gather); reshaped to [1, 1, 6404, 4096] and padded to the 6,528 vision tokens.
2. `prepare_inputs_prefill` (llama_vision_model.py): uploaded from the host after the
   vision encoder ran: the cross-attention mask [1, 1, S, 6528] (bf16 row-major, tilized,
   typecast to bfp4), the row mask [1, heads / devices, S, 128] (likewise), the embedded
   prompt [1, 1, S, dim / devices] bf16 (the token embeddings run on the host), the
   rotary cos / sin [1, 1, S, 128] bf16, the row mask [1, 1, S, dim / devices] bfp4, and
   under vLLM the page tables.
3. The text model's prefill (llama_cross_attention_transformer_text.py `forward`): for
   each of the 32 decoder layers, the cross-attention block first where the fusion
   schedule says (llama_cross_block.py, llama_cross_attention.py `forward_prefill`:
   the attention norm; K and V from the vision tokens (linear, heads, k_norm), written
   to the cross cache (vLLM: typecast to bfp8, paged_fill_cache; the demo: sharded into
   L1 and fill_cache, both shards held to the function's return); Q (linear by 1,024-row
   blocks, heads, q_norm); SDPA on the fresh K and V with the bfp4 mask, q / k chunks
   128; x the row mask; concat heads; wo by 1,024-row blocks; on a mesh the
   reduce-scatter; x tanh(gate_attn); the residual; the MLP norm and the MLP (decoder
   0's precisions); x the 11SD mask; x tanh(gate_ffwd); the residual), then the decoder
   layer as for the text models (prefill.py). The whole padded prompt at once: Mllama's
   prefill is not chunked.
4. The LM head: the last token's 32 rows, the final norm, one bf16 linear a split into
   DRAM (CROSS_TRANSFORMER_TEXT_OUTPUT_PROGCFG), on a mesh ttnn.all_gather, the concat.

Python frees a tensor when its last name goes: a function's locals live to its return
(forward_prefill's Q, K and V through the output projection). The logits end row-major
before they go to the host (ttnn_prefill_forward's `ttnn.to_layout`: one tile row 4,008
tiles wide, which untilize's block factory splits; mllama_common.row_major_logits). Not
modelled: the host work; whether a full-range ttnn.slice or a one-input ttnn.concat copies
(they are taken as views, docs/notes/MLLAMA-VISION.md section 8).
"""

from __future__ import annotations

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.frontends.tt_transformers.configs import find_grid, matmul_config
from tileplan.targets.tenstorrent.frontends.tt_transformers.emit import Emit
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_args import RETURN_INTERMEDIATE, VisionArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_common import (
    GRID,
    gate,
    linear_ccl,
    lm_head_splits,
    row_major_logits,
    ttnn_all_gather,
)
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_weights import (
    CrossBlock,
    ImageBlock,
    MllamaWeights,
)
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import (
    SDPA_COMPUTE,
    DecodersPrecision,
    Fidelity,
)
from tileplan.targets.tenstorrent.frontends.tt_transformers.prefill import DRAM, Prefill
from tileplan.targets.tenstorrent.frontends.tt_transformers.weights import row_major, tile
from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED,
    BufferType,
    CoreRange,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, MathFidelity, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_all_gather import AllGatherFactory
from tileplan.targets.tenstorrent.ops.tt_data_movement import ConcatAttrs, PadAttrs, ReshapeAttrs
from tileplan.targets.tenstorrent.ops.tt_fast_reduce_nc import ReduceNcAttrs
from tileplan.targets.tenstorrent.ops.tt_heads import CreateHeadsAttrs
from tileplan.targets.tenstorrent.ops.tt_host import HostWriteAttrs
from tileplan.targets.tenstorrent.ops.tt_kv_cache import CacheAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_norm import NormAttrs
from tileplan.targets.tenstorrent.ops.tt_sdpa import SDPAProgramConfig, SdpaAttrs
from tileplan.targets.tenstorrent.ops.tt_tm import SliceAttrs
from tileplan.targets.tenstorrent.tiles import TILE, DataType

BF16, BFP8, BFP4 = DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B
#: ModelArgs `compute_kernel_config_hifi4`
HIFI4 = Fidelity.HIFI4.compute
#: llama_layernorm.py's interleaved layer norm: HiFi4, no fp32 accumulation, no packer L1 accumulation
LAYER_NORM_COMPUTE = ComputeConfig(MathFidelity.HIFI4, False, False, False)
#: llama_conv2d_patch.py: HiFi2, approximate, fp32 accumulation, packer L1 accumulation
CONV_COMPUTE = ComputeConfig(MathFidelity.HIFI2, True, True, True)
#: the aspect ratio of the planned image, 2 x 2 tiles (`ar_mapping[(2, 2)]` of the 8)
ASPECT_RATIO_INDEX = 5
#: the image transformer's and cross attention's SDPA chunks
CHUNK = 128
#: forward_prefill's wo and the LM head's rows a matmul block
MAX_MM_SEQ_LEN = 1024


class MllamaPrefill(Prefill):
    """The lowering of one Llama-3.2-Vision prefill (see the module docstring)."""

    def __init__(self, e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision, w: MllamaWeights,
                 seq: int, all_gather: AllGatherFactory | None, grid: tuple[int, int]) -> None:
        super().__init__(e, a, o, p, w, seq)
        self.grid = grid  # compute_with_storage_grid_size (the cross attention's SDPA grid)
        assert a.vision is not None
        self.v: VisionArgs = a.vision
        self.mw = w
        self.factory = all_gather

    # -- helpers --------------------------------------------------------------------------
    def host(self, name: str, spec: TensorSpec, role: Role = Role.INPUT) -> int:
        """A host tensor written to the device between operations (ttnn.from_torch)."""
        return self.e.op(OpKind.FROM_TORCH, name, (), OutputRequest.of(spec.memory), HostWriteAttrs(spec),
                         role=role)[0]

    def linear(self, name: str, x: int, w: int, m: int, k: int, n: int, fuse_batch: bool,
               bias: int | None = None, compute: ComputeConfig = HIFI4) -> int:
        """ttnn.linear into DRAM, bf16, with ModelArgs.matmul_config(m, k, n, (8, 8), in0_block_w=1)."""
        cfg = matmul_config(m, k, n, GRID, in0_block_w=1, fuse_batch=fuse_batch)
        inputs = (x, w) if bias is None else (x, w, bias)
        return self.e.one(OpKind.LINEAR, name, inputs, self.dram(BF16), MatmulAttrs(cfg), compute)

    def layer_norm(self, x: int, weights: tuple[int, int], name: str) -> int:
        """llama_layernorm.py: ttnn.layer_norm with weight and bias (the rule takes their
        specs; the tensors are persistent)."""
        v = self.v
        spec = tile((1, TILE, v.dim), BF16)
        return self.e.one(OpKind.LAYER_NORM, name, (x,), DRAM, NormAttrs(gamma=spec, beta=spec),
                          LAYER_NORM_COMPUTE)

    def binary(self, kind: OpKind, name: str, a: int, b: int) -> int:
        return self.e.one(kind, name, (a, b), DRAM)

    def all_reduce_vision(self, x: int, name: str) -> tuple[int, tuple[int, ...]]:
        """llama_image_attention.py / llama_image_mlp.py on a mesh: all_gather_async on dim 1
        (topology Linear), then fast_reduce_nc over it (the full-width sum on every chip);
        one chip: x. Returns the sum and the tensors the caller's locals still hold (x
        and the gathered tensor), for the caller to free when its function returns."""
        if not self.multichip:
            return x, ()
        e = self.e
        gathered = e.one(OpKind.ALL_GATHER_ASYNC, name + ".all_gather", (x,), DRAM, linear_ccl(self.a, 1))
        reduced = e.one(OpKind.FAST_REDUCE_NC, name + ".fast_reduce_nc", (gathered,), DRAM, ReduceNcAttrs(1))
        return reduced, (x, gathered)

    # -- the program ----------------------------------------------------------------------
    def run(self) -> tuple[int, ...]:
        e, w = self.e, self.mw
        vision_tokens = self.vision()
        e.module, e.layer = "inputs", None
        masks, x, rot, tables = self.inputs()
        self.page_table = tables[0] if tables else None
        cross_table = tables[1] if tables else None
        for i, layer in enumerate(w.layers):
            e.layer = i
            if i in w.cross:
                h = self.cross_block(x, w.cross[i], i, vision_tokens, masks, cross_table)
                e.free(x)  # `h = xattn_layer(h, ...)`: the block's input goes
                x = h
            x = self.decoder(x, layer, i, rot)
        e.layer = None
        rows = row_major_logits(e, self.lm_head_mllama(x))  # inside ttnn_prefill_forward: the inputs still held
        e.free(vision_tokens, *masks, *rot, *tables)
        return (rows,)

    def inputs(self) -> tuple[tuple[int, int, int], int, tuple[int, int], tuple[int, ...]]:
        """prepare_inputs_prefill's uploads in its order (@051626f): the xattn mask, the 1NSH
        mask, the 11SD mask, the cross page table (vLLM), the embedded prompt, cos, sin, the
        page table (vLLM). Returns the masks, the prompt, (cos, sin) and (page table,
        cross page table)."""
        e, a, s, v = self.e, self.a, self.seq, self.v
        ndev = a.num_devices

        def tilized_bfp4(name: str, shape: tuple[int, ...]) -> int:
            rm = self.host(name + ".host", row_major(shape, BF16))
            tiled = e.one(OpKind.TO_LAYOUT, name + ".to_layout", (rm,), DRAM)
            e.free(rm)
            out = e.one(OpKind.TYPECAST, name, (tiled,), self.dram(BFP4))
            e.free(tiled)
            return out

        xattn = tilized_bfp4("xattn_mask", (1, 1, s, v.vision_tokens))
        mask_1nsh = tilized_bfp4("full_text_mask_expand_1NSH", (1, a.n_heads // ndev, s, a.head_dim))
        mask_11sd = self.host("full_text_mask_expand_11SD", tile((1, 1, s, a.dim // ndev), BFP4))
        block = self.o.page_block_size
        cross_table = self.host("cross_page_table", row_major((1, -(-v.vision_tokens // block)), DataType.INT32)) \
            if self.o.vllm else None
        h = self.host("h", tile((1, 1, s, a.dim // ndev), BF16))
        cos = self.host("rot_mats.cos", tile((1, 1, s, a.head_dim), BF16))
        sin = self.host("rot_mats.sin", tile((1, 1, s, a.head_dim), BF16))
        tables: tuple[int, ...] = ()
        if cross_table is not None:
            tables = (self.host("page_table", row_major((1, -(-s // block)), DataType.INT32)), cross_table)
        return (xattn, mask_1nsh, mask_11sd), h, (cos, sin), tables

    # -- the vision encoder ---------------------------------------------------------------
    def vision(self) -> int:
        """compute_vision_tokens_masks' device work: the vision tokens [1, 1, 6528, dim]."""
        e, v, w = self.e, self.v, self.mw.vision
        tiles, mm = v.max_num_tiles, v.max_mm_seq
        e.module, e.layer = "vision_model.vision_encoder", None
        pre = "vision_model.vision_encoder."
        images = self.host(pre + "conv1.input", tile((tiles, v.patches, v.patch_features), BF16))
        x = e.one(OpKind.LINEAR, pre + "conv1", (images, w.conv1), self.dram(BF16), MatmulAttrs(core_grid=GRID),
                  CONV_COMPUTE)
        e.free(images)
        x = self.tile_embedding(x, w.pre_tile, v.patches, pre + "pre_tile_pos_embed")
        x = self.class_embedding(x, pre + "class_embedding")
        x = self.positional_embedding(x, pre + "positional_embedding")
        e.module = pre + "ln_pre"
        normed = self.layer_norm(x, w.ln_pre, pre + "ln_pre")
        e.free(x)
        x = self.pad_tiles(normed, pre + "pad")
        e.module = pre[:-1]
        mask = self.host(pre + "attn_mask", tile((1, 1, v.vision_tokens, v.vision_tokens), BF16))
        x = e.view(x, (1, 1, v.vision_tokens, v.dim), pre + "x_flat")
        kept: list[int] = []
        first = x  # the encoder's own x: alive until the transformer returns
        for i, block in enumerate(w.local):
            if i in RETURN_INTERMEDIATE:
                kept.append(x)
            out = self.image_block(x, block, mask, f"{pre}transformer.resblocks.{i}.")
            if i not in RETURN_INTERMEDIATE and x != first:
                e.free(x)
            x = out
        if first not in kept:
            e.free(first)
        e.module = pre + "ln_post"
        normed = self.layer_norm(x, w.ln_post, pre + "ln_post")
        e.free(x)
        x = e.view(normed, (1, tiles, mm, v.dim), pre + "ln_post_tiles")
        x = self.tile_embedding(x, w.post_tile, mm, pre + "post_tile_pos_embed")
        x = e.view(x, (1, 1, v.vision_tokens, v.dim), pre + "global_in")
        first = x
        for i, block in enumerate(w.global_):
            out = self.image_block(x, block, mask, f"{pre}global_transformer.resblocks.{i}.")
            if x != first:
                e.free(x)
            x = out
        e.free(first)
        e.module = pre[:-1]
        final = (1, tiles, v.chunk_tokens, v.dim)
        sl = SliceAttrs((0, 0, 0, 0), final)
        x_tiles = e.view(x, (1, tiles, mm, v.dim), pre + "out_tiles")
        xs = e.one(OpKind.SLICE, pre + "out_sliced", (x_tiles,), DRAM, sl)
        e.free(x_tiles)
        views = [e.view(t, (1, tiles, mm, v.dim), f"{pre}intermediate{j}") for j, t in enumerate(kept)]
        slices = [e.one(OpKind.SLICE, f"{pre}intermediate{j}.sliced", (t,), DRAM, sl) for j, t in enumerate(views)]
        e.free(*views)
        out = e.one(OpKind.CONCAT, pre + "concat", (xs, *slices), DRAM, ConcatAttrs(-1))
        e.free(xs, *slices, mask)
        return self.projection(out)

    def tile_embedding(self, x: int, weights: tuple[int, int], rows: int, name: str) -> int:
        """llama_tile_position_embedding.py (gated): the aspect ratio's [1, 4, 32, dim]
        slice x tanh(gate), concatenated to `rows` rows, added to x (x freed)."""
        e, v = self.e, self.v
        e.module = name
        emb, gate = weights
        piece = e.one(OpKind.SLICE, name + ".embedding", (emb,), DRAM,
                      SliceAttrs((ASPECT_RATIO_INDEX, 0, 0, 0), (ASPECT_RATIO_INDEX + 1, v.max_num_tiles, TILE, v.dim)))
        t = e.one(OpKind.TANH, name + ".gate_tanh", (gate,), DRAM)
        gated = self.binary(OpKind.MULTIPLY, name + ".gated", piece, t)
        e.free(piece, t)
        repeated = e.one(OpKind.CONCAT, name + ".repeat", (gated,) * (rows // TILE), DRAM, ConcatAttrs(2))
        e.free(gated)
        out = self.binary(OpKind.ADD, name + ".add", x, repeated)
        e.free(repeated, x)
        return out

    def class_embedding(self, x: int, name: str) -> int:
        """llama_class_embedding.py @97622714: the row-major class token x 4 tiles,
        concatenated before each tile's patches (row-major: x untilized for it), tilized."""
        e, v = self.e, self.v
        e.module = name
        cls4 = e.one(OpKind.CONCAT, name + ".repeat", (self.mw.vision.class_embedding,) * v.max_num_tiles,
                     DRAM, ConcatAttrs(1))
        x_rm = e.one(OpKind.TO_LAYOUT, name + ".untilize", (x,), DRAM)
        cat = e.one(OpKind.CONCAT, name + ".concat", (cls4, x_rm), DRAM, ConcatAttrs(2))
        e.free(cls4, x_rm)
        out = e.one(OpKind.TILIZE, name + ".tilize", (cat,), DRAM)
        e.free(cat, x)
        return out

    def positional_embedding(self, x: int, name: str) -> int:
        """llama_positional_embedding.py: the embedding x its gate, concatenated over the
        tiles, added; the aspect ratio's gated embedding sliced and added."""
        e, v, w = self.e, self.v, self.mw.vision
        e.module = name
        flat = e.view(x, (v.max_num_tiles, v.chunk_tokens, v.dim), name + ".x")
        gated = self.binary(OpKind.MULTIPLY, name + ".gated", w.positional_embedding, w.gated_positional_gate)
        repeated = e.one(OpKind.CONCAT, name + ".repeat", (gated,) * v.max_num_tiles, DRAM, ConcatAttrs(0))
        e.free(gated)
        added = self.binary(OpKind.ADD, name + ".add", flat, repeated)
        added4 = e.view(added, (1, v.max_num_tiles, v.chunk_tokens, v.dim), name + ".added")
        ar = e.one(OpKind.SLICE, name + ".gated_embedding", (w.gated_positional_embedding,), DRAM,
                   SliceAttrs((ASPECT_RATIO_INDEX, 0, 0, 0),
                              (ASPECT_RATIO_INDEX + 1, v.max_num_tiles, v.chunk_tokens, v.dim)))
        out = self.binary(OpKind.ADD, name + ".add_gated", added4, ar)
        e.free(added4, ar, repeated, flat)  # the function's locals and the caller's x
        return out

    def pad_tiles(self, x: int, name: str) -> int:
        """llama_vision_encoder.py: each tile padded from 1,601 to 1,632 rows (a zero
        [1, 4, 31, dim] row-major tensor uploaded, x untilized, concatenated, tilized)."""
        e, v = self.e, self.v
        e.module = name
        pad_rows = v.max_mm_seq - v.chunk_tokens
        zeros = self.host(name + ".zeros", row_major((1, v.max_num_tiles, pad_rows, v.dim), BF16), Role.BUFFER)
        x_rm = e.one(OpKind.TO_LAYOUT, name + ".untilize", (x,), DRAM)
        cat = e.one(OpKind.CONCAT, name + ".concat", (x_rm, zeros), DRAM, ConcatAttrs(2))
        e.free(x_rm)
        out = e.one(OpKind.TO_LAYOUT, name + ".tilize", (cat,), DRAM)
        e.free(cat, zeros, x)
        return out

    def image_block(self, x: int, b: ImageBlock, mask: int, pre: str) -> int:
        """llama_image_block.py forward (x stays the caller's)."""
        e, v, ndev = self.e, self.v, self.a.num_devices
        tiles, mm, s = v.max_num_tiles, v.max_mm_seq, v.vision_tokens
        e.module = pre + "attn"
        h1 = self.layer_norm(x, b.ln_1, pre + "ln_1")
        h1_tiles = e.view(h1, (1, tiles, mm, v.dim), pre + "ln_1.tiles")
        width = v.heads * v.padded_head_dim
        xqkv = self.linear(pre + "attn.wqkv", h1_tiles, b.wqkv, mm, v.dim, 3 * width // ndev, False)
        xqkv = e.view(xqkv, (1, 1, s, 3 * width // ndev), pre + "attn.xqkv")
        heads = v.heads // ndev
        q, k, vv = e.op(OpKind.NLP_CREATE_QKV_HEADS, pre + "attn.create_qkv_heads", (xqkv,), DRAM,
                        CreateHeadsAttrs(heads, heads), outputs=3)
        e.free(xqkv)
        attn = e.one(OpKind.SDPA, pre + "attn.sdpa", (q, k, vv, mask), DRAM,
                     SdpaAttrs(is_causal=False, mask=tile((1, 1, s, s), BF16),
                               program_config=SDPAProgramConfig(GRID, CHUNK, CHUNK)), SDPA_COMPUTE)
        e.free(q, k, vv)
        cat = e.one(OpKind.NLP_CONCAT_HEADS, pre + "attn.concat_heads", (attn,), DRAM)
        e.free(attn)
        cat_tiles = e.view(cat, (1, tiles, mm, width // ndev), pre + "attn.concat_tiles")
        out = self.linear(pre + "attn.wo", cat_tiles, b.wo, mm, 3 * width // ndev, v.dim, False)
        out = e.view(out, (1, 1, s, v.dim), pre + "attn.out")
        e.free(cat)
        attn_out, held = self.all_reduce_vision(out, pre + "attn")
        if held:  # the attention returns: its locals go
            e.free(*held)
        e.free(h1)
        e.module = pre[:-1]
        if b.gate_attn is not None:
            attn_out = gate(e, attn_out, b.gate_attn, pre + "gate_attn")
        res = self.binary(OpKind.ADD, pre + "add_attn", x, attn_out)
        e.module = pre + "mlp"
        h2 = self.layer_norm(res, b.ln_2, pre + "ln_2")
        h2_tiles = e.view(h2, (1, tiles, mm, v.dim), pre + "ln_2.tiles")
        fc = self.linear(pre + "mlp.c_fc", h2_tiles, b.c_fc, mm, v.dim, v.hidden_dim // ndev, False, b.c_fc_bias)
        proj = self.linear(pre + "mlp.c_proj", fc, b.c_proj, mm, v.hidden_dim // ndev, v.dim, False)
        proj = e.view(proj, (1, 1, s, v.dim), pre + "mlp.c_proj_flat")
        reduced, held = self.all_reduce_vision(proj, pre + "mlp")
        mlp_out = self.binary(OpKind.ADD, pre + "mlp.bias", reduced, b.c_proj_bias)
        e.free(fc, reduced, *held)
        e.free(h2)
        e.module = pre[:-1]
        if b.gate_ffn is not None:
            mlp_out = gate(e, mlp_out, b.gate_ffn, pre + "gate_ffn")
        out = self.binary(OpKind.ADD, pre + "add_mlp", res, mlp_out)
        e.free(mlp_out, attn_out, res)
        return out

    def projection(self, x: int) -> int:
        """llama_cross_attention_transformer_vision.py and compute_vision_tokens_masks:
        the projection, the gather, the reshape to one row a token and the pad."""
        e, a, v = self.e, self.a, self.v
        ndev = a.num_devices
        e.module = "vision_model.vision_projection"
        w = self.mw.vision
        proj = self.linear("vision_model.vision_projection", x, w.projection, v.chunk_tokens, v.output_dim,
                           a.dim // ndev, False, w.projection_bias)
        e.free(x)
        if self.multichip:
            gathered = ttnn_all_gather(e, a, self.factory, proj, "vision_model.all_gather")
            e.free(proj)
            proj = gathered
        e.module = "vision_tokens"
        tokens = v.max_num_tiles * v.chunk_tokens
        flat = e.one(OpKind.RESHAPE, "vision_tokens.reshape", (proj,), DRAM,
                     ReshapeAttrs((1, 1, tokens, a.dim)))
        padded = e.one(OpKind.PAD, "vision_tokens.pad", (flat,), DRAM,
                       PadAttrs(((0, 0), (0, 0), (0, v.vision_tokens - tokens), (0, 0))))
        e.free(flat, proj)
        return padded

    # -- the text model -------------------------------------------------------------------
    def cross_block(self, x: int, b: CrossBlock, layer: int, vision_tokens: int, masks: tuple[int, int, int],
                    cross_table: int | None) -> int:
        """llama_cross_block.py forward, prefill (x stays the caller's)."""
        e = self.e
        index = sorted(self.mw.cross).index(layer)
        pre = f"text_model.cross_attention_layers.{index}."
        e.module = pre + "attention_norm"
        normed = self.distributed_norm(x, b.attention_norm, pre + "attention_norm")
        attn = self.cross_attention(normed, b, pre, vision_tokens, masks, cross_table)
        e.module = pre[:-1]
        attn_out = gate(e, attn, b.gate_attn, pre + "gate_attn")
        res = self.binary(OpKind.ADD, pre + "add_attention", x, attn_out)
        e.module = pre + "ffn_norm"
        f_in = self.distributed_norm(res, b.ffn_norm, pre + "ffn_norm")
        mlp_out = self.mlp(f_in, 0, (b.w1, b.w2, b.w3), pre + "feed_forward.")
        e.module = pre[:-1]
        masked = self.binary(OpKind.MULTIPLY, pre + "mask_11SD", mlp_out, masks[2])
        e.free(mlp_out)
        gated = gate(e, masked, b.gate_ffwd, pre + "gate_ffwd")
        out = self.binary(OpKind.ADD, pre + "add_mlp", res, gated)
        e.free(attn_out, res, gated)
        return out

    def cross_attention(self, x: int, b: CrossBlock, pre: str, vision_tokens: int, masks: tuple[int, int, int],
                        cross_table: int | None) -> int:
        """llama_cross_attention.py forward_prefill (x, the normed input, deallocated)."""
        e, a, s, v = self.e, self.a, self.seq, self.v
        ndev = a.num_devices
        e.module = pre + "attention"
        att = pre + "attention."
        xk, xv = self.xattn_kv(b, att, vision_tokens, cross_table)
        heads_w = a.n_heads * a.head_dim // ndev
        x_in = e.view(x, (1, s // MAX_MM_SEQ_LEN, MAX_MM_SEQ_LEN, a.dim), att + "x_blocks") \
            if s > MAX_MM_SEQ_LEN else x
        xq = self.linear(att + "wq", x_in, b.wq, min(s, MAX_MM_SEQ_LEN), a.dim, heads_w, s <= MAX_MM_SEQ_LEN)
        if s > MAX_MM_SEQ_LEN:
            xq = e.view(xq, (1, 1, s, heads_w), att + "xq")
        e.free(x)
        q, underscore = self.heads_of(xq, a.n_local_heads, att + "q_heads")
        qn = self.norm(q, b.q_norm, att + "q_norm", a.head_dim)
        e.free(q)
        attn = e.one(OpKind.SDPA, att + "sdpa", (qn, xk, xv, masks[0]), DRAM,
                     SdpaAttrs(is_causal=False, mask=tile((1, 1, s, v.vision_tokens), BFP4),
                               program_config=SDPAProgramConfig(self.grid, CHUNK, CHUNK)), SDPA_COMPUTE)
        masked = self.binary(OpKind.MULTIPLY, att + "mask_1NSH", attn, masks[1])
        e.free(attn)
        cat = e.one(OpKind.NLP_CONCAT_HEADS, att + "concat_heads", (masked,), DRAM)
        e.free(masked)
        cat_in = e.view(cat, (1, s // MAX_MM_SEQ_LEN, MAX_MM_SEQ_LEN, heads_w), att + "concat_blocks") \
            if s > MAX_MM_SEQ_LEN else cat
        out = self.linear(att + "wo", cat_in, b.wo, min(s, MAX_MM_SEQ_LEN), a.dim // ndev, a.dim, False)
        if s > MAX_MM_SEQ_LEN:
            out = e.view(out, (1, 1, s, a.dim), att + "wo_out")
        e.free(cat)
        if self.multichip:
            out = self.reduce_scatter(out, att + "reduce_scatter")
        e.free(qn, xk, xv, underscore)
        return out

    def heads_of(self, x: int, heads: int, name: str) -> tuple[int, int]:
        """`q, _, _ = nlp_create_qkv_heads(x, x, num_heads=heads, num_kv_heads=heads // 2)`:
        Q's heads and the V half `_` still names (the caller frees it when `_` goes); the
        K half (`_` rebound) and x (rebound) dropped."""
        e = self.e
        q, k, v = e.op(OpKind.NLP_CREATE_QKV_HEADS, name, (x, x), DRAM, CreateHeadsAttrs(heads, heads // 2),
                       outputs=3)
        e.free(k, x)
        return q, v

    def xattn_kv(self, b: CrossBlock, att: str, vision_tokens: int, cross_table: int | None) -> tuple[int, int]:
        """compute_xattn_kv_cache: K and V of the vision tokens, written to the cache;
        returns the fresh bf16 K and V."""
        e, a, v = self.e, self.a, self.v
        ndev = a.num_devices
        tiles, mm, s = v.max_num_tiles, v.max_mm_seq, v.vision_tokens
        kv_w = a.n_kv_heads * a.head_dim // ndev
        vt = e.view(vision_tokens, (1, tiles, mm, a.dim), att + "vision_tokens")
        xk = self.linear(att + "wk", vt, b.wk, mm, a.dim, kv_w, False)
        xv = self.linear(att + "wv", vt, b.wv, mm, a.dim, kv_w, False)
        xk = e.view(xk, (1, 1, s, kv_w), att + "xk")
        xv = e.view(xv, (1, 1, s, kv_w), att + "xv")
        nkv = a.n_local_kv_heads
        underscore: tuple[int, ...] = ()
        if nkv > 1:  # one head: already [1, 1, S, D] (the code's reshape)
            xk, v_of_k = self.heads_of(xk, nkv, att + "xk_heads")
            xv, v_of_v = self.heads_of(xv, nkv, att + "xv_heads")
            e.free(v_of_k)  # `_` rebound by the second call
            underscore = (v_of_v,)
        kn = self.norm(xk, b.k_norm, att + "k_norm", a.head_dim)
        e.free(xk)
        xk = kn
        if cross_table is not None:
            table = row_major((1, -(-s // self.o.page_block_size)), DataType.INT32)
            for cache, t, n in ((b.keys, xk, "k"), (b.values, xv, "v")):
                cast = e.one(OpKind.TYPECAST, att + f"{n}_typecast", (t,), self.dram(BFP8))
                e.op(OpKind.PAGED_FILL_CACHE, att + f"paged_fill_cache_{n}", (cache, cast, cross_table), DRAM,
                     CacheAttrs(page_table=table), outputs=0)
                e.free(cast)
        else:
            memory = self.xattn_kv_memory(s)
            fills = []
            for cache, t, n in ((b.keys, xk, "k"), (b.values, xv, "v")):
                fill = e.one(OpKind.INTERLEAVED_TO_SHARDED, att + f"{n}_fill_sharded", (t,),
                             OutputRequest.of(memory))
                fills.append((cache, fill, n))
            for cache, fill, n in fills:
                e.op(OpKind.FILL_CACHE, att + f"fill_cache_{n}", (cache, fill), DRAM, CacheAttrs(), outputs=0)
            e.free(*(fill for _, fill, _ in fills))
        if underscore:
            e.free(*underscore)
        return xk, xv

    def xattn_kv_memory(self, seq: int) -> MemoryConfig:
        """XATTN_KV_PREFILL_MEM_CFG(seq): M = kv heads / devices x seq rows, L1
        HEIGHT_SHARDED on `find_grid(M / 32)` (rows, cols) as CoreGrid(y=cols, x=rows),
        shards (nearest_32(M / cores), head_dim)."""
        a = self.a
        m = a.n_local_kv_heads * seq
        cores_x, cores_y = find_grid(m // TILE)
        rows = -(-(m // (cores_x * cores_y)) // TILE) * TILE
        grid = CoreRange((0, 0), (cores_x - 1, cores_y - 1))
        return MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED, ShardSpec(grid, (rows, a.head_dim)))

    def lm_head_mllama(self, x: int) -> int:
        """llama_cross_attention_transformer_text.py forward's end and ttnn_prefill_forward:
        the last 32 rows, the norm, the LM head's splits (mllama_common.py)."""
        e, a, s = self.e, self.a, self.seq
        e.module = "text_model.norm"
        last = e.one(OpKind.SLICE, "text_model.last_token_rows", (x,), DRAM,
                     SliceAttrs((0, 0, s - TILE, 0), (1, 1, s, a.dim // a.num_devices)))
        e.free(x)
        normed = self.distributed_norm(last, self.mw.norm, "text_model.norm")
        e.free(last)
        e.module = "text_model.lm_head"
        logits = lm_head_splits(e, a, normed, self.mw.lm_head, self.factory)
        e.free(normed)  # the text model's `h` goes when it returns
        return logits


__all__ = ["DRAM_INTERLEAVED", "MllamaPrefill"]
