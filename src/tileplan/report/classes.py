"""The classes of a training report's values (docs/report-format.md, "Classes of a
training report"): what people ask of training memory, per tile.

A value's class follows from its role and its name alone, so `check` re-derives it
(with its own code): a name holding `[stash]` is the stash, `[optimizer` optimizer
state (on chip, or loaded for the weight update), `[gradient` gradients and their
accumulators; any other parameter (role `parameter`: weights, buffers, constants) the
weights; everything else activations and temporaries, with every step's scratch.
Always live: role `parameter` (the default policy's rule).
"""

from __future__ import annotations

from typing import Sequence

from tileplan.model.timeline import Value
from tileplan.report.sections import PeakClass

#: the classes in the order reports list them
CLASSES = ("weights", "gradients and accumulators", "optimizer state", "stash", "activations and temporaries")


def value_class(role: str | None, name: str) -> str:
    """The class of a value of `role` named `name` (see the module docstring)."""
    if "[stash]" in name:
        return "stash"
    if "[optimizer" in name:
        return "optimizer state"
    if "[gradient" in name:
        return "gradients and accumulators"
    if role == "parameter":
        return "weights"
    return "activations and temporaries"


def class_rows(live: Sequence[tuple[Value, int]], scratch: int) -> tuple[PeakClass, ...]:
    """Bytes per class (always live apart) of the values live on a tile with their
    bytes there, and the step's scratch; always-live rows first, each in `CLASSES`
    order, classes with nothing left out."""
    sums: dict[tuple[bool, str], list[int]] = {}
    for v, b in live:
        entry = sums.setdefault((v.role == "parameter", value_class(v.role, v.name)), [0, 0])
        entry[0] += b
        entry[1] += 1
    if scratch:
        sums.setdefault((False, "activations and temporaries"), [0, 0])[0] += scratch
    order = {c: k for k, c in enumerate(CLASSES)}
    return tuple(PeakClass(name=c, always_live=a, bytes=b, values=n)  # type: ignore[arg-type]
                 for (a, c), (b, n) in sorted(sums.items(), key=lambda kv: (not kv[0][0], order[kv[0][1]])))
