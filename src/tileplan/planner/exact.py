"""Exact per-tile accounting from the tile maps.

The estimate (the reference's model) adds each live allocation's largest shard; the
shards of one value differ by tile, so that sum overstates the worst real tile. Here
every value's bytes on every tile come from its tile map (`Shards.bytes_per_tile`),
rounded up per tile to its alignment, a storage group holds the per-tile maximum of
its members, and a step's usage on a tile is the sum of its live groups on that tile
plus the step's scratch, which is charged to every tile at its stated size (the only
part that stays an upper bound).

`account` sweeps the steps once, adding a group's per-tile vector when it becomes live
and removing it when it dies (numpy over the tiles, no Python loop over tiles), and
keeps per step the worst tile and per tile its peak: memory O(groups x tiles) for the
vectors and O(tiles) for the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Mapping, Sequence

import numpy as np

from tileplan.model.tiling import Shards
from tileplan.model.timeline import Step, Value

REGIONS = ("standard", "interleaved")


def value_tile_bytes(value: Value, shards: Shards) -> np.ndarray:
    """The bytes a value takes on each tile: its stored shard there, rounded up to its
    alignment where it holds anything, times its copies."""
    per_tile = shards.bytes_per_tile(value.precision)
    if value.alignment_bytes and value.alignment_bytes > 1:
        a = value.alignment_bytes
        per_tile = np.where(per_tile > 0, (per_tile + a - 1) // a * a, 0)
    return per_tile * value.copies


@dataclass(frozen=True, slots=True)
class StepWorst:
    """A step's worst tile (largest standard + interleaved + scratch) and its figures."""

    tile: int
    total: int
    standard: int
    interleaved: int
    max_standard: int
    max_standard_tile: int
    max_interleaved: int
    max_interleaved_tile: int


@dataclass(frozen=True, slots=True)
class ExactAccounting:
    """Per step, the worst tile; per tile, its peak (standard + interleaved + scratch),
    the first step reaching it, and how much of that peak is resident parameters (the
    declared tensors, weights above all) rather than step-dependent (activations,
    re-laid-out operands, scratch). Arrays are int64 over the tiles, read-only."""

    steps: tuple[StepWorst, ...]
    tile_peak: np.ndarray
    tile_peak_step: np.ndarray
    tile_peak_interleaved: np.ndarray
    tile_peak_resident: np.ndarray

    def peak(self, region: str) -> tuple[int, int, int]:
        """(bytes, tile, step) of a region's exact peak ("total", "standard" or
        "interleaved"): the first step reaching it, its worst tile."""
        fields = {"total": ("total", "tile"), "standard": ("max_standard", "max_standard_tile"),
                  "interleaved": ("max_interleaved", "max_interleaved_tile")}[region]
        best = max(range(len(self.steps)), key=lambda i: (getattr(self.steps[i], fields[0]), -i))
        s = self.steps[best]
        return getattr(s, fields[0]), getattr(s, fields[1]), best


def group_vectors(values: Sequence[Value], shards: Mapping[int, Shards], tile_count: int
                  ) -> dict[int, tuple[str, np.ndarray]]:
    """Each storage group's region and per-tile bytes (the max of its members)."""
    memo: dict[tuple, np.ndarray] = {}
    groups: dict[int, tuple[str, np.ndarray]] = {}
    for v in values:
        key = (v.layout, v.shape, v.precision.bytes, v.alignment_bytes, v.copies)
        if key not in memo:
            memo[key] = value_tile_bytes(v, shards[v.id])
        vec = memo[key]
        if v.storage_group in groups:
            region, old = groups[v.storage_group]
            groups[v.storage_group] = (region, np.maximum(old, vec))
        else:
            groups[v.storage_group] = (v.region, vec)
    return groups


def account(values: Sequence[Value], steps: Sequence[Step], shards: Mapping[int, Shards],
            tile_count: int, resident: AbstractSet[int] = frozenset()) -> ExactAccounting:
    """Sweep the steps: per-tile usage of each region, worst tile per step, peak per
    tile. `resident`: ids of the declared tensors (input and parameters)."""
    assert all(v.id in shards for v in values), "exact accounting needs every value representable"
    groups = group_vectors(values, shards, tile_count)
    group_of = {v.id: v.storage_group for v in values}
    resident_groups = {v.storage_group for v in values if v.id in resident}
    current = {r: np.zeros(tile_count, dtype=np.int64) for r in (*REGIONS, "resident")}
    tile_peak = np.full(tile_count, -1, dtype=np.int64)
    tile_peak_step = np.zeros(tile_count, dtype=np.int64)
    tile_peak_inter = np.zeros(tile_count, dtype=np.int64)
    tile_peak_resident = np.zeros(tile_count, dtype=np.int64)
    live_before: set[int] = set()
    worst: list[StepWorst] = []
    for s in steps:
        live = {group_of[v] for v in s.live}
        for sign, changed in ((1, live - live_before), (-1, live_before - live)):
            for g in changed:
                region, vec = groups[g]
                current[region] += sign * vec
                if g in resident_groups:
                    current["resident"] += sign * vec
        live_before = live
        std = current["standard"] + s.scratch.get("standard", 0)
        inter = current["interleaved"] + s.scratch.get("interleaved", 0)
        total = std + inter
        t, ts, ti = int(np.argmax(total)), int(np.argmax(std)), int(np.argmax(inter))
        worst.append(StepWorst(t, int(total[t]), int(std[t]), int(inter[t]), int(std[ts]), ts, int(inter[ti]), ti))
        higher = total > tile_peak
        tile_peak = np.where(higher, total, tile_peak)
        tile_peak_step = np.where(higher, s.index, tile_peak_step)
        tile_peak_resident = np.where(higher, current["resident"], tile_peak_resident)
        tile_peak_inter = np.maximum(tile_peak_inter, inter)
    tile_peak = np.maximum(tile_peak, 0)
    for arr in (tile_peak, tile_peak_step, tile_peak_inter, tile_peak_resident):
        arr.setflags(write=False)
    return ExactAccounting(tuple(worst), tile_peak, tile_peak_step, tile_peak_inter, tile_peak_resident)


def tile_values(values: Sequence[Value], shards: Mapping[int, Shards], step: Step, tile: int
                ) -> list[tuple[Value, int]]:
    """The values live in `step` with their bytes on `tile`, largest first (ties by id).
    A storage group shows once, under its member with the most bytes there."""
    by_id = {v.id: v for v in values}
    best: dict[int, tuple[Value, int]] = {}
    for vid in step.live:
        v = by_id[vid]
        b = int(value_tile_bytes(v, shards[vid])[tile])
        if v.storage_group not in best or b > best[v.storage_group][1]:
            best[v.storage_group] = (v, b)
    return sorted(best.values(), key=lambda vb: (-vb[1], vb[0].id))
