"""The target seam: what `tileplan plan` and `tileplan.plan()` ask of a target, so that
neither names one.

A target says which machines it serves (`machines`, `serves`), which of `plan`'s
options it takes (`takes`: the generic ones it reads, and its own, declared as
`Option`s for the CLI's group of them), and how it plans from those options
(`plan_options`, for the CLI) and from a Python call (`plan_call`, for the API); its
machine loading, defaults (precisions, frontend) and words live behind those entries,
in its package. `for_machine(name)` finds the target of a `--machine` value; an unknown
name is one line listing every target's machines.

The targets are listed by module (`TARGETS`), each module defining `TARGET`, imported
when first asked for. The IPU's entries are None for now: its planning flow still lives
in cli/plan.py and app/api.py, and moves behind this seam with the IPU's code into
targets/ipu in a later step.

Worked example: `for_machine("n150")` is the Tenstorrent target; `takes("opt_level")`
is true there and false for the IPU, so `tileplan plan m --machine ipu21 --opt-level
1` is refused in one line naming the machines that take it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from tileplan.errors import InputError

#: every target's module, the default machine's first
TARGETS = ("tileplan.app.ipu_target", "tileplan.app.tenstorrent.target")


@dataclass(frozen=True, slots=True)
class Option:
    """A `plan` flag only one target takes: its flag, `dest` (the options key), type,
    metavar, help and choices, as argparse takes them."""

    flag: str
    dest: str
    help: str
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    repeat: bool = False


@dataclass(frozen=True, slots=True)
class Planned:
    """What a target's plan gives `tileplan plan`: the report's bytes (JSON), whether it
    fits, the lines to print (the verdict first), the command that reproduces it and
    the stem of the report's default name."""

    report: bytes
    fits: bool
    lines: tuple[str, ...]
    command: str
    stem: str


class Target(Protocol):
    """A target (see the module docstring)."""

    name: str
    title: str
    #: its own `plan` flags, for the CLI's group of them
    options: tuple[Option, ...]
    #: plan from `tileplan plan`'s options (None: the verb's own flow, the IPU's for now)
    plan_options: Callable[[Mapping[str, Any], Callable[[str], None]], Planned] | None
    #: plan from `tileplan.plan(model, ...)` (None: the API's own flow, the IPU's for now)
    plan_call: Callable[..., Any] | None

    def machines(self) -> tuple[str, ...]: ...

    def serves(self, machine: str) -> bool: ...

    def takes(self, key: str) -> bool: ...


@cache
def targets() -> tuple[Target, ...]:
    return tuple(importlib.import_module(m).TARGET for m in TARGETS)


def for_machine(machine: str) -> Target:
    """The target serving `machine` (one line listing them all when none does)."""
    for target in targets():
        if target.serves(machine):
            return target
    listed = "; ".join(f"{', '.join(t.machines())} ({t.title})" for t in targets())
    raise InputError(f"unknown machine {machine!r}; expected one of {listed}")


def refuse_foreign(target: Target, machine: str, given: Mapping[str, Any], spell: Callable[[str], str]) -> None:
    """One line for the first option given that `target` does not take, naming the
    targets that do (`spell`: the option as the interface spells it)."""
    for key in given:
        if target.takes(key):
            continue
        others = [t for t in targets() if t is not target and t.takes(key)]
        where = "; ".join(f"{t.title} machines ({', '.join(t.machines())})" for t in others)
        raise InputError(f"{spell(key)} is not an option for {machine} ({target.title})"
                         + (f"; it is one for {where}" if where else ""))
