"""What changed between two reports: values added, removed and resized, the peaks per
region and the worst tile of each, the verdict and the program, and beyond the tensors
the memory that is not tensors by class, the placement of the worst tile and, for one
IPU of a pipeline, its stage. Plain data (`diff_reports`); `tileplan diff` renders it
as a table or prints `to_json`.

The sections beyond the tensors (`non_tensor`, `placement` or `placement_skipped`,
`pipeline`) are read field by field (`Section.LENIENT`): a report written before them
has none, and a malformed one (wrong types, negative or absurd numbers) reads as
unknown field by field, never as a crash. Each is None in the diff when neither report
has it.

Values are matched by name and shape; a name held by several values (a tensor and
its converted copy, an operation's results) pairs them most alike first (same
precision and layout, then same precision, then same layout, then same shape), each
tier in id order. Namesakes of different shapes are not the same value: they show as
removed and added. Sizes are per tile (the estimate, `bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tileplan.model.role import MADE
from tileplan.report.model import Report
from tileplan.report.sections import PlacedTile
from tileplan.views.summary import program_fields
from tileplan.views.classes import CLASSES, training_classes
from tileplan.views.columns import value_rows
from tileplan.views.common import (
    group_label, judged_on, NON_TENSOR_CLASSES, operations, region_peaks, RegionPeak, TileSplit, ValueRow,
    verdict_line, worst_tile_split,
)


@dataclass(frozen=True, slots=True)
class ValueChange:
    """One value in A, B or both. `kind`: added (only in B), removed (only in A),
    resized (per-tile bytes differ), changed (same bytes; shape, precision or layout
    differ). `ratio` = B bytes / A bytes to 3 decimals, None when either is unknown
    or A is 0."""

    kind: str
    name: str
    group: str
    role: str | None
    a: ValueRow | None
    b: ValueRow | None

    @property
    def a_bytes(self) -> int | None:
        return None if self.a is None else self.a.bytes

    @property
    def b_bytes(self) -> int | None:
        return None if self.b is None else self.b.bytes

    @property
    def delta(self) -> int | None:
        a, b = self.a_bytes, self.b_bytes
        if self.kind == "added":
            return b
        if self.kind == "removed":
            return None if a is None else -a
        return None if a is None or b is None else b - a

    @property
    def ratio(self) -> float | None:
        a, b = self.a_bytes, self.b_bytes
        return None if a is None or b is None or a == 0 else round(b / a, 3)

    def to_json(self) -> dict[str, Any]:
        side = lambda r: None if r is None else {  # noqa: E731
            "id": r.id, "bytes": r.bytes, "shape": list(r.shape), "precision": r.precision, "layout": r.layout}
        return {"kind": self.kind, "name": self.name, "group": self.group, "role": self.role,
                "a": side(self.a), "b": side(self.b), "delta": self.delta, "ratio": self.ratio}


@dataclass(frozen=True, slots=True)
class GroupChange:
    """Resized values folded by value group, sizes and precisions: `count` values of
    `group` went from `a_bytes` to `b_bytes` per tile each (27 layers' `mlp.up.weight`:
    3376 -> 6744). `label` names an intermediate's group by its operation (in A)."""

    group: str
    label: str
    role: str | None
    count: int
    a_bytes: int | None
    b_bytes: int | None
    a_precision: str
    b_precision: str
    ratio: float | None

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "label": self.label, "role": self.role, "count": self.count,
                "a_bytes": self.a_bytes, "b_bytes": self.b_bytes, "a_precision": self.a_precision,
                "b_precision": self.b_precision, "ratio": self.ratio}


@dataclass(frozen=True, slots=True)
class PeakChange:
    """One region's peak in A and B (None where unknown) and the change."""

    region: str
    a: RegionPeak
    b: RegionPeak

    @property
    def delta(self) -> int | None:
        return None if self.a.peak is None or self.b.peak is None else self.b.peak - self.a.peak

    def to_json(self) -> dict[str, Any]:
        return {"region": self.region, "a": self.a.to_json(), "b": self.b.to_json(), "delta": self.delta}


def _delta(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else b - a


@dataclass(frozen=True, slots=True)
class WorstTile:
    """Where one region peaks in A and B: the tile (None when judged on the estimate)
    and the step (None when unknown). `a_judged_on`/`b_judged_on`: "exact" (the real
    worst tile) or "estimate"."""

    region: str
    a_tile: int | None
    a_step: int | None
    b_tile: int | None
    b_step: int | None
    a_judged_on: str
    b_judged_on: str

    @property
    def changed(self) -> bool:
        return (self.a_tile, self.a_step) != (self.b_tile, self.b_step)

    def to_json(self) -> dict[str, Any]:
        return {"region": self.region, "a": {"tile": self.a_tile, "step": self.a_step, "judged_on": self.a_judged_on},
                "b": {"tile": self.b_tile, "step": self.b_step, "judged_on": self.b_judged_on},
                "changed": self.changed}


#: rows of the non-tensor diff: the classes, then their total against the reserve
NON_TENSOR_ROWS = (*NON_TENSOR_CLASSES, ("total", "total"), ("reserve", "reserve"), ("over_reserve", "over reserve"))


@dataclass(frozen=True, slots=True)
class NonTensorChange:
    """One class of the memory that is not tensors (estimate per tile), or its total,
    the reserve or the bytes over it, in A and B. None where that report has no
    `non_tensor` section (`a_present`/`b_present` on `NonTensorDiff`) or the field is
    malformed."""

    key: str
    label: str
    a: int | None
    b: int | None

    @property
    def delta(self) -> int | None:
        return _delta(self.a, self.b)

    def to_json(self) -> dict[str, Any]:
        return {"class": self.key, "label": self.label, "a": self.a, "b": self.b, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class NonTensorDiff:
    a_present: bool
    b_present: bool
    rows: tuple[NonTensorChange, ...]

    def row(self, key: str) -> NonTensorChange:
        return next(r for r in self.rows if r.key == key)

    def to_json(self) -> dict[str, Any]:
        return {"a_present": self.a_present, "b_present": self.b_present, "rows": [r.to_json() for r in self.rows]}


def _non_tensor(report: Report) -> dict[str, int | None] | None:
    section = report.sections.non_tensor
    if section is None:
        return None
    return {key: getattr(section, key) for key, _ in NON_TENSOR_ROWS}


@dataclass(frozen=True, slots=True)
class PlacementSide:
    """The placement of one report's worst tiles as the diff reads it. `state`:
    "placed" (a `placement` section: `verdict` and its first, worst, tile), "skipped"
    (a `placement_skipped` section: too many buffers; `reason`), "not placed" (no
    section: tileplan places only a plan that fits by bytes) or "absent" (no section
    in a report that fits: written without placement). Numbers are None when unknown."""

    state: str
    verdict: str | None = None
    tile: int | None = None
    height: int | None = None
    lower_bound: int | None = None
    gaps: int | None = None
    capacity: int | None = None
    reason: str | None = None

    @property
    def present(self) -> bool:
        return self.state in ("placed", "skipped")

    def text(self) -> str:
        """The placement verdict in one line, for people."""
        if self.state == "placed":
            return self.verdict if self.verdict is not None else "placed (verdict unknown)"
        if self.state == "skipped":
            if self.reason is not None:
                return f"not placed: {self.reason}"
            return "not placed: " + ("a tile" if self.tile is None else f"tile {self.tile}") + " has too many buffers"
        if self.state == "not placed":
            return "not placed: the plan does not fit by bytes"
        return "no placement in the report"

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "verdict": self.verdict, "text": self.text(), "tile": self.tile,
                "height": self.height, "lower_bound": self.lower_bound, "gaps": self.gaps,
                "capacity": self.capacity, "reason": self.reason}


def _placement(report: Report) -> PlacementSide:
    section = report.sections.placement
    if section is not None:
        first = section.tiles[0] if section.tiles else PlacedTile()
        return PlacementSide("placed", section.verdict, first.tile, first.height, first.lower_bound, first.gaps,
                             first.capacity)
    skipped = report.sections.placement_skipped
    if skipped is not None:
        return PlacementSide("skipped", tile=skipped.tile, reason=skipped.reason)
    return PlacementSide("absent" if report.fits_budget or report.scope != "program" else "not placed")


@dataclass(frozen=True, slots=True)
class PlacementDiff:
    a: PlacementSide
    b: PlacementSide

    def changes(self) -> tuple[tuple[str, int | None, int | None, int | None], ...]:
        """(field, A, B, B - A) for the worst placed tile's numbers."""
        return tuple((f, getattr(self.a, f), getattr(self.b, f), _delta(getattr(self.a, f), getattr(self.b, f)))
                     for f in ("height", "lower_bound", "gaps", "capacity"))

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a.to_json(), "b": self.b.to_json(),
                "changes": [{"field": f, "a": a, "b": b, "delta": d} for f, a, b, d in self.changes()]}


@dataclass(frozen=True, slots=True)
class Stage:
    """Which IPU of a pipeline a report is (its `pipeline` section): IPU `ipu` of
    `ipus`, holding layers `first_layer` to `end_layer - 1` of the split
    `layers_per_ipu`. None where the section does not say (or is malformed)."""

    ipu: int | None
    ipus: int | None
    first_layer: int | None
    end_layer: int | None
    layers_per_ipu: tuple[int, ...] | None

    def text(self) -> str:
        ipu = "IPU ?" if self.ipu is None else f"IPU {self.ipu}"
        of = "" if self.ipus is None else f" of {self.ipus}"
        if self.first_layer is not None and self.end_layer is not None and self.end_layer > self.first_layer:
            layers = f"layers {self.first_layer} to {self.end_layer - 1}"
        elif self.first_layer is not None and self.end_layer == self.first_layer:
            layers = "no layers"
        else:
            layers = "layers unknown"
        split = "" if self.layers_per_ipu is None else f" (layers_per_ipu {list(self.layers_per_ipu)})"
        return f"{ipu}{of}: {layers}{split}"

    def to_json(self) -> dict[str, Any]:
        return {"ipu": self.ipu, "ipus": self.ipus,
                "layers": None if self.first_layer is None or self.end_layer is None
                else [self.first_layer, self.end_layer],
                "layers_per_ipu": None if self.layers_per_ipu is None else list(self.layers_per_ipu),
                "text": self.text()}


def _stage(report: Report) -> Stage | None:
    section = report.sections.pipeline
    if section is None:
        return None
    first = end = None
    if section.layers is not None and section.layers[1] >= section.layers[0]:
        first, end = section.layers
    return Stage(section.ipu, section.ipus, first, end, section.layers_per_ipu)


@dataclass(frozen=True, slots=True)
class PipelineDiff:
    """The stage of each report (None: not one IPU of a pipeline). `same_pipeline`:
    both are stages of one split (the same `layers_per_ipu`), e.g. its IPU 0 and 1,
    whose values differ by the layers each holds, not by a change."""

    a: Stage | None
    b: Stage | None

    @property
    def same_pipeline(self) -> bool:
        return (self.a is not None and self.b is not None and self.a.layers_per_ipu is not None
                and self.a.layers_per_ipu == self.b.layers_per_ipu and self.a.ipus == self.b.ipus)

    def to_json(self) -> dict[str, Any]:
        return {"a": None if self.a is None else self.a.to_json(), "b": None if self.b is None else self.b.to_json(),
                "same_pipeline": self.same_pipeline}


@dataclass(frozen=True, slots=True)
class Diff:
    program: tuple[tuple[str, str | None, str | None], ...]  # (field, A, B) where they differ
    a_verdict: str
    b_verdict: str
    a_fits: bool
    b_fits: bool
    a_scope: str
    b_scope: str
    peaks: tuple[PeakChange, ...]
    a_steps: int
    b_steps: int
    values: tuple[ValueChange, ...]  # added, removed, resized, changed; biggest change first in each
    resized_groups: tuple[GroupChange, ...]
    unchanged: int
    worst_tiles: tuple[WorstTile, ...] = ()  # per region, as `peaks`
    non_tensor: NonTensorDiff | None = None  # None: neither report has the section
    placement: PlacementDiff | None = None  # None: neither report has a placement or placement_skipped section
    pipeline: PipelineDiff | None = None  # None: neither report is one IPU of a pipeline
    #: each report's exact worst tile at its peak, always live and not always live
    a_split: TileSplit | None = None
    b_split: TileSplit | None = None
    #: a training report's worst tile by class, A and B: (class, always live, A bytes,
    #: B bytes; None where that report has no such row, or is not a training report)
    training: tuple[tuple[str, bool, int | None, int | None], ...] | None = None

    def of_kind(self, kind: str) -> tuple[ValueChange, ...]:
        return tuple(v for v in self.values if v.kind == kind)

    @property
    def verdict_changed(self) -> bool:
        return self.a_fits != self.b_fits or self.a_scope != self.b_scope

    def to_json(self) -> dict[str, Any]:
        counts = {k: len(self.of_kind(k)) for k in ("added", "removed", "resized", "changed")}
        return {
            "program": [{"field": f, "a": a, "b": b} for f, a, b in self.program],
            "verdict": {"a": self.a_verdict, "b": self.b_verdict, "a_fits": self.a_fits, "b_fits": self.b_fits,
                        "a_scope": self.a_scope, "b_scope": self.b_scope, "changed": self.verdict_changed},
            "peaks": [p.to_json() for p in self.peaks],
            "steps": {"a": self.a_steps, "b": self.b_steps},
            "counts": {**counts, "unchanged": self.unchanged},
            "values": {k: [v.to_json() for v in self.of_kind(k)] for k in ("added", "removed", "resized", "changed")},
            "resized_groups": [g.to_json() for g in self.resized_groups],
            "worst_tiles": [w.to_json() for w in self.worst_tiles],
            "non_tensor": None if self.non_tensor is None else self.non_tensor.to_json(),
            "placement": None if self.placement is None else self.placement.to_json(),
            "pipeline": None if self.pipeline is None else self.pipeline.to_json(),
            "always_live": {side: None if t is None else {"tile": t.tile, "always_live": t.resident,
                                                          "not_always_live": t.step_dependent}
                            for side, t in (("a", self.a_split), ("b", self.b_split))},
            **({} if self.training is None else {"training": [  # training reports only
                {"class": name, "always_live": live, "a": a, "b": b, "delta": _delta(a, b)}
                for name, live, a, b in self.training]}),
        }


def pair_values(a: tuple[ValueRow, ...], b: tuple[ValueRow, ...]) -> list[tuple[ValueRow | None, ValueRow | None]]:
    """Pairs of the same value in A and B, in the order of A, then B's values that A
    does not have (see the module docstring for the matching)."""
    by_name: dict[str, list[ValueRow]] = {}
    for r in b:
        by_name.setdefault(r.name, []).append(r)
    a_by_name: dict[str, list[ValueRow]] = {}
    for r in a:
        a_by_name.setdefault(r.name, []).append(r)
    match: dict[int, ValueRow] = {}  # A id -> B row
    taken: set[int] = set()
    for name, rows in a_by_name.items():
        for same in (lambda x, y: (x.shape, x.precision, x.layout_text) == (y.shape, y.precision, y.layout_text),
                     lambda x, y: (x.shape, x.precision) == (y.shape, y.precision),
                     lambda x, y: (x.shape, x.layout_text) == (y.shape, y.layout_text),
                     lambda x, y: x.shape == y.shape):
            for r in rows:
                if r.id in match:
                    continue
                other = next((o for o in by_name.get(name, []) if o.id not in taken and same(r, o)), None)
                if other is not None:
                    match[r.id] = other
                    taken.add(other.id)
    pairs: list[tuple[ValueRow | None, ValueRow | None]] = [(r, match.get(r.id)) for r in a]
    pairs += [(None, r) for r in b if r.id not in taken]
    return pairs


def _size_key(v: ValueChange) -> tuple:
    row = v.a or v.b
    assert row is not None, "a change has a value in A, B or both"
    return (v.delta is None, -abs(v.delta or 0), v.name, row.id)


def diff_reports(a: Report, b: Report) -> Diff:
    changes: list[ValueChange] = []
    unchanged = 0
    for x, y in pair_values(value_rows(a), value_rows(b)):
        if x is None or y is None:
            kind = "added" if x is None else "removed"
        elif x.bytes != y.bytes:
            kind = "resized"
        elif (x.shape, x.precision, x.layout_text) != (y.shape, y.precision, y.layout_text):
            kind = "changed"
        else:
            unchanged += 1
            continue
        row = x or y
        assert row is not None, "a pair has a value in A, B or both"
        changes.append(ValueChange(kind, row.name, row.group, row.role, x, y))
    order = {"added": 0, "removed": 1, "resized": 2, "changed": 3}
    changes.sort(key=lambda v: (order[v.kind], *_size_key(v)))

    groups: dict[tuple, list[ValueChange]] = {}
    for v in changes:
        if v.kind == "resized":
            assert v.a is not None and v.b is not None, "a resized value is in A and B"
            key = (v.group, v.role, v.a_bytes, v.b_bytes, v.a.precision, v.b.precision)
            groups.setdefault(key, []).append(v)
    ops = operations(a)
    folded = [GroupChange(g, group_label(g, ops), role, len(vs), ab, bb, ap, bp, vs[0].ratio)
              for (g, role, ab, bb, ap, bp), vs in groups.items()]
    # the model's own tensors first (their names mean something to its authors), then what operations made
    folded.sort(key=lambda g: (g.role in MADE, -abs(((g.b_bytes or 0) - (g.a_bytes or 0)) * g.count),
                               g.group, g.a_bytes or 0, g.a_precision))

    pa, pb = dict(program_fields(a, defaults=True)), dict(program_fields(b, defaults=True))
    program = tuple((k, pa.get(k), pb.get(k)) for k in sorted(set(pa) | set(pb)) if pa.get(k) != pb.get(k))
    peaks = tuple(PeakChange(ra.region, ra, rb) for ra, rb in zip(region_peaks(a), region_peaks(b), strict=True))
    ja, jb = judged_on(a), judged_on(b)
    worst = tuple(WorstTile(p.region, p.a.tile, p.a.step, p.b.tile, p.b.step, ja, jb) for p in peaks)
    nta, ntb = _non_tensor(a), _non_tensor(b)
    non_tensor = None if nta is None and ntb is None else NonTensorDiff(
        nta is not None, ntb is not None,
        tuple(NonTensorChange(key, label, None if nta is None else nta[key], None if ntb is None else ntb[key])
              for key, label in NON_TENSOR_ROWS))
    pla, plb = _placement(a), _placement(b)
    placement = PlacementDiff(pla, plb) if pla.present or plb.present else None
    sa, sb = _stage(a), _stage(b)
    pipeline = None if sa is None and sb is None else PipelineDiff(sa, sb)
    return Diff(program=program, a_verdict=verdict_line(a), b_verdict=verdict_line(b), a_fits=a.fits_budget,
                b_fits=b.fits_budget, a_scope=a.scope, b_scope=b.scope, peaks=peaks, a_steps=len(a.steps),
                b_steps=len(b.steps), values=tuple(changes), resized_groups=tuple(folded), unchanged=unchanged,
                worst_tiles=worst, non_tensor=non_tensor, placement=placement, pipeline=pipeline,
                a_split=worst_tile_split(a), b_split=worst_tile_split(b), training=_training(a, b))


def _training(a: Report, b: Report) -> tuple[tuple[str, bool, int | None, int | None], ...] | None:
    """Each class (always live apart) on each report's worst tile at its peak."""
    ta, tb = training_classes(a), training_classes(b)
    if ta is None and tb is None:
        return None
    rows_a = {(n, live): x for n, live, x, _ in (ta.rows if ta is not None else ())}
    rows_b = {(n, live): x for n, live, x, _ in (tb.rows if tb is not None else ())}
    keys = sorted(set(rows_a) | set(rows_b), key=lambda k: (not k[1], CLASSES.index(k[0]) if k[0] in CLASSES else 99))
    return tuple((n, live, rows_a.get((n, live)), rows_b.get((n, live))) for n, live in keys)
