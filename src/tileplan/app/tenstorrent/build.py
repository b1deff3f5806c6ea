"""A Tenstorrent plan as its report's sections: the one place a `TtPlan` becomes a
`TtReport` (report/tt_report.py writes its JSON).

The device section says what the allocator made of the device parameters; the verdict
carries the figures tt-metal's message prints, so `check` re-derives the message from
them; the tables list every buffer, operation, program and circular buffer; the memory
section gives each memory at its peak and DRAM bank by bank there (interleaved pages
dealt round-robin from bank 0, `bank.interleaved_pages`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tileplan.report.tt_report import TtReport
from tileplan.report.tt_sections import (
    BankStatistics, CbFailure, FailedRequest, Peak, TraceFailure, TtDevice, TtFrontend, TtMemory, TtOutputLayout,
    TtReproduce, TtVerdict)
from tileplan.report.tt_tables import TtBuffers, TtCircularBuffers, TtOperations, TtPrograms
from tileplan.targets.tenstorrent.bank import OutOfMemory, TooManyShards, interleaved_pages
from tileplan.targets.tenstorrent.cb_region import CbRegionError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontend import Reproduction
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.planned import TtPlan, Verdict
from tileplan.targets.tenstorrent.trace import TraceRegionExceeded


def device_section(d: Device) -> TtDevice:
    s = d.software
    return TtDevice(
        machine=d.machine, arch=d.arch.value, chips=d.chips, version=d.version, stack=d.stack.value,
        dispatch_core_type=d.dispatch_core_type.value, l1_size=d.l1_size, l1_alignment=d.l1_alignment,
        dram_alignment=d.dram_alignment, worker_grid=(d.worker_grid.columns, d.worker_grid.rows),
        l1_unreserved_base=d.l1_unreserved_base, l1_base=d.l1_base, l1_small_size=d.l1_small_size,
        trace_region_size=d.trace_region_size, trace_alignment=s.trace_alignment.value,
        trace_region_config=d.trace_region_config, l1_banks=d.l1_banks, l1_bank_size=d.l1_bank_size,
        l1_small_bank_size=d.l1_small_bank_size, dram_banks=d.dram_banks,
        dram_unreserved_base=d.dram_unreserved_base, dram_bank_size=d.dram_bank_size,
        trace_bank_size=d.trace_bank_size, oom_message=s.oom_message.value,
        core_range_text=s.core_range_text.value,
        trace_device_word=s.trace_device_word)


def verdict_section(v: Verdict) -> TtVerdict:
    if v.fits:
        return TtVerdict(fits=True)
    f = v.failure
    extra: dict[str, Any] = {}
    if isinstance(f, OutOfMemory):
        r = f.request
        extra["request"] = FailedRequest(name=r.name, buffer_type=r.buffer_type.value,
                                         bytes=r.size, page_bytes=r.page_size, banks=f.banks,
                                         sharded=r.shards is not None, bytes_per_bank=f.bytes_per_bank, need=f.need)
        st = f.statistics
        extra["statistics"] = BankStatistics(total=st.total_allocatable, allocated=st.allocated, free=st.free,
                                             largest_free_block=st.largest_free_block)
    elif isinstance(f, TooManyShards):
        assert f.request.shards is not None
        extra["shards"] = (f.request.shards, f.compute_banks)
    elif isinstance(f, CbRegionError):
        c = f.core_range
        extra["cb"] = CbFailure(core_range=(c.start[0], c.start[1], c.end[0], c.end[1]), region_end=f.region_end,
                                l1_size=f.l1_size, lowest_l1_address=f.lowest_l1_address)
    elif isinstance(f, TraceRegionExceeded):
        extra["trace"] = TraceFailure(trace_buffers_size=f.trace_buffers_size, device_id=f.device_id,
                                      trace_region_size=f.trace_region_size)
    assert v.kind is not None and v.buffer_type is not None
    return TtVerdict(fits=False, message=v.message, kind=v.kind.value, buffer_type=v.buffer_type.value,
                     operation=v.op, program=v.program, responsible=v.responsible, **extra)


def memory_section(plan: TtPlan) -> TtMemory:
    peaks = []
    for kind in (BufferType.L1, BufferType.L1_SMALL, BufferType.DRAM, BufferType.TRACE):
        value, event = plan.peak_event(kind)
        peaks.append(Peak(buffer_type=kind.value, bytes_per_bank=value, event=event))
    cb = max(range(len(plan.programs)), key=lambda i: (plan.programs[i].cb_region_end, -i), default=None)
    used = max(range(len(plan.programs)), key=lambda i: (plan.programs[i].l1_in_use, -i), default=None)
    _, dram_event = plan.peak_event(BufferType.DRAM)
    per_bank = [0] * plan.device.dram_banks
    if dram_event is not None:
        for b in plan.buffers:
            if b.buffer_type is BufferType.DRAM and b.allocated <= dram_event and (b.freed is None
                                                                                   or dram_event < b.freed):
                banks = interleaved_pages(b.bytes, b.page_bytes, b.banks)
                for k, pages in enumerate(banks):
                    per_bank[k] += pages * b.page_bytes
    return TtMemory(peaks=tuple(peaks),
                    cb_region_end=plan.programs[cb].cb_region_end if cb is not None else plan.device.l1_base,
                    cb_program=cb, l1_in_use=plan.programs[used].l1_in_use if used is not None else 0,
                    l1_in_use_program=used, dram_data_per_bank=tuple(per_bank))


def tables(plan: TtPlan) -> tuple[TtBuffers, TtOperations, TtPrograms, TtCircularBuffers]:
    buffers = TtBuffers.from_rows([
        (b.name, b.use.value, b.buffer_type.value, b.bytes, b.page_bytes, b.banks, b.bytes_per_bank, b.reserved,
         b.address, b.sharded, b.allocated, b.freed, b.first_op, b.last_op, b.tensor, b.module)
        for b in plan.buffers])
    operations = TtOperations.from_rows([
        (o.name, o.kind.value, o.module, o.layer, o.programs[0] if o.programs else len_before(plan, o.index),
         len(o.programs)) for o in plan.ops])
    programs = TtPrograms.from_rows([
        (p.op, p.index, p.program.name, p.event, p.cb_bytes, p.cb_region_end, p.lowest_l1, p.l1_allocated,
         p.l1_small_allocated, p.dram_allocated, p.l1_in_use, p.l1_buffers) for p in plan.programs])
    cbs = []
    for k, p in enumerate(plan.programs):
        for placed in p.layout.placed:
            cb = placed.cb
            ranges = tuple(x for r in cb.core_ranges for x in (*r.start, *r.end))
            cbs.append((k, cb.index, cb.name, cb.pages, cb.page_bytes, ranges, cb.globally_allocated,
                        placed.address))
    return buffers, operations, programs, TtCircularBuffers.from_rows(cbs)


def len_before(plan: TtPlan, op: int) -> int:
    """Where an operation without programs (a view) would have its first: the programs
    of the operations before it."""
    return sum(len(o.programs) for o in plan.ops if o.index < op)


def reproduce_section(plan: TtPlan, found: Reproduction) -> TtReproduce | None:
    """What reproduces `plan` when it fits (None when it does not): the device parameters
    it was opened with, the dispatch cores, then the frontend's settings (`found`), and
    each output layout they pin with the buffer the operation's output is."""
    if not plan.fits:
        return None
    d = plan.device
    params = (("l1_small_size", d.l1_small_size), ("trace_region_size", d.trace_region_size))
    written = {(b.first_op, b.tensor): b.id for b in plan.buffers if b.first_op >= 0 and b.tensor is not None}
    layouts = []
    for o in found.layouts:
        op = plan.program.ops[o.op]
        buffer = written.get((o.op, op.outputs[0])) if op.outputs else None
        kind = o.buffer_type.value
        assert kind in ("L1", "DRAM"), o
        layouts.append(TtOutputLayout(operation=o.op, name=o.name, buffer=buffer, buffer_type=kind,  # type: ignore[arg-type]
                                      memory_layout=o.memory_layout.value, grid=o.grid, layout=o.layout.value,
                                      dtype=o.dtype.value))
    return TtReproduce(device_parameters=params,
                       settings=(f"dispatch_core_type={d.dispatch_core_type.value}", *found.settings),
                       output_layouts=tuple(layouts))


def build_tt_report(plan: TtPlan, model: str, frontend: str, options: Sequence[tuple[str, Any]],
                    reproduction: Reproduction | None = None) -> TtReport:
    """The report of `plan` (the what-if rows come later: `TtReport.with_`); for a plan
    that fits, what reproduces it, from the frontend's `reproduction` (none given: no
    reproduce section)."""
    buffers, operations, programs, cbs = tables(plan)
    return TtReport(model=model, device=device_section(plan.device),
                    frontend=TtFrontend(name=frontend, options=tuple(options)), verdict=verdict_section(plan.verdict),
                    memory=memory_section(plan), buffers=buffers, operations=operations, programs=programs,
                    circular_buffers=cbs,
                    reproduce=reproduce_section(plan, reproduction) if reproduction is not None else None)
