"""tt-transformers' head shuffles (ops/tt_heads.py): nlp_create_qkv_heads (prefill),
nlp_create_qkv_heads_decode and nlp_concat_heads_decode, against their factories'
output specs and circular buffers."""

from __future__ import annotations

import pytest
from tt_ops_support import DRAM, L1, MLIR, height_sharded, tile

from tileplan.errors import TileplanError
from tileplan.targets.tenstorrent.memory import MemoryLayout
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_heads import ConcatHeadsDecodeAttrs, CreateHeadsAttrs

TILE_BF16 = 2048


@pytest.mark.parametrize(("transpose", "cb"), [(False, 4 * TILE_BF16), (True, 12 * TILE_BF16)])
def test_create_heads_prefill_splits_the_fused_qkv(transpose: bool, cb: int) -> None:
    """Llama-3.1-8B's fused QKV of 1,024 rows (32 + 2 x 8 heads of 128): Q [1, 32, S, D],
    K and V [1, 8, S, D] (K [1, 8, D, S] transposed); c_1 of 4 tiles, a transposed K adds
    c_0 and c_16 of 4 tiles each."""
    x = tile((1, 1, 1024, 48 * 128), DRAM)
    plan = plan_op(OpKind.NLP_CREATE_QKV_HEADS, OpRequest((x,), OutputRequest.of(DRAM), MLIR),
                   CreateHeadsAttrs(32, 8, transpose_k=transpose))
    q, k, v = plan.outputs
    assert q.shape == (1, 32, 1024, 128) and v.shape == (1, 8, 1024, 128)
    assert k.shape == ((1, 8, 128, 1024) if transpose else (1, 8, 1024, 128))
    assert plan.cb_peak == cb


def test_create_heads_decode_shards_one_user_a_core() -> None:
    """32 users of Llama-3.1-8B: Q, K and V height-sharded on the first 32 cores, each
    shard (32 padded heads, 128): 4 tiles a core; every CB is bound to an output."""
    x = tile((1, 1, 32, 48 * 128), L1)
    plan = plan_op(OpKind.NLP_CREATE_QKV_HEADS_DECODE, OpRequest((x,), OutputRequest.of(L1), MLIR),
                   CreateHeadsAttrs(32, 8))
    q, k, _ = plan.outputs
    assert q.shape == (1, 32, 32, 128) and k.shape == (1, 32, 8, 128)
    assert q.memory.layout is MemoryLayout.HEIGHT_SHARDED and q.memory.shard is not None
    assert q.memory.shard.grid.cores == 32 and q.memory.shard.shape == (32, 128)
    assert plan.cb_peak == 0
    assert plan.output_bytes_per_core(0) == 4 * TILE_BF16


def test_create_heads_decode_takes_at_most_32_heads() -> None:
    x = tile((1, 1, 32, (40 + 16) * 128), L1)
    with pytest.raises(TileplanError, match="at most 32 heads"):
        plan_op(OpKind.NLP_CREATE_QKV_HEADS_DECODE, OpRequest((x,), OutputRequest.of(L1), MLIR),
                CreateHeadsAttrs(40, 8))


def test_concat_heads_decode_width_shards_on_one_core_a_head() -> None:
    """[1, 8 users, 32, 128] height-sharded to [1, 1, 32, 32 x 128] width-sharded on 32
    cores, shards (max(8, 32), 128)."""
    x = tile((1, 8, 32, 128), height_sharded(8, 8, 8, (32, 128)))
    plan = plan_op(OpKind.NLP_CONCAT_HEADS_DECODE, OpRequest((x,), OutputRequest.of(L1), MLIR),
                   ConcatHeadsDecodeAttrs(32))
    (out,) = plan.outputs
    assert out.shape == (1, 1, 32, 32 * 128)
    assert out.memory.layout is MemoryLayout.WIDTH_SHARDED and out.memory.shard is not None
    assert out.memory.shard.grid.cores == 32 and out.memory.shard.shape == (32, 128)
    assert plan.cb_peak == 0
