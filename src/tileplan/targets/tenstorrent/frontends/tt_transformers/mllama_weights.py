"""What tt-transformers keeps on each chip for Llama-3.2-Vision (Mllama), in the order
its constructors allocate it (tt-metal models/tt_transformers/tt/multimodal/;
docs/notes/MLLAMA-VISION.md section 2, MLLAMA.md sections 2 and 4):

1. TT_CCL's semaphores (llama_vision_model.py `CrossAttentionTransformer.__init__`);
2. the vision model, bf16 (create_multimodal_model's default dtype), every tensor TILE
   and DRAM interleaved unless named: llama_vision_encoder.py (conv1's linear weight
   [1, 1, 608, 1280]; the class embedding [1, 1, 1, 1280] row-major; the positional
   embedding [1, 1601, 1280]; the gated positional embedding of each aspect ratio
   [8, 4, 1601, 1280] and its gate; ln_post and ln_pre, weight and bias [1, 32, 1280]
   each); the 32 local then 8 gated blocks (llama_image_block.py, llama_image_attention.py,
   llama_image_mlp.py: ln_1, wqkv [1280, 3 x 16 x 96 / devices] (heads padded 80 -> 96), wo
   [16 x 96 / devices, 1280], ln_2, c_fc [1280, 5120 / devices] and its bias, c_proj
   [5120 / devices, 1280] and its bias, the gated blocks' two gates [1, 1280]); the pre-
   and post-tile positional embeddings [8, 4, 32, 1280] and their gates
   (llama_tile_position_embedding.py); the projection [7680, 4096 / devices] and its bias
   (llama_cross_attention_transformer_vision.py);
3. the text model (llama_cross_attention_transformer_text.py `__init__`): the final norm,
   the LM head in 8 / devices splits [4096, 16032] bfp8 DRAM interleaved, RotarySetup,
   then each of the 32 decoder layers (decoder.py, as for the text models; unless vLLM
   allocates them, its unpaged bfp8 caches with it), each followed by its cross-attention
   block where the fusion schedule says (llama_cross_block.py, llama_cross_attention.py:
   wq [4096, 4096 / devices], wk and wv [4096, 1024 / devices], wo [4096 / devices, 4096],
   bfp8 DRAM interleaved ("TODO DRAM Shard the weights"); q and k norms; the attention
   norm; gate_attn [1, 4096 / devices] bf16; the MLP with decoder 0's precisions (mlp.py
   `layer_num = max(layer_num, 0)`); the MLP norm; gate_ffwd). The token embeddings stay
   on the host (torch.nn.Embedding).
4. The caches: the demo's cross-attention caches (`setup_cache`: 8 x K and V [batch,
   8 / devices, 6528, 128] bf16), or vLLM's one paged pool of 40 layers (32 decoder + 8
   cross-attention, the text model's `total_layer_idx`), K and V [blocks, 8 / devices,
   block, 128] bfp8 each (generator_vllm.py `allocate_vllm_kv_cache`).

Worked example: on an N300 the vision model is 1,039,704,576 B a chip and one
cross-attention block 118,218,752 B (with its MLP's padded DRAM shards).
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.frontends.tt_transformers.emit import Emit
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_args import VisionArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import DecodersPrecision
from tileplan.targets.tenstorrent.frontends.tt_transformers.weights import (
    Layer,
    ccl_semaphores,
    decoder_layer,
    mlp_weights,
    norm,
    norm_weight,
    rotary_setup,
    row_major,
    tile,
)
from tileplan.targets.tenstorrent.tiles import TILE, DataType

BF16, BFP8 = DataType.BFLOAT16, DataType.BFLOAT8_B
#: the LM head's splits over all devices ("Arbitrary value which allows whole-tile splits")
LM_HEAD_TOTAL_SPLITS = 8


@dataclass
class ImageBlock:
    """One block of the vision transformer (ids in the program)."""

    ln_1: tuple[int, int]
    wqkv: int
    wo: int
    ln_2: tuple[int, int]
    c_fc: int
    c_fc_bias: int
    c_proj: int
    c_proj_bias: int
    gate_attn: int | None = None
    gate_ffn: int | None = None


@dataclass
class VisionWeights:
    """The vision model's tensors."""

    conv1: int
    class_embedding: int
    positional_embedding: int
    gated_positional_embedding: int
    gated_positional_gate: int
    ln_post: tuple[int, int]
    ln_pre: tuple[int, int]
    local: list[ImageBlock]
    global_: list[ImageBlock]
    pre_tile: tuple[int, int]
    post_tile: tuple[int, int]
    projection: int
    projection_bias: int


@dataclass
class CrossBlock:
    """One cross-attention block's tensors (its caches: the demo's, or vLLM's slots)."""

    wq: int
    wk: int
    wv: int
    wo: int
    q_norm: int
    k_norm: int
    attention_norm: int
    gate_attn: int
    w1: int
    w2: int
    w3: int
    ffn_norm: int
    gate_ffwd: int
    keys: int = -1
    values: int = -1


@dataclass
class MllamaWeights:
    """Every persistent tensor of one chip."""

    vision: VisionWeights
    cos: int
    sin: int
    trans_decode: int
    trans_prefill: int
    layers: list[Layer]
    cross: dict[int, CrossBlock]
    norm: int
    lm_head: list[int]
    semaphores: list[int]


def upload_mllama_weights(e: Emit, a: ModelArgs, o: TtTransformersOptions, p: DecodersPrecision,
                          grid: tuple[int, int], banks: int) -> MllamaWeights:
    """The persistent tensors in construction order (see the module docstring)."""
    assert a.vision is not None
    sems = ccl_semaphores(e, grid)
    vision = _vision(e, a, a.vision)
    e.layer = None
    e.module = "text_model.norm"
    final_norm = norm(e, a, "text_model.norm")
    e.module = "text_model.lm_head"
    splits = LM_HEAD_TOTAL_SPLITS // a.num_devices
    lm = [e.upload(f"text_model.output.weight{i}", tile((a.dim, a.vocab_size // LM_HEAD_TOTAL_SPLITS), BFP8))
          for i in range(splits)]
    cos, sin, trans_decode, trans_prefill = rotary_setup(e, a, o, grid)
    layers: list[Layer] = []
    cross: dict[int, CrossBlock] = {}
    schedule = a.cross_schedule
    for i in range(a.n_layers):
        layers.append(decoder_layer(e, a, o, p, i, banks))
        if i in schedule:
            cross[i] = _cross_block(e, a, p, schedule.index(i), i, banks)
    e.layer = None
    if o.vllm:
        _vllm_caches(e, a, o, layers, cross)
    else:
        _cross_caches(e, a, o, cross)
    return MllamaWeights(vision, cos, sin, trans_decode, trans_prefill, layers, cross, final_norm, lm, sems)


def _vision(e: Emit, a: ModelArgs, v: VisionArgs) -> VisionWeights:
    """The vision model's weights (llama_vision_encoder.py and the projection)."""
    ndev = a.num_devices
    pre = "vision_model.vision_encoder."
    e.module = pre[:-1]
    conv1 = e.upload(pre + "conv1._linear_weight", tile((1, 1, v.patch_features, v.dim), BF16))
    cls = e.upload(pre + "class_embedding", row_major((1, 1, 1, v.dim), BF16))
    pos = e.upload(pre + "positional_embedding.positional_embedding", tile((1, v.chunk_tokens, v.dim), BF16))
    gated = e.upload(pre + "positional_embedding.padded_gated_positional_embedding",
                     tile((v.aspect_ratios, v.max_num_tiles, v.chunk_tokens, v.dim), BF16))
    gate = e.upload(pre + "positional_embedding.gated_positional_embedding_gate", tile((1, 1, 1), BF16))
    ln_post = _layer_norm(e, v, pre + "ln_post")
    ln_pre = _layer_norm(e, v, pre + "ln_pre")
    local = [_image_block(e, v, ndev, f"{pre}transformer.resblocks.{i}.", False) for i in range(v.layers)]
    global_ = [_image_block(e, v, ndev, f"{pre}global_transformer.resblocks.{i}.", True)
               for i in range(v.global_layers)]
    e.layer = None
    tiles = []
    for name in ("pre_tile_pos_embed", "post_tile_pos_embed"):
        e.module = pre + name
        emb = e.upload(pre + name + ".padded_embeddings", tile((v.aspect_ratios, v.max_num_tiles, TILE, v.dim), BF16))
        tiles.append((emb, e.upload(pre + name + ".gate", tile((1, 1), BF16))))
    e.module = "vision_model.vision_projection"
    proj = e.upload("vision_model.vision_projection_weight", tile((v.output_dim, a.dim // ndev), BF16))
    bias = e.upload("vision_model.vision_projection_bias", tile((1, a.dim // ndev), BF16))
    return VisionWeights(conv1, cls, pos, gated, gate, ln_post, ln_pre, local, global_, tiles[0], tiles[1], proj,
                         bias)


def _layer_norm(e: Emit, v: VisionArgs, name: str) -> tuple[int, int]:
    """llama_layernorm.py `TtLayerNorm`: weight and bias expanded to [1, 32, dim]."""
    spec = tile((1, TILE, v.dim), BF16)
    return e.upload(name + ".weight", spec), e.upload(name + ".bias", spec)


def _image_block(e: Emit, v: VisionArgs, ndev: int, pre: str, gated: bool) -> ImageBlock:
    """llama_image_block.py: ln_1, attention (wqkv, wo; no biases in Llama-3.2-Vision),
    ln_2, the MLP (c_fc and its bias, c_proj and its bias), the gates."""
    e.module = pre[:-1]
    heads_width = v.heads * v.padded_head_dim
    ln_1 = _layer_norm(e, v, pre + "ln_1")
    wqkv = e.upload(pre + "attn.wqkv", tile((v.dim, 3 * heads_width // ndev), BF16))
    wo = e.upload(pre + "attn.wo", tile((heads_width // ndev, v.dim), BF16))
    ln_2 = _layer_norm(e, v, pre + "ln_2")
    c_fc = e.upload(pre + "mlp.c_fc_weight", tile((v.dim, v.hidden_dim // ndev), BF16))
    c_fc_bias = e.upload(pre + "mlp.c_fc_bias", tile((1, v.hidden_dim // ndev), BF16))
    c_proj = e.upload(pre + "mlp.c_proj_weight", tile((v.hidden_dim // ndev, v.dim), BF16))
    c_proj_bias = e.upload(pre + "mlp.c_proj_bias", tile((v.dim,), BF16))
    block = ImageBlock(ln_1, wqkv, wo, ln_2, c_fc, c_fc_bias, c_proj, c_proj_bias)
    if gated:
        block.gate_attn = e.upload(pre + "gate_attn", tile((1, v.dim), BF16))
        block.gate_ffn = e.upload(pre + "gate_ffn", tile((1, v.dim), BF16))
    return block


def _cross_block(e: Emit, a: ModelArgs, p: DecodersPrecision, index: int, layer: int, banks: int) -> CrossBlock:
    """llama_cross_block.py's block before text layer `layer`, its weights in
    construction order (see the module docstring)."""
    ndev = a.num_devices
    e.layer = layer
    pre = f"text_model.cross_attention_layers.{index}."
    e.module = pre + "attention"
    heads = a.n_heads * a.head_dim
    kv = a.n_kv_heads * a.head_dim
    wq = e.upload(pre + "attention.wq", tile((a.dim, heads // ndev), BFP8))
    wk = e.upload(pre + "attention.wk", tile((a.dim, kv // ndev), BFP8))
    wv = e.upload(pre + "attention.wv", tile((a.dim, kv // ndev), BFP8))
    wo = e.upload(pre + "attention.wo", tile((heads // ndev, a.dim), BFP8))
    q_norm = e.upload(pre + "attention.q_norm.weight", norm_weight(a.head_dim))
    k_norm = e.upload(pre + "attention.k_norm.weight", norm_weight(a.head_dim))
    e.module = pre[:-1]
    attention_norm = norm(e, a, pre + "attention_norm")
    gate_attn = e.upload(pre + "gate_attn", tile((1, a.dim // ndev), BF16))
    w1, w2, w3 = mlp_weights(e, a, p, 0, pre, banks)
    e.module = pre[:-1]
    ffn_norm = norm(e, a, pre + "ffn_norm")
    gate_ffwd = e.upload(pre + "gate_ffwd", tile((1, a.dim // ndev), BF16))
    return CrossBlock(wq, wk, wv, wo, q_norm, k_norm, attention_norm, gate_attn, w1, w2, w3, ffn_norm, gate_ffwd)


def _cross_caches(e: Emit, a: ModelArgs, o: TtTransformersOptions, cross: dict[int, CrossBlock]) -> None:
    """`setup_cache(max_batch_size)`: each block's K and V [batch, kv / devices, 6528,
    128] bf16 (ShardTensorToMesh on the heads)."""
    assert a.vision is not None
    shape = (o.batch, a.n_local_kv_heads, a.vision.vision_tokens, a.head_dim)
    for index, (layer, block) in enumerate(sorted(cross.items())):
        e.layer = layer
        e.module = f"text_model.cross_attention_layers.{index}.attention"
        block.keys = e.upload(f"{e.module}.xattn_cache.k", tile(shape, BF16), Role.BUFFER)
        block.values = e.upload(f"{e.module}.xattn_cache.v", tile(shape, BF16), Role.BUFFER)
    e.layer = None


def _vllm_caches(e: Emit, a: ModelArgs, o: TtTransformersOptions, layers: list[Layer],
                 cross: dict[int, CrossBlock]) -> None:
    """vLLM's pool: one K and V [blocks, kv / devices, block, D] bfp8 per slot of the text
    model's `total_layer_idx` (a cross-attention block's slot before its layer's)."""
    shape = (o.max_num_blocks, a.n_local_kv_heads, o.page_block_size, a.head_dim)
    slot = 0
    for i, layer in enumerate(layers):
        e.layer = i
        if i in cross:
            e.module = f"kv_cache.{slot}"
            cross[i].keys = e.upload(f"kv_cache.{slot}.k", tile(shape, BFP8), Role.BUFFER)
            cross[i].values = e.upload(f"kv_cache.{slot}.v", tile(shape, BFP8), Role.BUFFER)
            slot += 1
        e.module = f"kv_cache.{slot}"
        layer.keys = e.upload(f"kv_cache.{slot}.k", tile(shape, BFP8), Role.BUFFER)
        layer.values = e.upload(f"kv_cache.{slot}.v", tile(shape, BFP8), Role.BUFFER)
        slot += 1
    e.layer = None


__all__ = ["CrossBlock", "ImageBlock", "MllamaWeights", "VisionWeights", "upload_mllama_weights"]
