"""Training over several IPUs: the split the search of `tileplan.planner.pipeline`
sees of a training program.

A training pipeline's IPU i holds more than its layers' weights: its stash is
2(S - 1 - s) + 1 micro-batches deep for its forward stage s of S
(`tileplan.importers.training_stages`), so what fits on it depends on its position and
on N, not only on its layer count (unlike inference, whose stages
`tileplan.planner.pipeline.ProgramSplit` keeps by count, first and last). The margin of
IPU k of N with c layers is that of IPU k's program when the other IPUs share the
other layers evenly, kept by (N, k, c).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from tileplan.errors import InputError
from tileplan.model.ir import Program
from tileplan.planner.pipeline import margin
from tileplan.planner.plan import Plan

#: the program of IPU `ipu` when the layers are split `counts`
IpuProgram = Callable[[tuple[int, ...], int], Program]


@dataclass
class TrainingSplit:
    """A training program's layers split over IPUs: `program` makes each IPU's
    program, `plan` plans it."""

    layers: int
    program: IpuProgram
    plan: Callable[[Program], Plan]
    _margins: dict[tuple[int, int, int], int | None] = field(init=False, default_factory=dict)

    def plans(self, counts: tuple[int, ...]) -> tuple[Plan, ...]:
        return tuple(self.plan(self.program(counts, ipu)) for ipu in range(len(counts)))

    def margin(self, n: int, k: int, count: int) -> int | None:
        key = (n, k, count)
        if key not in self._margins:
            self._margins[key] = self._ipu(n, k, count)
        return self._margins[key]

    def _ipu(self, n: int, k: int, count: int) -> int | None:
        if n == 1:
            return margin(self.plan(self.program((count,), 0)))
        rest = self.layers - count
        others = [rest // (n - 1) + (1 if j < rest % (n - 1) else 0) for j in range(n - 1)]
        counts = (*others[:k], count, *others[k:])
        try:
            return margin(self.plan(self.program(counts, k)))
        except InputError:  # the IPU would run nothing (no layer, and the head is on IPU 0)
            return None
