"""Collectives between the chips of a mesh, as tt-transformers calls them: on n300's two
chips (1 x 2 mesh, Linear topology), a P150x4's four (1 x 4, Linear) and a T3K's eight (1 x 8,
Ring: model_config.py `ccl_topology`), one link, `num_workers_per_link=2`, `num_buffers_per_channel=2`,
persistent buffers None, so every call allocates its outputs (tt-metal
models/tt_transformers/tt/ccl.py `tt_all_reduce`, distributed_norm.py). One chip's share
is planned: each chip runs the same programs on its own tensors. tt-metal runs two
chips Linear whatever the caller asks (`num_devices == 2`: Linear).

Cores (tt-metal PR #25222, 2025-07-17: the fabric mux, several workers a direction): per
link two directions, each a mux core then `num_workers_per_link` workers, row-wise from
the first core of the grid (plus `core_grid_offset`, all_gather_matmul_async's (0, 4));
the circular buffers sit on the workers only (the mux cores' fabric buffers are raw L1
the allocator does not track). Builds before that PR ran one sender a direction with a
packet-header CB: not modelled (the tt-transformers frontend refuses them on a mesh).

Fabric packets (tt_metal/fabric/fabric_context.cpp `compute_packet_specifications`): a
channel buffer = a packet header (`LowLatencyPacketHeader`, 64 B; 32 B before the routing
fields grew) + the 1-D payload `default_packet_payload_size_bytes` = 4 bfp8 tiles = 4,352 B.

- all_gather_async (ttnn/cpp/ttnn/operations/experimental/ccl/all_gather_async/device/
  all_gather_async_default_program_factory.cpp, `build_all_gather_async_minimal_default_
  program_artifacts`, either topology): output = the input with dimension `dim` x
  ring_size; each worker's c_0 holds 3 x min(4, packet / page) pages of the input's page
  size (triple-buffered packets).
- reduce_scatter_minimal_async (.../reduce_scatter_minimal_async/device/
  reduce_scatter_minimal_async_op_device_operation.cpp `compute_output_specs`, at
  587257e1): an intermediate of the input's padded shape, dimension 0 doubled on a Linear
  line, unchanged on a Ring (the intermediate memory config: DRAM in tt-transformers),
  alive for the call, then the output with dimension `dim` / ring_size. Each worker
  holds c_0 input, c_1 intermediate, c_2 reader output and c_3 compute output of
  3 x granularity pages (reduce_scatter_minimal_async_program.cpp @07b4a3f7: Linear
  min(4 x packet / page, 8), `create_line_reduce_scatter_circular_buffers`; Ring, whose
  scatter writes reach 2 NoC addresses a packet, 4 x min(2, packet / page), at most 8).
  Not modelled: the later ring program's five double-buffered CBs and its contiguous
  UINT8 staging intermediates (PR #50933, after the newest build tileplan knows).
Worked example: a prefill residual [1, 1, 4096, 2048] bf16 (one chip of Llama-3.1-8B on
n300) gathered on dim 3: output [1, 1, 4096, 4096], each worker c_0 = 3 x 2 x 2,048 =
12,288 B; reduced back on a T3K ring, [1, 1, 4096, 4096] gives a [1, 1, 4096, 4096]
intermediate and a [1, 1, 4096, 512] output, each worker 4 x 24 x 2,048 = 196,608 B.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, CoreRange, CoreRangeSet, MemoryConfig, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    output_buffers,
    padded_shape4,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import Layout

DIR = "ttnn/cpp/ttnn/operations/experimental/ccl/"
#: `FabricEriscDatamoverBuilder::default_packet_payload_size_bytes`: 4 bfp8 tiles
PACKET_PAYLOAD = 4 * 1088
#: sizeof(LowLatencyPacketHeader) (tt_metal/fabric/fabric_edm_packet_header.hpp, 2026)
PACKET_HEADER = 64
#: all-gather: scatter writes reach 4 NoC addresses a packet
MAX_PAGES_PER_PACKET = 4
#: reduce-scatter: `max_dst_size` pages a compute step; a ring's scatter writes reach 2 NoC
#: addresses a packet (`max_target_noc_addresses_per_packet`)
RS_MAX_DST = 8
RING_SCATTER_PAGES = 2


class Topology(Enum):
    """`ttnn.Topology` of a collective."""

    LINEAR = "linear"
    RING = "ring"


@dataclass(frozen=True, slots=True)
class CclAttrs:
    """dim, the chips in the ring, the topology asked for, links, workers a link, and the
    first core (`core_grid_offset`, (x, y))."""

    dim: int
    ring_size: int = 2
    topology: Topology = Topology.LINEAR
    num_links: int = 1
    workers_per_link: int = 2
    core_offset: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        require(self.ring_size >= 2 and self.num_links >= 1 and self.workers_per_link >= 1, "ccl",
                "a ring of at least 2 chips, at least one link and one worker")

    @property
    def runs_as(self) -> Topology:
        """The topology tt-metal runs: Linear on two chips, whatever is asked."""
        return Topology.LINEAR if self.ring_size == 2 else self.topology


def _page(x: TensorSpec) -> int:
    return x.pages().page_bytes


def _core(i: int, grid: tuple[int, int]) -> CoreRange:
    """Core i of the grid, row-wise."""
    x, y = i % grid[0], i // grid[0]
    return CoreRange((x, y), (x, y))


def _out_shape(shape: tuple[int, ...], dim: int, factor: float) -> tuple[int, ...]:
    d = dim % len(shape)
    out = list(shape)
    out[d] = int(out[d] * factor)
    return tuple(out)


def _workers(attrs: CclAttrs, grid: tuple[int, int]) -> CoreRangeSet:
    """The worker cores: per link and direction a mux core then the workers, row-wise from
    `core_offset` (tt-metal `choose_worker_cores`)."""
    per_link = (attrs.workers_per_link + 1) * 2
    start = attrs.core_offset[1] * grid[0] + attrs.core_offset[0]
    workers: list[int] = []
    for link in range(attrs.num_links):
        for direction in range(2):
            first = start + link * per_link + direction * (attrs.workers_per_link + 1) + 1  # after the mux core
            workers.extend(range(first, first + attrs.workers_per_link))
    return CoreRangeSet(tuple(_core(i, grid) for i in workers))


def all_gather_program(x: TensorSpec, attrs: CclAttrs, grid: tuple[int, int]) -> Program:
    """all_gather_async's program on the workers (see the module docstring)."""
    page = _page(x)
    per_packet = min(MAX_PAGES_PER_PACKET, (PACKET_PAYLOAD + PACKET_HEADER) // page)
    cores = _workers(attrs, grid)
    return Program("AllGatherAsyncMinimalDefault", DIR + "all_gather_async/device/"
                   "all_gather_async_default_program_factory.cpp", cores,
                   (cbuf(0, "sender", 3 * per_packet, page, cores),))


def gathered(x: TensorSpec, attrs: CclAttrs, memory: MemoryConfig) -> TensorSpec:
    """all_gather_async's output: the input with dimension `dim` x ring_size."""
    return TensorSpec(_out_shape(x.shape, attrs.dim, attrs.ring_size), x.dtype, x.layout, memory)


def plan_all_gather(kind: OpKind, req: OpRequest, attrs: CclAttrs) -> OpPlan:
    """all_gather_async (see the module docstring)."""
    (x,) = req.inputs
    require(x.layout is Layout.TILE, kind.value, "a TILE input")
    out = gathered(x, attrs, req.out.memory())
    program = all_gather_program(x, attrs, req.target.grid)
    return OpPlan(kind.value, (program,), (out,), output_buffers((out,), req.target, 0))


def plan_reduce_scatter(kind: OpKind, req: OpRequest, attrs: CclAttrs) -> OpPlan:
    """reduce_scatter_minimal_async (see the module docstring); the intermediate memory
    is the request's `intermediate` (DRAM interleaved in tt-transformers)."""
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE, op, "a TILE input")
    d = attrs.dim % len(x.shape)
    require(x.shape[d] % attrs.ring_size == 0, op, f"dimension {attrs.dim} ({x.shape[d]}) splits over "
            f"{attrs.ring_size} chips")
    dims = padded_shape4(x)
    ring = attrs.runs_as is Topology.RING
    inter = TensorSpec(dims if ring else (2 * dims[0], *dims[1:]), x.dtype, x.layout, DRAM_INTERLEAVED)
    out = TensorSpec(_out_shape(x.shape, attrs.dim, 1 / attrs.ring_size), x.dtype, x.layout, req.out.memory())
    page = _page(x)
    per_packet = (PACKET_PAYLOAD + PACKET_HEADER) // page
    if ring:
        scatter = min(RING_SCATTER_PAGES, per_packet)
        granularity = 4 * scatter if scatter < 4 else RS_MAX_DST
    else:
        granularity = min(4 * per_packet, RS_MAX_DST)
    cores = _workers(attrs, req.target.grid)
    pages = 3 * granularity
    cbs = (cbuf(0, "input", pages, page, cores), cbuf(1, "intermediate", pages, page, cores),
           cbuf(2, "reader_output", pages, page, cores), cbuf(3, "compute_output", pages, page, cores))
    name = "RingReduceScatterMinimalAsync" if ring else "LineReduceScatterMinimalAsync"
    program = Program(name, DIR + "reduce_scatter_minimal_async/device/reduce_scatter_minimal_async_program.cpp",
                      cores, cbs)
    buffers = (tensor_buffer("intermediate", BufferRole.INTERMEDIATE, inter, req.target, (0, 0)),
               *output_buffers((out,), req.target, 0))
    return OpPlan(op, (program,), (out,), buffers)
