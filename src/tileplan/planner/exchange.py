"""The exchange rows a plan reserves for the steps that exchange.

Byte model (docs/report-format.md): every step that moves data between tiles needs
exchange code on each tile; tileplan reserves one exchange row per such step of the
timeline (a step of a repeat block counts once: its code is reused by every
iteration), each row costing the machine's `exchange_row_bytes` on every tile.
Whether a step exchanges is its lowering's to say (`FragmentStep.exchange`, carried
by `StepDraft.exchange`); its text says the same to readers of the report: a `Sum`,
an `AttentionScores`, `AttentionValues` or `AttentionStreamed`, a `Copy` with
`reuse_local: false`, or `exchange: true` anywhere (`tileplan check` re-derives the
rows from the text: `tileplan.check.driver.exchanges`).
"""

from __future__ import annotations

from typing import Sequence


def exchange_rows(uses: Sequence[int], exchanging: Sequence[bool]) -> int:
    """The rows of steps whose operations exchange: `uses[t]` steps of the t-th
    distinct operation, which exchanges when `exchanging[t]`."""
    assert len(uses) == len(exchanging), (len(uses), len(exchanging))
    return sum(n for n, x in zip(uses, exchanging) if x)
