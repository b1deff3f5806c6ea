"""A Tenstorrent device as tt-metal's allocator sees it: banks, their sizes and where
they start, for one board, one tt-metal build, one stack and its device parameters.

The facts come from the versioned data files under devices/ (a board file, the chip's
arch file with its builds, software.toml's timeline), each value with its source. The
arithmetic is tt-metal's L1BankingAllocator (tt_metal/impl/allocator/
l1_banking_allocator.cpp `generate_config`, `init_compute_and_storage_l1_bank_manager`)
and AllocatorImpl::init_one_bank_per_channel (allocator.cpp):

- `l1_unreserved_base` and `l1_small_size` are aligned up to the DRAM alignment;
- the L1 bank (one per worker core) = L1 - l1_unreserved_base - l1_small_size, from
  l1_unreserved_base; the L1_SMALL bank = l1_small_size, right above it;
- the DRAM bank = DRAM view - dram_unreserved_base - the trace region's share of a bank
  (`TraceRule`), from dram_unreserved_base; the TRACE bank above it.

Worked example (tt-mlir #8044): n150, tt-mlir 2026-04-21 build, 64 KiB L1_SMALL, ETH
dispatch: 8 x 9 = 72 L1 banks of 1,499,136 - 103,712 - 65,536 = 1,329,888 B; 12 DRAM
banks of 1,073,741,824 - 1,920,032 = 1,071,821,792 B.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import lru_cache
from importlib import resources
from typing import Any

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.tiles import round_up
from tileplan.targets.tenstorrent.versions import (
    DispatchCoreType, Software, Stack, TraceAlignment, TraceRule, software_at)

MACHINES = ("n150", "n300", "t3k", "p100", "p150", "p150x4")

#: bank counts that interleaving supports besides powers of two (tt-metal
#: tt_metal/impl/allocator/bank_manager.cpp `validate_num_banks`)
NON_POW2_BANK_COUNTS = frozenset({7, 12, 20, 48, 56, 63, 70, 72, 80, 94, 108, 110, 117, 120, 124, 126, 130, 140})


class Arch(Enum):
    """The chip (tt-metal `tt::ARCH`): the one enum of the target, for devices and for
    the operation rules alike (Grayskull only for the e150 rows of the notes' traces)."""

    GRAYSKULL = "grayskull"
    WORMHOLE_B0 = "wormhole_b0"
    BLACKHOLE = "blackhole"


@dataclass(frozen=True, slots=True)
class Grid:
    """`columns` x `rows` cores from (0, 0). Invariant: both >= 1."""

    columns: int
    rows: int

    def __post_init__(self) -> None:
        if self.columns < 1 or self.rows < 1:
            raise InputError(f"core grid {self.columns}x{self.rows}: both sides must be >= 1")

    @property
    def cores(self) -> int:
        return self.columns * self.rows


def validate_num_banks(banks: int, buffer_type: BufferType) -> None:
    """tt-metal's bank-count rule (bank_manager.cpp `validate_num_banks`): a power of two
    or one of the counts with a dedicated modulo; L1_SMALL takes any count."""
    if buffer_type is BufferType.L1_SMALL or (banks > 0 and banks & (banks - 1) == 0) or banks in NON_POW2_BANK_COUNTS:
        return
    raise InputError(f"Invalid number of memory banks {banks} for {buffer_type.value}. Num banks must be power of 2 "
                     "or have a dedicated modulo implementation (tt-metal bank_manager.cpp validate_num_banks; "
                     f"allowed besides powers of two: {', '.join(map(str, sorted(NON_POW2_BANK_COUNTS)))})")


@dataclass(frozen=True, slots=True)
class Device:
    """One chip of a board, opened with `l1_small_size`, `trace_region_size` and a
    dispatch core type (tt-metal's MeshDevice parameters) on a tt-metal build.

    Sizes are bytes as requested; the properties give what the allocator makes of them.
    Invariants: non-negative sizes; l1_small_size below the L1 bank (tt-metal's
    "Reserved size must be less than bank size"); valid bank counts; the trace region
    smaller than a DRAM bank; the worker grid within the Tensix grid.
    """

    machine: str
    arch: Arch
    chips: int
    stack: Stack
    version: str
    dispatch_core_type: DispatchCoreType
    l1_size: int
    l1_alignment: int
    dram_alignment: int
    tensix_grid: Grid
    worker_grid: Grid
    l1_unreserved_base: int
    l1_small_size: int
    trace_region_size: int
    dram_banks: int
    dram_view_size: int
    dram_unreserved_base: int
    software: Software = field(repr=False)
    sources: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        for name in ("l1_small_size", "trace_region_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"{name} {value!r}: expected a whole number of bytes >= 0")
        if self.chips < 1:
            raise InputError(f"machine {self.machine}: chips must be >= 1, found {self.chips}")
        if self.worker_grid.columns > self.tensix_grid.columns or self.worker_grid.rows > self.tensix_grid.rows:
            raise InputError(f"worker grid {self.worker_grid.columns}x{self.worker_grid.rows} on {self.machine}: "
                             f"expected within the {self.tensix_grid.columns}x{self.tensix_grid.rows} Tensix grid")
        above_base = self.l1_size - self.l1_base
        if self.l1_small_bank_size >= above_base:
            raise InputError(f"l1_small_size {self.l1_small_size:,} B on {self.machine}: Reserved size must be less "
                             f"than bank size (tt-metal L1BankingAllocator::generate_config: {above_base:,} B of L1 "
                             f"lie above l1_unreserved_base {self.l1_base:,}); hint: l1_small_size < {above_base:,}")
        validate_num_banks(self.l1_banks, BufferType.L1)
        validate_num_banks(self.dram_banks, BufferType.DRAM)
        above_dram_base = self.dram_view_size - self.dram_unreserved_base
        if self.trace_bank_size >= above_dram_base:
            raise InputError(f"trace_region_size {self.trace_region_size:,} B on {self.machine}: takes "
                             f"{self.trace_bank_size:,} B of every DRAM bank ({self.software.trace_rule.value}), "
                             f"expected less than the {above_dram_base:,} B above dram_unreserved_base")

    # -- L1 -------------------------------------------------------------------------------
    @property
    def l1_banks(self) -> int:
        """One L1 (and L1_SMALL) bank per worker core."""
        return self.worker_grid.cores

    @property
    def l1_base(self) -> int:
        """`l1_unreserved_base` aligned up to the DRAM alignment (generate_config)."""
        return round_up(self.l1_unreserved_base, self.dram_alignment)

    @property
    def l1_small_bank_size(self) -> int:
        """The L1_SMALL bank: `l1_small_size` aligned up to the DRAM alignment
        (generate_config); tt-metal #54834: l1_small_size 1152 -> "bank size is 1152 B"."""
        return round_up(self.l1_small_size, self.dram_alignment)

    @property
    def l1_bank_size(self) -> int:
        """The L1 bank manager's size: L1 - l1_unreserved_base - l1_small_size
        (init_compute_and_storage_l1_bank_manager `allocatable_l1_size`)."""
        return self.l1_size - self.l1_base - self.l1_small_bank_size

    @property
    def l1_small_base(self) -> int:
        """Where the L1_SMALL bank starts: right above the L1 bank (`small_alloc_offset`)."""
        return self.l1_base + self.l1_bank_size

    # -- DRAM and the trace region ---------------------------------------------------------
    @property
    def trace_region_config(self) -> int:
        """trace_region_size as the allocator's config holds it: aligned up to the DRAM
        alignment, or to the alignment x DRAM banks on builds since 2026-02
        (generate_config `aligned_total_trace_size`). 50,000,000 on Wormhole in 2026 ->
        50,000,256 (a multiple of 32 x 12 = 384)."""
        unit = self.dram_alignment
        if self.software.trace_alignment is TraceAlignment.DRAM_X_BANKS:
            unit *= self.dram_banks
        return round_up(self.trace_region_size, unit)

    @property
    def trace_bank_size(self) -> int:
        """What the trace region takes from every DRAM bank (init_one_bank_per_channel):
        before tt-metal PR #47122 the whole configured size; since, ceil(size / banks)
        rounded up to the DRAM alignment (#47122) and then to the largest trace page
        (#47766). 50,000,000 on Wormhole: 50,000,256 B a bank before; ceil(50,000,256 /
        12) = 4,166,688 -> 4,169,728 (= 509 x 8,192) after."""
        total = self.trace_region_config
        rule = self.software.trace_rule
        if rule is TraceRule.PER_BANK:
            return total
        share = math.ceil(total / self.dram_banks)
        unit = self.dram_alignment if rule is TraceRule.TOTAL_DRAM_ALIGNED else self.software.trace_page_max
        return round_up(share, unit)

    @property
    def dram_bank_size(self) -> int:
        """The DRAM bank manager's size: view - dram_unreserved_base - trace share."""
        return self.dram_view_size - self.dram_unreserved_base - self.trace_bank_size

    @property
    def trace_base(self) -> int:
        """Where the TRACE bank starts: above the DRAM bank (init_one_bank_per_channel)."""
        return self.dram_unreserved_base + self.dram_bank_size

    # -- per buffer type -------------------------------------------------------------------
    def banks(self, buffer_type: BufferType) -> int:
        """Banks of a buffer type: L1 and L1_SMALL one per worker core (L1_SMALL's are
        0 B when l1_small_size is 0, and an L1_SMALL buffer then fails as tt-metal's does:
        "... L1_SMALL buffer across 64 banks, where each bank needs to store 16 B, but
        bank size is 0 B"), DRAM and TRACE one per DRAM channel."""
        if buffer_type in (BufferType.L1, BufferType.L1_SMALL):
            return self.l1_banks
        return self.dram_banks

    def alignment(self, buffer_type: BufferType) -> int:
        """A buffer type's page alignment (the allocator's `get_alignment`)."""
        return self.l1_alignment if buffer_type in (BufferType.L1, BufferType.L1_SMALL) else self.dram_alignment

    def source(self, what: str) -> str:
        """Where the value of field `what` comes from."""
        return dict(self.sources)[what]


# -- loading ------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _read(name: str) -> dict[str, Any]:
    text = resources.files("tileplan.targets.tenstorrent").joinpath(f"devices/{name}.toml").read_text()
    data = tomllib.loads(text)
    assert data.get("schema") == 1, f"devices/{name}.toml: schema 1 expected"
    return data


def versions(machine: str) -> tuple[str, ...]:
    """The tt-metal builds known for a machine's chip, oldest first."""
    return tuple(b["version"] for b in _arch_data(machine)["build"])


def observed_grids(machine: str) -> tuple[tuple[Grid, str], ...]:
    """Worker grids seen on harvested boards of a machine, with their sources: what to
    pass as `worker_grid` for one (p150: 12 x 10 from tt-metal #54834's 120 banks, 11 x 10 on
    the p150b of graph_l1_traces/README.md)."""
    _arch_data(machine)
    return tuple((Grid(g["columns"], g["rows"]), g["source"]) for g in _read(machine).get("observed_grid", []))


def _arch_data(machine: str) -> dict[str, Any]:
    if machine not in MACHINES:
        raise InputError(f"unknown machine {machine!r}; expected one of {', '.join(MACHINES)}")
    return _read(_read(machine)["arch"])


def load_device(machine: str, *, stack: Stack = Stack.TT_MLIR, version: str | None = None,
                dispatch_core_type: DispatchCoreType | None = None, l1_small_size: int | None = None,
                trace_region_size: int | None = None, worker_grid: Grid | None = None) -> Device:
    """A device from devices/<machine>.toml and its chip's file, on tt-metal build
    `version` (default: the latest known; a prefix such as "2025-10" takes the latest
    build it names), opened as `stack` opens it unless a device
    parameter is given (`l1_small_size`, `trace_region_size`, `dispatch_core_type`).
    `worker_grid` replaces the board's compute grid, for harvested boards (the bank
    count of an error string tells it: TENSTORRENT-NOTES.md (a))."""
    arch = _arch_data(machine)
    board = _read(machine)
    builds = {b["version"]: b for b in arch["build"]}
    matching = [v for v in builds if version is None or v == version or v.startswith(f"{version}-")]
    if not matching:
        raise InputError(f"version {version!r} of {machine} ({arch['arch']}): expected one of {', '.join(builds)} "
                         "(or a prefix such as 2025-10)")
    chosen = matching[-1]
    build = builds[chosen]
    software = software_at(build["date"], stack)
    sources: dict[str, str] = {}

    dispatch = dispatch_core_type if dispatch_core_type is not None else software.dispatch
    if dispatch is DispatchCoreType.ETH and not arch["tensix"]["eth_dispatch"]:
        if dispatch_core_type is not None:
            raise InputError(f"dispatch_core_type eth on {machine}: {arch['arch']} dispatches on worker cores "
                             f"({arch['tensix']['eth_dispatch_source']}); expected worker")
        dispatch = DispatchCoreType.WORKER
    sources["dispatch_core_type"] = "given" if dispatch_core_type is not None else (
        f"{software.source('dispatch')}; {arch['tensix']['eth_dispatch_source']}")
    grids = board["worker_grid"]
    if worker_grid is None:
        entry = grids[dispatch.value]
        worker_grid = Grid(entry["columns"], entry["rows"])
        sources["worker_grid"] = entry["source"]
    else:
        sources["worker_grid"] = "given"

    small = software.l1_small_size if l1_small_size is None else l1_small_size
    trace = software.trace_region_size if trace_region_size is None else trace_region_size
    sources["l1_small_size"] = "given" if l1_small_size is not None else software.source("l1_small_size")
    sources["trace_region_size"] = "given" if trace_region_size is not None else software.source("trace_region_size")
    for key, where in (("l1_size", arch["l1"]["size_source"]), ("l1_alignment", arch["l1"]["alignment_source"]),
                       ("dram_alignment", arch["dram"]["alignment_source"]),
                       ("dram_view_size", arch["dram"]["view_size_source"]),
                       ("dram_banks", board.get("dram_banks_source", arch["dram"]["banks_source"])),
                       ("tensix_grid", arch["tensix"]["source"]), ("chips", board["chips_source"]),
                       ("l1_unreserved_base", build["l1_unreserved_base_source"]),
                       ("dram_unreserved_base", build["dram_unreserved_base_source"])):
        sources[key] = where
    return Device(
        machine=machine, arch=Arch(arch["arch"]), chips=board["chips"], stack=stack, version=chosen,
        dispatch_core_type=dispatch, l1_size=arch["l1"]["size"], l1_alignment=arch["l1"]["alignment"],
        dram_alignment=arch["dram"]["alignment"], tensix_grid=Grid(arch["tensix"]["columns"], arch["tensix"]["rows"]),
        worker_grid=worker_grid, l1_unreserved_base=build["l1_unreserved_base"], l1_small_size=small,
        trace_region_size=trace, dram_banks=board.get("dram_banks", arch["dram"]["banks"]),
        dram_view_size=arch["dram"]["view_size"], dram_unreserved_base=build["dram_unreserved_base"],
        software=software, sources=tuple(sorted(sources.items())))


def with_parameters(device: Device, **changes: Any) -> Device:
    """The same device with other device parameters (`l1_small_size=...`), checked again."""
    return replace(device, **changes)
