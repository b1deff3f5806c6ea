"""The DRAM-sharded matmul tt-transformers uses for decode and the LM head: in0
width-sharded in L1, the weights width-sharded over the DRAM banks
(ttnn/cpp/ttnn/operations/matmul/device/factory/
matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp
`create_program_dram_sharded_descriptor`, read at 01502698).

One worker reads each DRAM bank (`get_optimal_dram_bank_to_reader_assignment`); banks
holding only the weights' padding get no worker. Each worker computes
per_core_N_compute = ceil(N / workers) output tiles, its subblock from
`get_matmul_subblock_params`, then (subblock height 1) widened up to 8 (4 with fp32
accumulation) while that lowers the subblock count, per_core_N_compute rounded up to
whole subblocks. Circular buffers, the same on every core of the rectangle bounding the
in0 shards and the workers (taken here as the whole compute grid, the readers sit by the
DRAM banks around it): in0 c_0 per_core_M x in0_block_w, doubled when batch x blocks > 1;
in1 c_1 ceil(N / workers) x in0_block_w, tripled; in0's shard bound to c_2; the output
c_4 per_core_M x per_core_N_compute (output dtype) sharing its memory with the interm0
c_5 when their formats agree, else c_5 apart (Float32 with fp32 accumulation; Float16_b
when the packer accumulates in L1 over more than one block; else the output's format);
the output shard bound to c_6 (per_core_M x the config's per_core_N); the bias c_3
per_core_N_compute tiles.
Worked example (tt-frontends A10): Llama-3.1-8B's LM head split of 42,752 columns on N150
(1,336 tiles over 12 banks: 112 a worker, subblock 1 x 8), in0_block_w 2, 64 blocks, bfp8
weights and output, HiFi2 with packer L1 accumulation: 8,192 + 731,136 + 121,856 +
229,376 = 1,090,560 B.
"""

from __future__ import annotations

from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, OpTarget, Program, cbuf, ceil_div, require
from tileplan.targets.tenstorrent.ops.tt_matmul_config import (
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulShapes,
    matmul_subblock,
)
from tileplan.targets.tenstorrent.tiles import TILE, DataType

SOURCE = ("ttnn/cpp/ttnn/operations/matmul/device/factory/"
          "matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp")


def dram_workers(s: MatmulShapes, banks: int) -> int:
    """The DRAM readers, less those whose bank holds only padding of the weights."""
    shard = s.b.memory.shard
    if shard is None:
        return banks
    width = shard.shape[1] // TILE
    padded = width * banks
    if padded > s.Nt:
        banks -= (padded - s.Nt) // width
    return banks


def compute_width(per_core_m: int, per_core_n: int, fp32: bool) -> tuple[int, int]:
    """(subblock width, per_core_N_compute): get_matmul_subblock_params, then widened."""
    h, w = matmul_subblock(per_core_m, per_core_n, False, False, fp32)
    max_w = 4 if fp32 else 8
    if h == 1 and w < max_w:
        count = per_core_n // w
        best = w
        for candidate in range(w + 1, max_w + 1):
            n = ceil_div(per_core_n, candidate)
            if n < count:
                count, best = n, candidate
        w = best
        return w, w * count
    return w, per_core_n


def program_dram_sharded(cfg: MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig, s: MatmulShapes,
                         out_sharded: bool, out_dtype: DataType, bias: TensorSpec | None, compute: ComputeConfig,
                         target: OpTarget) -> Program:
    """The factory's circular buffers (see the module docstring)."""
    require(s.a.memory.shard is not None, "ttnn.matmul", "the DRAM-sharded matmul takes a width-sharded in0")
    assert s.a.memory.shard is not None
    workers = dram_workers(s, target.dram_banks)
    sender = ceil_div(s.Nt, workers)
    _, pcn = compute_width(cfg.per_core_M, sender, compute.fp32_dest_acc_en)
    num_blocks = s.Kt // cfg.in0_block_w
    packer = compute.packer_l1_acc and num_blocks > 1
    if compute.fp32_dest_acc_en:
        interm = DataType.FLOAT32
    else:
        interm = DataType.BFLOAT16 if packer else out_dtype
    cores = target.grid_range()
    batch = s.batch_a
    double = 2 if batch * num_blocks > 1 else 1
    triple = 3 if batch * num_blocks > 1 else 1
    block = cfg.per_core_M * pcn
    in0_shard_w = s.a.memory.shard.shape[1] // TILE
    cbs = [cbuf(0, "in0", cfg.per_core_M * cfg.in0_block_w * double, s.a.dtype.tile_bytes, cores),
           cbuf(1, "in1", sender * cfg.in0_block_w * triple, s.b.dtype.tile_bytes, cores),
           cbuf(2, "in0_sharded", cfg.per_core_M * in0_shard_w, s.a.dtype.tile_bytes, cores, globally_allocated=True)]
    if interm is out_dtype:
        cbs.append(cbuf(4, "output+interm0", block, out_dtype.tile_bytes, cores))
    else:
        cbs.append(cbuf(4, "output", block, out_dtype.tile_bytes, cores))
        cbs.append(cbuf(5, "interm0", block, interm.tile_bytes, cores))
    cbs.append(cbuf(6, "out_reshard", cfg.per_core_M * cfg.per_core_N, out_dtype.tile_bytes, cores,
                    globally_allocated=True))
    if bias is not None:
        cbs.append(cbuf(3, "bias", pcn, bias.dtype.tile_bytes, cores))
    return Program("MatmulMultiCoreReuseMultiCastDRAMShardedProgramFactory", SOURCE, cores, tuple(cbs))
