"""The distributed RMS norm tt-transformers runs on a mesh when one chip's L1 cannot hold
the interleaved norm's rows ("Somewhere between 4k and 8k WH runs out of L1 if not
distributed", model_config.py `is_distributed_norm`; models/common/rmsnorm.py
`_distributed_rmsnorm`): each chip reduces its slice, the statistics are all-gathered,
each chip normalises its slice.

- rms_norm_pre_all_gather (ttnn/cpp/ttnn/operations/normalization/layernorm_distributed/
  device/layernorm_pre_all_gather_program_factory.cpp, read at 05ddaab1): on the
  `split_work_to_cores` cores of the tile rows, the input 2 Wt tiles, the reduce scaler
  one tile and x^2 2 Wt tiles (Float32 with fp32 accumulation, else Float16_b), the
  output one tile; output [.., S, 32] (RMS: one tile column of sum(x^2)).
- rms_norm_post_all_gather (.../layernorm_post_all_gather_program_factory.cpp
  `layernorm_post_allgather_multi_core`): the input Wt, the gathered statistics (one tile
  a chip), a row-major gamma Wt tiles, epsilon and the reduce scalar one bf16 tile each,
  four one-tile intermediates (c_6, c_8, c_9, c_10), x / rms c_12 Wt and the output c_14
  Wt, intermediates Float32 with fp32 accumulation, else Float16_b.
Worked example: dim 5,120 over two chips (Wt 80), bf16, fp32 accumulation, gamma: pre
160 x 2,048 + 4,096 + 160 x 4,096 + 2,048 = 989,184 B; post 80 x 2,048 + 2 x 2,048 +
80 x 2,048 + 2 x 2,048 + 4 x 4,096 + 80 x 4,096 + 80 x 2,048 = 843,776 B.
"""

from __future__ import annotations

from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    ComputeConfig,
    MathFidelity,
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    output_buffers,
    padded_shape4,
    require,
    split_work,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_norm import NormAttrs
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout

SOURCE_DIR = "ttnn/cpp/ttnn/operations/normalization/layernorm_distributed/device/"
#: the distributed norms' default compute config (HiFi4, no fp32 accumulation)
DEFAULT_COMPUTE = ComputeConfig(MathFidelity.HIFI4, True, False, False)


def _rows(x: TensorSpec, req: OpRequest) -> tuple[CoreRangeSet, int]:
    n, c, h, w = padded_shape4(x)
    used, _ = split_work(n * c * h // TILE, req.target.num_cores)
    return CoreRangeSet.from_count(max(used, 1), *req.target.grid, row_wise=True), w // TILE


def plan_rms_pre(kind: OpKind, req: OpRequest, attrs: None = None) -> OpPlan:
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE and not x.memory.layout.sharded, op, "an interleaved TILE input")
    compute = req.compute or DEFAULT_COMPUTE
    cb = DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16
    out_dtype = req.out.dtype or DataType.BFLOAT16
    cores, wt = _rows(x, req)
    out = TensorSpec(x.shape[:-1] + (TILE,), out_dtype, Layout.TILE, req.out.memory())
    program = Program("LayerNormPreAllGatherProgramFactory",
                      SOURCE_DIR + "layernorm_pre_all_gather_program_factory.cpp",
                      cores, (cbuf(0, "input", 2 * wt, x.dtype.tile_bytes, cores),
                              cbuf(1, "reduce", 1, cb.tile_bytes, cores),
                              cbuf(24, "x2", 2 * wt, cb.tile_bytes, cores),
                              cbuf(16, "output", 1, out_dtype.tile_bytes, cores)))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def plan_rms_post(kind: OpKind, req: OpRequest, attrs: NormAttrs | None = None) -> OpPlan:
    """rms_norm_post_all_gather (inputs x, the gathered statistics; gamma in attrs)."""
    attrs = attrs or NormAttrs()
    x, stats = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE and not x.memory.layout.sharded, op, "an interleaved TILE input")
    compute = req.compute or DEFAULT_COMPUTE
    cb = DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16
    bf = DataType.BFLOAT16
    out_dtype = req.out.dtype or x.dtype
    cores, wt = _rows(x, req)
    stats_cols = padded_shape4(stats)[3] // TILE
    cbs = [cbuf(0, "input", wt, x.dtype.tile_bytes, cores), cbuf(1, "stats", stats_cols, stats.dtype.tile_bytes, cores)]
    if attrs.gamma is not None:
        cbs.append(cbuf(2, "gamma", wt, attrs.gamma.dtype.tile_bytes, cores))
    cbs += [cbuf(4, "epsilon", 1, bf.tile_bytes, cores), cbuf(5, "reduce_scalar", 1, bf.tile_bytes, cores)]
    cbs += [cbuf(i, f"intermed{i}", 1, cb.tile_bytes, cores) for i in (6, 8, 9, 10)]
    cbs += [cbuf(12, "normed", wt, cb.tile_bytes, cores), cbuf(14, "output", wt, out_dtype.tile_bytes, cores)]
    out = TensorSpec(x.shape, out_dtype, Layout.TILE, req.out.memory())
    program = Program("LayerNormPostAllGatherProgramFactory",
                      SOURCE_DIR + "layernorm_post_all_gather_program_factory.cpp", cores, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
