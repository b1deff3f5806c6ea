"""tt-metal's error strings (tileplan.targets.tenstorrent.messages) re-derived from the
allocator: every published figure of TENSTORRENT-NOTES.md (h) H4 comes out of
tileplan's own arithmetic, and the text is the build's, verbatim."""

from __future__ import annotations

import dataclasses

from tileplan.targets.tenstorrent.bank import Allocation, BufferRequest, DeviceAllocator, OomKind, OutOfMemory
from tileplan.targets.tenstorrent.cb import CircularBuffer
from tileplan.targets.tenstorrent.cb_region import (
    CbFailure, CbRegionError, allocate_circular_buffers, validate_circular_buffer_region)
from tileplan.targets.tenstorrent.device import Device, load_device
from tileplan.targets.tenstorrent.free_list import Statistics
from tileplan.targets.tenstorrent.memory import BufferType, CoreRange
from tileplan.targets.tenstorrent.messages import message, out_of_memory, too_many_shards
from tileplan.targets.tenstorrent.trace import TraceRegionExceeded
from tileplan.targets.tenstorrent.versions import CoreRangeForm, OomForm, Stack, software_at
from tileplan.targets.tenstorrent import messages


def _fill(alloc: DeviceAllocator, buffer_type: BufferType, per_bank: int) -> Allocation:
    """One buffer of `per_bank` bytes in every bank of a type (a page a bank)."""
    banks = alloc.device.banks(buffer_type)
    placed = alloc.allocate(BufferRequest(buffer_type, per_bank * banks, per_bank))
    assert isinstance(placed, Allocation)
    return placed


def test_h4_1_falcon3_7b_fragmentation_tt_mlir_8044() -> None:
    # 26,542,080 B over 48 shards: 12,960 tiles / 48 = 270 tiles = 552,960 B a bank;
    # bank 1,499,136 - 103,712 - 65,536 = 1,329,888; 417,792 allocated + 912,096 free
    d = load_device("n150", stack=Stack.TT_MLIR, version="2026-04-21")
    assert 26_542_080 == 12_960 * 2048 and 12_960 // 48 * 2048 == 552_960
    alloc = DeviceAllocator(d)
    # top-down: 208,896 B a bank at the top, a 522,240-B hole, 208,896 B below it
    _fill(alloc, BufferType.L1, 208_896)
    hole = _fill(alloc, BufferType.L1, 522_240)
    _fill(alloc, BufferType.L1, 208_896)
    alloc.deallocate(hole)
    oom = alloc.allocate(BufferRequest(BufferType.L1, 26_542_080, 2048, shards=48))
    assert isinstance(oom, OutOfMemory) and oom.kind is OomKind.FRAGMENTATION
    assert oom.statistics == Statistics(1_329_888, 417_792, 912_096, 522_240)
    assert oom.statistics.allocated + oom.statistics.free == d.l1_bank_size
    assert oom.statistics.largest_free_block < oom.bytes_per_bank <= oom.statistics.free
    assert message(oom, d.software) == (
        "Out of Memory: Not enough space to allocate 26542080 B L1 buffer across 48 banks, where each bank needs to "
        "store 552960 B, but bank size is 1329888 B (allocated: 417792 B, free: 912096 B, largest free block: "
        "522240 B)")


def test_qwen3_32b_tt_mlir_8110_same_bank() -> None:
    # 38,928,384 B over 64 shards: 608,256 B a bank (297 tiles); 323,936 + 1,005,952 = bank
    d = load_device("n150", version="2026-04-21")
    assert 38_928_384 // 64 == 608_256 == 297 * 2048
    assert 323_936 + 1_005_952 == d.l1_bank_size


def test_h4_2_bevdepth_2025_build_interleaved_over_72_banks() -> None:
    # 69,599,232 B = 33,984 tiles over 72 banks -> 472 tiles = 966,656 B;
    # bank 1,499,136 - 100,352 - 32,768 = 1,366,016, "bank size is only" in 2025
    d = load_device("n150", stack=Stack.TT_MLIR, version="2025-10-03")
    assert d.l1_banks == 72 and d.l1_bank_size == 1_366_016
    alloc = DeviceAllocator(d)
    _fill(alloc, BufferType.L1, 400_000)
    oom = alloc.allocate(BufferRequest(BufferType.L1, 69_599_232, 2048))
    assert isinstance(oom, OutOfMemory) and oom.bytes_per_bank == 966_656 == 472 * 2048
    assert message(oom, d.software) == (
        "Out of Memory: Not enough space to allocate 69599232 B L1 buffer across 72 banks, where each bank needs to "
        "store 966656 B, but bank size is only 1366016 B")


def test_h4_3_bloom_embedding_dram() -> None:
    # a 250,880 x 2,048 bf16 embedding: 501,760 tiles over 12 banks -> 41,814 tiles
    d = load_device("n150", version="2025-10-03")
    assert d.dram_bank_size == 1_073_741_792
    alloc = DeviceAllocator(d)
    _fill(alloc, BufferType.DRAM, 1_000_000_000)  # the rest of the model's weights
    oom = alloc.allocate(BufferRequest(BufferType.DRAM, 250_880 * 2048 * 2, 2048))
    assert isinstance(oom, OutOfMemory) and oom.kind is OomKind.CAPACITY
    assert (oom.request.size, oom.bytes_per_bank) == (1_027_604_480, 85_635_072) == (501_760 * 2048, 41_814 * 2048)
    assert message(oom, d.software).endswith("each bank needs to store 85635072 B, but bank size is only 1073741792 B")


def test_h4_4_qwen3_vl_conv3d_dram_capacity() -> None:
    # 23,085,449,216 B over 12 banks -> 1,923,788,800 B a bank; bank 1,071,821,792 =
    # 1 GiB - 1,920,032; allocated 93,197,824 + free 978,623,968 = bank
    d = load_device("n150", version="2026-04-21")
    alloc = DeviceAllocator(d)
    _fill(alloc, BufferType.DRAM, 93_197_824)
    oom = alloc.allocate(BufferRequest(BufferType.DRAM, 23_085_449_216, 2048))
    assert isinstance(oom, OutOfMemory) and oom.kind is OomKind.CAPACITY
    assert oom.bytes_per_bank == 1_923_788_800
    assert (oom.statistics.allocated, oom.statistics.free) == (93_197_824, 978_623_968)
    assert message(oom, d.software).startswith(
        "Out of Memory: Not enough space to allocate 23085449216 B DRAM buffer across 12 banks, where each bank needs "
        "to store 1923788800 B, but bank size is 1071821792 B (allocated: 93197824 B, free: 978623968 B, ")


def test_h4_5_conv2d_circular_buffers_grow_beyond_l1_tt_metal_17947() -> None:
    # a region ending at 1,741,152 > 1,499,136 on the 8x8 grid, printed as 2025 builds did
    grid = CoreRange.grid(8, 8)
    base = 100_352
    layout = allocate_circular_buffers([CircularBuffer.on(grid, 0, "act", 1, 1_741_152 - base)], base, 32)
    failure = validate_circular_buffer_region(layout, 1_499_136, None)
    assert failure == CbRegionError(CbFailure.GROW, 0, grid, 1_741_152, 1_499_136, None)
    assert messages.cb_region(failure, CoreRangeForm.XY) == (
        "Statically allocated circular buffers on core range [(x=0,y=0) - (x=7,y=7)] grow to 1741152 B which is "
        "beyond max L1 size of 1499136 B")


def test_the_clash_message_in_both_core_range_forms() -> None:
    # tt-metal #36885: range (1,0)-(3,9), L1 buffer at 334,208, region end 371,104
    failure = CbRegionError(CbFailure.CLASH, 5648, CoreRange((1, 0), (3, 9)), 371_104, 1_499_136, 334_208)
    assert messages.cb_region(failure, CoreRangeForm.XY) == (
        "Statically allocated circular buffers in program 5648 clash with L1 buffers on core range "
        "[(x=1,y=0) - (x=3,y=9)]. L1 buffer allocated at 334208 and static circular buffer region ends at 371104")
    assert "on core range [1-0 - 3-9]." in messages.cb_region(failure, CoreRangeForm.DASH)


def test_the_three_oom_forms_and_the_dependent_form() -> None:
    oom = OutOfMemory(BufferRequest(BufferType.L1, 48 * 1024, 1024), 48, 1024, 1024, 2048, Statistics(2048, 2048, 0, 0))
    head = ("Out of Memory: Not enough space to allocate 49152 B L1 buffer across 48 banks, where each bank needs to "
            "store 1024 B")
    assert out_of_memory(oom, OomForm.OLDEST) == head
    assert out_of_memory(oom, OomForm.ONLY) == head + ", but bank size is only 2048 B"
    assert out_of_memory(oom, OomForm.STATS) == (
        head + ", but bank size is 2048 B (allocated: 2048 B, free: 0 B, largest free block: 0 B)")
    assert out_of_memory(dataclasses.replace(oom, dependent=True), OomForm.STATS) == (
        "Out of Memory: Not enough space after considering dependencies to allocate 49152 B L1 across 48 banks "
        "(1024 B per bank), bank size is 2048 B (allocated: 2048 B, free: 0 B, largest free block: 0 B)")


def test_the_build_picks_the_form() -> None:
    oom = OutOfMemory(BufferRequest(BufferType.L1, 1024, 1024), 1, 1024, 1024, 512, Statistics(512, 0, 512, 512))
    assert message(oom, software_at("2025-04-08", Stack.TT_METAL)).endswith("needs to store 1024 B")
    assert message(oom, software_at("2025-10-03", Stack.TT_METAL)).endswith("bank size is only 512 B")
    assert message(oom, software_at("2026-02-04", Stack.TT_METAL)).endswith("largest free block: 512 B)")


def test_message_6_and_the_trace_message() -> None:
    d: Device = load_device("n300", stack=Stack.TT_METAL)
    result = DeviceAllocator(d).allocate(BufferRequest(BufferType.L1, 64 * 2048, 2048, shards=64))
    assert not isinstance(result, Allocation) and not isinstance(result, OutOfMemory)
    assert too_many_shards(result) == ("Expected number of shards 64 to be less than or equal to total number of L1 "
                                       "banks 56 in compute cores")
    failure = TraceRegionExceeded(6_144, 0, 5_000)
    assert message(failure, d.software) == (
        "Creating trace buffers of size 6144B on MeshDevice 0, but only 5000B is allocated for trace region.")
    assert messages.trace_region(failure, "device").startswith("Creating trace buffers of size 6144B on device 0,")
