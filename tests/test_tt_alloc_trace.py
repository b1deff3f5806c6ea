"""The trace region (tileplan.targets.tenstorrent.device, trace) against tt-metal's two
rules (allocator.cpp init_one_bank_per_channel before and after PR #47122, with #47766)
and the trace-buffer checks of mesh_trace.cpp `MeshTrace::populate_mesh_buffer`."""

from __future__ import annotations

import dataclasses

import pytest

from tileplan.targets.tenstorrent.bank import Allocation, DeviceAllocator, OutOfMemory
from tileplan.targets.tenstorrent.device import Device, load_device
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.messages import message
from tileplan.targets.tenstorrent.trace import TraceRegion, TraceRegionExceeded, trace_page_size
from tileplan.targets.tenstorrent.versions import Stack, TraceRule, software_at


def _on(date: str, trace_region_size: int, machine: str = "n150") -> Device:
    """A Wormhole chip with tt-metal's behaviour of `date` (the 2026-04 build's regions)."""
    d = load_device(machine, stack=Stack.TT_METAL, version="2026-04-21")
    return dataclasses.replace(d, software=software_at(date, Stack.TT_METAL), trace_region_size=trace_region_size)


@pytest.mark.parametrize(("date", "rule", "per_bank"), [
    # 50,000,000 on Wormhole: aligned to 32 x 12 = 384 -> 50,000,256, all of it per bank
    ("2026-04-21", TraceRule.PER_BANK, 50_000_256),
    # PR #47122: ceil(50,000,256 / 12) = 4,166,688, a multiple of 32 already
    ("2026-06-20", TraceRule.TOTAL_DRAM_ALIGNED, 4_166_688),
    # PR #47766: rounded up to 8,192: 509 x 8,192 = 4,169,728
    ("2026-07-01", TraceRule.TOTAL_PAGE_ALIGNED, 4_169_728)])
def test_trace_region_sizes_per_rule(date: str, rule: TraceRule, per_bank: int) -> None:
    d = _on(date, 50_000_000)
    assert d.software.trace_rule is rule
    assert d.trace_region_config == 50_000_256 and d.trace_bank_size == per_bank
    assert d.dram_bank_size == 1_073_741_824 - 1_920_032 - per_bank
    assert d.trace_base == 1_920_032 + d.dram_bank_size


@pytest.mark.parametrize(("trace", "bank"), [(27_560_000, 1_046_181_792), (192_441_344, 881_300_448)])
def test_2025_per_bank_trace_regions_rederive_published_dram_banks(trace: int, bank: int) -> None:
    # tt-metal #31076 (Llama-3.2-11B-Vision) and #29905 (Llama 3.3 70B Galaxy), 2025:
    # 1,073,741,792 minus the whole trace region, aligned to 32 only
    d = load_device("n150", stack=Stack.TT_METAL, version="2025-10-03", trace_region_size=trace)
    assert d.trace_bank_size == trace and d.dram_bank_size == bank


def test_vit_trace_region_before_and_after_pr_47766() -> None:
    # tt-metal PR #50493: trace_region_size 1,753,088 reserved 146,112 B a bank under
    # #47122's DRAM-alignment rounding; the trace needed 147,456 (18 pages of 8,192),
    # which #47766's rounding reserves
    assert _on("2026-06-20", 1_753_088).trace_bank_size == 146_112
    assert _on("2026-07-01", 1_753_088).trace_bank_size == 147_456 == 18 * 8192


@pytest.mark.parametrize(("stream", "padded"), [(1_500, 2048), (2_500, 3072)])
def test_tt_metal_49325_trace_oom_under_pr_47122(stream: int, padded: int) -> None:
    # T3K, trace_region_size 3,072: round_up(ceil(3,072 / 12), 32) = 256 B a bank; the
    # trace's 1,024-B pages over 12 banks need a whole page in bank 0
    d = _on("2026-06-20", 3_072, "n300")
    assert d.trace_bank_size == 256
    result = TraceRegion(DeviceAllocator(d)).capture(stream)
    assert isinstance(result, OutOfMemory)
    assert message(result, d.software) == (
        f"Out of Memory: Not enough space to allocate {padded} B TRACE buffer across 12 banks, where each bank needs "
        "to store 1024 B, but bank size is 256 B (allocated: 0 B, free: 256 B, largest free block: 256 B)")
    # fixed by PR #47766: 8,192 B a bank
    fixed = TraceRegion(DeviceAllocator(_on("2026-07-01", 3_072, "n300"))).capture(stream)
    assert isinstance(fixed, Allocation) and fixed.bytes_per_bank == 1024


def test_more_trace_than_the_region_is_mesh_traces_error() -> None:
    d = _on("2026-04-21", 5_000)  # configured 5,376 (384-aligned)
    region = TraceRegion(DeviceAllocator(d))
    first = region.capture(4_000)
    assert isinstance(first, Allocation) and region.trace_buffers_size == 4_096
    failure = region.capture(2_000)
    assert failure == TraceRegionExceeded(6_144, 0, 5_376)
    assert message(failure, d.software) == (
        "Creating trace buffers of size 6144B on MeshDevice 0, but only 5376B is allocated for trace region.")


def test_trace_buffers_are_bottom_up_in_the_trace_bank_and_release_frees_them() -> None:
    d = _on("2026-04-21", 1_000_000)
    region = TraceRegion(DeviceAllocator(d))
    placed = region.capture(100_000)
    assert isinstance(placed, Allocation) and placed.request.buffer_type is BufferType.TRACE
    assert placed.address == d.trace_base
    region.release(placed)
    assert region.trace_buffers_size == 0
    assert region.allocator.manager(BufferType.TRACE).statistics().allocated == 0


def test_a_zero_trace_region_is_dynamic_since_tt_metal_36999() -> None:
    d = _on("2026-04-21", 0)
    placed = TraceRegion(DeviceAllocator(d)).capture(100_000)
    # DRAM, top-down: 100,000 B in 1,024-B pages -> 98 pages over 12 banks -> 9 pages
    assert isinstance(placed, Allocation) and placed.request.buffer_type is BufferType.DRAM
    assert placed.bytes_per_bank == 9 * 1024
    assert placed.address == 1_920_032 + d.dram_bank_size - 9 * 1024
    before = load_device("n150", stack=Stack.TT_METAL, version="2025-10-03")
    assert TraceRegion(DeviceAllocator(before)).capture(100) == TraceRegionExceeded(1024, 0, 0)


@pytest.mark.parametrize(("stream", "banks", "page_max", "page"), [
    (5_000, 12, 4096, 1024), (1_500, 12, 8192, 1024),
    # 49,152 B over 12 banks fits 4,096-B pages exactly: the largest on a tie
    (49_152, 12, 4096, 4096), (49_152, 12, 8192, 4096), (98_304, 12, 8192, 8192), (16_384, 8, 8192, 2048)])
def test_trace_page_size(stream: int, banks: int, page_max: int, page: int) -> None:
    assert trace_page_size(stream, banks, page_max) == page
