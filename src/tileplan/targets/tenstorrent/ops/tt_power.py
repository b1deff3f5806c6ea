"""`ttnn.pow` of a tensor by a float exponent (tt-mlir's `ttnn.pow_scalar`; its runtime
calls `::ttnn::pow(input, exponent)`): tt-metal's eltwise/binary/device composite
`ExecutePower::invoke` (binary_composite_op.cpp, "power - floating point exponent"):

* an exponent that is a whole number: `ttnn::power(input, exponent)`, the unary POWER
  program (unary_program_factory.cpp: c_0 and c_2 of two tiles);
* otherwise, in order, each a program of its own: `log(input)`, its product by the
  exponent's fraction (a scalar binary), `exp` of that (`pow_frac`; the product
  deallocated after it), `power(input, floor)`, the product of the two (`result`),
  `ltz(input)`, and `where(ltz, nan, result)` (tensor, scalar, tensor: the predicate, the
  false value and the output, two tiles each). Temporaries are freed after their one
  reader; `pow_frac` and `result`, named in the function, when it returns.

A negative exponent is refused as tt-metal refuses it ("works for positive exponents
only"); tt-mlir sends those to `ttnn.pow_tensor` from 2026-04-23.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    DeviceBuffer,
    OpPlan,
    OpRequest,
    OutputRequest,
    Program,
    cbuf,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_eltwise import BinaryAttrs, plan_binary, plan_unary
from tileplan.targets.tenstorrent.ops.tt_ternary import SOURCE as TERNARY_SOURCE


@dataclass(frozen=True, slots=True)
class PowScalarAttrs:
    """The exponent."""

    exponent: float


def plan_pow_scalar(kind: OpKind, req: OpRequest, attrs: PowScalarAttrs) -> OpPlan:
    """`ExecutePower::invoke` (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    require(attrs.exponent >= 0, op, f"works for positive exponents only, found {attrs.exponent}")
    if float(math.floor(attrs.exponent)) == attrs.exponent:
        return plan_unary(kind, req)
    interleaved = OutputRequest.of(x.memory, x.dtype)
    steps: list[tuple[str, OpPlan]] = []

    def step(name: str, plan: OpPlan) -> TensorSpec:
        steps.append((name, plan))
        return plan.outputs[0]

    log = step("log", plan_unary(OpKind.LOG, OpRequest((x,), interleaved, req.target)))
    trunc = step("pow_trunc_log", plan_binary(OpKind.MULTIPLY, OpRequest((log,), interleaved, req.target),
                                              BinaryAttrs(scalar=True)))
    frac = step("pow_frac", plan_unary(OpKind.EXP, OpRequest((trunc,), interleaved, req.target)))
    floor = step("power", plan_unary(kind, OpRequest((x,), interleaved, req.target)))
    result = step("result", plan_binary(OpKind.MULTIPLY, OpRequest((floor, frac), interleaved, req.target)))
    ltz = step("ltz", plan_unary(OpKind.LTZ, OpRequest((x,), interleaved, req.target)))
    out = TensorSpec(result.shape, req.out.dtype or result.dtype, result.layout, req.out.memory())
    grid = req.target.grid_range()
    where = Program("TernaryProgramFactory", TERNARY_SOURCE, grid, (
        cbuf(0, "predicate", 2, ltz.dtype.tile_bytes, grid), cbuf(1, "false", 2, result.dtype.tile_bytes, grid),
        cbuf(3, "output", 2, out.dtype.tile_bytes, grid)))
    programs = tuple(plan.programs[0] for _, plan in steps) + (where,)
    #: each step's output: alive from its program to its last reader's (indices in `steps`)
    last = {"log": 1, "pow_trunc_log": 2, "pow_frac": 6, "power": 4, "result": 6, "ltz": 6}
    buffers: list[DeviceBuffer] = [
        tensor_buffer(name, BufferRole.INTERMEDIATE, plan.outputs[0], req.target, (k, last[name]))
        for k, (name, plan) in enumerate(steps)]
    buffers.append(tensor_buffer("output0", BufferRole.OUTPUT, out, req.target, (6, 6)))
    return OpPlan(op, programs, (out,), tuple(buffers))
