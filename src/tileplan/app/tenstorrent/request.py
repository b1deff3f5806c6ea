"""A Tenstorrent plan request: the model, the machine and its device parameters, the
frontend and its options, as one immutable value (the IPU's is `app.request.
PlanRequest`; the two meet only at the target seam, app/targets.py).

`tt_request(...)` checks what it is given, in one line each: a machine that is not a
Tenstorrent board (the list), an option the frontend does not take (and which frontends
do), a prefill chunk that is not a multiple of 32, an `l1_small_size` the L1 bank cannot
hold (tt-metal's "Reserved size must be less than bank size", from `load_device`), a
model the frontend does not implement (the frontend's own error). `command()` gives the
`tileplan plan` line that reproduces it: every what-if row carries one.

Worked example: tt_request("meta-llama/Llama-3.2-1B", "n150", "tt-transformers",
{"prefill_chunk": 4096}) -> a request whose command is `tileplan plan
meta-llama/Llama-3.2-1B --machine n150 --frontend tt-transformers --prefill-chunk 4096 ...`
with every option the frontend planned with.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tileplan.app.tenstorrent.tt_mlir_models import ObjectModel
from tileplan.errors import InputError, option
from tileplan.model.ir import Program
from tileplan.targets.tenstorrent.device import MACHINES, Device, load_device
from tileplan.targets.tenstorrent.frontend import TtFrontend, frontend, names
from tileplan.targets.tenstorrent.option_keys import OPTION_KEYS
from tileplan.targets.tenstorrent.overrides import outputs_to_dram
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.planned import TtPlan
from tileplan.targets.tenstorrent.program import Frontend, TtProgram
from tileplan.targets.tenstorrent.versions import DispatchCoreType

#: the frontend planned unless `--frontend` says
DEFAULT_FRONTEND = Frontend.TT_MLIR.value
#: the device parameters' flags (`tileplan plan`), by field
FLAGS = (("l1_small_size", "--l1-small-size"), ("trace_region_size", "--trace-region-size"),
         ("version", "--tt-version"), ("dispatch", "--dispatch"))
#: the tile side a prefill chunk is a multiple of (tt-transformers pads to tiles)
CHUNK_MULTIPLE = 32


@dataclass(frozen=True, slots=True)
class TtRequest:
    """Everything that decides a Tenstorrent plan. `options` is the frontend's own value
    (resolved: every option decided); the device parameters are None when the stack's
    default (or the frontend's device default) applies; `to_dram` names operations whose
    outputs are moved to DRAM interleaved. Invariant: made by `tt_request` (checked)."""

    model: Any
    machine: str
    frontend: str
    options: Any
    l1_small_size: int | None = None
    trace_region_size: int | None = None
    version: str | None = None
    dispatch: str | None = None
    to_dram: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The model as the report names it: as given, or an object's class (a Graph's or
        a Program's own name)."""
        if isinstance(self.model, str):
            return self.model
        return self.model.name if isinstance(self.model, (ObjectModel, Program)) else type(self.model).__name__

    def stack(self) -> TtFrontend:
        return frontend(self.frontend)

    def device(self) -> Device:
        """The device as the frontend's stack opens it, with the parameters given."""
        fe = self.stack()
        defaults = dict(fe.device_defaults(self.model, self.options, self.machine))
        given = {"l1_small_size": self.l1_small_size, "trace_region_size": self.trace_region_size}
        params = {**defaults, **{k: v for k, v in given.items() if v is not None}}
        dispatch = DispatchCoreType.parse(self.dispatch) if self.dispatch is not None else \
            defaults.get("dispatch_core_type")
        return load_device(self.machine, stack=fe.stack, version=self.version, dispatch_core_type=dispatch,
                           l1_small_size=params.get("l1_small_size"),
                           trace_region_size=params.get("trace_region_size"))

    def program(self, device: Device | None = None) -> TtProgram:
        """The program one chip runs, with the outputs moved to DRAM."""
        chip = device or self.device()
        return outputs_to_dram(self.stack().lower(self.model, self.options, chip), self.to_dram)

    def plan(self) -> TtPlan:
        device = self.device()
        return plan_tt(self.program(device), device)

    def words(self) -> tuple[tuple[str, Any], ...]:
        """The frontend's options as the report shows them."""
        return self.stack().words(self.options)

    def with_(self, **changes: Any) -> TtRequest:
        return replace(self, **changes)

    def turned(self, key: str, value: Any) -> TtRequest:
        """The request with one frontend option turned."""
        return replace(self, options=self.stack().turn(self.options, key, value))

    def command(self) -> str:
        """The `tileplan plan` line that reproduces this request; for a model given as
        an object, the `tileplan.plan(...)` call (`call`)."""
        if not isinstance(self.model, str):
            return self.call()
        words = ["tileplan", "plan", self.name, "--machine", self.machine, "--frontend", self.frontend]
        for key, value in self.words():
            if value is None or value is False:
                continue
            flag = f"--{key.replace('_', '-')}"
            words += [flag] if value is True else [flag, str(value)]
        for key, flag in FLAGS:
            value = getattr(self, key)
            if value is not None:
                words += [flag, str(value)]
        for name in self.to_dram:
            words += ["--to-dram", name]
        return shlex.join(words)

    def call(self) -> str:
        """The Python API call that reproduces this request, the model and its example
        inputs by name: `tileplan.plan(MLP, example_inputs, machine='n150', ...)`."""
        args = [self.name]
        if isinstance(self.model, ObjectModel) and self.model.example_inputs is not None:
            args.append("example_inputs")
        args += [f"machine={self.machine!r}", f"frontend={self.frontend!r}"]
        args += [f"{key}={value!r}" for key, value in self.words() if value is not None and value is not False]
        for key, flag in FLAGS:
            value = getattr(self, key)
            if value is not None:
                args.append(f"{flag.removeprefix('--').replace('-', '_')}={value!r}")
        if self.to_dram:
            args.append(f"to_dram={list(self.to_dram)!r}")
        return f"tileplan.plan({', '.join(args)})"


def tt_request(model: Any, machine: str, frontend_name: str | None = None, given: Mapping[str, Any] | None = None,
               *, l1_small_size: int | None = None, trace_region_size: int | None = None, version: str | None = None,
               dispatch: str | None = None, to_dram: tuple[str, ...] = ()) -> TtRequest:
    """A checked request (see the module docstring); `given`: the frontend options
    given (`OPTION_KEYS`), the others the frontend's defaults."""
    if machine not in MACHINES:
        raise InputError(f"unknown machine {machine!r}; expected one of {', '.join(MACHINES)}")
    name = frontend_name or DEFAULT_FRONTEND
    fe = frontend(name)
    chosen = dict(given or {})
    for key in chosen:
        if key not in OPTION_KEYS:
            raise InputError(f"unknown Tenstorrent option {key!r}; expected one of {', '.join(OPTION_KEYS)}")
        if key not in fe.keys:
            takers = [n for n in names() if n != name and _takes(n, key)]
            also = f"; {', '.join(takers)} takes it" if takers else ""
            raise InputError(f"{option(key)} is not an option of the {name} frontend{also}")
    chunk = chosen.get("prefill_chunk")
    if chunk is not None and (not isinstance(chunk, int) or chunk < CHUNK_MULTIPLE or chunk % CHUNK_MULTIPLE):
        raise InputError(f"{option('prefill_chunk', str(chunk))}: expected a multiple of {CHUNK_MULTIPLE} tokens "
                         "(tt-transformers prefills whole tiles of 32 rows), e.g. 4096")
    for key, value in (("l1_small_size", l1_small_size), ("trace_region_size", trace_region_size)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InputError(f"{option(key, str(value))}: expected a whole number of bytes >= 0")
    # the device as given (the frontend's device defaults need its options): checks the
    # parameters, l1_small_size below the bank first
    device = load_device(machine, stack=fe.stack, version=version, l1_small_size=l1_small_size,
                         trace_region_size=trace_region_size,
                         dispatch_core_type=DispatchCoreType.parse(dispatch) if dispatch is not None else None)
    return TtRequest(model, machine, name, fe.options(model, chosen, device), l1_small_size, trace_region_size,
                     version, dispatch, tuple(to_dram))


def _takes(name: str, key: str) -> bool:
    try:
        return key in frontend(name).keys
    except InputError:
        return False
