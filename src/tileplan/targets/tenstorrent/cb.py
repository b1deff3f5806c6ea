"""A program's circular buffers (CBs) as tt-metal creates them.

An operation's program factory calls `CreateCircularBuffer(program, core_ranges, config)`
once per CB: a `CircularBufferConfig(total_size, {index: data_format})` with a page size
per index (tt-metal tt_metal/impl/buffers/circular_buffer_config.cpp). A CB bound to a
tensor's L1 buffer with `set_globally_allocated_address` aliases that buffer and takes no
CB space (tt-metal tt_metal/impl/program/program.cpp, `allocate_circular_buffers` skips
`globally_allocated()` CBs).

This module only holds the value; where the CBs land is `cb_region` (one region per
program and core range, from `l1_unreserved_base` upward); which CBs an operation makes
is the operation's rule.

Worked example (TENSTORRENT-NOTES.md (e), the matmul 2-D gtest row): in0 2 tiles, in1 8
tiles, out 4 tiles of bf16 (2,048 B) and a 64-B scratch CB on the 8x8 grid:
`CircularBuffer(0, "in0", 2, 2048, (CoreRange.grid(8, 8),))` ... total 14 x 2,048 + 64 =
28,736 B a core.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import CoreRange

#: CB indices a core has (tt-metal `NUM_CIRCULAR_BUFFERS`: 32 on older builds, 64 on
#: the host since 2025; an index is `tt::CBIndex::c_0` ... `c_63`)
NUM_CIRCULAR_BUFFERS = 64


@dataclass(frozen=True, slots=True)
class CircularBuffer:
    """One CB of a program: `pages` pages of `page_bytes` on every core of `core_ranges`.

    `index` is the CB index (`tt::CBIndex::c_N`); `name` says what it holds (`in0`,
    `interm0`, ...). A CB shared by several indices (matmul's out and interm0 when their
    formats match) is one CB: one index, one name. `globally_allocated`: bound to a
    tensor's L1 buffer (`set_globally_allocated_address`), so it takes no CB space.

    Invariants: 0 <= index < 64; pages >= 1; page_bytes >= 1; at least one core range,
    no two of them sharing a core (a tt-metal `CoreRangeSet`).
    """

    index: int
    name: str
    pages: int
    page_bytes: int
    core_ranges: tuple[CoreRange, ...]
    globally_allocated: bool = False

    def __post_init__(self) -> None:
        place = f"circular buffer {self.name!r} (c_{self.index})"
        if not 0 <= self.index < NUM_CIRCULAR_BUFFERS:
            raise InputError(f"{place}: index must be 0..{NUM_CIRCULAR_BUFFERS - 1}")
        if self.pages < 1 or self.page_bytes < 1:
            raise InputError(f"{place}: {self.pages} pages of {self.page_bytes} B; expected at least 1 page of 1 B")
        if not self.core_ranges:
            raise InputError(f"{place}: expected at least one core range")
        for i, first in enumerate(self.core_ranges):
            for second in self.core_ranges[i + 1:]:
                if first.intersects(second):
                    raise InputError(f"{place}: core ranges {first.text()} and {second.text()} overlap; "
                                     "a CB's core ranges share no core")

    @classmethod
    def on(cls, core_range: CoreRange, index: int, name: str, pages: int, page_bytes: int,
           globally_allocated: bool = False) -> "CircularBuffer":
        """A CB on one core range (the common case)."""
        return cls(index, name, pages, page_bytes, (core_range,), globally_allocated)

    @property
    def total_bytes(self) -> int:
        """The CB's `total_size` on each of its cores: pages x page bytes."""
        return self.pages * self.page_bytes

    @property
    def l1_bytes(self) -> int:
        """CB space it takes on each core: none when bound to a tensor's buffer."""
        return 0 if self.globally_allocated else self.total_bytes
