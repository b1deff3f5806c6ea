"""KV-cache writes: they write into the cache in place and make no new tensor (the
operation's outputs are empty; the planner allocates nothing for them).

- fill_cache (ttnn/cpp/ttnn/operations/kv_cache/device/fill_cache_multi_core_program_factory.cpp
  `FillCacheMultiCoreProgramFactory::create_descriptor`): input [1, heads, S, D] into the
  cache [B, heads, L, D] at a user's row; a sharded input binds c_0 to its shard, an
  interleaved one streams through c_0 of 2 tiles on the cores `split_work_to_cores` gives
  heads x S / 32 tile rows.
- update_cache (ttnn/cpp/ttnn/operations/kv_cache/device/update_cache_multi_core_program_factory.cpp
  `UpdateCacheMultiCoreProgramFactory::create`): a decode step's [1, heads, B, D] into
  the cache [B, heads, L, D] at one position; granularity g = min(2, cache batch); the
  cache c_0 of 2 g Wt cache tiles, the input c_1 (2 Wt input tiles; bound to its shard
  when sharded), the intermediates c_24 / c_25 (one CB) and c_26 of 2 g Wt tiles each
  (Float32 with fp32 accumulation, else Float16_b), the output c_16 of B Wt cache tiles
  (B the input's padded height); on the `split_work_to_cores` cores of heads x B / 32
  (interleaved input) or the shard grid. Its compute config: the caller's, else
  `init_device_compute_kernel_config`'s default (kv_cache.cpp `update_cache`: no fp32
  accumulation).
- paged_fill_cache (ttnn/cpp/ttnn/operations/experimental/paged_cache/device/fill_cache/
  paged_fill_cache_program_factory.cpp): input [1, heads, S, D] into the paged cache
  [blocks, heads, block, D] through a page table; on the `split_work_to_cores` cores of
  heads x S / 32 tile rows: the input c_0 of 2 Wt tiles and the page table's row c_1
  (one aligned page).
- paged_update_cache (ttnn/cpp/ttnn/operations/experimental/paged_cache/device/update_cache/
  paged_update_cache_program_factory.cpp, read at 0147d780): the decode step's K or V
  [1, B, 32, D] height-sharded one user per core into the cache at each user's position;
  on the input's shard grid: the cache c_0 of 2 Wt tiles (cache dtype), the input c_1
  bound, the shared intermediates c_24 / c_25 (one CB) and c_26 of 2 Wt tiles each
  (Float32 with fp32 accumulation, else Float16_b), the output c_16 of B x Wt cache tiles,
  the position tensor's tile c_2 (with a position tensor), the page table's row c_3
  (paged).
Worked example: Llama-3.1-8B K of one user, bfp8 cache, D 128, Float16_b intermediates:
8 x 1,088 + 8 x 2,048 + 8 x 2,048 + 4 x 1,088 = 45,824 B, plus the int32 position tile
(4,096 B) and the page-table row.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    ComputeConfig,
    MathFidelity,
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    padded_shape4,
    require,
    split_work,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up

KV_DIR = "ttnn/cpp/ttnn/operations/kv_cache/device/"
PAGED_DIR = "ttnn/cpp/ttnn/operations/experimental/paged_cache/device/"
#: paged_update_cache's default compute config (HiFi4, no fp32 accumulation)
UPDATE_CACHE_DEFAULT_COMPUTE = ComputeConfig(MathFidelity.HIFI4, True, False, False)


@dataclass(frozen=True, slots=True)
class CacheAttrs:
    """The page table (paged caches) and the position tensor (`update_idxs_tensor`) as
    specs, when present."""

    page_table: TensorSpec | None = None
    positions: TensorSpec | None = None


def _stick(spec: TensorSpec, req: OpRequest) -> int:
    """One row of a row-major tensor as its buffer holds it (the aligned page)."""
    return round_up(spec.pages().page_bytes, req.target.alignment(spec.memory.buffer_type))


def _work_cores(rows: int, req: OpRequest) -> CoreRangeSet:
    used, _ = split_work(rows, req.target.num_cores)
    return CoreRangeSet.from_count(max(used, 1), *req.target.grid, row_wise=True)


def plan_fill_cache(kind: OpKind, req: OpRequest, attrs: CacheAttrs | None = None) -> OpPlan:
    """fill_cache (inputs: cache, input) and paged_fill_cache (inputs: cache, input, the
    page table; its spec also in attrs)."""
    attrs = attrs or CacheAttrs()
    op = kind.value
    require(len(req.inputs) >= 2, op, "inputs: the cache and the tensor written into it")
    cache, x = req.inputs[:2]
    for t in (cache, x):
        require(t.layout is Layout.TILE and len(t.shape) == 4, op, "cache and input are 4-D TILE tensors")
    require(x.shape[-1] == cache.shape[-1], op, f"head_dim {x.shape[-1]} of the input, {cache.shape[-1]} of the cache")
    _, heads, s, d = padded_shape4(x)
    wt = d // TILE
    rows = x.shape[0] * heads * (s // TILE)
    if kind is OpKind.PAGED_FILL_CACHE:
        require(attrs.page_table is not None, op, "a paged fill takes the page table")
        assert attrs.page_table is not None
        cores = _work_cores(rows, req)
        program = Program("PagedFillCacheProgramFactory", PAGED_DIR + "fill_cache/paged_fill_cache_program_factory.cpp",
                          cores, (cbuf(0, "input", 2 * wt, x.dtype.tile_bytes, cores),
                                  cbuf(1, "page_table", 1, _stick(attrs.page_table, req), cores)))
        return OpPlan(op, (program,), (), ())
    shard = x.memory.shard
    if shard is not None:
        program = Program("FillCacheMultiCoreProgramFactory", KV_DIR + "fill_cache_multi_core_program_factory.cpp",
                          shard.grid, (cbuf(0, "src0", x.shard_pages(), x.dtype.tile_bytes, shard.grid,
                                            globally_allocated=True),))
    else:
        cores = _work_cores(heads * (s // TILE), req)
        program = Program("FillCacheMultiCoreProgramFactory", KV_DIR + "fill_cache_multi_core_program_factory.cpp",
                          cores, (cbuf(0, "src0", 2, x.dtype.tile_bytes, cores),))
    return OpPlan(op, (program,), (), ())


#: update_cache's compute config when none is given (kv_cache.cpp `update_cache` calls
#: `init_device_compute_kernel_config(arch, std::nullopt)`: LoFi, approximate, no fp32
#: accumulation, no packer L1 accumulation)
CACHE_UPDATE_DEFAULT_COMPUTE = ComputeConfig(MathFidelity.LOFI, True, False, False)


def plan_cache_update(kind: OpKind, req: OpRequest, attrs: CacheAttrs | None = None) -> OpPlan:
    """update_cache (inputs: cache, input [1, heads, B, D], the position): in place, its
    circular buffers as the module docstring lists them."""
    op = kind.value
    require(len(req.inputs) >= 2, op, "inputs: the cache and the tensor written into it")
    cache, x = req.inputs[:2]
    for t in (cache, x):
        require(t.layout is Layout.TILE and len(t.shape) == 4, op, "cache and input are 4-D TILE tensors")
    require(x.shape[-1] == cache.shape[-1], op, f"head_dim {x.shape[-1]} of the input, {cache.shape[-1]} of the cache")
    require(padded_shape4(x)[0] == 1, op, f"the input's batch is 1 (found {x.shape[0]})")
    require(x.shape[1] == cache.shape[1], op, f"heads {x.shape[1]} of the input, {cache.shape[1]} of the cache")
    compute = req.compute or CACHE_UPDATE_DEFAULT_COMPUTE
    interm = DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16
    _, heads, users, d = padded_shape4(x)
    wt = d // TILE
    granularity = min(2, cache.shape[0])
    shard = x.memory.shard
    if shard is not None:
        cores = shard.grid
        src1 = cbuf(1, "src1", x.shard_pages(), x.dtype.tile_bytes, cores, globally_allocated=True)
    else:
        cores = _work_cores(heads * users // TILE, req)
        src1 = cbuf(1, "src1", 2 * wt, x.dtype.tile_bytes, cores)
    cbs = (cbuf(0, "src0", 2 * granularity * wt, cache.dtype.tile_bytes, cores), src1,
           cbuf(24, "interm0+interm1", 2 * granularity * wt, interm.tile_bytes, cores),
           cbuf(26, "interm2", 2 * granularity * wt, interm.tile_bytes, cores),
           cbuf(16, "output", users * wt, cache.dtype.tile_bytes, cores))
    program = Program("UpdateCacheMultiCoreProgramFactory", KV_DIR + "update_cache_multi_core_program_factory.cpp",
                      cores, cbs)
    return OpPlan(op, (program,), (), ())


def plan_update_cache(kind: OpKind, req: OpRequest, attrs: CacheAttrs | None = None) -> OpPlan:
    """paged_update_cache (inputs: cache, input, then the positions and the page table
    when present; their specs also in attrs)."""
    attrs = attrs or CacheAttrs()
    op = kind.value
    require(len(req.inputs) >= 2, op, "inputs: the cache and the tensor written into it")
    cache, x = req.inputs[:2]
    require(x.memory.shard is not None and x.layout is Layout.TILE, op,
            "the input is a height-sharded TILE tensor, one user per core")
    assert x.memory.shard is not None
    require(x.shape[-1] == cache.shape[-1], op, f"head_dim {x.shape[-1]} of the input, {cache.shape[-1]} of the cache")
    compute = req.compute or UPDATE_CACHE_DEFAULT_COMPUTE
    interm = DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16
    wt = padded_shape4(x)[3] // TILE
    users = padded_shape4(x)[1]
    cores = x.memory.shard.grid
    cbs = [cbuf(0, "cache", 2 * wt, cache.dtype.tile_bytes, cores),
           cbuf(1, "input", x.shard_pages(), x.dtype.tile_bytes, cores, globally_allocated=True),
           cbuf(24, "interm0+interm1", 2 * wt, interm.tile_bytes, cores),
           cbuf(26, "interm2", 2 * wt, interm.tile_bytes, cores),
           cbuf(16, "output", users * wt, cache.dtype.tile_bytes, cores)]
    if attrs.positions is not None:
        cbs.append(cbuf(2, "index", 1, attrs.positions.dtype.tile_bytes, cores))
    if attrs.page_table is not None:
        cbs.append(cbuf(3, "page_table", 1, attrs.page_table.shape[-1] * attrs.page_table.dtype.element_bytes,
                        cores))
    program = Program("PagedUpdateCacheProgramFactory",
                      PAGED_DIR + "update_cache/paged_update_cache_program_factory.cpp",
                      cores, tuple(cbs))
    return OpPlan(op, (program,), (), ())
