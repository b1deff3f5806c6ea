"""The Tenstorrent planner: tt-metal's allocator walked over a TTNN program, exactly.

`plan_tt(program, device)` replays what the run does to one chip's memory, in order:

1. the uploads (`program.uploads`): each tensor's buffer allocated as its spec says
   (`BufferRequest.for_tensor`), L1 top-down, DRAM bottom-up (bank.py); a tensor with a
   staged form first allocates that (the row-major buffer the runtime tilizes from), then
   its own, then frees the staged one (`Tensor.staged`);
2. each operation: its rule's plan (`ops.plan_op`) with the lowest L1 address occupied
   before it (`OpTarget.lowest_occupied_l1`: the matmul's automatic config searches for
   a block that fits below it, matmul_utilities.cpp `get_max_l1_space`, read when the
   device operation is created, before its output is allocated); then for each of its
   programs in order: the buffers that program needs allocated (an intermediate between
   programs, an L1_SMALL config tensor, the output: `DeviceBuffer.live[0]`), its
   circular buffers placed from l1_unreserved_base upward (`cb_region`) and checked
   against the L1 size (grow) and the lowest L1 buffer (clash), and the operation's own
   buffers its last reader was freed (`live[1]`, outputs excepted); with the device's
   program cache (devices/software.toml `program_cache`) a config tensor is the cached
   program's: kept to the end, and made once for each distinct program
   (`DeviceBuffer.cache_key`: a later run of the same program makes none);
3. the operation's frees (`program.frees[k]`: `ttnn.deallocate` after it);
4. the traces captured after it (`program.traces`): each trace buffer placed as
   MeshTrace::populate_mesh_buffer places it (trace.py: the trace region's running
   total checked against `trace_region_size`, then the TRACE bank, or top-down DRAM when
   the region is dynamic), kept to the end.

The first failure is the verdict, in tt-metal's words (messages.py), and planning stops
there as the run would: the buffers placed so far and the programs run so far are the
plan. An operation whose output shares its input's buffer (a reshape that is a view, a
pad that fills the tile padding in place) allocates nothing: the output names the same
buffer, which is freed when the last of the tensors naming it is.

Worked example (tt-mlir #8044, the fragmentation OOM): on n150 (72 L1 banks of
1,329,888 B) a program that leaves 417,792 B a bank allocated, in blocks that leave at
most 522,240 B free in one piece, then asks for 48 shards of 552,960 B stops with
"Out of Memory: Not enough space to allocate 26542080 B L1 buffer across 48 banks,
where each bank needs to store 552960 B, but bank size is 1329888 B (allocated: 417792
B, free: 912096 B, largest free block: 522240 B)" (tests/test_tt_plan_errors.py builds it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NoReturn

from tileplan.errors import InputError, ModelError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent import messages
from tileplan.targets.tenstorrent.bank import Allocation, BufferRequest, DeviceAllocator, OutOfMemory, TooManyShards
from tileplan.targets.tenstorrent.cb_region import (
    CbFailure, CbRegionError, allocate_circular_buffers, validate_circular_buffer_region)
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.memory import BufferType, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole, DeviceBuffer, OpPlan, OpRequest, OpTarget)
from tileplan.targets.tenstorrent.planned import (
    UPLOAD, BufferUse, Failure, FailureKind, PlannedBuffer, PlannedOp, PlannedProgram, TtPlan, Verdict)
from tileplan.targets.tenstorrent.program import Op, TtProgram
from tileplan.targets.tenstorrent.tiles import round_up
from tileplan.targets.tenstorrent.trace import TraceRegion, TraceRegionExceeded

_USE_OF_ROLE = {Role.INPUT: BufferUse.INPUT, Role.WEIGHT: BufferUse.PARAMETER, Role.BUFFER: BufferUse.BUFFER}


def op_target(device: Device) -> OpTarget:
    """The device facts an operation's rule reads: the worker grid (ttnn's
    `compute_with_storage_grid_size`), bank counts, L1 size and the allocator's base."""
    return OpTarget(arch=device.arch, grid=(device.worker_grid.columns, device.worker_grid.rows),
                    l1_banks=device.l1_banks, dram_banks=device.dram_banks, l1_size=device.l1_size,
                    l1_unreserved_base=device.l1_base, l1_free=device.l1_bank_size, l1_alignment=device.l1_alignment,
                    dram_alignment=device.dram_alignment)


class _Stop(Exception):
    """The run stops here (the verdict is set)."""


@dataclass(slots=True)
class _Live:
    """A placed buffer while it lives: its allocation and the tensors naming it."""

    allocation: Allocation
    record: int
    names: int


class _Walk:
    """The allocator's state while the program is replayed (mutable; `plan_tt` owns it)."""

    def __init__(self, program: TtProgram, device: Device) -> None:
        self.program = program
        self.device = device
        self.allocator = DeviceAllocator(device)
        self.target = op_target(device)
        self.buffers: list[PlannedBuffer] = []
        self.ops: list[PlannedOp] = []
        self.programs: list[PlannedProgram] = []
        self.specs: dict[int, TensorSpec] = {}
        self.of_tensor: dict[int, _Live] = {}
        self.live: dict[int, _Live] = {}  # buffer id -> live buffer
        self.allocated = {t: 0 for t in BufferType}
        self.events = 0
        #: the cache keys of the config tensors cached programs hold (`held`)
        self.program_cache: set[str] = set()
        self.verdict = Verdict(True)
        self.trace = TraceRegion(self.allocator)
        self.trace_total = 0

    # -- the allocator ------------------------------------------------------------------
    def allocate(self, request: BufferRequest, use: BufferUse, op: int, tensor: int | None,
                 module: str | None, staged: bool = False) -> _Live:
        placed = self.allocator.allocate(request)
        if not isinstance(placed, Allocation):
            self.fail(placed, op, None, request.name, request.buffer_type)
        sharded = request.shards is not None
        record = PlannedBuffer(
            id=len(self.buffers), name=request.name, use=use, buffer_type=request.buffer_type, bytes=request.size,
            page_bytes=request.page_size, banks=placed.banks, bytes_per_bank=placed.bytes_per_bank,
            reserved=placed.reserved, address=placed.address, sharded=sharded, allocated=self.events, first_op=op,
            tensor=tensor, module=module, staged=staged)
        self.events += 1
        self.buffers.append(record)
        self.allocated[request.buffer_type] += placed.reserved
        live = _Live(placed, record.id, 0)
        self.live[record.id] = live
        return live

    def free(self, live: _Live, op: int) -> None:
        self.allocator.deallocate(live.allocation)
        self.allocated[live.allocation.request.buffer_type] -= live.allocation.reserved
        self.buffers[live.record] = replace(self.buffers[live.record], freed=self.events, last_op=op)
        self.events += 1
        del self.live[live.record]

    def name_tensor(self, tensor: int, live: _Live) -> None:
        live.names += 1
        self.of_tensor[tensor] = live

    def free_tensor(self, tensor: int, op: int) -> None:
        live = self.of_tensor.pop(tensor)
        live.names -= 1
        if live.names == 0:
            self.free(live, op)

    # -- the verdict ----------------------------------------------------------------------
    def fail(self, failure: Failure, op: int, program: int | None, request_name: str | None,
             buffer_type: BufferType) -> NoReturn:
        """Record the first failure as the verdict and stop the walk."""
        if isinstance(failure, OutOfMemory):
            kind = FailureKind(failure.kind.value)
        elif isinstance(failure, TooManyShards):
            kind = FailureKind.SHARDS
        elif isinstance(failure, CbRegionError):
            kind = FailureKind.CB_GROW if failure.kind is CbFailure.GROW else FailureKind.CB_CLASH
        else:
            kind = FailureKind.TRACE
        live = [self.buffers[i] for i in self.live if self.buffers[i].buffer_type is buffer_type]
        if kind is FailureKind.CB_CLASH:
            live.sort(key=lambda b: (b.address, -b.reserved, b.id))
        else:
            live.sort(key=lambda b: (-b.reserved, b.id))
        stats = failure.statistics if isinstance(failure, OutOfMemory) else None
        self.verdict = Verdict(False, messages.message(failure, self.device.software), kind, buffer_type, op,
                               program, request_name, tuple(b.id for b in live), failure, stats)
        raise _Stop

    # -- the walk ---------------------------------------------------------------------------
    def upload(self) -> None:
        for t in self.program.uploads:
            tensor = self.program.tensors[t]
            assert tensor.spec is not None
            use = _USE_OF_ROLE.get(tensor.role, BufferUse.ACTIVATION)
            staged = None
            if tensor.staged is not None:
                request = BufferRequest.for_tensor(tensor.staged, self.device, f"{tensor.name} (row-major, to tilize)")
                staged = self.allocate(request, use, UPLOAD, t, tensor.module, staged=True)
            request = BufferRequest.for_tensor(tensor.spec, self.device, tensor.name)
            live = self.allocate(request, use, UPLOAD, t, tensor.module)
            if staged is not None:
                self.free(staged, UPLOAD)
            self.name_tensor(t, live)
            self.specs[t] = tensor.spec

    def run(self, op: Op) -> None:
        plan = self.plan(op)
        outputs = self.output_buffers(op, plan)
        count = len(plan.programs)
        self.ops.append(PlannedOp(op.index, op.name, op.kind, (), op.module, op.layer))
        own: dict[int, _Live] = {}
        for p in range(max(count, 1)):
            for k, buf in enumerate(plan.buffers):
                if buf.live[0] != p:
                    continue
                key = buf.cache_key
                if key is not None and self.held(buf):
                    if key in self.program_cache:
                        continue  # a program-cache hit: the cached program holds its own
                    self.program_cache.add(key)
                own[k] = self.allocate_op_buffer(op, buf, outputs.get(k))
            if p < count:
                self.run_program(op, p, plan)
            for k, buf in enumerate(plan.buffers):
                if buf.live[1] == p and buf.role is not BufferRole.OUTPUT and k in own and not self.held(buf):
                    self.free(own.pop(k), op.index)
        holder = {i: k for k, i in outputs.items()}
        for i, t in enumerate(op.outputs):
            self.specs[t] = plan.outputs[i]
            if i in holder:
                self.name_tensor(t, own[holder[i]])
            else:  # a view: the output names its input's buffer
                self.name_tensor(t, self.of_tensor[op.inputs[0]])
        for t in self.program.frees[op.index]:
            self.free_tensor(t, op.index)
        for after, size in self.program.traces:
            if after == op.index:
                self.capture(op, size)

    def capture(self, op: Op, stream_bytes: int) -> None:
        """One trace buffer (trace.TraceRegion's rule, through this walk's allocator)."""
        request = replace(self.trace.request(stream_bytes), name=f"trace after {op.name}")
        self.trace_total += request.size
        configured = self.device.trace_region_config
        if request.buffer_type is BufferType.TRACE and self.trace_total > configured:
            self.fail(TraceRegionExceeded(self.trace_total, 0, configured), op.index, None, request.name,
                      BufferType.TRACE)
        self.allocate(request, BufferUse.TRACE, op.index, None, op.module)

    def plan(self, op: Op) -> OpPlan:
        target = replace(self.target, lowest_occupied_l1=self.allocator.lowest_occupied_l1(),
                         l1_free=self.allocator.manager(BufferType.L1).statistics().free)
        request = OpRequest(tuple(self.specs[t] for t in op.inputs), op.out, target, op.compute)
        try:
            plan = plan_op(op.kind, request, op.attrs)
        except InputError as e:
            raise ModelError(e.detail, f"operation {op.index} ({op.name}, {op.kind.value})") from None
        if len(plan.outputs) != len(op.outputs):
            raise ModelError(f"{op.kind.value} makes {len(plan.outputs)} outputs, the program names "
                             f"{len(op.outputs)}", f"operation {op.index} ({op.name})")
        return plan

    def output_buffers(self, op: Op, plan: OpPlan) -> dict[int, int]:
        """Which of the plan's buffers holds which output (buffer index -> output index):
        the output buffer made for the output's spec (by identity, else by its name)."""
        found: dict[int, int] = {}
        for k, buf in enumerate(plan.buffers):
            if buf.role is not BufferRole.OUTPUT:
                continue
            i = next((i for i, spec in enumerate(plan.outputs) if buf.spec is spec), None)
            if i is None and buf.name.startswith("output") and buf.name[6:].isdigit():
                i = int(buf.name[6:])
            if i is None or not 0 <= i < len(op.outputs) or i in found.values():
                raise ModelError(f"{op.kind.value}'s buffer {buf.name} matches no output",
                                 f"operation {op.index} ({op.name})")
            found[k] = i
        views = [i for i in range(len(op.outputs)) if i not in found.values()]
        if views and (len(views) > 1 or not op.inputs or (plan.programs and not plan.in_place)):
            raise ModelError(f"{op.kind.value}: outputs {views} have no buffer (only a single-output view shares "
                             "its input's)", f"operation {op.index} ({op.name})")
        return found

    def held(self, buf: DeviceBuffer) -> bool:
        """A config tensor the device's program cache keeps: the cached program that made
        it holds it to the end (the halo's and a conv's factories keep their config
        tensors' storage in the cached program; tt-xla's runtime caches programs from
        2025-10-29, ttnn from 2025-06: devices/software.toml `program_cache`)."""
        return buf.role is BufferRole.CONFIG and buf.cache_key is not None and self.device.software.program_cache

    def allocate_op_buffer(self, op: Op, buf: DeviceBuffer, output: int | None) -> _Live:
        alignment = self.device.alignment(buf.buffer_type)
        page = round_up(buf.page_bytes, alignment)
        sharded = buf.spec is not None and buf.spec.memory.shard is not None
        tensor = op.outputs[output] if output is not None else None
        if output is not None:
            name, use = self.program.tensors[tensor].name, BufferUse.ACTIVATION  # type: ignore[index]
        else:
            name = f"{op.name}.{buf.name}"
            use = BufferUse.CONFIG if buf.role is BufferRole.CONFIG else BufferUse.OP_INTERMEDIATE
        request = BufferRequest(buf.buffer_type, buf.pages * page, page, buf.banks if sharded else None, name=name)
        return self.allocate(request, use, op.index, tensor, op.module)

    def run_program(self, op: Op, p: int, plan: OpPlan) -> None:
        program = plan.programs[p]
        index = len(self.programs)
        layout = allocate_circular_buffers(program.circular_buffers, self.device.l1_base, self.device.dram_alignment,
                                           index)
        lowest = self.allocator.lowest_occupied_l1()
        self.ops[-1] = replace(self.ops[-1], programs=(*self.ops[-1].programs, index))
        self.programs.append(PlannedProgram(
            op=op.index, index=p, program=program, event=self.events, layout=layout, lowest_l1=lowest,
            l1_allocated=self.allocated[BufferType.L1], l1_small_allocated=self.allocated[BufferType.L1_SMALL],
            dram_allocated=self.allocated[BufferType.DRAM],
            l1_buffers=tuple(sorted(i for i in self.live if self.buffers[i].buffer_type is BufferType.L1))))
        error = validate_circular_buffer_region(layout, self.device.l1_size, lowest)
        if error is not None:
            self.fail(error, op.index, index, None, BufferType.L1)


def plan_tt(program: TtProgram, device: Device) -> TtPlan:
    """Plan `program` on one chip of `device` (see the module docstring). A frontend
    makes the program per chip (n300's tensor parallel: each chip's share)."""
    walk = _Walk(program, device)
    try:
        walk.upload()
        for op in program.ops:
            walk.run(op)
    except _Stop:
        pass
    return TtPlan(program, device, tuple(walk.buffers), tuple(walk.ops), tuple(walk.programs), walk.verdict,
                  walk.events)
