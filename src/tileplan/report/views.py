"""Pieces shared by the view models people read (summary, liveness, diff).

Plain data from a `Report`, nothing rendered. A size the report does not know (null,
or the reference's sentinel 2^64 - 1) is `None` here and stays `None` up to the
renderer, which says "unknown": no view model turns an unknown into a number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tileplan.model.info import Mode
from tileplan.model.layout import Layout
from tileplan.model.precision import Precision
from tileplan.model.rows import Rows
from tileplan.model.timeline import REGIONS, StepTable, Value
from tileplan.report.classes import TrainingClasses, training_classes
from tileplan.report.fields import U64_MAX
from tileplan.report.model import Report
from tileplan.report.sections import Operation, RejectedOperation

REGION_ORDER = ("total", "standard", "interleaved")


def known(x: int | None) -> int | None:
    """`x`, or None when it is null or the reference's sentinel for "unknown"."""
    return None if x is None or x == U64_MAX else x


def percent(part: int | None, whole: int | None) -> float | None:
    """part / whole in percent to one decimal (for people), None when either is unknown."""
    if part is None or not whole:
        return None
    return round(100 * part / whole, 1)


def layout_brief(layout: Layout) -> str:
    """A layout in a few words: order, partitions per axis, replicas, memory region.

    `Layout { order: BlockMajor(TransposedMatrix { row_block: 160, column_block: 16 }),
    tiling: { replicas: 8, axes: [FromEnd(2) 46 partitions, FromEnd(1) 4] }, ... Standard }`
    -> `BlockMajor 160x16, FromEnd(2)/46 x FromEnd(1)/4, 8 replicas, Standard`.
    """
    order = layout.order.kind
    if order == "BlockMajor":
        order = f"BlockMajor {layout.order.row_block}x{layout.order.column_block}"
    elif order == "AmpTransposedLeft":
        order = "Amp(TransposedLeft)"
    axes = " x ".join(f"{a.axis.to_text()}/{a.partitions}" for a in layout.tiling.axes) or "untiled"
    replicas = layout.tiling.replicas
    parts = [order, axes]
    if replicas > 1:
        parts.append(f"{replicas} replicas")
    parts.append(layout.memory_class.region)
    return ", ".join(parts)


#: the FP8 formats by what people call them (sign, exponent and mantissa bits)
FP8_DISPLAY = {"F8F143": "F8 E4M3", "F8F152": "F8 E5M2"}
_FP8_TEXT = re.compile(r"(\w+) \{ scale_exponent: (-?\d+) \}")


def precision_display(text: str) -> str:
    """The one form people read a precision in, from the report's text form:
    `F8F143 { scale_exponent: -4 }` -> `F8 E4M3 x2^-4` (F8F152 is E5M2); other
    precisions by their plain name (`F16`)."""
    m = _FP8_TEXT.fullmatch(text)
    if not m:
        return text
    return f"{FP8_DISPLAY.get(m.group(1), m.group(1))} x2^{m.group(2)}"


def operation_brief(text: str) -> str:
    """A step's operation text without its parameters (`Copy { mapping: ... }` -> `Copy`)."""
    return text.split(" {")[0]


@dataclass(frozen=True, slots=True)
class ValueRow:
    """One value as people read it. `label` is its group for people (see
    `group_label`); `precision` is in the display form (`precision_display`); `bytes`
    is per tile (the planner's estimate: the largest shard, aligned, times copies);
    `first_step`/`last_step` bound its live range (None when it is live in no step)."""

    id: int
    name: str
    group: str
    label: str
    role: str | None
    shape: tuple[int, ...]
    precision: str
    layout: str
    layout_text: str
    region: str
    storage_group: int
    bytes: int | None
    first_step: int | None
    last_step: int | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "group": self.group, "label": self.label, "role": self.role,
                "shape": list(self.shape), "precision": self.precision, "layout": self.layout,
                "layout_text": self.layout_text, "region": self.region, "storage_group": self.storage_group,
                "bytes": self.bytes, "first_step": self.first_step, "last_step": self.last_step}


_RESULT = re.compile(r"^operation (\d+) result (\d+)$")


def group_label(group: str, ops: Mapping[int, Operation]) -> str:
    """`operation 4 result 0` -> `vit.encoder.layer{i}.attention.qkv result` (its
    operation's name); any other group is its own label."""
    m = _RESULT.match(group)
    if not m or int(m.group(1)) not in ops:
        return group
    k = int(m.group(2))
    return f"{ops[int(m.group(1))].name} result" + (f" {k}" if k else "")


def value_rows(report: Report) -> tuple[ValueRow, ...]:
    """Every value of the report, in id order."""
    return tuple(ValueRows(value_columns(report), operations(report)))


@dataclass(frozen=True, slots=True)
class RegionPeak:
    """The peak of one region against its budget. `total` is what the verdict judges
    (both regions plus the exchange rows); `standard` has no budget of its own: past
    the non-interleaved region it overflows into the interleaved one, so its
    `budget` is that region's size, for reference. `tile` is None when the verdict is
    judged on the estimate; `peak`, `step`, `margin`, `percent` are None when unknown.
    `overflow`: for the standard region, the bytes past the non-interleaved region that
    live in the interleaved one (0 when none; legal, not a failure); None elsewhere."""

    region: str
    peak: int | None
    budget: int
    step: int | None
    tile: int | None
    margin: int | None
    percent: float | None
    estimate: int | None

    @property
    def overflow(self) -> int | None:
        if self.region != "standard" or self.peak is None:
            return None
        return max(0, self.peak - self.budget)

    def to_json(self) -> dict[str, Any]:
        return {"region": self.region, "peak": self.peak, "budget": self.budget, "step": self.step,
                "tile": self.tile, "margin": self.margin, "percent": self.percent, "estimate": self.estimate,
                "overflow": self.overflow}


def standard_budget(report: Report) -> int:
    return report.budget_bytes - report.interleaved_budget_bytes


def exchange_bytes(report: Report) -> int | None:
    rows, row_bytes = known(report.peak.exchange_rows), report.exchange_row_bytes
    return None if rows is None or row_bytes is None else rows * row_bytes


def judged_on(report: Report) -> str:
    """"exact" when the verdict was judged on the real worst tiles, else "estimate"."""
    verdict = report.sections.verdict
    return (verdict.judged_on or "estimate") if verdict is not None else "estimate"


def region_peaks(report: Report) -> tuple[RegionPeak, ...]:
    """Total, standard and interleaved peaks, from the report's `verdict` when it has
    one (exact, on the worst tile), else from the version-1 fields (the estimate)."""
    budgets = {"total": report.budget_bytes, "standard": standard_budget(report),
               "interleaved": report.interleaved_budget_bytes}
    estimates = {"total": (known(report.effective_peak_bytes), known(report.total_peak_step)),
                 "standard": (known(report.peak.standard), known(report.standard_peak_step)),
                 "interleaved": (known(report.peak.interleaved), known(report.interleaved_peak_step))}
    verdict = report.sections.verdict
    stated = {r.region: r for r in verdict.regions} if verdict is not None else {}
    out = []
    for region in REGION_ORDER:
        budget = budgets[region]
        estimate, estimate_step = estimates[region]
        if region in stated:
            r = stated[region]
            peak, step, tile = r.peak, r.step, r.tile
            estimate = estimate if r.estimate is None else r.estimate
        else:
            peak, step, tile = estimate, estimate_step, None
        if peak is None:
            step = None
        out.append(RegionPeak(region, peak, budget, step, tile, None if peak is None else budget - peak,
                              percent(peak, budget), estimate))
    return tuple(out)


def operations(report: Report) -> Mapping[int, Operation]:
    """The report's `operations` by index (empty for a report without them)."""
    ops = report.sections.operations
    return ops.by_index if ops is not None else {}


def rejected_operation(report: Report) -> RejectedOperation | None:
    return report.sections.rejected_operation


def verdict_line(report: Report) -> str:
    """The verdict in one line, from the report's own fields (nothing recomputed):
    the first line `tileplan plan` prints. The word follows `fits_budget`."""
    if report.scope != "program":
        rejected = rejected_operation(report)
        where = (f"stopped at operation {rejected.index} ({rejected.name}): {rejected.reason}"
                 if rejected else f"scope {report.scope}")
        unknown = sum(known(v.bytes) is None for v in report.values)
        return f"Not planned: {where}; {unknown} values of unknown size"
    total = region_peaks(report)[0]
    verdict = report.sections.verdict
    if not report.fits_budget and verdict is not None and verdict.out_of_memory:
        return verdict.out_of_memory
    where = f"worst tile {total.tile} at step {total.step}" if total.tile is not None else f"step {total.step}"
    used = "unknown" if total.peak is None else str(total.peak)
    margin = "unknown" if total.margin is None else f"{total.margin} B"
    word = "Fits" if report.fits_budget else "Does not fit"
    return f"{word}: {where}: {used} bytes used, budget {total.budget} (margin {margin})"


NON_TENSOR_CLASSES = (("vertex_code", "vertex code"), ("vertex_state", "vertex state"),
                      ("exchange_code", "exchange code"), ("control_code", "control code"), ("stack", "stack"))


@dataclass(frozen=True, slots=True)
class Extras:
    """What a report says beyond the tensors, as people read it: memory that is not
    tensors (estimate per tile, by class, against the reserve), the placement verdict of
    its worst tiles, and which IPU of a pipeline it is. None where the report has none
    (or a malformed section: the views never crash on one)."""

    non_tensor: tuple[tuple[str, int], ...] | None
    non_tensor_total: int | None
    reserve: int | None
    over_reserve: int | None
    placement: str | None
    pipeline: str | None
    #: a training report's bytes by class on the worst tile at its peak (`peak_tile.classes`):
    #: the tile, the step and (class, always live, bytes, values) rows
    training: TrainingClasses | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"non_tensor": None if self.non_tensor is None else dict(self.non_tensor),
               "non_tensor_total": self.non_tensor_total, "reserve": self.reserve, "over_reserve": self.over_reserve,
               "placement": self.placement, "pipeline": self.pipeline}
        if self.training is not None:  # a training report's only
            out["training"] = self.training.to_json()
        return out


def extras(report: Report) -> Extras:
    sections = report.sections
    nt = sections.non_tensor
    classes = total = reserve = over = None
    if nt is not None:
        found = [(label, getattr(nt, key)) for key, label in NON_TENSOR_CLASSES]
        if all(b is not None for _, b in found):
            classes = tuple((label, b) for label, b in found if b is not None)
            total, reserve, over = nt.total, nt.reserve, nt.over_reserve
    placement = None
    section = sections.placement
    if section is not None and section.verdict is not None:
        first = section.tiles[0] if section.tiles else None
        where = f" (tile {first.tile}: {first.height} B placed, {first.gaps} B of gaps)" if first is not None \
            and first.height is not None and first.tile is not None and first.gaps is not None else ""
        placement = f"{section.verdict}{where}"
    skipped = sections.placement_skipped
    if placement is None and skipped is not None and skipped.reason is not None:
        placement = f"not placed: {skipped.reason}"
    pipeline = None
    stage = sections.pipeline
    if stage is not None and stage.ipu is not None and stage.ipus is not None and stage.layers is not None \
            and stage.layers_per_ipu is not None:
        first_layer, end = stage.layers
        program = sections.program
        mode = (program.mode if program is not None else Mode.INFERENCE).value
        pipeline = (f"IPU {stage.ipu} of {stage.ipus} ({mode} pipeline): layers {first_layer} to {end - 1}; "
                    f"layers_per_ipu {list(stage.layers_per_ipu)}")
    return Extras(classes, total, reserve, over, placement, pipeline, training_classes(report))


# Columns ----------------------------------------------------------------------------
# The views work on the report as columns (numpy), in passes linear in its values and
# steps: no per-step loop over live sets, no object per step. Byte figures are int64;
# a report whose numbers do not fit (only a hostile one: a tile has well under 2^40
# bytes) gets exact Python integers in object arrays, through the same code.

SAFE_INT = 1 << 40


def int_column(xs: Sequence[int] | np.ndarray) -> np.ndarray:
    """`xs` as int64, or as an object array of exact integers when one of them is
    beyond +-2^40 (a tile has under 2^21 bytes: such a figure is absurd, and
    sums of it over a million steps could wrap)."""
    try:
        a = np.array(xs, dtype=np.int64)
    except OverflowError:
        return objects(xs)
    if a.size and (a.max() >= SAFE_INT or a.min() <= -SAFE_INT):
        return objects(xs)
    return a


def objects(xs: Sequence[Any] | np.ndarray) -> np.ndarray:
    out = np.empty(len(xs), dtype=object)
    out[:] = list(xs)
    return out


def distinct_sorted(a: np.ndarray) -> np.ndarray:
    """The distinct entries of a sorted array (np.unique without its sort or hash)."""
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def first_of_runs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct entries, index of the first of each) of a sorted array."""
    at = np.flatnonzero(np.r_[True, a[1:] != a[:-1]]) if len(a) else np.zeros(0, dtype=np.int64)
    return a[at], at


def over_intervals(n: int, first: np.ndarray, last: np.ndarray, weights: np.ndarray | int) -> np.ndarray:
    """Per step of `n`, the sum of `weights` over the intervals [first, last] that hold
    it: a difference array, then a running sum (int64, or exact objects)."""
    dtype = weights.dtype if isinstance(weights, np.ndarray) else np.int64
    diff = np.zeros(n + 1, dtype=dtype)
    if len(first):
        w = weights if isinstance(weights, np.ndarray) else np.full(len(first), weights, dtype=np.int64)
        np.add.at(diff, first, w)
        np.add.at(diff, last + 1, -w)
    return np.cumsum(diff[:-1]) if n else np.zeros(0, dtype=dtype)


@dataclass(frozen=True, slots=True, eq=False)
class StepColumns:
    """A report's steps as columns. `operation` indexes `operation_texts`; `usage[r]`
    is 0 where `usage_known[r]` is False. Live sets are intervals: value `value_ids[k]`
    is live in steps `first[k]`..`last[k]` (inclusive), sorted by value id then first;
    a value has one interval in every report tileplan writes (never overlapping ones)."""

    count: int
    source: np.ndarray
    operation: np.ndarray
    operation_texts: tuple[str, ...]
    execution_count: np.ndarray
    scratch: dict[str, np.ndarray]
    usage: dict[str, np.ndarray]
    usage_known: dict[str, np.ndarray]
    value_ids: np.ndarray
    first: np.ndarray
    last: np.ndarray

    def operation_text(self, i: int) -> str:
        return self.operation_texts[int(self.operation[i])]


def step_columns(report: Report) -> StepColumns:
    """The columns of `report.steps`: a `StepTable`'s own, or built in one pass over
    version-1 `Step` objects (a value listed twice in a step counts once; a live set
    that is not an interval becomes several intervals)."""
    steps = report.steps
    if isinstance(steps, StepTable):
        usage = {"standard": steps.usage_standard, "interleaved": steps.usage_interleaved}
        known_ = {"standard": steps.standard_known, "interleaved": steps.interleaved_known}
        return StepColumns(
            len(steps), steps.source, steps.operation, steps.operation_texts, steps.execution_count,
            {"standard": steps.scratch_standard, "interleaved": steps.scratch_interleaved},
            {r: np.where(known_[r], usage[r], 0) for r in REGIONS}, known_, steps.value_ids, steps.first, steps.last)
    texts: dict[str, int] = {}
    runs: dict[int, list[int]] = {}
    ops, usage_lists = [], {r: [] for r in REGIONS}  # type: ignore[var-annotated]
    for i, s in enumerate(steps):
        ops.append(texts.setdefault(s.operation, len(texts)))
        for r in REGIONS:
            usage_lists[r].append(known(s.usage.get(r)))
        for vid in s.live:
            run = runs.get(vid)
            if run is None:
                runs[vid] = [i, i]
            elif run[-1] == i - 1:
                run[-1] = i
            elif run[-1] != i:
                run += (i, i)
    ids, first, last = [], [], []
    for vid in sorted(runs):
        run = runs[vid]
        for k in range(0, len(run), 2):
            ids.append(vid)
            first.append(run[k])
            last.append(run[k + 1])
    return StepColumns(
        len(steps), int_column([s.source for s in steps]), np.array(ops, dtype=np.int64), tuple(texts),
        int_column([s.execution_count for s in steps]),
        {r: int_column([s.scratch.get(r, 0) for s in steps]) for r in REGIONS},
        {r: int_column([0 if u is None else u for u in usage_lists[r]]) for r in REGIONS},
        {r: np.array([u is not None for u in usage_lists[r]], dtype=bool) for r in REGIONS},
        int_column(ids), np.array(first, dtype=np.int64), np.array(last, dtype=np.int64))


REGION_INDEX = {r: k for k, r in enumerate(REGIONS)}


@dataclass(frozen=True, slots=True, eq=False)
class ValueColumns:
    """A report's values as columns, in id order (`values[k]` is the value of row k).
    `bytes` is 0 where not `known`; `region` indexes `REGIONS` (-1: another region);
    `group` indexes `groups`. Live intervals by row: row `at[k]` is live in steps
    `first[k]`..`last[k]`; `first_step`/`last_step` bound each row's live range (-1
    when it is live in no step)."""

    values: tuple[Value, ...]
    id: np.ndarray
    bytes: np.ndarray
    known: np.ndarray
    storage_group: np.ndarray
    region: np.ndarray
    group: np.ndarray
    groups: tuple[str, ...]
    at: np.ndarray
    first: np.ndarray
    last: np.ndarray
    first_step: np.ndarray
    last_step: np.ndarray
    steps: StepColumns

    def __len__(self) -> int:
        return len(self.values)

    def live_at(self, step: int) -> np.ndarray:
        """The rows live in `step`, in id order."""
        hit = (self.first <= step) & (step <= self.last)
        return distinct_sorted(np.sort(self.at[hit]))


def _rows_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The row of each id in `wanted` among the sorted `ids`, -1 where absent."""
    if not len(wanted):
        return np.zeros(0, dtype=np.int64)
    if ids.dtype == object or wanted.dtype == object:
        row_of = {int(v): k for k, v in enumerate(ids)}
        return np.array([row_of.get(int(v), -1) for v in wanted], dtype=np.int64)
    pos = np.searchsorted(ids, wanted)
    found = pos < len(ids)
    found[found] = ids[pos[found]] == wanted[found]
    return np.where(found, pos, -1)


def value_columns(report: Report, steps: StepColumns | None = None) -> ValueColumns:
    """The columns of `report.values` and their live intervals from `steps` (built
    from the report when not given). One pass over the values."""
    steps = step_columns(report) if steps is None else steps
    values = tuple(report.values)
    id_list = [v.id for v in values]
    if any(a > b for a, b in zip(id_list, id_list[1:])):
        values = tuple(sorted(values, key=lambda v: v.id))
        id_list = [v.id for v in values]
    n = len(values)
    region_of: dict[int, int] = {}  # id(layout) -> region index: a few layouts serve many values
    for v in {id(v.layout): v for v in values}.values():
        region_of[id(v.layout)] = REGION_INDEX.get(v.region, -1)
    region = np.array([region_of[id(v.layout)] for v in values], dtype=np.int8)
    groups: dict[str, int] = {}
    group = np.array([groups.setdefault(v.group, len(groups)) for v in values], dtype=np.int64)
    raw = [known(v.bytes) for v in values]
    ids = int_column(id_list)
    rows = _rows_of(ids, steps.value_ids)
    keep = rows >= 0
    at, first, last = rows[keep], steps.first[keep], steps.last[keep]
    first_step = np.full(n, -1, dtype=np.int64)
    last_step = np.full(n, -1, dtype=np.int64)
    if len(at):
        big = np.full(n, steps.count, dtype=np.int64)
        np.minimum.at(big, at, first)
        np.maximum.at(last_step, at, last)
        first_step = np.where(last_step >= 0, big, -1)
    return ValueColumns(
        values=values, id=ids, bytes=int_column([0 if b is None else b for b in raw]),
        known=np.array([b is not None for b in raw], dtype=bool),
        storage_group=int_column([v.storage_group for v in values]), region=region, group=group,
        groups=tuple(groups), at=at, first=first, last=last, first_step=first_step, last_step=last_step, steps=steps)


class ValueRows(Rows[ValueRow]):
    """`ValueRow`s of a report's values in id order, built on demand (one layout's and
    one precision's display text computed once however many values share them)."""

    def __init__(self, cols: ValueColumns, ops: Mapping[int, Operation]) -> None:
        self.cols = cols
        self._ops = ops
        self._layouts: dict[int, tuple[str, str]] = {}
        self._precisions: dict[int, str] = {}
        self._labels: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.cols.values)

    row_name = "value"

    def row(self, k: int) -> ValueRow:
        v = self.cols.values[k]
        layout = self._layouts.get(id(v.layout))
        if layout is None:
            layout = self._layouts[id(v.layout)] = (layout_brief(v.layout), v.layout.to_text())
        precision = self.precision_text(v.precision)
        code = int(self.cols.group[k])
        label = self._labels.get(code)
        if label is None:
            label = self._labels[code] = group_label(v.group, self._ops)
        first, last = int(self.cols.first_step[k]), int(self.cols.last_step[k])
        return ValueRow(id=v.id, name=v.name, group=v.group, label=label, role=v.role, shape=tuple(v.shape),
                        precision=precision, layout=layout[0], layout_text=layout[1], region=v.region,
                        storage_group=v.storage_group, bytes=known(v.bytes),
                        first_step=None if first < 0 else first, last_step=None if last < 0 else last)

    def precision_text(self, p: Precision) -> str:
        text = self._precisions.get(id(p))
        if text is None:
            text = self._precisions[id(p)] = precision_display(p.to_text())
        return text

    def __iter__(self) -> Iterator[ValueRow]:
        for k in range(len(self)):
            yield self[k]


def largest_rows(cols: ValueColumns, rows: np.ndarray, top: int) -> np.ndarray:
    """The `top` largest of `rows` as `by_bytes` orders them: largest first, unknown
    sizes after every known one, ties by id."""
    if not len(rows):
        return rows
    b, ids, unknown = cols.bytes[rows], cols.id[rows], ~cols.known[rows]
    if b.dtype == object or ids.dtype == object:
        slow = sorted(range(len(rows)), key=lambda j: (bool(unknown[j]), -b[j], ids[j]))[:top]
        return rows[np.array(slow, dtype=np.int64)]
    return rows[np.lexsort((ids, -b, unknown))[:top]]


@dataclass(frozen=True, slots=True)
class TileSplit:
    """The worst tile's bytes at its peak, as PopVision splits a tile's memory: always
    live (`resident`: the parameters, buffers and constants with the default policy;
    every declared tensor with the reference policy), not always live
    (`step_dependent`: activations, operands, scratch) and the exchange rows."""

    tile: int
    resident: int
    step_dependent: int
    exchange: int


def worst_tile_split(report: Report) -> TileSplit | None:
    """The exact worst tile's bytes at its peak split into always live and not always
    live (None without the exact accounting)."""
    sections = report.sections
    verdict, exact = sections.verdict, sections.exact
    total = verdict.region("total") if verdict is not None else None
    if exact is None or exact.tiles is None or total is None or total.tile is None:
        return None
    peak, resident = exact.tiles.peak[total.tile], exact.tiles.peak_resident[total.tile]
    return TileSplit(total.tile, resident, peak - resident, total.exchange_bytes or 0)
