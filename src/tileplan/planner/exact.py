"""Exact per-tile accounting from the tile maps.

The estimate (the reference's model) adds each live allocation's largest shard; the
shards of one value differ by tile, so that sum overstates the worst real tile. Here
every value's bytes on every tile come from its tile map (`Shards.bytes_per_tile`),
rounded up per tile to its alignment, a storage group holds the per-tile maximum of
its members, and a step's usage on a tile is the sum of its live groups on that tile
plus the step's scratch, which is charged to every tile at its stated size (the only
part that stays an upper bound).

`account` works on columns: each distinct per-tile vector is computed once; the groups
live at every step are summed once into a base per tile; tiles holding the same bytes
of every distinct vector of the other groups form a class (a dozen for real layouts,
not 1,472 tiles); each storage group is live over the union of its members'
intervals; a difference array counts the live groups of each kind (vector, region,
resident) per step, and those counts times the kinds' vectors give every class's
usage, a chunk of steps at a time. Memory: O(distinct vectors x tiles) and O(chunk x
classes); time linear in the steps and groups.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import AbstractSet, Mapping, Sequence

import numpy as np

from tileplan.model.rows import Rows
from tileplan.model.tiling import Shards
from tileplan.model.timeline import Step, StepTable, Value
from tileplan.model.precision import Precision
from tileplan.model.values import FormShards, ValueTable

REGIONS = ("standard", "interleaved")


def value_tile_bytes(value: Value, shards: Shards) -> np.ndarray:
    """The bytes a value takes on each tile: its stored shard there, rounded up to its
    alignment where it holds anything, times its copies."""
    return tile_bytes(value.precision, value.alignment_bytes, value.copies, shards)


def tile_bytes(precision: Precision, alignment: int | None, copies: int, shards: Shards) -> np.ndarray:
    """`value_tile_bytes` of a value of this precision, alignment and copies."""
    per_tile = shards.bytes_per_tile(precision)
    if alignment and alignment > 1:
        per_tile = np.where(per_tile > 0, (per_tile + alignment - 1) // alignment * alignment, 0)
    return per_tile * copies


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


class _StepWorstView(Rows[StepWorst]):
    """`ExactAccounting.steps`: a `StepWorst` per step, built on demand from the columns."""

    __slots__ = ("_columns",)

    def __init__(self, columns: tuple[np.ndarray, ...]) -> None:
        self._columns = columns

    def __len__(self) -> int:
        return len(self._columns[0])

    row_name = "step"

    def row(self, i: int) -> StepWorst:
        return StepWorst(*(int(c[i]) for c in self._columns))


@dataclass(frozen=True, slots=True)
class ExactAccounting:
    """Per step, the worst tile; per tile, its peak (standard + interleaved + scratch),
    the first step reaching it, and how much of that peak is resident parameters (the
    declared tensors, weights above all) rather than step-dependent (activations,
    re-laid-out operands, scratch). Arrays are int64, read-only: `step_*` over the
    steps (the fields of `StepWorst`), `tile_*` over the tiles."""

    step_tile: np.ndarray
    step_total: np.ndarray
    step_standard: np.ndarray
    step_interleaved: np.ndarray
    step_max_standard: np.ndarray
    step_max_standard_tile: np.ndarray
    step_max_interleaved: np.ndarray
    step_max_interleaved_tile: np.ndarray
    tile_peak: np.ndarray
    tile_peak_step: np.ndarray
    tile_peak_interleaved: np.ndarray
    tile_peak_resident: np.ndarray

    @property
    def steps(self) -> Sequence[StepWorst]:
        return _StepWorstView((self.step_tile, self.step_total, self.step_standard, self.step_interleaved,
                               self.step_max_standard, self.step_max_standard_tile, self.step_max_interleaved,
                               self.step_max_interleaved_tile))

    def peak(self, region: str) -> tuple[int, int, int]:
        """(bytes, tile, step) of a region's exact peak ("total", "standard" or
        "interleaved"): the first step reaching it, its worst tile."""
        figures, tiles = {"total": (self.step_total, self.step_tile),
                          "standard": (self.step_max_standard, self.step_max_standard_tile),
                          "interleaved": (self.step_max_interleaved, self.step_max_interleaved_tile)}[region]
        best = int(np.argmax(figures))
        return int(figures[best]), int(tiles[best]), best


def group_vectors(values: Sequence[Value], shards: Mapping[int, Shards], tile_count: int
                  ) -> dict[int, tuple[str, np.ndarray]]:
    """Each storage group's region and per-tile bytes (the max of its members)."""
    vectors, groups, vector, standard = _distinct_group_vectors(ValueTable.from_values(values), shards)
    return {g: ("standard" if std else "interleaved", vectors[k])
            for g, k, std in zip(groups.tolist(), vector.tolist(), standard.tolist())}


def _distinct_group_vectors(values: ValueTable, shards: Mapping[int, Shards]
                            ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """The distinct per-tile vectors, and the storage groups (ascending) with each
    one's index among them and whether it is in the standard region. A value's vector
    depends only on its layout, shape, element bytes, alignment and copies: computed
    once per such key (in order of first use); a group of several members takes the
    elementwise maximum, once per distinct set of keys (which vector stands for a
    group does not change any sum: only its bytes count)."""
    n = len(values)
    forms = values.forms
    form_key: dict[tuple, int] = {}
    key_of_form = np.array([form_key.setdefault((f.layout, f.shape, f.precision.bytes, f.alignment_bytes, f.copies),
                                                len(form_key)) for f in forms], dtype=np.int64)
    key = key_of_form[values.form] if n else np.zeros(0, dtype=np.int64)
    group = values.storage_group
    # each key's vector, in order of first use
    vectors: list[np.ndarray] = []
    if n:
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        firsts = np.sort(order[np.concatenate(([True], sorted_key[1:] != sorted_key[:-1]))])
        vector_of_key = np.full(len(form_key), -1, dtype=np.int64)
        for kk, f, vid in zip(key[firsts].tolist(), values.form[firsts].tolist(), values.id[firsts].tolist()):
            form = forms[f]
            vector_of_key[kk] = len(vectors)
            vectors.append(tile_bytes(form.precision, form.alignment_bytes, form.copies, shards[vid]))
        key = vector_of_key[key]
    # each group's vector: its key's, or for a group whose members differ in key the
    # elementwise maximum of theirs, once per distinct set of keys
    by_group = np.argsort(group, kind="stable")
    g_sorted, k_sorted = group[by_group], key[by_group]
    starts = np.concatenate(([True], g_sorted[1:] != g_sorted[:-1])) if n else np.zeros(0, dtype=bool)
    groups, vector = g_sorted[starts], k_sorted[starts]
    run = np.cumsum(starts) - 1
    mixed = np.zeros(len(groups), dtype=bool)
    mixed[run[1:][(~starts[1:]) & (k_sorted[1:] != k_sorted[:-1])]] = True
    if mixed.any():
        members = mixed[run]
        base = len(vectors)
        pairs = np.unique(run[members] * base + k_sorted[members])  # (group run, key), sorted
        runs, keys = pairs // base, pairs % base
        first = np.flatnonzero(np.concatenate(([True], runs[1:] != runs[:-1])))
        count = np.diff(np.concatenate((first, [len(runs)])))
        two = first[count == 2]  # the common case, vectorized: a group of two keys
        codes, which = np.unique(keys[two] * base + keys[two + 1], return_inverse=True)
        for code in codes.tolist():
            vectors.append(np.maximum(vectors[code // base], vectors[code % base]))
        vector[runs[two]] = len(vectors) - len(codes) + which.reshape(-1)
        combined: dict[tuple[int, ...], int] = {}
        for at, c in zip(first[count > 2].tolist(), count[count > 2].tolist()):
            sig = tuple(keys[at:at + c].tolist())
            m = combined.get(sig)
            if m is None:
                m = combined[sig] = len(vectors)
                vectors.append(np.maximum.reduce([vectors[k] for k in sig]))
            vector[runs[at]] = m
    first_member = by_group[starts]
    return vectors, groups, vector, values.standard()[first_member]


def account(values: Sequence[Value], steps: StepTable, shards: Mapping[int, Shards],
            tile_count: int, resident: AbstractSet[int] = frozenset()) -> ExactAccounting:
    """Per-tile usage of each region in every step, worst tile per step, peak per tile.
    `resident`: ids of the declared tensors (input and parameters).

    Columnar: a storage group live at every step (an always-live parameter) adds the
    same bytes to every step, so those groups are summed once into a base per tile
    (`base_*`); tiles that hold the same bytes of every distinct vector of the other
    groups form one class (a handful for real layouts), so the sums run over classes,
    not tiles, and within a class the base alone decides which tile is worst (the
    lowest tile with the most base bytes, per region: `_class_reps`). Each storage
    group is live over the union of its members' intervals; the number of live groups
    of each (vector, region, resident) kind per step comes from a difference array,
    and the usage per class is those counts times the kinds' vectors, a chunk of steps
    at a time (bounded memory)."""
    table = ValueTable.from_values(values)
    assert (shards.complete() if isinstance(shards, FormShards) and shards.table is table
            else all(v in shards for v in table.id.tolist())), "exact accounting needs every value representable"
    n = len(steps)
    vectors, groups, group_vector, group_standard = _distinct_group_vectors(table, shards)

    # each group's live intervals (the union of its members')
    value_id, value_group = table.id, table.storage_group
    by_id = np.argsort(value_id, kind="stable")
    member_group = value_group[by_id][np.searchsorted(value_id[by_id], steps.value_ids)]
    g_first, g_last, g_id = merged_intervals(member_group, steps.first, steps.last)
    # each group's kind: (its vector, its region, resident or not)
    resident_groups = value_group[np.isin(value_id, np.fromiter(resident, dtype=np.int64, count=len(resident)))]
    group_kind = (group_vector * 2 + group_standard) * 2 + np.isin(groups, resident_groups)
    codes = group_kind[np.searchsorted(groups, g_id)]
    # intervals live at every step: their bytes are the base of every step
    always = (g_first <= 0) & (g_last >= n - 1)
    base_std, base_inter, base_res = (np.zeros(tile_count, dtype=np.int64) for _ in range(3))
    for c, k in zip(*np.unique(codes[always], return_counts=True)):
        vec = vectors[int(c) // 4] * int(k)
        (base_std if (int(c) // 2) % 2 else base_inter)[:] += vec
        if int(c) % 2:
            base_res += vec
    base_total = base_std + base_inter
    g_first, g_last, codes = g_first[~always], g_last[~always], codes[~always]

    # the other intervals' kinds, numbered in order of appearance
    distinct, first_seen, kind_of = np.unique(codes, return_index=True, return_inverse=True)
    renumber = np.empty(len(distinct), dtype=np.int64)
    renumber[np.argsort(first_seen, kind="stable")] = np.arange(len(distinct))
    kind_of = renumber[kind_of.reshape(-1)]
    kind_list = [(int(c) // 4, "standard" if (int(c) // 2) % 2 else "interleaved", bool(int(c) % 2))
                 for c in distinct[np.argsort(first_seen, kind="stable")]]
    # tile classes over the vectors those kinds use
    used = sorted({v for v, _, _ in kind_list})
    matrix = np.stack([vectors[v] for v in used]) if used else np.zeros((0, tile_count), dtype=np.int64)
    _, tile_class = np.unique(matrix.T, axis=0, return_inverse=True)
    tile_class = tile_class.reshape(-1)
    classes = int(tile_class.max()) + 1 if tile_count else 0
    class_tile = np.zeros(classes, dtype=np.int64)
    class_tile[tile_class] = np.arange(tile_count)  # a tile of each class (its tiles hold the same bytes)
    row_of = {v: i for i, v in enumerate(used)}
    class_vectors = matrix[:, class_tile]  # used vectors x classes
    kind_vectors = class_vectors[[row_of[k] for k, _, _ in kind_list]] if kind_list else \
        np.zeros((0, classes), dtype=np.int64)
    is_std = np.array([r == "standard" for _, r, _ in kind_list], dtype=bool)
    is_res = np.array([res for _, _, res in kind_list], dtype=bool)
    std_vectors = np.where(is_std[:, None], kind_vectors, 0)
    inter_vectors = np.where(is_std[:, None], 0, kind_vectors)
    res_vectors = np.where(is_res[:, None], kind_vectors, 0)
    # within a class, the worst tile of each region is the lowest with the most base
    rep_total, most_total = _class_reps(tile_class, base_total)
    rep_std, most_std = _class_reps(tile_class, base_std)
    rep_inter, most_inter = _class_reps(tile_class, base_inter)

    # events: +1 at a group interval's first step, -1 after its last, per kind
    ev_step = np.concatenate((g_first, g_last + 1))
    ev_kind = np.concatenate((kind_of, kind_of))
    ev_delta = np.concatenate((np.ones(len(g_first), np.int64), -np.ones(len(g_first), np.int64)))
    keep = ev_step < n
    ev_step, ev_kind, ev_delta = ev_step[keep], ev_kind[keep], ev_delta[keep]
    by_step = np.argsort(ev_step, kind="stable")
    ev_step, ev_kind, ev_delta = ev_step[by_step], ev_kind[by_step], ev_delta[by_step]

    kcount = len(kind_list)
    cols = {name: np.zeros(n, dtype=np.int64) for name in (
        "tile", "total", "standard", "interleaved", "max_standard", "max_standard_tile", "max_interleaved",
        "max_interleaved_tile")}
    class_peak = np.full(classes, -1, dtype=np.int64)
    class_peak_step = np.zeros(classes, dtype=np.int64)
    class_peak_inter = np.zeros(classes, dtype=np.int64)
    class_peak_counts = np.zeros((classes, kcount), dtype=np.int64)
    carry = np.zeros(kcount, dtype=np.int64)
    chunk = max(1, (1 << 20) // max(1, kcount, classes))
    scratch_std, scratch_inter = steps.scratch_standard, steps.scratch_interleaved
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        lo, hi = np.searchsorted(ev_step, [a, b])
        diff = np.zeros((b - a, kcount), dtype=np.int64)
        np.add.at(diff, (ev_step[lo:hi] - a, ev_kind[lo:hi]), ev_delta[lo:hi])
        counts = np.cumsum(diff, axis=0) + carry
        carry = counts[-1] if len(counts) else carry
        std = counts @ std_vectors + scratch_std[a:b, None]  # per class, without the base
        inter = counts @ inter_vectors + scratch_inter[a:b, None]
        total = std + inter
        rows = np.arange(b - a)
        t = _worst(total + most_total, rep_total, tile_count)
        ts = _worst(std + most_std, rep_std, tile_count)
        ti = _worst(inter + most_inter, rep_inter, tile_count)
        tile = rep_total[t]
        cols["tile"][a:b] = tile
        cols["total"][a:b] = total[rows, t] + most_total[t]
        cols["standard"][a:b] = std[rows, t] + base_std[tile]
        cols["interleaved"][a:b] = inter[rows, t] + base_inter[tile]
        cols["max_standard"][a:b] = std[rows, ts] + most_std[ts]
        cols["max_standard_tile"][a:b] = rep_std[ts]
        cols["max_interleaved"][a:b] = inter[rows, ti] + most_inter[ti]
        cols["max_interleaved_tile"][a:b] = rep_inter[ti]
        best = total.argmax(axis=0)
        best_total = total[best, np.arange(classes)]
        higher = best_total > class_peak
        class_peak = np.where(higher, best_total, class_peak)
        class_peak_step = np.where(higher, best + a, class_peak_step)
        class_peak_counts[higher] = counts[best[higher]]
        class_peak_inter = np.maximum(class_peak_inter, inter.max(axis=0))
    class_peak_resident = np.einsum("ck,kc->c", class_peak_counts, res_vectors) if kcount else \
        np.zeros(classes, dtype=np.int64)
    tiles = {"peak": np.maximum(class_peak[tile_class] + base_total, 0), "peak_step": class_peak_step[tile_class],
             "peak_interleaved": class_peak_inter[tile_class] + base_inter,
             "peak_resident": class_peak_resident[tile_class] + base_res}
    for arr in (*cols.values(), *tiles.values()):
        arr.setflags(write=False)
    return ExactAccounting(cols["tile"], cols["total"], cols["standard"], cols["interleaved"], cols["max_standard"],
                           cols["max_standard_tile"], cols["max_interleaved"], cols["max_interleaved_tile"],
                           tiles["peak"], tiles["peak_step"], tiles["peak_interleaved"], tiles["peak_resident"])


def _class_reps(tile_class: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per class (0..C-1), its lowest tile with the most `base` bytes, and those bytes."""
    order = np.lexsort((np.arange(len(base)), -base, tile_class))
    ordered = tile_class[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1])) if len(order) else np.zeros(0, dtype=bool)
    rep = order[first]
    return rep, base[rep]


def _worst(usage: np.ndarray, rep: np.ndarray, tile_count: int) -> np.ndarray:
    """Each row's worst class: the most bytes, then the lowest representative tile
    (as an argmax over tiles gives the lowest tile reaching the maximum)."""
    return (usage * tile_count + (tile_count - 1 - rep)).argmax(axis=1)


def merged_intervals(groups: np.ndarray, first: np.ndarray, last: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, last, group) of each group's live steps as disjoint intervals: the
    union of its members' [first, last] intervals, adjacent ones joined."""
    if not len(groups):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    order = np.lexsort((first, groups))
    g, f, e = groups[order], first[order], last[order]
    new_group = np.concatenate(([True], g[1:] != g[:-1]))
    # running maximum of `last` within each group: offset each group above the previous
    span = int(last.max()) + 2
    seg = np.cumsum(new_group) - 1
    running = np.maximum.accumulate(e + seg * span) - seg * span
    starts = new_group.copy()
    starts[1:] |= f[1:] > running[:-1] + 1
    idx = np.flatnonzero(starts)
    ends = np.concatenate((idx[1:] - 1, [len(g) - 1]))
    return f[idx], running[ends], g[idx]


def tile_values(values: Sequence[Value], shards: Mapping[int, Shards], step: Step, tile: int
                ) -> list[tuple[Value, int]]:
    """The values live in `step` with their bytes on `tile`, largest first (ties by id).
    A storage group shows once, under its member with the most bytes there."""
    by_id: dict[int, Value] | None = None  # built only if the values are not in id order
    best: dict[int, tuple[Value, int]] = {}
    for vid in step.live:
        at = bisect_left(values, vid, key=lambda x: x.id) if by_id is None else -1
        if 0 <= at < len(values) and values[at].id == vid:
            v = values[at]
        else:
            by_id = by_id if by_id is not None else {x.id: x for x in values}
            v = by_id[vid]
        b = int(value_tile_bytes(v, shards[vid])[tile])
        if v.storage_group not in best or b > best[v.storage_group][1]:
            best[v.storage_group] = (v, b)
    return sorted(best.values(), key=lambda vb: (-vb[1], vb[0].id))

