"""rotary_embedding_llama (ops/tt_rotary.py) against its factories: the prefill
RotaryEmbeddingLlamaMultiCore (rotary_embedding_llama_multi_core_program_factory.cpp)
and the decode RotaryEmbeddingLlamaMultiCoreSharded."""

from __future__ import annotations

import pytest
from tt_ops_support import DRAM, MLIR, height_sharded, tile

from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_rotary import RotaryAttrs
from tileplan.targets.tenstorrent.tiles import DataType

TILE_BF16 = 2048


def prefill(heads: int, seq: int, head_dim: int = 128):
    x = tile((1, heads, seq, head_dim), DRAM)
    table = tile((1, 1, seq, head_dim), DRAM)
    trans = tile((1, 1, 32, 32), DRAM)
    return plan_op(OpKind.ROTARY_EMBEDDING_LLAMA, OpRequest((x, table, table, trans), OutputRequest.of(DRAM), MLIR))


def test_the_worked_example_reloads_cos_and_sin_per_row() -> None:
    """Llama-3.1-8B's Q of a 4,096-token prefill on 8 x 8: 128 tile rows over 64 cores
    = 2 rows of 32 heads > 8 -> reload: 8 + 8 + 8 + 1 + 4 + 4 + 4 + 8 tiles."""
    plan = prefill(32, 4096)
    assert plan.cb_peak == 45 * TILE_BF16 == 92_160
    assert plan.outputs[0].shape == (1, 32, 4096, 128)
    assert plan.programs[0].cores.cores == 64


def test_few_rows_keep_cos_and_sin_for_every_row() -> None:
    """One head of 128 rows: 4 tile rows over 64 cores -> 1 row a core, 1 x 1 <= 8: the
    input takes rows x 2 Wt and cos / sin 2 Wt x rows (here the same 8 tiles)."""
    plan = prefill(1, 128)
    wt = 4
    assert plan.cb_peak == (2 * wt * 3 + 1 + 3 * wt + 2 * wt) * TILE_BF16


def test_decode_binds_its_shards_and_keeps_three_intermediates() -> None:
    """Decode: x, cos, sin, trans_mat and the output are their shards; c_24..c_26 take Wt
    tiles each on the shard grid (8 users here)."""
    shard = height_sharded(8, 8, 8, (32, 128))
    x = tile((1, 8, 32, 128), shard)
    table = tile((1, 8, 32, 128), shard)
    trans = tile((1, 1, 8 * 32, 32), height_sharded(8, 8, 8, (32, 32)))
    plan = plan_op(OpKind.ROTARY_EMBEDDING_LLAMA, OpRequest((x, table, table, trans), OutputRequest.of(shard), MLIR),
                   RotaryAttrs(decode=True))
    assert plan.cb_peak == 3 * 4 * TILE_BF16
    assert plan.outputs[0].memory == x.memory


def test_cos_shorter_than_the_rows_is_refused() -> None:
    x = tile((1, 8, 256, 64), DRAM)
    table = tile((1, 1, 128, 64), DRAM)
    with pytest.raises(Exception, match="positions"):
        plan_op(OpKind.ROTARY_EMBEDDING_LLAMA, OpRequest((x, table, table, tile((1, 1, 32, 32), DRAM)),
                                                         OutputRequest.of(DRAM), MLIR))


def test_a_bfp8_output_sizes_the_output_cb_in_bfp8() -> None:
    x = tile((1, 32, 4096, 128), DRAM)
    table = tile((1, 1, 4096, 128), DRAM)
    plan = plan_op(OpKind.ROTARY_EMBEDDING_LLAMA,
                   OpRequest((x, table, table, tile((1, 1, 32, 32), DRAM)),
                             OutputRequest.of(DRAM, DataType.BFLOAT8_B), MLIR))
    assert plan.cb_peak == 37 * TILE_BF16 + 8 * 1088
