"""Changes to a TTNN program a user makes without another frontend: an operation's
output moved to DRAM interleaved (tt-mlir's `override-output-layout=OP=dram:interleaved`,
tt-transformers' `memory_config=ttnn.DRAM_MEMORY_CONFIG`).

Worked example: `outputs_to_dram(program, ("layers.0.mlp.w1",))` returns the program
whose operation named `layers.0.mlp.w1` asks for a DRAM-interleaved output in the data
type it asked for before; the operation's rule decides the rest (its CBs may change).
"""

from __future__ import annotations

from dataclasses import replace

from tileplan.errors import InputError, option
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.program import TtProgram


def outputs_to_dram(program: TtProgram, names: tuple[str, ...]) -> TtProgram:
    """`program` with the named operations' outputs in DRAM, interleaved. A name no
    operation has is an error naming it (and a few names the program has)."""
    if not names:
        return program
    known = {op.name for op in program.ops}
    missing = [n for n in names if n not in known]
    if missing:
        some = ", ".join(sorted(known)[:5])
        raise InputError(f"{option('to_dram', repr(missing[0]))}: no operation of {program.name} has that name "
                         f"(some that do: {some})")
    wanted = set(names)
    ops = tuple(replace(op, out=OutputRequest(BufferType.DRAM, MemoryLayout.INTERLEAVED, None, op.out.dtype))
                if op.name in wanted else op for op in program.ops)
    return replace(program, ops=ops)
