"""TTNN memory configurations and the bytes a buffer takes in each bank.

A tensor's buffer lives in one buffer type (DRAM, L1, L1_SMALL, TRACE) and one memory
layout: INTERLEAVED, its pages dealt round-robin over every bank of that type starting
at bank 0, or HEIGHT / WIDTH / BLOCK sharded in L1, one shard per core of a core grid
(tt-metal tech_reports/tensor_layouts/tensor_layouts.md sections 4.1-4.2; ttnn
`MemoryConfig`, `ShardSpec`).

Every bank reserves the same address range for a buffer (lockstep): the per-bank size is
tt-metal's `calculate_bank_size_spread` (tt_metal/impl/allocator/allocator.hpp, used by
`Buffer::aligned_size_per_bank`): `ceil(pages / N) x round_up(page, alignment)`, N the
banks of an interleaved buffer or the shards of a sharded one.

Worked examples (TENSTORRENT-NOTES.md (h)): a 3x1x1024x1024 bf16 tensor height-sharded
over 16 cores with shards of 192 x 1024 row-major: 192 pages of 2,048 B a core =
393,216 B; 4x2x160x224 bf16 TILE interleaved in L1 over 56 banks: 280 tiles ->
ceil(280 / 56) = 5 pages = 10,240 B a bank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, Pages, padded_height_width, pages, round_up


class BufferType(Enum):
    """Where a buffer lives (tt-metal `BufferType`; the words its messages print)."""

    DRAM = "DRAM"
    L1 = "L1"
    L1_SMALL = "L1_SMALL"
    TRACE = "TRACE"


class MemoryLayout(Enum):
    """ttnn `TensorMemoryLayout`."""

    INTERLEAVED = "interleaved"
    HEIGHT_SHARDED = "height_sharded"
    WIDTH_SHARDED = "width_sharded"
    BLOCK_SHARDED = "block_sharded"

    @property
    def sharded(self) -> bool:
        return self is not MemoryLayout.INTERLEAVED


class ShardOrientation(Enum):
    """ttnn `ShardOrientation`: ROW_MAJOR walks the grid's x (columns) first."""

    ROW_MAJOR = "row_major"
    COL_MAJOR = "col_major"


@dataclass(frozen=True, slots=True)
class CoreRange:
    """Cores (x, y) with start <= (x, y) <= end, inclusive, as tt-metal's `CoreRange`.
    Invariant: start <= end in both coordinates."""

    start: tuple[int, int]
    end: tuple[int, int]

    def __post_init__(self) -> None:
        if not (0 <= self.start[0] <= self.end[0] and 0 <= self.start[1] <= self.end[1]):
            raise InputError(f"core range {self.start}-{self.end}: start must be <= end, both >= 0")

    @classmethod
    def grid(cls, x: int, y: int) -> "CoreRange":
        """The x-by-y grid from core (0, 0)."""
        return cls((0, 0), (x - 1, y - 1))

    @property
    def width(self) -> int:
        return self.end[0] - self.start[0] + 1

    @property
    def height(self) -> int:
        return self.end[1] - self.start[1] + 1

    @property
    def cores(self) -> int:
        return self.width * self.height

    def bounding_box(self) -> "CoreRange":
        """Itself: a range is its own bounding box (so a `CoreRange | CoreRangeSet`
        answers alike)."""
        return self

    def intersects(self, other: "CoreRange") -> bool:
        """Whether the two ranges share a core (tt-metal `CoreRange::intersects`)."""
        return (self.start[0] <= other.end[0] and other.start[0] <= self.end[0]
                and self.start[1] <= other.end[1] and other.start[1] <= self.end[1])

    def text(self, style: int = 2026) -> str:
        """As tt-metal prints it: `[0-0 - 7-7]` in 2026 builds, `[(x=0,y=0) - (x=7,y=7)]`
        in 2025 builds (program.cpp's messages)."""
        (x0, y0), (x1, y1) = self.start, self.end
        if style >= 2026:
            return f"[{x0}-{y0} - {x1}-{y1}]"
        return f"[(x={x0},y={y0}) - (x={x1},y={y1})]"


@dataclass(frozen=True, slots=True)
class CoreRangeSet:
    """Disjoint core ranges, as tt-metal's `CoreRangeSet`: a shard grid of 103 cores on
    an 11 x 10 grid is `{[0-0 - 10-8], [0-9 - 3-9]}`. Invariant: at least one range, no
    two ranges share a core."""

    ranges: tuple[CoreRange, ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise InputError("a core range set holds at least one core range")
        seen: set[tuple[int, int]] = set()
        for r in self.ranges:
            cores = {(x, y) for x in range(r.start[0], r.end[0] + 1) for y in range(r.start[1], r.end[1] + 1)}
            if seen & cores:
                raise InputError(f"core range set: {r.text()} overlaps another range of the set")
            seen |= cores

    @classmethod
    def from_count(cls, count: int, grid_x: int, grid_y: int, row_wise: bool = True) -> "CoreRangeSet":
        """The first `count` cores of an x-by-y grid, whole rows (row_wise) or whole
        columns first, as tt-metal's `num_cores_to_corerangeset`
        (tt_metal/common/work_split.cpp): 103 cores of 11 x 10 row-wise are 9 full rows
        and 4 cores of the tenth."""
        if not 1 <= count <= grid_x * grid_y:
            raise InputError(f"{count} cores do not fit a {grid_x} x {grid_y} grid")
        line = grid_x if row_wise else grid_y
        full, rest = divmod(count, line)
        ranges = []
        if full:
            ranges.append(CoreRange((0, 0), (grid_x - 1, full - 1)) if row_wise
                          else CoreRange((0, 0), (full - 1, grid_y - 1)))
        if rest:
            ranges.append(CoreRange((0, full), (rest - 1, full)) if row_wise
                          else CoreRange((full, 0), (full, rest - 1)))
        return cls(tuple(ranges))

    @property
    def cores(self) -> int:
        return sum(r.cores for r in self.ranges)

    def bounding_box(self) -> CoreRange:
        return CoreRange((min(r.start[0] for r in self.ranges), min(r.start[1] for r in self.ranges)),
                         (max(r.end[0] for r in self.ranges), max(r.end[1] for r in self.ranges)))

    def text(self, style: int = 2026) -> str:
        """As `CoreRangeSet::str()` prints it: `{[0-0 - 10-8], [0-9 - 3-9]}`."""
        return "{" + ", ".join(r.text(style) for r in self.ranges) + "}"


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """One shard's shape [height, width] in elements over the cores of `grid` (one core
    range or a set of them). Invariant: positive shard dimensions."""

    grid: CoreRange | CoreRangeSet
    shape: tuple[int, int]
    orientation: ShardOrientation = ShardOrientation.ROW_MAJOR

    def __post_init__(self) -> None:
        if len(self.shape) != 2 or min(self.shape) < 1:
            raise InputError(f"shard shape {list(self.shape)}: expected [height, width], both >= 1")

    @property
    def num_cores(self) -> int:
        """The cores of the shard grid (tt-metal's `ShardSpec::num_cores`)."""
        return self.grid.cores

    def bounding_box(self) -> CoreRange:
        return self.grid.bounding_box()


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """ttnn `MemoryConfig`: a buffer type, a memory layout and, when sharded, its shard
    spec. Invariant: sharded iff a shard spec is given; sharding is in L1 or L1_SMALL
    (the sliding-window config tensors, HEIGHT_SHARDED: sliding_window.cpp
    `move_config_tensor_to_device`), or in DRAM by width or height (tt-transformers'
    weights: WIDTH_SHARDED over the DRAM banks, `ModelArgs.create_dram_sharded_mem_config`;
    ttnn refuses a DRAM block-sharded buffer, reduce_scatter_common_validates "DRAM block
    sharding not supported")."""

    buffer_type: BufferType
    layout: MemoryLayout = MemoryLayout.INTERLEAVED
    shard: ShardSpec | None = None

    def __post_init__(self) -> None:
        if self.layout.sharded != (self.shard is not None):
            raise InputError(f"memory config {self.layout.value}: a shard spec is given iff the layout is sharded")
        dram_ok = self.buffer_type is BufferType.DRAM and self.layout is not MemoryLayout.BLOCK_SHARDED
        in_l1 = self.buffer_type in (BufferType.L1, BufferType.L1_SMALL)
        if self.layout.sharded and not in_l1 and not dram_ok:
            raise InputError(f"a {self.layout.value} tensor lives in L1 or L1_SMALL (or, width or height sharded, "
                             f"in DRAM), found {self.buffer_type.value}")

    def text(self) -> str:
        """tt-mlir's override form: `dram:interleaved`, `l1:block_sharded`."""
        return f"{self.buffer_type.value.lower()}:{self.layout.value}"


DRAM_INTERLEAVED = MemoryConfig(BufferType.DRAM)
L1_INTERLEAVED = MemoryConfig(BufferType.L1)


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A tensor as TTNN holds it: logical shape, data type, layout and memory config.
    Invariant: block-float types are TILE; a sharded TILE tensor's shard is whole tiles."""

    shape: tuple[int, ...]
    dtype: DataType
    layout: Layout
    memory: MemoryConfig

    def __post_init__(self) -> None:
        if not self.shape or min(self.shape) < 1:
            raise InputError(f"tensor shape {list(self.shape)}: every dimension must be >= 1")
        if self.dtype.block_float and self.layout is not Layout.TILE:
            raise InputError(f"{self.dtype.value} exists only in TILE layout, found {self.layout.value}")
        shard = self.memory.shard
        if shard is not None and self.layout is Layout.TILE and (shard.shape[0] % TILE or shard.shape[1] % TILE):
            raise InputError(f"a TILE tensor's shard {list(shard.shape)} must be whole 32 x 32 tiles")

    def pages(self) -> Pages:
        """All the tensor's pages (a sharded row-major tensor's page is one shard row)."""
        width = self.memory.shard.shape[1] if self.memory.shard is not None else None
        return pages(self.shape, self.dtype, self.layout, width if self.layout is Layout.ROW_MAJOR else None)

    def shard_pages(self) -> int:
        """Pages of one shard (every core reserves a whole shard, the last one too)."""
        shard = self.memory.shard
        assert shard is not None, self
        h, w = shard.shape
        if self.layout is Layout.TILE:
            return (h // TILE) * (w // TILE)
        return h

    def shards(self) -> int:
        """How many shards the tensor has: its padded 2-D view cut into shard blocks."""
        shard = self.memory.shard
        assert shard is not None, self
        h, w = padded_height_width(self.shape, self.layout)
        return math.ceil(h / shard.shape[0]) * math.ceil(w / shard.shape[1])


def aligned_page_bytes(page_bytes: int, alignment: int) -> int:
    """A page as a bank stores it: rounded up to the buffer type's alignment."""
    return round_up(page_bytes, alignment)


def bytes_per_bank(page_count: int, page_bytes: int, banks: int, alignment: int) -> int:
    """tt-metal's `calculate_bank_size_spread`: `ceil(pages / banks)` aligned pages."""
    if banks < 1:
        raise InputError(f"a buffer spreads over at least one bank, found {banks}")
    return math.ceil(page_count / banks) * aligned_page_bytes(page_bytes, alignment)
