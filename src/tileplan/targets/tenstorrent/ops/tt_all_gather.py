"""ttnn.all_gather (the non-experimental collective, as tt-transformers' Llama-3.2-Vision
calls it: `ttnn.all_gather(x, dim=3, num_links=1, topology=ttnn.Topology.Linear)`), by
the implementation the build has (ttnn/cpp/ttnn/operations/ccl/all_gather/):

- PR #30414 ("The return of ttnn.all_gather", 2025-10-10) to PR #48301: a wrapper over
  all_gather_async's minimal default program (device/all_gather_program_factory.cpp
  calling `build_all_gather_async_minimal_default_program_artifacts` with the number of
  workers left to its decision tree: the data a link carries, out x (N - 1) / N, above
  256 KB -> 4 workers a direction, at most 4 KB -> 1, else 2); a mux core and the workers
  a direction, c_0 on the workers as all_gather_async's (ops/tt_ccl.py).
- PR #48301 (2026-06-26, rewritten): `AllGatherMulticastFactory` on a 1-D fabric that is
  not a ring (device/all_gather_device_operation.cpp `select_program_factory`;
  device/all_gather_multicast_factory.cpp @01c8afed): one worker core a link, from (0, 0),
  no mux; one CB c_in0 of 3 pages, each page max(1, packet / page) input pages times a
  multiplier of 3 on Wormhole (4 on Blackhole): a bf16 tile input holds 3 x 12,288 B. The
  `num_links` and `topology` arguments are deprecated there (taken from the fabric).

Both: the output is the input with dimension `dim` x devices, the input's memory config
unless one is given; no intermediate. Not modelled: the global barrier semaphores each
creates on a program-cache miss (one uint32 a core, height-sharded over the worker grid in
L1_SMALL, else L1: 32 B a core) and builds before PR #30414 (the frontend refuses them).

Worked example (PR #48301): [1, 1, 32, 16032] bf16 on two chips -> [1, 1, 32, 32064],
c_in0 36,864 B on core (0, 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from tileplan.targets.tenstorrent.device import Arch
from tileplan.targets.tenstorrent.memory import CoreRange
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, Program, cbuf, output_buffers, require
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_ccl import PACKET_PAYLOAD, CclAttrs, all_gather_program, gathered
from tileplan.targets.tenstorrent.tiles import Layout

SOURCE = "ttnn/cpp/ttnn/operations/ccl/all_gather/device/all_gather_multicast_factory.cpp"
#: the multicast factory's CB depth and its page multiplier ("ideal": 3 on Wormhole, 4 on Blackhole)
MULTICAST_DEPTH = 3
MULTICAST_MULTIPLIER = {Arch.WORMHOLE_B0: 3, Arch.BLACKHOLE: 4}
#: the minimal default program's worker decision (bytes a link carries)
MANY_WORKERS_ABOVE = 256 * 1024
ONE_WORKER_AT_MOST = 4 * 1024


class AllGatherFactory(Enum):
    """Which implementation of ttnn.all_gather the build has (see the module docstring)."""

    ASYNC_MINIMAL = "pr30414"
    MULTICAST = "pr48301"


#: the builds each implementation starts with
ASYNC_MINIMAL_SINCE = "2025-10-10"
MULTICAST_SINCE = "2026-06-26"


def factory_for(version: str) -> AllGatherFactory | None:
    """The implementation a build (YYYY-MM-DD) has; None before PR #30414."""
    if version >= MULTICAST_SINCE:
        return AllGatherFactory.MULTICAST
    if version >= ASYNC_MINIMAL_SINCE:
        return AllGatherFactory.ASYNC_MINIMAL
    return None


@dataclass(frozen=True, slots=True)
class AllGatherAttrs:
    """The gather (dimension, devices) and the build's implementation."""

    ccl: CclAttrs
    factory: AllGatherFactory
    arch: Arch = Arch.WORMHOLE_B0


def plan_ttnn_all_gather(kind: OpKind, req: OpRequest, attrs: AllGatherAttrs) -> OpPlan:
    """ttnn.all_gather (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    require(x.layout is Layout.TILE, op, "a TILE input")
    out = gathered(x, attrs.ccl, req.out.memory())
    page = x.dtype.tile_bytes
    if attrs.factory is AllGatherFactory.ASYNC_MINIMAL:
        carried = out.pages().count * page * (attrs.ccl.ring_size - 1) // attrs.ccl.ring_size
        workers = 4 if carried > MANY_WORKERS_ABOVE else 1 if carried <= ONE_WORKER_AT_MOST else 2
        program = all_gather_program(x, replace(attrs.ccl, workers_per_link=workers), req.target.grid)
    else:
        per_packet = max(1, PACKET_PAYLOAD // page)
        cb_page = page * per_packet * MULTICAST_MULTIPLIER[attrs.arch]
        cores = CoreRange((0, 0), (attrs.ccl.num_links - 1, 0))
        program = Program("AllGatherMulticastFactory", SOURCE, cores,
                          (cbuf(0, "src0", MULTICAST_DEPTH, cb_page, cores),))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
