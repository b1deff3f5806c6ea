"""`check` of a Tenstorrent report's verdict and memory section, from the replayed
events (check/tenstorrent.py) and the documented rules (check/tt_rules.py).

The verdict: a report that fits has no failing program (the program pass says so) and
no failure figures. An out-of-memory re-derives the request's per-bank bytes and what
it needs of the free list, the bank manager's statistics after the last event, that
first fit finds no block, capacity (need > free) or fragmentation, and the message in
the build's form. A circular-buffer failure is its program's first failing core range:
grow (past L1) or clash (over the lowest L1 buffer), and its message. The buffers
responsible are the live buffers of that memory, largest first (a clash: lowest first).
"""

from __future__ import annotations

from tileplan.check.tt_result import TtCheckResult
from tileplan.check.tt_rules import (
    FirstFit, clash_message, core_range_text, grow_message, oom_message, per_bank, round_up, shards_message,
    trace_message)
from tileplan.report.tt_report import TtReport
from tileplan.report.tt_sections import BUFFER_TYPES


def check_verdict(report: TtReport, lists: dict[str, FirstFit],
                  cb_failure: tuple[tuple[int, int, int, int], int, int | None] | None, out: TtCheckResult) -> None:
    v, d = report.verdict, report.device
    place = "verdict"
    if v.fits:
        for name in ("request", "statistics", "cb", "shards", "trace"):
            if getattr(v, name) is not None:
                out.add(f"{place}.{name}", "a plan that fits has no failure figures", "defect")
        return
    last = report.operations.count - 1 if report.operations.count else -1
    rows = report.buffers.rows()
    live = [b for b in rows if b.freed is None and b.buffer_type == v.buffer_type]
    if v.kind in ("capacity", "fragmentation"):
        out.compare(f"{place}.operation", v.operation, last)
        r, st = v.request, v.statistics
        if r is None or st is None:
            out.add(place, "an out-of-memory verdict gives its request and statistics", "defect")
            return
        out.compare(f"{place}.buffer_type", v.buffer_type, r.buffer_type)
        banks = {"L1": d.l1_banks, "L1_SMALL": d.l1_banks, "DRAM": d.dram_banks, "TRACE": d.dram_banks}
        if not r.sharded:
            out.compare(f"{place}.request.banks", r.banks, banks[r.buffer_type])
        out.compare(f"{place}.request.bytes_per_bank", r.bytes_per_bank, per_bank(r.bytes, r.page_bytes, r.banks))
        need = round_up(max(r.bytes_per_bank, d.dram_alignment), d.dram_alignment)
        out.compare(f"{place}.request.need", r.need, need)
        fit = lists[r.buffer_type]
        allocated, free, largest = fit.statistics()
        out.compare(f"{place}.statistics", (st.total, st.allocated, st.free, st.largest_free_block),
                    (fit.size, allocated, free, largest))
        if largest >= need:
            out.add(place, f"first fit places {need} B: the largest free block is {largest} B")
        out.compare(f"{place}.kind", v.kind, "capacity" if need > free else "fragmentation")
        out.compare(f"{place}.message", v.message, oom_message(d.oom_message, r.bytes, r.buffer_type, r.banks,
                                                                r.bytes_per_bank, fit.size, allocated, free, largest))
        live.sort(key=lambda b: (-b.reserved, b.id))
    elif v.kind in ("cb_grow", "cb_clash"):
        out.compare(f"{place}.buffer_type", v.buffer_type, "L1")
        program = report.programs.count - 1
        out.compare(f"{place}.program", v.program, program)
        if v.program is not None and 0 <= v.program < report.programs.count:
            out.compare(f"{place}.operation", v.operation, report.programs.op[v.program])
        if cb_failure is None or v.cb is None:
            out.add(place, "the failing program's circular buffers pass tt-metal's region check" if v.cb else
                    "a circular-buffer verdict gives its core range and region end")
            return
        core_range, end, lowest = cb_failure
        grow = end > d.l1_size
        out.compare(f"{place}.kind", v.kind, "cb_grow" if grow else "cb_clash")
        out.compare(f"{place}.cb", (v.cb.core_range, v.cb.region_end, v.cb.l1_size, v.cb.lowest_l1_address),
                    (core_range, end, d.l1_size, lowest))
        where = core_range_text(core_range, d.core_range_text)
        out.compare(f"{place}.message", v.message,
                    grow_message(where, end, d.l1_size) if grow else clash_message(program, where, lowest or 0, end))
        live.sort(key=(lambda b: (-b.reserved, b.id)) if grow else (lambda b: (b.address, -b.reserved, b.id)))
    elif v.kind == "shards":
        if v.shards is None:
            out.add(place, "a shards verdict gives the shards and the compute banks", "defect")
            return
        shards, compute = v.shards
        out.compare(f"{place}.shards", v.shards, (shards, d.l1_banks))
        if shards <= compute:
            out.add(place, f"{shards} shards fit the {compute} compute cores")
        out.compare(f"{place}.message", v.message, shards_message(shards, compute))
        live.sort(key=lambda b: (-b.reserved, b.id))
    else:
        t = v.trace
        if t is None:
            out.add(place, "a trace verdict gives the trace buffers' size and the region", "defect")
            return
        out.compare(f"{place}.trace.trace_region_size", t.trace_region_size, d.trace_region_config)
        if t.trace_buffers_size <= t.trace_region_size:
            out.add(place, f"{t.trace_buffers_size} B of trace buffers fit the {t.trace_region_size} B region")
        out.compare(f"{place}.message", v.message, trace_message(t.trace_buffers_size, d.trace_device_word,
                                                                  t.device_id, t.trace_region_size))
        live.sort(key=lambda b: (-b.reserved, b.id))
    out.compare(f"{place}.responsible", v.responsible, tuple(b.id for b in live))


def check_memory(report: TtReport, out: TtCheckResult) -> None:
    """Each buffer type's peak and its first event, the largest CB region end and L1 in
    use (the first program reaching each), DRAM bank by bank at its peak."""
    m, rows = report.memory, report.buffers.rows()
    derived = []
    for kind in BUFFER_TYPES:
        deltas = sorted([(b.allocated, b.reserved) for b in rows if b.buffer_type == kind]
                        + [(b.freed, -b.reserved) for b in rows if b.buffer_type == kind and b.freed is not None])
        best, at, held = 0, None, 0
        for event, delta in deltas:
            held += delta
            if held > best:
                best, at = held, event
        derived.append((kind, best, at))
    out.compare("memory.peaks", tuple((p.buffer_type, p.bytes_per_bank, p.event) for p in m.peaks), tuple(derived))
    programs = report.programs
    ends = programs.cb_region_end
    first = max(range(programs.count), key=lambda i: (ends[i], -i), default=None)
    out.compare("memory.cb_region_end", (m.cb_region_end, m.cb_program),
                (ends[first] if first is not None else report.device.l1_base, first))
    used = programs.l1_in_use
    busiest = max(range(programs.count), key=lambda i: (used[i], -i), default=None)
    out.compare("memory.l1_in_use", (m.l1_in_use, m.l1_in_use_program),
                (used[busiest] if busiest is not None else 0, busiest))
    dram_event = next(at for kind, _, at in derived if kind == "DRAM")
    per_bank_data = [0] * report.device.dram_banks
    if dram_event is not None:
        for b in rows:
            if b.buffer_type == "DRAM" and b.allocated <= dram_event and (b.freed is None or dram_event < b.freed):
                full, rest = divmod(b.bytes // b.page_bytes, b.banks)
                for k in range(min(b.banks, len(per_bank_data))):
                    per_bank_data[k] += (full + (k < rest)) * b.page_bytes
    out.compare("memory.dram_data_per_bank", m.dram_data_per_bank, tuple(per_bank_data))
