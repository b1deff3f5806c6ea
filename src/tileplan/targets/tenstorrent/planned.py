"""What the Tenstorrent planner returns (`plan.plan_tt`): every buffer tt-metal's
allocator placed with its address and lifetime, every program with its circular-buffer
region and what L1, L1_SMALL and DRAM held when it ran, and the verdict.

Lifetimes are counted in allocator events: each allocation and each free is one event,
numbered from 0 in the order the run makes them (the uploads first, then each
operation's buffers and frees). A buffer lives over events [allocated, freed); a
program runs after `event` events (its operation's buffers for it allocated, nothing of
it freed yet). Replaying the allocations and frees in event order through a first-fit
free list reproduces every address: that is what `tileplan check` does from the report.

Worked example: upload `w` (event 0), then one matmul with an L1 output: output
allocated (event 1), its program runs after 2 events, the input freed (event 2):
buffers `w` [0, None) and `matmul` [1, None); program 0 at event 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.targets.tenstorrent.bank import OutOfMemory, TooManyShards
from tileplan.targets.tenstorrent.cb_region import CbLayout, CbRegionError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.free_list import Statistics
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops.base import Program
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.program import TtProgram
from tileplan.targets.tenstorrent.trace import TraceRegionExceeded

#: the operation index of the uploads (made before the first operation)
UPLOAD = -1


class BufferUse(Enum):
    """What a buffer holds: a tensor of the program (by its role: the model's input, a
    weight, a cache or other state, an activation an operation makes), a buffer an
    operation allocates between its programs or for its config tensors, or a trace."""

    INPUT = "input"
    PARAMETER = "parameter"
    BUFFER = "buffer"
    ACTIVATION = "intermediate"
    OP_INTERMEDIATE = "op_intermediate"
    CONFIG = "config"
    TRACE = "trace"


@dataclass(frozen=True, slots=True)
class PlannedBuffer:
    """One buffer as the allocator placed it: `bytes` in pages of `page_bytes` (aligned to
    its buffer type), `bytes_per_bank` in each of `banks` banks (shards, when sharded),
    `reserved` bytes of the free list at `address` in every bank (lockstep).

    Lifetime: allocated at event `allocated` during operation `first_op` (UPLOAD for the
    uploads), freed at event `freed` after operation `last_op` (UPLOAD: during the
    uploads; None: never freed). `tensor` is the program's tensor it holds (None: an
    operation's own buffer); `staged`: it holds that tensor's row-major form before the
    runtime tilizes it (`Tensor.staged`), so two buffers name the tensor.
    Invariants: reserved >= bytes_per_bank; allocated < freed when freed."""

    id: int
    name: str
    use: BufferUse
    buffer_type: BufferType
    bytes: int
    page_bytes: int
    banks: int
    bytes_per_bank: int
    reserved: int
    address: int
    sharded: bool
    allocated: int
    first_op: int
    freed: int | None = None
    last_op: int | None = None
    tensor: int | None = None
    module: str | None = None
    staged: bool = False

    def __post_init__(self) -> None:
        assert self.reserved >= self.bytes_per_bank, self
        assert self.freed is None or self.freed > self.allocated, self

    @property
    def end(self) -> int:
        return self.address + self.reserved


@dataclass(frozen=True, slots=True)
class PlannedProgram:
    """One program of an operation as it ran: its circular buffers placed (`layout`),
    the lowest L1 buffer address then (None: L1 held no buffer), the bytes allocated
    per bank in L1, L1_SMALL and DRAM, and the L1 buffers live (ids)."""

    op: int
    index: int
    program: Program
    event: int
    layout: CbLayout
    lowest_l1: int | None
    l1_allocated: int
    l1_small_allocated: int
    dram_allocated: int
    l1_buffers: tuple[int, ...]

    @property
    def cb_bytes(self) -> int:
        """The program's static CB bytes as graph capture sums them (ranges ignored)."""
        return self.program.cb_bytes

    @property
    def cb_region_end(self) -> int:
        """The highest static CB region end over its core ranges (the base: no CB)."""
        return self.layout.region_end

    @property
    def l1_in_use(self) -> int:
        """L1 a core holds while it runs: its CB region above l1_unreserved_base, the
        L1 buffers and the L1_SMALL buffers (lockstep: the same on every core)."""
        return self.layout.static_bytes + self.l1_allocated + self.l1_small_allocated


@dataclass(frozen=True, slots=True)
class PlannedOp:
    """One operation planned: its programs are `programs` of the plan (indices)."""

    index: int
    name: str
    kind: OpKind
    programs: tuple[int, ...]
    module: str | None = None
    layer: int | None = None


class FailureKind(Enum):
    """Why the run stops: an out-of-memory of a bank manager (capacity: more than its
    free bytes; fragmentation: enough free bytes, no block large enough), circular
    buffers growing beyond L1 or reaching an L1 buffer, the trace region exceeded, or
    more shards than compute cores."""

    CAPACITY = "capacity"
    FRAGMENTATION = "fragmentation"
    CB_GROW = "cb_grow"
    CB_CLASH = "cb_clash"
    TRACE = "trace"
    SHARDS = "shards"


Failure = OutOfMemory | TooManyShards | CbRegionError | TraceRegionExceeded


@dataclass(frozen=True, slots=True)
class Verdict:
    """The allocator's verdict: fits, or the first failure in tt-metal's words
    (`message`, messages.py), its kind and buffer type (the memory it concerns: L1 for
    circular buffers), the operation (UPLOAD for the uploads) and program (an index of
    the plan's programs, for CB failures) where it happened, the buffer it could not
    place (`request_name`) and the buffers responsible: every live buffer of that
    memory, largest first (for a clash, the lowest L1 buffer first)."""

    fits: bool
    message: str | None = None
    kind: FailureKind | None = None
    buffer_type: BufferType | None = None
    op: int | None = None
    program: int | None = None
    request_name: str | None = None
    responsible: tuple[int, ...] = ()
    failure: Failure | None = None
    statistics: Statistics | None = None

    def __post_init__(self) -> None:
        assert self.fits == (self.message is None), self


@dataclass(frozen=True, slots=True)
class TtPlan:
    """A program planned on one chip of a device: the buffers, the operations and their
    programs up to where the run stops (all of them when it fits), the verdict, and the
    events counted (the last allocation or free is event `events - 1`)."""

    program: TtProgram
    device: Device
    buffers: tuple[PlannedBuffer, ...]
    ops: tuple[PlannedOp, ...]
    programs: tuple[PlannedProgram, ...]
    verdict: Verdict
    events: int

    @property
    def fits(self) -> bool:
        return self.verdict.fits

    def peak_event(self, buffer_type: BufferType) -> tuple[int, int | None]:
        """The most bytes per bank the buffer type held at once (reserved, as the
        allocator counts them) and the first event after which it held them (None:
        it never held any)."""
        deltas: list[tuple[int, int]] = []
        for b in self.buffers:
            if b.buffer_type is buffer_type:
                deltas.append((b.allocated, b.reserved))
                if b.freed is not None:
                    deltas.append((b.freed, -b.reserved))
        best, at, held = 0, None, 0
        for event, delta in sorted(deltas):
            held += delta
            if held > best:
                best, at = held, event
        return best, at
