"""LayerNorm and RMSNorm: the interleaved and the sharded factories of
ttnn/cpp/ttnn/operations/normalization/layernorm/device/multi_core/layernorm_op_multi_core.cpp
(`layernorm_multi_core`, `layernorm_multi_core_sharded`; read at tt-metal 00eaa3b4, 2025).

Interleaved, with block_size = `find_max_divisor`(Wt, 8) (4 with fp32 accumulation) and
WtB = Wt rounded up to a block: the input c_0 of WtB tiles (2 blocks with a fused
residual b), the output c_16 of 2 blocks, the reduce scaler c_2 and epsilon c_3 two bf16
tiles each, c_19 two intermediate tiles, x^2 c_20 of WtB, c_21 of 8, LayerNorm's E[x]
c_18 (2) and x - E[x] c_24 (WtB; RMSNorm keeps it only with a residual), gamma and beta
c_5 / c_6 of WtB and their buffer c_22 of 2 blocks, a residual's c_1 (2 blocks) and
LayerNorm's a + b c_23. Intermediates are Float16_b, Float32 with fp32 accumulation.
Buffers that would pass 95 % of L1 (`CB_can_fit_in_L1`, which counts c_24, gamma and beta
whether or not they exist) switch to the large-tensor kernels, by build
(`NormLargeTensor`, devices/software.toml `norm_large_tensor`): LayerNorm only, with
WtB = 60 (weights or fp32) or 120 (at 00eaa3b4); from tt-metal PR #38006 (2026-02)
RMSNorm too, with WtB = 56 or 112, c_24 kept whenever the large path runs and a
one-tile accumulator c_26 (Float32 with fp32 accumulation, tt-metal's default
non-legacy reduction). Row-major gamma or beta (tt-transformers' norms) keep whole rows
on every build. Not modelled: the later scaling of 56 / 112 by the bf16 tile over the
intermediate tile (halved with fp32 accumulation) and the row-major input path of the
Metal 2.0 factory, whose dates tileplan does not know.
Check (tt-mlir OpModel rows): RMSNorm, Wt = 2, no weights: in0 2 + out 4 + scaler 2 + eps 2 +
c_19 2 + x^2 2 + c_21 8 = 22 tiles = 45,056 B.

Sharded, given a `LayerNormShardedMultiCoreProgramConfig` (block_h x block_w tiles a
core): input (and residual) and output bound to the shards, scaler, second scaler and
epsilon one bf16 tile each, gamma and beta block_w tiles, x and x - E[x] a block each,
the partial and global statistics block_h tiles each (c_8, c_9, c_11, c_12, c_15; c_8 and
c_9 LayerNorm only), the gathered partials c_10 / c_13 one tile per core along the
reduction (c_10 LayerNorm only) and c_20 the rows each all-to-all worker reduces.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRange, CoreRangeSet, ShardOrientation, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    cbuf,
    ComputeConfig,
    MathFidelity,
    OpPlan,
    OpRequest,
    Program,
    ceil_div,
    find_max_divisor,
    output_buffers,
    padded_shape4,
    require,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout
from tileplan.targets.tenstorrent.versions import NormLargeTensor

SOURCE = "ttnn/cpp/ttnn/operations/normalization/layernorm/device/multi_core/layernorm_op_multi_core.cpp"
#: `without_weights_max_size`, `with_weights_max_size` (the large-tensor path's WtB) by build
LARGE_ROW_TILES = {NormLargeTensor.LAYER_NORM: (120, 60), NormLargeTensor.WITH_RMS: (112, 56)}
#: the norms' default compute config (HiFi4, approximate, no fp32 accumulation)
NORM_DEFAULT_COMPUTE = ComputeConfig(MathFidelity.HIFI4, True, False, False)


@dataclass(frozen=True, slots=True)
class LayerNormShardedProgramConfig:
    """ttnn `LayerNormShardedMultiCoreProgramConfig` (block sizes in tiles)."""

    grid: tuple[int, int]
    subblock_w: int
    block_h: int
    block_w: int
    inplace: bool = False


@dataclass(frozen=True, slots=True)
class NormAttrs:
    """The optional inputs present (gamma, beta, residual b, each a spec), a sharded
    program config, and which norms the build's interleaved factory gives its
    large-tensor path (the frontend's device says; the old rule by default)."""

    gamma: TensorSpec | None = None
    beta: TensorSpec | None = None
    residual: TensorSpec | None = None
    program_config: LayerNormShardedProgramConfig | None = None
    large_tensor: NormLargeTensor = NormLargeTensor.LAYER_NORM


def interleaved_program(x: TensorSpec, out_dtype: DataType, attrs: NormAttrs, rms: bool, compute: ComputeConfig,
                        l1_size: int, grid: CoreRange) -> Program:
    """`layernorm_multi_core` (see the module docstring)."""
    wt = padded_shape4(x)[3] // TILE
    bs = find_max_divisor(wt, 4 if compute.fp32_dest_acc_en else 8)
    wtb = ceil_div(wt, bs) * bs
    cb = DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16
    bf = DataType.BFLOAT16
    g, be, b = attrs.gamma, attrs.beta, attrs.residual
    gamma_t = g.dtype.tile_bytes if g is not None else bf.tile_bytes
    beta_t = be.dtype.tile_bytes if be is not None else bf.tile_bytes
    b_t = b.dtype.tile_bytes if b is not None else 0
    in0, im6 = (2 * bs, wtb) if b is not None else (wtb, 2 * bs)
    sizes = (in0 * x.dtype.tile_bytes + 2 * bs * b_t + 2 * bs * out_dtype.tile_bytes
             + (wtb + wtb + im6 + 2 * bs + 8 + 2 + 2) * cb.tile_bytes + wtb * gamma_t + wtb * beta_t
             + 4 * bf.tile_bytes)
    fits = sizes < l1_size * 0.95
    row_major_weights = any(t is not None and t.layout is Layout.ROW_MAJOR for t in (g, be))
    im0 = im3 = in5 = in6 = wtb
    with_rms = attrs.large_tensor is NormLargeTensor.WITH_RMS  # the factory from PR #38006
    large = not fits and not row_major_weights and (not rms or with_rms)
    if large:
        without_weights, with_weights = LARGE_ROW_TILES[attrs.large_tensor]
        big = with_weights if (g is not None or be is not None or x.dtype is DataType.FLOAT32) else without_weights
        in0 = im0 = im3 = in5 = in6 = big
        if b is not None:
            im6, in0 = big, 2 * bs
    cbs = [cbuf(0, "in0", in0, x.dtype.tile_bytes, grid),
           cbuf(16, "out0", 2 * bs, out_dtype.tile_bytes, grid)]
    if not rms:
        cbs.append(cbuf(18, "ex", 2, cb.tile_bytes, grid))
    cbs += [cbuf(2, "scaler", 2, bf.tile_bytes, grid), cbuf(3, "eps", 2, bf.tile_bytes, grid),
            cbuf(19, "im2", 2, cb.tile_bytes, grid)]
    if not rms or b is not None or (large and with_rms):
        cbs.append(cbuf(24, "xmm", im0, cb.tile_bytes, grid))
    cbs += [cbuf(20, "xmm2", im3, cb.tile_bytes, grid), cbuf(21, "im4", 8, cb.tile_bytes, grid)]
    if large and with_rms:
        acc = DataType.FLOAT32 if compute.fp32_dest_acc_en else cb
        cbs.append(cbuf(26, "accumulate", 1, acc.tile_bytes, grid))
    if g is not None or be is not None:
        cbs.append(cbuf(22, "gamma_beta_out", 2 * bs, cb.tile_bytes, grid))
    if g is not None:
        cbs.append(cbuf(5, "gamma", in5, gamma_t, grid))
    if be is not None:
        cbs.append(cbuf(6, "beta", in6, beta_t, grid))
    if b is not None:
        if not rms:
            cbs.append(cbuf(23, "x_plus_b", im6, cb.tile_bytes, grid))
        cbs.append(cbuf(1, "b", 2 * bs, b_t, grid))
    return Program("LayerNormMultiCore", SOURCE, grid, tuple(cbs))


def sharded_program(x: TensorSpec, out: TensorSpec, attrs: NormAttrs, rms: bool, cfg: LayerNormShardedProgramConfig,
                    compute: ComputeConfig, device_grid: tuple[int, int]) -> Program:
    """`layernorm_multi_core_sharded` (no distributed stage; see the module docstring)."""
    shard = x.memory.shard
    require(shard is not None, "ttnn.layer_norm", "the sharded layer norm takes a sharded input")
    assert shard is not None
    require(out.memory.shard == shard, "ttnn.layer_norm", "a resharded norm output is not modelled")
    cb = DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16
    bf = DataType.BFLOAT16
    dims = padded_shape4(x)
    m_tiles = dims[0] * dims[1] * dims[2] // TILE
    kt = dims[3] // TILE
    box = shard.bounding_box()
    gx, gy = box.width, box.height
    row_wise = shard.orientation is ShardOrientation.ROW_MAJOR
    mcast_1d = m_tiles == cfg.block_h
    num_blocks = shard.num_cores if mcast_1d else (gx if row_wise else gy)
    two_stage = mcast_1d and ((row_wise and 1 < gx <= device_grid[0] and gy > 1)
                              or (not row_wise and gx > 1 and gy == device_grid[1]))
    rows_per_worker = ceil_div(cfg.block_h, num_blocks)
    ex_external = ceil_div(kt, cfg.block_w)
    if two_stage:
        first, second = (gx, gy) if row_wise else (gy, gx)
        rows_per_worker = ceil_div(cfg.block_h, first)
        ex_external = first + second - 1
    block = cfg.block_w * cfg.block_h
    cores: CoreRange | CoreRangeSet = shard.grid
    cbs = [cbuf(0, "in0", block, x.dtype.tile_bytes, cores, globally_allocated=True)]
    if attrs.residual is not None:
        cbs.append(cbuf(1, "in1", block, x.dtype.tile_bytes, cores, globally_allocated=True))
    cbs += [cbuf(2, "scaler", 1, bf.tile_bytes, cores), cbuf(4, "scaler_c", 1, bf.tile_bytes, cores),
            cbuf(3, "eps", 1, bf.tile_bytes, cores)]
    if attrs.gamma is not None:
        cbs.append(cbuf(5, "gamma", cfg.block_w, attrs.gamma.dtype.tile_bytes, cores))
    if attrs.beta is not None:
        cbs.append(cbuf(6, "beta", cfg.block_w, attrs.beta.dtype.tile_bytes, cores))
    cbs += [cbuf(24, "x", block, cb.tile_bytes, cores), cbuf(18, "xmm", block, cb.tile_bytes, cores)]
    if not rms:
        cbs += [cbuf(8, "ex_partial", cfg.block_h, cb.tile_bytes, cores),
                cbuf(9, "ex", cfg.block_h, cb.tile_bytes, cores),
                cbuf(10, "ex_external", ex_external, cb.tile_bytes, cores)]
    cbs += [cbuf(11, "ex_partial2", cfg.block_h, cb.tile_bytes, cores),
            cbuf(12, "ex2", cfg.block_h, cb.tile_bytes, cores),
            cbuf(13, "ex_external2", ex_external, cb.tile_bytes, cores),
            cbuf(15, "ex_global", cfg.block_h, cb.tile_bytes, cores),
            cbuf(20, "ex2pe", rows_per_worker, cb.tile_bytes, cores),
            cbuf(16, "out", block, out.dtype.tile_bytes, cores, globally_allocated=True)]
    return Program("LayerNormMultiCoreSharded", SOURCE, cores, tuple(cbs))


def plan_norm(kind: OpKind, req: OpRequest, attrs: NormAttrs | None = None) -> OpPlan:
    """ttnn.layer_norm / ttnn.rms_norm (input only; gamma, beta and a residual as specs
    in the attributes)."""
    attrs = attrs or NormAttrs()
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE, op, "norm inputs must be TILE")
    rms = kind is OpKind.RMS_NORM
    compute = req.compute or NORM_DEFAULT_COMPUTE
    out_dtype = req.out.dtype or x.dtype
    shard = req.out.shard if req.out.shard is not None else x.memory.shard
    out = TensorSpec(x.shape, out_dtype, Layout.TILE, req.out.memory(shard))
    if attrs.program_config is not None:
        program = sharded_program(x, out, attrs, rms, attrs.program_config, compute, req.target.grid)
    else:
        program = interleaved_program(x, out_dtype, attrs, rms, compute, req.target.l1_size, req.target.grid_range())
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
