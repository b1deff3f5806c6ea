"""Collectives between the chips of a mesh, as tt-transformers calls them on n300's two
chips (1 x 2 mesh, Linear topology, one link; tt-metal models/tt_transformers/tt/ccl.py
and distributed_norm.py: `num_workers_per_link=2`, `num_buffers_per_channel=2`,
persistent buffers None, so every call allocates its outputs). One chip's share is
planned: each chip runs the same programs on its own tensors.

Fabric packets (tt_metal/fabric/fabric_context.cpp `compute_packet_specifications`): a
channel buffer = a packet header (`LowLatencyPacketHeader`, 64 B; 32 B before the routing
fields grew) + the 1-D payload `default_packet_payload_size_bytes` = 4 bfp8 tiles = 4,352 B.

- all_gather_async (ttnn/cpp/ttnn/operations/experimental/ccl/all_gather_async/device/
  all_gather_async_default_program_factory.cpp, `build_all_gather_async_minimal_default_
  program_artifacts`): output = the input with dimension `dim` x ring_size; per link two
  directions, each a mux core and `num_workers_per_link` workers (the first cores of the
  grid, row-wise: `choose_worker_cores`); each worker's c_0 holds 3 x min(4, packet /
  page) pages of the input's page size (triple-buffered packets).
- reduce_scatter_minimal_async, Linear (.../reduce_scatter_minimal_async/device/
  reduce_scatter_minimal_async_op_device_operation.cpp `compute_output_specs`; the line
  program `line_reduce_scatter_minimal_async_helper`): an intermediate of the input's
  padded shape with dimension 0 doubled (the intermediate memory config: DRAM in
  tt-transformers), alive for the call, then the output with dimension `dim` / ring_size;
  two sender cores per link, each with the input, intermediate, reader-output and
  compute-output CBs of 3 x min(4 x packet / page, 8) pages and a packet-header CB of
  4 headers.
Worked example: a prefill residual [1, 1, 4096, 2048] bf16 (one chip of Llama-3.1-8B on
n300) gathered on dim 3: output [1, 1, 4096, 4096], each worker c_0 = 3 x 2 x 2,048 =
12,288 B.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, CoreRange, CoreRangeSet, TensorSpec
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
#: reduce-scatter: `max_dst_size` pages a compute step, `num_packet_headers_storable`
RS_MAX_DST = 8
RS_PACKET_HEADERS = 4


@dataclass(frozen=True, slots=True)
class CclAttrs:
    """dim, the chips in the ring, links and workers a link (all-gather)."""

    dim: int
    ring_size: int = 2
    num_links: int = 1
    workers_per_link: int = 2

    def __post_init__(self) -> None:
        require(self.ring_size >= 2 and self.num_links >= 1 and self.workers_per_link >= 1, "ccl",
                "a ring of at least 2 chips, at least one link and one worker")


def _page(x: TensorSpec) -> int:
    return x.pages().page_bytes


def _core(i: int, grid: tuple[int, int]) -> CoreRange:
    """Core i of the grid, row-wise."""
    x, y = i % grid[0], i // grid[0]
    return CoreRange((x, y), (x, y))


def _cores(first: int, count: int, grid: tuple[int, int]) -> CoreRangeSet:
    """Cores first..first+count-1 of the grid, row-wise (one range each)."""
    return CoreRangeSet(tuple(_core(i, grid) for i in range(first, first + count)))


def _out_shape(shape: tuple[int, ...], dim: int, factor: float) -> tuple[int, ...]:
    d = dim % len(shape)
    out = list(shape)
    out[d] = int(out[d] * factor)
    return tuple(out)


def plan_all_gather(kind: OpKind, req: OpRequest, attrs: CclAttrs) -> OpPlan:
    """all_gather_async (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE, op, "a TILE input")
    out = TensorSpec(_out_shape(x.shape, attrs.dim, attrs.ring_size), x.dtype, x.layout, req.out.memory())
    page = _page(x)
    per_packet = min(MAX_PAGES_PER_PACKET, (PACKET_PAYLOAD + PACKET_HEADER) // page)
    per_link = (attrs.workers_per_link + 1) * 2
    grid = req.target.grid
    workers: list[int] = []
    for link in range(attrs.num_links):
        for direction in range(2):
            first = link * per_link + direction * (attrs.workers_per_link + 1) + 1  # after the direction's mux core
            workers.extend(range(first, first + attrs.workers_per_link))
    cores = CoreRangeSet(tuple(_core(i, grid) for i in workers))
    program = Program("AllGatherAsyncMinimalDefault", DIR + "all_gather_async/device/"
                      "all_gather_async_default_program_factory.cpp", cores,
                      (cbuf(0, "sender", 3 * per_packet, page, cores),))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def plan_reduce_scatter(kind: OpKind, req: OpRequest, attrs: CclAttrs) -> OpPlan:
    """reduce_scatter_minimal_async, Linear (see the module docstring); the intermediate
    memory is the request's `intermediate` (DRAM interleaved in tt-transformers)."""
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE, op, "a TILE input")
    d = attrs.dim % len(x.shape)
    require(x.shape[d] % attrs.ring_size == 0, op, f"dimension {attrs.dim} ({x.shape[d]}) splits over "
            f"{attrs.ring_size} chips")
    dims = padded_shape4(x)
    inter = TensorSpec((2 * dims[0], *dims[1:]), x.dtype, x.layout, DRAM_INTERLEAVED)
    out = TensorSpec(_out_shape(x.shape, attrs.dim, 1 / attrs.ring_size), x.dtype, x.layout, req.out.memory())
    page = _page(x)
    per_packet = (PACKET_PAYLOAD + PACKET_HEADER) // page
    granularity = min(4 * per_packet, RS_MAX_DST)
    cores = _cores(0, 2 * attrs.num_links, req.target.grid)
    pages = 3 * granularity
    cbs = (cbuf(0, "input", pages, page, cores), cbuf(1, "intermediate", pages, page, cores),
           cbuf(2, "reader_output", pages, page, cores), cbuf(3, "compute_output", pages, page, cores),
           cbuf(4, "packet_headers", RS_PACKET_HEADERS, PACKET_HEADER, cores))
    program = Program("LineReduceScatterMinimalAsync", DIR + "reduce_scatter_minimal_async/device/"
                      "reduce_scatter_minimal_async_program.cpp", cores, cbs)
    buffers = (tensor_buffer("intermediate", BufferRole.INTERMEDIATE, inter, req.target, (0, 0)),
               *output_buffers((out,), req.target, 0))
    return OpPlan(op, (program,), (out,), buffers)
