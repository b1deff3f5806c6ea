"""ttnn.experimental.all_gather_matmul_async: an all-gather whose gathered tensor a 1-D
multicast matmul reads as it arrives, as tt-transformers' decode attention calls it on a
T3K (attention.py `forward_decode` under USE_FUSED_ALL_GATHER_MATMUL: wo on each chip's
dim / 8 columns, `all_gather_core_grid_offset=(0, 4)`, one link, two workers a
direction).

tt-metal ttnn/cpp/ttnn/operations/experimental/ccl/all_gather_matmul_async/device/
(all_gather_matmul_async_device_operation.cpp `compute_output_specs`: {the all-gather's
output in `memory_config_ag`, the matmul's output}; all_gather_matmul_async_program_
factory.cpp `AllGatherMatmulAsyncMeshWorkloadFactory::create_at`): the ordinary 1-D
multicast matmul program (`matmul_multi_core_reuse_mcast_1d_optimized_helper`, in0 the
gathered tensor, read through its globally allocated c_2) on the matmul's cores, and the
all-gather's program (`build_all_gather_async_minimal_default_program_artifacts`) on its
workers from the offset: two programs on disjoint cores, planned one after the other
(each core holds one of them). The outputs are allocated in that order: the gathered
tensor, then the product; the matmul's output shard is the one the matmul computes
(per_core_M x per_core_N tiles on its block cores), whatever `memory_config_mm` says.

Worked example (Llama-3.1-8B on a T3K, decode, batch 1): the heads [1, 1, 32, 512] bf16
width-sharded on (0, 0) -> gathered [1, 1, 32, 4096] ([32, 512] on (0, 0)-(7, 0)) x wo
[4096, 512] bfp8 with ATTN_ALL_GATHER_MATMUL_PROGCFG (in0_block_w 16, per_core_N 2) ->
[1, 1, 32, 512] in [32, 64] shards on (0, 0)-(7, 0); the workers at (1, 4), (2, 4),
(4, 4), (5, 4).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tileplan.targets.tenstorrent.memory import MemoryConfig
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, output_buffers, require
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_ccl import CclAttrs, all_gather_program, gathered
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs, plan_matmul
from tileplan.targets.tenstorrent.ops.tt_matmul_config import MatmulMultiCoreReuseMultiCast1DProgramConfig
from tileplan.targets.tenstorrent.tiles import Layout


@dataclass(frozen=True, slots=True)
class AllGatherMatmulAttrs:
    """The collective (dim 3, its ring and offset), the matmul's 1-D program config and
    `memory_config_ag` (the gathered tensor's memory)."""

    ccl: CclAttrs
    program_config: MatmulMultiCoreReuseMultiCast1DProgramConfig
    gather_memory: MemoryConfig


def plan_all_gather_matmul(kind: OpKind, req: OpRequest, attrs: AllGatherMatmulAttrs) -> OpPlan:
    """all_gather_matmul_async (see the module docstring); inputs (x, weight)."""
    x, weight = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE and weight.layout is Layout.TILE, op, "TILE inputs")
    require(attrs.ccl.dim % len(x.shape) == len(x.shape) - 1, op, "the gather on the last dimension (dim 3)")
    full = gathered(x, attrs.ccl, attrs.gather_memory)
    product = plan_matmul(OpKind.MATMUL, replace(req, inputs=(full, weight)), MatmulAttrs(attrs.program_config))
    gather = all_gather_program(x, attrs.ccl, req.target.grid)
    outputs = (full, *product.outputs)
    return OpPlan(op, (*product.programs, gather), outputs, output_buffers(outputs, req.target, 0))
