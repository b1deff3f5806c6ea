"""What a Tenstorrent frontend is to the planner, and how one is found.

A frontend turns a model (a path or a name as `tileplan plan` takes it; from the Python
API, an object too: a torch module) into the `TtProgram` one chip runs, as a vendor
stack would:
`frontends/tt_mlir.py` (tt-xla and tt-mlir compiling an imported model) and
`frontends/tt_transformers.py` (tt-metal's hand-written decoder LLMs). Each module
defines `FRONTEND`, a value with the members of `TtFrontend` below, and its own options
type (frozen, hashable: a what-if row is its request with one option changed).

The contract:

- `keys`: the option keys it takes (`option_keys.OPTION_KEYS`, spelled as `tileplan plan`'s flags
  with `_`: `opt_level`, `prefill_chunk`, ...; a key added there needs its flag: the
  shared ones are cli/plan.py's, the others app/tenstorrent/target.py's `OPTIONS`). Any
  other key given is refused by the caller in one line naming the flag and the frontends
  that take it.
- `stack`: who opens the device (tt-mlir's runtime, or tt-metal's own defaults:
  `versions.Stack`), which decides the default `l1_small_size` and trace region;
  `device_defaults(model, options, machine)`: device parameters the stack's own runs
  pass for this model (tt-transformers' demo: its `trace_region_size`), as keyword
  arguments of `load_device`; a value the user gives wins.
- `options(model, given, device)`: its options value from the keys given (absent keys:
  its defaults for that model and device); bad values raise `InputError` in one line
  (a chunk that is not a multiple of 32, a model it does not implement).
- `lower(model, options, device)`: the program of one chip of `device` (n300: each
  chip's share of the tensor-parallel model). `device.chips` says how many chips.
- `words(options)`: (key, value) pairs of every option as the report shows it and as
  `tileplan plan` takes it back (`--key value`), defaults included, in a fixed order.
- `knobs(options, device)`: the options worth turning for what would make it fit, each
  a `Knob` (below); the planner's own knobs (the device parameters, a tensor moved to
  DRAM) are not the frontend's.
- `turn(options, key, value)`: the options with one knob turned.
- `reproduce(options, program, device, moved)`: what a user passes to the stack to get
  this plan of `program` (as planned: the outputs named by `moved` already moved to
  DRAM) on `device`: a `Reproduction`, its text lines (tt-mlir: tt-xla's compile options
  and `override-output-layout=...` for every output layout the plan chose;
  tt-transformers: the ModelArgs / env settings) and the output layouts those lines pin,
  as values (`OutputLayout`; what `tileplan check` compares with the report's buffers).

Worked example: `tileplan plan meta-llama/Llama-3.1-8B --machine n150 --frontend
tt-transformers --prefill-chunk 4096` -> FRONTEND.options(model, {"prefill_chunk":
4096}, n150) -> an options value whose `words` include ("prefill_chunk", 4096), and
whose knobs include Knob("prefill_chunk", LARGEST, (32, 64, ..., 131072), 4096).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout
from tileplan.targets.tenstorrent.option_keys import OPTION_KEYS
from tileplan.targets.tenstorrent.program import Frontend, TtProgram
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import Stack

#: where each frontend lives: a module defining `FRONTEND`
MODULES: dict[Frontend, str] = {
    Frontend.TT_MLIR: "tileplan.targets.tenstorrent.frontends.tt_mlir",
    Frontend.TT_TRANSFORMERS: "tileplan.targets.tenstorrent.frontends.tt_transformers",
}


class Search(Enum):
    """How a knob is searched: the largest of its values that fits (ascending values;
    fitting is not assumed monotone: each value above the answer is planned up to a
    margin, as the IPU's `largest_found`), or each other value tried on its own."""

    LARGEST = "largest"
    EACH = "each"


@dataclass(frozen=True, slots=True)
class Knob:
    """An option a what-if row turns: its key (an `OPTION_KEYS` key), how it is searched, the
    values to try (ascending for LARGEST) and its value in the plan. Invariant:
    values given, no repeats."""

    key: str
    search: Search
    values: tuple[Any, ...]
    current: Any

    def __post_init__(self) -> None:
        assert self.key in OPTION_KEYS, self.key
        assert self.values and len(set(map(repr, self.values))) == len(self.values), self


@dataclass(frozen=True, slots=True)
class OutputLayout:
    """One operation's output as a plan placed it, as a stack's override names it: the
    operation (its index in the program and its name), its buffer type and memory
    layout, the grid in tt-mlir's terms (rows x columns: `TTNNLayoutAttr`'s grid shape,
    lib/Dialect/TTNN/Analysis/LegalTensorLayoutAnalysis.cpp: the shard grid's bounding
    box for block shards, N x 1 for N height shards, 1 x N for N width shards, the worker
    grid for L1 interleaved, 1 x 1 for DRAM), its page layout and data type. Invariant:
    a grid of at least one core; DRAM only interleaved on 1 x 1."""

    op: int
    name: str
    buffer_type: BufferType
    memory_layout: MemoryLayout
    grid: tuple[int, int]
    layout: Layout
    dtype: DataType

    def __post_init__(self) -> None:
        assert self.op >= 0 and min(self.grid) >= 1, self
        assert self.buffer_type is not BufferType.DRAM or (
            self.memory_layout is MemoryLayout.INTERLEAVED and self.grid == (1, 1)), self


@dataclass(frozen=True, slots=True)
class Reproduction:
    """What reproduces a plan beyond the device parameters: the lines to pass the stack,
    and the output layouts they pin (empty when the stack takes none)."""

    settings: tuple[str, ...] = ()
    layouts: tuple[OutputLayout, ...] = ()


class TtFrontend(Protocol):
    """A frontend's members (see the module docstring)."""

    frontend: Frontend
    keys: frozenset[str]
    stack: Stack

    def device_defaults(self, model: Any, options: Any, machine: str) -> Mapping[str, Any]: ...

    def options(self, model: Any, given: Mapping[str, Any], device: Device) -> Any: ...

    def lower(self, model: Any, options: Any, device: Device) -> TtProgram: ...

    def words(self, options: Any) -> tuple[tuple[str, Any], ...]: ...

    def knobs(self, options: Any, device: Device) -> tuple[Knob, ...]: ...

    def turn(self, options: Any, key: str, value: Any) -> Any: ...

    def reproduce(self, options: Any, program: TtProgram, device: Device, moved: tuple[str, ...]
                  ) -> Reproduction: ...


#: frontends registered by name in this process beyond the two modules (tests, plug-ins)
_REGISTERED: dict[str, TtFrontend] = {}


def register(name: str, frontend: TtFrontend) -> None:
    """Make `frontend` known under `name` (`--frontend NAME`); a test's hand-built one."""
    _REGISTERED[name] = frontend


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def names() -> tuple[str, ...]:
    """Every frontend name `--frontend` takes, the two stacks first."""
    return (*(f.value for f in Frontend), *sorted(_REGISTERED))


def frontend(name: str) -> TtFrontend:
    """The frontend called `name` (`tt-mlir`, `tt-transformers`, or one registered)."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    kind = next((f for f in Frontend if f.value == name), None)
    if kind is None:
        raise InputError(f"unknown frontend {name!r}; expected one of {', '.join(names())}")
    try:
        module = importlib.import_module(MODULES[kind])
    except ModuleNotFoundError as e:
        if e.name != MODULES[kind] and not MODULES[kind].startswith(f"{e.name}."):
            raise
        raise InputError(f"the {name} frontend is not part of this tileplan build ({MODULES[kind]} is missing)") \
            from None
    found: TtFrontend = module.FRONTEND
    return found
