"""Memory that is not tensors: vertex code, vertex state, exchange code, control code
and stack, per tile, estimated from a plan's steps.

The model (docs/report-format.md, "Memory that is not tensors"), per tile:

* vertex code: 550 B for each kind of compute step (the operation text up to its
  first field: `Gemm { multiply: F16`, `Binary { op: Add`, ...); paid once per kind,
  however many layers use it;
* vertex state: 229 B for each compute step (`StepKind.compute`: not a `Copy` or a
  `View`);
* control code: 165 B for each program step (`StepKind.program`: every step but a
  `View`, which is no program);
* exchange code: 221 B for each step that exchanges (its lowering says so:
  `tileplan.planner.exchange`);
* stack: 3200 B (6 workers x 512 B + 128 B for the supervisor).

A step of a repeat block counts once: its code and state are reused by every
iteration. So does each distinct operation of a training program (`Mode.TRAINING`),
whose layers are not a repeat block but which PopART outlines: one program and its
vertices serve every layer's copy of an operation. Calibration:
Graphcore's published breakdown of BERT-Large inference on two IPUs (graphcore/popliner
tests: 6.6 KB vertex code, 8.7 KB vertex state, 10.6 KB
exchange code, 11.2 KB control code per tile on average on IPU 0) divided by the
counts of tileplan's plan of the same model's first IPU (transformers' BertConfig
with BERT-Large's sizes, sequence 384, F16 weights, `--layers-per-ipu 12,12`: 12 kinds,
38 compute steps, 68 program steps, 48 exchanging steps). Uncertainty: the constants
fit one model; tileplan's steps are coarser than Poplar's compute sets, so another
model's figures may be off by half either way (PopLiner, which reads real profiles,
is 10-17 % off at the worst tile). tileplan's budgets keep the reference's fixed
`support_reserve_bytes` for this memory; the estimate says whether that reserve is
enough, and the verdict names an estimate over it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from tileplan.kernel.fragment import StepKind

VERTEX_CODE_PER_KIND = 550
VERTEX_STATE_PER_STEP = 229
CONTROL_CODE_PER_STEP = 165
EXCHANGE_CODE_PER_STEP = 221
STACK_BYTES = 6 * 512 + 128


def step_kind(operation: str) -> str:
    """`Gemm { multiply: F16, ... }` -> `Gemm { multiply: F16`."""
    return re.split(r"[,}]", operation, maxsplit=1)[0].strip()


@dataclass(frozen=True, slots=True)
class NonTensor:
    """Per-tile bytes of each class, and the counts they come from."""

    vertex_code: int
    vertex_state: int
    exchange_code: int
    control_code: int
    stack: int
    kinds: int
    compute_steps: int
    program_steps: int
    exchange_steps: int

    @property
    def total(self) -> int:
        return self.vertex_code + self.vertex_state + self.exchange_code + self.control_code + self.stack


def estimate_non_tensor(operations: Sequence[str], kinds: Sequence[StepKind], exchanging: Sequence[bool],
                        uses: Sequence[int]) -> NonTensor:
    """The estimate from a plan's distinct operations: each one's text, step kind,
    whether it exchanges, and how many steps run it (`uses`)."""
    assert len(operations) == len(kinds) == len(exchanging) == len(uses)
    program = compute = exchange = 0
    vertices = set()
    for text, kind, x, n in zip(operations, kinds, exchanging, uses):
        if not n:
            continue
        program += n if kind.program else 0
        if kind.compute:
            compute += n
            vertices.add(step_kind(text))
        exchange += n if x else 0
    return NonTensor(len(vertices) * VERTEX_CODE_PER_KIND, compute * VERTEX_STATE_PER_STEP,
                     exchange * EXCHANGE_CODE_PER_STEP, program * CONTROL_CODE_PER_STEP, STACK_BYTES,
                     len(vertices), compute, program, exchange)
