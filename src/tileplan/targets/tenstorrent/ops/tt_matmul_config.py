"""Matmul program configs: the value types ttnn takes (and tt-transformers passes) and
the automatic choice tt-metal makes when none is given.

Ported from ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp
(`generate_matmul_program_config`, `create_simple_matmul_program_config`,
`get_matmul_program_config`, `create_matmul_program_config`,
`create_matmul_1d_systolic_array_program_config`, `get_mcast_1d_config`,
`get_per_core_factor`, `get_multi_dim_per_core_factor`, `get_subblock_sizes`,
`bmm_op_utils::get_matmul_subblock_params`) and
ttnn/cpp/ttnn/operations/matmul/device/utilities/matmul_utilities.cpp
(`get_estimated_size_of_cbs`, `estimate_interm_tile_size`, `get_max_l1_space`), read at
tt-metal 001cea9a; the 2026 block-sharded-output-on-a-1-D-grid path
(`block_sharded_on_1d_row_grid`) is left out, as the late-2025 tt-metal had it not.

The fit estimate the search compares against is `OpTarget.max_l1_space`: the lowest L1
address already occupied (or the L1 size) minus the allocator's base, so the config
chosen depends on what L1 holds when the matmul runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, OpTarget, padded_shape4
from tileplan.targets.tenstorrent.tiles import TILE, DataType

#: `SUBBLOCK_HW_CHOICES`: (h, w), largest product first
SUBBLOCK_HW_CHOICES: tuple[tuple[int, int], ...] = (
    (4, 2), (2, 4), (8, 1), (1, 8), (7, 1), (1, 7), (3, 2), (2, 3), (6, 1), (1, 6), (5, 1), (1, 5),
    (2, 2), (4, 1), (1, 4), (3, 1), (1, 3), (2, 1), (1, 2), (1, 1))
#: `MCAST_INPUT_BUFFERING_DEPTH` (matmul_utilities.hpp)
MCAST_INPUT_BUFFERING_DEPTH = 2
#: `NARROW_SHAPE_RATIO_THRESHOLD` (`is_narrow_shape`)
NARROW_SHAPE_RATIO_THRESHOLD = 8


@dataclass(frozen=True, slots=True)
class MatmulMultiCoreProgramConfig:
    """ttnn `MatmulMultiCoreProgramConfig`: no reuse, one output tile at a time."""


@dataclass(frozen=True, slots=True)
class MatmulMultiCoreReuseProgramConfig:
    """ttnn `MatmulMultiCoreReuseProgramConfig` (batched matmuls, no multicast)."""

    grid: tuple[int, int]
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    per_core_M: int
    per_core_N: int


@dataclass(frozen=True, slots=True)
class MatmulMultiCoreReuseMultiCastProgramConfig:
    """ttnn `MatmulMultiCoreReuseMultiCastProgramConfig` (2-D multicast). out_block_h/w
    default to per_core_M/N as ttnn's Python binding does."""

    grid: tuple[int, int]
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    per_core_M: int
    per_core_N: int
    out_block_h: int = 0
    out_block_w: int = 0
    transpose_mcast: bool = False
    fuse_batch: bool = True

    def __post_init__(self) -> None:
        _check_blocks(self)

    @property
    def block_h(self) -> int:
        return self.out_block_h or self.per_core_M

    @property
    def block_w(self) -> int:
        return self.out_block_w or self.per_core_N


@dataclass(frozen=True, slots=True)
class MatmulMultiCoreReuseMultiCast1DProgramConfig:
    """ttnn `MatmulMultiCoreReuseMultiCast1DProgramConfig` (1-D multicast of in0 over
    a row of cores, or of in1)."""

    grid: tuple[int, int]
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    per_core_M: int
    per_core_N: int
    fuse_batch: bool = True
    mcast_in0: bool = True
    out_block_h: int = 0
    out_block_w: int = 0

    def __post_init__(self) -> None:
        _check_blocks(self)

    @property
    def block_h(self) -> int:
        return self.out_block_h or self.per_core_M

    @property
    def block_w(self) -> int:
        return self.out_block_w or self.per_core_N


@dataclass(frozen=True, slots=True)
class MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
    """ttnn `MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig` (decode matmuls
    with width-sharded in0 and weights width-sharded over the DRAM banks)."""

    in0_block_w: int
    per_core_M: int
    per_core_N: int


MatmulProgramConfig = (MatmulMultiCoreProgramConfig | MatmulMultiCoreReuseProgramConfig
                       | MatmulMultiCoreReuseMultiCastProgramConfig | MatmulMultiCoreReuseMultiCast1DProgramConfig
                       | MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig)


def _check_blocks(cfg: "MatmulMultiCoreReuseMultiCastProgramConfig | MatmulMultiCoreReuseMultiCast1DProgramConfig",
                  ) -> None:
    """The checks of matmul `get_program_config` and the factories: positive sizes,
    subblocks dividing the block, blocks dividing the per-core work."""
    vals = (cfg.in0_block_w, cfg.out_subblock_h, cfg.out_subblock_w, cfg.per_core_M, cfg.per_core_N, *cfg.grid)
    if min(vals) < 1:
        raise InputError(f"matmul program config {cfg}: every size must be >= 1")
    bh, bw = cfg.out_block_h or cfg.per_core_M, cfg.out_block_w or cfg.per_core_N
    if bh % cfg.out_subblock_h or bw % cfg.out_subblock_w:
        raise InputError(f"matmul program config: out_block {bh}x{bw} must be a multiple of the subblock "
                         f"{cfg.out_subblock_h}x{cfg.out_subblock_w}")
    if cfg.per_core_M % bh or cfg.per_core_N % bw:
        raise InputError(f"matmul program config: per_core {cfg.per_core_M}x{cfg.per_core_N} must be a multiple "
                         f"of out_block {bh}x{bw}")


@dataclass(frozen=True, slots=True)
class MatmulShapes:
    """The matmul's dimensions in tiles (padded shapes; transposes applied), a's batch
    and b's, the tile bytes the estimate reads, and the operands' memory."""

    a: TensorSpec
    b: TensorSpec
    Mt: int
    Kt: int
    Nt: int
    batch_a: int
    batch_b: int
    transpose_a: bool = False
    bias_tile_bytes: int = 0
    a_dims: tuple[int, int, int, int] = field(default=(1, 1, 1, 1))

    @classmethod
    def of(cls, a: TensorSpec, b: TensorSpec, transpose_a: bool = False, transpose_b: bool = False,
           bias: TensorSpec | None = None) -> "MatmulShapes":
        pa, pb = padded_shape4(a), padded_shape4(b)
        m, k = (pa[3], pa[2]) if transpose_a else (pa[2], pa[3])
        kb, n = (pb[3], pb[2]) if transpose_b else (pb[2], pb[3])
        if k != kb:
            raise InputError(f"matmul: the k dimension of a ({k}) and of b ({kb}) differ")
        return cls(a, b, m // TILE, k // TILE, n // TILE, pa[0] * pa[1], pb[0] * pb[1], transpose_a,
                   bias.dtype.tile_bytes if bias is not None else 0, pa)

    def m_dim(self, fuse_batch: bool) -> int:
        """a's row tiles the program config covers: one batch's, or all batches' when the
        config fuses them (tt-metal matmul utilities `get_M_dim`)."""
        return self.Mt * (self.batch_a if fuse_batch else 1)

    @property
    def a_sharded(self) -> bool:
        return self.a.memory.layout.sharded

    @property
    def a_shard_tiles(self) -> tuple[int, int]:
        """(height, width) of a's shard in tiles."""
        shard = self.a.memory.shard
        assert shard is not None
        return shard.shape[0] // TILE, shard.shape[1] // TILE


def interm_tile_bytes(compute: ComputeConfig, out_dtype: DataType) -> int:
    """`estimate_interm_tile_size`: Float32 with fp32 accumulation, else the larger of a
    Float16_b tile (packer L1 accumulation) and the output tile."""
    if compute.fp32_dest_acc_en:
        return DataType.FLOAT32.tile_bytes
    return max(DataType.BFLOAT16.tile_bytes, out_dtype.tile_bytes)


def estimated_cb_bytes(s: MatmulShapes, per_core_M: int, per_core_N: int, in0_block_w: int, interm: int) -> int:
    """`get_estimated_size_of_cbs`: in0 and in1 double-buffered, output and interm of
    the whole block, bias a row, a sharded a's `per_core_M x shard width` and a
    transposed a's copy (the output estimated in a's tile size)."""
    in0_tile, in1_tile = s.a.dtype.tile_bytes, s.b.dtype.tile_bytes
    in0 = per_core_M * in0_block_w * MCAST_INPUT_BUFFERING_DEPTH * in0_tile
    in1 = per_core_N * in0_block_w * MCAST_INPUT_BUFFERING_DEPTH * in1_tile
    out = per_core_M * per_core_N * in0_tile
    in2 = per_core_M * (s.a_shard_tiles[1] if s.a_sharded else 0) * in0_tile
    transpose = (in2 if s.a_sharded else in0) if s.transpose_a else 0
    return in0 + in1 + out + per_core_M * per_core_N * interm + per_core_N * s.bias_tile_bytes + in2 + transpose


def per_core_factor(s: MatmulShapes, in0_block_w: int, interm: int, target: OpTarget) -> int:
    """`get_per_core_factor`: the largest of 16, 8, 4, 2 whose square block's estimate
    is below max_l1_space, else 1."""
    for f in (16, 8, 4, 2):
        if estimated_cb_bytes(s, f, f, in0_block_w, interm) < target.max_l1_space:
            return f
    return 1


def multi_dim_per_core_factor(s: MatmulShapes, per_core_M: int, per_core_N: int, in0_block_w: int, interm: int,
                              target: OpTarget, adjust_in0_block_w: bool) -> tuple[int, int, int]:
    """`get_multi_dim_per_core_factor`: the block itself when it fits; else divisor
    pairs (m, n) of (per_core_M, per_core_N), one per product keeping the most square,
    largest product first, with in0_block_w kept or (adjust) shrunk through its
    divisors; (1, 1, 1) when nothing fits."""
    space = target.max_l1_space
    if estimated_cb_bytes(s, per_core_M, per_core_N, in0_block_w, interm) < space:
        return per_core_M, per_core_N, in0_block_w
    m_factors = [per_core_M, 1] + [f for f in range(per_core_M // 2, 1, -1) if per_core_M % f == 0]
    n_factors = [per_core_N, 1] + [f for f in range(per_core_N // 2, 1, -1) if per_core_N % f == 0]
    factors: dict[int, tuple[int, int]] = {}
    for m in m_factors:
        for n in n_factors:
            ratio = max(m, n) / min(m, n)
            old = factors.get(m * n)
            if old is None or not max(old) / min(old) < ratio:
                factors[m * n] = (m, n)
    low_k = 1 if adjust_in0_block_w else in0_block_w
    for k in range(in0_block_w, low_k - 1, -1):
        if in0_block_w % k:
            continue
        for product in sorted(factors, reverse=True):
            m, n = factors[product]
            if estimated_cb_bytes(s, m, n, k, interm) < space:
                return m, n, k
    return 1, 1, 1


def matmul_subblock(block_h: int, block_w: int, h_equals_block: bool, w_equals_block: bool,
                    fp32_dest_acc_en: bool) -> tuple[int, int]:
    """`bmm_op_utils::get_matmul_subblock_params`: the first (h, w) of the table that
    divides the block, at most 4 tiles with fp32 accumulation, h = 1 and w = block_w (or
    w = 1 and h = block_h) when the output is sharded; (1, 1) when none."""
    if h_equals_block and w_equals_block:
        raise InputError("matmul subblock: only one of the h and w constraints may hold")
    for h, w in SUBBLOCK_HW_CHOICES:
        if fp32_dest_acc_en and h * w > 4:
            continue
        if w_equals_block and (w != block_w or h != 1):
            continue
        if h_equals_block and (h != block_h or w != 1):
            continue
        if block_h % h == 0 and block_w % w == 0:
            return h, w
    return 1, 1


def subblock_sizes(m_tiles: int, n_tiles: int, fp32_dest_acc_en: bool) -> tuple[int, int]:
    """`get_subblock_sizes`: the table read as (w, h) (so an 8 x 8 block gets h 2, w 4),
    at most 4 tiles with fp32 accumulation."""
    for w, h in SUBBLOCK_HW_CHOICES:
        if (h * w <= 4 or not fp32_dest_acc_en) and m_tiles % h == 0 and n_tiles % w == 0:
            return h, w
    raise InputError(f"matmul: no subblock divides a {m_tiles} x {n_tiles} block")


def is_narrow_shape(height: int, width: int, all_dram: bool) -> bool:
    """`is_narrow_shape`: aspect ratio above 8, or (all in DRAM) a side within a tile."""
    ratio = height // width if height > width else width // height
    if ratio > NARROW_SHAPE_RATIO_THRESHOLD:
        return True
    return all_dram and (height <= TILE or width <= TILE)
