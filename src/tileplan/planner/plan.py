"""The planner: from a lowered program to sized values, live sets, usage and a verdict.

`plan_program` runs named passes in order, each data in, data out:
`size_values` -> `compute_live_ranges` -> `find_scope` -> `build_steps` (live sets
and usage) -> `find_peaks` -> `judge_budget`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tileplan.errors import TilingError
from tileplan.lowering.core import OperationInfo, Options
from tileplan.lowering.policy import Policy
from tileplan.lowering.program import Lowering, lower_program
from tileplan.model.ir import Program
from tileplan.model.machine import Machine
from tileplan.model.tiling import Shards, round_up, shards_of
from tileplan.model.timeline import Rejection, Step, Value
from tileplan.planner.exact import ExactAccounting, account
from tileplan.planner.exchange import exchange_rows
from tileplan.planner.placed import TilePlacement, place_tiles
from tileplan.planner.usage import BudgetVerdict, Peaks, find_peaks, judge_budget, step_usage, storage_groups


@dataclass(frozen=True, slots=True)
class LiveRange:
    """Steps [first, last] (inclusive) during which a value is live."""

    first: int
    last: int

    def __post_init__(self) -> None:
        assert 0 <= self.first <= self.last, self


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything a report needs. `scope` is `program` or `rejected-op<N>`."""

    program: Program
    machine: Machine
    policy: str
    options: Options
    scope: str
    values: tuple[Value, ...]
    steps: tuple[Step, ...]
    rejections: tuple[Rejection, ...]
    operations: tuple[OperationInfo, ...]
    rejected_operation: tuple[int, str, str] | None
    peaks: Peaks
    verdict: BudgetVerdict
    exchange_rows: int
    shards: dict[int, Shards]
    exact: ExactAccounting | None
    resident: frozenset[int]
    #: products planned over the temporary-memory cap: (operation, name, bytes per tile)
    over_cap: tuple[tuple[int, str, int], ...] = ()
    #: address placements of the worst tiles (with exact accounting)
    placements: tuple[TilePlacement, ...] = ()

    @property
    def exchange_bytes(self) -> int:
        """What the exchange rows cost on every tile."""
        return self.exchange_rows * self.machine.exchange_row_bytes


def size_values(drafts: tuple[Value, ...]) -> tuple[dict[int, Shards], dict[int, str]]:
    """Shards of every value, or why it has none."""
    shards: dict[int, Shards] = {}
    reasons: dict[int, str] = {}
    for v in drafts:
        try:
            shards[v.id] = shards_of(v.layout, v.shape, v.name)
        except TilingError as e:
            reasons[v.id] = e.detail
    return shards, reasons


def compute_live_ranges(lowering: Lowering) -> dict[int, LiveRange]:
    """Declared tensors live from step 0, other values from the step writing them; all
    until the last step reading them (program outputs: until the last step). The steps
    of a repeat block stand for its first iteration, the one with the most still to
    come: the members of a parameter family that later iterations read (layers 1..26's
    weights, read by the same step as layer 0's) stay live to the block's last step."""
    first: dict[int, int] = {v: 0 for v in range(lowering.declared)}
    last: dict[int, int] = {}
    block_end = {}
    for a, b in lowering.blocks:
        for i in range(a, b + 1):
            block_end[i] = (a, b)
    for i, s in enumerate(lowering.steps):
        for v in s.writes:
            first.setdefault(v, i)
        span = block_end.get(i)
        for v in s.reads:
            last[v] = span[1] if span is not None and v in lowering.later_members else i
    end = len(lowering.steps) - 1
    for v in lowering.outputs:
        last[v] = end
    return {v: LiveRange(f, max(f, last.get(v, f))) for v, f in first.items() if end >= 0}


def find_scope(lowering: Lowering, ranges: dict[int, LiveRange], unsized: set[int]
               ) -> tuple[int, str, tuple[int, str] | None]:
    """(steps kept, scope, rejected operation and reason). Planning stops at the first
    operation with a step where an unrepresentable value is live, or at an operation
    that could not be lowered at all."""
    first_bad = None
    for v in unsized:
        r = ranges.get(v)
        if r is not None and (first_bad is None or r.first < first_bad):
            first_bad = r.first
    if first_bad is not None:
        op = lowering.steps[first_bad].source
        kept = max(i for i, s in enumerate(lowering.steps) if s.source == op) + 1
        return kept, f"rejected-op{op}", (op, "unrepresentable values are live in its steps")
    if lowering.failed is not None:
        op, reason = lowering.failed
        return len(lowering.steps), f"rejected-op{op}", (op, reason)
    return len(lowering.steps), "program", None


def build_steps(lowering: Lowering, kept: int, ranges: dict[int, LiveRange]) -> list[tuple[int, ...]]:
    """The live set of each kept step, sorted by value id (a difference array)."""
    starts: list[list[int]] = [[] for _ in range(kept)]
    for v, r in ranges.items():
        if r.first < kept:
            starts[r.first].append(v)
    live: list[tuple[int, ...]] = []
    current: set[int] = set()
    for i in range(kept):
        current.update(starts[i])
        current = {v for v in current if ranges[v].last >= i}
        live.append(tuple(sorted(current)))
    return live


def plan_program(program: Program, machine: Machine, policy: Policy, options: Options, place: bool = True) -> Plan:
    """The plan of `program`; `place` places the worst tiles' buffers in their address
    space (`tileplan.planner.placed`)."""
    lowering = lower_program(program, machine, policy, options)
    shards, reasons = size_values(lowering.values)
    ranges = compute_live_ranges(lowering)
    kept, scope, rejected = find_scope(lowering, ranges, set(reasons))
    live_sets = build_steps(lowering, kept, ranges)
    in_report = sorted({v for live in live_sets for v in live})

    values = []
    for vid in in_report:
        d = lowering.values[vid]
        if vid in shards:
            shard = shards[vid].largest_bytes(d.precision)
            aligned = round_up(shard, d.alignment_bytes) if d.alignment_bytes else shard
            d = replace(d, shard_bytes=shard, aligned_bytes=aligned, bytes=aligned * d.copies)
        values.append(d)
    groups = storage_groups(values)
    value_group = {v.id: v.storage_group for v in values}
    steps = []
    for i in range(kept):
        s = lowering.steps[i]
        scratch = s.scratch_map()
        steps.append(Step(i, s.source, s.operation, s.execution_count, live_sets[i], scratch,
                          step_usage(live_sets[i], scratch, value_group, groups)))
    peaks = find_peaks(steps, groups, value_group)
    rows = exchange_rows(s.operation for s in steps)
    resident = frozenset(v.id for v in values if v.resident)
    exact = account(values, steps, shards, machine.tile_count, set(resident)) \
        if steps and all(v.id in shards for v in values) else None
    verdict = judge_budget(steps, peaks, machine.budget_bytes, machine.interleaved_budget_bytes,
                           rows * machine.exchange_row_bytes, complete=scope == "program", exact=exact)
    placements = place_tiles(values, steps, shards, machine, exact, rows * machine.exchange_row_bytes) \
        if exact is not None and place and verdict.fits else ()
    rejections = tuple(Rejection(v, lowering.values[v].name, reasons[v]) for v in in_report if v in reasons)
    ops = tuple(o for o in lowering.operations if any(s.source == o.index for s in steps)) \
        if scope != "program" else lowering.operations
    rejected_op = None
    if rejected is not None:
        index, reason = rejected
        name = next((o.name for o in program.operations() if o.index == index), f"operation {index}")
        rejected_op = (index, name, reason)
    return Plan(program, machine, policy.name, options, scope, tuple(values), tuple(steps), rejections, ops,
                rejected_op, peaks, verdict, rows, {v: shards[v] for v in in_report if v in shards}, exact, resident,
                lowering.over_cap, placements)
