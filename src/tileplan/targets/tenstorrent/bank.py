"""tt-metal's bank managers: lockstep buffers over banks, placed by a free list.

A buffer of one type (DRAM, L1, L1_SMALL, TRACE) reserves the same address range in
every bank of that type, whether or not a bank holds any of its pages (lockstep;
tt-metal tech_reports/memory/allocator.md section 3). The range is `bytes_per_bank`
(detail::calculate_bank_size_spread: ceil(pages / N) aligned pages, N the banks of an
interleaved buffer, the shards of a sharded one), placed by one FreeList for the whole
bank manager (tt_metal/impl/allocator/bank_manager.cpp `BankManager::allocate_buffer`):
L1 and L1_SMALL top-down, DRAM and TRACE bottom-up (tt_metal/impl/buffers/buffer.cpp:
`bottom_up.value_or(is_dram())`).

When no free block fits, bank_manager.cpp throws its "Out of Memory" string with the
manager's statistics; here that is an `OutOfMemory` value, a capacity one (the aligned
request exceeds the free bytes) or a fragmentation one (enough free bytes, no block large
enough). `messages.out_of_memory` formats it. A sharded buffer with more shards than
compute cores fails first (message 6 of TENSTORRENT-NOTES.md (c)): `TooManyShards`.

Worked example (tt-mlir #8044): 48 shards of 270 bf16 tiles, 26,542,080 B of L1 on n150
(bank 1,329,888 B): 552,960 B a bank; with 417,792 B allocated and a largest free block
of 522,240 B it fails though 912,096 B are free: a fragmentation OOM.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.free_list import Block, FreeList, Statistics
from tileplan.targets.tenstorrent.memory import BufferType, TensorSpec
from tileplan.targets.tenstorrent.tiles import round_up


def bank_size_spread(size: int, page_size: int, banks: int, alignment: int) -> int:
    """tt-metal `detail::calculate_bank_size_spread` (allocator.hpp): the bytes every
    bank reserves for `size` bytes of `page_size`-byte pages spread over `banks`:
    `(1 + (pages - 1) // banks) x round_up(page_size, alignment)`, 0 for no pages."""
    assert page_size > 0 and size % page_size == 0, (size, page_size)
    assert banks > 0, banks
    pages = size // page_size
    return 0 if pages == 0 else (1 + (pages - 1) // banks) * round_up(page_size, alignment)


@dataclass(frozen=True, slots=True)
class BufferRequest:
    """What Allocator::allocate_buffer hands a bank manager for one buffer: its type,
    `size` (Buffer::aligned_size: device pages x aligned page), `page_size` (the aligned
    page), `shards` for a sharded buffer (None: interleaved) and the direction
    (`bottom_up` None: tt-metal's default for the type). Invariants: page_size >= 1,
    size a whole number of pages, shards >= 1."""

    buffer_type: BufferType
    size: int
    page_size: int
    shards: int | None = None
    bottom_up: bool | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.page_size < 1 or self.size < 0 or self.size % self.page_size:
            raise InputError(f"buffer {self.name or '?'}: {self.size} B must be a whole number of "
                             f"{self.page_size}-B pages")
        if self.shards is not None and self.shards < 1:
            raise InputError(f"buffer {self.name or '?'}: a sharded buffer has at least one shard, found {self.shards}")

    @property
    def grows_up(self) -> bool:
        """Bottom-up unless told: DRAM and TRACE are, L1 and L1_SMALL are not."""
        if self.bottom_up is not None:
            return self.bottom_up
        return self.buffer_type in (BufferType.DRAM, BufferType.TRACE)

    @classmethod
    def for_tensor(cls, spec: TensorSpec, device: Device, name: str = "") -> "BufferRequest":
        """A tensor's buffer: interleaved, all its pages; sharded, a whole shard per
        shard (the last one too). [3, 1, 1024, 1024] bf16 row-major height-sharded in
        192 x 1024 shards: 16 shards x 192 pages of 2,048 B = 6,291,456 B."""
        memory = spec.memory
        page = round_up(spec.pages().page_bytes, device.alignment(memory.buffer_type))
        if memory.shard is None:
            return cls(memory.buffer_type, spec.pages().count * page, page, name=name)
        shards = spec.shards()
        return cls(memory.buffer_type, shards * spec.shard_pages() * page, page, shards, name=name)


@dataclass(frozen=True, slots=True)
class Allocation:
    """A placed buffer: `address` in every one of `banks` banks, `bytes_per_bank` of
    data there and `reserved` bytes taken from the free list (aligned)."""

    request: BufferRequest
    address: int
    banks: int
    bytes_per_bank: int
    reserved: int

    @property
    def end(self) -> int:
        return self.address + self.reserved


class OomKind(Enum):
    """Why a request did not fit: more than the free bytes (capacity), or free bytes
    enough but no free block as large (fragmentation: first fit's holes)."""

    CAPACITY = "capacity"
    FRAGMENTATION = "fragmentation"


@dataclass(frozen=True, slots=True)
class OutOfMemory:
    """bank_manager.cpp's "Out of Memory: Not enough space to allocate ..." as data:
    the request, the banks it spreads over, what each bank needs, the bank size and the
    manager's statistics at that moment. `dependent`: the "after considering
    dependencies" form (sub-device allocators)."""

    request: BufferRequest
    banks: int
    bytes_per_bank: int
    need: int
    bank_size: int
    statistics: Statistics
    dependent: bool = False

    @property
    def kind(self) -> OomKind:
        return OomKind.CAPACITY if self.need > self.statistics.free else OomKind.FRAGMENTATION


@dataclass(frozen=True, slots=True)
class TooManyShards:
    """bank_manager.cpp: "Expected number of shards {} to be less than or equal to total
    number of L1 banks {} in compute cores"."""

    request: BufferRequest
    compute_banks: int


class BankManager:
    """One buffer type's banks (tt-metal `BankManager`): `banks` banks of `size` bytes
    from `offset`, pages aligned to `alignment`, the free list at `allocator_alignment`
    (the DRAM alignment: BankManager::init_allocators). Mutable, as the planner replays
    a program; `copy` for what-ifs."""

    __slots__ = ("buffer_type", "banks", "alignment", "compute_banks", "free_list")

    def __init__(self, buffer_type: BufferType, banks: int, size: int, offset: int, alignment: int,
                 allocator_alignment: int, compute_banks: int) -> None:
        self.buffer_type = buffer_type
        self.banks = banks
        self.alignment = alignment
        self.compute_banks = compute_banks
        self.free_list = FreeList(size, offset, allocator_alignment)

    def copy(self) -> "BankManager":
        other = BankManager.__new__(BankManager)
        other.buffer_type, other.banks, other.alignment = self.buffer_type, self.banks, self.alignment
        other.compute_banks, other.free_list = self.compute_banks, self.free_list.copy()
        return other

    @property
    def bank_size(self) -> int:
        return self.free_list.size

    def per_bank(self, request: BufferRequest) -> int:
        """The bytes a request stores in each bank it uses (its shards, else all banks)."""
        return bank_size_spread(request.size, request.page_size, request.shards or self.banks, self.alignment)

    def need(self, request: BufferRequest) -> int:
        """What a request takes from the free list in each bank (FreeList.aligned)."""
        return self.free_list.aligned(self.per_bank(request))

    def allocate(self, request: BufferRequest) -> Allocation | OutOfMemory | TooManyShards:
        """BankManager::allocate_buffer (single-allocator path)."""
        assert request.buffer_type is self.buffer_type, (request.buffer_type, self.buffer_type)
        banks = self.banks
        if request.shards is not None:
            if request.shards > self.compute_banks:
                return TooManyShards(request, self.compute_banks)
            banks = request.shards
        elif banks == 0:
            raise InputError(f"buffer {request.name or '?'}: an interleaved {self.buffer_type.value} buffer needs "
                             f"{self.buffer_type.value} banks; this device has none (l1_small_size is 0)")
        per_bank = self.per_bank(request)
        address = self.free_list.allocate(per_bank, request.grows_up)
        if address is None:
            return OutOfMemory(request, banks, per_bank, self.free_list.aligned(per_bank), self.bank_size,
                               self.free_list.statistics())
        reserved = self.free_list.allocation_size(address)
        assert reserved is not None
        return Allocation(request, address, banks, per_bank, reserved)

    def deallocate(self, allocation: Allocation) -> None:
        self.free_list.deallocate(allocation.address)

    def statistics(self) -> Statistics:
        return self.free_list.statistics()

    def lowest_occupied(self) -> int | None:
        """BankManager::lowest_occupied_address (compute banks have offset 0)."""
        return self.free_list.lowest_occupied()

    def blocks(self) -> tuple[Block, ...]:
        return self.free_list.blocks()


class DeviceAllocator:
    """A device's bank managers as L1BankingAllocator builds them
    (l1_banking_allocator.cpp `init_compute_and_storage_l1_bank_manager`, allocator.cpp
    `init_one_bank_per_channel`): L1 from l1_unreserved_base, L1_SMALL above it, DRAM
    from dram_unreserved_base, TRACE above the DRAM bank."""

    __slots__ = ("device", "managers")

    def __init__(self, device: Device) -> None:
        self.device = device
        d = device
        compute = d.l1_banks
        self.managers = {
            BufferType.L1: BankManager(BufferType.L1, d.l1_banks, d.l1_bank_size, d.l1_base, d.l1_alignment,
                                       d.dram_alignment, compute),
            BufferType.L1_SMALL: BankManager(BufferType.L1_SMALL, d.banks(BufferType.L1_SMALL), d.l1_small_bank_size,
                                             d.l1_small_base, d.l1_alignment, d.dram_alignment, compute),
            BufferType.DRAM: BankManager(BufferType.DRAM, d.dram_banks, d.dram_bank_size, d.dram_unreserved_base,
                                         d.dram_alignment, d.dram_alignment, compute),
            BufferType.TRACE: BankManager(BufferType.TRACE, d.dram_banks, d.trace_bank_size, d.trace_base,
                                          d.dram_alignment, d.dram_alignment, compute),
        }

    def copy(self) -> "DeviceAllocator":
        other = DeviceAllocator.__new__(DeviceAllocator)
        other.device = self.device
        other.managers = {k: m.copy() for k, m in self.managers.items()}
        return other

    def manager(self, buffer_type: BufferType) -> BankManager:
        return self.managers[buffer_type]

    def allocate(self, request: BufferRequest) -> Allocation | OutOfMemory | TooManyShards:
        return self.managers[request.buffer_type].allocate(request)

    def deallocate(self, allocation: Allocation) -> None:
        self.managers[allocation.request.buffer_type].deallocate(allocation)

    def lowest_occupied_l1(self) -> int | None:
        """The lowest L1 buffer address over the compute banks (allocator.cpp
        `lowest_occupied_l1_address`: the L1 manager only, L1_SMALL sits above it); what
        a program's circular buffers must stay below."""
        return self.managers[BufferType.L1].lowest_occupied()


def interleaved_pages(size: int, page_size: int, banks: int) -> tuple[int, ...]:
    """Pages each bank holds of an interleaved buffer, dealt round-robin from bank 0
    (tech_reports/tensor_layouts/tensor_layouts.md 4.1): 10 pages over 4 banks ->
    (3, 3, 2, 2). Every bank still reserves the largest count (lockstep)."""
    pages = size // page_size
    full, rest = divmod(pages, banks)
    return tuple(full + (1 if b < rest else 0) for b in range(banks))

