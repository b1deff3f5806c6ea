"""tt-transformers' memory and program configs (tt-metal models/tt_transformers/tt/
model_config.py @0039cbf0, `ModelArgs.__init__` and its helpers), as values.

Prefill matmuls (2-D multicast, `matmul_config`): per_core_M = ceil(m / (32 x grid_y)),
per_core_N = ceil(n / (32 x grid_x)) unless given, out_subblock 1 x `get_out_subblock_w`
(the largest w <= 4 dividing per_core_N), in0_block_w the largest divisor <= 8 of
k / (32 x grid_y). `find_prefill_grid(8, k_tiles)` gives (8, the largest <= 8 dividing
k_tiles), used as (x, y). The rows are fixed: QKV at most 2,048 (per_core_M 8 from 2,048
on, the input reshaped to 2,048-row batches), WO 1,024, the MLP `prefill_len_cutoff`; so
the prefill circular buffers stop growing with the chunk past those lengths.

Decode matmuls (DRAM-sharded, `dram_matmul_config(m, k, n, cores)`): in0_block_w the
largest divisor <= 8 of k / (32 x cores), per_core_M = ceil(m / 32), per_core_N =
ceil(n / (32 x cores)); the activations width-sharded on `find_grid` / `find_grid_k_n`
grids (the core count dividing the tiles closest to 32 / the largest dividing both).

Worked example (Llama-3.1-8B, N150): WO prefill = matmul_config(1024, 4096, 4096,
(8, 8)): per_core_M 4, per_core_N 16 (given: ceil(4096 / 256)), subblock 1 x 4,
in0_block_w 8; FF1 = matmul_config(512, 4096, 14336, (8, 8), per_core_N 56): per_core_M 2.
"""

from __future__ import annotations

import math

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import MAX_QKV_MM_SEQ_LEN, ModelArgs
from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
)
from tileplan.targets.tenstorrent.ops.tt_matmul_config import (
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
)
from tileplan.targets.tenstorrent.ops.tt_ccl import Topology
from tileplan.targets.tenstorrent.ops.tt_norm import LayerNormShardedProgramConfig
from tileplan.targets.tenstorrent.ops.tt_sdpa import SDPAProgramConfig
from tileplan.targets.tenstorrent.tiles import TILE

#: the grids tt-transformers hard-codes (SDPA_PROGCFG, XQKV_PREFILL_PROGCFG, KV_PREFILL_MEM_CFG)
GRID_8X8 = (8, 8)
#: the fused all-gather matmul's core grid (8, 1) ("only supports a core grid of size
#: num_devices x 1")
AG_MATMUL_CORES = 8
#: WO_PREFILL_PROGCFG's n on a T3K's ring when dim / 8 divides it
RING_WO_N = 1024
#: `find_grid` / `find_grid_k_n` search at most 8 rows x 8 columns; find_grid aims at 32 cores
MAX_ROWS = MAX_COLS = 8
FIND_GRID_TARGET = 32


def find_largest_divisor(n: int, max_divisor: int = 8) -> int:
    """ModelArgs.find_largest_divisor (7 and 5 count, unlike tt-metal's find_max_divisor)."""
    for i in range(max_divisor, 0, -1):
        if n % i == 0:
            return i
    return 1


def get_out_subblock_w(per_core_n: int, out_subblock_h: int) -> int:
    """common.py `get_out_subblock_w`: the largest w <= 4 with w x h <= 4 dividing per_core_N."""
    w = 4
    while w > 1:
        if w * out_subblock_h <= 4 and per_core_n % w == 0:
            break
        w -= 1
    return w


def find_prefill_grid(row_tiles: int, col_tiles: int) -> tuple[int, int]:
    """ModelArgs.find_prefill_grid: (rows, cols), the largest <= 8 dividing each."""
    cols = next(i for i in range(MAX_COLS, 0, -1) if col_tiles % i == 0)
    rows = next(i for i in range(MAX_ROWS, 0, -1) if row_tiles % i == 0)
    return rows, cols


def find_grid(n_tiles: int) -> tuple[int, int]:
    """ModelArgs.find_grid: (rows, cols) of the core count dividing n_tiles closest to 32."""
    cores = sorted((k for k in range(1, MAX_ROWS * MAX_COLS + 1) if n_tiles % k == 0),
                   key=lambda k: abs(k - FIND_GRID_TARGET))
    for count in cores:
        for rows in range(1, MAX_ROWS + 1):
            if count % rows == 0 and count // rows <= MAX_COLS:
                return rows, count // rows
    raise InputError(f"Cannot find a grid configuration for {n_tiles} tiles (tt-transformers ModelArgs.find_grid)")


def find_grid_k_n(k_tiles: int, n_tiles: int) -> tuple[int, int]:
    """ModelArgs.find_grid_k_n: the largest core count <= 64 dividing both."""
    for count in sorted((c for c in range(1, MAX_ROWS * MAX_COLS + 1) if k_tiles % c == 0 and n_tiles % c == 0),
                        reverse=True):
        for rows in range(1, MAX_ROWS + 1):
            if count % rows == 0 and count // rows <= MAX_COLS:
                return rows, count // rows
    raise InputError(f"Cannot find a grid configuration such that both {k_tiles} and {n_tiles} tiles evenly divide "
                     "(tt-transformers ModelArgs.find_grid_k_n)")


def matmul_config(m: int, k: int, n: int, grid: tuple[int, int], in0_block_w: int | None = None,
                  fuse_batch: bool = False, per_core_m: int | None = None,
                  per_core_n: int | None = None) -> MatmulMultiCoreReuseMultiCastProgramConfig:
    """ModelArgs.matmul_config (`grid` as (x, y))."""
    pcm = per_core_m if per_core_m is not None else math.ceil(m / (TILE * grid[1]))
    pcn = per_core_n if per_core_n is not None else math.ceil(n / (TILE * grid[0]))
    if in0_block_w is None:
        if k % (TILE * grid[1]):
            raise InputError(f"matmul_config: input width {k} is not a multiple of 32 x {grid[1]} (tt-transformers "
                             "asserts 'Input width must be divisible by tile size times grid size')")
        in0_block_w = find_largest_divisor(k // (TILE * grid[1]))
    return MatmulMultiCoreReuseMultiCastProgramConfig(
        grid=grid, in0_block_w=in0_block_w, out_subblock_h=1, out_subblock_w=get_out_subblock_w(pcn, 1),
        per_core_M=pcm, per_core_N=pcn, transpose_mcast=False, fuse_batch=fuse_batch)


def dram_matmul_config(m: int, k: int, n: int, cores: int) -> MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
    """ModelArgs.dram_matmul_config."""
    return MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(
        in0_block_w=find_largest_divisor(k // (TILE * cores)), per_core_M=math.ceil(m / TILE),
        per_core_N=math.ceil(n / (TILE * cores)))


def sharded(layout: MemoryLayout, shape: tuple[int, int], grid: CoreRange | CoreRangeSet) -> MemoryConfig:
    """`ttnn.create_sharded_memory_config(shape, grid, strategy, ROW_MAJOR,
    use_height_and_width_as_shard_shape=True)`."""
    return MemoryConfig(BufferType.L1, layout, ShardSpec(grid, shape))


def grid_of(rows_cols: tuple[int, int]) -> CoreRange:
    """A CoreGrid(x=cols, y=rows) as the core range from (0, 0)."""
    rows, cols = rows_cols
    return CoreRange.grid(cols, rows)


def num_to_corerange(x: int) -> CoreRange:
    """model_config.py `num_to_corerange`: x < 8 cores in one row, else 8-core rows."""
    if not (x < 8 or x % 8 == 0):
        raise InputError(f"num_to_corerange({x}): expected fewer than 8 cores or a multiple of 8")
    nx = min(x, 8)
    return CoreRange.grid(nx, x // nx)


class Configs:
    """The configs of one model on one device at one batch (ModelArgs.model_config)."""

    def __init__(self, args: ModelArgs, batch: int) -> None:
        self.args = args
        self.rows = TILE * math.ceil(batch / TILE)  # tile_padded_batch_rows
        a = args
        self.w = a.dram_shard_grid_width
        self.residual_grid = grid_of(find_grid(a.dim // a.num_devices // TILE))
        self.attn_grid = grid_of(find_grid(a.dim // TILE))
        self.mlp_grid = grid_of(find_grid_k_n(a.dim // TILE, a.hidden_dim // a.num_devices // TILE))
        self.mlp2_grid = grid_of(find_grid_k_n(a.hidden_dim // a.num_devices // TILE, a.dim // TILE))
        x, y = a.lm_head_grid
        self.lm_head_grid = CoreRange.grid(x, y)

    # -- prefill ----------------------------------------------------------------------------
    def xqkv_prefill(self, seq: int) -> MatmulMultiCoreReuseMultiCastProgramConfig:
        """XQKV_PREFILL_PROGCFG."""
        a = self.args
        pcm = max(1, 8 if seq >= MAX_QKV_MM_SEQ_LEN else math.ceil(seq / TILE / 8))
        return MatmulMultiCoreReuseMultiCastProgramConfig(
            grid=GRID_8X8, in0_block_w=1, out_subblock_h=1, out_subblock_w=1, per_core_M=pcm,
            per_core_N=math.ceil(a.qkv_size / a.num_devices / TILE / self.w), transpose_mcast=False,
            fuse_batch=seq <= MAX_QKV_MM_SEQ_LEN)

    def wo_prefill(self, seq: int) -> MatmulMultiCoreReuseMultiCastProgramConfig:
        """WO_PREFILL_PROGCFG: k is one chip's heads x D (also under the fused all-gather,
        whose matmul then reads all the heads); n is 1,024 on a T3K's ring when dim / 8
        divides it, else dim; per_core_N over the DRAM banks unless wo is the fused
        path's interleaved weight (`dram_sharded_wo`)."""
        a = self.args
        k = a.n_heads * a.head_dim // a.num_devices
        share = a.dim // a.num_devices
        n = RING_WO_N if a.ccl_topology is Topology.RING and RING_WO_N % share == 0 else a.dim
        per_core_n = None if a.fused_all_gather_matmul else math.ceil(n / (TILE * self.w))
        return matmul_config(min(seq, 1024), k, n, find_prefill_grid(8, k // TILE), fuse_batch=seq <= 1024,
                             per_core_n=per_core_n)

    def w1_w3_prefill(self, seq: int) -> MatmulMultiCoreReuseMultiCastProgramConfig:
        """PREFILL_MLP_W1_W3_PRG_CONFIG."""
        a = self.args
        n = a.hidden_dim // a.num_devices
        return matmul_config(min(seq, a.prefill_len_cutoff), a.dim, n, find_prefill_grid(8, a.dim // TILE),
                             per_core_n=math.ceil(n / (TILE * self.w)))

    def w2_prefill(self, seq: int) -> MatmulMultiCoreReuseMultiCastProgramConfig:
        """PREFILL_MLP_W2_PRG_CONFIG (k is the whole hidden size, even split over devices)."""
        a = self.args
        return matmul_config(min(seq, a.prefill_len_cutoff), a.hidden_dim, a.dim,
                             find_prefill_grid(8, a.hidden_dim // TILE), per_core_n=math.ceil(a.dim / (TILE * self.w)))

    def sdpa_prefill(self, seq: int, chunk_start: int = 0) -> SDPAProgramConfig:
        """SDPA_PROGCFG: 256-row chunks from 2,048 on, else 64; a later chunk's start must be a
        multiple of them (min with its largest power-of-two divisor, tt-metal #35225)."""
        size = 256 if seq >= 2048 else 64
        if chunk_start:
            size = min(size, chunk_start & -chunk_start)
        return SDPAProgramConfig(GRID_8X8, size, size)

    def kv_prefill_memory(self, seq: int) -> MemoryConfig:
        """KV_PREFILL_MEM_CFG: K or V height-sharded over 8 x 8, ((kv / devices) x S / 64, D)."""
        a = self.args
        return sharded(MemoryLayout.HEIGHT_SHARDED, (a.n_local_kv_heads * seq // 64, a.head_dim),
                       CoreRange.grid(*GRID_8X8))

    def lm_head_input(self) -> MemoryConfig:
        """LM_HEAD_INPUT_MEMCFG."""
        cores = self.lm_head_grid.cores
        return sharded(MemoryLayout.WIDTH_SHARDED, (self.rows, TILE * math.ceil(self.args.dim // cores / TILE)),
                       self.lm_head_grid)

    def lm_head(self, split: int) -> MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
        """lm_head.py's program config of a split: dram_matmul_config(32, dim, split, cores)."""
        return dram_matmul_config(self.rows, self.args.dim, split, self.lm_head_grid.cores)

    # -- decode ---------------------------------------------------------------------------
    def decode_residual(self) -> MemoryConfig:
        """DECODE_RESIDUAL_MEMCFG: (rows, dim / cores / devices) on find_grid(dim / devices / 32)."""
        a = self.args
        return sharded(MemoryLayout.WIDTH_SHARDED,
                       (self.rows, a.dim // self.residual_grid.cores // a.num_devices), self.residual_grid)

    def attn_input(self) -> MemoryConfig:
        """SHARDED_ATTN_INPUT_MEMCFG."""
        return sharded(MemoryLayout.WIDTH_SHARDED, (self.rows, self.args.dim // self.attn_grid.cores),
                       self.attn_grid)

    def mlp_input(self) -> MemoryConfig:
        """SHARDED_MLP_INPUT_MEMCFG."""
        return sharded(MemoryLayout.WIDTH_SHARDED, (self.rows, self.args.dim // self.mlp_grid.cores), self.mlp_grid)

    def mlp2_input(self) -> MemoryConfig:
        """SHARDED_MLP2_INPUT_MEMCFG."""
        a = self.args
        return sharded(MemoryLayout.WIDTH_SHARDED, (self.rows, a.hidden_dim // a.num_devices // self.mlp2_grid.cores),
                       self.mlp2_grid)

    def scores(self, users: int) -> MemoryConfig:
        """SCORES_BATCHED_MM_OUTPUT_MEMCFG(B): height-sharded one user per core."""
        a = self.args
        return sharded(MemoryLayout.HEIGHT_SHARDED, (TILE * math.ceil(a.n_local_heads / TILE), a.head_dim),
                       num_to_corerange(users))

    def xqkv_decode(self) -> MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
        a = self.args
        return dram_matmul_config(self.rows, a.dim, a.qkv_size // a.num_devices, self.attn_grid.cores)

    def wo_decode(self) -> MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
        a = self.args
        return dram_matmul_config(self.rows, a.n_heads * a.head_dim // a.num_devices, a.dim, a.n_local_heads)

    def w1_w3_decode(self) -> MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
        a = self.args
        return dram_matmul_config(self.rows, a.dim, a.hidden_dim // a.num_devices, self.mlp_grid.cores)

    def w2_decode(self) -> MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
        a = self.args
        return dram_matmul_config(self.rows, a.hidden_dim // a.num_devices, a.dim, self.mlp2_grid.cores)

    def all_gather_matmul_memory(self) -> MemoryConfig:
        """ATTN_ALL_GATHER_MATMUL_OUTPUT_MEMCFG: width-sharded (rows, dim / devices) on the
        first 8 cores of row 0 (`num_to_core_range_set(8)`)."""
        a = self.args
        return sharded(MemoryLayout.WIDTH_SHARDED, (self.rows, a.dim // a.num_devices),
                       num_to_corerange(AG_MATMUL_CORES))

    def all_gather_matmul(self) -> MatmulMultiCoreReuseMultiCast1DProgramConfig:
        """ATTN_ALL_GATHER_MATMUL_PROGCFG: 1-D, in0 multicast over (8, 1), in0_block_w
        dim / 32 / 8, per_core_N dim / devices / 32 / 8."""
        a = self.args
        pcn = a.dim // a.num_devices // TILE // AG_MATMUL_CORES
        return MatmulMultiCoreReuseMultiCast1DProgramConfig(
            grid=(AG_MATMUL_CORES, 1), in0_block_w=a.dim // TILE // AG_MATMUL_CORES, out_subblock_h=1,
            out_subblock_w=get_out_subblock_w(pcn, 1), per_core_M=self.rows // TILE, per_core_N=pcn,
            fuse_batch=True, mcast_in0=True)

    def sdpa_decode(self) -> SDPAProgramConfig:
        """SDPA_DECODE_PROGCFG: grid 8 x 8, chunk sizes 0 (the factory picks)."""
        return SDPAProgramConfig(GRID_8X8, 0, 0)

    def norm(self, grid: CoreRange) -> LayerNormShardedProgramConfig:
        """create_sharded_norm_config(grid)."""
        block_w = self.args.dim // grid.cores // TILE
        sub = next(s for s in (4, 3, 2, 1) if block_w % s == 0)
        return LayerNormShardedProgramConfig((grid.width, grid.height), sub, self.rows // TILE, block_w)
