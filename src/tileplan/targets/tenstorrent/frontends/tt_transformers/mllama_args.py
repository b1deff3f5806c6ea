"""Llama-3.2-Vision (Mllama) in tt-transformers: the vision tower's sizes and the text
model's fusion schedule, as ModelArgs derives them (tt-metal models/tt_transformers/tt/
model_config.py @0039cbf0 `_set_vision_params`, `vision_chunk_ntok`, VISION_MAX_MM_SEQ;
multimodal/llama_vision_model.py `CrossAttentionTransformer`;
multimodal/llama_cross_attention_transformer_text.py `_init_fusion_schedule`;
docs/notes/MLLAMA.md and MLLAMA-VISION.md).

- The vision config: hidden 1,280, 16 heads of 80 (tt-transformers pads each head to
  96 = nearest_32(80) in the QKV and output weights), MLP 5,120, 32 local and 8 gated
  global layers, 560-pixel tiles of 14-pixel patches, at most 4 tiles an image, 7,680
  output features (the final layer and the local layers 3, 7, 15, 23, 30's inputs, which
  CrossAttentionTransformer asks for: `return_intermediate=[3, 7, 15, 23, 30]`).
- A tile is (560 / 14)^2 + 1 = 1,601 tokens (the class token first), padded to 1,632 =
  nearest_32 (VISION_MAX_MM_SEQ); an image is 4 x 1,632 = 6,528 vision tokens
  (`num_vision_tokens`), the cross-attention keys of every text layer.
- The aspect ratios an image of `max_num_tiles` tiles may take (h x w <= 4: 8 of them),
  one gated positional embedding and two tile embeddings each.
- The fusion schedule: the cross-attention blocks (text_config's `cross_attention_layers`,
  8 in the 11B: ModelArgs' `vision_num_cross_attention_layers`) run before text layers
  [3, 7, ..., 31] (`llama_layers[::-1][::k][:8][::-1]`, k = ceil(32 / 8)), HF's layers
  3, 8, ..., 38.

Worked example: VisionArgs.from_config(Llama-3.2-11B-Vision's vision_config) -> dim
1,280, padded_head_dim 96, chunk_tokens 1,601, max_mm_seq 1,632, vision_tokens 6,528,
aspect_ratios 8; fusion_schedule(32, 8) -> (3, 7, 11, 15, 19, 23, 27, 31).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.tiles import TILE

#: CrossAttentionTransformer's `return_intermediate`: the local layers whose inputs the
#: encoder keeps for the output's 5 x 1,280 extra features
RETURN_INTERMEDIATE = (3, 7, 15, 23, 30)


def nearest_32(n: int) -> int:
    return -(-n // TILE) * TILE


def _int(cfg: Mapping[str, Any], key: str) -> int:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"config.json vision_config.{key} {value!r}: expected a whole number >= 1 (Llama-3.2-Vision's "
                         "vision tower)")
    return value


@dataclass(frozen=True, slots=True)
class VisionArgs:
    """The vision tower's sizes (see the module docstring). Invariants: the head divides
    the width, the image splits into whole patches, the intermediates are local layers."""

    dim: int
    heads: int
    hidden_dim: int
    layers: int
    global_layers: int
    patch_size: int
    image_size: int
    max_num_tiles: int
    channels: int
    output_dim: int

    def __post_init__(self) -> None:
        if self.dim % self.heads:
            raise InputError(f"vision_config: hidden_size {self.dim} does not split into {self.heads} heads")
        if self.image_size % self.patch_size:
            raise InputError(f"vision_config: image_size {self.image_size} is not whole {self.patch_size}-pixel "
                             "patches")
        if max(RETURN_INTERMEDIATE) >= self.layers:
            raise InputError(f"vision_config: {self.layers} layers; tt-transformers keeps the inputs of layers "
                             f"{list(RETURN_INTERMEDIATE)}")
        if self.output_dim != self.dim * (1 + len(RETURN_INTERMEDIATE)):
            raise InputError(f"vision_config: vision_output_dim {self.output_dim}: tt-transformers concatenates the "
                             f"final layer and {len(RETURN_INTERMEDIATE)} intermediates of {self.dim} "
                             f"({self.dim * (1 + len(RETURN_INTERMEDIATE))})")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> "VisionArgs":
        if not isinstance(cfg, Mapping):
            raise InputError("config.json has no vision_config object: expected Llama-3.2-Vision's config.json")
        return cls(dim=_int(cfg, "hidden_size"), heads=_int(cfg, "attention_heads"),
                   hidden_dim=_int(cfg, "intermediate_size"), layers=_int(cfg, "num_hidden_layers"),
                   global_layers=_int(cfg, "num_global_layers"), patch_size=_int(cfg, "patch_size"),
                   image_size=_int(cfg, "image_size"), max_num_tiles=_int(cfg, "max_num_tiles"),
                   channels=_int(cfg, "num_channels"), output_dim=_int(cfg, "vision_output_dim"))

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    @property
    def padded_head_dim(self) -> int:
        """The QKV and output weights' head width (`nearest_32(vision_head_dim)`)."""
        return nearest_32(self.head_dim)

    @property
    def patches(self) -> int:
        """Patches a tile: (image / patch)^2."""
        return (self.image_size // self.patch_size) ** 2

    @property
    def patch_features(self) -> int:
        """A patch unfolded (channels x patch^2), padded to whole tiles by the conv's
        host unfold (llama_conv2d_patch.py: 588 -> 608)."""
        return nearest_32(self.channels * self.patch_size ** 2)

    @property
    def chunk_tokens(self) -> int:
        """`vision_chunk_ntok`: a tile's patches and its class token."""
        return self.patches + 1

    @property
    def max_mm_seq(self) -> int:
        """VISION_MAX_MM_SEQ = nearest_32(vision_chunk_ntok)."""
        return nearest_32(self.chunk_tokens)

    @property
    def vision_tokens(self) -> int:
        """`num_vision_tokens`: max_num_tiles x VISION_MAX_MM_SEQ."""
        return self.max_num_tiles * self.max_mm_seq

    @property
    def aspect_ratios(self) -> int:
        """Aspect ratios (h, w) with h x w <= max_num_tiles (the embeddings' first axis)."""
        n = self.max_num_tiles
        return sum(1 for h in range(1, n + 1) for w in range(1, n + 1) if h * w <= n)


def fusion_schedule(n_layers: int, cross_layers: int) -> tuple[int, ...]:
    """`_init_fusion_schedule`: the text layers a cross-attention block runs before."""
    layers = list(range(n_layers))
    k = math.ceil(n_layers / cross_layers)
    return tuple(layers[::-1][::k][:cross_layers][::-1])


__all__ = ["RETURN_INTERMEDIATE", "VisionArgs", "fusion_schedule", "nearest_32"]
