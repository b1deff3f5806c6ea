"""tt-mlir's EraseInverseOps for reshapes around elementwise operations, as a rewrite of
the model's operations (it takes operations and returns operations).

tenstorrent/tt-mlir lib/Dialect/TTIR/Transforms/EraseInverseOps/EraseInverseOps.cpp
commutes tensor manipulations (TMs) upwards and downwards through elementwise operations
(ElementwiseCommutePatterns.cpp) until the number of TMs on the activation paths stops
falling, so a reshape and its inverse with only elementwise operations between them
cancel. torch-xla gives every `nn.Linear` of an N-D input a reshape to 2-D before its
matmul and one back after it, so an MLP's activation and gating (`silu(gate) * up`) run
on the restored N-D shape, the rows above the last dimension tile-padded per batch
([32, 1, 8192] pads to [32, 32, 8192] in TILE); with the pass they run on the matmul's
2-D rows ([32, 8192]). tt-mlir 0005c33b0f (#6195, 2025-12-05, "Enable EIO for all
models", whose description is exactly this MLP) runs the pass on every function; before
it, only on functions with flattened sliding-window operations (a CNN's; devices/
software.toml `erase_inverse_ops`), which the frontend's flattened convolutions model
(context.py `flat_tensor`).

`erase_inverse_reshapes` takes the net effect for this pattern: a reshape whose input is
an elementwise operation, whose region of elementwise operations upwards reads only
reshapes that are its exact inverse (their input has the shape it writes, their output
the shape it reads) and scalar constants, every value inside read only inside it (or,
the region's last value, by the reshape alone): the region runs on the reshapes' input
shape, the reshapes go. Anything else (another reader of an inner value, an operand of
another shape, a constant that is not a scalar) stays as it is.

Worked example (Falcon3-7B's MLP, 32 sequences of 18 tokens): `gate = reshape(matmul(x,
Wg)) -> [32, 18, 23040]`, `up` alike, `reshape(silu(gate) * up) -> [576, 23040]` becomes
`silu(matmul(x, Wg)) * matmul(x, Wu)`, all [576, 23040] (26,542,080 B where the padded
[32, 32, 23040] held 47,185,920 B), and the SiLU then the gate matmul's fused activation
(fusion.py `fuse_activations`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from tileplan.model.ir import Operation
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import BINARY, UNARY

#: the model operators tt-mlir lowers to elementwise TTIR operations (the `Elementwise`
#: trait the commute patterns match): unary and binary eltwise, SiLU, a cast
ELEMENTWISE = frozenset(UNARY) | frozenset(BINARY) | {"silu", "cast"}


def readers(ops: list[Operation], outputs: tuple[str, ...]) -> dict[str, list[int]]:
    """Each value's readers: the indices of the operations reading it, -1 for a program
    output."""
    out: dict[str, list[int]] = {}
    for k, op in enumerate(ops):
        for name in op.inputs:
            out.setdefault(name, []).append(k)
    for name in outputs:
        out.setdefault(name, []).append(-1)
    return out


def _region(work: list[Operation], down: int, by_output: dict[str, int], readers: dict[str, list[int]],
            constant: set[str], shapes: dict[str, tuple[int, ...]]) -> tuple[set[int], set[int]] | None:
    """The elementwise region above reshape `down` and the inverse reshapes it reads, or
    None when the reshapes do not cancel (see the module docstring)."""
    flat = work[down].output_shape
    wide = shapes.get(work[down].inputs[0])
    root = by_output.get(work[down].inputs[0])
    if root is None or wide is None or work[root].kind not in ELEMENTWISE or readers.get(work[root].output) != [down]:
        return None
    region: set[int] = set()
    ups: set[int] = set()
    todo = [root]
    while todo:
        k = todo.pop()
        if k in region:
            continue
        op = work[k]
        if op.kind not in ELEMENTWISE or op.output_shape != wide:
            return None
        region.add(k)
        for name in op.inputs:
            p = by_output.get(name)
            if name in constant and math.prod(shapes.get(name, (0,))) == 1:
                continue
            if p is not None and work[p].kind == "reshape" and len(work[p].inputs) == 1 \
                    and work[p].output_shape == wide and shapes.get(work[p].inputs[0]) == flat:
                ups.add(p)
            elif p is not None and work[p].kind in ELEMENTWISE:
                todo.append(p)
            else:
                return None
    # every value inside is read inside only (the root by `down` alone, checked above)
    for k in region - {root}:
        if any(r < 0 or r not in region for r in readers.get(work[k].output, [])):
            return None
    return region, ups


def erase_inverse_reshapes(ops: tuple[Operation, ...], outputs: tuple[str, ...], constant: set[str],
                           shapes: dict[str, tuple[int, ...]]) -> tuple[Operation, ...]:
    """See the module docstring. `shapes`: every value's shape (not changed: the region's
    new shapes are kept apart)."""
    work = list(ops)
    known = dict(shapes)
    while True:
        reading = readers(work, outputs)
        by_output = {op.output: k for k, op in enumerate(work)}
        for d, down in enumerate(work):
            if down.kind != "reshape" or len(down.inputs) != 1:
                continue
            found = _region(work, d, by_output, reading, constant, known)
            if found is None:
                continue
            region, ups = found
            flat = down.output_shape
            source = {work[u].output: work[u].inputs[0] for u in ups}
            root = by_output[down.inputs[0]]
            for k in region:
                op = work[k]
                work[k] = replace(op, inputs=tuple(source.get(name, name) for name in op.inputs), output_shape=flat,
                                  output=down.output if k == root else op.output)
                known[work[k].output] = flat
            drop = {d} | {u for u in ups if all(r in region for r in reading.get(work[u].output, []))}
            work = [op for k, op in enumerate(work) if k not in drop]
            break
        else:
            return tuple(work)
