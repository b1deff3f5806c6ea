"""tt-metal's free-list allocator for one bank's address range (FreeListOpt with
SearchPolicy::FIRST: tt_metal/impl/allocator/algorithms/free_list_opt.cpp).

Every bank manager holds one of these (bank_manager.cpp `BankManager::init_allocators`
passes the HAL's DRAM alignment as both the alignment and the minimum allocation, for L1
banks too): a list of blocks covering [0, size), each free or allocated, addresses
relative to `offset` (the bank's base).

- `allocate` (FreeListOpt::allocate): the request is rounded up to
  `align(max(size, min_allocation))`. FreeListOpt keeps free blocks in size classes
  (log2 of size / 1024), each sorted by address, and with the FIRST policy walks every
  class from the request's upward taking, per class, the first block that fits scanning
  from the top (top-down) or bottom (bottom-up), and keeping it only if its address is
  better than the best so far. Since every block that fits lies in the request's class or
  above, the choice is the highest-addressed free block that fits (top-down), or the
  lowest (bottom-up); that is what this port computes. The allocation takes the top of
  the chosen block (top-down) or its bottom (bottom-up); the rest stays a free block
  (`allocate_in_block`).
- `deallocate` (FreeListOpt::deallocate): the block becomes free and merges with a free
  neighbour on either side. An address that is not allocated is ignored, as there.
- `statistics` (FreeListOpt::get_statistics): allocated and free bytes, the largest free
  block; with nothing allocated, free = largest = the whole range.
- `lowest_occupied` (Algorithm::lowest_occupied_address): the lowest allocated address.

Worked example (a 1,024-B range, alignment 32, top-down): allocate 100 -> 128 B at 896;
allocate 64 -> at 832; free 896 -> blocks [0, 832) free, [832, 896) allocated,
[896, 1024) free: free 960 B, largest free block 832 B.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from tileplan.targets.tenstorrent.tiles import round_up


@dataclass(frozen=True, slots=True)
class Statistics:
    """A bank manager's statistics (tt-metal `Statistics`, allocator_types.hpp), the
    numbers the out-of-memory message prints. Invariant: allocated + free = total."""

    total_allocatable: int
    allocated: int
    free: int
    largest_free_block: int

    def __post_init__(self) -> None:
        assert self.allocated + self.free == self.total_allocatable, self
        assert 0 <= self.largest_free_block <= self.free, self


@dataclass(frozen=True, slots=True)
class Block:
    """One block of the list: [address, address + size), absolute addresses."""

    address: int
    size: int
    allocated: bool

    @property
    def end(self) -> int:
        return self.address + self.size


class FreeList:
    """One address range managed as FreeListOpt manages it (see the module docstring).

    Mutable: a planner replays allocations and frees in program order. Blocks are kept
    sorted by address and always cover [0, size) without gaps."""

    __slots__ = ("size", "offset", "alignment", "min_allocation", "_address", "_size", "_allocated")

    def __init__(self, size: int, offset: int, alignment: int, min_allocation: int | None = None) -> None:
        # Algorithm::Algorithm: the offset must be aligned
        assert size >= 0 and alignment > 0 and offset % alignment == 0, (size, offset, alignment)
        self.size = size
        self.offset = offset
        self.alignment = alignment
        self.min_allocation = alignment if min_allocation is None else min_allocation
        self._address = [0]
        self._size = [size]
        self._allocated = [False]

    def copy(self) -> "FreeList":
        other = FreeList(self.size, self.offset, self.alignment, self.min_allocation)
        other._address, other._size, other._allocated = list(self._address), list(self._size), list(self._allocated)
        return other

    def aligned(self, size: int) -> int:
        """What a request of `size` bytes takes: `align(max(size, min_allocation))`."""
        return round_up(max(size, self.min_allocation), self.alignment)

    def allocate(self, size: int, bottom_up: bool) -> int | None:
        """The absolute address of a new allocation, or None if no free block fits."""
        need = self.aligned(size)
        count = len(self._address)
        for chosen in range(count) if bottom_up else range(count - 1, -1, -1):
            if not self._allocated[chosen] and self._size[chosen] >= need:
                break
        else:
            return None
        start = self._address[chosen] if bottom_up else self._address[chosen] + self._size[chosen] - need
        self._carve(chosen, start, need)
        return start + self.offset

    def allocate_at(self, address: int, size: int) -> int | None:
        """FreeListOpt::allocate_at_address: `size` bytes at absolute `address`, if one
        free block holds them."""
        need = self.aligned(size)
        start = address - self.offset
        for i, (a, s) in enumerate(zip(self._address, self._size)):
            if a <= start and start + need <= a + s:
                if self._allocated[i]:
                    return None
                self._carve(i, start, need)
                return address
        return None

    def _carve(self, index: int, start: int, need: int) -> None:
        """allocate_in_block: split the free block at `index` around [start, start+need)."""
        a, s = self._address[index], self._size[index]
        pieces = [(a, start - a, False), (start, need, True), (start + need, a + s - start - need, False)]
        pieces = [p for p in pieces if p[1] > 0]
        self._address[index:index + 1] = [p[0] for p in pieces]
        self._size[index:index + 1] = [p[1] for p in pieces]
        self._allocated[index:index + 1] = [p[2] for p in pieces]

    def deallocate(self, address: int) -> None:
        """Free the allocation at absolute `address` and merge it with free neighbours."""
        start = address - self.offset
        i = bisect_left(self._address, start)
        if i == len(self._address) or self._address[i] != start or not self._allocated[i]:
            return
        self._allocated[i] = False
        if i + 1 < len(self._address) and not self._allocated[i + 1]:
            self._size[i] += self._size[i + 1]
            del self._address[i + 1], self._size[i + 1], self._allocated[i + 1]
        if i > 0 and not self._allocated[i - 1]:
            self._size[i - 1] += self._size[i]
            del self._address[i], self._size[i], self._allocated[i]

    def statistics(self) -> Statistics:
        allocated = sum(s for s, taken in zip(self._size, self._allocated) if taken)
        free_sizes = [s for s, taken in zip(self._size, self._allocated) if not taken]
        if allocated == 0:
            return Statistics(self.size, 0, self.size, self.size)
        return Statistics(self.size, allocated, sum(free_sizes), max(free_sizes, default=0))

    def lowest_occupied(self) -> int | None:
        """The lowest allocated absolute address, None when nothing is allocated."""
        for a, taken in zip(self._address, self._allocated):
            if taken:
                return a + self.offset
        return None

    def blocks(self) -> tuple[Block, ...]:
        """The blocks, lowest first, with absolute addresses."""
        return tuple(Block(a + self.offset, s, t) for a, s, t in zip(self._address, self._size, self._allocated))

    def allocation_size(self, address: int) -> int | None:
        """The bytes the allocation at absolute `address` holds (get_allocation_size)."""
        start = address - self.offset
        i = bisect_left(self._address, start)
        if i < len(self._address) and self._address[i] == start and self._allocated[i]:
            return self._size[i]
        return None
