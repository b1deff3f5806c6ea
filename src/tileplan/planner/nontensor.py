"""All the memory on a tile that is not tensors, by Poplar's categories, estimated
per operation from a plan's steps (docs/report-format.md, "Memory that is not
tensors"; the sources: docs/notes/NON-TENSOR.md).

Poplar's memory report names, per tile, beside the variables: Vertex Code, Vertex
Instances (vertex state), Internal Exchange Code, Control Code and Stack, among others
(graphcore/tensorflow `tensorflow/compiler/plugin/poplar/docs/logging.rst`, "Reading the
Poplar textual summary report"; libpva's `tile.memory.category.*`). They are always
live. tileplan counts, per tile:

* **vertex code**: per kind of compute step (the operation text up to its first field:
  `Gemm { multiply: F16`, `Binary { op: Add`, ...), once however many steps use it: a
  vertex type's code is paid once on a tile that runs it (graphcore/popliner
  `popliner/stage.py` `code_bytes_by_tile`);
* **vertex state**: per compute step run (not a `Copy` or a `View`): each puts its
  vertex instances on the tiles (popliner `popliner/operation.py` `_get_program`,
  `count x vertex.type.size`);
* **internal exchange code**: per step that exchanges (its lowering says so:
  `tileplan.planner.exchange`; popliner takes the code of each `DoExchange` program);
* **control code**: per program step (every step but a `View`, which is no program;
  popliner counts the childless programs' control code);
* **stack**: 3,168 B, the one published figure (the same text: "Stack: 3,168 B" for one
  tile, 3,852,288 B over a Mk1's 1,216 tiles). Poplar sizes the stack from the
  codelets' declared use (`DEF_STACK_USAGE` in PopLibs' assembly codelets); no Mk2
  figure is published, so the Mk1 one stands for every machine.

The bytes of one unit of each category are not published per vertex or program, so
each is measured on one published profile: the category's bytes summed over the
tiles of the first IPU of PopLiner's split of BERT-Large SQuAD inference (graphcore/
popliner `tests/test_popart_bert_inf.py` `test_json_output`, stage 0: vertex code
9,664,672 B, vertex state 12,826,418 B, exchange code 15,544,264 B, control code
16,535,740 B over 1472 tiles) divided by the tiles and by tileplan's count of the same
program (`tests/fidelity_cases.py` `bert-large-inference-profile-split`, IPU 0,
counted `Outlining.PER_LAYER` as that profile was compiled: 13 kinds, 276 compute,
337 program and 284 exchanging steps). An estimate is `ceil(count x published /
(tiles x calibration count))`, exact integers. That row is calibration for this model;
`tests/test_nontensor.py` re-derives the counts, so a lowering that changes them shows.

What a category's bytes are for a count is an average over the tiles: the model puts
the same non-tensor bytes on every tile, where Poplar puts a vertex's state and code
only on the tiles that run it. PopLiner's own reconstruction, which reads real
profiles, is 10.8-17.5 % under the worst real tile (popliner
`tests/test_single_stage.py`).

Outlining decides the counts (`Outlining`): PopART outlines identical subgraphs, so by
default a repeat block's steps count once, and so does each distinct operation of a
training program (one program and its vertices serve every layer's copy). PopLiner's
profiles were compiled with `POPART_POPLINER_OUTLINER_REGEX`, which keeps each layer's
programs its own (graphcore/popart `docs/user_guide/env_vars.rst`: "Used to help
reproduce multi-IPU outlining when compiling for a single IPU"): there every step run
counts (a repeat block's steps once per iteration), the vertex code still once per
kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tileplan.kernel.fragment import StepKind
from tileplan.kernel.options import Outlining

#: Poplar's stack per tile: graphcore/tensorflow tensorflow/compiler/plugin/poplar/docs/
#: logging.rst ("Stack: 3,168 B" on one tile; 3,852,288 B over 1,216 tiles)
STACK_BYTES = 3168
#: the calibration profile's tiles (one Mk2 IPU)
CALIBRATION_TILES = 1472


@dataclass(frozen=True, slots=True)
class Rate:
    """One category's bytes per unit, as measured: `published` bytes summed over
    `tiles` tiles for `count` units of tileplan's count of the same program."""

    published: int
    tiles: int
    count: int

    def __post_init__(self) -> None:
        if min(self.published, self.tiles, self.count) < 1:
            raise ValueError(f"a rate needs positive figures, found {self}")

    def bytes_for(self, units: int) -> int:
        """Bytes per tile for `units` units: ceil(units x published / (tiles x count))."""
        return -(-units * self.published // (self.tiles * self.count))


#: graphcore/popliner tests/test_popart_bert_inf.py test_json_output, stage 0, over
#: tileplan's counts of that program (module docstring)
VERTEX_CODE = Rate(9_664_672, CALIBRATION_TILES, 13)
VERTEX_STATE = Rate(12_826_418, CALIBRATION_TILES, 276)
EXCHANGE_CODE = Rate(15_544_264, CALIBRATION_TILES, 284)
CONTROL_CODE = Rate(16_535_740, CALIBRATION_TILES, 337)


def step_kind(operation: str) -> str:
    """`Gemm { multiply: F16, ... }` -> `Gemm { multiply: F16`."""
    return re.split(r"[,}]", operation, maxsplit=1)[0].strip()


@dataclass(frozen=True, slots=True)
class NonTensor:
    """Per-tile bytes of each category, the counts they come from and the outlining
    they were counted under. Invariant: bytes and counts are not negative."""

    vertex_code: int
    vertex_state: int
    exchange_code: int
    control_code: int
    stack: int
    kinds: int
    compute_steps: int
    program_steps: int
    exchange_steps: int
    outlining: Outlining = Outlining.SHARED

    def __post_init__(self) -> None:
        for name in ("vertex_code", "vertex_state", "exchange_code", "control_code", "stack", "kinds",
                     "compute_steps", "program_steps", "exchange_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"non-tensor {name} must not be negative, found {getattr(self, name)}")

    @property
    def total(self) -> int:
        return self.vertex_code + self.vertex_state + self.exchange_code + self.control_code + self.stack

    @property
    def code_and_state(self) -> int:
        """The four categories PopLiner's `max_tile_mem` adds to the variables (vertex
        code and state, exchange and control code): all but the stack."""
        return self.total - self.stack


def uses(operation: np.ndarray, execution_count: np.ndarray, texts: int, training: bool,
         outlining: Outlining) -> list[int]:
    """How many times each of `texts` operation texts counts (`operation`: each step's
    text; `execution_count`: each step's runs): `SHARED`, each step once (a repeat
    block's steps once), a training program's distinct texts once; `PER_LAYER`,
    every run."""
    if outlining is Outlining.PER_LAYER:
        return np.bincount(operation, weights=execution_count, minlength=texts).astype(np.int64).tolist()
    counted = np.bincount(operation, minlength=texts).tolist()
    return [min(1, n) for n in counted] if training else counted


def estimate_non_tensor(operations: Sequence[str], kinds: Sequence[StepKind], exchanging: Sequence[bool],
                        counted: Sequence[int], outlining: Outlining = Outlining.SHARED) -> NonTensor:
    """The estimate from a plan's distinct operations: each one's text, step kind,
    whether it exchanges, and how many times it counts (`uses`)."""
    assert len(operations) == len(kinds) == len(exchanging) == len(counted)
    program = compute = exchange = 0
    vertices = set()
    for text, kind, x, n in zip(operations, kinds, exchanging, counted):
        if not n:
            continue
        program += n if kind.program else 0
        if kind.compute:
            compute += n
            vertices.add(step_kind(text))
        exchange += n if x else 0
    return NonTensor(VERTEX_CODE.bytes_for(len(vertices)), VERTEX_STATE.bytes_for(compute),
                     EXCHANGE_CODE.bytes_for(exchange), CONTROL_CODE.bytes_for(program), STACK_BYTES,
                     len(vertices), compute, program, exchange, outlining)
