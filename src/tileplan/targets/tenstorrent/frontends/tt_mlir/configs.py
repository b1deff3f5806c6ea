"""The operation configs tt-mlir's optimizer fixes at levels 1 and 2.

At level 0 an operation gets no program config and tt-metal chooses one when it runs (for
a matmul, `generate_matmul_program_config`, whose fit search reads the lowest L1 address
occupied at that moment: ttnn/cpp/ttnn/operations/matmul/device/utilities/
matmul_utilities.cpp `get_max_l1_space`). With the optimizer on, tt-mlir's
LegalOpConfigAnalysis and MatmulProgramConfig.cpp give every matmul and linear the
program config it validated, and validation runs tt-metal's op-constraint query in
NO_DISPATCH mode, where nothing is allocated: the config is tt-metal's automatic one for
an empty L1, fixed in the IR whatever is live when it runs.
"""

from __future__ import annotations

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Node
from tileplan.targets.tenstorrent.memory import CoreRange, MemoryLayout, TensorSpec
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, OpTarget, OutputRequest, ceil_div
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_matmul import MATMUL_DEFAULT_COMPUTE, MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul_auto import generate_config
from tileplan.targets.tenstorrent.ops.tt_matmul_config import (
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulProgramConfig,
    MatmulShapes,
)


def pin_matmul_config(node: Node, specs: tuple[TensorSpec, ...], out: OutputRequest, target: OpTarget) -> Node:
    """`node` with its matmul program config fixed as tt-metal chooses it for these
    inputs and output on an empty L1 (unchanged for other operations, or when the
    inputs are refused)."""
    if node.kind not in (OpKind.MATMUL, OpKind.LINEAR) or not isinstance(node.attrs, MatmulAttrs) \
            or node.attrs.program_config is not None:
        return node
    a = node.attrs
    try:
        shapes = MatmulShapes.of(specs[0], specs[1], a.transpose_a, a.transpose_b,
                                 specs[2] if len(specs) > 2 else None)
        compute = node.compute or MATMUL_DEFAULT_COMPUTE
        cfg = generate_config(shapes, out, target, compute, out.dtype or specs[0].dtype, a.core_grid, a.batched)
    except InputError:
        return node
    from dataclasses import replace
    return replace(node, attrs=replace(a, program_config=cfg))


def _largest_divisor_up_to(value: int, most: int) -> int:
    return next(d for d in range(min(value, most), 0, -1) if value % d == 0)


def tt_mlir_matmul_config(s: MatmulShapes, layout: MemoryLayout, box: CoreRange,
                          compute: ComputeConfig | None) -> MatmulProgramConfig | None:
    """The program config tt-mlir gives a matmul or linear whose output is a sharded L1
    layout over the cores of `box` (its bounding box: gridX columns, gridY rows), as
    tenstorrent/tt-mlir lib/Dialect/TTNN/Analysis/MatmulProgramConfig.cpp
    `generateMatmulProgramConfig` writes it (Mt, Nt, Kt: the output's last two
    dimensions and a's last, in tiles; none when b has a batch, tt-metal#42572):

    - width or height sharded: a 1-D multicast config on the box, in0 multicast for
      width shards; per_core_N = ceil(Nt / cores) and per_core_M = Mt (width), or
      per_core_M = ceil(Mt / cores) and per_core_N = Nt (height); in0_block_w = Kt for
      height shards, else 2 (Kt even) or 1 when Nt > 128, else the largest of 8, 4, 2
      dividing Kt (1 when none does); `generateMatmul1DProgramConfig`;
    - block sharded: a 2-D multicast config on the box, per_core_M = ceil(Mt / gridY),
      per_core_N = ceil(Nt / gridX), in0_block_w 2 (Kt even) or 1;
      `generateMatmul2DProgramConfig`;
    - both: out_block = per_core, out_subblock_h 1, out_subblock_w the largest divisor of
      per_core_N up to the destination registers (8; twice that with dst_full_sync_en,
      half with fp32_dest_acc_en: `getMaxSubblockSize`), fuse_batch true.

    Worked example: a [576, 3072] x [3072, 23040] linear width-sharded on 48 cores of an
    8-column grid (box 8 x 6): per_core_M 18, per_core_N 15, in0_block_w 2, subblock 1 x 5."""
    if s.batch_b != 1:
        return None
    most = 8
    if compute is not None and compute.dst_full_sync_en:
        most *= 2
    if compute is not None and compute.fp32_dest_acc_en:
        most //= 2
    grid_x, grid_y = box.width, box.height
    if layout is MemoryLayout.BLOCK_SHARDED:
        per_m, per_n = ceil_div(s.Mt, grid_y), ceil_div(s.Nt, grid_x)
        return MatmulMultiCoreReuseMultiCastProgramConfig(
            (grid_x, grid_y), 2 if s.Kt % 2 == 0 else 1, 1, _largest_divisor_up_to(per_n, most), per_m, per_n,
            per_m, per_n, fuse_batch=True)
    cores = grid_x * grid_y
    mcast_in0 = layout is MemoryLayout.WIDTH_SHARDED
    if mcast_in0:
        per_m, per_n = s.Mt, ceil_div(s.Nt, cores)
        if s.Nt > 128:
            in0_block_w = 2 if s.Kt % 2 == 0 else 1
        else:
            in0_block_w = next((w for w in (8, 4, 2) if s.Kt % w == 0), 1)
    else:
        per_m, per_n = ceil_div(s.Mt, cores), s.Nt
        in0_block_w = s.Kt
    return MatmulMultiCoreReuseMultiCast1DProgramConfig(
        (grid_x, grid_y), in0_block_w, 1, _largest_divisor_up_to(per_n, most), per_m, per_n, fuse_batch=True,
        mcast_in0=mcast_in0, out_block_h=per_m, out_block_w=per_n)
