"""Moving a tensor between memory configs, and slicing it.

- interleaved_to_sharded (ttnn/cpp/ttnn/operations/data_movement/sharded/
  interleaved_to_sharded/device/interleaved_to_sharded_program_factory.cpp, read at
  019b681e): on the output's shard cores; the output CB (the shard's pages) is bound to
  the output; a data-format change adds an unbound input CB of the shard's pages in the
  input format (and the output CB moves to c_16); the DRAM-to-L1 scratch c_1 of 4 pages
  of align(input page + DRAM alignment, DRAM alignment) is always made (`keep_l1_aligned`
  is forced true: "to match legacy behavior").
- sharded_to_interleaved (.../sharded_to_interleaved/device/
  sharded_to_interleaved_program_factory.cpp): on the input's shard cores; the input CB
  bound to the shard; a data-format change adds c_16 of the shard's pages in the output
  format.
- to_memory_config between two sharded configs: reshard (.../reshard/device/
  reshard_program_factory_generic.cpp): one dataflow buffer bound to the output shard; to
  the same config: nothing (ttnn returns the tensor); between interleaved configs: a copy
  (the unary factory's two tiles in and out).
- slice of a TILE tensor (.../slice/device/slice_program_factory_tile.cpp): c_0 of 2
  tiles on the `split_work_to_cores` cores of the output's tiles.
"""

from __future__ import annotations


from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    output_buffers,
    require,
    split_work,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, Layout, round_up

DIR = "ttnn/cpp/ttnn/operations/data_movement/"
#: copy_program_factory.cpp `round_up_to_mul32`: copy CB pages are 32-B aligned
COPY_PAGE_ALIGNMENT = 32
#: interleaved_to_sharded's scratch: `num_trids` pages
I2S_SCRATCH_PAGES = 4


def _unit(spec: TensorSpec) -> int:
    """One page of the factories' units: a tile, or a row of the shard's width."""
    if spec.layout is Layout.TILE:
        return spec.dtype.tile_bytes
    assert spec.memory.shard is not None
    return spec.memory.shard.shape[1] * spec.dtype.element_bytes


def _shard_units(spec: TensorSpec) -> int:
    assert spec.memory.shard is not None
    h, w = spec.memory.shard.shape
    return (h // TILE) * (w // TILE) if spec.layout is Layout.TILE else h


def plan_interleaved_to_sharded(kind: OpKind, req: OpRequest, attrs: None = None) -> OpPlan:
    (x,) = req.inputs
    op = kind.value
    require(not x.memory.layout.sharded, op, "the input is interleaved")
    require(req.out.sharded and req.out.shard is not None, op,
            "the output is a sharded memory config with a shard spec")
    out_dtype = req.out.dtype or x.dtype
    out = TensorSpec(x.shape, out_dtype, x.layout, req.out.memory())
    assert out.memory.shard is not None
    cores = out.memory.shard.grid
    units = _shard_units(out)
    in_unit = _unit(TensorSpec(x.shape, x.dtype, x.layout, out.memory))
    dram_align = req.target.dram_alignment
    cbs = []
    convert = out_dtype is not x.dtype
    if convert:
        cbs.append(cbuf(0, "input", units, round_up(in_unit, req.target.alignment(x.memory.buffer_type)), cores))
    out_page = round_up(_unit(out), req.target.alignment(out.memory.buffer_type))
    cbs.append(cbuf(16 if convert else 0, "output", units, out_page, cores, globally_allocated=True))
    cbs.append(cbuf(1, "scratch", I2S_SCRATCH_PAGES, round_up(in_unit + dram_align, dram_align), cores))
    program = Program("InterleavedToShardedProgramFactory",
                      DIR + "sharded/interleaved_to_sharded/device/interleaved_to_sharded_program_factory.cpp", cores,
                      tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def plan_sharded_to_interleaved(kind: OpKind, req: OpRequest, attrs: None = None) -> OpPlan:
    (x,) = req.inputs
    op = kind.value
    require(x.memory.shard is not None, op, "the input is sharded")
    require(not req.out.sharded, op, "the output is interleaved")
    assert x.memory.shard is not None
    out_dtype = req.out.dtype or x.dtype
    out = TensorSpec(x.shape, out_dtype, x.layout, req.out.memory())
    cores = x.memory.shard.grid
    units = _shard_units(x)
    cbs = [cbuf(0, "src0", units, round_up(_unit(x), req.target.alignment(x.memory.buffer_type)), cores,
                globally_allocated=True)]
    if out_dtype is not x.dtype:
        unit = _unit(TensorSpec(x.shape, out_dtype, x.layout, x.memory))
        cbs.append(cbuf(16, "output", units, round_up(unit, req.target.alignment(out.memory.buffer_type)), cores))
    program = Program("ShardedToInterleavedProgramFactory",
                      DIR + "sharded/sharded_to_interleaved/device/sharded_to_interleaved_program_factory.cpp", cores,
                      tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def plan_to_memory_config(kind: OpKind, req: OpRequest, attrs: None = None) -> OpPlan:
    """ttnn.to_memory_config: the identity, a reshard, an interleaved-sharded move or a copy."""
    (x,) = req.inputs
    op = kind.value
    out_dtype = req.out.dtype or x.dtype
    if req.out.sharded and x.memory.layout.sharded:
        require(req.out.shard is not None, op, "a reshard needs the output's shard spec")
        out = TensorSpec(x.shape, out_dtype, x.layout, req.out.memory())
        if out.memory == x.memory and out_dtype is x.dtype:
            return OpPlan(op, (), (out,), ())
        assert out.memory.shard is not None
        cores = out.memory.shard.grid
        program = Program("ReshardGenericFactory", DIR + "sharded/reshard/device/reshard_program_factory_generic.cpp",
                          cores, (cbuf(0, "output_shard", _shard_units(out),
                                       round_up(_unit(out), req.target.alignment(out.memory.buffer_type)), cores,
                                       globally_allocated=True),))
        return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
    if req.out.sharded:
        return plan_interleaved_to_sharded(OpKind.INTERLEAVED_TO_SHARDED, req)
    if x.memory.layout.sharded:
        return plan_sharded_to_interleaved(OpKind.SHARDED_TO_INTERLEAVED, req)
    out = TensorSpec(x.shape, out_dtype, x.layout, req.out.memory())
    if out.memory == x.memory and out_dtype is x.dtype:
        return OpPlan(op, (), (out,), ())
    return copy(op, x, out, req)


def copy(op: str, x: TensorSpec, out: TensorSpec, req: OpRequest) -> OpPlan:
    """An interleaved-to-interleaved move (copy_program_factory.cpp): the pages split
    over the grid's first cores as `split_work_to_cores` splits them, two input pages
    a core (32-B aligned, `round_up_to_mul32`), and an output CB only when the dtype
    changes (`convert_dtype`; otherwise the writer reads c_0)."""
    units = x.pages().count
    used, _ = split_work(units, req.target.num_cores)
    cores = CoreRangeSet.from_count(max(used, 1), *req.target.grid, row_wise=True)
    cbs = [cbuf(0, "src0", 2, round_up(x.pages().page_bytes, COPY_PAGE_ALIGNMENT), cores)]
    if out.dtype is not x.dtype:
        cbs.append(cbuf(16, "output", 2, round_up(out.pages().page_bytes, COPY_PAGE_ALIGNMENT), cores))
    program = Program("CopyProgramFactory", DIR + "copy/device/copy_program_factory.cpp", cores, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
