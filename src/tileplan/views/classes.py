"""The classes of a training report's values (docs/report-format.md, "Classes of a
training report"): what people ask of training memory, per tile.

A value's class follows from its role alone (`tileplan.model.role`; never its name),
so `check` re-derives it from the report (with its own code): the stash (`STASH`);
optimizer state (`OPTIMIZER_STATE` on chip, `UPDATE`: the weight update's values,
state loaded from off chip); gradients and their accumulators (`GRADIENT`,
`ACCUMULATOR`); the weights (`WEIGHT`, `BUFFER`: weights, buffers, constants);
everything else activations and temporaries, with every step's scratch. Always live:
the held roles (`Role.held`: the default policy's rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Sequence

from tileplan.model.role import HELD, Role
from tileplan.model.timeline import Value
from tileplan.report.sections import PeakClass

if TYPE_CHECKING:
    from tileplan.report.model import Report

ClassName = Literal["weights", "gradients and accumulators", "optimizer state", "stash",
                    "activations and temporaries"]
#: the classes in the order reports list them
CLASSES: tuple[ClassName, ...] = ("weights", "gradients and accumulators", "optimizer state", "stash",
                                  "activations and temporaries")
OTHER: ClassName = "activations and temporaries"
#: each role's class; a role not listed (the input, activations), or none, is OTHER
CLASS_OF_ROLE: dict[Role, ClassName] = {
    Role.WEIGHT: "weights", Role.BUFFER: "weights", Role.GRADIENT: "gradients and accumulators",
    Role.ACCUMULATOR: "gradients and accumulators", Role.OPTIMIZER_STATE: "optimizer state",
    Role.UPDATE: "optimizer state", Role.STASH: "stash"}


def value_class(role: Role | None) -> ClassName:
    """The class of a value of `role` (see the module docstring)."""
    return OTHER if role is None else CLASS_OF_ROLE.get(role, OTHER)


def class_rows(live: Sequence[tuple[Value, int]], scratch: int) -> tuple[PeakClass, ...]:
    """Bytes per class (always live apart) of the values live on a tile with their
    bytes there, and the step's scratch; always-live rows first, each in `CLASSES`
    order, classes with nothing left out."""
    sums: dict[tuple[bool, ClassName], list[int]] = {}
    for v, b in live:
        entry = sums.setdefault((v.role in HELD, value_class(v.role)), [0, 0])
        entry[0] += b
        entry[1] += 1
    if scratch:
        sums.setdefault((False, OTHER), [0, 0])[0] += scratch
    order = {c: k for k, c in enumerate(CLASSES)}
    return tuple(PeakClass(name=c, always_live=a, bytes=b, values=n)
                 for (a, c), (b, n) in sorted(sums.items(), key=lambda kv: (not kv[0][0], order[kv[0][1]])))


@dataclass(frozen=True, slots=True)
class TrainingClasses:
    """A training report's worst tile at its peak, by class (weights, gradients and
    accumulators, optimizer state, stash, activations and temporaries), always-live
    rows first, with their subtotals."""

    tile: int | None
    step: int | None
    rows: tuple[tuple[str, bool, int, int], ...]

    @property
    def always_live(self) -> int:
        return sum(b for _, live, b, _ in self.rows if live)

    @property
    def not_always_live(self) -> int:
        return sum(b for _, live, b, _ in self.rows if not live)

    def to_json(self) -> dict[str, Any]:
        return {"tile": self.tile, "step": self.step, "always_live": self.always_live,
                "not_always_live": self.not_always_live,
                "classes": [{"name": n, "always_live": a, "bytes": b, "values": v} for n, a, b, v in self.rows]}


def training_classes(report: Report) -> TrainingClasses | None:
    """The worst tile at its peak by class, from a training report's verdict (None
    for an inference report)."""
    verdict = report.sections.verdict
    peak = verdict.peak_tile if verdict is not None else None
    if peak is None or peak.classes is None:
        return None
    return TrainingClasses(peak.tile, peak.step, tuple((c.name, c.always_live, c.bytes, c.values)
                                                      for c in peak.classes))
