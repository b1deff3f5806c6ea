"""The DRAM-sharded matmul tt-transformers uses for decode: in0 width-sharded in L1,
the weights width-sharded over the DRAM banks
(ttnn/cpp/ttnn/operations/matmul/device/factory/
matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp).

Circular buffers: in0 c_0 = per_core_M x in0_block_w, doubled; in1 c_1 = in0_block_w x
per_core_N, tripled; in0's shard bound to c_2; output c_4 of per_core_M x per_core_N
(sharing its memory with interm0 c_5 when their formats agree); bias c_3 of per_core_N;
the output's shard bound to the reshard c_6. The compute cores are the workers the
factory pairs with the DRAM banks (one per bank), taken here as the first `dram_banks`
cores of the grid; the factory pads per_core_N per bank, which this rule does not.
"""

from __future__ import annotations

from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import cbuf, ComputeConfig, OpTarget, Program, require
from tileplan.targets.tenstorrent.ops.tt_matmul_config import (
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulShapes,
)
from tileplan.targets.tenstorrent.tiles import DataType

SOURCE = ("ttnn/cpp/ttnn/operations/matmul/device/factory/"
          "matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp")


def program_dram_sharded(cfg: MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig, s: MatmulShapes,
                         out_sharded: bool, out_dtype: DataType, bias: TensorSpec | None, compute: ComputeConfig,
                         target: OpTarget) -> Program:
    """The factory's circular buffers (see the module docstring)."""
    require(s.a.memory.shard is not None, "ttnn.matmul", "the DRAM-sharded matmul takes a width-sharded in0")
    assert s.a.memory.shard is not None
    num_blocks = s.Kt // cfg.in0_block_w
    packer = compute.packer_l1_acc and num_blocks > 1
    interm = DataType.FLOAT32 if compute.fp32_dest_acc_en else (DataType.BFLOAT16 if packer else out_dtype)
    cores = CoreRangeSet.from_count(min(target.dram_banks, target.num_cores), *target.grid)
    block = cfg.per_core_M * cfg.per_core_N
    cbs = [cbuf(0, "in0", cfg.per_core_M * cfg.in0_block_w * 2, s.a.dtype.tile_bytes, cores),
           cbuf(1, "in1", cfg.in0_block_w * cfg.per_core_N * 3, s.b.dtype.tile_bytes, cores),
           cbuf(2, "in2", s.a.shard_pages(), s.a.dtype.tile_bytes, cores, globally_allocated=True)]
    if interm is out_dtype:
        cbs.append(cbuf(4, "output+interm0", block, out_dtype.tile_bytes, cores))
    else:
        cbs.append(cbuf(4, "output", block, out_dtype.tile_bytes, cores))
        cbs.append(cbuf(5, "interm0", block, interm.tile_bytes, cores))
    if bias is not None:
        cbs.append(cbuf(3, "bias", cfg.per_core_N, bias.dtype.tile_bytes, cores))
    if out_sharded:
        cbs.append(cbuf(6, "out_reshard", block, out_dtype.tile_bytes, cores, globally_allocated=True))
    return Program("MatmulMultiCoreReuseMultiCastDRAMShardedProgramFactory", SOURCE, cores, tuple(cbs))
