"""Which steps exchange data between tiles, and the exchange rows they reserve.

Byte model (docs/report-format.md): every step that moves data between tiles needs
exchange code on each tile; tileplan reserves one exchange row per such step of the
timeline (a step of a repeat block counts once: its code is reused by every
iteration), each row costing the machine's `exchange_row_bytes` on every tile. A step
exchanges when its operation text starts with `Sum `, `AttentionScores `,
`AttentionValues ` or `AttentionStreamed `, or is a `Copy ` with
`reuse_local: false`, or says `exchange: true` anywhere (a `LayerNorm` statistics
step, a reduction, a gather, a broadcast operand brought to the tiles that need it).
"""

from __future__ import annotations

from typing import Iterable

_ALWAYS = ("Sum ", "AttentionScores ", "AttentionValues ", "AttentionStreamed ")


def exchanges(operation: str) -> bool:
    if operation.startswith(_ALWAYS):
        return True
    if operation.startswith("Copy ") and "reuse_local: false" in operation:
        return True
    return "exchange: true" in operation


def exchange_rows(operations: Iterable[str]) -> int:
    return sum(exchanges(op) for op in operations)
