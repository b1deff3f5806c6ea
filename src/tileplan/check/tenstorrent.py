"""`tileplan check` for a Tenstorrent report: every number re-derived from the report and
the documented rules alone (check/tt_rules.py), never by the planner.

The passes, in order:

1. the device: the aligned base, the L1_SMALL bank and the L1 bank from the device
   parameters, one L1 bank per worker core;
2. each buffer: its banks (interleaved: every bank of its type; sharded: at most the
   compute cores), its per-bank bytes from its pages, what it reserves;
3. the events: every event number used once, each buffer allocated before it is freed;
   replayed in order through a first-fit free list per bank manager, every address;
4. each program: the buffers live when it ran, the lowest L1 buffer, the bytes
   allocated per bank in L1, L1_SMALL and DRAM, its circular buffers' addresses and
   region ends, L1 in use; every program before the failure passes tt-metal's region
   check (no CB region past L1 or over an L1 buffer);
5. the operations' program spans;
6. the verdict: replayed to the failure, the message's figures and the message itself,
   its kind and the buffers responsible;
7. the memory section: each peak and its event, the largest CB region and L1 in use,
   DRAM bank by bank at its peak;
8. what reproduces a fit (check/tt_reproduce.py): the device parameters, each output
   layout against the buffer it names, the override line and tt-xla's compile options.

The what-if rows are other plans: each has its command to re-run.
"""

from __future__ import annotations

from tileplan.check.tt_reproduce import check_reproduce
from tileplan.check.tt_result import TtCheckResult, managers, top_down
from tileplan.check.tt_rules import Cb, FirstFit, cb_regions, core_range_text, per_bank, round_up
from tileplan.check.tt_verdict import check_memory, check_verdict
from tileplan.report.tt_report import TtReport
from tileplan.report.tt_sections import BUFFER_TYPES, TtDevice
from tileplan.report.tt_tables import BufferRow, ProgramRow


def check_device(d: TtDevice, out: TtCheckResult) -> None:
    out.compare("device.l1_base", d.l1_base, round_up(d.l1_unreserved_base, d.dram_alignment))
    out.compare("device.l1_small_bank_size", d.l1_small_bank_size, round_up(d.l1_small_size, d.dram_alignment))
    out.compare("device.l1_bank_size", d.l1_bank_size, d.l1_size - d.l1_base - d.l1_small_bank_size)
    out.compare("device.l1_banks", d.l1_banks, d.worker_grid[0] * d.worker_grid[1])
    unit = d.dram_alignment * (d.dram_banks if d.trace_alignment == "dram_x_banks" else 1)
    out.compare("device.trace_region_config", d.trace_region_config, round_up(d.trace_region_size, unit))


def check_buffer(d: TtDevice, b: BufferRow, out: TtCheckResult) -> bool:
    place = f"buffers[{b.id}] ({b.name})"
    ok = True
    alignment = d.l1_alignment if b.buffer_type in ("L1", "L1_SMALL") else d.dram_alignment
    if b.page_bytes % alignment or b.bytes % b.page_bytes:
        out.add(place, f"expected whole pages aligned to {alignment} B, found {b.bytes} B in pages of "
                       f"{b.page_bytes} B", "defect")
        return False
    banks = {"L1": d.l1_banks, "L1_SMALL": d.l1_banks, "DRAM": d.dram_banks, "TRACE": d.dram_banks}[b.buffer_type]
    if b.sharded:
        if b.banks > d.l1_banks:
            ok = out.compare(f"{place}.banks", b.banks, f"at most the {d.l1_banks} compute cores")
    else:
        ok = out.compare(f"{place}.banks", b.banks, banks)
    ok = out.compare(f"{place}.bytes_per_bank", b.bytes_per_bank, per_bank(b.bytes, b.page_bytes, b.banks)) and ok
    need = round_up(max(b.bytes_per_bank, d.dram_alignment), d.dram_alignment)
    return out.compare(f"{place}.reserved", b.reserved, need) and ok


def events(report: TtReport, out: TtCheckResult) -> list[tuple[bool, int]] | None:
    """(is an allocation, buffer id) by event number, or None when the numbering is
    broken (a finding says where)."""
    rows = report.buffers.rows()
    total = sum(1 + (b.freed is not None) for b in rows)
    slots: list[tuple[bool, int] | None] = [None] * total
    for b in rows:
        for when, alloc in ((b.allocated, True), (b.freed, False)):
            if when is None:
                continue
            if when >= total or slots[when] is not None:
                out.add(f"buffers[{b.id}] ({b.name})", f"event {when} is not one of 0..{total - 1} used once",
                        "defect")
                return None
            slots[when] = (alloc, b.id)
        if b.freed is not None and b.freed <= b.allocated:
            out.add(f"buffers[{b.id}] ({b.name})", f"freed at event {b.freed}, not after its allocation "
                                                   f"{b.allocated}", "defect")
            return None
    return [s for s in slots if s is not None]


def replay(report: TtReport, order: list[tuple[bool, int]], out: TtCheckResult) -> dict[str, FirstFit]:
    """Every allocation and free in event order; each address compared."""
    lists = managers(report.device)
    for alloc, i in order:
        b = report.buffers.row(i)
        fit = lists[b.buffer_type]
        if alloc:
            at = fit.place(b.bytes_per_bank, top_down(b))
            if at is None:
                out.add(f"buffers[{i}] ({b.name}).address", f"the report places it at {b.address}, but first fit "
                                                            f"finds no free block of {fit.need(b.bytes_per_bank)} B")
                at = b.address
            elif out.compare(f"buffers[{i}] ({b.name}).address", b.address, at):
                out.buffers_agreeing += 1
        else:
            fit.free(b.address)
    return lists


def live_sets(report: TtReport, order: list[tuple[bool, int]] | None) -> dict[int, list[BufferRow]]:
    """The buffers live when each program ran (by program id): after its `event`
    events, swept once in event order."""
    rows = report.buffers.rows()
    wanted: dict[int, list[int]] = {}
    for k, e in enumerate(report.programs.event):
        wanted.setdefault(e, []).append(k)
    found: dict[int, list[BufferRow]] = {}
    live: dict[int, BufferRow] = {}
    steps = order or []
    for e in range(len(steps) + 1):
        for k in wanted.get(e, ()):
            found[k] = list(live.values())
        if e < len(steps):
            alloc, i = steps[e]
            if alloc:
                live[i] = rows[i]
            else:
                live.pop(i, None)
    return found


def program_cbs(report: TtReport) -> dict[int, list[int]]:
    """The circular buffers' rows by program."""
    found: dict[int, list[int]] = {}
    for i, p in enumerate(report.circular_buffers.program):
        found.setdefault(p, []).append(i)
    return found


def check_program(report: TtReport, p: ProgramRow, live: list[BufferRow], cbs: list[int], failing: bool,
                  out: TtCheckResult) -> tuple[tuple[int, int, int, int], int, int | None] | None:
    """Compare one program's figures (`live`: the buffers live when it ran); the first
    failing range (range, end, lowest L1) when its CB region fails tt-metal's check."""
    d = report.device
    place = f"programs[{p.id}]"
    l1 = [b for b in live if b.buffer_type == "L1"]
    lowest = min((b.address for b in l1), default=None)
    rows = [report.circular_buffers.row(i) for i in cbs]
    addresses, regions = cb_regions([Cb(r.total_bytes, tuple(r.core_ranges()), r.globally_allocated) for r in rows],
                                    d.l1_base, d.dram_alignment)
    region_end = max((e for _, e in regions if e is not None), default=d.l1_base)
    held = {t: sum(b.reserved for b in live if b.buffer_type == t) for t in BUFFER_TYPES}
    ok = all([
        out.compare(f"{place}.lowest_l1", p.lowest_l1, lowest),
        out.compare(f"{place}.l1_buffers", p.l1_buffers, tuple(sorted(b.id for b in l1))),
        out.compare(f"{place}.l1_allocated", p.l1_allocated, held["L1"]),
        out.compare(f"{place}.l1_small_allocated", p.l1_small_allocated, held["L1_SMALL"]),
        out.compare(f"{place}.dram_allocated", p.dram_allocated, held["DRAM"]),
        out.compare(f"{place}.cb_bytes", p.cb_bytes, sum(r.total_bytes for r in rows if not r.globally_allocated)),
        out.compare(f"{place}.cb_region_end", p.cb_region_end, region_end),
        out.compare(f"{place}.l1_in_use", p.l1_in_use,
                    region_end - d.l1_base + held["L1"] + held["L1_SMALL"]),
        *(out.compare(f"circular_buffers[{i}].address", r.address, a) for i, r, a in zip(cbs, rows, addresses)),
    ])
    out.programs_agreeing += ok
    for r, end in regions:
        if end is not None and (end > d.l1_size or (lowest is not None and lowest < end)):
            if not failing:
                out.add(place, f"its circular buffers on core range {core_range_text(r, d.core_range_text)} end "
                               f"at {end} (L1 {d.l1_size} B, lowest L1 buffer {lowest}): tt-metal stops here, the "
                               "report runs on")
            return r, end, lowest
    return None


def check_tt_report(report: TtReport) -> TtCheckResult:
    """Every finding about `report` (see the module docstring)."""
    out = TtCheckResult()
    d = report.device
    check_device(d, out)
    rows = report.buffers.rows()
    arithmetic = all([check_buffer(d, b, out) for b in rows])
    order = events(report, out)
    lists = replay(report, order, out) if order is not None and arithmetic else None
    v = report.verdict
    failing_program = v.program if v.kind in ("cb_grow", "cb_clash") else None
    by_program = program_cbs(report)
    live = live_sets(report, order)
    cb_failure = None
    for k in range(report.programs.count):
        p = report.programs.row(k)
        if k not in live:
            out.add(f"programs[{k}]", f"event {p.event} is past the report's events", "defect")
            continue
        failed = check_program(report, p, live[k], by_program.get(k, []), k == failing_program, out)
        if k == failing_program:
            cb_failure = failed
    check_operations(report, out)
    if lists is not None:
        check_verdict(report, lists, cb_failure, out)
        check_memory(report, out)
    check_reproduce(report, out)
    return out


def check_operations(report: TtReport, out: TtCheckResult) -> None:
    """Each operation's programs are the next `program_count` programs, all its own."""
    ops, programs = report.operations, report.programs
    counts: dict[int, int] = {}
    for op in programs.op:
        counts[op] = counts.get(op, 0) + 1
    expected = 0
    for i in range(ops.count):
        o = ops.row(i)
        out.compare(f"operations[{i}].first_program", o.first_program, expected)
        out.compare(f"operations[{i}].program_count", o.program_count, counts.get(i, 0))
        if any(programs.op[k] != i for k in range(expected, min(expected + o.program_count, programs.count))):
            out.add(f"operations[{i}]", f"programs {expected}..{expected + o.program_count - 1} are not all its own")
        expected += o.program_count
    if expected != programs.count:
        out.add("operations", f"the operations' programs count {expected}, the report lists {programs.count}")
