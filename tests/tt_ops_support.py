"""The devices and tensors the TTNN operation tests (tests/test_tt_ops_*.py) plan on, as
the ground truth rows of TENSTORRENT-NOTES.md (h) ran them.

- N300 (H1, tt-metal test_graph_query_op_constraints.cpp @027519b): Wormhole n300,
  8x7 worker grid, 56 L1 banks, 12 DRAM banks, L1 1,499,136 B, base 103,712.
- E150 (H1): Grayskull e150, 12x9 grid, 128 L1 banks, 8 DRAM banks, L1 1 MiB.
- MLIR (H2, tt-mlir TestOpModelLib.cpp @78b9ce3): Wormhole with the fixture's 8x8 grid
  and 64 L1 banks.
- P150 (H3, tt-metal graph_l1_traces README): Blackhole p150b, 11x10 grid, 110 banks,
  first unreserved L1 address 111,616, 64-B DRAM alignment.
"""

from __future__ import annotations

from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardOrientation,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import Arch, OpPlan, OpTarget
from tileplan.targets.tenstorrent.tiles import DataType, Layout

N300 = OpTarget(Arch.WORMHOLE_B0, (8, 7), 56, 12, 1_499_136, 103_712)
E150 = OpTarget(Arch.GRAYSKULL, (12, 9), 128, 8, 1_048_576, 98_304)
MLIR = OpTarget(Arch.WORMHOLE_B0, (8, 8), 64, 12, 1_499_136, 103_712)
P150 = OpTarget(Arch.BLACKHOLE, (11, 10), 110, 8, 1_572_864, 111_616, dram_alignment=64)

BF16 = DataType.BFLOAT16
L1 = MemoryConfig(BufferType.L1)
DRAM = MemoryConfig(BufferType.DRAM)


def tile(shape: tuple[int, ...], memory: MemoryConfig = L1, dtype: DataType = BF16) -> TensorSpec:
    return TensorSpec(shape, dtype, Layout.TILE, memory)


def row_major(shape: tuple[int, ...], memory: MemoryConfig = L1, dtype: DataType = BF16) -> TensorSpec:
    return TensorSpec(shape, dtype, Layout.ROW_MAJOR, memory)


def sharded(layout: MemoryLayout, grid: CoreRange | CoreRangeSet, shard: tuple[int, int],
            orientation: ShardOrientation = ShardOrientation.ROW_MAJOR) -> MemoryConfig:
    return MemoryConfig(BufferType.L1, layout, ShardSpec(grid, shard, orientation))


def height_sharded(cores: int, grid_x: int, grid_y: int, shard: tuple[int, int]) -> MemoryConfig:
    """HEIGHT_SHARDED over the first `cores` cores of a grid_x x grid_y grid, row-wise."""
    return sharded(MemoryLayout.HEIGHT_SHARDED, CoreRangeSet.from_count(cores, grid_x, grid_y), shard)


def footprint(plan: OpPlan) -> tuple[int, int]:
    """(circular-buffer peak, output 0's bytes per core): the two numbers every row asserts."""
    return plan.cb_peak, plan.output_bytes_per_core(0)
