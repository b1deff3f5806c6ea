"""What Llama-3.2-Vision's prefill and decode lowerings (mllama_prefill.py,
mllama_decode.py) share: the gates, the Linear `ttnn.all_gather` and the LM head's splits
(tt-metal models/tt_transformers/tt/multimodal/: llama_cross_block.py and
llama_image_block.py `x * tanh(gate)`; llama_cross_attention_transformer_text.py
`forward`'s end: one bf16 linear a split with CROSS_TRANSFORMER_TEXT_OUTPUT_PROGCFG(32,
1024) and SDPA_DECODE_COMPUTE_PROGCFG into DRAM, on a mesh `ttnn.all_gather(output, dim=3,
num_links=1, topology=ttnn.Topology.Linear)`, then `ttnn.concat(outputs, dim=-1)`).

Worked example: on an N300 the LM head is 4 linears [1, 1, 32, 16032] bf16, each gathered
to [1, 1, 32, 32064] (2,052,096 B), concatenated to [1, 1, 32, 128256] (8,208,384 B).
"""

from __future__ import annotations

from tileplan.targets.tenstorrent.frontends.tt_transformers.configs import matmul_config
from tileplan.targets.tenstorrent.frontends.tt_transformers.emit import Emit
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import SDPA_DECODE_DEFAULT
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_all_gather import AllGatherAttrs, AllGatherFactory
from tileplan.targets.tenstorrent.ops.tt_ccl import CclAttrs, Topology
from tileplan.targets.tenstorrent.ops.tt_data_movement import ConcatAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.tiles import TILE, DataType

DRAM = OutputRequest(BufferType.DRAM)
DRAM_BF16 = OutputRequest(BufferType.DRAM, dtype=DataType.BFLOAT16)
#: the matmuls' grid (ModelArgs.matmul_config's grid_size=(8, 8))
GRID = (8, 8)


def gate(e: Emit, x: int, weight: int, name: str) -> int:
    """`x = ttnn.mul(x, ttnn.tanh(gate))`: the tanh a temporary, x freed (rebound)."""
    t = e.one(OpKind.TANH, name + ".tanh", (weight,), DRAM)
    out = e.one(OpKind.MULTIPLY, name, (x, t), DRAM)
    e.free(t, x)
    return out


def linear_ccl(a: ModelArgs, dim: int) -> CclAttrs:
    """The vision tower's and the LM head's collectives pass topology=Linear (on a T3K too)."""
    return a.ccl(dim, Topology.LINEAR)


def ttnn_all_gather(e: Emit, a: ModelArgs, factory: AllGatherFactory | None, x: int, name: str) -> int:
    """ttnn.all_gather(x, dim=3, num_links=1, topology=Linear) on a mesh (the build's
    implementation: lower.py refuses a mesh without one)."""
    assert factory is not None
    return e.one(OpKind.ALL_GATHER, name, (x,), DRAM, AllGatherAttrs(linear_ccl(a, 3), factory, a.arch))


def lm_head_splits(e: Emit, a: ModelArgs, h: int, weights: list[int], factory: AllGatherFactory | None) -> int:
    """The LM head's linears on `h` (32 rows), gathered on a mesh and concatenated (the
    splits freed; `h` stays the caller's)."""
    split = a.vocab_size // len(weights) // a.num_devices
    cfg = matmul_config(TILE, a.dim, split, GRID, in0_block_w=1, fuse_batch=True)
    parts = []
    for i, weight in enumerate(weights):
        out = e.one(OpKind.LINEAR, f"text_model.output{i}", (h, weight), DRAM_BF16, MatmulAttrs(cfg),
                    SDPA_DECODE_DEFAULT)
        if a.num_devices > 1:
            gathered = ttnn_all_gather(e, a, factory, out, f"text_model.output{i}.all_gather")
            e.free(out)
            out = gathered
        parts.append(out)
    if len(parts) == 1:
        return parts[0]
    logits = e.one(OpKind.CONCAT, "text_model.concat", tuple(parts), DRAM, ConcatAttrs(-1))
    e.free(*parts)
    return logits


def row_major_logits(e: Emit, logits: int) -> int:
    """multimodal/llama_vision_model.py ttnn_prefill_forward / ttnn_decode_forward:
    `ttnn.to_layout(logits, ttnn.ROW_MAJOR_LAYOUT)` into DRAM (the logits' config; a row of
    4,008 tiles is too wide for L1: untilize's block factory, ops/tt_layout.py); the tiled
    logits freed."""
    rows = e.one(OpKind.TO_LAYOUT, "text_model.to_layout", (logits,), DRAM)
    e.free(logits)
    return rows


__all__ = ["DRAM_BF16", "gate", "linear_ccl", "lm_head_splits", "row_major_logits", "ttnn_all_gather"]
