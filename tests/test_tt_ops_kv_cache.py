"""KV-cache writes (ops/tt_kv_cache.py): fill_cache, paged_fill_cache and
paged_update_cache write in place (no output) with their factories' circular buffers."""

from __future__ import annotations

from tt_ops_support import DRAM, MLIR, height_sharded, row_major, tile

from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, MathFidelity, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_kv_cache import CacheAttrs
from tileplan.targets.tenstorrent.tiles import DataType

BFP8 = DataType.BFLOAT8_B
FP16_ACC = ComputeConfig(MathFidelity.HIFI4, True, False, False)


def test_update_cache_worked_example() -> None:
    """Llama-3.1-8B's K of one user into a bfp8 paged cache, Float16_b intermediates:
    8 x 1,088 + 8 x 2,048 + 8 x 2,048 + 4 x 1,088 = 45,824 B, the int32 position tile
    (4,096 B) and the page table's row (2,048 blocks of 4 B)."""
    cache = tile((2048, 8, 32, 128), DRAM, BFP8)
    x = tile((1, 1, 32, 128), height_sharded(1, 8, 8, (32, 128)))
    positions = tile((1, 32), DRAM, DataType.INT32)
    table = row_major((1, 2048), DRAM, DataType.INT32)
    plan = plan_op(OpKind.PAGED_UPDATE_CACHE, OpRequest((cache, x, positions, table), OutputRequest.of(DRAM), MLIR,
                                                        FP16_ACC), CacheAttrs(page_table=table, positions=positions))
    assert plan.outputs == () and plan.buffers == ()
    assert plan.cb_peak == 45_824 + 4_096 + 8_192


def test_update_cache_fp32_accumulation_doubles_the_intermediates() -> None:
    cache = tile((1, 8, 1024, 128), DRAM, BFP8)
    x = tile((1, 1, 32, 128), height_sharded(1, 8, 8, (32, 128)))
    fp32 = ComputeConfig(MathFidelity.HIFI4, True, True, False)
    plan = plan_op(OpKind.PAGED_UPDATE_CACHE, OpRequest((cache, x), OutputRequest.of(DRAM), MLIR, fp32))
    assert plan.cb_peak == 8 * 1088 + 16 * 4096 + 4 * 1088


def test_paged_fill_cache_streams_two_rows_of_tiles_and_the_table_row() -> None:
    """A 4,096-token K [1, 8, 4096, 128] into the paged cache: c_0 2 Wt tiles and one
    aligned page-table row, on the cores of 8 x 128 tile rows (all 64)."""
    cache = tile((2048, 8, 32, 128), DRAM, BFP8)
    x = tile((1, 8, 4096, 128), DRAM)
    table = row_major((1, 2048), DRAM, DataType.INT32)
    plan = plan_op(OpKind.PAGED_FILL_CACHE, OpRequest((cache, x, table), OutputRequest.of(DRAM), MLIR),
                   CacheAttrs(page_table=table))
    assert plan.outputs == ()
    assert plan.cb_peak == 8 * 2048 + 8192
    assert plan.programs[0].cores.cores == 64


def test_fill_cache_of_an_interleaved_input_double_buffers_one_tile() -> None:
    cache = tile((1, 8, 8192, 128), DRAM, BFP8)
    x = tile((1, 8, 1024, 128), DRAM)
    plan = plan_op(OpKind.FILL_CACHE, OpRequest((cache, x), OutputRequest.of(DRAM), MLIR))
    assert plan.outputs == () and plan.cb_peak == 2 * 2048
