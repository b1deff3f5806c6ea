"""`tileplan check`'s own exact per-tile accounting (docs/report-format.md, `exact`).

From the tile maps: each value's stored shard on each tile, rounded up there to its
alignment where it holds anything, times its copies; a storage group at the per-tile
maximum of its members; a step's usage on a tile = its live groups there + the
step's scratch (charged to every tile). One sweep over the steps adds a group's
vector when it becomes live and subtracts it when it dies.

Memory stays bounded whatever the report: the running sums are O(tiles), and the
per-group vectors live in a cache of at most `CACHE_ELEMENTS` integers (recomputed
when evicted), so a report with many values over many tiles costs time, not memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tileplan.model.timeline import Step, Value
from tileplan.report.check_shards import Sharding, tile_map

CACHE_ELEMENTS = 1 << 22  # int64 elements kept for group vectors: 32 MiB
HISTOGRAM_BINS = 32
TOP_TILES = 5
TOP_VALUES = 10
STEPS_COLUMNS = ["worst_tile", "total", "standard", "interleaved"]


@dataclass(frozen=True, slots=True)
class StepTiles:
    """One step on the tiles: the worst tile (most standard + interleaved + scratch,
    the lowest tile on ties) with its figures, and each region's own worst tile."""

    tile: int
    total: int
    standard: int
    interleaved: int
    max_standard: int
    max_standard_tile: int
    max_interleaved: int
    max_interleaved_tile: int


@dataclass(frozen=True, slots=True)
class TileAccount:
    """Per step its worst tiles; per tile its peak total, the first step reaching it,
    the resident (input and parameter) bytes in that peak, and its interleaved peak."""

    steps: tuple[StepTiles, ...]
    tile_peak: np.ndarray
    tile_peak_step: np.ndarray
    tile_peak_resident: np.ndarray
    tile_peak_interleaved: np.ndarray

    def peak(self, region: str) -> tuple[int, int, int]:
        """(bytes, tile, step) of a region's largest worst-tile figure, its first step."""
        column = {"total": lambda s: (s.total, s.tile), "standard": lambda s: (s.max_standard, s.max_standard_tile),
                  "interleaved": lambda s: (s.max_interleaved, s.max_interleaved_tile)}[region]
        best_step, best = 0, column(self.steps[0])
        for i, s in enumerate(self.steps):
            figure = column(s)
            if figure[0] > best[0]:
                best_step, best = i, figure
        return best[0], best[1], best_step


class TileBytes:
    """Bytes of values and storage groups on every tile, computed on demand."""

    def __init__(self, values: Sequence[Value], shardings: Mapping[int, Sharding], alignments: Mapping[int, int],
                 tile_count: int) -> None:
        self.by_id = {v.id: v for v in values}
        self.members: dict[int, list[int]] = {}
        for v in values:
            self.members.setdefault(v.storage_group, []).append(v.id)
        self.shardings = shardings
        self.alignments = alignments
        self.tile_count = tile_count
        self._groups: dict[int, np.ndarray] = {}

    def value(self, vid: int) -> np.ndarray:
        """One value's bytes on each tile."""
        v = self.by_id[vid]
        sharding = self.shardings[vid]
        tiles = tile_map(sharding.layout.tiling)
        out = np.zeros(self.tile_count, dtype=np.int64)
        out[tiles] = sharding.shard_elements() * v.precision.bytes  # broadcast over the replicas
        a = self.alignments[vid]
        if a > 1:
            out = np.where(out > 0, (out + a - 1) // a * a, 0)
        return out * v.copies

    def group(self, gid: int) -> np.ndarray:
        """A storage group's bytes on each tile: the maximum of its members there."""
        found = self._groups.get(gid)
        if found is None:
            found = self.value(self.members[gid][0])
            for vid in self.members[gid][1:]:
                found = np.maximum(found, self.value(vid))
            if (len(self._groups) + 1) * self.tile_count > CACHE_ELEMENTS:
                self._groups.clear()
            self._groups[gid] = found
        return found


def account_tiles(values: Sequence[Value], steps: Sequence[Step], tiles: TileBytes) -> TileAccount:
    """Sweep the steps once (see the module docstring)."""
    group_of = {v.id: v.storage_group for v in values}
    region_of = {v.storage_group: v.region for v in values}
    resident = {v.storage_group for v in values if v.resident}
    n = tiles.tile_count
    current = {"standard": np.zeros(n, dtype=np.int64), "interleaved": np.zeros(n, dtype=np.int64)}
    current_resident = np.zeros(n, dtype=np.int64)
    peak = np.full(n, -1, dtype=np.int64)
    peak_step = np.zeros(n, dtype=np.int64)
    peak_resident = np.zeros(n, dtype=np.int64)
    peak_inter = np.zeros(n, dtype=np.int64)
    before: set[int] = set()
    out = []
    for i, s in enumerate(steps):
        live = {group_of[v] for v in s.live}
        for sign, changed in ((1, live - before), (-1, before - live)):
            for g in sorted(changed):
                vec = tiles.group(g)
                current[region_of[g]] += sign * vec
                if g in resident:
                    current_resident += sign * vec
        before = live
        std = current["standard"] + s.scratch.get("standard", 0)
        inter = current["interleaved"] + s.scratch.get("interleaved", 0)
        total = std + inter
        t, ts, ti = int(np.argmax(total)), int(np.argmax(std)), int(np.argmax(inter))
        out.append(StepTiles(t, int(total[t]), int(std[t]), int(inter[t]), int(std[ts]), ts, int(inter[ti]), ti))
        higher = total > peak
        peak = np.where(higher, total, peak)
        peak_step = np.where(higher, i, peak_step)
        peak_resident = np.where(higher, current_resident, peak_resident)
        peak_inter = np.maximum(peak_inter, inter)
    return TileAccount(tuple(out), np.maximum(peak, 0), peak_step, peak_resident, peak_inter)


def exact_section(account: TileAccount, estimate_total: int | None) -> dict[str, Any]:
    """The `exact` section as docs/report-format.md defines it, but for its `model` text."""
    peaks = {}
    for region in ("total", "standard", "interleaved"):
        b, tile, step = account.peak(region)
        peaks[region] = {"bytes": b, "tile": tile, "step": step}
    tile_peak = account.tile_peak
    top = sorted(range(len(tile_peak)), key=lambda t: (-int(tile_peak[t]), t))[:TOP_TILES]
    exact_total = peaks["total"]["bytes"]
    lo, hi = int(tile_peak.min()), int(tile_peak.max())
    width = max(1, -(-(hi - lo + 1) // HISTOGRAM_BINS))
    return {
        "peak": peaks,
        "estimate_total": estimate_total,
        "ratio_exact_to_estimate": None if not estimate_total else round(exact_total / estimate_total, 4),
        "steps": [[s.tile, s.total, s.standard, s.interleaved] for s in account.steps],
        "steps_columns": STEPS_COLUMNS,
        "tiles": {"peak": tile_peak.tolist(), "peak_step": account.tile_peak_step.tolist(),
                  "peak_resident": account.tile_peak_resident.tolist(),
                  "peak_interleaved": account.tile_peak_interleaved.tolist()},
        "histogram": {"first_bytes": lo, "bin_bytes": width,
                      "counts": np.bincount((tile_peak - lo) // width, minlength=HISTOGRAM_BINS).tolist()},
        "top_tiles": [{"tile": t, "bytes": int(tile_peak[t]), "step": int(account.tile_peak_step[t]),
                       "resident": int(account.tile_peak_resident[t])} for t in top],
    }


def peak_tile_section(steps: Sequence[Step], account: TileAccount, tiles: TileBytes) -> dict[str, Any]:
    """`verdict.peak_tile`: the worst tile at the exact total peak and what is live
    there, a storage group once (under its member with the most bytes on that tile,
    the lowest id on ties), largest first, ties by id. Descriptive text (`precision`,
    `class`) is compared by the caller, not here."""
    _, tile, step = account.peak("total")
    s = steps[step]
    best: dict[int, tuple[Value, int]] = {}
    for vid in sorted(set(s.live)):
        v = tiles.by_id[vid]
        b = int(tiles.value(vid)[tile])
        if v.storage_group not in best or b > best[v.storage_group][1]:
            best[v.storage_group] = (v, b)
    live = sorted(best.values(), key=lambda vb: (-vb[1], vb[0].id))
    sums: dict[str, list[int]] = {}
    for v, b in live:
        entry = sums.setdefault(v.group, [0, 0])
        entry[0] += b
        entry[1] += 1
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_VALUES]
    return {
        "tile": tile, "step": step, "operation": s.operation, "source": s.source,
        "scratch": {k: s.scratch.get(k, 0) for k in ("standard", "interleaved")},
        "values": [{"id": v.id, "name": v.name, "shape": list(v.shape), "bytes": b, "resident": v.resident}
                   for v, b in live[:TOP_VALUES]],
        "values_shown": min(TOP_VALUES, len(live)),
        "values_live": len(live),
        "groups": [{"group": g, "bytes": b, "values": c} for g, (b, c) in ranked],
    }
