"""The sections tileplan adds to a report (docs/report-format.md, "tileplan's
additions"), typed: one frozen dataclass each, read by `from_json` and written by
`to_json` from its fields' declarations (`tileplan.report.fields`), the JSON Schema
of each generated from the same declarations (`tileplan.report.schema`). Here the
program, its operations, the verdict and the exact accounting, and every section by
its key (`SECTIONS`); the what-if sections in `sections_whatif`, those beyond the
tensors in `sections_beyond`.

The builder (`app.build`) makes them from a plan, `check` re-derives them, the
views read their fields. Sections views read are read strictly (a wrong field is one
located `InputError`); the sections beyond the tensors (`non_tensor`, `placement`,
`placement_skipped`, `pipeline`, `available_memory_proportion`, `what_if_skipped`)
are read field by field (`LENIENT`): a malformed field reads as None, never as a
crash, and a report written before them has none.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar, Literal, Self

import numpy as np

from tileplan.errors import InputError
from tileplan.model.info import Mode
from tileplan.report.fields import (
    U64_MAX,
    Bounds,
    Context,
    Count,
    Fields,
    Positive,
    Section,
    Signed,
    StepCount,
    StepIndex,
    TileCount,
    TileIndex,
    brief,
    json_field,
    slots_of,
)

from tileplan.report.sections_beyond import (
    AvailableMemoryProportion,
    Buffer,
    CapExceeded,
    NonTensor,
    NonTensorCounts,
    Pipeline,
    PlacedTile,
    Placement,
    PlacementSkipped,
)
from tileplan.report.sections_band import BandMeasurement, ErrorBand
from tileplan.report.sections_whatif import Baseline, Sweep, SweepRow, WhatIf, WhatIfRow, WhatIfSkipped

REGION_NAMES = ("total", "standard", "interleaved")
#: bins of the exact accounting's histogram a report may hold
MAX_HISTOGRAM_BINS = 1 << 12
#: tiles of a machine a report may hold (the IPU21 has 1472)
MAX_TILES = 1 << 16
#: `exact.steps` columns, in order
EXACT_COLUMNS = ("worst_tile", "total", "standard", "interleaved")

Region = Literal["total", "standard", "interleaved"]
Scalar = str | int | float | bool | None


# program and operations -------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class Program(Section):
    """What was planned: the model's name, the machine, the policy and the model's own
    options, as (key, value) pairs in the report's order (name, machine and policy
    first in what tileplan writes); every value a string, a number, true/false or null."""

    KEY: ClassVar[str] = "program"
    DESCRIPTION: ClassVar[str | None] = (
        "what was planned: the model's name, the machine, the policy and the model's own options (a tower's "
        "layers, weights and MAP head; a synthetic chain's sizes)")
    entries: tuple[tuple[str, Scalar], ...] = ()

    @classmethod
    def of(cls, name: str, machine: str, policy: str, options: dict[str, Any]) -> Program:
        return cls(entries=(("name", name), ("machine", machine), ("policy", policy),
                            *((k, options[k]) for k in sorted(options))))

    def get(self, key: str) -> Scalar:
        return next((v for k, v in self.entries if k == key), None)

    @property
    def name(self) -> str | None:
        name = self.get("name")
        return name if isinstance(name, str) else None

    @property
    def mode(self) -> Mode:
        """What the program ran: training when its entries say `"mode": "training"`."""
        return Mode.TRAINING if self.get("mode") == Mode.TRAINING.value else Mode.INFERENCE

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        entries = []
        for key in f.mapping().obj:
            x = f.sub(key)
            if isinstance(x.obj, (dict, list)):
                raise InputError(f"expected a string, a number or true/false, found {brief(x.obj)}", x.place)
            if isinstance(x.obj, (int, float)) and not isinstance(x.obj, bool):
                x.number()
            entries.append((key, x.obj))
        return cls(entries=tuple(entries))

    def to_json(self) -> dict[str, Any]:
        return dict(self.entries)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {"type": "object", "description": cls.DESCRIPTION, "required": ["name", "machine", "policy"],
                "properties": {"name": {"type": "string"}, "machine": {"type": "string"},
                               "policy": {"type": "string"}, "layers": {"$ref": "#/$defs/positive"},
                               "weights": {"type": "string"}, "map_head": {"type": "boolean"},
                               "unroll": {"type": "boolean"}},
                "additionalProperties": {"type": ["string", "integer", "boolean", "null"]}}


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation(Section):
    """One planned operation and its steps [first, last] (consecutive)."""

    index: Count
    origin: Count | None = None
    name: str
    kind: str | None = None
    execution_count: Positive = 1
    steps: tuple[StepIndex, StepIndex]

    def validate(self, place: str, bounds: Bounds | None) -> None:
        first, last = self.steps
        if first > last:
            raise InputError(f"expected [first, last] steps in order, found first {first} after last {last}",
                             f"{place}.steps")


def _quick_operations(ops: object, n_steps: int) -> bool:
    """Whether `operations` is well formed (the common case, without a `Fields` each)."""
    if type(ops) is not list:
        return False
    last = max(1, n_steps)
    seen: set[int] = set()
    for o in ops:
        if type(o) is not dict:
            return False
        index, span, count = o.get("index"), o.get("steps"), o.get("execution_count", 1)
        if type(index) is not int or not 0 <= index <= U64_MAX or index in seen or type(o.get("name")) is not str:
            return False
        if type(count) is not int or not 1 <= count <= U64_MAX:
            return False
        origin, kind = o.get("origin"), o.get("kind")
        if not (origin is None or (type(origin) is int and 0 <= origin <= U64_MAX)) or not (
                kind is None or type(kind) is str):
            return False
        if type(span) is not list or len(span) != 2 or not all(type(x) is int and 0 <= x < last for x in span) \
                or span[0] > span[1]:
            return False
        seen.add(index)
    return True


#: an operation as a plain row: (index, origin, name, kind, execution count, first
#: step, last step); a report of a million values lists some 400,000 of them
OperationRow = tuple[int, int | None, str, str | None, int, int, int]


class OperationsByIndex(Mapping[int, Operation]):
    """The operations by index, each `Operation` made when it is looked up."""

    def __init__(self, rows: tuple[OperationRow, ...]) -> None:
        self._rows = rows
        self._index: dict[int, int] | None = None

    @property
    def _at(self) -> dict[int, int]:
        """Each index's row, made on first lookup (a plan that writes its report looks
        none up)."""
        if self._index is None:
            self._index = {row[0]: k for k, row in enumerate(self._rows)}
        return self._index

    def __getitem__(self, index: int) -> Operation:
        return _operation(self._rows[self._at[index]])

    def __contains__(self, index: object) -> bool:
        return index in self._at

    def __iter__(self) -> Iterator[int]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


def _operation(row: OperationRow) -> Operation:
    index, origin, name, kind, count, first, last = row
    return Operation(index=index, origin=origin, name=name, kind=kind, execution_count=count, steps=(first, last))


@dataclass(frozen=True, slots=True, kw_only=True)
class Operations(Section):
    """The planned operations in the report's order, as rows (`OperationRow`): an
    `Operation` is made for the ones asked for (`by_index`, `repeated`)."""

    KEY: ClassVar[str] = "operations"
    rows: tuple[OperationRow, ...] = ()
    by_index: OperationsByIndex = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_index", OperationsByIndex(self.rows))

    @classmethod
    def of(cls, items: Iterable[Operation]) -> Self:
        return cls(rows=tuple((o.index, o.origin, o.name, o.kind, o.execution_count, *o.steps) for o in items))

    def names(self) -> list[tuple[int, str]]:
        """(index, name) of every operation, by index."""
        return sorted((row[0], row[2]) for row in self.rows)

    def repeated(self) -> list[Operation]:
        """The operations run more than once (a repeat block's), in the report's order."""
        return [_operation(row) for row in self.rows if row[4] > 1]

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        n_steps = ctx.bounds.steps if ctx.bounds is not None else U64_MAX
        if _quick_operations(f.obj, n_steps):
            return cls(rows=tuple((o["index"], o.get("origin"), o["name"], o.get("kind"), o.get("execution_count", 1),
                                   o["steps"][0], o["steps"][1]) for o in f.obj))
        items = tuple(Operation.decode(o, ctx) for o in f.items())
        seen: set[int] = set()
        for o, x in zip(items, f.items(), strict=True):
            if o.index in seen:
                raise InputError(f"expected each operation index once, found {o.index} twice", f"{x.place}.index")
            seen.add(o.index)
        return cls.of(items)

    def to_json(self) -> list[dict[str, Any]]:
        return [{"index": index, "origin": origin, "name": name, "kind": kind, "execution_count": count,
                 "steps": [first, last]} for index, origin, name, kind, count, first, last in self.rows]

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {"type": "array", "items": Operation.json_schema()}


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedOperation(Section):
    """The operation planning stopped at (scope `rejected-op<N>`) and why."""

    KEY: ClassVar[str] = "rejected_operation"
    index: Count
    name: str
    reason: str


# verdict ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class RegionFigure(Section):
    """One region's peak (exact on its worst tile, or the estimate), against its budget."""

    region: Region
    peak: Count | None = None
    tile: TileIndex | None = json_field(None, null=True)
    step: StepIndex | None = json_field(None, null=True)
    budget: Signed | None = None  # negative: not tensors alone exceed the tile
    margin: Signed | None = None
    estimate: Count | None = None
    exchange_bytes: Count | None = json_field(None, omit=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class OverBudgetStep(Section):
    step: StepIndex
    region: Literal["interleaved", "total"] | None = None
    tile: TileIndex | None = json_field(None, null=True)
    usage: Count | None = None
    budget: Signed | None = None  # negative: not tensors alone exceed the tile
    bytes_over: Positive | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OverBudget(Section):
    """How many steps are over budget, the first and the worst (most bytes over)."""

    steps: StepCount = json_field(schema={"minimum": 1})
    first: OverBudgetStep | None = None
    worst: OverBudgetStep | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Scratch(Section):
    standard: Count
    interleaved: Count


@dataclass(frozen=True, slots=True, kw_only=True)
class PeakValue(Section):
    """A value live on the worst tile at the peak, with its bytes on that tile."""

    id: Count
    name: str
    shape: tuple[Positive, ...]
    precision: str
    memory_class: str = json_field(key="class")
    bytes: Count
    resident: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PeakGroup(Section):
    """Bytes on the worst tile at the peak of one value group (layers folded)."""

    group: str
    bytes: Count
    values: Count


@dataclass(frozen=True, slots=True, kw_only=True)
class PeakClass(Section):
    """Bytes on the worst tile at the peak of one class of values (docs/report-format.md,
    "Classes of a training report"): always live or not, and how many values (a step's
    scratch counts in activations and temporaries, as no value)."""

    name: Literal["weights", "gradients and accumulators", "optimizer state", "stash", "activations and temporaries"]
    always_live: bool
    bytes: Count
    values: Count


@dataclass(frozen=True, slots=True, kw_only=True)
class PeakTile(Section):
    """The worst tile at the total peak and what is live there; `classes` in a training
    report only."""

    tile: TileIndex | None = None
    step: StepIndex | None = None
    operation: str | None = None
    source: Count | None = None
    scratch: Scratch | None = None
    values: tuple[PeakValue, ...] = ()
    values_shown: Count | None = None
    values_live: Count | None = None
    groups: tuple[PeakGroup, ...] = ()
    classes: tuple[PeakClass, ...] | None = json_field(None, omit=True, most=16)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict(Section):
    """The verdict people read: fits, on what it was judged, each region's peak, the
    steps over budget, Poplar's out-of-memory line, the peak tile and tileplan's
    measured error band with where the margin falls in it (`sections_band`)."""

    KEY: ClassVar[str] = "verdict"
    fits: bool | None = None
    judged_on: Literal["exact", "estimate"] | None = None
    regions: tuple[RegionFigure, ...] = json_field((), most=len(REGION_NAMES))
    over_budget: OverBudget | None = json_field(None, null=True)
    out_of_memory: str | None = json_field(None, omit=True)
    peak_tile: PeakTile | None = json_field(None, omit=True)
    error_band: ErrorBand | None = json_field(None, omit=True)

    def validate(self, place: str, bounds: Bounds | None) -> None:
        seen: set[str] = set()
        for i, r in enumerate(self.regions):
            if r.region in seen:
                raise InputError(f"expected one of {', '.join(REGION_NAMES)} once each, found {brief(r.region)}",
                                 f"{place}.regions[{i}].region")
            seen.add(r.region)

    def region(self, name: str) -> RegionFigure | None:
        return next((r for r in self.regions if r.region == name), None)

    def with_peak_tile(self, peak_tile: PeakTile) -> Verdict:
        return replace(self, peak_tile=peak_tile)


# exact --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class ExactPeak(Section):
    bytes: Count
    tile: TileIndex
    step: StepIndex


@dataclass(frozen=True, slots=True, kw_only=True)
class ExactPeaks(Section):
    total: ExactPeak | None = None
    standard: ExactPeak | None = None
    interleaved: ExactPeak | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TileFigures(Section):
    """One entry per tile: its peak, the first step reaching it, its resident bytes
    there and its interleaved peak."""

    peak: tuple[Count, ...] = json_field(most=MAX_TILES)
    peak_step: tuple[StepIndex, ...] = json_field(most=MAX_TILES)
    peak_resident: tuple[Count, ...] = json_field(most=MAX_TILES)
    peak_interleaved: tuple[Count, ...] | None = json_field(None, most=MAX_TILES)

    def validate(self, place: str, bounds: Bounds | None) -> None:
        if bounds is None:
            return
        for key in ("peak", "peak_step", "peak_resident"):
            n = len(getattr(self, key))
            if n != bounds.tiles:
                raise InputError(f"expected one number per tile ({bounds.tiles}), found {n}", f"{place}.{key}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Histogram(Section):
    first_bytes: Count | None = None
    bin_bytes: Positive | None = None
    counts: tuple[TileCount, ...] = json_field((), most=MAX_HISTOGRAM_BINS)


@dataclass(frozen=True, slots=True, kw_only=True)
class TopTile(Section):
    tile: TileIndex
    bytes: Count
    step: StepIndex
    resident: Count | None = None


def _int_rows(rows: list[list[int]], width: int) -> np.ndarray:
    """Rows of integers as an array: int64, or exact integers where one does not fit."""
    try:
        return np.array(rows, dtype=np.int64).reshape(len(rows), width)
    except OverflowError:
        out = np.empty((len(rows), width), dtype=object)
        for i, row in enumerate(rows):
            out[i, :] = row
        return out


def _quick_rows(rows: object, n_steps: int, width: int, tile_column: int, tile_count: int) -> bool:
    """Whether `exact.steps` is n_steps rows of `width` integers in range (the common
    case, checked without a `Fields` per cell)."""
    if type(rows) is not list or len(rows) != n_steps:
        return False
    for row in rows:
        if type(row) is not list or len(row) != width or not all(type(c) is int and 0 <= c <= U64_MAX for c in row) \
                or row[tile_column] >= tile_count:
            return False
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class Exact(Section):
    """Exact per-tile accounting from the tile maps. `steps`: one row per step, of
    `steps_columns` (`worst_tile`, `total`, `standard`, `interleaved`), an int64 array
    (exact integers in a report whose numbers do not fit)."""

    KEY: ClassVar[str] = "exact"
    model: str | None = None
    peak: ExactPeaks | None = None
    estimate_total: Count | None = json_field(None, null=True)
    ratio_exact_to_estimate: float | None = json_field(None, null=True)
    steps: np.ndarray | None = json_field(None, omit=True)
    steps_columns: tuple[str, ...] | None = json_field(None, omit=True)
    tiles: TileFigures | None = None
    histogram: Histogram | None = None
    top_tiles: tuple[TopTile, ...] = json_field((), most=MAX_TILES)

    def column(self, name: str) -> np.ndarray | None:
        """One column of `steps` (None without it)."""
        if self.steps is None or self.steps_columns is None or name not in self.steps_columns:
            return None
        return self.steps[:, self.steps_columns.index(name)]

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        exact = cls.decode_fields(f, ctx)
        if exact.steps is None:
            return exact
        rows = exact.steps
        if isinstance(rows, np.ndarray):  # decoded from version-2 columns, checked there
            return exact
        n_steps = ctx.bounds.steps if ctx.bounds is not None else len(rows) if isinstance(rows, list) else 0
        tiles = ctx.bounds.tiles if ctx.bounds is not None else U64_MAX
        columns = [c.string() for c in f.sub("steps_columns").items(most=64)]
        for needed in ("worst_tile", "total"):
            if needed not in columns:
                raise InputError(f"expected a column {needed!r}, found {columns}", f"{f.place}.steps_columns")
        s = f.sub("steps")
        if not _quick_rows(rows, n_steps, len(columns), columns.index("worst_tile"), tiles):
            items = s.items()
            if len(items) != n_steps:
                raise InputError(f"expected one row per step ({n_steps}), found {len(items)}", s.place)
            for row in items:
                cells = row.items()
                if len(cells) != len(columns):
                    raise InputError(f"expected {len(columns)} numbers ({', '.join(columns)}), found {len(cells)}",
                                     row.place)
                for name, c in zip(columns, cells, strict=True):
                    c.integer(maximum=tiles - 1) if name == "worst_tile" else c.integer()
        return replace(exact, steps=_int_rows(rows, len(columns)), steps_columns=tuple(columns))

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = cls.fields_schema()
        props = schema["properties"]
        props["steps"] = {"type": "array", "items": {"type": "array", "items": {"$ref": "#/$defs/bytes"},
                                                     "minItems": len(EXACT_COLUMNS), "maxItems": len(EXACT_COLUMNS)}}
        props["steps_columns"] = {"const": list(EXACT_COLUMNS)}
        schema["required"] = [s.key for s in slots_of(cls)]  # both always written
        return schema


#: the sections at the top of a report, by key, in the order they are read
SECTIONS: dict[str, type[Section]] = {cls.KEY: cls for cls in (
    Program, Operations, RejectedOperation, Verdict, Exact, WhatIf, WhatIfSkipped, AvailableMemoryProportion,
    Pipeline, NonTensor, Placement, PlacementSkipped)}

__all__ = [
    "EXACT_COLUMNS", "MAX_HISTOGRAM_BINS", "MAX_TILES", "REGION_NAMES", "SECTIONS", "AvailableMemoryProportion",
    "BandMeasurement", "Baseline", "Buffer", "CapExceeded", "ErrorBand", "Exact", "ExactPeak", "ExactPeaks",
    "Histogram", "NonTensor",
    "NonTensorCounts", "Operation", "Operations", "OverBudget", "OverBudgetStep", "PeakGroup", "PeakTile", "PeakValue",
    "Pipeline", "PlacedTile", "Placement", "PlacementSkipped", "Program", "RegionFigure", "RejectedOperation",
    "Scratch", "Section", "Sweep", "SweepRow", "TileFigures", "TopTile", "Verdict", "WhatIf", "WhatIfRow",
    "WhatIfSkipped",
]
