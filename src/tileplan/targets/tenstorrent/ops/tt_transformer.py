"""The transformer head shuffles: nlp_concat_heads and split_query_key_value_and_split_heads.

- nlp_concat_heads (ttnn/cpp/ttnn/operations/experimental/transformer/nlp_concat_heads/
  device/nlp_concat_heads_program_factory.cpp): [B, heads, S, D] to [B, 1, S, heads x D];
  the input c_0 holds one output tile row (heads x D / 32 tiles), doubled when interleaved,
  the whole shard (bound) when sharded; a sharded output binds c_16.
  Check (tt-mlir OpModel): [2, 12, 1024, 64] bf16: 12 x 2 x 2 = 48 tiles = 98,304 B.
- split_query_key_value_and_split_heads with an interleaved input
  (ttnn/cpp/ttnn/operations/transformer/split_query_key_value_and_split_heads/
  split_query_key_value_and_split_heads.cpp calls ttnn.experimental.nlp_create_qkv_heads;
  nlp_create_qkv_heads_program_factory.cpp `Interleaved::create`): c_1 of 4 tiles; K
  transposed adds c_0 and c_16 of 4 tiles each (the transpose_wh kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRange, CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    cbuf,
    CircularBuffer,
    OpPlan,
    OpRequest,
    Program,
    output_buffers,
    padded_shape4,
    require,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, Layout

CONCAT_HEADS_SOURCE = ("ttnn/cpp/ttnn/operations/experimental/transformer/nlp_concat_heads/device/"
                       "nlp_concat_heads_program_factory.cpp")
CREATE_QKV_SOURCE = ("ttnn/cpp/ttnn/operations/experimental/transformer/nlp_create_qkv_heads/device/"
                     "nlp_create_qkv_heads_program_factory.cpp")
#: nlp_create_qkv_heads's quadruple-buffered micro blocks (`cb_num_tiles = 1 * 4`)
QKV_CB_TILES = 4


@dataclass(frozen=True, slots=True)
class SplitQkvAttrs:
    """split_query_key_value_and_split_heads arguments (a second input, when present,
    holds K and V)."""

    num_heads: int
    num_kv_heads: int | None = None
    transpose_key: bool = False


def plan_concat_heads(kind: OpKind, req: OpRequest, attrs: None = None) -> OpPlan:
    """nlp_concat_heads_program_factory.cpp `NLPConcatHeadsProgramFactory::create`."""
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE and len(x.shape) == 4, op, "nlp_concat_heads takes a 4-D TILE tensor")
    b, heads, s, d = x.shape
    dims = padded_shape4(x)
    per_tensor = dims[1] * dims[3] // TILE
    shard = x.memory.shard
    cores: CoreRange | CoreRangeSet
    cbs: list[CircularBuffer]
    if shard is not None:
        cores = shard.grid
        per_tensor = shard.shape[0] * shard.shape[1] // (TILE * TILE)
        cbs = [cbuf(0, "src0", per_tensor, x.dtype.tile_bytes, cores, globally_allocated=True)]
    else:
        cores = req.target.grid_range()
        cbs = [cbuf(0, "src0", per_tensor * 2, x.dtype.tile_bytes, cores)]
    out = TensorSpec((b, 1, s, heads * d), x.dtype, Layout.TILE, req.out.memory())
    if req.out.sharded:
        cbs.append(cbuf(16, "out", per_tensor, x.dtype.tile_bytes, cores, globally_allocated=True))
    program = Program("NLPConcatHeadsProgramFactory", CONCAT_HEADS_SOURCE, cores, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def plan_split_qkv(kind: OpKind, req: OpRequest, attrs: SplitQkvAttrs) -> OpPlan:
    """split_query_key_value_and_split_heads on an interleaved [B, S, 3 x hidden] input
    (or [B, S, hidden] plus [B, S, 2 x hidden] for K and V): three outputs
    [B, heads, S, head], K [B, kv heads, head, S] when transposed."""
    x = req.inputs[0]
    kv = req.inputs[1] if len(req.inputs) > 1 else None
    op = kind.value
    require(len(x.shape) == 3 and x.layout is Layout.TILE, op, "the input is a 3-D TILE tensor")
    require(not x.memory.layout.sharded, op, "a sharded input runs create_qkv_heads, not modelled")
    require(attrs.num_kv_heads is None, op, "separate KV heads run nlp_create_qkv_heads_falcon7b, not modelled")
    b, s, hidden = x.shape
    heads = attrs.num_heads
    if kv is None:
        require(hidden % (3 * heads) == 0, op, f"hidden {hidden} is not 3 x {heads} heads")
        head = hidden // (3 * heads)
    else:
        head = hidden // heads
    require(head % TILE == 0, op, f"the head size {head} must be a multiple of 32")
    memory = req.out.memory()
    q = TensorSpec((b, heads, s, head), x.dtype, Layout.TILE, memory)
    k = TensorSpec((b, heads, head, s) if attrs.transpose_key else (b, heads, s, head), x.dtype, Layout.TILE, memory)
    v = TensorSpec((b, heads, s, head), x.dtype, Layout.TILE, memory)
    cores = req.target.grid_range()
    cbs = [cbuf(1, "src1", QKV_CB_TILES, x.dtype.tile_bytes, cores)]
    if attrs.transpose_key:
        cbs += [cbuf(0, "src0", QKV_CB_TILES, x.dtype.tile_bytes, cores),
                cbuf(16, "out", QKV_CB_TILES, x.dtype.tile_bytes, cores)]
    program = Program("NlpCreateHeadsDeviceOperation::Interleaved", CREATE_QKV_SOURCE, cores, tuple(cbs))
    return OpPlan(op, (program,), (q, k, v), output_buffers((q, k, v), req.target, 0))
