"""A program's static circular-buffer region, placed and checked as tt-metal does
(tt_metal/impl/program/program.cpp, `ProgramImpl::allocate_circular_buffers` and
`ProgramImpl::validate_circular_buffer_region`).

Circular buffers are not allocator-managed: each program lays its own out from the L1
allocator's base address (`get_base_allocator_addr(L1)` = l1_unreserved_base) upward,
per core range, in creation order:

- one region list per distinct core range of the program's CBs, in the order the ranges
  first appear (`add_circular_buffer_` creates a `CircularBufferAllocator` per range,
  for globally allocated CBs too);
- a CB that is not globally allocated goes at the highest region end over its own core
  ranges (or the base), aligned up to the DRAM alignment; every region list whose range
  intersects one of the CB's ranges is marked with it, except a list of another range
  whose region already ends above that address (`mark_address` appends to the last
  region when the address is its end, else opens a new one);
- globally allocated CBs alias a tensor's L1 buffer and take no space.

The address is the max over the CB's own core ranges only, so on core ranges that
intersect without being equal tt-metal can place two CBs over each other (1 B on the
left half, 33 B on the right half, then 1 B on the whole grid lands inside the 33 B on
the right half's cores); tileplan keeps tt-metal's addresses.

Before the program runs, every range's region end is checked: above the L1 size, "grow
to ... beyond max L1 size"; above the lowest L1 buffer address (the L1 bank manager's
lowest occupied address over the compute banks), "clash with L1 buffers". L1_SMALL is
not part of the check. The first range failing, in order, is the error.

The CB values come from the per-operation rules; core ranges are taken as given (tt-metal
merges a CB's CoreRangeSet first, `merge_ranges`: pass merged ranges).

Worked example (tt-xla #4214, gemma-1.1-2b-it): base 103,712; 384 bf16 tiles of CBs on
one range -> the region ends at 103,712 + 786,432 = 890,144; an L1 buffer at a lower
address is a clash.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from tileplan.targets.tenstorrent.cb import CircularBuffer
from tileplan.targets.tenstorrent.memory import CoreRange
from tileplan.targets.tenstorrent.tiles import round_up


@dataclass(frozen=True, slots=True)
class PlacedCircularBuffer:
    """A CB at its L1 address on all its cores (None: globally allocated, at its
    tensor's address)."""

    cb: CircularBuffer
    address: int | None

    @property
    def end(self) -> int | None:
        return None if self.address is None else self.address + self.cb.total_bytes


@dataclass(frozen=True, slots=True)
class RangeRegion:
    """One core range's CB regions, [start, end) pairs from low to high
    (`CircularBufferAllocator::l1_regions`). A range that only globally allocated CBs
    cover has none."""

    core_range: CoreRange
    regions: tuple[tuple[int, int], ...]

    @property
    def end(self) -> int | None:
        """The static CB region's end on these cores (None: no static CB here)."""
        return self.regions[-1][1] if self.regions else None


@dataclass(frozen=True, slots=True)
class CbLayout:
    """A program's CBs placed: each CB's address and each core range's regions.
    Invariant: every region list is sorted and non-overlapping."""

    program_id: int
    base: int
    placed: tuple[PlacedCircularBuffer, ...]
    ranges: tuple[RangeRegion, ...]

    @property
    def region_end(self) -> int:
        """The highest region end over all core ranges (the base when no static CB)."""
        return max((r.end for r in self.ranges if r.end is not None), default=self.base)

    @property
    def static_bytes(self) -> int:
        """Bytes of the program's static CBs on their busiest core range: region end -
        base (gaps from alignment and from other ranges' CBs included)."""
        return self.region_end - self.base


class CbFailure(Enum):
    GROW = "grow"  # the region grows beyond the L1 size
    CLASH = "clash"  # the region reaches the lowest L1 buffer


@dataclass(frozen=True, slots=True)
class CbRegionError:
    """validate_circular_buffer_region's failure as data: the range, where its region
    ends, and the L1 size (grow) or the lowest L1 buffer's address (clash)."""

    kind: CbFailure
    program_id: int
    core_range: CoreRange
    region_end: int
    l1_size: int
    lowest_l1_address: int | None


def allocate_circular_buffers(cbs: Sequence[CircularBuffer], base: int, alignment: int,
                              program_id: int = 0) -> CbLayout:
    """ProgramImpl::allocate_circular_buffers: `cbs` in creation order, `base` the L1
    allocator base (l1_unreserved_base), `alignment` the DRAM alignment.

    Example: base 1,000, alignment 32; A (100 B) on range R, B (50 B) on range S apart
    from R, C (10 B) on both: A at 1,024 (R ends 1,124); B at 1,024 too (S ends 1,074:
    regions are per core range); C at 1,152, the higher end 1,124 aligned, on both."""
    order: list[CoreRange] = []
    for cb in cbs:
        for core_range in cb.core_ranges:
            if core_range not in order:
                order.append(core_range)
    regions: dict[CoreRange, list[list[int]]] = {r: [] for r in order}

    def region_end(core_range: CoreRange) -> int:
        # CircularBufferAllocator::get_cb_region_end: 0 while empty
        found = regions[core_range]
        return found[-1][1] if found else 0

    placed: list[PlacedCircularBuffer] = []
    for cb in cbs:
        if cb.globally_allocated:
            placed.append(PlacedCircularBuffer(cb, None))
            continue
        address = max([base, *(region_end(r) for r in cb.core_ranges)])
        address = round_up(address, alignment)
        for core_range in cb.core_ranges:
            for other in order:
                if not other.intersects(core_range):
                    continue
                if other != core_range and address < region_end(other):
                    continue  # marked already by a CB on another range intersecting `other`
                _mark_address(regions[other], address, cb.total_bytes, base)
        placed.append(PlacedCircularBuffer(cb, address))
    return CbLayout(program_id, base, tuple(placed),
                    tuple(RangeRegion(r, tuple((a, b) for a, b in regions[r])) for r in order))


def _mark_address(regions: list[list[int]], address: int, size: int, base: int) -> None:
    """CircularBufferAllocator::mark_address: extend the last region or open one."""
    if not regions:
        regions.append([base, base])
    last = regions[-1]
    assert address >= last[1], f"Local buffer address {address} has to append to last L1 region [{last[0]}, " \
                               f"{last[1]}) or be at a higher address"
    if address == last[1]:
        last[1] += size
    else:
        regions.append([address, address + size])


def validate_circular_buffer_region(layout: CbLayout, l1_size: int,
                                    lowest_l1_address: int | None) -> CbRegionError | None:
    """ProgramImpl::validate_circular_buffer_region: the first core range (in order)
    whose static region ends beyond `l1_size` or above `lowest_l1_address` (the lowest
    L1 buffer over the compute banks, None when L1 holds none)."""
    for region in layout.ranges:
        end = region.end
        if end is None:
            continue
        if end > l1_size:
            return CbRegionError(CbFailure.GROW, layout.program_id, region.core_range, end, l1_size,
                                 lowest_l1_address)
        if lowest_l1_address is not None and lowest_l1_address < end:
            return CbRegionError(CbFailure.CLASH, layout.program_id, region.core_range, end, l1_size,
                                 lowest_l1_address)
    return None
