"""What changed between two reports: values added, removed and resized, the peaks per
region, the verdict and the program. Plain data (`diff_reports`); `tileplan diff`
renders it as a table or prints `to_json`.

Values are matched by name and shape; a name held by several values (a tensor and
its converted copy, an operation's results) pairs them most alike first (same
precision and layout, then same precision, then same layout, then same shape), each
tier in id order. Namesakes of different shapes are not the same value: they show as
removed and added. Sizes are per tile (the estimate, `bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tileplan.report.format import Report
from tileplan.report.summary import program_fields
from tileplan.report.views import RegionPeak, ValueRow, group_label, operations, region_peaks, value_rows, verdict_line


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
    # the model's own tensors first (their names mean something to its authors), then intermediates
    folded.sort(key=lambda g: (g.role == "intermediate", -abs(((g.b_bytes or 0) - (g.a_bytes or 0)) * g.count),
                               g.group, g.a_bytes or 0, g.a_precision))

    pa, pb = dict(program_fields(a)), dict(program_fields(b))
    program = tuple((k, pa.get(k), pb.get(k)) for k in sorted(set(pa) | set(pb)) if pa.get(k) != pb.get(k))
    peaks = tuple(PeakChange(ra.region, ra, rb) for ra, rb in zip(region_peaks(a), region_peaks(b), strict=True))
    return Diff(program=program, a_verdict=verdict_line(a), b_verdict=verdict_line(b), a_fits=a.fits_budget,
                b_fits=b.fits_budget, a_scope=a.scope, b_scope=b.scope, peaks=peaks, a_steps=len(a.steps),
                b_steps=len(b.steps), values=tuple(changes), resized_groups=tuple(folded), unchanged=unchanged)
