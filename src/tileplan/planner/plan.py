"""The planner: from a lowered program to sized values, live sets, usage and a verdict.

`plan_program` runs named passes in order, each data in, data out:
`lower_program` (values sized there, once per layout, shape and precision) ->
`compute_live_ranges` -> `find_scope` -> `build_steps` (live intervals and usage, as columns) -> `find_peaks` ->
`estimate_non_tensor` (with the default policy, the machine then counts it against the tile) -> exact accounting ->
`judge_budget` -> placement. The passes work on arrays (numpy): the
values are columns (`ValueTable`), the steps too (`StepTable`), and no object is made
per value, per step or per live entry unless one is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from tileplan.kernel.fragment import StepKind
from tileplan.kernel.options import Options
from tileplan.lowering.policy import Policy
from tileplan.lowering.columns import LoweredOperations
from tileplan.lowering.program import Lowering, lower_program
from tileplan.model.ir import Program
from tileplan.model.info import Mode
from tileplan.model.machine import Machine, MemoryAccounting
from tileplan.model.role import DECLARED, HELD
from tileplan.model.tiling import Shards
from tileplan.model.timeline import Rejection, StepTable
from tileplan.model.values import ROLE_CODE, ValueTable
from tileplan.runtime import without_gc
from tileplan.planner.exact import ExactAccounting, account, merged_intervals
from tileplan.planner.exchange import exchange_rows
from tileplan.planner.nontensor import NonTensor, estimate_non_tensor, uses
from tileplan.planner.placed import PlacementSkipped, TilePlacement, place_tiles
from tileplan.planner.usage import (
    BudgetVerdict, GroupColumns, Peaks, find_peaks, group_columns, judge_budget, region_usage,
)


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything a report needs. `scope` is `program` or `rejected-op<N>`."""

    program: Program
    machine: Machine
    policy: str
    options: Options
    scope: str
    values: ValueTable
    steps: StepTable
    rejections: tuple[Rejection, ...]
    operations: LoweredOperations
    rejected_operation: tuple[int, str, str] | None
    peaks: Peaks
    verdict: BudgetVerdict
    exchange_rows: int
    shards: Mapping[int, Shards]
    exact: ExactAccounting | None
    resident: frozenset[int]
    #: the memory that is not tensors, per tile (`tileplan.planner.nontensor`): in the
    #: verdict with `MemoryAccounting.ALL_MEMORY` (`machine` is then the machine
    #: counting it: `Machine.counting_all_memory`), beside it otherwise
    non_tensor: NonTensor
    accounting: MemoryAccounting
    #: products planned over the temporary-memory cap: (operation, name, bytes per tile)
    over_cap: tuple[tuple[int, str, int], ...] = ()
    #: address placements of the worst tiles (with exact accounting)
    placements: tuple[TilePlacement, ...] = ()
    #: why the worst tiles were not placed (too many buffers), when so
    placement_skipped: PlacementSkipped | None = None

    @property
    def exchange_bytes(self) -> int:
        """What the exchange rows cost on every tile."""
        return self.exchange_rows * self.machine.exchange_row_bytes


def compute_live_ranges(lowering: Lowering, always_live: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) step of every value of the lowering, -1 for a value never live.
    Declared tensors live from step 0, other values from the step writing them; all
    until the last step reading them (program outputs: until the last step). With
    `always_live` (the default policy), parameters, buffers and constants live to the
    last step: in Poplar they are variables, allocated for the whole program, which
    runs again and again (PopVision's "always live" memory). The steps
    of a repeat block stand for its first iteration, the one with the most still to
    come: the members of a parameter family that later iterations read (layers 1..26's
    weights, read by the same step as layer 0's) stay live to the block's last step."""
    n = len(lowering.values)
    steps = lowering.steps
    first = np.full(n, n_steps := len(steps), dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    end = n_steps - 1
    if end < 0:
        return np.full(n, -1, dtype=np.int64), last
    first[:lowering.declared] = 0
    every = np.arange(n_steps, dtype=np.int64)
    writes = steps.write_ids
    np.minimum.at(first, writes, np.repeat(every, np.diff(steps.write_starts)))
    reads = steps.read_ids
    read_step = np.repeat(every, np.diff(steps.read_starts))
    block_end = np.full(n_steps, -1, dtype=np.int64)
    for a, b in lowering.blocks:
        block_end[a:b + 1] = b
    later = np.zeros(n, dtype=bool)
    later[list(lowering.later_members)] = True
    # a read in a repeat block of a family member later iterations read lasts to the
    # block's end (the last such assignment in step order is also the largest)
    until = np.where((block_end[read_step] >= 0) & later[reads], block_end[read_step], read_step)
    np.maximum.at(last, reads, until)
    last[list(lowering.outputs)] = end
    if always_live:
        held = np.isin(lowering.values.role[:lowering.declared], [ROLE_CODE[r] for r in HELD])
        last[:lowering.declared][held] = end
    live = first < n_steps
    return np.where(live, first, -1), np.where(live, np.maximum(first, last), -1)


def find_scope(lowering: Lowering, first: np.ndarray, unsized: Iterable[int]
               ) -> tuple[int, str, tuple[int, str] | None]:
    """(steps kept, scope, rejected operation and reason). Planning stops at the first
    operation with a step where an unrepresentable value is live, or at an operation
    that could not be lowered at all."""
    starts = [int(first[v]) for v in unsized if first[v] >= 0]
    source = lowering.steps.source
    if starts:
        op = int(source[min(starts)])
        kept = int(np.flatnonzero(source == op).max()) + 1
        return kept, f"rejected-op{op}", (op, "unrepresentable values are live in its steps")
    if lowering.failed is not None:
        op, reason = lowering.failed
        return len(source), f"rejected-op{op}", (op, reason)
    return len(source), "program", None


def build_steps(lowering: Lowering, kept: int, values: ValueTable, groups: GroupColumns,
                first: np.ndarray, last: np.ndarray) -> tuple[StepTable, tuple[StepKind, ...], tuple[bool, ...]]:
    """The kept steps as columns: their usage of each region (the live storage groups,
    each once, + scratch; difference arrays over the groups' live intervals) and the
    values' live intervals; with each distinct operation text's step kind and
    exchange flag (its steps', which its text states too)."""
    ids = values.id
    f, e = first[ids], np.minimum(last[ids], kept - 1)
    g_first, g_last, g_ids = merged_intervals(values.storage_group, f, e)
    steps = lowering.steps
    templates = steps.templates
    template = steps.template[:kept]
    by_template = np.array([(sum(b for r, b in t.scratch if r == "standard"),
                             sum(b for r, b in t.scratch if r != "standard")) for t in templates],
                           dtype=np.int64).reshape(len(templates), 2)
    scratch_std, scratch_inter = by_template[template, 0], by_template[template, 1]
    std, std_known = region_usage(groups, g_first, g_last, g_ids, kept, "standard")
    inter, inter_known = region_usage(groups, g_first, g_last, g_ids, kept, "interleaved")
    # texts are numbered in order of first use; the kind and exchange of a text are its first step's
    codes: dict[str, int] = {}
    text_code = np.array([codes.setdefault(t.text, len(codes)) for t in templates], dtype=np.int64)
    by_step = text_code[template] if len(templates) else np.zeros(0, dtype=np.int64)
    used, first_step = np.unique(by_step, return_index=True)
    order = np.argsort(first_step, kind="stable")
    rank = np.zeros(len(codes), dtype=np.int64)
    rank[used[order]] = np.arange(len(used))
    texts = list(codes)
    firsts = [templates[int(template[i])] for i in first_step[order].tolist()]
    table = StepTable(
        operation_texts=tuple(texts[c] for c in used[order].tolist()), source=steps.source[:kept],
        operation=rank[by_step], execution_count=steps.execution_count[:kept], scratch_standard=scratch_std,
        scratch_interleaved=scratch_inter, usage_standard=std + scratch_std, usage_interleaved=inter + scratch_inter,
        standard_known=std_known, interleaved_known=inter_known, value_ids=ids, first=f, last=e)
    return table, tuple(t.kind for t in firsts), tuple(t.exchange for t in firsts)


@without_gc
def plan_program(program: Program, machine: Machine, policy: Policy, options: Options, place: bool = True) -> Plan:
    """The plan of `program`; `place` places the worst tiles' buffers in their address
    space (`tileplan.planner.placed`)."""
    lowering = lower_program(program, machine, policy, options)
    reasons = lowering.unsized
    first, last = compute_live_ranges(lowering, policy.always_live)
    kept, scope, rejected = find_scope(lowering, first, reasons)
    in_report = np.flatnonzero((first >= 0) & (first < kept))
    values = lowering.values.take(in_report)
    shards = values.shards()
    groups = group_columns(values)
    steps, kinds, exchanging = build_steps(lowering, kept, values, groups, first, last)
    peaks = find_peaks(steps, groups)
    counted = uses(steps.operation, steps.execution_count, len(steps.operation_texts),
                   program.info.mode is Mode.TRAINING, options.outlining)
    non_tensor = estimate_non_tensor(steps.operation_texts, kinds, exchanging, counted, options.outlining)
    if policy.memory is MemoryAccounting.ALL_MEMORY:
        machine = machine.counting_all_memory(non_tensor.total)
    rows = exchange_rows(np.bincount(steps.operation, minlength=len(steps.operation_texts)).tolist(), exchanging)
    # always live: the held tensors (default policy: weights, buffers and training state
    # live for the whole program, as Poplar's variables); the reference policy's
    # resident values: every declared tensor
    always = HELD if policy.always_live else DECLARED
    resident = frozenset(values.id[np.isin(values.role, [ROLE_CODE[r] for r in always])].tolist())
    complete = shards.complete()
    exact = account(values, steps, shards, machine.tile_count, set(resident)) if len(steps) and complete else None
    verdict = judge_budget(steps, peaks, machine.budget_bytes, machine.interleaved_budget_bytes,
                           rows * machine.exchange_row_bytes, complete=scope == "program", exact=exact)
    placed = place_tiles(values, steps, shards, machine, exact, rows * machine.exchange_row_bytes) \
        if exact is not None and place and verdict.fits else ()
    placements, skipped = (placed, None) if isinstance(placed, tuple) else ((), placed)
    unsized = values.unsized()
    rejections = tuple(Rejection(v, values.names[values.position(v)], unsized[v]) for v in unsized)
    if scope != "program":
        sources = set(steps.source.tolist())
        ops = lowering.operations.where(sources)
    else:
        ops = lowering.operations
    rejected_op = None
    if rejected is not None:
        index, reason = rejected
        name = next((o.name for o in program.operations() if o.index == index), f"operation {index}")
        rejected_op = (index, name, reason)
    return Plan(program, machine, policy.name, options, scope, values, steps, rejections, ops,
                rejected_op, peaks, verdict, rows, shards, exact, resident, non_tensor,
                policy.memory, lowering.over_cap, placements, skipped)
