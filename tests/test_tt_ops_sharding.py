"""Moving tensors between memory configs and slicing (ops/tt_sharding.py):
interleaved_to_sharded, sharded_to_interleaved, to_memory_config and slice."""

from __future__ import annotations

from tt_ops_support import DRAM, MLIR, sharded, tile

from tileplan.targets.tenstorrent.memory import CoreRange, MemoryLayout
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_tm import SliceAttrs
from tileplan.targets.tenstorrent.tiles import DataType

WIDTH_32 = sharded(MemoryLayout.WIDTH_SHARDED, CoreRange.grid(8, 4), (32, 128))
X = tile((1, 1, 32, 4096), DRAM)


def test_interleaved_to_sharded_binds_the_output_and_keeps_a_scratch() -> None:
    """A decode residual [1, 1, 32, 4096] width-sharded on 32 cores (4 tiles a core): the
    output CB is the shard; the scratch c_1 is 4 pages of align(2,048 + 32, 32) B."""
    plan = plan_op(OpKind.INTERLEAVED_TO_SHARDED, OpRequest((X,), OutputRequest.of(WIDTH_32), MLIR))
    assert plan.cb_peak == 4 * 2080
    assert plan.output_bytes_per_core(0) == 4 * 2048


def test_interleaved_to_sharded_converting_adds_an_input_cb() -> None:
    plan = plan_op(OpKind.INTERLEAVED_TO_SHARDED,
                   OpRequest((X,), OutputRequest.of(WIDTH_32, DataType.BFLOAT8_B), MLIR))
    assert plan.cb_peak == 4 * 2048 + 4 * 2080
    assert plan.output_bytes_per_core(0) == 4 * 1088


def test_sharded_to_interleaved_binds_the_input() -> None:
    x = tile((1, 1, 32, 4096), WIDTH_32)
    plan = plan_op(OpKind.SHARDED_TO_INTERLEAVED, OpRequest((x,), OutputRequest.of(DRAM), MLIR))
    assert plan.cb_peak == 0
    converting = plan_op(OpKind.SHARDED_TO_INTERLEAVED,
                         OpRequest((x,), OutputRequest.of(DRAM, DataType.BFLOAT8_B), MLIR))
    assert converting.cb_peak == 4 * 1088


def test_to_memory_config_to_the_same_config_runs_nothing() -> None:
    x = tile((1, 1, 32, 4096), WIDTH_32)
    plan = plan_op(OpKind.TO_MEMORY_CONFIG, OpRequest((x,), OutputRequest.of(WIDTH_32), MLIR))
    assert plan.programs == () and plan.buffers == ()


def test_a_reshard_binds_the_new_shard() -> None:
    x = tile((1, 1, 32, 4096), WIDTH_32)
    width_16 = sharded(MemoryLayout.WIDTH_SHARDED, CoreRange.grid(8, 2), (32, 256))
    plan = plan_op(OpKind.TO_MEMORY_CONFIG, OpRequest((x,), OutputRequest.of(width_16), MLIR))
    assert plan.programs[0].name == "ReshardGenericFactory"
    assert plan.cb_peak == 0 and plan.output_bytes_per_core(0) == 8 * 2048


def test_slice_double_buffers_a_tile_on_the_output_tiles_cores() -> None:
    """The last 32 rows of a [1, 1, 128, 4096] tensor: 128 output tiles over 64 cores."""
    x = tile((1, 1, 128, 4096), DRAM)
    plan = plan_op(OpKind.SLICE, OpRequest((x,), OutputRequest.of(DRAM), MLIR),
                   SliceAttrs((0, 0, 96, 0), (1, 1, 128, 4096)))
    assert plan.outputs[0].shape == (1, 1, 32, 4096)
    assert plan.cb_peak == 2 * 2048 and plan.programs[0].cores.cores == 64
