"""Placement of the worst tiles: does an address layout exist, not only a byte sum?

A plan that fits by bytes is placed; one that does not needs no placement to say so.
For each tile placed (the tile with the exact total peak, and the one with the
interleaved peak when it differs), every storage group with bytes on that tile is a
buffer live over the steps its members are live ([first, last + 1)), its size its
bytes there; each step's scratch is a buffer of that step; the exchange rows a buffer
of every step. The address space is the tile's budget: [0, standard budget) is the
non-interleaved region's usable part and [standard budget, budget) the interleaved
region's, so interleaved buffers (and interleaved scratch) must sit in the latter
while standard ones may sit anywhere (they overflow into the interleaved region).
Offsets are 8-byte aligned (the load grain). `tileplan.placement.place` places them
within the budget (greedy orders, then a bounded exact search: deterministic, its
node budget fixed); the result is "fits by placement" or names the buffers that end
above the budget at the step where they collide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from tileplan.model.machine import Machine
from tileplan.model.tiling import Shards
from tileplan.model.timeline import StepTable, Value
from tileplan.placement import Buffer, Problem, place
from tileplan.planner.exact import ExactAccounting, group_vectors

ALIGNMENT = 8
#: the exact search's node budget per tile: bounded work, the same answer on any machine
NODE_LIMIT = 500
TIME_LIMIT = 5.0


@dataclass(frozen=True, slots=True)
class PlacedBuffer:
    """One buffer on a placed tile: a storage group (`group`, its region), a step's
    scratch (`group` None, `what` "scratch") or the exchange rows."""

    what: str  # "group" | "scratch" | "exchange"
    group: int | None
    region: str
    lower: int
    upper: int
    size: int
    offset: int


@dataclass(frozen=True, slots=True)
class TilePlacement:
    tile: int
    why: str
    capacity: int
    height: int
    lower_bound: int
    optimal: bool
    fits: bool
    method: str
    buffers: tuple[PlacedBuffer, ...]
    peak_step: int
    largest_free: int
    #: proven: no placement within the capacity exists
    infeasible: bool = False

    @property
    def gaps(self) -> int:
        """Bytes the placement loses to gaps and alignment above the live total."""
        return self.height - self.lower_bound


def tiles_to_place(exact: ExactAccounting) -> list[tuple[int, str, int]]:
    """(tile, why, its peak step): the worst total tile, then the worst interleaved one."""
    _, tile, step = exact.peak("total")
    out = [(tile, "worst tile (total)", step)]
    _, itile, istep = exact.peak("interleaved")
    if itile != tile:
        out.append((itile, "worst tile (interleaved)", istep))
    return out


@dataclass(frozen=True, slots=True)
class PlacementSkipped:
    """A tile with more buffers than `BUFFER_LIMIT`: not placed (the verdict stays by
    bytes), said so in the report rather than left out silently."""

    tile: int
    buffers: int
    limit: int



#: buffers of one tile placed within a plan; beyond it a plan says it did not place
BUFFER_LIMIT = 4096


def place_tiles(values: Sequence[Value], steps: StepTable, shards: Mapping[int, Shards], machine: Machine,
                exact: ExactAccounting, exchange_bytes: int) -> tuple[TilePlacement, ...] | PlacementSkipped:
    """The worst tiles placed, or why not (a tile with more than `BUFFER_LIMIT` buffers)."""
    groups = group_vectors(values, shards, machine.tile_count)
    group_of = {v.id: v.storage_group for v in values}
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for vid, a, b in zip(steps.value_ids.tolist(), steps.first.tolist(), steps.last.tolist()):
        g = group_of[vid]
        first[g] = min(first.get(g, a), a)
        last[g] = max(last.get(g, b), b)
    out = []
    for tile, why, step in tiles_to_place(exact):
        drafts = _tile_buffers(tile, groups, first, last, steps, exchange_bytes)
        if len(drafts) > BUFFER_LIMIT:
            return PlacementSkipped(tile, len(drafts), BUFFER_LIMIT)
        out.append(place_buffers(tile, why, step, drafts, machine.budget_bytes,
                                 machine.budget_bytes - machine.interleaved_budget_bytes))
    return tuple(out)


def _tile_buffers(tile: int, groups: Mapping[int, tuple[str, np.ndarray]], first: Mapping[int, int],
                  last: Mapping[int, int], steps: StepTable, exchange_bytes: int) -> list[Draft]:
    drafts: list[Draft] = []
    for g in sorted(first):
        region, vec = groups[g]
        size = int(vec[tile])
        if size:
            drafts.append(("group", g, region, first[g], last[g] + 1, size))
    std, inter = steps.scratch_standard, steps.scratch_interleaved
    for i in np.flatnonzero(std | inter).tolist():
        for region, column in (("standard", std), ("interleaved", inter)):
            if column[i]:
                drafts.append(("scratch", None, region, i, i + 1, int(column[i])))
    if exchange_bytes and len(steps):
        drafts.append(("exchange", None, "standard", 0, len(steps), exchange_bytes))
    return drafts


Draft = tuple[str, "int | None", str, int, int, int]


def place_buffers(tile: int, why: str, peak_step: int, drafts: Sequence[Draft], capacity: int,
                  floor_interleaved: int) -> TilePlacement:
    """Place one tile's buffers (what, group, region, lower, upper, size) under
    `capacity`, interleaved ones at or above `floor_interleaved`."""
    room = {"interleaved": capacity - floor_interleaved, "standard": capacity}
    sizes = [min(_aligned(size), max(size, room[region])) for _, _, region, _, _, size in drafts]
    buffers = tuple(
        Buffer(str(i), lower, upper, size, ALIGNMENT if size % ALIGNMENT == 0 else 1,
               floor_interleaved if region == "interleaved" else 0, capacity if region == "interleaved" else None)
        for i, ((_, _, region, lower, upper, _), size) in enumerate(zip(drafts, sizes)))
    result = place(Problem(buffers), capacity, time_limit=TIME_LIMIT, node_limit=NODE_LIMIT)
    placed = tuple(PlacedBuffer(what, g, region, lower, upper, size, offset)
                   for (what, g, region, lower, upper, _), size, offset in zip(drafts, sizes, result.offsets))
    return TilePlacement(tile, why, capacity, result.height, result.lower_bound, result.optimal, result.fits,
                         result.method, placed, peak_step, largest_free(placed, peak_step, capacity),
                         result.infeasible)


def _aligned(size: int) -> int:
    return -(-size // ALIGNMENT) * ALIGNMENT


def largest_free(buffers: Sequence[PlacedBuffer], step: int, capacity: int) -> int:
    """The largest run of free bytes within [0, capacity) at `step`."""
    spans = sorted((b.offset, b.offset + b.size) for b in buffers if b.lower <= step < b.upper and b.size)
    best, at = 0, 0
    for lo, hi in spans:
        best = max(best, lo - at)
        at = max(at, hi)
    return max(best, capacity - at)


def placement_verdict(placements: Sequence[TilePlacement], fits_by_bytes: bool,
                      names: Mapping[int, str]) -> str:
    """"fits by bytes and by placement", "fits by bytes, not by placement: ..." naming
    the tile, the step and the buffers that collide, or "does not fit by bytes"."""
    if not fits_by_bytes:
        return "does not fit by bytes"
    bad = [p for p in placements if not p.fits]
    if not bad:
        return "fits by bytes and by placement"
    p = bad[0]
    over = colliding(p)
    step = over[0].lower if over else p.peak_step
    label = ", ".join(names.get(b.group, "?") if b.group is not None else b.what for b in over[:3]) or "none"
    proof = "no placement exists (proven)" if p.infeasible else "no placement found within the search budget"
    return (f"fits by bytes, not by placement: on tile {p.tile} {proof}; the best reaches {p.height} B of "
            f"{p.capacity} (from step {step}: {label})")


def colliding(p: TilePlacement) -> list[PlacedBuffer]:
    """The buffers that end above the capacity, highest first."""
    return sorted((b for b in p.buffers if b.offset + b.size > p.capacity), key=lambda b: -(b.offset + b.size))
