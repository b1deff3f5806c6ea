"""What would make a Tenstorrent plan fit: the request re-planned with one knob turned.

The knobs: each the frontend exposes (`TtFrontend.knobs`: the largest batch or prefill
chunk, bfp8 weights, another opt-level, ...), searched as it says (LARGEST: the
largest of its values that fits, by `largest_found`, which does not assume memory grows
with the value: every value above the answer is planned up to a margin; EACH: every
other value once); then the device's: the `l1_small_size` window that works (planned
at each of a ladder of sizes up to the L1 bank: the smallest and the largest that fit),
the trace region (as large as the traces, or none when DRAM ran out beside it) and,
when L1 is what failed, the largest L1 tensor an operation makes moved to DRAM
(`--to-dram OP`; a row that fits also carries the frontend's settings that move it:
tt-mlir's override-output-layout) and, for a plan on an older build (`--tt-version`), the
latest build tileplan models (what upgrading tt-xla / tt-metal would run). Each row is a
full plan with the command that re-derives it; a row that cannot be planned says why.
When first fit's holes failed (fragmentation), the placement solver says whether another
placement of the same buffers would fit.

What reproduces a plan that fits is the report's own (build.py `reproduce_section`).

Worked example: a tt-transformers decoder whose prefill chunk of 8192 clashes; the row
`prefill_chunk 4096 (the largest that fits up to 5 values above)` with its command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tileplan.app.tenstorrent.request import TtRequest
from tileplan.app.whatif import largest_found
from tileplan.errors import TileplanError
from tileplan.placement import Buffer, Problem, place
from tileplan.report.tt_report import TtReport
from tileplan.report.tt_sections import TtWhatIf, TtWhatIfRow
from tileplan.targets.tenstorrent.frontend import Search
from tileplan.targets.tenstorrent.bank import BufferRequest, DeviceAllocator
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.planned import UPLOAD, BufferUse, FailureKind, TtPlan
from tileplan.targets.tenstorrent.trace import TraceRegionExceeded

#: the l1_small_size ladder the window is searched on (bytes; tt-mlir's 32 and 64 KiB among them)
L1_SMALL_LADDER = (0, 8192, 16384, 24576, 32768, 49152, 65536, 98304, 131072, 196608, 262144, 393216, 524288)
#: seconds the placement solver may take for the fragmentation note
PLACEMENT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Tried:
    """One re-plan: the request and its plan, or why it could not be planned."""

    request: TtRequest
    plan: TtPlan | None
    error: str | None = None

    @property
    def fits(self) -> bool:
        return self.plan is not None and self.plan.fits


def attempt(request: TtRequest) -> Tried:
    try:
        return Tried(request, request.plan())
    except TileplanError as e:
        return Tried(request, None, " ".join(str(e).split()))


def row(knob: str, value: str, tried: Tried, settings: tuple[str, ...] | None = None) -> TtWhatIfRow:
    if tried.plan is None:
        return TtWhatIfRow(knob=knob, value=value, command=tried.request.command(), error=tried.error)
    v = tried.plan.verdict
    return TtWhatIfRow(knob=knob, value=value, command=tried.request.command(), fits=v.fits,
                       kind=v.kind.value if v.kind else None, message=v.message, settings=settings)


def largest_row(base: TtRequest, key: str, values: tuple[object, ...], current: object,
                progress: Callable[[str], None]) -> TtWhatIfRow:
    """The largest of `values` (ascending) that fits, searched by `largest_found` on
    their positions from the current value's."""
    tried: dict[int, Tried] = {}

    def fits(n: int) -> bool:
        progress(f"what-if {key} {values[n - 1]}")
        tried[n] = attempt(base.turned(key, values[n - 1]))
        return tried[n].fits

    start = values.index(current) + 1 if current in values else 1
    found = largest_found(fits, start, len(values), scan=2)
    if found.best:
        best = values[found.best - 1]
        last = len(values)
        above = "the last value tried" if found.best == last else f"every value up to {values[found.upto - 1]} tried"
        planned = "; the planned value" if best == current else ""
        return row(key, f"{best} (the largest that fits{planned}; {above})", tried[found.best])
    return row(key, f"none of {values[0]}..{values[found.upto - 1]} fits", tried[min(tried)])


def frontend_rows(base: TtRequest, plan: TtPlan, progress: Callable[[str], None]) -> list[TtWhatIfRow]:
    rows = []
    for knob in base.stack().knobs(base.options, plan.device):
        if knob.search is Search.LARGEST:
            rows.append(largest_row(base, knob.key, knob.values, knob.current, progress))
            continue
        for value in knob.values:
            if value != knob.current:
                progress(f"what-if {knob.key} {value}")
                rows.append(row(knob.key, str(value), attempt(base.turned(knob.key, value))))
    return rows


def l1_small_row(base: TtRequest, plan: TtPlan, progress: Callable[[str], None]) -> TtWhatIfRow | None:
    """The l1_small_size window: planned at each ladder size the L1 bank allows; the
    smallest and largest that fit (None when the plan uses no L1_SMALL and failed on
    none: the window is then every size the bank leaves L1 enough for)."""
    v = plan.verdict
    used = plan.peak_event(BufferType.L1_SMALL)[0] > 0
    if not used and v.buffer_type is not BufferType.L1_SMALL:
        return None
    d = plan.device
    room = d.l1_size - d.l1_base
    fitting: list[tuple[int, Tried]] = []
    planned = []
    for size in L1_SMALL_LADDER:
        if size >= room:
            break
        progress(f"what-if l1_small_size {size}")
        tried = attempt(base.with_(l1_small_size=size))
        planned.append(size)
        if tried.fits:
            fitting.append((size, tried))
    if not fitting:
        return TtWhatIfRow(knob="l1_small_size", value=f"none of {', '.join(map(str, planned))} fits",
                           command=base.command(), fits=False)
    sizes = [size for size, _ in fitting]
    contiguous = planned[planned.index(sizes[0]):planned.index(sizes[-1]) + 1] == sizes
    window = f"{sizes[0]}..{sizes[-1]}" if contiguous and len(sizes) > 1 else ", ".join(map(str, sizes))
    return row("l1_small_size", f"{window} fit (planned {', '.join(map(str, planned))})", fitting[0][1])


def trace_region_row(base: TtRequest, plan: TtPlan, progress: Callable[[str], None]) -> TtWhatIfRow | None:
    """When the trace region is too small: the trace buffers' total as the region; when
    DRAM ran out with a trace region carved from every bank: no region (trace buffers
    allocated in DRAM as needed, tt-metal #36999), as tt-inference-server PR #1828 did."""
    v, d = plan.verdict, plan.device
    if isinstance(v.failure, TraceRegionExceeded):
        size = v.failure.trace_buffers_size
    elif v.buffer_type is BufferType.DRAM and d.trace_region_size > 0:
        size = 0
    else:
        return None
    progress(f"what-if trace_region_size {size}")
    return row("trace_region_size", str(size), attempt(base.with_(trace_region_size=size)))


def to_dram_row(base: TtRequest, plan: TtPlan, progress: Callable[[str], None]) -> TtWhatIfRow | None:
    """When L1 failed: the largest L1 tensor an operation made and still live, its
    operation's output moved to DRAM interleaved."""
    v = plan.verdict
    if v.fits or v.buffer_type is not BufferType.L1:
        return None
    made = [plan.buffers[i] for i in v.responsible
            if plan.buffers[i].use is BufferUse.ACTIVATION and plan.buffers[i].first_op >= 0]
    if not made:
        return None
    name = plan.ops[made[0].first_op].name
    if name in base.to_dram:
        return None
    progress(f"what-if to_dram {name}")
    tried = attempt(base.with_(to_dram=(*base.to_dram, name)))
    settings = None
    if tried.plan is not None and tried.fits:
        q = tried.request
        settings = q.stack().reproduce(q.options, tried.plan.program, tried.plan.device, q.to_dram).settings
    return row("to_dram", f"{name} ({made[0].name}, {made[0].bytes_per_bank:,} B a bank of L1)", tried, settings)


def newest_build_row(base: TtRequest, plan: TtPlan, progress: Callable[[str], None]) -> TtWhatIfRow | None:
    """When a plan on a build other than the latest does not fit: the latest build's plan
    (its tt-metal and tt-mlir rules: devices/software.toml)."""
    if plan.fits or base.version is None:
        return None
    latest = load_device(base.machine, stack=plan.device.stack).version
    if plan.device.version == latest:
        return None
    progress(f"what-if tt_version {latest}")
    return row("tt_version", f"{latest} (the latest build tileplan models)", attempt(base.with_(version=latest)))


def uploads_to_come(plan: TtPlan, kind: BufferType) -> list[tuple[int, int]]:
    """For a run stopped while uploading: each upload of `kind` whose own buffer was not
    made, in the run's order, as (what its row-major form takes a bank, 0 for none; what
    its own buffer takes), each as the bank manager sizes it."""
    manager = DeviceAllocator(plan.device).manager(kind)
    made = {b.tensor for b in plan.buffers if b.first_op == UPLOAD and not b.staged}
    sizes = []
    for t in plan.program.uploads:
        tensor = plan.program.tensors[t]
        assert tensor.spec is not None
        if t in made or tensor.spec.memory.buffer_type is not kind:
            continue
        staged = 0 if tensor.staged is None else manager.need(BufferRequest.for_tensor(tensor.staged, plan.device))
        sizes.append((staged, manager.need(BufferRequest.for_tensor(tensor.spec, plan.device))))
    return sizes


def fragmentation_note(plan: TtPlan) -> str | None:
    """Whether another placement of the buffers of the failed type, over their lifetimes,
    fits the bank: the placement solver's answer. After the buffers placed come the
    failed request (live at the end) or, when the run stopped while uploading, every
    upload still to come in the run's order, each with its row-major form live while
    its own buffer is made (a row-major form still live at the failure is its upload's,
    counted there)."""
    v = plan.verdict
    if v.kind is not FailureKind.FRAGMENTATION or v.statistics is None or v.failure is None:
        return None
    end = plan.events
    kind = v.buffer_type
    assert kind is not None
    need = getattr(v.failure, "need", 0)
    rest = uploads_to_come(plan, kind) if v.op == UPLOAD else [(0, need)]
    forever = end + 2 * len(rest) + 1
    buffers = [Buffer(str(b.id), b.allocated, b.freed if b.freed is not None else forever, b.reserved)
               for b in plan.buffers if b.buffer_type is kind and not (b.staged and b.freed is None)]
    placed = len(buffers)
    for k, (staged, own) in enumerate(rest):
        at = end + 2 * k
        if staged:
            buffers.append(Buffer(f"staged {k}", at, at + 2, staged))
        buffers.append(Buffer(f"request {k}", at + 1, forever, own))
    count = f"{len(rest)} upload{'s' if len(rest) != 1 else ''}"
    what = (f"the {placed} {kind.value} buffers and the request" if v.op != UPLOAD else
            f"the {placed} {kind.value} buffers and the {count} still to come (each with its row-major form)")
    result = place(Problem(tuple(buffers)), v.statistics.total_allocatable, time_limit=PLACEMENT_SECONDS,
                   minimize=False)
    if result.fits:
        return (f"a different order would fit: the placement solver places {what} within the "
                f"{v.statistics.total_allocatable:,}-B bank (height {result.height:,}); tt-metal's first fit, in "
                f"the run's order, leaves no block of {need:,} B")
    if result.infeasible:
        return f"no order would fit: no placement of {what} stays within the {v.statistics.total_allocatable:,}-B bank"
    return None


def with_tt_what_if(report: TtReport, request: TtRequest, plan: TtPlan,
                    progress: Callable[[str], None] = lambda _: None) -> TtReport:
    """`report` with its what-if rows."""
    rows = frontend_rows(request, plan, progress)
    for extra in (l1_small_row(request, plan, progress), trace_region_row(request, plan, progress),
                  to_dram_row(request, plan, progress), newest_build_row(request, plan, progress)):
        if extra is not None:
            rows.append(extra)
    note = fragmentation_note(plan)
    what_if = TtWhatIf(command=request.command(), rows=tuple(rows), notes=(note,) if note else ())
    return report.with_(what_if=what_if)
