"""Softmax: the three families of tt-metal's softmax device operation
(ttnn/cpp/ttnn/operations/normalization/softmax/device/softmax_device_operation.cpp,
`select_program_factory`).

1. Attention-optimized, over the last dimension of a 4-D tensor
   (softmax_program_factory_attention_optimized.cpp): block_size = `find_max_divisor`(Wt,
   8) (4 with fp32 accumulation), which skips 7 and 5, so Wt = 7 gives 1. in0 c_0 and out0
   c_11 two blocks each (in0 the whole rounded row when numerically stable), the exps
   c_6 of Wt intermediate tiles, 1/sum c_7, the reduce scaler c_2 and c_5 one tile each;
   a mask adds c_9 (Wt + block), c_3 (1) and c_4 (the rounded row); numerically stable
   adds the max c_8 (1) and x c_10 (the rounded row). When these would take more than 90 %
   of L1 the large-tensor kernels run with 80-tile buffers (and c_12, c_15, c_16).
   Check: Wt = 32, bf16: 16 + 16 + 32 + 1 + 1 + 1 = 67 tiles = 137,216 B; Wt = 7: 2 + 2 + 7 +
   1 + 1 + 1 = 14 tiles = 28,672 B (the gtest rows of TENSTORRENT-NOTES.md (h)). A sharded
   input with the default program config runs this interleaved program too.
2. Attention-optimized sharded, given a `SoftmaxShardedMultiCoreProgramConfig`
   (softmax_program_factory_attention_optimized_sharded.cpp): in0 and out0 bound to the
   shards, the exps block_w tiles, the max and sum scalers and 1/sum one tile each.
3. General (the moreh kernels), over W of another rank or over H
   (softmax_program_factory_general_{w,h}_{small,large}.cpp): the small variant (a whole
   row of Wt, or column of Ht, tiles: input, output, exp and x - max, plus five single
   tiles) when the allocator base plus its buffers stay within 512 KB, else the large
   one (input, output and exp two tiles, six single tiles).
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRange, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    cbuf,
    ComputeConfig,
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

SOURCE_DIR = "ttnn/cpp/ttnn/operations/normalization/softmax/device/"
#: `L1_512KB`: the small general variants' budget (softmax_device_operation.cpp)
GENERAL_SMALL_BUDGET = 512 * 1024
#: the large attention kernel's buffer length (`cb_length = 80`)
LARGE_KERNEL_TILES = 80


@dataclass(frozen=True, slots=True)
class SoftmaxShardedProgramConfig:
    """ttnn `SoftmaxShardedMultiCoreProgramConfig`."""

    grid: tuple[int, int]
    subblock_w: int
    block_h: int
    block_w: int


@dataclass(frozen=True, slots=True)
class SoftmaxAttrs:
    """ttnn.softmax arguments: the dimension, numeric stability, a mask's spec (scale
    and mask softmax) and a sharded program config."""

    dim: int = -1
    numeric_stable: bool = False
    mask: TensorSpec | None = None
    program_config: SoftmaxShardedProgramConfig | None = None


def _im(compute: ComputeConfig) -> DataType:
    return DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16


def attention_program(x: TensorSpec, out_dtype: DataType, attrs: SoftmaxAttrs, compute: ComputeConfig,
                      l1_size: int, grid: CoreRange) -> Program:
    """softmax_program_factory_attention_optimized.cpp `create`."""
    wt = padded_shape4(x)[3] // TILE
    bs = find_max_divisor(wt, 4 if compute.fp32_dest_acc_en else 8)
    rounded = ceil_div(wt, bs) * bs
    im, bf = _im(compute), DataType.BFLOAT16
    mask_dtype = attrs.mask.dtype if attrs.mask is not None else bf
    in0 = rounded if attrs.numeric_stable else 2 * bs
    out0, im0, im3, im4 = 2 * bs, rounded, bs * (ceil_div(wt, bs) + 1), rounded
    total = in0 * x.dtype.tile_bytes + im0 * im.tile_bytes + out0 * out_dtype.tile_bytes + 5 * im.tile_bytes
    if attrs.numeric_stable:
        total += im4 * im.tile_bytes
    if attrs.mask is not None:
        total += im3 * im.tile_bytes + bf.tile_bytes + rounded * mask_dtype.tile_bytes
    large = l1_size * 0.9 < total
    if large:
        in0 = im4 = im0 = im3 = LARGE_KERNEL_TILES
    cbs = [cbuf(0, "in0", in0, x.dtype.tile_bytes, grid),
           cbuf(11, "out0", out0, out_dtype.tile_bytes, grid),
           cbuf(7, "recip_sum", 1, im.tile_bytes, grid)]
    if large:
        cbs += [cbuf(12, "sum", 1, im.tile_bytes, grid), cbuf(15, "max", 1, im.tile_bytes, grid),
                cbuf(16, "recip", 1, im.tile_bytes, grid)]
    cbs += [cbuf(2, "reduce_scaler", 1, bf.tile_bytes, grid),
            cbuf(6, "exps", im0, im.tile_bytes, grid)]
    if attrs.mask is not None:
        cbs += [cbuf(9, "scale_mask", im3, im.tile_bytes, grid),
                cbuf(3, "fused_scale", 1, bf.tile_bytes, grid),
                cbuf(4, "mask", rounded, mask_dtype.tile_bytes, grid)]
    cbs.append(cbuf(5, "in5", 1, mask_dtype.tile_bytes, grid))
    if attrs.numeric_stable:
        cbs.append(cbuf(8, "max", 1, im.tile_bytes, grid))
    if attrs.numeric_stable or large:
        cbs.append(cbuf(10, "x", im4, im.tile_bytes, grid))
    return Program("SoftmaxProgramFactoryAttentionOptimized",
                   SOURCE_DIR + "softmax_program_factory_attention_optimized.cpp", grid, tuple(cbs))


def sharded_program(x: TensorSpec, out_dtype: DataType, attrs: SoftmaxAttrs, cfg: SoftmaxShardedProgramConfig,
                    compute: ComputeConfig) -> Program:
    """softmax_program_factory_attention_optimized_sharded.cpp."""
    cores = CoreRange.grid(*cfg.grid)
    im, bf = _im(compute), DataType.BFLOAT16
    shard = cfg.block_w * cfg.block_h
    max_scaler = DataType.FLOAT32 if x.dtype is DataType.FLOAT32 else bf
    cbs = [cbuf(0, "in0", shard, x.dtype.tile_bytes, cores, globally_allocated=True),
           cbuf(1, "max_scaler", 1, max_scaler.tile_bytes, cores),
           cbuf(2, "sum_scaler", 1, im.tile_bytes, cores)]
    if attrs.mask is not None:
        cbs += [cbuf(9, "scale_mask", cfg.block_w, im.tile_bytes, cores),
                cbuf(4, "fused_scale", 1, bf.tile_bytes, cores),
                cbuf(3, "fused_attn", cfg.block_w, attrs.mask.dtype.tile_bytes, cores)]
    cbs += [cbuf(11, "out0", shard, out_dtype.tile_bytes, cores, globally_allocated=True),
            cbuf(6, "exps", cfg.block_w, im.tile_bytes, cores),
            cbuf(7, "recip_sum_exps", 1, im.tile_bytes, cores)]
    if attrs.numeric_stable:
        cbs += [cbuf(8, "max", 1, im.tile_bytes, cores),
                cbuf(10, "x", cfg.block_w, im.tile_bytes, cores)]
    return Program("SoftmaxShardedProgramFactoryAttentionOptimized",
                   SOURCE_DIR + "softmax_program_factory_attention_optimized_sharded.cpp", cores, tuple(cbs))


def general_program(x: TensorSpec, along_w: bool, compute: ComputeConfig, base: int, grid: CoreRange) -> Program:
    """softmax_program_factory_general_{w,h}_{small,large}.cpp and the availability
    checks `is_softmax_general_{w,h}_small_available`."""
    dims = padded_shape4(x)
    n = dims[3] // TILE if along_w else dims[2] // TILE
    io = x.dtype
    im = DataType.FLOAT32 if compute.fp32_dest_acc_en else io
    small_bytes = (2 * n + 2) * io.tile_bytes + (2 * n + 3) * im.tile_bytes
    axis = "w" if along_w else "h"
    if base + small_bytes <= GENERAL_SMALL_BUDGET:
        cbs = (cbuf(0, "input", n, io.tile_bytes, grid), cbuf(1, "mask", 1, io.tile_bytes, grid),
               cbuf(2, "scaler", 1, io.tile_bytes, grid), cbuf(16, "output", n, io.tile_bytes, grid),
               cbuf(24, "exp", n, im.tile_bytes, grid), cbuf(25, "reduce", 1, im.tile_bytes, grid),
               cbuf(26, "max", 1, im.tile_bytes, grid), cbuf(27, "x_minus_max", n, im.tile_bytes, grid),
               cbuf(28, "tmp", 1, im.tile_bytes, grid))
        name = f"SoftmaxProgramFactoryGeneral{axis.upper()}Small"
        source = SOURCE_DIR + f"softmax_program_factory_general_{axis}_small.cpp"
    else:
        cbs = (cbuf(0, "input", 2, io.tile_bytes, grid), cbuf(1, "mask", 1, io.tile_bytes, grid),
               cbuf(2, "scaler", 1, io.tile_bytes, grid), cbuf(16, "output", 2, io.tile_bytes, grid),
               cbuf(24, "exp", 2, im.tile_bytes, grid), cbuf(25, "reduce", 1, im.tile_bytes, grid),
               cbuf(26, "syn", 1, im.tile_bytes, grid), cbuf(27, "max", 1, im.tile_bytes, grid),
               cbuf(28, "tmp", 1, im.tile_bytes, grid))
        name = f"SoftmaxProgramFactoryGeneral{axis.upper()}Large"
        source = SOURCE_DIR + f"softmax_program_factory_general_{axis}_large.cpp"
    return Program(name, source, grid, cbs)


#: softmax's default compute config (HiFi4, no approximation, no fp32 accumulation)
SOFTMAX_DEFAULT_COMPUTE = ComputeConfig()


def plan_softmax(kind: OpKind, req: OpRequest, attrs: SoftmaxAttrs | None = None) -> OpPlan:
    """ttnn.softmax: the tensor taken as 4-D (ranks below 4 get leading 1s), the last
    dimension through the attention-optimized programs, the one before it through the
    general H programs. Softmax over an outer dimension (the general C program) is not
    modelled."""
    attrs = attrs or SoftmaxAttrs()
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE, op, "softmax inputs must be TILE")
    require(len(x.shape) <= 4, op, f"softmax on a rank-{len(x.shape)} tensor is not modelled")
    dim = attrs.dim % len(x.shape) + (4 - len(x.shape))
    compute = req.compute or SOFTMAX_DEFAULT_COMPUTE
    out_dtype = x.dtype
    shard = req.out.shard if req.out.shard is not None else x.memory.shard
    out = TensorSpec(x.shape, out_dtype, Layout.TILE, req.out.memory(shard))
    grid = req.target.grid_range()
    if dim == 3:
        if attrs.program_config is not None:
            require(x.memory.layout.sharded, op, "a sharded softmax program config needs a sharded input")
            program = sharded_program(x, out_dtype, attrs, attrs.program_config, compute)
        else:
            program = attention_program(x, out_dtype, attrs, compute, req.target.l1_size, grid)
    elif dim == 2:
        program = general_program(x, False, compute, req.target.l1_unreserved_base, grid)
    else:
        require(False, op, f"softmax over dimension {attrs.dim} (the general C program) is not modelled")
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
