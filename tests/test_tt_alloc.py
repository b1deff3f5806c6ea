"""tt-metal's free list and bank managers (tileplan.targets.tenstorrent.free_list, bank)
against FreeListOpt's first fit (free_list_opt.cpp), BankManager::allocate_buffer
(bank_manager.cpp) and lockstep per-bank sizes (calculate_bank_size_spread)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.bank import (
    Allocation, BankManager, BufferRequest, DeviceAllocator, OomKind, OutOfMemory, TooManyShards, bank_size_spread,
    interleaved_pages)
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.free_list import Block, FreeList, Statistics
from tileplan.targets.tenstorrent.memory import (
    BufferType, CoreRange, MemoryConfig, MemoryLayout, ShardSpec, TensorSpec)
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import Stack


def test_the_worked_example_of_the_free_list() -> None:
    fl = FreeList(1024, 0, 32)
    assert fl.allocate(100, bottom_up=False) == 896  # 100 -> 128 B at the top
    assert fl.allocate(64, bottom_up=False) == 832
    fl.deallocate(896)
    assert fl.blocks() == (Block(0, 832, False), Block(832, 64, True), Block(896, 128, False))
    assert fl.statistics() == Statistics(1024, 64, 960, 832)


def test_first_fit_takes_the_highest_free_block_that_fits_top_down() -> None:
    # holes of 128 (at 0), 256 (at 384) and 64 (at 896): a 100-B request goes into the
    # highest hole that holds it (the 256-B one, at its top), not the best-fitting one
    fl = FreeList(1024, 1000 * 32, 32)
    base = fl.offset
    taken = [fl.allocate_at(base + a, s) for a, s in ((128, 256), (640, 256), (960, 64))]
    assert None not in taken
    assert fl.allocate(100, bottom_up=False) == base + 640 - 128
    assert fl.allocate(100, bottom_up=True) == base + 0  # bottom-up: the lowest that fits


def test_an_unknown_address_is_ignored_on_free_as_tt_metal_does() -> None:
    fl = FreeList(1024, 0, 32)
    fl.allocate(64, bottom_up=True)
    fl.deallocate(32)
    assert fl.statistics().allocated == 64


def test_an_empty_range_fits_nothing() -> None:
    fl = FreeList(0, 64, 32)  # L1_SMALL with l1_small_size 0
    assert fl.allocate(1, bottom_up=False) is None
    assert fl.statistics() == Statistics(0, 0, 0, 0)


def test_the_lowest_occupied_address_follows_allocations_and_frees() -> None:
    fl = FreeList(4096, 1024, 32)
    assert fl.lowest_occupied() is None
    top = fl.allocate(1024, bottom_up=False)
    low = fl.allocate(1024, bottom_up=False)
    assert (top, low, fl.lowest_occupied()) == (1024 + 3072, 1024 + 2048, 1024 + 2048)
    assert low is not None
    fl.deallocate(low)
    assert fl.lowest_occupied() == top


# -- properties --------------------------------------------------------------------------

ops = st.lists(st.tuples(st.booleans(), st.integers(0, 3000), st.booleans(), st.integers(0, 50)), max_size=60)


@settings(max_examples=300)
@given(ops=ops, alignment=st.sampled_from([16, 32, 64]), units=st.integers(0, 400))
def test_free_list_invariants(ops: list[tuple[bool, int, bool, int]], alignment: int, units: int) -> None:
    size = units * alignment
    fl = FreeList(size, 7 * alignment, alignment)
    live: list[int] = []
    for is_alloc, request, bottom_up, pick in ops:
        if is_alloc or not live:
            before = fl.blocks()
            need = fl.aligned(request)
            fitting = [b for b in before if not b.allocated and b.size >= need]
            address = fl.allocate(request, bottom_up)
            if not fitting:
                # out of memory exactly when no free block is large enough
                assert address is None
                continue
            chosen = fitting[0] if bottom_up else fitting[-1]
            assert address == (chosen.address if bottom_up else chosen.end - need)
            live.append(address)
        else:
            fl.deallocate(live.pop(pick % len(live)))
        blocks = fl.blocks()
        # the blocks tile the range without gaps; no two live buffers overlap
        assert blocks[0].address == fl.offset and blocks[-1].end == fl.offset + size
        assert all(a.end == b.address for a, b in zip(blocks, blocks[1:]))
        # neighbouring free blocks are always merged
        assert not any(not a.allocated and not b.allocated for a, b in zip(blocks, blocks[1:]))
        # addresses and sizes aligned
        assert all(b.address % alignment == 0 and b.size % alignment == 0 for b in blocks)
        assert sorted(b.address for b in blocks if b.allocated) == sorted(live)
        stats = fl.statistics()
        free = [b.size for b in blocks if not b.allocated]
        assert stats.allocated + stats.free == size
        assert stats.largest_free_block == (max(free, default=0) if live else size)
        assert fl.lowest_occupied() == (min(live) if live else None)
    for address in list(live):
        fl.deallocate(address)
    # freeing everything restores one free block
    assert fl.blocks() == (Block(fl.offset, size, False),) or size == 0


@settings(max_examples=150)
@given(requests=st.lists(st.tuples(st.integers(1, 2000), st.integers(1, 160), st.sampled_from([None, 4, 48])),
                         max_size=25))
def test_bank_manager_buffers_are_lockstep_and_never_overlap(requests: list[tuple[int, int, int | None]]) -> None:
    manager = BankManager(BufferType.L1, 64, 200_000, 103_712, 16, 32, 64)
    placed: list[Allocation] = []
    for pages, page, shards in requests:
        page_size = page * 16
        result = manager.allocate(BufferRequest(BufferType.L1, pages * page_size, page_size, shards))
        if isinstance(result, OutOfMemory):
            s = result.statistics
            assert result.need > s.largest_free_block
            assert (result.kind is OomKind.CAPACITY) == (result.need > s.free)
            continue
        assert isinstance(result, Allocation)
        banks = shards or 64
        assert result.banks == banks
        assert result.bytes_per_bank == -(-pages // banks) * page_size
        assert result.address % 32 == 0 and result.reserved >= result.bytes_per_bank
        assert 103_712 <= result.address and result.end <= 103_712 + 200_000
        for other in placed:
            assert result.end <= other.address or other.end <= result.address
        placed.append(result)
    stats = manager.statistics()
    assert stats.allocated == sum(a.reserved for a in placed)


# -- bank managers ----------------------------------------------------------------------

def test_bank_size_spread_is_tt_metals() -> None:
    # 280 tiles over 56 banks: 5 pages a bank; 1,024 tiles over 110: 10
    assert bank_size_spread(280 * 2048, 2048, 56, 16) == 10_240
    assert bank_size_spread(1024 * 2048, 2048, 110, 16) == 20_480
    assert bank_size_spread(0, 2048, 12, 32) == 0
    assert bank_size_spread(50176 * 6, 6, 64, 16) == 784 * 16  # 6-B rows take 16 B in L1
    assert interleaved_pages(10 * 2048, 2048, 4) == (3, 3, 2, 2)


def test_default_directions() -> None:
    assert BufferRequest(BufferType.DRAM, 64, 32).grows_up and BufferRequest(BufferType.TRACE, 64, 32).grows_up
    assert not BufferRequest(BufferType.L1, 64, 32).grows_up
    assert not BufferRequest(BufferType.L1_SMALL, 64, 32).grows_up
    assert not BufferRequest(BufferType.DRAM, 64, 32, bottom_up=False).grows_up


def test_l1_is_top_down_and_dram_bottom_up_on_a_device() -> None:
    d = load_device("n150", version="2026-04-21")
    alloc = DeviceAllocator(d)
    l1 = alloc.allocate(BufferRequest(BufferType.L1, 72 * 2048, 2048))
    dram = alloc.allocate(BufferRequest(BufferType.DRAM, 12 * 2048, 2048))
    small = alloc.allocate(BufferRequest(BufferType.L1_SMALL, 72 * 32, 32, shards=72))
    assert isinstance(l1, Allocation) and isinstance(dram, Allocation) and isinstance(small, Allocation)
    assert l1.address == 1_499_136 - 65_536 - 2048  # just below L1_SMALL
    assert small.address == 1_499_136 - 32  # L1_SMALL's own top
    assert dram.address == 1_920_032
    assert alloc.lowest_occupied_l1() == l1.address  # L1_SMALL is not counted


def test_too_many_shards_is_message_6() -> None:
    alloc = DeviceAllocator(load_device("n300", stack=Stack.TT_METAL))  # 56 compute cores
    result = alloc.allocate(BufferRequest(BufferType.L1, 64 * 2048, 2048, shards=64))
    assert result == TooManyShards(BufferRequest(BufferType.L1, 64 * 2048, 2048, shards=64), 56)


def test_an_l1_small_buffer_without_l1_small_is_an_out_of_memory_on_0_b_banks() -> None:
    """tt-metal with l1_small_size 0 keeps the L1_SMALL banks, of 0 B: "Out of Memory: Not
    enough space to allocate 1024 B L1_SMALL buffer across 64 banks, where each bank needs
    to store 16 B, but bank size is 0 B" (a conv1d's config tensor, public model notes)."""
    alloc = DeviceAllocator(load_device("n150", stack=Stack.TT_METAL))  # worker dispatch: 64 banks
    result = alloc.allocate(BufferRequest(BufferType.L1_SMALL, 1024, 16))
    assert isinstance(result, OutOfMemory)
    assert (result.banks, result.bytes_per_bank, result.bank_size) == (64, 16, 0)


def test_requests_for_tensors() -> None:
    d = load_device("n300", stack=Stack.TT_METAL)  # 56 banks, the gtest's N300
    hs16 = TensorSpec((3, 1, 1024, 1024), DataType.BFLOAT16, Layout.ROW_MAJOR,
                      MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED,
                                   ShardSpec(CoreRange.grid(4, 4), (192, 1024))))
    request = BufferRequest.for_tensor(hs16, d)
    assert (request.size, request.page_size, request.shards) == (16 * 192 * 2048, 2048, 16)
    placed = DeviceAllocator(d).allocate(request)
    assert isinstance(placed, Allocation) and placed.bytes_per_bank == 393_216  # H1 rows 1, 3, 5
    i4x2 = TensorSpec((4, 2, 160, 224), DataType.BFLOAT16, Layout.TILE, MemoryConfig(BufferType.L1))
    placed = DeviceAllocator(d).allocate(BufferRequest.for_tensor(i4x2, d))
    assert isinstance(placed, Allocation) and placed.bytes_per_bank == 10_240  # H1 rows 2, 4, 6


def test_copies_are_independent() -> None:
    alloc = DeviceAllocator(load_device("n150"))
    other = alloc.copy()
    other.allocate(BufferRequest(BufferType.L1, 72 * 2048, 2048))
    assert alloc.lowest_occupied_l1() is None and other.lowest_occupied_l1() is not None


def test_a_bad_request_is_one_line() -> None:
    with pytest.raises(InputError, match="x: 100 B must be a whole number of 32-B pages"):
        BufferRequest(BufferType.DRAM, 100, 32, name="x")
