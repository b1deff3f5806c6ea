"""Sweep: plan every combination of named knobs, in parallel over local processes.

Knobs (command-line names, `KNOBS`): weights, activations, partials, layers, batch,
sequence-length, attention-products, gemm-output-packing, policy,
available-memory-proportion. `expand` turns ["weights=f8f143:-4,f16", "layers=4,27"] into the cartesian
product of requests in a fixed order; `run_sweep` plans them with a process pool and
returns one row per combination in that order (deterministic whatever finishes first).
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence

from tileplan.errors import InputError, TileplanError
from tileplan.lowering.policy import policy
from tileplan.model.machine import machine
from tileplan.app.request import PlanRequest
from tileplan.planner.outcome import Outcome, outcome

KNOBS = {"weights": "weights", "activations": "activations", "partials": "partials", "layers": "layers",
         "batch": "batch", "sequence-length": "sequence_length", "attention-products": "attention_products",
         "gemm-output-packing": "gemm_output_packing", "policy": "policy",
         "available-memory-proportion": "available_memory_proportion"}
INTEGER_KNOBS = ("layers", "batch", "sequence-length")


def parse_knob(spec: str) -> tuple[str, list[str]]:
    name, sep, values = spec.partition("=")
    if not sep or not values.strip():
        raise InputError(f"--sweep {spec!r}: expected KNOB=V1,V2,... e.g. weights=f8f143:-4,f16")
    if name not in KNOBS:
        raise InputError(f"--sweep {spec!r}: unknown knob {name!r}; expected one of {', '.join(KNOBS)}")
    items = [v.strip() for v in values.split(",") if v.strip()]
    if len(set(items)) != len(items):
        raise InputError(f"--sweep {spec!r}: a value is repeated")
    return name, items


def expand(base: PlanRequest, specs: Sequence[str]) -> list[tuple[dict[str, object], PlanRequest]]:
    knobs = [parse_knob(s) for s in specs]
    names = [k for k, _ in knobs]
    if len(set(names)) != len(names):
        raise InputError("--sweep: a knob is given twice; list all its values in one --sweep KNOB=V1,V2")
    combos = []
    for values in itertools.product(*(v for _, v in knobs)):
        changes: dict[str, object] = {}
        for name, value in zip(names, values):
            if name in INTEGER_KNOBS:
                try:
                    changes[name] = int(value)
                except ValueError:
                    raise InputError(f"--sweep {name}: expected integers, found {value!r}") from None
            else:
                changes[KNOBS[name]] = value
        where = "--sweep " + ",".join(f"{n}={v}" for n, v in zip(names, values))
        try:  # fail early, in this process, on a bad value (one-line error)
            request = base.with_(**changes)
            request.program()
            policy(request.policy)
            machine(request.machine)
        except TileplanError as e:
            raise e.at(where, sep=": ") from None
        knob_values = {n: changes.get(KNOBS[n], v) for n, v in zip(names, values)}
        combos.append((knob_values, request))
    return combos


def _plan_row(request: PlanRequest) -> Outcome:
    return outcome(request.plan())


def run_sweep(combos: list[tuple[dict[str, object], PlanRequest]], workers: int | None = None,
              progress: Callable[[int, int], None] | None = None
              ) -> list[tuple[dict[str, object], PlanRequest, Outcome]]:
    """Every combination planned (in parallel over local processes): its knobs, its
    request and what the plan came to."""
    workers = workers or min(len(combos), os.cpu_count() or 1)
    requests = [r for _, r in combos]
    results: list[Outcome] = []
    if workers <= 1 or len(requests) == 1:
        for i, r in enumerate(requests):
            results.append(_plan_row(r))
            if progress:
                progress(i + 1, len(requests))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for i, row in enumerate(pool.map(_plan_row, requests)):
                results.append(row)
                if progress:
                    progress(i + 1, len(requests))
    return [(knobs, request, row) for (knobs, request), row in zip(combos, results)]
