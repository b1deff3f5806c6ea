"""A Tenstorrent report's tables, as columns (docs/report-format.md, "Tenstorrent
reports"): every buffer the allocator placed, every operation, every program that ran
and every circular buffer it created. A decoder's program has thousands of operations,
so each table is one list per field, `count` entries each, an entry's index its id.

Lifetimes are allocator events (docs: each allocation and each free one event, in the
run's order): a buffer lives over [allocated, freed), freed null when never freed; a
program runs after `event` events. `check` replays the events through a first-fit free
list of its own and compares every address.
"""

from __future__ import annotations

from dataclasses import dataclass, fields as dataclass_fields
from typing import Any, ClassVar, Literal, NamedTuple

from tileplan.errors import InputError
from tileplan.report.fields import Count, Positive, Section, Signed
from tileplan.report.tt_sections import BufferTypeText

UseText = Literal["input", "parameter", "buffer", "intermediate", "op_intermediate", "config", "trace"]


class Columns(Section):
    """A table: `count` rows, every other field a column of `count` entries."""

    __slots__ = ()
    count: int

    def validate(self, place: str, bounds: Any) -> None:
        count = self.count
        for f in dataclass_fields(self):  # type: ignore[arg-type]
            if f.name != "count" and len(getattr(self, f.name)) != count:
                raise InputError(f"expected {count} entries (count), found {len(getattr(self, f.name))}",
                                 f"{place}.{f.name}")

    @classmethod
    def from_rows(cls, rows: list[Any]) -> Any:
        """The table of `rows` (each a tuple of the columns but `count`, in order)."""
        names = [f.name for f in dataclass_fields(cls) if f.name != "count"]  # type: ignore[arg-type]
        columns = list(zip(*rows)) if rows else [() for _ in names]
        return cls(count=len(rows), **{n: tuple(c) for n, c in zip(names, columns)})  # type: ignore[call-arg]


class BufferRow(NamedTuple):
    id: int
    name: str
    use: str
    buffer_type: str
    bytes: int
    page_bytes: int
    banks: int
    bytes_per_bank: int
    reserved: int
    address: int
    sharded: bool
    allocated: int
    freed: int | None
    first_op: int
    last_op: int | None
    tensor: int | None
    module: str | None

    @property
    def end(self) -> int:
        return self.address + self.reserved


@dataclass(frozen=True, slots=True, kw_only=True)
class TtBuffers(Columns):
    """Every buffer placed: `bytes` in pages of `page_bytes` (aligned), `bytes_per_bank`
    in each of `banks` banks (shards when sharded), `reserved` of the free list at
    `address` in every bank (lockstep); allocated and freed events; the operations that
    made it (-1: uploaded) and freed it (-1: during the uploads, a row-major argument the
    runtime tilized); the program's tensor it holds (null: an
    operation's own buffer) and the user's module."""

    KEY: ClassVar[str] = "buffers"
    DESCRIPTION: ClassVar[str | None] = "every buffer the allocator placed, as columns (an entry's index is its id)"
    count: Count
    name: tuple[str, ...]
    use: tuple[UseText, ...]
    buffer_type: tuple[BufferTypeText, ...]
    bytes: tuple[Count, ...]
    page_bytes: tuple[Positive, ...]
    banks: tuple[Positive, ...]
    bytes_per_bank: tuple[Count, ...]
    reserved: tuple[Count, ...]
    address: tuple[Count, ...]
    sharded: tuple[bool, ...]
    allocated: tuple[Count, ...]
    freed: tuple[Count | None, ...]
    first_op: tuple[Signed, ...]
    last_op: tuple[Signed | None, ...]
    tensor: tuple[Count | None, ...]
    module: tuple[str | None, ...]

    def row(self, i: int) -> BufferRow:
        return BufferRow(i, *(getattr(self, f)[i] for f in BufferRow._fields[1:]))

    def rows(self) -> list[BufferRow]:
        return [self.row(i) for i in range(self.count)]


class OperationRow(NamedTuple):
    id: int
    name: str
    kind: str
    module: str | None
    layer: int | None
    first_program: int
    program_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TtOperations(Columns):
    """Every operation planned (up to the failing one): its name, TTNN kind, the user's
    module and layer, and its programs (`program_count` from `first_program`)."""

    KEY: ClassVar[str] = "operations"
    DESCRIPTION: ClassVar[str | None] = "every operation planned, as columns"
    count: Count
    name: tuple[str, ...]
    kind: tuple[str, ...]
    module: tuple[str | None, ...]
    layer: tuple[Count | None, ...]
    first_program: tuple[Count, ...]
    program_count: tuple[Count, ...]

    def row(self, i: int) -> OperationRow:
        return OperationRow(i, *(getattr(self, f)[i] for f in OperationRow._fields[1:]))


class ProgramRow(NamedTuple):
    id: int
    op: int
    in_op: int
    factory: str
    event: int
    cb_bytes: int
    cb_region_end: int
    lowest_l1: int | None
    l1_allocated: int
    l1_small_allocated: int
    dram_allocated: int
    l1_in_use: int
    l1_buffers: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TtPrograms(Columns):
    """Every program that ran: its operation and its position there (`in_op`), its factory, the events
    before it, its static CB bytes (graph capture's sum) and region end, the lowest L1
    buffer then (null: none), the bytes allocated per bank in L1, L1_SMALL and DRAM, L1
    in use on a core (CB region + L1 + L1_SMALL) and the live L1 buffers' ids."""

    KEY: ClassVar[str] = "programs"
    DESCRIPTION: ClassVar[str | None] = "every program that ran, as columns"
    count: Count
    op: tuple[Count, ...]
    in_op: tuple[Count, ...]
    factory: tuple[str, ...]
    event: tuple[Count, ...]
    cb_bytes: tuple[Count, ...]
    cb_region_end: tuple[Count, ...]
    lowest_l1: tuple[Count | None, ...]
    l1_allocated: tuple[Count, ...]
    l1_small_allocated: tuple[Count, ...]
    dram_allocated: tuple[Count, ...]
    l1_in_use: tuple[Count, ...]
    l1_buffers: tuple[tuple[Count, ...], ...]

    def row(self, i: int) -> ProgramRow:
        return ProgramRow(i, *(getattr(self, f)[i] for f in ProgramRow._fields[1:]))


class CircularBufferRow(NamedTuple):
    program: int
    cb_index: int
    name: str
    pages: int
    page_bytes: int
    ranges: tuple[int, ...]
    globally_allocated: bool
    address: int | None

    def core_ranges(self) -> list[tuple[int, int, int, int]]:
        r = self.ranges
        return [(r[k], r[k + 1], r[k + 2], r[k + 3]) for k in range(0, len(r), 4)]

    @property
    def total_bytes(self) -> int:
        return self.pages * self.page_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class TtCircularBuffers(Columns):
    """Every circular buffer of every program that ran, in creation order: its program,
    CB index (`cb_index`, tt::CBIndex::c_N) and name, pages of page_bytes, its core ranges (x0, y0, x1, y1 each, one
    flat list), whether bound to a tensor's buffer (no CB space) and its address (null
    when bound)."""

    KEY: ClassVar[str] = "circular_buffers"
    DESCRIPTION: ClassVar[str | None] = "every circular buffer of the programs that ran, as columns"
    count: Count
    program: tuple[Count, ...]
    cb_index: tuple[Count, ...]
    name: tuple[str, ...]
    pages: tuple[Positive, ...]
    page_bytes: tuple[Positive, ...]
    ranges: tuple[tuple[Count, ...], ...]
    globally_allocated: tuple[bool, ...]
    address: tuple[Count | None, ...]

    def row(self, i: int) -> CircularBufferRow:
        return CircularBufferRow(*(getattr(self, f)[i] for f in CircularBufferRow._fields))

    def validate(self, place: str, bounds: Any) -> None:
        Columns.validate(self, place, bounds)
        for i, r in enumerate(self.ranges):
            if not r or len(r) % 4:
                raise InputError(f"expected x0, y0, x1, y1 for each core range, found {len(r)} numbers",
                                 f"{place}.ranges[{i}]")
