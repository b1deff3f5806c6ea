"""Batch norm in inference (`ttnn.batch_norm` with the running statistics), as tt-metal's
ttnn/cpp/ttnn/operations/normalization/batch_norm/device/batch_norm_program_factory.cpp
runs it (`BatchNormOperation::BatchNormFactory::create`, read at tt-metal 88503ffb, 2025;
the same nine circular buffers in the 2026 factory as tt-metal's own analysis of it
describes them: c_0 .. c_8, 2 tiles each).

One program on the whole compute grid (`compute_with_storage_grid_size`; the output tiles
split over it by `split_work_to_cores`, cores without work still get the circular
buffers), nine circular buffers of `num_tiles_per_cb = 2` tiles each, in creation order:
the input c_0 (input's format), the mean c_1 (mean's), the output c_2 (output's), the
variance c_3 and epsilon c_4 (variance's), the weight c_5 and bias c_6 (their formats,
Float16_b when absent), the denominator c_7 and the temporary c_8 (input's). The formats
are the tensors' own, so a bf16 batch norm holds 18 bf16 tiles: 36,864 B a core.

Inputs (batch_norm_device_operation.cpp `validate_on_program_cache_miss`): every tensor
TILE and INTERLEAVED, rank 4, the statistics [1, C, 1, 1] (one tile per channel);
bfloat16 or float32 only. The output (`compute_output_specs`): the input's shape, TILE,
the requested memory config (default the input's), dtype the requested one (default the
input's).
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, Program, cbuf, output_buffers, require
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import DataType, Layout

SOURCE = "ttnn/cpp/ttnn/operations/normalization/batch_norm/device/batch_norm_program_factory.cpp"
#: batch_norm_program_factory.cpp `num_tiles_per_cb` (double buffering)
TILES_PER_CB = 2
_FORMATS = frozenset({DataType.BFLOAT16, DataType.FLOAT32})


@dataclass(frozen=True, slots=True)
class BatchNormAttrs:
    """The statistics and the optional affine parameters, as specs (each [1, C, 1, 1])."""

    mean: TensorSpec
    var: TensorSpec
    weight: TensorSpec | None = None
    bias: TensorSpec | None = None


def plan_batch_norm(kind: OpKind, req: OpRequest, attrs: BatchNormAttrs) -> OpPlan:
    """ttnn.batch_norm (inference: running statistics; input only, the statistics and the
    affine parameters as specs in the attributes)."""
    op = kind.value
    (x,) = req.inputs
    params = [t for t in (attrs.mean, attrs.var, attrs.weight, attrs.bias) if t is not None]
    for t in (x, *params):
        require(t.layout is Layout.TILE and not t.memory.layout.sharded, op,
                f"every tensor must be TILE and interleaved (found {t.layout.value}, {t.memory.layout.value})")
        require(t.dtype in _FORMATS, op, f"bfloat16 or float32 only (found {t.dtype.value})")
        require(len(t.shape) == 4, op, f"rank-4 tensors only (found shape {t.shape})")
    channels = x.shape[1]
    require(all(t.shape[1] == channels for t in params), op,
            f"statistics and parameters must have the input's {channels} channels")
    out_dtype = req.out.dtype or x.dtype
    require(out_dtype is x.dtype, op, f"the output dtype must be the input's {x.dtype.value}")
    require(not req.out.sharded, op, "the output must be interleaved")
    grid = req.target.grid_range()
    bf16 = DataType.BFLOAT16.tile_bytes
    weight = attrs.weight.dtype.tile_bytes if attrs.weight is not None else bf16
    bias = attrs.bias.dtype.tile_bytes if attrs.bias is not None else bf16
    sizes = (("input", x.dtype.tile_bytes), ("batch_mean", attrs.mean.dtype.tile_bytes),
             ("output", out_dtype.tile_bytes), ("batch_var", attrs.var.dtype.tile_bytes),
             ("eps", attrs.var.dtype.tile_bytes), ("weight", weight), ("bias", bias),
             ("den", x.dtype.tile_bytes), ("temp_1", x.dtype.tile_bytes))
    cbs = tuple(cbuf(i, name, TILES_PER_CB, page, grid) for i, (name, page) in enumerate(sizes))
    out = TensorSpec(x.shape, out_dtype, Layout.TILE, req.out.memory())
    program = Program("BatchNormFactory", SOURCE, grid, cbs)
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
