"""tt-metal's own words: its error strings, formatted verbatim from tileplan's numbers.

Users of Tenstorrent hardware learn a model does not fit from these strings; tileplan's
verdict line is the same string with its own figures, in the form the chosen tt-metal
build prints (`Software`: `oom_message`, `core_range_text`, `trace_device_word`).
TENSTORRENT-NOTES.md (c) lists them:

1. bank_manager.cpp `BankManager::allocate_buffer`: "Out of Memory: Not enough space to
   allocate {} B {} buffer across {} banks, where each bank needs to store {} B" and,
   by build, ", but bank size is only {} B" or ", but bank size is {} B (allocated: {}
   B, free: {} B, largest free block: {} B)";
2. the same, dependent (sub-device) allocators: "... after considering dependencies ...";
3. program.cpp `validate_circular_buffer_region`: "... grow to {} B which is beyond max
   L1 size of {} B";
4. the same: "... clash with L1 buffers on core range {}. L1 buffer allocated at {} and
   static circular buffer region ends at {}";
5. mesh_trace.cpp `MeshTrace::populate_mesh_buffer`: "Creating trace buffers of size
   {}B on MeshDevice {}, but only {}B is allocated for trace region.";
6. bank_manager.cpp: "Expected number of shards {} to be less than or equal to total
   number of L1 banks {} in compute cores";
7. l1_banking_allocator.cpp `generate_config`: "Reserved size must be less than bank
   size" (raised by `Device` itself, as an input error).

Worked example (tt-mlir #8044): OutOfMemory(26,542,080 B L1 over 48 shards, 552,960 B a
bank, bank 1,329,888 B, 417,792 allocated, 912,096 free, largest 522,240) in the
statistics form -> "Out of Memory: Not enough space to allocate 26542080 B L1 buffer
across 48 banks, where each bank needs to store 552960 B, but bank size is 1329888 B
(allocated: 417792 B, free: 912096 B, largest free block: 522240 B)".
"""

from __future__ import annotations

from tileplan.targets.tenstorrent.bank import OutOfMemory, TooManyShards
from tileplan.targets.tenstorrent.cb_region import CbFailure, CbRegionError
from tileplan.targets.tenstorrent.memory import CoreRange
from tileplan.targets.tenstorrent.trace import TraceRegionExceeded
from tileplan.targets.tenstorrent.versions import CoreRangeForm, OomForm, Software

#: l1_banking_allocator.cpp generate_config, when l1_small_size is not below the L1 bank
RESERVED_SIZE = "Reserved size must be less than bank size"

Failure = OutOfMemory | TooManyShards | CbRegionError | TraceRegionExceeded


def out_of_memory(oom: OutOfMemory, form: OomForm) -> str:
    """Message 1 (or 2 for dependent allocators) in the build's form."""
    s = oom.statistics
    stats = f"(allocated: {s.allocated} B, free: {s.free} B, largest free block: {s.largest_free_block} B)"
    kind = oom.request.buffer_type.value
    if oom.dependent:
        return (f"Out of Memory: Not enough space after considering dependencies to allocate {oom.request.size} B "
                f"{kind} across {oom.banks} banks ({oom.bytes_per_bank} B per bank), bank size is {oom.bank_size} B "
                f"{stats}")
    head = (f"Out of Memory: Not enough space to allocate {oom.request.size} B {kind} buffer across {oom.banks} "
            f"banks, where each bank needs to store {oom.bytes_per_bank} B")
    if form is OomForm.OLDEST:
        return head
    if form is OomForm.ONLY:
        return f"{head}, but bank size is only {oom.bank_size} B"
    return f"{head}, but bank size is {oom.bank_size} B {stats}"


def too_many_shards(failure: TooManyShards) -> str:
    """Message 6."""
    return (f"Expected number of shards {failure.request.shards} to be less than or equal to total number of L1 "
            f"banks {failure.compute_banks} in compute cores")


def core_range_text(core_range: CoreRange, form: CoreRangeForm) -> str:
    """`CoreRange::str()`: `[(x=0,y=0) - (x=7,y=7)]`, or `[0-0 - 7-7]` in later builds."""
    return core_range.text(2026 if form is CoreRangeForm.DASH else 2025)


def cb_region(failure: CbRegionError, form: CoreRangeForm) -> str:
    """Messages 3 (grow) and 4 (clash)."""
    where = core_range_text(failure.core_range, form)
    if failure.kind is CbFailure.GROW:
        return (f"Statically allocated circular buffers on core range {where} grow to {failure.region_end} B which "
                f"is beyond max L1 size of {failure.l1_size} B")
    return (f"Statically allocated circular buffers in program {failure.program_id} clash with L1 buffers on core "
            f"range {where}. L1 buffer allocated at {failure.lowest_l1_address} and static circular buffer region "
            f"ends at {failure.region_end}")


def trace_region(failure: TraceRegionExceeded, device_word: str) -> str:
    """Message 5 (`device_word`: "MeshDevice", or "device" in pre-mesh builds)."""
    return (f"Creating trace buffers of size {failure.trace_buffers_size}B on {device_word} {failure.device_id}, but "
            f"only {failure.trace_region_size}B is allocated for trace region.")


def message(failure: Failure, software: Software) -> str:
    """Any allocator failure in the words of the build `software` describes."""
    if isinstance(failure, OutOfMemory):
        return out_of_memory(failure, software.oom_message)
    if isinstance(failure, TooManyShards):
        return too_many_shards(failure)
    if isinstance(failure, CbRegionError):
        return cb_region(failure, software.core_range_text)
    return trace_region(failure, software.trace_device_word)
