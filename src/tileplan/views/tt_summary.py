"""The summary of a Tenstorrent report, as plain data (`build_tt_summary`): the verdict
first in tt-metal's words, then where the run stopped (the operation, its program and
module) and the buffers responsible with the user's names, each memory at its peak, the
largest buffers, and what to change (the what-if rows that fit, else what the kind of
failure calls for). `tileplan plan` prints its head, `tileplan summary` all of it;
render/tt_terminal.py renders it, `to_json` is `summary --json`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tileplan.report.tt_report import TtReport
from tileplan.report.tt_tables import BufferRow

TOP_BUFFERS = 8
#: words for each failure kind and memory
KIND_WORDS = {"capacity": "not enough free memory", "fragmentation": "enough free memory, but no block large enough "
              "(first fit's holes)", "cb_grow": "circular buffers beyond L1", "cb_clash": "circular buffers reach an "
              "L1 buffer", "trace": "the trace region exceeded", "shards": "more shards than compute cores"}


@dataclass(frozen=True, slots=True)
class BufferLine:
    """A buffer as the summary lists it: the user's name and module, where and how
    large (per bank: what each bank reserves), from which operation to which."""

    id: int
    name: str
    module: str | None
    use: str
    buffer_type: str
    bytes: int
    bytes_per_bank: int
    banks: int
    sharded: bool
    address: int
    made_by: str
    freed_after: str | None


@dataclass(frozen=True, slots=True)
class PeakLine:
    memory: str
    bytes_per_bank: int
    of: int
    where: str


@dataclass(frozen=True, slots=True)
class TtSummary:
    """See the module docstring. `verdict` is tt-metal's message, or the fit line."""

    fits: bool
    verdict: str
    kind: str | None
    machine: str
    frontend: str
    where: str | None
    responsible: tuple[BufferLine, ...]
    peaks: tuple[PeakLine, ...]
    largest: tuple[BufferLine, ...]
    changes: tuple[str, ...]
    reproduce: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def machine_words(r: TtReport) -> str:
    d = r.device
    chips = f", {d.chips} chips, each planned as one" if d.chips > 1 else ""
    return (f"{d.machine} ({d.arch}{chips}; tt-metal build {d.version}, {d.l1_banks} L1 banks of {d.l1_bank_size:,} B, "
            f"l1_small_size {d.l1_small_size:,}, trace_region_size {d.trace_region_size:,})")


def frontend_words(r: TtReport) -> str:
    opts = ", ".join(f"{k} {v}" for k, v in r.frontend.options if v is not None)
    return f"{r.frontend.name} ({opts})" if opts else r.frontend.name


def verdict_text(r: TtReport) -> str:
    """The verdict line: tt-metal's message, or what fits where."""
    if r.verdict.message is not None:
        return r.verdict.message
    peaks = {p.buffer_type: p.bytes_per_bank for p in r.memory.peaks}
    d = r.device
    return (f"fits on {d.machine}: L1 peak {peaks['L1']:,} of {d.l1_bank_size:,} B a bank, circular buffers to "
            f"{r.memory.cb_region_end:,} B, DRAM peak {peaks['DRAM']:,} of {d.dram_bank_size:,} B a bank")


def op_name(r: TtReport, op: int | None) -> str:
    if op is None or op < 0:
        return "the uploads"
    return r.operations.name[op]


def buffer_line(r: TtReport, b: BufferRow) -> BufferLine:
    return BufferLine(b.id, b.name, b.module, b.use, b.buffer_type, b.bytes, b.bytes_per_bank, b.banks, b.sharded,
                      b.address, op_name(r, b.first_op), None if b.last_op is None else op_name(r, b.last_op))


def where_text(r: TtReport) -> str | None:
    v = r.verdict
    if v.fits:
        return None
    if v.operation is None or v.operation < 0:
        return "while uploading the weights and inputs, before the first operation"
    o = r.operations.row(v.operation)
    module = f" in {o.module}" if o.module and o.module != o.name else ""
    layer = f" (layer {o.layer})" if o.layer is not None else ""
    text = f"operation {o.id} {o.name} ({o.kind}){module}{layer}"
    if v.program is not None:
        text += f", its program {r.programs.factory[v.program]}"
    elif v.request is not None:
        text += f", allocating {v.request.name}"
    return text


def event_words(r: TtReport, event: int) -> str:
    """Where an allocator event happened: the operation that allocated or freed then."""
    b = r.buffers
    for i in range(b.count):
        if b.allocated[i] == event:
            return f"allocating {b.name[i]} ({op_name(r, b.first_op[i])})"
        if b.freed[i] == event:
            return f"after freeing {b.name[i]} ({op_name(r, b.last_op[i])})"
    return f"event {event}"


def peak_lines(r: TtReport) -> tuple[PeakLine, ...]:
    d = r.device
    size = {"L1": d.l1_bank_size, "L1_SMALL": d.l1_small_bank_size, "DRAM": d.dram_bank_size,
            "TRACE": d.trace_bank_size}
    lines = []
    for p in r.memory.peaks:
        if p.event is None and p.buffer_type in ("L1_SMALL", "TRACE"):
            continue
        lines.append(PeakLine(p.buffer_type, p.bytes_per_bank, size[p.buffer_type],
                              event_words(r, p.event) if p.event is not None else "never used"))
    m = r.memory
    if m.cb_program is not None:
        lines.append(PeakLine("circular buffers (region end)", m.cb_region_end, d.l1_size,
                              f"program {m.cb_program} ({r.programs.factory[m.cb_program]}, "
                              f"{op_name(r, r.programs.op[m.cb_program])})"))
    if m.l1_in_use_program is not None:
        lines.append(PeakLine("L1 in use on a core", m.l1_in_use, d.l1_size - d.l1_base,
                              f"program {m.l1_in_use_program} ({op_name(r, r.programs.op[m.l1_in_use_program])})"))
    return tuple(lines)


def changes(r: TtReport) -> tuple[str, ...]:
    """For a plan that does not fit: the what-if rows that fit (their commands) and the
    notes, else what the failure's kind calls for. For a plan that fits: how far each
    knob goes (the rows that fit)."""
    out = []
    if r.what_if is not None:
        for row in r.what_if.rows:
            if row.fits:
                word = "also fits" if r.fits else "fits"
                given = f"; the stack is given {'; '.join(row.settings)}" if row.settings else ""
                out.append(f"{row.knob} {row.value}: {word} ({row.command}){given}")
        out.extend(r.what_if.notes)
    v = r.verdict
    if v.fits or out:
        return tuple(out)
    rows = r.buffers
    if v.kind == "cb_clash" and v.responsible:
        low = rows.row(v.responsible[0])
        out.append(f"the lowest L1 buffer {low.name} (at {low.address:,}) meets the circular buffers: move it to "
                   f"DRAM (--to-dram {op_name(r, low.first_op)}) or make the operation's blocks smaller")
    elif v.kind == "cb_grow":
        out.append("the program's circular buffers alone exceed L1: smaller blocks (a smaller chunk or batch, "
                   "another program config)")
    elif v.kind == "fragmentation":
        out.append("enough L1 is free but in pieces: free the buffers around the largest hole earlier, or move "
                   "one of them to DRAM")
    elif v.buffer_type == "L1_SMALL":
        out.append("a larger l1_small_size (--l1-small-size)")
    elif v.buffer_type == "DRAM":
        out.append("less in DRAM: bfp8 weights (--weights bfp8), a shorter KV cache, more chips")
    elif v.buffer_type == "L1":
        out.append("less in L1: move the largest L1 buffers to DRAM (--to-dram OP), a smaller batch or chunk")
    return tuple(out)


def build_tt_summary(r: TtReport, top: int = TOP_BUFFERS) -> TtSummary:
    rows = r.buffers.rows()
    responsible = tuple(buffer_line(r, rows[i]) for i in r.verdict.responsible[:top])
    largest = sorted(rows, key=lambda b: (b.buffer_type != "L1", -b.bytes_per_bank, b.id))[:top]
    reproduce: tuple[str, ...] = ()
    if r.reproduce is not None:
        reproduce = (*(f"{k}={v}" for k, v in r.reproduce.device_parameters), *r.reproduce.settings)
    return TtSummary(fits=r.fits, verdict=verdict_text(r), kind=r.verdict.kind, machine=machine_words(r),
                     frontend=frontend_words(r), where=where_text(r), responsible=responsible, peaks=peak_lines(r),
                     largest=tuple(buffer_line(r, b) for b in largest), changes=changes(r), reproduce=reproduce)
