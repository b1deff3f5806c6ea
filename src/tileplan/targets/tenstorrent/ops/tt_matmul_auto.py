"""The program config tt-metal chooses for a matmul given none: a port of
matmul_program_config.cpp's `generate_matmul_program_config` and the functions it calls
(see tt_matmul_config for the version read).

Worked example (H2, tt-mlir OpModel): 2048 x 2048 x 2048 bf16, a in L1, nothing
sharded, an 8 x 8 grid: `create_simple_matmul_program_config` finds per-core 16 x 16
fits (in0 64 + in1 64 + out 256 + interm 256 tiles, 1,310,720 B < max_l1_space), so 4 x 4
blocks on a 4 x 4 core range: a 2-D multicast config, per_core 16 x 16, in0_block_w 2.
"""

from __future__ import annotations

import math

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout, ShardOrientation
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, OpTarget, OutputRequest, ceil_div
from tileplan.targets.tenstorrent.ops.tt_matmul_config import (
    MatmulMultiCoreProgramConfig,
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
    MatmulProgramConfig,
    MatmulShapes,
    estimated_cb_bytes,
    interm_tile_bytes,
    is_narrow_shape,
    matmul_subblock,
    multi_dim_per_core_factor,
    per_core_factor,
    subblock_sizes,
)
from tileplan.targets.tenstorrent.tiles import TILE, DataType


def _interm(compute: ComputeConfig, out_dtype: DataType) -> int:
    return interm_tile_bytes(compute, out_dtype)


def mcast_1d_config(s: MatmulShapes, target: OpTarget, compute: ComputeConfig, out_dtype: DataType,
                    fuse_batch: bool, mcast_in0: bool, out_sharded: bool,
                    grid: tuple[int, int] | None = None) -> MatmulMultiCoreReuseMultiCast1DProgramConfig:
    """`get_mcast_1d_config`: mcast_in0 keeps all of M on a core and splits N over the
    grid's cores (else the reverse); in0_block_w 2 when K is even; the block from the
    fit search; subblocks from the table with the sharded-output constraint."""
    gx, gy = grid or target.grid
    m_tiles = s.m_dim(fuse_batch)
    cores = gx * gy
    if mcast_in0:
        per_core_M, per_core_N = m_tiles, ceil_div(ceil_div(s.Nt * TILE, cores), TILE)
    else:
        per_core_M, per_core_N = ceil_div(ceil_div(m_tiles * TILE, cores), TILE), s.Nt
    in0_block_w = 2 if s.Kt % 2 == 0 else 1
    bh, bw, _ = multi_dim_per_core_factor(s, per_core_M, per_core_N, in0_block_w, _interm(compute, out_dtype),
                                          target, adjust_in0_block_w=False)
    sh, sw = matmul_subblock(bh, bw, out_sharded and mcast_in0, out_sharded and not mcast_in0,
                             compute.fp32_dest_acc_en)
    return MatmulMultiCoreReuseMultiCast1DProgramConfig((gx, gy), in0_block_w, sh, sw, per_core_M, per_core_N,
                                                        fuse_batch, mcast_in0, bh, bw)


def systolic_1d_config(s: MatmulShapes, target: OpTarget, compute: ComputeConfig, out_dtype: DataType,
                       grid: tuple[int, int], a_layout: MemoryLayout) -> MatmulMultiCoreReuseMultiCast1DProgramConfig:
    """`create_matmul_1d_systolic_array_program_config`: tall (more M than N tiles, or a
    height-sharded a) splits M over the cores and multicasts in1, else N and in0;
    in0_block_w = ceil(K / cores) shrunk to a divisor of K."""
    if s.batch_b != 1:
        raise InputError("matmul: b cannot be batched for the 1-D systolic config")
    bm = s.batch_a * s.Mt
    cores = grid[0] * grid[1]
    tall = bm > s.Nt
    if a_layout is MemoryLayout.HEIGHT_SHARDED:
        tall = True
    elif a_layout is MemoryLayout.WIDTH_SHARDED:
        tall = False
    k = ceil_div(s.Kt, cores)
    if tall:
        m_pc, n_pc = ceil_div(bm, cores), s.Nt
    else:
        m_pc, n_pc = bm, ceil_div(s.Nt, cores)
    while s.Kt % k:
        k -= 1
    bh, bw, _ = multi_dim_per_core_factor(s, m_pc, n_pc, k, _interm(compute, out_dtype), target, False)
    sh, sw = subblock_sizes(bh, bw, compute.fp32_dest_acc_en)
    return MatmulMultiCoreReuseMultiCast1DProgramConfig(grid, k, sh, sw, m_pc, n_pc, True, not tall, bh, bw)


def simple_config(s: MatmulShapes, out: OutputRequest, target: OpTarget, compute: ComputeConfig,
                  out_dtype: DataType, grid: tuple[int, int]) -> MatmulProgramConfig:
    """`create_simple_matmul_program_config` (a not sharded, no user grid)."""
    gx, gy = grid
    a_mem, b_mem = s.a.memory, s.b.memory
    all_interleaved = not a_mem.layout.sharded and not out.sharded and not b_mem.layout.sharded
    all_dram = a_mem.buffer_type is b_mem.buffer_type is out.buffer_type is BufferType.DRAM
    all_dram_interleaved = all_dram and all_interleaved
    if s.batch_a == 1 and s.batch_b > 1 and all_interleaved:
        return mcast_1d_config(s, target, compute, out_dtype, False, False, False, grid)
    height, width = s.Mt * TILE, s.Nt * TILE
    narrow = is_narrow_shape(height, width, all_dram)
    wide = tall = False
    if all_interleaved and narrow:
        wide = width > height
        tall = not wide
    in0_block_w = 2
    interm = _interm(compute, out_dtype)
    per_core_M = per_core_N = per_core_factor(s, in0_block_w, interm, target)
    nby = (s.Mt - 1) // per_core_M + 1
    nbx = (s.Nt - 1) // per_core_N + 1
    if (out.sharded or nby > 1 or nbx > 1) and s.Kt % in0_block_w != 0:
        in0_block_w = 1
    if all_dram_interleaved or (nbx * nby <= gx * gy and s.Kt % in0_block_w == 0):
        ry, rx = (0, 0)
        if not (nby == 1 and nbx == 1) and nby <= gy and nbx <= gx:
            rx, ry = nbx, nby
        use_1d_in0 = wide or (ry == 0 and out.sharded and out.layout is MemoryLayout.WIDTH_SHARDED)
        use_1d_in1 = tall or (ry == 0 and out.sharded and out.layout is MemoryLayout.HEIGHT_SHARDED)
        use_2d = all_dram_interleaved or (ry == 0 and out.sharded and out.layout is MemoryLayout.BLOCK_SHARDED)
        if ry == 1 or use_1d_in0:
            return mcast_1d_config(s, target, compute, out_dtype, False, True, False, None)
        if rx == 1 or use_1d_in1:
            return mcast_1d_config(s, target, compute, out_dtype, False, False, False, None)
        if (ry > 0 and nbx <= gx and nby <= gy) or use_2d:
            transpose_mcast = (a_mem.layout is MemoryLayout.BLOCK_SHARDED and a_mem.shard is not None
                               and a_mem.shard.orientation is ShardOrientation.COL_MAJOR)
            bh, bw = per_core_M, per_core_N
            sh, sw = 4, 2
            if sw != per_core_N:
                sh = 1
            if all_dram_interleaved:
                if not transpose_mcast:
                    in0_block_w = s.Kt // gx if s.Kt % gx == 0 else 1
                    per_core_M, per_core_N = ceil_div(s.Mt, gy), ceil_div(s.Nt, gx)
                else:
                    in0_block_w = s.Kt // gy if s.Kt % gx == 0 else 1
                    per_core_M, per_core_N = ceil_div(s.Mt, gx), ceil_div(s.Nt, gy)
                bh, bw, in0_block_w = multi_dim_per_core_factor(s, per_core_M, per_core_N, in0_block_w, interm,
                                                                target, adjust_in0_block_w=True)
                sh, sw = matmul_subblock(bh, bw, False, False, compute.fp32_dest_acc_en)
            return MatmulMultiCoreReuseMultiCastProgramConfig((gx, gy), in0_block_w, sh, sw, per_core_M, per_core_N,
                                                              bh, bw, transpose_mcast, fuse_batch=False)
    return MatmulMultiCoreProgramConfig()


def create_config(s: MatmulShapes, out: OutputRequest, target: OpTarget, compute: ComputeConfig,
                  out_dtype: DataType, user_grid: tuple[int, int] | None) -> MatmulProgramConfig:
    """`create_matmul_program_config` (a user grid, or reached from the sharded path)."""
    grid = target.grid
    if user_grid is not None and user_grid[0] <= grid[0] and user_grid[1] <= grid[1]:
        grid = user_grid
    fp32 = compute.fp32_dest_acc_en
    a_layout = s.a.memory.layout
    m_size, k_size, n_size = s.Mt * TILE, s.Kt * TILE, s.Nt * TILE
    if s.batch_b > 1:
        if s.batch_a == 1 and not s.a_sharded and not s.b.memory.layout.sharded:
            return mcast_1d_config(s, target, compute, out_dtype, False, False, False, grid)
        if not s.a_sharded and not s.b.memory.layout.sharded:
            m_pc, n_pc, k_pc = s.Mt, s.Nt, 1
            if not estimated_cb_bytes(s, m_pc, n_pc, k_pc, _interm(compute, out_dtype)) < target.max_l1_space:
                return simple_config(s, out, target, compute, out_dtype, grid)
        elif s.a_sharded:
            if a_layout is MemoryLayout.WIDTH_SHARDED:
                raise InputError("matmul: a batched b with a width-sharded a has no program config")
            sh_t, sw_t = s.a_shard_tiles
            m_pc, n_pc, k_pc = sh_t, s.Nt, sw_t
        else:
            shard = s.b.memory.shard
            assert shard is not None
            m_pc, n_pc, k_pc = s.Mt, shard.shape[1] // TILE, 1
        sh, sw = subblock_sizes(m_pc, n_pc, fp32)
        return MatmulMultiCoreReuseProgramConfig(grid, k_pc, sh, sw, m_pc, n_pc)
    height, width = s.batch_a * m_size, n_size
    any_within_tile = k_size <= TILE or m_size <= TILE or n_size <= TILE
    a_block = a_layout is MemoryLayout.BLOCK_SHARDED
    if (is_narrow_shape(height, width, False) or any_within_tile) and not a_block:
        return systolic_1d_config(s, target, compute, out_dtype, grid, a_layout)
    if not s.a_sharded:
        m_pc = math.ceil(s.batch_a * s.Mt / grid[1])
        n_pc = math.ceil(s.Nt / grid[0])
        k_pc = 4
        while s.Kt % k_pc:
            k_pc -= 1
    else:
        if not a_block:
            return systolic_1d_config(s, target, compute, out_dtype, grid, a_layout)
        sh_t, sw_t = s.a_shard_tiles
        m_pc = sh_t
        n_pc = (s.Nt * sw_t * TILE) // (s.Kt * TILE)
        k_pc = math.gcd(sw_t, s.Kt)
    n_pc = max(n_pc, 1)
    bh, bw, _ = multi_dim_per_core_factor(s, m_pc, n_pc, k_pc, _interm(compute, out_dtype), target, False)
    sh, sw = subblock_sizes(bh, bw, fp32)
    transpose_mcast = a_block and s.a.memory.shard is not None and \
        s.a.memory.shard.orientation is ShardOrientation.COL_MAJOR
    if sw != n_pc:
        sh = 1
    return MatmulMultiCoreReuseMultiCastProgramConfig(grid, k_pc, sh, sw, m_pc, n_pc, bh, bw, transpose_mcast)


def sharded_config(s: MatmulShapes, out: OutputRequest, target: OpTarget, compute: ComputeConfig,
                   out_dtype: DataType, batched: bool) -> MatmulProgramConfig:
    """`get_matmul_program_config` (a sharded, no user grid): width- or height-sharded
    a on more than one core gives a 1-D config (mcast in0 for width), block-sharded a
    on a 2-D grid a 2-D one; a batched matmul (`bmm`) the no-multicast reuse config."""
    shard = s.a.memory.shard
    assert shard is not None
    box = shard.bounding_box()
    grid = (box.width, box.height)
    fp32 = compute.fp32_dest_acc_en
    a_mem = s.a.memory
    sh_t, sw_t = s.a_shard_tiles
    if not batched:
        if s.b.memory.layout.sharded:
            raise InputError("matmul: multicast matmuls take b interleaved, found "
                             f"{s.b.memory.layout.value}")
        w_constraint = out.sharded
        if out.sharded and (a_mem.buffer_type is not out.buffer_type or a_mem.layout is not out.layout):
            raise InputError("matmul: a sharded output must match a's buffer type and memory layout")
        if a_mem.layout in (MemoryLayout.WIDTH_SHARDED, MemoryLayout.HEIGHT_SHARDED) and (grid[0] > 1 or grid[1] > 1):
            if shard.orientation is not ShardOrientation.ROW_MAJOR:
                raise InputError("matmul: a 1-D sharded a must be ROW_MAJOR")
            m = s.batch_a * s.Mt
            if a_mem.layout is MemoryLayout.WIDTH_SHARDED:
                mcast_in0, m_pc, n_pc, k = True, m, ceil_div(s.Nt, shard.num_cores), math.gcd(sw_t, s.Kt)
            else:
                mcast_in0, m_pc, n_pc, k = False, sh_t, s.Nt, s.Kt
            bh, bw, _ = multi_dim_per_core_factor(s, m_pc, n_pc, k, _interm(compute, out_dtype), target, False)
            sh, sw = matmul_subblock(bh, bw, False, w_constraint, fp32)
            return MatmulMultiCoreReuseMultiCast1DProgramConfig(grid, k, sh, sw, m_pc, n_pc, True, mcast_in0, bh, bw)
        if a_mem.layout is MemoryLayout.BLOCK_SHARDED and grid[0] > 1 and grid[1] > 1:
            transpose = shard.orientation is ShardOrientation.COL_MAJOR
            vx, vy = (grid[1], grid[0]) if transpose else grid
            m = s.batch_a * s.Mt
            x_match = vx == s.Kt // sw_t
            y_match = vy == m // sh_t
            if not (y_match or vy == ceil_div(m, sh_t)) or not (x_match or vx == ceil_div(s.Kt, sw_t)):
                raise InputError(f"matmul: block-sharded a's {vx} x {vy} cores do not match its shards")
            m_pc, n_pc = ceil_div(m, vy), ceil_div(s.Nt, vx)
            k = math.gcd(sw_t, s.Kt) if x_match else 1
            bh, bw, _ = multi_dim_per_core_factor(s, m_pc, n_pc, k, _interm(compute, out_dtype), target, False)
            sh, sw = matmul_subblock(bh, bw, False, w_constraint, fp32)
            return MatmulMultiCoreReuseMultiCastProgramConfig(grid, k, sh, sw, m_pc, n_pc, bh, bw, transpose)
    else:
        if a_mem.layout is MemoryLayout.WIDTH_SHARDED:
            raise InputError("matmul: a batched matmul cannot take a width-sharded a")
        m_pc, n_pc, k = sh_t, s.Nt, sw_t
        sh, sw = matmul_subblock(m_pc, n_pc, False, out.sharded, fp32)
        if s.batch_a > 1 and s.batch_b == 1:
            raise InputError("matmul: batch broadcasting is not supported by the reuse config")
        return MatmulMultiCoreReuseProgramConfig(grid, k, sh, sw, m_pc, n_pc)
    return create_config(s, out, target, compute, out_dtype, None)


def generate_config(s: MatmulShapes, out: OutputRequest, target: OpTarget, compute: ComputeConfig,
                    out_dtype: DataType, user_grid: tuple[int, int] | None = None,
                    batched: bool = False) -> MatmulProgramConfig:
    """`generate_matmul_program_config`: a user grid or an unsharded a takes
    `create_matmul_program_config` / `create_simple_matmul_program_config`, a sharded
    a `get_matmul_program_config`."""
    if user_grid is not None:
        return create_config(s, out, target, compute, out_dtype, user_grid)
    if not s.a_sharded:
        return simple_config(s, out, target, compute, out_dtype, target.grid)
    return sharded_config(s, out, target, compute, out_dtype, batched)
