"""Circular-buffer regions (tileplan.targets.tenstorrent.cb_region) against tt-metal's
program.cpp (`allocate_circular_buffers`, `validate_circular_buffer_region`) and the
published region arithmetic (TENSTORRENT-NOTES.md (c), (h) H3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.bank import Allocation, BufferRequest, DeviceAllocator
from tileplan.targets.tenstorrent.cb import CircularBuffer
from tileplan.targets.tenstorrent.cb_region import (
    CbFailure, allocate_circular_buffers, validate_circular_buffer_region)
from tileplan.targets.tenstorrent.device import Grid, load_device
from tileplan.targets.tenstorrent.memory import L1_INTERLEAVED, BufferType, CoreRange, TensorSpec
from tileplan.targets.tenstorrent.messages import message
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import Stack

GRID = CoreRange.grid(8, 8)


def _tiles(n: int, name: str = "cb", index: int = 0, core_range: CoreRange = GRID) -> CircularBuffer:
    return CircularBuffer.on(core_range, index, name, n, 2048)


@pytest.mark.parametrize(("tiles", "end"), [(384, 890_144), (612, 1_357_088)])
def test_published_region_ends_gemma_and_phi2(tiles: int, end: int) -> None:
    # tt-xla #4214 (gemma-1.1-2b-it): 786,432 B = 384 bf16 tiles; tt-mlir #7744 (phi-2):
    # 1,253,376 B = 612 tiles; both from base 103,712
    d = load_device("n150", version="2026-04-21")
    layout = allocate_circular_buffers([_tiles(tiles)], d.l1_base, d.dram_alignment)
    assert layout.region_end == end == 103_712 + tiles * 2048
    assert layout.static_bytes == tiles * 2048


def test_an_l1_buffer_below_the_region_end_clashes() -> None:
    d = load_device("n150", version="2026-04-21")
    alloc = DeviceAllocator(d)
    tensor = alloc.allocate(BufferRequest(BufferType.L1, 600_000 * 72, 600_000))
    assert isinstance(tensor, Allocation) and tensor.address == 1_499_136 - 65_536 - 600_000 == 833_600
    layout = allocate_circular_buffers([_tiles(384)], d.l1_base, d.dram_alignment, program_id=238)
    failure = validate_circular_buffer_region(layout, d.l1_size, alloc.lowest_occupied_l1())
    assert failure is not None and failure.kind is CbFailure.CLASH
    assert message(failure, d.software) == (
        "Statically allocated circular buffers in program 238 clash with L1 buffers on core range "
        "[(x=0,y=0) - (x=7,y=7)]. L1 buffer allocated at 833600 and static circular buffer region ends at 890144")
    alloc.deallocate(tensor)
    assert validate_circular_buffer_region(layout, d.l1_size, alloc.lowest_occupied_l1()) is None


def test_l1_small_buffers_do_not_clash() -> None:
    d = load_device("n150", version="2026-04-21")
    alloc = DeviceAllocator(d)
    small = alloc.allocate(BufferRequest(BufferType.L1_SMALL, 72 * 65_536, 65_536, shards=72))
    assert isinstance(small, Allocation)
    layout = allocate_circular_buffers([_tiles(650)], d.l1_base, d.dram_alignment)
    assert layout.region_end == 103_712 + 650 * 2048 == 1_434_912 > small.address
    assert validate_circular_buffer_region(layout, d.l1_size, alloc.lowest_occupied_l1()) is None


def test_h3_p150b_matmul_trace() -> None:
    # graph_l1_traces/README.md, p150b (110 cores), NORMAL mode: first CB at 111,616;
    # the 1024x1024 bf16 L1 output, 1,024 tiles over 110 banks = 10 tiles = 20,480 B a
    # bank, at 1,552,384. Top-down, the first L1 buffer sits at L1 - l1_small - 20,480:
    # 1,572,864 - 20,480 = 1,552,384 means l1_small_size 0 (tt-metal's default), so the
    # bank is 1,572,864 - 111,616 = 1,461,248 and 1,552,384 = 111,616 + 1,461,248 - 20,480.
    d = load_device("p150", stack=Stack.TT_METAL, worker_grid=Grid(11, 10))
    assert (d.l1_banks, d.l1_base, d.l1_small_size, d.l1_bank_size) == (110, 111_616, 0, 1_461_248)
    alloc = DeviceAllocator(d)
    out = TensorSpec((1024, 1024), DataType.BFLOAT16, Layout.TILE, L1_INTERLEAVED)
    placed = alloc.allocate(BufferRequest.for_tensor(out, d))
    assert isinstance(placed, Allocation)
    assert (placed.bytes_per_bank, placed.address) == (20_480, 1_552_384)
    cbs = [CircularBuffer.on(CoreRange.grid(2, 2), 0, "in0", 64, 2048),
           CircularBuffer.on(CoreRange.grid(2, 2), 1, "in1", 64, 2048),
           CircularBuffer.on(CoreRange.grid(2, 2), 16, "out", 256, 2048)]
    layout = allocate_circular_buffers(cbs, d.l1_base, d.dram_alignment)
    assert [p.address for p in layout.placed] == [111_616, 111_616 + 131_072, 111_616 + 262_144]
    assert [p.cb.total_bytes for p in layout.placed] == [131_072, 131_072, 524_288]
    assert validate_circular_buffer_region(layout, d.l1_size, alloc.lowest_occupied_l1()) is None


def test_globally_allocated_cbs_take_no_space() -> None:
    cbs = [CircularBuffer.on(GRID, 0, "in", 16, 2048, globally_allocated=True), _tiles(2, "out", 16)]
    layout = allocate_circular_buffers(cbs, 100_000, 32)
    assert layout.placed[0].address is None and layout.placed[1].address == 100_000
    assert layout.region_end == 100_000 + 4096
    only_global = allocate_circular_buffers(cbs[:1], 100_000, 32)
    assert only_global.region_end == 100_000 and only_global.ranges[0].end is None
    assert validate_circular_buffer_region(only_global, 100, 50) is None


def test_cb_addresses_are_dram_aligned() -> None:
    scratch = CircularBuffer.on(GRID, 1, "scratch", 1, 64)
    layout = allocate_circular_buffers([_tiles(1), CircularBuffer.on(GRID, 2, "odd", 1, 48), scratch], 103_712, 64)
    # 103,712 -> 103,744 (64-aligned); 105,792; the 48-B CB ends at 105,840 -> 105,856
    assert [p.address for p in layout.placed] == [103_744, 105_792, 105_856]
    assert layout.region_end == 105_920


def test_regions_are_per_core_range() -> None:
    left, right = CoreRange((0, 0), (3, 7)), CoreRange((4, 0), (7, 7))
    cbs = [CircularBuffer.on(left, 0, "a", 1, 100), CircularBuffer.on(right, 0, "b", 1, 50),
           CircularBuffer(1, "c", 1, 10, (left, right))]
    layout = allocate_circular_buffers(cbs, 1000, 32)
    assert [p.address for p in layout.placed] == [1024, 1024, 1152]
    assert [r.end for r in layout.ranges] == [1162, 1162]


def test_a_cb_marks_every_intersecting_range_unless_it_already_ends_higher() -> None:
    # a (4,096 B) on the left half marks the whole grid too (it intersects and is empty);
    # b (100 B) on the right half goes at the base: the whole grid, which ends at 4,096,
    # is skipped (`computed_addr < cb_allocator.get_cb_region_end()`); c on the whole grid
    # goes at its end, 4,096, and marks both halves, the right one in a new region
    left, right = CoreRange((0, 0), (3, 7)), CoreRange((4, 0), (7, 7))
    cbs = [CircularBuffer.on(left, 0, "a", 1, 4096), CircularBuffer.on(right, 0, "b", 1, 100), _tiles(1, "c", 1)]
    layout = allocate_circular_buffers(cbs, 0, 32)
    assert [p.address for p in layout.placed] == [0, 0, 4096]
    assert [r.core_range for r in layout.ranges] == [left, right, GRID]
    assert [r.regions for r in layout.ranges] == [((0, 6144),), ((0, 100), (4096, 6144)), ((0, 6144),)]


def test_the_first_failing_range_in_order_is_reported() -> None:
    left, right = CoreRange((0, 0), (3, 7)), CoreRange((4, 0), (7, 7))
    layout = allocate_circular_buffers([CircularBuffer.on(left, 0, "a", 1, 500),
                                        CircularBuffer.on(right, 0, "b", 1, 900)], 0, 32)
    grow = validate_circular_buffer_region(layout, 800, None)
    assert grow is not None and grow.kind is CbFailure.GROW and grow.core_range == right
    clash = validate_circular_buffer_region(layout, 10_000, 400)
    assert clash is not None and clash.kind is CbFailure.CLASH and clash.core_range == left


def test_cb_values_check_their_invariants() -> None:
    with pytest.raises(InputError, match="index must be 0..63"):
        CircularBuffer.on(GRID, 64, "x", 1, 2048)
    with pytest.raises(InputError, match="0 pages of 2048 B"):
        CircularBuffer.on(GRID, 0, "x", 0, 2048)
    with pytest.raises(InputError, match="overlap"):
        CircularBuffer(0, "x", 1, 1, (GRID, CoreRange((7, 7), (9, 9))))


def test_tt_metals_overlap_on_intersecting_unequal_ranges_is_kept() -> None:
    # allocate_circular_buffers takes the max region end over the CB's own (equal) ranges
    # only and skips an intersecting range already ending higher, so a CB on the whole
    # grid can land inside one placed on a part of it: 1 B on the left half, 33 B on the
    # right half, then 1 B on the whole grid at 100,032, inside [100,000, 100,033) on the
    # right half's cores. tileplan keeps tt-metal's addresses.
    left, right, whole = CoreRange((0, 0), (3, 3)), CoreRange((4, 0), (7, 3)), CoreRange((0, 0), (7, 3))
    cbs = [CircularBuffer.on(left, 0, "a", 1, 1), CircularBuffer.on(right, 1, "b", 1, 33),
           CircularBuffer.on(whole, 2, "c", 1, 1)]
    layout = allocate_circular_buffers(cbs, 100_000, 32)
    assert [p.address for p in layout.placed] == [100_000, 100_000, 100_032]
    assert [r.end for r in layout.ranges] == [100_033, 100_033, 100_033]


@settings(max_examples=200)
@given(cbs=st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 2), st.booleans()), max_size=20),
       alignment=st.sampled_from([32, 64]))
def test_cb_regions_never_overlap_on_a_core(cbs: list[tuple[int, int, bool]], alignment: int) -> None:
    # core ranges equal or apart, as CreateCircularBuffer's merged CoreRangeSets mostly are
    left, right = CoreRange((0, 0), (3, 3)), CoreRange((4, 0), (7, 3))
    choices: list[tuple[CoreRange, ...]] = [(left,), (right,), (left, right)]
    values = [CircularBuffer(i % 64, f"cb{i}", 1, size, choices[r], glob) for i, (size, r, glob) in enumerate(cbs)]
    layout = allocate_circular_buffers(values, 100_000, alignment)
    for core in ((0, 0), (5, 2)):
        here = CoreRange(core, core)
        spans = sorted((p.address, p.end) for p in layout.placed
                       if p.address is not None and any(r.intersects(here) for r in p.cb.core_ranges))
        assert all(p[0] % alignment == 0 and p[0] >= 100_000 for p in spans)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
        ends = [r.end for r in layout.ranges if r.end is not None and r.core_range.intersects(here)]
        assert not spans or max(ends) == spans[-1][1]
