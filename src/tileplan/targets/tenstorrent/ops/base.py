"""The values every TTNN operation rule returns: the programs an operation runs, each
with the circular buffers its program factory creates, and the device buffers it
allocates (outputs, intermediates between its programs, L1_SMALL config tensors).

An operation is priced as tt-metal's graph capture prices it
(`ttnn.graph.extract_resource_usage_per_core`, ttnn/core/graph/graph_trace_utils.cpp;
tenstorrent/tt-metal tests/ttnn/unit_tests/base_functionality/graph_l1_traces/README.md sections 3 and 10):
a circular buffer's bytes are its `CircularBufferConfig` total size, per core; a
globally allocated one (`set_globally_allocated_address`) aliases a tensor's L1 shard
and takes no circular-buffer space; each program opens its own window, so an
operation's circular-buffer peak is the largest program's sum. A buffer's bytes per
core are tt-metal's `Buffer::aligned_size_per_bank` (memory.bytes_per_bank).

The device facts a rule reads are plain parameters (`OpTarget`): the compute grid
(`compute_with_storage_grid_size`), the bank counts, L1 size, the first unreserved L1
address and, for the rules whose choice depends on it (matmul's fit search), the lowest
L1 address already occupied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.cb import CircularBuffer
from tileplan.targets.tenstorrent.device import Arch
from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
    bytes_per_bank,
)
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, padded_height_width, round_up

#: the scratch circular buffer several factories create (`l1_scratchpad_CB_size`,
#: conv2d_op_program_factory_common.cpp; the matmul factories' `cb_for_l1_array`: 32 x 2 B)
L1_ARRAY_BYTES = 64


class MathFidelity(Enum):
    """ttnn `MathFidelity`."""

    LOFI = "LoFi"
    HIFI2 = "HiFi2"
    HIFI3 = "HiFi3"
    HIFI4 = "HiFi4"


@dataclass(frozen=True, slots=True)
class ComputeConfig:
    """ttnn `WormholeComputeKernelConfig`: the fields that change circular buffers are
    `fp32_dest_acc_en` (intermediates in Float32) and `packer_l1_acc` (matmul and conv
    partials accumulated in L1)."""

    math_fidelity: MathFidelity = MathFidelity.HIFI4
    math_approx_mode: bool = False
    fp32_dest_acc_en: bool = False
    packer_l1_acc: bool = False
    dst_full_sync_en: bool = False


@dataclass(frozen=True, slots=True)
class OpTarget:
    """The device facts a program factory reads. Invariant: positive grid and bank
    counts, l1_unreserved_base below l1_size.

    `lowest_occupied_l1` is the lowest L1 address a buffer holds when the operation is
    planned (`IDevice::lowest_occupied_compute_l1_address`; None when L1 holds no
    buffer, as under graph capture's NO_DISPATCH mode, which allocates nothing).
    `l1_free` is the L1 allocator's free bytes per bank then (`get_statistics(L1)
    .total_free_bytes`: the bank, L1_SMALL excluded, less its buffers; None when the
    device's bank is not known, as for tt-mlir's op-model target)."""

    arch: Arch
    grid: tuple[int, int]
    l1_banks: int
    dram_banks: int
    l1_size: int
    l1_unreserved_base: int
    lowest_occupied_l1: int | None = None
    l1_free: int | None = None
    l1_alignment: int = 16
    dram_alignment: int = 32

    def __post_init__(self) -> None:
        if min(self.grid) < 1 or self.l1_banks < 1 or self.dram_banks < 1:
            raise InputError(f"op target: grid {self.grid} and bank counts must be >= 1")
        if not 0 <= self.l1_unreserved_base < self.l1_size:
            raise InputError(f"op target: l1_unreserved_base {self.l1_unreserved_base} must lie below "
                             f"l1_size {self.l1_size}")

    @property
    def num_cores(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def max_l1_space(self) -> int:
        """matmul_utilities.cpp `get_max_l1_space`: (the lowest occupied L1 address, or
        the L1 size when none) minus the allocator's base address."""
        top = self.lowest_occupied_l1 if self.lowest_occupied_l1 is not None else self.l1_size
        return top - self.l1_unreserved_base

    @property
    def free_l1(self) -> int:
        """The L1 allocator's free bytes per bank (`l1_free`), or `max_l1_space` when
        that is not known."""
        return self.l1_free if self.l1_free is not None else self.max_l1_space

    def banks(self, buffer_type: BufferType) -> int:
        return self.dram_banks if buffer_type is BufferType.DRAM else self.l1_banks

    def alignment(self, buffer_type: BufferType) -> int:
        return self.dram_alignment if buffer_type is BufferType.DRAM else self.l1_alignment

    def grid_range(self) -> CoreRange:
        return CoreRange.grid(*self.grid)


def cbuf(index: int, name: str, pages: int, page_bytes: int, cores: CoreRange | CoreRangeSet,
         globally_allocated: bool = False) -> CircularBuffer:
    """A circular buffer (cb.CircularBuffer) of `pages` x `page_bytes` on `cores`, as a
    factory's `CreateCircularBuffer(program, cores, config)` makes it."""
    ranges = (cores,) if isinstance(cores, CoreRange) else cores.ranges
    return CircularBuffer(index, name, pages, page_bytes, ranges, globally_allocated)


@dataclass(frozen=True, slots=True)
class Program:
    """One program an operation runs: its factory (name, source) and circular buffers in
    creation order (the order tt-metal's `allocate_circular_buffers` places them in)."""

    name: str
    source: str
    cores: CoreRange | CoreRangeSet
    circular_buffers: tuple[CircularBuffer, ...]

    @property
    def cb_bytes(self) -> int:
        """Bytes of the non-global circular buffers, summed as graph capture sums them
        (core ranges ignored: a worst case per core)."""
        return sum(cb.l1_bytes for cb in self.circular_buffers)


class BufferRole(Enum):
    """Why an operation allocates a device buffer."""

    OUTPUT = "output"
    INTERMEDIATE = "intermediate"
    CONFIG = "config"


@dataclass(frozen=True, slots=True)
class DeviceBuffer:
    """A buffer an operation allocates: `pages` of `page_bytes` spread over `banks`
    (interleaved: every bank of its type; sharded: the shard grid's cores), alive from
    program `live[0]` through program `live[1]` of its operation (an output lives on).
    Invariant: 0 <= live[0] <= live[1]."""

    name: str
    role: BufferRole
    buffer_type: BufferType
    pages: int
    page_bytes: int
    banks: int
    alignment: int
    live: tuple[int, int]
    spec: TensorSpec | None = None
    #: a CONFIG buffer's program-cache entry: the program that holds it (with the
    #: device's program cache, one buffer per key, kept to the end: plan.py)
    cache_key: str | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.live[0] <= self.live[1] or self.pages < 0 or self.page_bytes < 1 or self.banks < 1:
            raise InputError(f"device buffer {self.name}: live {self.live}, pages {self.pages}, "
                             f"page_bytes {self.page_bytes}, banks {self.banks} out of range")

    @property
    def bytes_per_bank(self) -> int:
        return bytes_per_bank(self.pages, self.page_bytes, self.banks, self.alignment)


@dataclass(frozen=True, slots=True)
class OpPlan:
    """What one TTNN operation does to memory: its programs in order, its output specs
    and every device buffer it allocates. `in_place`: the programs write the input's own
    buffer, which the single output then shares (ttnn.pad's fill of the tile padding).
    Invariants: at least one program or output; an in-place plan has a program, one
    output and no output buffer."""

    op: str
    programs: tuple[Program, ...]
    outputs: tuple[TensorSpec, ...]
    buffers: tuple[DeviceBuffer, ...]
    in_place: bool = False

    def __post_init__(self) -> None:
        if not self.programs and not self.outputs:
            raise InputError(f"{self.op}: a plan has a program or an output")
        if self.in_place and (not self.programs or len(self.outputs) != 1
                              or any(b.role is BufferRole.OUTPUT for b in self.buffers)):
            raise InputError(f"{self.op}: an in-place plan runs a program and shares its one output's buffer")

    @property
    def cb_peak(self) -> int:
        """The largest program's circular-buffer bytes per core (graph capture's
        `cb_peak_size_per_core`)."""
        return max((p.cb_bytes for p in self.programs), default=0)

    def output_bytes_per_core(self, index: int = 0) -> int:
        """Bytes per core of output `index` in L1 as tt-mlir's op model reports them
        (`l1_output_buffer_per_core`: graph_processor.cpp
        `extract_l1_output_buffer_allocation_size_per_core`, `worst_case_per_core_allocation`
        of the buffer's logical size: ceil(pages / cores) pages, where the allocator
        reserves whole shards); 0 for a DRAM output and for a view (an output sharing its
        input's buffer)."""
        for buf in self.buffers:
            if buf.role is BufferRole.OUTPUT and buf.spec is self.outputs[index]:
                if buf.buffer_type is BufferType.DRAM:
                    return 0
                return bytes_per_bank(buf.spec.pages().count, buf.page_bytes, buf.banks, buf.alignment)
        return 0

    def l1_small_bytes_per_core(self) -> int:
        """Bytes per core of the L1_SMALL buffers alive at once (config tensors)."""
        return max((sum(b.bytes_per_bank for b in self.buffers
                        if b.buffer_type is BufferType.L1_SMALL and b.live[0] <= i <= b.live[1])
                    for i in range(max(len(self.programs), 1))), default=0)


@dataclass(frozen=True, slots=True)
class OutputRequest:
    """The output an operation is asked for (ttnn's `memory_config` and `dtype`
    arguments): a sharded layout may come without a shard spec, the operation then
    computes one."""

    buffer_type: BufferType = BufferType.DRAM
    layout: MemoryLayout = MemoryLayout.INTERLEAVED
    shard: ShardSpec | None = None
    dtype: DataType | None = None

    @classmethod
    def of(cls, memory: MemoryConfig, dtype: DataType | None = None) -> "OutputRequest":
        return cls(memory.buffer_type, memory.layout, memory.shard, dtype)

    @property
    def sharded(self) -> bool:
        return self.layout.sharded

    def memory(self, shard: ShardSpec | None = None) -> MemoryConfig:
        """The memory config with `shard` (or the requested shard spec)."""
        spec = shard if shard is not None else self.shard
        return MemoryConfig(self.buffer_type, self.layout, spec if self.layout.sharded else None)


@dataclass(frozen=True, slots=True)
class OpRequest:
    """One operation's inputs as TTNN holds them, the output asked for, the device and
    the compute-kernel config (None: the operation's own default)."""

    inputs: tuple[TensorSpec, ...]
    out: OutputRequest
    target: OpTarget
    compute: ComputeConfig | None = None


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def find_max_divisor(value: int, start: int) -> int:
    """tt-metal work_split `find_max_divisor`: the largest divisor of `value` from
    `start` down, skipping 7 and 5 (so Wt = 7 gives 1, not 7)."""
    for d in range(start, 0, -1):
        if d in (7, 5):
            continue
        if value % d == 0:
            return d
    return 1


def split_work(units: int, cores: int) -> tuple[int, int]:
    """tt-metal `split_work_to_cores`: (cores used, units on the busiest core)."""
    if units == 0:
        return 0, 0
    used = min(units, cores)
    return used, ceil_div(units, used)


def tensor_buffer(name: str, role: BufferRole, spec: TensorSpec, target: OpTarget,
                  live: tuple[int, int]) -> DeviceBuffer:
    """The buffer tt-metal allocates for `spec` (`Buffer::aligned_size_per_bank`):
    interleaved, its pages over every bank of its type (ceil(pages / banks) aligned
    pages); sharded, a whole shard on every core of the shard grid (`Buffer::num_dev_pages`:
    the shard's pages times the cores, whatever the tensor's logical shape leaves empty,
    such as a conv output's channels padded to its channel cores)."""
    pg = spec.pages()
    mem = spec.memory
    if mem.shard is not None:
        banks, count = mem.shard.num_cores, spec.shard_pages() * mem.shard.num_cores
    else:
        banks, count = target.banks(mem.buffer_type), pg.count
    return DeviceBuffer(name, role, mem.buffer_type, count, pg.page_bytes, banks,
                        target.alignment(mem.buffer_type), live, spec)


def output_buffers(specs: tuple[TensorSpec, ...], target: OpTarget, after: int) -> tuple[DeviceBuffer, ...]:
    """The output buffers, alive from program `after` on."""
    return tuple(tensor_buffer(f"output{i}", BufferRole.OUTPUT, s, target, (after, after))
                 for i, s in enumerate(specs))


def tiles_of(spec: TensorSpec) -> tuple[int, int]:
    """(height, width) of a TILE tensor's padded 2-D view in tiles."""
    h, w = padded_height_width(spec.shape, Layout.TILE)
    return h // TILE, w // TILE


def padded_shape4(spec: TensorSpec) -> tuple[int, int, int, int]:
    """The tensor's shape as tt-metal's 4-D `padded_shape` (leading 1s added; the last
    two dimensions padded to 32 in TILE layout)."""
    dims = [1] * max(0, 4 - len(spec.shape)) + list(spec.shape)
    if len(dims) > 4:
        dims = [math.prod(dims[:-3]), *dims[-3:]]
    if spec.layout is Layout.TILE:
        dims[-1] = round_up(dims[-1], TILE)
        dims[-2] = round_up(dims[-2], TILE)
    return dims[0], dims[1], dims[2], dims[3]


def require(cond: bool, op: str, message: str) -> None:
    """A TT_FATAL of the factory: the operation refuses these inputs."""
    if not cond:
        raise InputError(f"{op}: {message}")
