"""`tileplan check`'s own exact per-tile accounting (docs/report-format.md, `exact`).

From the tile maps: each value's stored shard on each tile, rounded up there to its
alignment where it holds anything, times its copies; a storage group at the per-tile
maximum of its members; a step's usage on a tile = its live groups there + the
step's scratch (charged to every tile).

Linear in the report: a vector per distinct (layout, shape, precision, alignment,
copies), one per distinct set of them a storage group takes the maximum of (a group
kind), tiles that every kind's vector treats alike folded into one class; then the
steps in chunks: how many groups of each kind are live (a difference array over the
groups' live runs) times the kinds' vectors gives every step's bytes on every class,
whose maxima are the worst tiles. Runs live at every step are summed once into a base
per tile, left out of the classes: in a class the lowest tile with the most base bytes
is its worst. Memory: the kinds x tiles matrix (at most
`MATRIX_ELEMENTS`, else a finding says exact was not re-derived), a chunk of steps x
classes, and a cache of at most `CACHE_ELEMENTS` integers of value vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tileplan.model.timeline import Step, Value
from tileplan.check.shards import Sharding, tile_map
from tileplan.check.timeline import HELD_ROLES
from tileplan.report.sections import (
    EXACT_COLUMNS,
    Exact,
    ExactPeak,
    ExactPeaks,
    Histogram,
    PeakClass,
    PeakGroup,
    PeakTile,
    PeakValue,
    Scratch,
    TileFigures,
    TopTile,
)

CACHE_ELEMENTS = 1 << 22  # int64 elements kept for value vectors: 32 MiB
#: the most int64 elements of the group kinds x tiles matrix (128 MiB)
MATRIX_ELEMENTS = 1 << 24
#: int64 elements of one chunk of steps x tile classes in the sweep: 8 MiB
CHUNK_ELEMENTS = 1 << 20
HISTOGRAM_BINS = 32
TOP_TILES = 5
TOP_VALUES = 10


@dataclass(frozen=True, slots=True)
class TileAccount:
    """Per step (arrays): the worst tile (most standard + interleaved + scratch, the
    lowest tile on ties) with its figures, and each region's own worst tile and bytes.
    Per tile: its peak total, the first step reaching it, the resident (input and
    parameter) bytes in that peak, and its interleaved peak."""

    tile: np.ndarray
    total: np.ndarray
    standard: np.ndarray
    interleaved: np.ndarray
    max_standard: np.ndarray
    max_standard_tile: np.ndarray
    max_interleaved: np.ndarray
    max_interleaved_tile: np.ndarray
    tile_peak: np.ndarray
    tile_peak_step: np.ndarray
    tile_peak_resident: np.ndarray
    tile_peak_interleaved: np.ndarray

    def peak(self, region: str) -> tuple[int, int, int]:
        """(bytes, tile, step) of a region's largest worst-tile figure, its first step."""
        figure, tile = {"total": (self.total, self.tile), "standard": (self.max_standard, self.max_standard_tile),
                        "interleaved": (self.max_interleaved, self.max_interleaved_tile)}[region]
        step = int(np.argmax(figure))
        return int(figure[step]), int(tile[step]), step


class ValueKinds:
    """The distinct (sharding, precision, alignment, copies) of representable values:
    per kind what its per-tile bytes follow from; per value its kind (-1 when
    unrepresentable)."""

    def __init__(self) -> None:
        self.kinds: list[tuple[Sharding, int, int, int]] = []
        self._index: dict[tuple, int] = {}
        self.of_value: list[int] = []

    def add(self, sharding: Sharding, v: Value, alignment: int) -> int:
        key = (sharding.layout, v.shape, v.precision, alignment, v.copies)
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.kinds)
            self.kinds.append((sharding, v.precision.bytes, alignment, v.copies))
        return found


class TileBytes:
    """Bytes of values on every tile, computed on demand once per kind."""

    def __init__(self, values: Sequence[Value], kinds: ValueKinds, tile_count: int) -> None:
        self.values = values
        self.kinds = kinds
        self.kind_of = kinds.of_value
        self.tile_count = tile_count
        self._vectors: dict[int, np.ndarray] = {}

    def kind(self, k: int) -> np.ndarray:
        """Bytes on each tile of a value of kind k."""
        found = self._vectors.get(k)
        if found is None:
            sharding, element, alignment, copies = self.kinds.kinds[k]
            tiles = tile_map(sharding.layout.tiling)
            out = np.zeros(self.tile_count, dtype=np.int64)
            out[tiles] = sharding.shard_elements() * element  # broadcast over the replicas
            if alignment > 1:
                out = np.where(out > 0, (out + alignment - 1) // alignment * alignment, 0)
            found = out * copies
            if (len(self._vectors) + 1) * self.tile_count > CACHE_ELEMENTS:
                self._vectors.clear()
            self._vectors[k] = found
        return found

    def value(self, p: int) -> np.ndarray:
        """The value at position p: its bytes on each tile."""
        return self.kind(self.kind_of[p])


def group_kinds(members: Sequence[Sequence[int]], tiles: TileBytes) -> tuple[np.ndarray, list[list[int]]]:
    """Each group's kind (groups of the same member kinds share one vector) and, per
    kind, the value kinds it is the per-tile maximum of."""
    found: dict[tuple[int, ...], int] = {}
    of_group = np.empty(len(members), dtype=np.int64)
    for g, ms in enumerate(members):
        key = (tiles.kind_of[ms[0]],) if len(ms) == 1 else tuple(sorted({tiles.kind_of[m] for m in ms}))
        of_group[g] = found.setdefault(key, len(found))
    return of_group, [list(k) for k in found]


def account_tiles(tiles: TileBytes, members: Sequence[Sequence[int]], region: np.ndarray, resident: np.ndarray,
                  runs: tuple[np.ndarray, np.ndarray, np.ndarray], scratch: Mapping[str, np.ndarray],
                  n_steps: int) -> TileAccount | None:
    """The exact accounting (see the module docstring): the distinct group vectors,
    tiles that every vector treats alike folded into one column, and the steps in
    chunks: live counts of each kind by a difference array, times the vectors. None
    when the kinds x tiles matrix would pass `MATRIX_ELEMENTS`."""
    kind_of_group, kinds = group_kinds(members, tiles)
    n_tiles = tiles.tile_count
    if len(kinds) * n_tiles > MATRIX_ELEMENTS:
        return None
    matrix = np.zeros((len(kinds), n_tiles), dtype=np.int64)
    for k, value_kinds in enumerate(kinds):
        for vk in value_kinds:
            np.maximum(matrix[k], tiles.kind(vk), out=matrix[k])

    # runs live at every step: their bytes, per channel, are every step's base on each tile
    pos, first, last = runs
    always = (first <= 0) & (last >= n_steps - 1)
    kind = kind_of_group[pos]
    base = {}
    for name, mask in (("standard", region[pos] == 0), ("interleaved", region[pos] == 1), ("resident", resident[pos])):
        ks, count = np.unique(kind[mask & always], return_counts=True)
        base[name] = count @ matrix[ks] if len(ks) else np.zeros(n_tiles, dtype=np.int64)
    base["total"] = base["standard"] + base["interleaved"]
    pos, first, last, kind = pos[~always], first[~always], last[~always], kind[~always]

    # tiles alike under every vector of the other runs form one class; classes in the
    # order of their lowest tile
    _, first_tile, inverse = np.unique(matrix[np.unique(kind)].T, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first_tile)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    class_of_tile = rank[inverse]
    class_tile = first_tile[order]
    vectors = matrix[:, class_tile]  # kinds x classes
    n_kinds, n_classes = vectors.shape
    exact_float = int(vectors.max(axis=1, initial=0).sum()) + max(
        (int(np.max(s)) for s in scratch.values() if len(s)), default=0) < (1 << 53)
    weights = vectors.astype(np.float64) if exact_float else vectors
    # in a class, a channel's worst tile is its lowest tile with the most base bytes:
    # (that tile, its base bytes) per class
    top_tile = {}
    for name in ("total", "standard", "interleaved"):
        by = np.lexsort((np.arange(n_tiles), -base[name], class_of_tile))
        head = by[np.concatenate(([True], class_of_tile[by][1:] != class_of_tile[by][:-1]))]
        top_tile[name] = (head, base[name][head])

    def worst(figures: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per step: the class whose worst tile holds the most (ties: the lower tile),
        that tile and its bytes."""
        tile_at, extra = top_tile[name]
        held = figures + extra
        best = np.argmax(held * n_tiles + (n_tiles - 1 - tile_at), axis=1)
        return best, tile_at[best], held[np.arange(len(held)), best]

    channels = {"standard": region[pos] == 0, "interleaved": region[pos] == 1, "resident": resident[pos]}
    events = {}
    for name, mask in channels.items():
        steps = np.concatenate((first[mask], last[mask] + 1))
        ks = np.concatenate((kind[mask], kind[mask]))
        signs = np.concatenate((np.ones(int(mask.sum()), np.int64), -np.ones(int(mask.sum()), np.int64)))
        order = np.argsort(steps, kind="stable")
        events[name] = (steps[order], ks[order], signs[order])
    state = {name: np.zeros(n_kinds, dtype=np.int64) for name in channels}
    out = {k: np.zeros(n_steps, dtype=np.int64) for k in ("tile", "total", "standard", "interleaved", "max_standard",
                                                           "max_standard_tile", "max_interleaved",
                                                           "max_interleaved_tile")}
    peak = np.full(n_classes, -1, dtype=np.int64)
    peak_step = np.zeros(n_classes, dtype=np.int64)
    peak_resident = np.zeros(n_classes, dtype=np.int64)
    peak_inter = np.zeros(n_classes, dtype=np.int64)
    chunk = max(1, CHUNK_ELEMENTS // max(n_classes, n_kinds))
    for a in range(0, n_steps, chunk):
        b = min(n_steps, a + chunk)
        on = {}
        for name, (steps, ks, signs) in events.items():
            lo, hi = np.searchsorted(steps, [a, b])
            delta = np.zeros((b - a, n_kinds), dtype=np.int64)
            np.add.at(delta, (steps[lo:hi] - a, ks[lo:hi]), signs[lo:hi])
            counts = state[name] + np.cumsum(delta, axis=0)
            state[name] = counts[-1].copy()
            product = counts.astype(weights.dtype) @ weights
            on[name] = np.rint(product).astype(np.int64) if exact_float else product
        std = on["standard"] + scratch["standard"][a:b, None]  # per class, without the base
        inter = on["interleaved"] + scratch["interleaved"][a:b, None]
        total = std + inter
        rows = np.arange(b - a)
        best, tile, held = worst(total, "total")
        out["tile"][a:b] = tile
        out["total"][a:b] = held
        out["standard"][a:b] = std[rows, best] + base["standard"][tile]
        out["interleaved"][a:b] = inter[rows, best] + base["interleaved"][tile]
        for key, figures, name in (("max_standard", std, "standard"), ("max_interleaved", inter, "interleaved")):
            _, tile, held = worst(figures, name)
            out[key][a:b] = held
            out[f"{key}_tile"][a:b] = tile
        top = np.argmax(total, axis=0)
        cols = np.arange(n_classes)
        highest = total[top, cols]
        higher = highest > peak
        peak = np.where(higher, highest, peak)
        peak_step = np.where(higher, top + a, peak_step)
        peak_resident = np.where(higher, on["resident"][top, cols], peak_resident)
        peak_inter = np.maximum(peak_inter, inter.max(axis=0))
    return TileAccount(**out, tile_peak=np.maximum(peak[class_of_tile] + base["total"], 0),
                       tile_peak_step=peak_step[class_of_tile],
                       tile_peak_resident=peak_resident[class_of_tile] + base["resident"],
                       tile_peak_interleaved=peak_inter[class_of_tile] + base["interleaved"])


def exact_section(account: TileAccount, estimate_total: int | None, model: str) -> Exact:
    """The `exact` section as docs/report-format.md defines it (`model`: its text)."""
    peaks = {}
    for region in ("total", "standard", "interleaved"):
        b, tile, step = account.peak(region)
        peaks[region] = ExactPeak(bytes=b, tile=tile, step=step)
    tile_peak = account.tile_peak
    top = sorted(range(len(tile_peak)), key=lambda t: (-int(tile_peak[t]), t))[:TOP_TILES]
    exact_total = peaks["total"].bytes
    lo, hi = int(tile_peak.min()), int(tile_peak.max())
    width = max(1, -(-(hi - lo + 1) // HISTOGRAM_BINS))
    return Exact(
        model=model,
        peak=ExactPeaks(**peaks),
        estimate_total=estimate_total,
        ratio_exact_to_estimate=None if not estimate_total else round(exact_total / estimate_total, 4),
        steps=np.stack((account.tile, account.total, account.standard, account.interleaved), axis=1),
        steps_columns=EXACT_COLUMNS,
        tiles=TileFigures(peak=tuple(tile_peak.tolist()), peak_step=tuple(account.tile_peak_step.tolist()),
                          peak_resident=tuple(account.tile_peak_resident.tolist()),
                          peak_interleaved=tuple(account.tile_peak_interleaved.tolist())),
        histogram=Histogram(first_bytes=lo, bin_bytes=width, counts=tuple(
            np.bincount((tile_peak - lo) // width, minlength=HISTOGRAM_BINS).tolist())),
        top_tiles=tuple(TopTile(tile=t, bytes=int(tile_peak[t]), step=int(account.tile_peak_step[t]),
                                resident=int(account.tile_peak_resident[t])) for t in top),
    )


#: the classes of a training report's values, in order (docs/report-format.md, "Classes
#: of a training report"), and the roles (by their report text) in each; any other role
#: is in the activations and temporaries
Class = Literal["weights", "gradients and accumulators", "optimizer state", "stash", "activations and temporaries"]
CLASS_ORDER: tuple[Class, ...] = ("weights", "gradients and accumulators", "optimizer state", "stash",
                                  "activations and temporaries")
CLASS_ROLES: dict[Class, tuple[str, ...]] = {
    "weights": ("parameter", "buffer"), "gradients and accumulators": ("gradient", "accumulator"),
    "optimizer state": ("optimizer_state", "update"), "stash": ("stash",)}
CLASS_OF: dict[str, Class] = {role: name for name, roles in CLASS_ROLES.items() for role in roles}


def training_classes(ranked: Sequence[tuple[Value, int]], scratch: int) -> tuple[PeakClass, ...]:
    """`peak_tile.classes`: the bytes of each class on the tile (by role, never by
    name), always live apart, the step's scratch with the activations and temporaries."""
    sums: dict[tuple[bool, Class], list[int]] = {}
    for v, b in ranked:
        name: Class = CLASS_OF.get(v.role or "", "activations and temporaries")
        entry = sums.setdefault((v.role in HELD_ROLES, name), [0, 0])
        entry[0] += b
        entry[1] += 1
    if scratch:
        sums.setdefault((False, "activations and temporaries"), [0, 0])[0] += scratch
    rows = sorted(sums.items(), key=lambda kv: (not kv[0][0], CLASS_ORDER.index(kv[0][1])))
    return tuple(PeakClass(name=name, always_live=live, bytes=b, values=n)
                 for (live, name), (b, n) in rows)


def peak_tile_section(step: Step, live: Sequence[int], account: TileAccount, tiles: TileBytes,
                      precision: Callable[[int, Value], str], training: bool = False) -> PeakTile:
    """`verdict.peak_tile`: the worst tile at the exact total peak and what is live
    there (`live`: the positions of the values live at that step), a storage group once
    (under its member with the most bytes on that tile, the lowest id on ties), largest
    first, ties by id, and in a training report the bytes of each class there.
    `precision(i, value)`: the display text of the i-th value's precision (its form is
    the views' business, not re-derived)."""
    _, tile, _ = account.peak("total")
    best: dict[int, tuple[Value, int, int]] = {}
    for p in sorted(live, key=lambda p: tiles.values[p].id):
        v = tiles.values[p]
        b = int(tiles.value(p)[tile])
        if v.storage_group not in best or b > best[v.storage_group][1]:
            best[v.storage_group] = (v, b, p)
    ranked_values = sorted(best.values(), key=lambda vb: (-vb[1], vb[0].id))
    sums: dict[str, list[int]] = {}
    for v, b, _ in ranked_values:
        entry = sums.setdefault(v.group, [0, 0])
        entry[0] += b
        entry[1] += 1
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_VALUES]
    return PeakTile(
        tile=tile, step=step.index, operation=step.operation, source=step.source,
        scratch=Scratch(standard=step.scratch.get("standard", 0), interleaved=step.scratch.get("interleaved", 0)),
        values=tuple(PeakValue(id=v.id, name=v.name, shape=tuple(v.shape), precision=precision(i, v),
                               memory_class=v.memory_class.to_text(), bytes=b, resident=v.resident)
                     for i, (v, b, _) in enumerate(ranked_values[:TOP_VALUES])),
        values_shown=min(TOP_VALUES, len(ranked_values)),
        values_live=len(ranked_values),
        groups=tuple(PeakGroup(group=g, bytes=b, values=c) for g, (b, c) in ranked),
        classes=training_classes([(v, b) for v, b, _ in ranked_values],
                                 step.scratch.get("standard", 0) + step.scratch.get("interleaved", 0))
        if training else None,
    )
