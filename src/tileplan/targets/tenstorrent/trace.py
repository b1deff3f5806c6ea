"""Metal trace buffers and the trace region (tt-metal tt_metal/distributed/mesh_trace.cpp
`MeshTrace::populate_mesh_buffer`; tt_metal/impl/trace/dispatch.cpp
`compute_interleaved_trace_buf_page_size`).

A captured trace is a command stream stored in DRAM, interleaved over the DRAM banks in
pages of 1 KiB up to 4 KiB (8 KiB since tt-metal PR #47766), the page size that pads the
stream least over a whole round of banks (the largest such on a tie). The stream is
padded to a whole page only (PR #35970's page x banks padding was never merged). The
device keeps a running total of its trace buffers; with a trace region configured
(trace_region_size > 0), a total above the configured region fails with "Creating trace
buffers of size ...B on MeshDevice ..., but only ...B is allocated for trace region.";
then the buffer is allocated in the TRACE bank manager (bottom-up), whose bank is the
region's per-bank share (`Device.trace_bank_size`, by the build's `TraceRule`), and can
fail there with the OOM string. With trace_region_size 0 on builds since tt-metal
#36999, the trace buffer is a DRAM buffer allocated top-down instead.

Worked example (tt-metal #49325, T3K, trace_region_size 3,072 under PR #47122): a
2,048-B trace, 1,024-B pages, 2 pages over 12 banks -> 1,024 B a bank, but the TRACE bank
is round_up(ceil(3,072 / 12), 32) = 256 B: "Out of Memory: Not enough space to allocate
2048 B TRACE buffer across 12 banks, where each bank needs to store 1024 B, but bank
size is 256 B (allocated: 0 B, free: 256 B, largest free block: 256 B)".
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.bank import Allocation, BufferRequest, DeviceAllocator, OutOfMemory, TooManyShards
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.tiles import round_up
from tileplan.targets.tenstorrent.versions import TRACE_PAGE_MIN


def trace_page_size(stream_bytes: int, banks: int, page_max: int) -> int:
    """compute_interleaved_trace_buf_page_size: of the powers of two from 1,024 to
    `page_max`, the largest whose whole round over `banks` pads `stream_bytes` least.
    5,000 B over 12 banks, max 4,096: 1,024 pads to 12,288 (waste 7,288), 2,048 to 24,576,
    4,096 to 49,152 -> 1,024."""
    best, best_waste = TRACE_PAGE_MIN, None
    size = TRACE_PAGE_MIN
    while size <= page_max:
        round_bytes = banks * size
        waste = round_up(stream_bytes, round_bytes) - stream_bytes
        if best_waste is None or waste <= best_waste:
            best, best_waste = size, waste
        size *= 2
    return best


@dataclass(frozen=True, slots=True)
class TraceRegionExceeded:
    """mesh_trace.cpp's trace-region failure as data: the device's trace buffers in
    total (this one included), the device id and the configured region."""

    trace_buffers_size: int
    device_id: int
    trace_region_size: int


class TraceRegion:
    """A device's trace buffers over time: `capture` one trace after another (each
    stays until `release`). Mutable, as the device's running total is."""

    __slots__ = ("allocator", "device_id", "trace_buffers_size")

    def __init__(self, allocator: DeviceAllocator, device_id: int = 0) -> None:
        self.allocator = allocator
        self.device_id = device_id
        self.trace_buffers_size = 0

    def request(self, stream_bytes: int) -> BufferRequest:
        """The trace buffer MeshTrace::populate_mesh_buffer asks for: the stream padded
        to a page, TRACE (bottom-up), or DRAM top-down when the region is dynamic."""
        device = self.allocator.device
        page = trace_page_size(stream_bytes, device.dram_banks, device.software.trace_page_max)
        padded = round_up(stream_bytes, page)
        if device.trace_region_config == 0 and device.software.dynamic_trace:
            return BufferRequest(BufferType.DRAM, padded, page, bottom_up=False, name="trace")
        return BufferRequest(BufferType.TRACE, padded, page, name="trace")

    def capture(self, stream_bytes: int) -> Allocation | OutOfMemory | TraceRegionExceeded:
        """Store one captured trace of `stream_bytes` bytes."""
        request = self.request(stream_bytes)
        self.trace_buffers_size += request.size
        configured = self.allocator.device.trace_region_config
        if request.buffer_type is BufferType.TRACE and self.trace_buffers_size > configured:
            return TraceRegionExceeded(self.trace_buffers_size, self.device_id, configured)
        placed = self.allocator.allocate(request)
        assert not isinstance(placed, TooManyShards)
        return placed

    def release(self, allocation: Allocation) -> None:
        """MeshDevice::release_mesh_trace: the buffer is freed and the running total
        drops by its size."""
        self.allocator.deallocate(allocation)
        self.trace_buffers_size -= allocation.request.size
