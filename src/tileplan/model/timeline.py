"""Values and steps: the timeline a plan is made of (the report's `timeline`).

A `Value` is one allocation-shaped thing: a tensor with a layout and a precision,
sized per tile. A `Step` is one tile-level operation with the values live in it.
Byte figures are plain integers; in a plan `None` means "not representable" and is
always accompanied by a rejection that says why (never a sentinel). The lowering makes
values with no sizes yet; the planner sizes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.model.layout import Layout, MemoryClass
from tileplan.model.precision import Precision

REGIONS = ("standard", "interleaved")


@dataclass(frozen=True, slots=True)
class Value:
    """One value of the timeline.

    `root` is the value it aliases (itself when it owns its data); values of one
    `storage_group` share one allocation, sized by its largest member. `bytes` =
    `aligned_bytes` x `copies`; `aligned_bytes` = `shard_bytes` rounded up to
    `alignment_bytes`.
    """

    id: int
    origin: int
    root: int
    name: str
    group: str
    shape: tuple[int, ...]
    precision: Precision
    layout: Layout
    storage_group: int
    shard_bytes: int | None
    aligned_bytes: int | None
    copies: int
    bytes: int | None
    alignment_bytes: int | None = None
    #: "input" or "parameter" for declared tensors (resident from the first step),
    #: "intermediate" for what the lowering creates; None when a report omits it
    role: str | None = None

    @property
    def resident(self) -> bool:
        return self.role in ("input", "parameter")

    @property
    def memory_class(self) -> MemoryClass:
        return self.layout.memory_class

    @property
    def region(self) -> str:
        return self.layout.memory_class.usage_key


@dataclass(frozen=True, slots=True)
class Step:
    """One tile-level step. `usage` = live storage groups of each region + `scratch`;
    `None` where a live value's size is unknown. `execution_count` > 1 for steps of a
    repeat block; it never multiplies memory.
    """

    index: int
    source: int
    operation: str
    execution_count: int
    live: tuple[int, ...]
    scratch: dict[str, int]
    usage: dict[str, int | None]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a value has no size: its id, name and the rule it breaks, with numbers."""

    value: int
    name: str
    reason: str
