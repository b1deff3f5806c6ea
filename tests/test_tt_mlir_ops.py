"""The TTNN operation rules the tt-mlir frontend added (ops/tt_tm.py): ttnn.slice,
ttnn.repeat (tile and row-major paths), ttnn.repeat_interleave and ttnn.to_memory_config,
their circular buffers, outputs and intermediates against the factories' arithmetic."""

from __future__ import annotations

import pytest

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED, BufferType, CoreRangeSet, MemoryLayout, ShardSpec, TensorSpec)
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import BufferRole, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import PermuteAttrs, TransposeAttrs
from tileplan.targets.tenstorrent.ops.tt_tm import RepeatAttrs, RepeatInterleaveAttrs, SliceAttrs
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.tiles import DataType, Layout

from tt_mlir_support import n150


def spec(shape: tuple[int, ...], layout: Layout = Layout.TILE, dtype: DataType = DataType.BFLOAT16,
         memory=DRAM_INTERLEAVED) -> TensorSpec:
    return TensorSpec(shape, dtype, layout, memory)


DRAM_OUT = OutputRequest()


def plan(kind: OpKind, inputs: tuple[TensorSpec, ...], attrs: object = None, out: OutputRequest = DRAM_OUT):
    return plan_op(kind, OpRequest(inputs, out, op_target(n150()), None), attrs)


def test_slice_of_a_rotary_half_splits_its_tiles_and_holds_two_input_tiles():
    p = plan(OpKind.SLICE, (spec((1, 32, 128, 64)),), SliceAttrs((0, 0, 0, 32), (1, 32, 128, 64)))
    assert p.outputs[0].shape == (1, 32, 128, 32)
    (program,) = p.programs
    assert program.cb_bytes == 2 * 2048 and program.cores.cores == 72  # 128 output tiles over 72 cores
    assert p.output_bytes_per_core() == 0  # a DRAM output


def test_a_row_major_slice_sizes_its_cb_by_merged_reads():
    """slice_program_factory_rm.cpp: [1, 8, 4, 128] bf16 rows of 256 B (32-B aligned), 32
    rows over 32 cores (1 each, padded to 32: one 4,096-B read of 16 rows, so 2 reads and
    16 rows a barrier): c_0 = 16 x 2 x 256 = 8,192 B; a strided one is refused by name."""
    p = plan(OpKind.SLICE, (spec((1, 8, 32, 128), Layout.ROW_MAJOR),), SliceAttrs((0, 0, 0, 0), (1, 8, 4, 128)))
    assert p.outputs[0].shape == (1, 8, 4, 128) and p.outputs[0].layout is Layout.ROW_MAJOR
    (program,) = p.programs
    assert program.cores.cores == 32 and program.cb_bytes == 16 * 2 * 256
    with pytest.raises(InputError, match="strided row-major slice is not modelled"):
        plan(OpKind.SLICE, (spec((1, 64), Layout.ROW_MAJOR),), SliceAttrs((0, 0), (1, 32), (1, 2)))


def test_a_row_major_hc_transpose_is_a_row_invariant_permute():
    """transpose.cpp: an interleaved row-major (C, H) transpose is prim::permute {0, 2, 1,
    3}; permute_rm_program_factory.cpp MultiCoreRowInvariant: c_0 of 2 rows (256 B)."""
    p = plan(OpKind.TRANSPOSE, (spec((1, 8, 4, 128), Layout.ROW_MAJOR),), TransposeAttrs(1, 2))
    assert p.outputs[0].shape == (1, 4, 8, 128)
    (program,) = p.programs
    assert program.name == "PermuteDeviceOperation::MultiCoreRowInvariant" and program.cb_bytes == 2 * 256
    with pytest.raises(InputError, match="moves the last dimension"):
        plan(OpKind.PERMUTE, (spec((1, 8, 4, 128), Layout.ROW_MAJOR),), PermuteAttrs((0, 1, 3, 2)))


def test_tile_repeat_runs_one_codegen_program_per_repeated_dim_with_eight_pages():
    p = plan(OpKind.REPEAT, (spec((1, 8, 64, 64)),), RepeatAttrs((2, 4, 1, 1)))
    assert p.outputs[0].shape == (2, 32, 64, 64)
    assert [pr.cb_bytes for pr in p.programs] == [8 * 2048, 8 * 2048]
    roles = [(b.role, b.live) for b in p.buffers]
    assert roles == [(BufferRole.INTERMEDIATE, (0, 1)), (BufferRole.OUTPUT, (1, 1))]


def test_a_mask_row_repeats_through_row_major():
    """A decode mask [32, 1, 1, 128] over 12 heads: untilize, one higher-dim repeat (two CBs
    of 2 x 64 + 256 B), tilize."""
    p = plan(OpKind.REPEAT, (spec((32, 1, 1, 128)),), RepeatAttrs((1, 1, 12, 1)))
    assert [pr.name for pr in p.programs] == ["UntilizeMultiCoreProgramFactory", "RepeatProgramFactory",
                                              "TilizeMultiCoreInterleavedProgramFactory"]
    assert p.programs[1].cb_bytes == 2 * (2 * 64 + 128 * 2)
    assert p.outputs[0].shape == (32, 1, 12, 128) and p.outputs[0].layout is Layout.TILE


def test_repeat_interleave_is_the_repeat_of_an_inserted_unit_dimension():
    p = plan(OpKind.REPEAT_INTERLEAVE, (spec((1, 8, 128, 64)),), RepeatInterleaveAttrs(4, 1))
    direct = plan(OpKind.REPEAT, (spec((1, 8, 1, 128, 64)),), RepeatAttrs((1, 1, 4, 1, 1)))
    assert p.outputs[0].shape == (1, 32, 128, 64)
    assert p.cb_peak == direct.cb_peak and p.buffers[-1].bytes_per_bank == direct.buffers[-1].bytes_per_bank


def test_to_memory_config_copies_interleaved_and_shards_with_bound_cbs():
    """One rule for ttnn.to_memory_config (tt_sharding.py): an interleaved copy on the
    work's cores, an output CB only when the dtype changes; a move to shards binds the
    output CB to the shard and reads through `num_trids` scratch pages; back to DRAM
    binds the input CB; the same shard spec again is no program at all."""
    x = spec((1, 1, 256, 512))
    copy = plan(OpKind.TO_MEMORY_CONFIG, (x,), out=OutputRequest(BufferType.L1))
    assert copy.programs[0].cb_bytes == 2 * 2048 and copy.output_bytes_per_core() == 2048 * 2  # 128 tiles / 72
    shard = ShardSpec(CoreRangeSet.from_count(8, 8, 9), (32, 512))
    sharded = plan(OpKind.TO_MEMORY_CONFIG, (x,), out=OutputRequest(BufferType.L1, MemoryLayout.HEIGHT_SHARDED,
                                                                    shard))
    assert sharded.cb_peak == 4 * (2048 + 32) and sharded.output_bytes_per_core() == 16 * 2048
    back = plan(OpKind.TO_MEMORY_CONFIG, (sharded.outputs[0],), out=OutputRequest())
    assert back.cb_peak == 0 and back.outputs[0].memory == DRAM_INTERLEAVED
    cast = plan(OpKind.TO_MEMORY_CONFIG, (x,), out=OutputRequest(BufferType.L1, dtype=DataType.FLOAT32))
    assert cast.programs[0].cb_bytes == 2 * 2048 + 2 * 4096
    same = plan(OpKind.TO_MEMORY_CONFIG, (sharded.outputs[0],),
                out=OutputRequest(BufferType.L1, MemoryLayout.HEIGHT_SHARDED, shard))
    assert same.programs == ()
