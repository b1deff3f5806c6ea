"""The report: typed, read with located errors, written deterministically.

Version 1 is the reference's format: field names are the reference's
(docs/report-format.md). Where the reference wrote the sentinel 2^64 - 1 for an
unknown size, tileplan writes `null` and lists the cause under `rejections`. Reading
accepts the reference as it is (sentinels included) so that `tileplan check` can
name its defects. Version 2 (`format_v2`, docs/report-format-v2.md) is the compact
form for large programs: the same fields, the timeline as interned tables and
columns. Both read into the same `Report`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from tileplan.errors import InputError, TileplanError
from tileplan.ioutil import parse_json, read_text, write_atomic
from tileplan.model.layout import Layout
from tileplan.model.precision import Precision
from tileplan.model.timeline import REGIONS, Rejection, Step, Value

VERSION = 1
#: the versions this tileplan reads and writes
VERSIONS = (1, 2)
#: values beyond which a report is written as version 2 unless asked otherwise (version
#: 1 is about 1.1 KB a value: 115 MB at 100,000 values)
V1_LIMIT = 200_000
U64_MAX = 2**64 - 1

# What a real report can hold. A report beyond these is refused at reading with one
# line, before any reader allocates per tile or multiplies shard sizes in int64.
#: tiles of a machine (the IPU21 has 1472)
MAX_TILES = 1 << 16
#: dimensions of a value
MAX_RANK = 16
#: bins of the exact accounting's histogram
MAX_HISTOGRAM_BINS = 1 << 12


@dataclass(frozen=True, slots=True)
class PeakFigures:
    standard: int | None
    interleaved: int | None
    total: int | None
    exchange_rows: int | None
    maximum_standard_allocation: int | None


@dataclass(frozen=True, slots=True)
class Report:
    """A whole report. `extra` holds tileplan's additions beyond version 1's
    original fields (verdict, exact accounting, what-if), written after them.

    `steps` is a tuple of `Step` (a version-1 report) or a `StepTable` (version 2,
    and the planner's): both are sequences of `Step`. Read from version 2,
    `extra["exact"]["steps"]` is an int64 array of one row per step (columns
    `steps_columns`) rather than a list of lists; `version` is the version read (or
    to write)."""

    scope: str
    model: str
    tile_count: int
    budget_bytes: int
    interleaved_budget_bytes: int
    standard_contiguous_overflow_bytes: int | None
    fits_budget: bool
    support_reserve_bytes: int
    effective_peak_bytes: int | None
    peak: PeakFigures
    total_peak_step: int | None
    standard_peak_step: int | None
    interleaved_peak_step: int | None
    gemm_output_packing: str
    attention_products: str
    values: tuple[Value, ...]
    steps: Sequence[Step]
    rejections: tuple[Rejection, ...] = ()
    exchange_row_bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    version: int = VERSION


# Writing ----------------------------------------------------------------------------

def value_to_json(v: Value) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": v.id, "origin": v.origin, "root": v.root, "name": v.name, "group": v.group,
        "shape": list(v.shape), "precision": v.precision.to_text(), "layout": v.layout.to_text(),
        "class": v.memory_class.to_text(), "storage_group": v.storage_group,
        "shard_bytes": v.shard_bytes, "aligned_bytes": v.aligned_bytes, "copies": v.copies,
        "bytes": v.bytes,
    }
    if v.alignment_bytes is not None:
        out["alignment_bytes"] = v.alignment_bytes
    if v.role is not None:
        out["role"] = v.role
    return out


def step_to_json(s: Step) -> dict[str, Any]:
    return {
        "index": s.index, "source": s.source, "operation": s.operation,
        "execution_count": s.execution_count, "live": list(s.live),
        "scratch": {r: s.scratch.get(r, 0) for r in REGIONS},
        "usage": {r: s.usage.get(r) for r in REGIONS},
    }


def to_json_dict(r: Report) -> dict[str, Any]:
    out: dict[str, Any] = {
        "version": r.version, "scope": r.scope, "model": r.model, "tile_count": r.tile_count,
        "budget_bytes": r.budget_bytes, "interleaved_budget_bytes": r.interleaved_budget_bytes,
        "standard_contiguous_overflow_bytes": r.standard_contiguous_overflow_bytes,
        "fits_budget": r.fits_budget, "support_reserve_bytes": r.support_reserve_bytes,
        "effective_peak_bytes": r.effective_peak_bytes,
        "peak": {
            "standard": r.peak.standard, "interleaved": r.peak.interleaved, "total": r.peak.total,
            "exchange_rows": r.peak.exchange_rows,
            "maximum_standard_allocation": r.peak.maximum_standard_allocation,
        },
        "total_peak_step": r.total_peak_step, "standard_peak_step": r.standard_peak_step,
        "interleaved_peak_step": r.interleaved_peak_step,
        "gemm_output_packing": r.gemm_output_packing, "attention_products": r.attention_products,
        "timeline": {"values": [value_to_json(v) for v in r.values],
                     "steps": [step_to_json(s) for s in r.steps]},
    }
    if r.exchange_row_bytes is not None:
        out["exchange_row_bytes"] = r.exchange_row_bytes
    out["rejections"] = [{"value": j.value, "name": j.name, "reason": j.reason} for j in r.rejections]
    for key in sorted(r.extra):
        out[key] = r.extra[key]
    return out


def _plain(x: object) -> object:
    """numpy arrays and integers (a version-2 report's `exact.steps`) as JSON."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.integer):
        return int(x)
    raise TypeError(f"{type(x).__name__} is not JSON")


def to_json_text(r: Report) -> str:
    """Deterministic version-1 text: the same report gives the same bytes."""
    return json.dumps(to_json_dict(r), separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                      default=_plain) + "\n"


def auto_version(report: Report, limit: int = V1_LIMIT) -> int:
    """The version `tileplan plan` writes by default: 1 up to `limit` values, 2 beyond."""
    return 1 if len(report.values) <= limit else 2


def report_bytes(r: Report, version: int = VERSION) -> bytes:
    """The report as UTF-8 JSON of `version` (1 or 2), deterministic."""
    if version == 1:
        try:
            return to_json_text(r).encode("utf-8")
        except UnicodeEncodeError as e:
            raise InputError(f"the report holds a lone surrogate at offset {e.start}, which is not UTF-8; a name "
                             "in the input is not text") from None
    if version == 2:
        from tileplan.report.format_v2 import v2_bytes

        return v2_bytes(r)
    raise InputError(f"report version must be one of {', '.join(map(str, VERSIONS))}, found {version}")


def write_report(path: str | Path, r: Report, version: int = VERSION) -> None:
    """Write the report atomically (`ioutil.write_atomic`) as `version` 1 or 2."""
    if version == 2:  # streamed: the chunks go to the temporary file as they are made
        from tileplan.report.format_v2 import v2_chunks

        write_atomic(path, v2_chunks(r))
        return
    write_atomic(path, to_json_text(r) if version == 1 else report_bytes(r, version))


# Reading ----------------------------------------------------------------------------

_KNOWN_TOP = {
    "version", "scope", "model", "tile_count", "budget_bytes", "interleaved_budget_bytes",
    "standard_contiguous_overflow_bytes", "fits_budget", "support_reserve_bytes",
    "effective_peak_bytes", "peak", "total_peak_step", "standard_peak_step",
    "interleaved_peak_step", "gemm_output_packing", "attention_products", "timeline",
    "rejections", "exchange_row_bytes",
}


class _Reader:
    """Typed field access with the JSON path of every error."""

    def __init__(self, obj: Any, place: str) -> None:
        self.obj = obj
        self.place = place

    def sub(self, key: str | int) -> "_Reader":
        place = f"{self.place}[{key}]" if isinstance(key, int) else (f"{self.place}.{key}" if self.place else key)
        if isinstance(key, int):
            return _Reader(self.obj[key], place)
        if not isinstance(self.obj, dict):
            raise InputError(f"expected an object, found {type(self.obj).__name__}", self.place or "report")
        if key not in self.obj:
            raise InputError(f"missing field {key!r}", self.place or "report")
        return _Reader(self.obj[key], place)

    def has(self, key: str) -> bool:
        return isinstance(self.obj, dict) and key in self.obj

    @overload
    def integer(self, minimum: int = 0, nullable: Literal[False] = False, maximum: int = U64_MAX) -> int: ...

    @overload
    def integer(self, minimum: int = 0, *, nullable: bool, maximum: int = U64_MAX) -> int | None: ...

    def integer(self, minimum: int = 0, nullable: bool = False, maximum: int = U64_MAX) -> int | None:
        v = self.obj
        if v is None and nullable:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            expected = "an integer or null" if nullable else "an integer"
            raise InputError(f"expected {expected}, found {_brief(v)}", self.place)
        if not minimum <= v <= maximum:
            low = "-(2^64 - 1)" if minimum == -U64_MAX else str(minimum)
            high = "2^64 - 1" if maximum == U64_MAX else str(maximum)
            raise InputError(f"expected an integer in [{low}, {high}], found {_brief(v)}", self.place)
        return v

    def number(self, nullable: bool = False) -> float | int | None:
        v = self.obj
        if v is None and nullable:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or abs(v) > U64_MAX:
            raise InputError(f"expected a number{' or null' if nullable else ''}, found {_brief(v)}", self.place)
        return v

    def optional(self, key: str) -> "_Reader | None":
        """The field `key` when present and not null."""
        return self.sub(key) if self.has(key) and self.obj[key] is not None else None

    def mapping(self) -> "_Reader":
        if not isinstance(self.obj, dict):
            raise InputError(f"expected an object, found {_brief(self.obj)}", self.place)
        return self

    def string(self) -> str:
        if not isinstance(self.obj, str):
            raise InputError(f"expected a string, found {_brief(self.obj)}", self.place)
        return self.obj

    def boolean(self) -> bool:
        if not isinstance(self.obj, bool):
            raise InputError(f"expected true or false, found {_brief(self.obj)}", self.place)
        return self.obj

    def entries(self) -> list[Any]:
        """The list itself (its entries unread)."""
        if not isinstance(self.obj, list):
            raise InputError(f"expected a list, found {_brief(self.obj)}", self.place)
        return self.obj

    def items(self, most: int | None = None) -> list["_Reader"]:
        if not isinstance(self.obj, list):
            raise InputError(f"expected a list, found {_brief(self.obj)}", self.place)
        if most is not None and len(self.obj) > most:
            raise InputError(f"expected at most {most} entries, found {len(self.obj)}", self.place)
        return [self.sub(i) for i in range(len(self.obj))]


def _brief(v: object) -> str:
    """A JSON value in a few characters, for an error message."""
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**30:
        return f"an integer of {len(str(abs(v)))} digits"
    text = json.dumps(v, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


class Interned:
    """Each distinct layout, precision, shape and operation text of a report, read
    once and shared by every value and step that names it."""

    def __init__(self) -> None:
        self.layouts: dict[str, Layout] = {}
        self.precisions: dict[str, Precision] = {}
        self.shapes: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.texts: dict[str, str] = {}

    def layout(self, text: str, place: str) -> Layout:
        found = self.layouts.get(text)
        if found is None:
            try:
                found = Layout.from_text(text)
            except TileplanError as e:
                raise e.at(place) from None
            _check_layout_bounds(found, place)
            self.layouts[text] = found
        return found

    def precision(self, text: str, place: str) -> Precision:
        found = self.precisions.get(text)
        if found is None:
            try:
                found = Precision.from_text(text)
            except TileplanError as e:
                raise e.at(place) from None
            self.precisions[text] = found
        return found

    def shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.shapes.setdefault(shape, shape)

    def text(self, text: str) -> str:
        return self.texts.setdefault(text, text)


def _read_value(r: _Reader, interned: Interned) -> Value:
    shape = interned.shape(tuple(d.integer(minimum=1) for d in r.sub("shape").items(most=MAX_RANK)))
    precision = interned.precision(r.sub("precision").string(), f"{r.place}.precision")
    layout = interned.layout(r.sub("layout").string(), f"{r.place}.layout")
    cls = r.sub("class").string()
    if cls != layout.memory_class.to_text():
        raise InputError(f"class {cls} differs from the layout's memory_class "
                         f"{layout.memory_class.to_text()}", f"{r.place}.class")
    return Value(
        id=r.sub("id").integer(), origin=r.sub("origin").integer(), root=r.sub("root").integer(),
        name=r.sub("name").string(), group=interned.text(r.sub("group").string()), shape=shape,
        precision=precision, layout=layout, storage_group=r.sub("storage_group").integer(),
        shard_bytes=r.sub("shard_bytes").integer(nullable=True),
        aligned_bytes=r.sub("aligned_bytes").integer(nullable=True),
        copies=r.sub("copies").integer(minimum=1),
        bytes=r.sub("bytes").integer(nullable=True),
        alignment_bytes=r.sub("alignment_bytes").integer(minimum=1) if r.has("alignment_bytes") else None,
        role=_role(r) if r.has("role") else None,
    )


def _count(x: object, minimum: int = 0) -> bool:
    """An integer (not a boolean) in [minimum, 2^64 - 1]."""
    return type(x) is int and minimum <= x <= U64_MAX


def _size(x: object) -> bool:
    return x is None or (type(x) is int and 0 <= x <= U64_MAX)


_ROLES = ("input", "parameter", "intermediate")


def _fast_value(d: object, place: str, interned: Interned) -> Value | None:
    """`_read_value` without a `_Reader` per field: the value, or None when anything is
    off (then `_read_value` names it). Checks in `_read_value`'s order, so an error
    raised here is the one it would raise first."""
    if type(d) is not dict:
        return None
    shape = d.get("shape")
    if type(shape) is not list or len(shape) > MAX_RANK or not all(_count(x, 1) for x in shape):
        return None
    precision, layout, cls = d.get("precision"), d.get("layout"), d.get("class")
    if type(precision) is not str:
        return None
    p = interned.precision(precision, f"{place}.precision")
    if type(layout) is not str:
        return None
    lay = interned.layout(layout, f"{place}.layout")
    if type(cls) is not str or cls != lay.memory_class.to_text():
        return None
    try:
        vid, origin, root, name, group = d["id"], d["origin"], d["root"], d["name"], d["group"]
        storage_group, shard, aligned, copies, size = (d["storage_group"], d["shard_bytes"], d["aligned_bytes"],
                                                       d["copies"], d["bytes"])
    except KeyError:
        return None
    if not (_count(vid) and _count(origin) and _count(root) and type(name) is str and type(group) is str
            and _count(storage_group) and _size(shard) and _size(aligned) and _count(copies, 1) and _size(size)):
        return None
    alignment = d.get("alignment_bytes")
    if ("alignment_bytes" in d and not _count(alignment, 1)) or ("role" in d and d["role"] not in _ROLES):
        return None
    return Value(vid, origin, root, name, interned.text(group), interned.shape(tuple(shape)), p, lay, storage_group,
                 shard, aligned, copies, size, alignment, d.get("role"))


def _check_layout_bounds(layout: Layout, place: str) -> None:
    """Refuse a layout for more tiles than any machine has (`MAX_TILES`) before any
    reader sizes something per tile. Other layout numbers, however large, are read:
    `check` sizes shards with exact integers and names what is wrong."""
    tiling = layout.tiling
    if not 1 <= tiling.tile_count <= MAX_TILES:
        raise InputError(f"tile_count must be in [1, {MAX_TILES}], found {tiling.tile_count}", place)


def _role(r: "_Reader") -> str:
    role = r.sub("role").string()
    if role not in _ROLES:
        raise InputError(f"role must be input, parameter or intermediate, found {role!r}", f"{r.place}.role")
    return role


def _read_step(r: _Reader, interned: Interned) -> Step:
    scratch = r.sub("scratch")
    usage = r.sub("usage")
    return Step(
        index=r.sub("index").integer(), source=r.sub("source").integer(),
        operation=interned.text(r.sub("operation").string()),
        execution_count=r.sub("execution_count").integer(minimum=1),
        live=tuple(x.integer() for x in r.sub("live").items()),
        scratch={k: scratch.sub(k).integer() for k in REGIONS},
        usage={k: usage.sub(k).integer(nullable=True) for k in REGIONS},
    )


def _fast_step(d: object, interned: Interned) -> Step | None:
    """`_read_step` without a `_Reader` per field, or None when anything is off."""
    if type(d) is not dict:
        return None
    try:
        index, source, operation, count, live = (d["index"], d["source"], d["operation"], d["execution_count"],
                                                 d["live"])
        scratch, usage = d["scratch"], d["usage"]
        ss, si = scratch["standard"], scratch["interleaved"]
        us, ui = usage["standard"], usage["interleaved"]
    except (KeyError, TypeError):
        return None
    if not (_count(index) and _count(source) and type(operation) is str and _count(count, 1)
            and type(live) is list and all(type(x) is int for x in live) and (not live or min(live) >= 0)
            and (not live or max(live) <= U64_MAX) and _count(ss) and _count(si) and _size(us) and _size(ui)):
        return None
    return Step(index, source, interned.text(operation), count, tuple(live), {"standard": ss, "interleaved": si},
                {"standard": us, "interleaved": ui})


REGION_NAMES = ("total", "standard", "interleaved")


def _fast_rows(rows: object, n_steps: int, width: int, tile_column: int, tile_count: int) -> bool:
    """Whether `exact.steps` is n_steps rows of `width` integers in range (the common
    case, checked without a `_Reader` per cell)."""
    if type(rows) is not list or len(rows) != n_steps:
        return False
    for row in rows:
        if type(row) is not list or len(row) != width or not all(_count(c) for c in row) \
                or row[tile_column] >= tile_count:
            return False
    return True


def _fast_operations(ops: object, n_steps: int) -> bool:
    """Whether `operations` is well formed (the common case, without a `_Reader`)."""
    if type(ops) is not list:
        return False
    seen: set[int] = set()
    for o in ops:
        if type(o) is not dict:
            return False
        index, span = o.get("index"), o.get("steps")
        if not isinstance(index, int) or not _count(index) or index in seen or type(o.get("name")) is not str:
            return False
        if "execution_count" in o and not _count(o["execution_count"], 1):
            return False
        if type(span) is not list or len(span) != 2 or not all(_count(x) and x < max(1, n_steps) for x in span) \
                or span[0] > span[1]:
            return False
        seen.add(index)
    return True


def _check_extra(r: _Reader, n_steps: int, tile_count: int, value_ids: set[int], exact_steps: bool = True,
                 operations: bool = True) -> None:
    """Check the sections tileplan adds (`verdict`, `exact`, `operations`, `what_if`,
    `program`, `rejected_operation`) for every field a view reads: its type, and steps,
    tiles and value ids within the report. They stay in `Report.extra` as written.
    `exact_steps`, `operations` False: they came from version-2 columns, checked as
    they were decoded."""
    step = lambda x, nullable=False: x.integer(nullable=nullable, maximum=max(0, n_steps - 1))  # noqa: E731
    tile = lambda x, nullable=False: x.integer(nullable=nullable, maximum=tile_count - 1)  # noqa: E731
    signed = lambda x: x.integer(minimum=-U64_MAX, nullable=True)  # noqa: E731

    if (v := r.optional("verdict")) is not None:
        v.mapping()
        if (x := v.optional("fits")) is not None:
            x.boolean()
        if (x := v.optional("judged_on")) is not None and x.string() not in ("exact", "estimate"):
            raise InputError(f"expected exact or estimate, found {_brief(x.obj)}", x.place)
        if (x := v.optional("out_of_memory")) is not None:
            x.string()
        seen: set[str] = set()
        for region in (v.sub("regions").items(most=len(REGION_NAMES)) if v.has("regions") else []):
            name = region.mapping().sub("region").string()
            if name not in REGION_NAMES or name in seen:
                raise InputError(f"expected one of {', '.join(REGION_NAMES)} once each, found {_brief(name)}",
                                 f"{region.place}.region")
            seen.add(name)
            for key in ("peak", "estimate", "budget"):
                if region.has(key):
                    region.sub(key).integer(nullable=True)
            if region.has("margin"):
                signed(region.sub("margin"))
            if region.has("step"):
                step(region.sub("step"), nullable=True)
            if region.has("tile"):
                tile(region.sub("tile"), nullable=True)
        if (over := v.optional("over_budget")) is not None:
            over.mapping().sub("steps").integer(maximum=n_steps)
            for key in ("first", "worst"):
                if (x := over.optional(key)) is not None:
                    step(x.mapping().sub("step"))

    if (e := r.optional("exact")) is not None:
        e.mapping()
        if e.has("steps") and exact_steps:
            columns = [c.string() for c in e.sub("steps_columns").items(most=64)]
            for needed in ("worst_tile", "total"):
                if needed not in columns:
                    raise InputError(f"expected a column {needed!r}, found {columns}", f"{e.place}.steps_columns")
            fast = _fast_rows(e.sub("steps").obj, n_steps, len(columns), columns.index("worst_tile"), tile_count)
            rows = [] if fast else e.sub("steps").items()
            if not fast and len(rows) != n_steps:
                raise InputError(f"expected one row per step ({n_steps}), found {len(rows)}", f"{e.place}.steps")
            for row in rows:
                cells = row.items()
                if len(cells) != len(columns):
                    raise InputError(f"expected {len(columns)} numbers ({', '.join(columns)}), found {len(cells)}",
                                     row.place)
                for name, c in zip(columns, cells, strict=True):
                    tile(c) if name == "worst_tile" else c.integer()
        if (t := e.optional("tiles")) is not None:
            t.mapping()
            for key in ("peak", "peak_step", "peak_resident"):
                cells = t.sub(key).items(most=tile_count)
                if len(cells) != tile_count:
                    raise InputError(f"expected one number per tile ({tile_count}), found {len(cells)}",
                                     f"{t.place}.{key}")
                for c in cells:
                    step(c) if key == "peak_step" else c.integer()
        if (h := e.optional("histogram")) is not None:
            h.mapping()
            if h.has("first_bytes"):
                h.sub("first_bytes").integer()
            if h.has("bin_bytes"):
                h.sub("bin_bytes").integer(minimum=1)
            for c in (h.sub("counts").items(most=MAX_HISTOGRAM_BINS) if h.has("counts") else []):
                c.integer(maximum=tile_count)
        for t in (e.sub("top_tiles").items(most=tile_count) if e.has("top_tiles") else []):
            tile(t.mapping().sub("tile"))
            t.sub("bytes").integer()
            step(t.sub("step"))
        if (x := e.optional("ratio_exact_to_estimate")) is not None:
            x.number()

    ops = r.optional("operations") if operations else None
    if ops is not None and not _fast_operations(ops.obj, n_steps):
        indexes: set[int] = set()
        for o in ops.items():
            index = o.mapping().sub("index").integer()
            if index in indexes:
                raise InputError(f"expected each operation index once, found {index} twice", f"{o.place}.index")
            indexes.add(index)
            o.sub("name").string()
            if o.has("execution_count"):
                o.sub("execution_count").integer(minimum=1)
            span = o.sub("steps").items()
            if len(span) != 2:
                raise InputError(f"expected [first, last] step, found {len(span)} numbers", f"{o.place}.steps")
            first, last = step(span[0]), step(span[1])
            if first > last:
                raise InputError(f"expected [first, last] steps in order, found first {first} after last {last}",
                                 f"{o.place}.steps")

    if (w := r.optional("what_if")) is not None:
        if isinstance(w.obj, dict):
            rows = w.sub("rows").items() if w.has("rows") else []
            if (b := w.optional("baseline")) is not None:
                rows.append(b.mapping())
        else:
            rows = w.items()
        for row in rows:
            row.mapping()
            for key in ("knob", "value", "scope", "command"):
                if (x := row.optional(key)) is not None:
                    x.string()
            if (x := row.optional("fits")) is not None:
                x.boolean()
            if row.has("peak"):
                row.sub("peak").integer(nullable=True)
            if row.has("margin"):
                signed(row.sub("margin"))

    if (p := r.optional("program")) is not None:
        for key in p.mapping().obj:
            x = p.sub(key)
            if isinstance(x.obj, (dict, list)):
                raise InputError(f"expected a string, a number or true/false, found {_brief(x.obj)}", x.place)
            if isinstance(x.obj, (int, float)) and not isinstance(x.obj, bool):
                x.number()

    if (j := r.optional("rejected_operation")) is not None:
        j.mapping().sub("index").integer()
        j.sub("name").string()
        j.sub("reason").string()


def from_json_dict(obj: Any, size_hint: int | None = None) -> Report:
    """Read a report object (version 1 or 2); raise `InputError` naming the JSON path
    of any problem. `size_hint`, the text's length, bounds what version 2 decodes."""
    r = _Reader(obj, "")
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, found {type(obj).__name__}", "report")
    version = r.sub("version").integer()
    if version == 2:
        from tileplan.report.format_v2 import read_v2

        return read_v2(r, size_hint)
    if version != VERSION:
        raise InputError(f"unsupported version {version}; this tileplan reads versions "
                         f"{' and '.join(map(str, VERSIONS))}", "version")
    r.sub("peak")
    timeline = r.sub("timeline")
    interned = Interned()
    values_r = timeline.sub("values")
    values = tuple(_fast_value(d, f"timeline.values[{i}]", interned)
                   or _read_value(values_r.sub(i), interned) for i, d in enumerate(values_r.entries()))
    steps_r = timeline.sub("steps")
    steps = tuple(_fast_step(d, interned) or _read_step(steps_r.sub(i), interned)
                  for i, d in enumerate(steps_r.entries()))
    tile_count = r.sub("tile_count").integer(minimum=1, maximum=MAX_TILES)
    for i, v in enumerate(values):
        if v.layout.tiling.tile_count != tile_count:
            raise InputError(f"layout tile_count {v.layout.tiling.tile_count} differs from the report's tile_count "
                             f"{tile_count}", f"timeline.values[{i}].layout")
    ids = [v.id for v in values]
    known = set(ids)
    if len(known) != len(ids):
        seen: set[int] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        raise InputError(f"value id {dup} appears twice", "timeline.values")
    for i, s in enumerate(steps):
        if s.index != i:
            raise InputError(f"expected step index {i} (steps are listed in order from 0), found {s.index}",
                             f"timeline.steps[{i}].index")
    for s in steps:
        if not known.issuperset(s.live):
            vid = next(v for v in s.live if v not in known)
            raise InputError(f"live value {vid} is not in timeline.values", f"timeline.steps[{s.index}].live")
    rejections = read_rejections(r)
    _check_extra(r, len(steps), tile_count, known)
    return assemble(r, version, tile_count, values, steps, rejections,
                    {k: v for k, v in obj.items() if k not in _KNOWN_TOP})


def read_rejections(r: _Reader) -> tuple[Rejection, ...]:
    return tuple(Rejection(j.sub("value").integer(), j.sub("name").string(), j.sub("reason").string())
                 for j in (r.sub("rejections").items() if r.has("rejections") else []))


def assemble(r: _Reader, version: int, tile_count: int, values: tuple[Value, ...], steps: Sequence[Step],
             rejections: tuple[Rejection, ...], extra: dict[str, Any]) -> Report:
    """The `Report` of a top level read by `r` (both versions): its scalar fields, with
    the timeline, rejections and sections already read."""
    peak = r.sub("peak")
    nullable_step = lambda key: r.sub(key).integer(nullable=True)  # noqa: E731
    return Report(
        version=version,
        scope=r.sub("scope").string(), model=r.sub("model").string(),
        tile_count=tile_count,
        budget_bytes=r.sub("budget_bytes").integer(),
        interleaved_budget_bytes=r.sub("interleaved_budget_bytes").integer(),
        standard_contiguous_overflow_bytes=r.sub("standard_contiguous_overflow_bytes").integer(nullable=True),
        fits_budget=r.sub("fits_budget").boolean(),
        support_reserve_bytes=r.sub("support_reserve_bytes").integer(),
        effective_peak_bytes=r.sub("effective_peak_bytes").integer(nullable=True),
        peak=PeakFigures(*(peak.sub(k).integer(nullable=True) for k in (
            "standard", "interleaved", "total", "exchange_rows", "maximum_standard_allocation"))),
        total_peak_step=nullable_step("total_peak_step"),
        standard_peak_step=nullable_step("standard_peak_step"),
        interleaved_peak_step=nullable_step("interleaved_peak_step"),
        gemm_output_packing=r.sub("gemm_output_packing").string(),
        attention_products=r.sub("attention_products").string(),
        values=values, steps=steps, rejections=rejections,
        exchange_row_bytes=r.sub("exchange_row_bytes").integer() if r.has("exchange_row_bytes") else None,
        extra=extra,
    )


def from_json_text(text: str, source: str = "report") -> Report:
    return _located(parse_json(text, source), source, len(text))


def read_report(path: str) -> Report:
    text = read_text(path)
    return _located(parse_json(text, path), path, len(text))


def _located(obj: object, source: str, size_hint: int | None = None) -> Report:
    try:
        return from_json_dict(obj, size_hint)
    except TileplanError as e:
        raise e.at(source, sep=": ") from None
