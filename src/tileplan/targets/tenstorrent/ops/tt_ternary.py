"""`ttnn.where`: tt-metal's ternary device operation, tensor-tensor-tensor (the only form
tt-mlir emits: its runtime calls `::ttnn::where(first, second, third, memory_config)`,
tt-mlir runtime/lib/ttnn/operations/eltwise/ternary/where.cpp).

tt-metal ttnn/cpp/ttnn/operations/eltwise/ternary/ternary.cpp (`where`, TTT) picks the
broadcast type (device/ternary_op_utils.cpp `get_broadcast_type`: `broadcast_type`
here); one that is INVALID_BCAST falls back to the composite `where_impl`, which this
rule does not model. Otherwise `TernaryDeviceOperation::TernaryProgramFactory`
(device/ternary_program_factory.cpp) runs on every worker core of the device
(`split_work_to_cores` over the output tiles; cores given no tiles hold the circular
buffers too) with, per core, in creation order (`num_tiles_per_cb = 2`):

* c_0 the predicate, c_1 the true value, c_2 the false value, each 2 tiles of its own
  data type (a sharded operand under native L1 sharding: its shard's tiles, bound to
  its buffer);
* for a ROW_BCAST only, c_4, c_5 and c_6: 2 tiles each, of the predicate's, the true
  value's and the false value's data types;
* c_3 the output, 2 tiles of its data type (bound to the output's shard likewise).

The output (`TernaryDeviceOperation::compute_output_specs`): the operands' broadcast
shape, TILE, the true value's data type unless asked otherwise, the memory config asked
for. tt-mlir's OpModel test at 78b9ce3d03 (tt-metal f4163c25) asserts the 16,384 B of
circular buffers of a bf16 [64, 1024] where (test/unittests/OpModel/TTNN/Lib/
TestOpModelLib.cpp `TEST_F(OpModelTest, Where)`): four CBs of two 2,048 B tiles.
"""

from __future__ import annotations

from enum import Enum

from tileplan.targets.tenstorrent.memory import CoreRange, CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    CircularBuffer,
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    output_buffers,
    require,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_eltwise import broadcast_shape
from tileplan.targets.tenstorrent.tiles import Layout

SOURCE = "ttnn/cpp/ttnn/operations/eltwise/ternary/device/ternary_program_factory.cpp"

#: circular buffer pages per operand (`num_tiles_per_cb`)
PAGES = 2


class TernaryBroadcast(Enum):
    """tt-metal's `TernaryBroadcastType` of three tensors."""

    NONE = "none"
    OUTER = "outer"
    ROW = "row"
    COL = "col"
    SCALAR = "scalar"
    INVALID = "invalid"


def _hw(shape: tuple[int, ...]) -> tuple[int, int]:
    """(height, width): the last two dimensions, a missing one 1."""
    dims = (1, 1) + tuple(shape)
    return dims[-2], dims[-1]


def broadcast_type(pred: tuple[int, ...], true: tuple[int, ...], false: tuple[int, ...]) -> TernaryBroadcast:
    """ternary_op_utils.cpp `get_broadcast_type` (the TTT overload): equal shapes NONE;
    equal last two dimensions OUTER; both of them differing: SCALAR when each operand is
    a scalar or whole in them, else INVALID; heights differing with one operand of
    height 1 and the widths equal ROW; widths differing with one of width 1 and the
    heights equal COL; anything else INVALID."""
    if pred == true == false:
        return TernaryBroadcast.NONE
    (ph, pw), (th, tw), (fh, fw) = _hw(pred), _hw(true), _hw(false)
    same_w = pw == tw == fw
    same_h = ph == th == fh
    if same_h and same_w:
        return TernaryBroadcast.OUTER
    max_h, max_w = max(ph, th, fh), max(pw, tw, fw)
    if not same_h and not same_w:
        ok = all((h == 1 and w == 1) or (h == max_h and w == max_w) for h, w in ((ph, pw), (th, tw), (fh, fw)))
        return TernaryBroadcast.SCALAR if ok else TernaryBroadcast.INVALID
    if not same_h and any(h == 1 for h in (ph, th, fh)) and max_h > 1 and same_w:
        return TernaryBroadcast.ROW
    if not same_w and any(w == 1 for w in (pw, tw, fw)) and max_w > 1 and same_h:
        return TernaryBroadcast.COL
    return TernaryBroadcast.INVALID


def _native_sharding(pred: TensorSpec, true: TensorSpec, false: TensorSpec, req: OpRequest) -> bool:
    """ternary_op_utils.cpp `is_native_L1_sharding`: equal shapes and memory configs,
    sharded in L1, the output sharded alike."""
    if not (pred.shape == true.shape == false.shape and pred.memory == true.memory == false.memory):
        return False
    if not pred.memory.layout.sharded or not req.out.sharded:
        return False
    assert pred.memory.shard is not None
    return req.out.shard is None or req.out.shard.grid == pred.memory.shard.grid


def plan_where(kind: OpKind, req: OpRequest, attrs: None = None) -> OpPlan:
    """`TernaryProgramFactory` for WHERE, tensor-tensor-tensor (see the module docstring)."""
    op = kind.value
    require(len(req.inputs) == 3, op, f"a predicate, a true and a false tensor expected, found {len(req.inputs)} "
            "inputs (tt-mlir passes a scalar as a ttnn.full tensor)")
    pred, true, false = req.inputs
    for name, spec in (("predicate", pred), ("true value", true), ("false value", false)):
        require(spec.layout is Layout.TILE, op, f"the {name} must be TILE, found {spec.layout.value}")
    bcast = broadcast_type(pred.shape, true.shape, false.shape)
    require(bcast is not TernaryBroadcast.INVALID, op,
            f"shapes {list(pred.shape)}, {list(true.shape)}, {list(false.shape)} make an INVALID_BCAST, which "
            "ternary.cpp runs as the composite where_impl (not modelled)")
    shape = broadcast_shape(broadcast_shape(pred.shape, true.shape, op), false.shape, op)
    native = _native_sharding(pred, true, false, req)
    require(native or not (req.out.sharded or any(s.memory.layout.sharded for s in req.inputs)), op,
            "sharded operands or output without native L1 sharding (equal shapes and memory configs) are not modelled")
    out_dtype = req.out.dtype or true.dtype
    out = TensorSpec(shape, out_dtype, Layout.TILE,
                     req.out.memory(pred.memory.shard if native and req.out.shard is None else None))
    cores: CoreRange | CoreRangeSet = req.target.grid_range()
    if native:
        assert pred.memory.shard is not None
        cores = pred.memory.shard.grid

    def operand(index: int, name: str, spec: TensorSpec) -> CircularBuffer:
        if native:
            return cbuf(index, name, spec.shard_pages(), spec.dtype.tile_bytes, cores, globally_allocated=True)
        return cbuf(index, name, PAGES, spec.dtype.tile_bytes, cores)

    cbs = [operand(0, "predicate", pred), operand(1, "true", true), operand(2, "false", false)]
    if bcast is TernaryBroadcast.ROW:
        cbs += [cbuf(4, "predicate_bcast", PAGES, pred.dtype.tile_bytes, cores),
                cbuf(5, "true_bcast", PAGES, true.dtype.tile_bytes, cores),
                cbuf(6, "false_bcast", PAGES, false.dtype.tile_bytes, cores)]
    cbs.append(operand(3, "output", out))
    program = Program("TernaryProgramFactory", SOURCE, cores, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
