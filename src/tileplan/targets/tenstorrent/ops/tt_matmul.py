"""Matmul and linear: the program config (given, or tt-metal's automatic choice from
tt_matmul_auto), the circular buffers of the factory that config selects, and the
output spec.

Factories (ttnn/cpp/ttnn/operations/matmul/device/factory/):
- 2-D multicast, matmul_multicore_reuse_mcast_2d_program_factory.cpp
  (`create_program_mcast_in0_in1`): in0 c_0 = out_block_h x in0_block_w, in1 c_1 =
  out_block_w x in0_block_w, both doubled when B x (K / in0_block_w) > 1; a block-sharded
  in0 adds c_2 (per_core_M x shard width, bound) and the 64-B c_6; output c_4 of the out
  block (the whole shard, bound, when the output is sharded) shares its memory with the
  interm0 c_5 unless their formats differ or the sharded output's block is not the whole
  per-core M; bias c_3 = out_block_w tiles.
- 1-D multicast, matmul_multicore_reuse_mcast_1d_program_factory.cpp
  (`process_mcast_in0_program_and_create_override_variables`,
  `process_mcast_in1_program_and_create_override_variables`): as the 2-D, except that a
  locally sharded in1 is bound (per_core_N x its shard height), a sharded in0 with mcast
  in1 is bound to c_0 (whole per-core K) unless its shard holds several in0 blocks, and
  packer L1 accumulation starts at 2 blocks (mcast in0) or 3 (mcast in1).
- no multicast, matmul_multicore_reuse_optimized_program_factory.cpp: in0 and in1 blocks
  doubled (a sharded operand's whole share bound), output and interm of per_core_M x
  per_core_N.
- no reuse, matmul_multicore_program_factory.cpp: in0, in1 and output two tiles each.
On Blackhole an operand whose tile is not a multiple of 64 B adds a one-tile staging CB
(c_8 / c_9); a transposed-tile in0 adds c_10 of in0's size.

Read at the tt-metal versions of late 2025 and 2026 (the CB lists agree on the rows of
TENSTORRENT-NOTES.md (h)).
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryLayout,
    ShardOrientation,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import (
    cbuf,
    L1_ARRAY_BYTES,
    Arch,
    CircularBuffer,
    ComputeConfig,
    MathFidelity,
    OpPlan,
    OpRequest,
    OpTarget,
    OutputRequest,
    Program,
    ceil_div,
    output_buffers,
    require,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_matmul_auto import generate_config
from tileplan.targets.tenstorrent.ops.tt_matmul_dram import program_dram_sharded
from tileplan.targets.tenstorrent.ops.tt_matmul_config import (
    MatmulMultiCoreProgramConfig,
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
    MatmulProgramConfig,
    MatmulShapes,
)
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout

FACTORY_DIR = "ttnn/cpp/ttnn/operations/matmul/device/factory/"

#: the matmul default compute config (matmul_device_operation.cpp: LoFi, approximate,
#: no fp32 accumulation, no packer L1 accumulation)
MATMUL_DEFAULT_COMPUTE = ComputeConfig(MathFidelity.LOFI, True, False, False)


@dataclass(frozen=True, slots=True)
class MatmulAttrs:
    """ttnn.matmul / ttnn.linear arguments: a program config (None: tt-metal chooses),
    a user core grid, transposes, whether the bias input is present (linear's third
    input) and bmm (`user_run_batched`)."""

    program_config: MatmulProgramConfig | None = None
    core_grid: tuple[int, int] | None = None
    transpose_a: bool = False
    transpose_b: bool = False
    batched: bool = False


@dataclass(frozen=True, slots=True)
class _Formats:
    in0: int
    in1: int
    out: int
    interm: int
    bias: int
    same_out_interm: bool


def _formats(s: MatmulShapes, out_dtype: DataType, bias: TensorSpec | None, compute: ComputeConfig,
             packer_l1_acc_en: bool) -> _Formats:
    """The interm0 format: Float32 with fp32 accumulation, else Float16_b when the
    packer accumulates in L1, else the output's."""
    if compute.fp32_dest_acc_en:
        interm = DataType.FLOAT32
    elif packer_l1_acc_en:
        interm = DataType.BFLOAT16
    else:
        interm = out_dtype
    same = interm is out_dtype
    return _Formats(s.a.dtype.tile_bytes, s.b.dtype.tile_bytes, out_dtype.tile_bytes, interm.tile_bytes,
                    bias.dtype.tile_bytes if bias is not None else 0, same)


def _staging(target: OpTarget, f: _Formats, cores: CoreRange | CoreRangeSet) -> list[CircularBuffer]:
    """Blackhole's one-tile intermediate read CBs for tiles not a multiple of 64 B."""
    out = []
    if target.arch is Arch.BLACKHOLE:
        if f.in1 % 64:
            out.append(cbuf(9, "in1_intermediate", 1, f.in1, cores))
        if f.in0 % 64:
            out.append(cbuf(8, "in0_intermediate", 1, f.in0, cores))
    return out


def _out_interm(f: _Formats, out_tiles: int, block_tiles: int, out_sharded: bool, separate: bool,
                cores: CoreRange | CoreRangeSet) -> list[CircularBuffer]:
    """Output c_4 and interm0 c_5: shared memory (one CB) unless `separate`."""
    if separate:
        return [cbuf(5, "interm0", block_tiles, f.interm, cores),
                cbuf(4, "output", out_tiles, f.out, cores, globally_allocated=out_sharded)]
    return [cbuf(4, "output+interm0", out_tiles, f.out, cores, globally_allocated=out_sharded)]


def program_2d(cfg: MatmulMultiCoreReuseMultiCastProgramConfig, s: MatmulShapes, out_sharded: bool,
               out_dtype: DataType, bias: TensorSpec | None, compute: ComputeConfig, target: OpTarget) -> Program:
    """matmul_multicore_reuse_mcast_2d_program_factory.cpp `create_program_mcast_in0_in1`."""
    m, n = s.m_dim(cfg.fuse_batch), s.Nt
    b = 1 if cfg.fuse_batch else s.batch_a
    num_blocks = s.Kt // cfg.in0_block_w
    packer = compute.packer_l1_acc and ((bias is not None and num_blocks > 1) or num_blocks > 2)
    f = _formats(s, out_dtype, bias, compute, packer)
    bh, bw = cfg.block_h, cfg.block_w
    double = 2 if b * num_blocks > 1 else 1
    nbx, nby = (n - 1) // cfg.per_core_N + 1, (m - 1) // cfg.per_core_M + 1
    cols, rows = (nby, nbx) if cfg.transpose_mcast else (nbx, nby)
    a_layout = s.a.memory.layout
    if a_layout is MemoryLayout.BLOCK_SHARDED:
        box = s.a.memory.shard.bounding_box() if s.a.memory.shard is not None else None
        assert box is not None
        senders = box.height if cfg.transpose_mcast else box.width
        if cfg.transpose_mcast:
            rows = max(rows, senders)
        else:
            cols = max(cols, senders)
    cores = CoreRange((0, 0), (cols - 1, rows - 1))
    cbs = [cbuf(0, "in0", bh * cfg.in0_block_w * double, f.in0, cores,
                globally_allocated=a_layout is MemoryLayout.HEIGHT_SHARDED),
           cbuf(1, "in1", bw * cfg.in0_block_w * double, f.in1, cores,
                globally_allocated=s.b.memory.layout.sharded
                and s.b.memory.buffer_type is not BufferType.DRAM)]
    if a_layout is MemoryLayout.BLOCK_SHARDED:
        cbs.append(cbuf(2, "in2", cfg.per_core_M * s.a_shard_tiles[1], f.in0, cores, globally_allocated=True))
        cbs.append(cbuf(6, "l1_array", 1, L1_ARRAY_BYTES, cores))
    separate = (out_sharded and cfg.per_core_M != bh) or not f.same_out_interm
    out_tiles = cfg.per_core_M * cfg.per_core_N if out_sharded else bh * bw
    cbs += _out_interm(f, out_tiles, bh * bw, out_sharded, separate, cores)
    if bias is not None:
        cbs.append(cbuf(3, "bias", bw, f.bias, cores))
    cbs += _staging(target, f, cores)
    if s.transpose_a:
        cbs.append(cbuf(10, "in0_transposed", bh * cfg.in0_block_w * double, f.in0, cores))
    return Program("MatmulMultiCoreReuseMcast2DProgramFactory",
                   FACTORY_DIR + "matmul_multicore_reuse_mcast_2d_program_factory.cpp", cores, tuple(cbs))


def program_1d(cfg: MatmulMultiCoreReuseMultiCast1DProgramConfig, s: MatmulShapes, out_sharded: bool,
               out_dtype: DataType, bias: TensorSpec | None, compute: ComputeConfig, target: OpTarget) -> Program:
    """matmul_multicore_reuse_mcast_1d_program_factory.cpp, the mcast-in0 and mcast-in1
    programs."""
    m, n = s.m_dim(cfg.fuse_batch), s.Nt
    b = 1 if cfg.fuse_batch else s.batch_a
    num_blocks = s.Kt // cfg.in0_block_w
    bh, bw, k = cfg.block_h, cfg.block_w, cfg.in0_block_w
    in0_sharded = s.a.memory.layout.sharded
    in1_sharded = s.b.memory.layout.sharded and s.b.memory.buffer_type is not BufferType.DRAM
    if cfg.mcast_in0:
        packer = compute.packer_l1_acc and num_blocks > 1
    else:
        packer = compute.packer_l1_acc and ((bias is not None and num_blocks > 1) or num_blocks > 2)
    f = _formats(s, out_dtype, bias, compute, packer)
    double = 2 if b * num_blocks > 1 else 1
    blocks = ((m - 1) // cfg.per_core_M + 1) * ((n - 1) // cfg.per_core_N + 1)
    n_cores = blocks
    if cfg.mcast_in0 and in0_sharded and s.a.memory.shard is not None:
        n_cores = max(blocks, s.a.memory.shard.num_cores)
    cores = CoreRangeSet.from_count(n_cores, cfg.grid[0], cfg.grid[1], row_wise=True)
    cbs: list[CircularBuffer] = []
    if cfg.mcast_in0:
        cbs.append(cbuf(0, "in0", bh * k * double, f.in0, cores))
        if in1_sharded:
            shard = s.b.memory.shard
            assert shard is not None
            cbs.append(cbuf(1, "in1", cfg.per_core_N * (shard.shape[0] // TILE), f.in1, cores,
                            globally_allocated=True))
        else:
            cbs.append(cbuf(1, "in1", bw * k * double, f.in1, cores))
        if in0_sharded:
            cbs.append(cbuf(2, "in2", cfg.per_core_M * s.a_shard_tiles[1], f.in0, cores,
                            globally_allocated=True))
            cbs.append(cbuf(6, "l1_array", 1, L1_ARRAY_BYTES, cores))
    else:
        if in0_sharded:
            extract = s.a_shard_tiles[1] // k > 1
            cbs.append(cbuf(0, "in0", num_blocks * cfg.per_core_M * k * b, f.in0, cores,
                            globally_allocated=not extract))
            if extract:
                cbs.append(cbuf(2, "in2", bh * k, f.in0, cores, globally_allocated=True))
        else:
            cbs.append(cbuf(0, "in0", bh * k * double, f.in0, cores))
        cbs.append(cbuf(1, "in1", bw * k * double, f.in1, cores))
    separate = (out_sharded and cfg.per_core_M != bh) or not f.same_out_interm
    out_tiles = cfg.per_core_M * cfg.per_core_N if out_sharded else bh * bw
    cbs += _out_interm(f, out_tiles, bh * bw, out_sharded, separate, cores)
    if bias is not None:
        cbs.append(cbuf(3, "bias", bw, f.bias, cores,
                        globally_allocated=cfg.mcast_in0 and bias.memory.layout.sharded))
    cbs += _staging(target, f, cores)
    if s.transpose_a:
        cbs.append(cbuf(10, "in0_transposed", bh * k * double, f.in0, cores))
    return Program("MatmulMultiCoreReuseMcast1DProgramFactory",
                   FACTORY_DIR + "matmul_multicore_reuse_mcast_1d_program_factory.cpp", cores, tuple(cbs))


def program_reuse(cfg: MatmulMultiCoreReuseProgramConfig, s: MatmulShapes, out_sharded: bool, out_dtype: DataType,
                  compute: ComputeConfig, target: OpTarget) -> Program:
    """matmul_multicore_reuse_optimized_program_factory.cpp `create_descriptor`."""
    num_blocks = s.Kt // cfg.in0_block_w
    f = _formats(s, out_dtype, None, compute, compute.packer_l1_acc and num_blocks > 2)
    m_per_batch = s.Mt if cfg.per_core_M > s.Mt else cfg.per_core_M
    scale = cfg.per_core_M // s.Mt if cfg.per_core_M > s.Mt else 1
    in0_sharded, in1_sharded = s.a.memory.layout.sharded, s.b.memory.layout.sharded
    blocks = (s.batch_a * s.Mt // cfg.per_core_M) * (s.Nt // cfg.per_core_N)
    shard = s.a.memory.shard or s.b.memory.shard
    cores: CoreRange | CoreRangeSet
    if shard is not None:
        cores = shard.grid
    else:
        used = min(blocks, cfg.grid[0] * cfg.grid[1])
        cores = CoreRangeSet.from_count(used, cfg.grid[0], cfg.grid[1], row_wise=False)
    in0 = cfg.per_core_M * s.Kt if in0_sharded else m_per_batch * cfg.in0_block_w * 2
    in1 = cfg.per_core_N * cfg.in0_block_w * (num_blocks * scale if in1_sharded else 2)
    out_tiles = cfg.per_core_M * cfg.per_core_N
    cbs = [cbuf(0, "in0", in0, f.in0, cores, globally_allocated=in0_sharded),
           cbuf(1, "in1", in1, f.in1, cores, globally_allocated=in1_sharded)]
    cbs += _out_interm(f, out_tiles, out_tiles, out_sharded, not f.same_out_interm, cores)
    cbs += _staging(target, f, cores)
    return Program("MatmulMultiCoreReuseOptimizedProgramFactory",
                   FACTORY_DIR + "matmul_multicore_reuse_optimized_program_factory.cpp", cores, tuple(cbs))


def program_multicore(s: MatmulShapes, out_dtype: DataType, target: OpTarget) -> Program:
    """matmul_multicore_program_factory.cpp: in0, in1 and the output (c_16) two tiles
    each on the cores the output tiles are split over."""
    tiles = s.batch_a * s.Mt * s.Nt
    cores = CoreRangeSet.from_count(min(tiles, target.num_cores), *target.grid, row_wise=False)
    return Program("MatmulMultiCoreProgramFactory", FACTORY_DIR + "matmul_multicore_program_factory.cpp", cores, (
        cbuf(0, "in0", 2, s.a.dtype.tile_bytes, cores),
        cbuf(1, "in1", 2, s.b.dtype.tile_bytes, cores),
        cbuf(16, "output", 2, out_dtype.tile_bytes, cores)))


def matmul_output_shape(a: tuple[int, ...], b: tuple[int, ...], transpose_a: bool,
                        transpose_b: bool) -> tuple[int, ...]:
    """matmul_utilities.cpp `compute_matmul_output_shape`: a's leading dimensions (b's
    when b has more), a's rows and b's columns."""
    a = a[:-2] + (a[-1], a[-2]) if transpose_a and len(a) > 1 else a
    b = b[:-2] + (b[-1], b[-2]) if transpose_b and len(b) > 1 else b
    rank = max(len(a), len(b)) - (1 if len(a) == 1 or len(b) == 1 else 0)
    base = list(b if len(b) > len(a) else a)
    diff = max(0, rank - len(a))
    for i in range(diff):
        base[i] = b[i]
    for i in range(len(a) - 1):
        base[diff + i] = a[i]
    base[-1] = b[-1]
    if len(a) == 1 and len(base) > 1:
        del base[-2]
    if len(b) == 1:
        base = base[:-1]
    if len(a) >= 3 and len(b) == len(a) and a[len(a) - 3] == 1 and b[len(a) - 3] > 1:
        base[len(a) - 3] = b[len(a) - 3]
    return tuple(base)


def output_shard(cfg: MatmulProgramConfig, s: MatmulShapes, target: OpTarget) -> ShardSpec:
    """The output shard matmul `compute_output_specs` computes for a sharded output:
    per_core_M x per_core_N tiles over the cores holding blocks (late 2025: the 2-D
    config's own block grid, not a given shard grid; see tests H2 'shards to less
    cores')."""
    if isinstance(cfg, MatmulMultiCoreProgramConfig):
        require(False, "ttnn.matmul", "the no-reuse matmul factory cannot write a sharded output")
    assert not isinstance(cfg, MatmulMultiCoreProgramConfig)
    shape = (cfg.per_core_M * TILE, cfg.per_core_N * TILE)
    fuse = getattr(cfg, "fuse_batch", True)
    m = s.m_dim(fuse)
    blocks_y, blocks_x = (m - 1) // cfg.per_core_M + 1, (s.Nt - 1) // cfg.per_core_N + 1
    if isinstance(cfg, MatmulMultiCoreReuseMultiCastProgramConfig):
        if cfg.transpose_mcast:
            return ShardSpec(CoreRange((0, 0), (blocks_y - 1, blocks_x - 1)), shape, ShardOrientation.COL_MAJOR)
        return ShardSpec(CoreRange((0, 0), (blocks_x - 1, blocks_y - 1)), shape)
    grid = cfg.grid if not isinstance(cfg, MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig) else target.grid
    return ShardSpec(CoreRangeSet.from_count(blocks_x * blocks_y, grid[0], grid[1], row_wise=True), shape)


def validate_sharded_output(cfg: MatmulProgramConfig, s: MatmulShapes, layout: MemoryLayout, op: str) -> None:
    """tt-metal's checks of a sharded output against the program config
    (ttnn/cpp/ttnn/operations/matmul/device/matmul_op.cpp `Matmul::validate`): a 1-D
    config multicasting in0 writes a width-sharded output holding all of M on each core
    (M == per_core_M), one multicasting in1 a height-sharded one holding all of N
    (N == per_core_N); a 2-D config writes a block-sharded output."""
    if isinstance(cfg, MatmulMultiCoreReuseMultiCast1DProgramConfig):
        m = s.m_dim(cfg.fuse_batch)
        if cfg.mcast_in0:
            require(layout is MemoryLayout.WIDTH_SHARDED and m == cfg.per_core_M, op,
                    f"a 1-D config multicasting in0 writes a width-sharded output with all {m} row tiles a core "
                    f"(per_core_M {cfg.per_core_M}), not a {layout.value} one")
        else:
            require(layout is MemoryLayout.HEIGHT_SHARDED and s.Nt == cfg.per_core_N, op,
                    f"a 1-D config multicasting in1 writes a height-sharded output with all {s.Nt} column tiles a "
                    f"core (per_core_N {cfg.per_core_N}), not a {layout.value} one")
    elif isinstance(cfg, MatmulMultiCoreReuseMultiCastProgramConfig):
        require(layout is MemoryLayout.BLOCK_SHARDED, op,
                f"a 2-D multicast config writes a block-sharded output, not a {layout.value} one")


def validate_sharded_in0(cfg: MatmulProgramConfig, s: MatmulShapes, out: OutputRequest, op: str) -> None:
    """tt-metal's checks of a sharded left operand against the program config
    (ttnn/cpp/ttnn/operations/matmul/device/matmul_device_operation.cpp
    `validate_on_program_cache_miss`, matmul_op.cpp `Matmul::validate` before it):

    - a 1-D config multicasting in0 reads a width-sharded in0 (ROW_MAJOR, batch fused)
      holding all M rows a core (M == per_core_M == the shard's row tiles), its shard
      width a multiple of in0_block_w; one multicasting in1 a height-sharded in0 of K
      columns a core, per_core_M row tiles a core, on enough cores for M;
    - a 2-D config reads a block-sharded in0 (ROW_MAJOR, COL_MAJOR when the multicast is
      transposed) or a height-sharded one (not transposed, K == in0_block_w == the
      shard's column tiles, one column of cores), never a width-sharded one ("Unsupported
      memory layout"), per_core_M row tiles a core, its shard width a multiple of
      in0_block_w;
    - a sharded output then takes in0's memory layout (both configs, block-sharded in0);
    - the reuse config reads any but a width-sharded in0 of all K a core (in0_block_w)
      and per_core_M rows."""
    shard = s.a.memory.shard
    if shard is None:
        return
    layout = s.a.memory.layout
    rows, cols = s.a_shard_tiles
    if isinstance(cfg, MatmulMultiCoreReuseMultiCast1DProgramConfig):
        m = s.m_dim(cfg.fuse_batch)
        if cfg.mcast_in0:
            require(cfg.fuse_batch and layout is MemoryLayout.WIDTH_SHARDED, op,
                    f"a 1-D config multicasting in0 reads a width-sharded in0, not a {layout.value} one")
            require(shard.orientation is ShardOrientation.ROW_MAJOR and m == cfg.per_core_M == rows
                    and s.Kt % cfg.in0_block_w == 0 and cols % cfg.in0_block_w == 0, op,
                    f"a width-sharded in0 holds all {m} row tiles a core in blocks of in0_block_w "
                    f"{cfg.in0_block_w}; its shard is {rows} x {cols} tiles")
        else:
            require(cfg.fuse_batch and layout is MemoryLayout.HEIGHT_SHARDED, op,
                    f"a 1-D config multicasting in1 reads a height-sharded in0, not a {layout.value} one")
            require(shard.orientation is ShardOrientation.ROW_MAJOR and cfg.per_core_M == rows
                    and ceil_div(m, cfg.per_core_M) <= shard.num_cores and s.Kt == cols, op,
                    f"a height-sharded in0 holds per_core_M {cfg.per_core_M} row tiles and all {s.Kt} column "
                    f"tiles a core; its shard is {rows} x {cols} tiles")
        require(not out.sharded or out.layout is layout, op,
                f"a sharded output takes in0's {layout.value} layout, not {out.layout.value}")
    elif isinstance(cfg, MatmulMultiCoreReuseMultiCastProgramConfig):
        require(cfg.fuse_batch and layout in (MemoryLayout.BLOCK_SHARDED, MemoryLayout.HEIGHT_SHARDED), op,
                f"a 2-D multicast config reads a block- or height-sharded in0, not a {layout.value} one "
                "(Unsupported memory layout)")
        if layout is MemoryLayout.BLOCK_SHARDED:
            wanted = ShardOrientation.COL_MAJOR if cfg.transpose_mcast else ShardOrientation.ROW_MAJOR
            require(shard.orientation is wanted and (not out.sharded or out.layout is layout), op,
                    f"a block-sharded in0 of a 2-D config is {wanted.value} and its sharded output block sharded")
        else:
            box = shard.bounding_box()
            require(not cfg.transpose_mcast and s.Kt == cfg.in0_block_w == cols and box.width == 1, op,
                    f"a height-sharded in0 of a 2-D config holds all {s.Kt} column tiles in one block on one "
                    f"column of cores; its shard is {rows} x {cols} tiles")
        require(cfg.per_core_M == rows and cols % cfg.in0_block_w == 0, op,
                f"in0's shard holds per_core_M {cfg.per_core_M} row tiles in blocks of in0_block_w "
                f"{cfg.in0_block_w}; it is {rows} x {cols} tiles")
    elif isinstance(cfg, MatmulMultiCoreReuseProgramConfig):
        require(layout is not MemoryLayout.WIDTH_SHARDED and s.Kt == cols == cfg.in0_block_w
                and cfg.per_core_M == rows and (not out.sharded or out.layout is layout), op,
                f"the reuse config reads a {layout.value} in0 of all {s.Kt} column tiles and per_core_M "
                f"{cfg.per_core_M} row tiles a core; its shard is {rows} x {cols} tiles")


def plan_matmul(kind: OpKind, req: OpRequest, attrs: MatmulAttrs | None = None) -> OpPlan:
    """ttnn.matmul / ttnn.linear (inputs a, b and, for linear, the bias)."""
    attrs = attrs or MatmulAttrs()
    op = kind.value
    a, b = req.inputs[0], req.inputs[1]
    bias = req.inputs[2] if len(req.inputs) > 2 else None
    require(a.layout is Layout.TILE and b.layout is Layout.TILE, op, "matmul inputs must be TILE")
    s = MatmulShapes.of(a, b, attrs.transpose_a, attrs.transpose_b, bias)
    compute = req.compute or MATMUL_DEFAULT_COMPUTE
    out_dtype = req.out.dtype or a.dtype
    cfg = attrs.program_config or generate_config(s, req.out, req.target, compute, out_dtype, attrs.core_grid,
                                                  attrs.batched)
    out_sharded = req.out.sharded
    if out_sharded:
        validate_sharded_output(cfg, s, req.out.layout, op)
    validate_sharded_in0(cfg, s, req.out, op)
    shape = matmul_output_shape(a.shape, b.shape, attrs.transpose_a, attrs.transpose_b)
    shard = output_shard(cfg, s, req.target) if out_sharded else None
    out = TensorSpec(shape, out_dtype, Layout.TILE, req.out.memory(shard))
    if isinstance(cfg, MatmulMultiCoreReuseMultiCastProgramConfig):
        program = program_2d(cfg, s, out_sharded, out_dtype, bias, compute, req.target)
    elif isinstance(cfg, MatmulMultiCoreReuseMultiCast1DProgramConfig):
        program = program_1d(cfg, s, out_sharded, out_dtype, bias, compute, req.target)
    elif isinstance(cfg, MatmulMultiCoreReuseProgramConfig):
        program = program_reuse(cfg, s, out_sharded, out_dtype, compute, req.target)
    elif isinstance(cfg, MatmulMultiCoreProgramConfig):
        require(not out_sharded and bias is None, op, "the no-reuse factory writes an interleaved output, no bias")
        program = program_multicore(s, out_dtype, req.target)
    else:
        program = program_dram_sharded(cfg, s, out_sharded, out_dtype, bias, compute, req.target)
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))

