"""Report version 2: the compact form of a report, for large programs
(docs/report-format-v2.md; JSON Schema `report-v2.schema.json`).

The same top-level fields and sections as version 1, but the timeline as interned
tables (layouts, precisions, shapes, groups, roles, step operations) and columns, live
sets as one [first, last] interval per value, and the per-step or per-operation
sections (`exact.steps`, `operations`) as columns too. An integer column is a JSON
list, or packed: little-endian integers of one width, optionally delta-encoded, zlib
compressed, base64 text. Writing is deterministic (the same report and zlib give the
same bytes) and streamed column by column; reading decodes each column once with
bounded memory and returns the same `Report` as version 1, its steps a `StepTable`
built from the columns.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from operator import itemgetter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tileplan.errors import InputError
from tileplan.model.role import ROLE_OF_TEXT
from tileplan.model.values import ROLE_CODES, ValueTable
from tileplan.model.timeline import Step, StepTable, Value, step_table
from tileplan.report.fields import Fields, brief
from tileplan.report.format_v1 import json_default, to_json_dict
from tileplan.report.model import Report
from tileplan.report.reader import MAX_RANK, Interned, assemble, read_tile_count
from tileplan.report.sections import EXACT_COLUMNS, Operations, Section

VERSION_2 = 2
#: byte widths of a packed column
WIDTHS = (1, 2, 4, 8)
INT64_MAX = 2**63 - 1
#: zlib level of packed columns (6, zlib's default: within 10 % of 9's size, 3x faster)
ZLIB_LEVEL = 6
#: decoding v2 columns takes at most this many bytes of int64 beyond 16 x the text's
#: length (a packed column can decompress a thousandfold: a zlib bomb is refused)
DECODE_BASE_BYTES = 256 << 20
DECODE_PER_TEXT_BYTE = 16
#: the most rows of a table (values, steps, operations)
MAX_ROWS = 1 << 30
#: `tables.roles`: the roles' texts (`tileplan.model.role`; docs/report-format.md, "Roles")
ROLES = tuple(ROLE_OF_TEXT)


# Writing ------------------------------------------------------------------------------

def _dumps(x: object) -> str:
    return json.dumps(x, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=json_default)


def pack_column(values: Any, delta: bool = False) -> str:
    """An integer column as JSON text: packed (`length`, `width`, `delta`, `zlib`) when
    every entry is in [-1, 2^63 - 1] (-1 standing for null), else a plain list with
    nulls. `values`: a sequence of int or None, or an int64 array."""
    if isinstance(values, np.ndarray):
        arr = values.astype(np.int64, copy=False)
    else:
        items = values if isinstance(values, list) else list(values)
        try:
            if set(map(type, items)) == {int}:  # plain integers: converted in one call
                arr = np.array(items, dtype=np.int64)
            else:
                arr = np.fromiter((-1 if x is None else x for x in items), dtype=np.int64, count=len(items))
        except (OverflowError, TypeError):
            return _dumps(items)
        if len(arr) and int(arr.min()) < -1:
            return _dumps(items)
    n = len(arr)
    if delta and n and (int(arr.max()) > INT64_MAX // 2 or int(arr.min()) < -1):
        delta = False  # a difference could wrap
    data = np.diff(arr, prepend=np.int64(0)) if delta and n else arr
    lo, hi = (int(data.min()), int(data.max())) if n else (0, 0)
    width = next(w for w in WIDTHS if -(1 << (8 * w - 1)) <= lo and hi < 1 << (8 * w - 1))
    raw = data.astype(f"<i{width}").tobytes()
    text = base64.b64encode(zlib.compress(raw, ZLIB_LEVEL)).decode("ascii")
    return f'{{"length":{n},"width":{width},"delta":{"true" if delta else "false"},"zlib":"{text}"}}'


def _table(name: str, columns: list[tuple[str, str]], count: int) -> str:
    return f'"{name}":{{"count":{count}' + "".join(f',"{k}":{text}' for k, text in columns) + "}"


def _value_columns(values: Sequence[Value], steps: StepTable, tables: dict[str, dict[Any, int]]) -> Iterator[str]:
    """The values' columns, one JSON text each (name first, then in order)."""
    table = ValueTable.from_values(values)
    n, ids = len(table), table.id
    order = np.argsort(steps.value_ids, kind="stable")
    sorted_ids = steps.value_ids[order]
    at = np.searchsorted(sorted_ids, ids)
    found = (at < len(sorted_ids)) & (sorted_ids[np.minimum(at, max(0, len(sorted_ids) - 1))] == ids) \
        if len(sorted_ids) else np.zeros(n, dtype=bool)
    if not found.all():
        missing = int(ids[np.argmin(found)])
        raise InputError(f"value {missing} is live in no step; version 2 gives every value one live interval "
                         "(write version 1)")
    rows = order[at]
    first, last = steps.first[rows], steps.last[rows]
    if len(steps.value_ids) != n:
        raise InputError(f"the steps' live intervals name {len(steps.value_ids)} values, the timeline has {n}")

    forms = table.forms

    def interned(name: str, by_form: list[Any], keys: np.ndarray) -> np.ndarray:
        """Each value's index into table `name`, the keys numbered in order of first use
        (`keys[i]` indexes `by_form`, equal keys one entry)."""
        t = tables[name]
        used, first_at = np.unique(keys, return_index=True)
        code = np.zeros(len(by_form), dtype=np.int64)
        for k in used[np.argsort(first_at, kind="stable")].tolist():
            code[k] = t.setdefault(by_form[k], len(t))
        return code[keys]

    labels = table.labels
    yield f'"name":{_dumps(list(labels.names))}'
    yield f'"id":{pack_column(ids, delta=True)}'
    yield f'"origin":{pack_column(table.origin, delta=True)}'
    yield f'"root":{pack_column(table.root, delta=True)}'
    yield f'"storage_group":{pack_column(table.storage_group, delta=True)}'
    yield f'"group":{pack_column(interned("groups", list(labels.groups), labels.group))}'
    yield f'"shape":{pack_column(interned("shapes", [f.shape for f in forms], table.form))}'
    yield f'"precision":{pack_column(interned("precisions", [f.precision for f in forms], table.form))}'
    yield f'"layout":{pack_column(interned("layouts", [f.layout for f in forms], table.form))}'
    for key in ("shard_bytes", "aligned_bytes", "copies", "bytes", "alignment_bytes"):
        yield f'"{key}":{pack_column(table.form_column(key))}'  # None as -1, as pack_column writes it
    roles = table.role
    known = roles >= 0
    codes = np.full(n, -1, dtype=np.int64)
    codes[known] = interned("roles", list(ROLE_CODES), roles[known])
    yield f'"role":{pack_column(codes)}'
    yield f'"first":{pack_column(first, delta=True)}'
    yield f'"last":{pack_column(last, delta=True)}'


def _step_columns(steps: StepTable) -> list[tuple[str, str]]:
    usage = [np.where(known, u, -1) for u, known in ((steps.usage_standard, steps.standard_known),
                                                      (steps.usage_interleaved, steps.interleaved_known))]
    return [("source", pack_column(steps.source, delta=True)), ("operation", pack_column(steps.operation)),
            ("execution_count", pack_column(steps.execution_count)),
            ("scratch_standard", pack_column(steps.scratch_standard)),
            ("scratch_interleaved", pack_column(steps.scratch_interleaved)),
            ("usage_standard", pack_column(usage[0])), ("usage_interleaved", pack_column(usage[1]))]


def _exact_json(exact: object) -> str:
    """`exact` with its `steps` as columns (`steps_columns` dropped: the columns are named)."""
    if not isinstance(exact, dict) or "steps" not in exact:
        return _dumps(exact)
    columns = list(exact.get("steps_columns") or EXACT_COLUMNS)
    rows = exact["steps"]
    arr = rows if isinstance(rows, np.ndarray) else np.array(rows, dtype=np.int64).reshape(len(rows), len(columns))
    parts = []
    for key in exact:  # in the section's own order, as version 1 writes it
        if key == "steps":
            parts.append(_table("steps", [(c, pack_column(arr[:, columns.index(c)])) for c in EXACT_COLUMNS],
                                len(arr)))
        elif key != "steps_columns":
            parts.append(f"{_dumps(key)}:{_dumps(exact[key])}")
    return "{" + ",".join(parts) + "}"


def _operations_json(ops: object, section: Operations | None) -> str:
    """`operations` as columns, its kinds interned (each column taken in one pass):
    from the builder's rows when it recorded the section (`section`), else from the
    JSON objects."""
    if section is not None:
        columns = [list(c) for c in zip(*section.rows)] if section.rows else [[] for _ in range(7)]
        index, origin, names, kind, runs, first, last = columns
        return _operation_columns(len(section.rows), index, origin, names, kind, runs, first, last)
    if not isinstance(ops, list) or (ops and set(map(type, ops)) != {dict}):
        return _dumps(ops)  # not the planner's: as version 1 writes it
    try:
        index, origin, names, kind, runs, steps = (list(map(itemgetter(k), ops)) for k in _OPERATION_FIELDS)
    except KeyError:
        return _dumps(ops)
    if steps and (set(map(type, steps)) != {list} or set(map(len, steps)) != {2}):
        return _dumps(ops)
    return _operation_columns(len(ops), index, origin, names, kind, runs, list(map(itemgetter(0), steps)),
                              list(map(itemgetter(1), steps)))


def _operation_columns(count: int, index: list, origin: list, names: list, kind: list, runs: list, first: list,
                       last: list) -> str:
    kinds: dict[str, int] = {}
    cols = [("index", pack_column(index, delta=True)),
            ("origin", pack_column(origin, delta=True)),
            ("name", _dumps(names)),
            ("kind", pack_column([kinds.setdefault(k, len(kinds)) for k in kind])),
            ("execution_count", pack_column(runs)),
            ("first", pack_column(first, delta=True)),
            ("last", pack_column(last, delta=True))]
    return "{" + f'"count":{count},"kinds":{_dumps(list(kinds))}' + "".join(f',"{k}":{t}' for k, t in cols) + "}"


_OPERATION_FIELDS = ("index", "origin", "name", "kind", "execution_count", "steps")


def v2_chunks(r: Report) -> Iterator[str]:
    """The version-2 text of `r`, piece by piece (see the module docstring)."""
    operations = r.sections.seeded(Operations)  # written from its rows, never as objects
    head = to_json_dict(_without_timeline(r), frozenset({Operations.KEY}) if operations is not None else frozenset())
    steps = step_table(r.steps)
    _check_intervals(r.steps, steps)
    yield "{"
    first = True
    for key, value in head.items():
        if key == "timeline":
            tables: dict[str, dict[Any, int]] = {k: {} for k in ("layouts", "precisions", "shapes", "groups",
                                                                 "roles")}
            values = ",".join(_value_columns(r.values, steps, tables))
            yield f'{"" if first else ","}"timeline":{{"tables":{{'
            yield f'"layouts":{_dumps([x.to_text() for x in tables["layouts"]])},'
            yield f'"precisions":{_dumps([x.to_text() for x in tables["precisions"]])},'
            yield f'"shapes":{_dumps([list(x) for x in tables["shapes"]])},'
            yield f'"groups":{_dumps(list(tables["groups"]))},"roles":{_dumps(list(tables["roles"]))},'
            yield f'"operations":{_dumps(list(steps.operation_texts))}}},'
            yield f'"values":{{"count":{len(r.values)},{values}}},'
            yield _table("steps", _step_columns(steps), len(steps)) + "}"
        elif key == "exact":
            yield f',"exact":{_exact_json(value)}'
        elif key == "operations":
            yield f',"operations":{_operations_json(value, operations)}'
        else:
            yield f'{"" if first else ","}{_dumps(key)}:{_dumps(value)}'
        first = False
    yield "}\n"


def _without_timeline(r: Report) -> Report:
    """`r` with an empty timeline: its top level in version 1's order, version 2."""
    from dataclasses import replace

    return replace(r, values=(), steps=(), version=VERSION_2)


def _check_intervals(steps: Sequence[Step], table: StepTable) -> None:
    """Version 2 stores one live interval per value: refuse steps whose live sets are not."""
    if isinstance(steps, StepTable):
        return
    listed = sum(len(set(s.live)) for s in steps)
    spans = int((table.last - table.first + 1).sum())
    if listed != spans:
        raise InputError(f"the live sets hold {listed} entries, their intervals {spans}: a value is live in "
                         "steps that are not one run, which version 2 cannot write (write version 1)")


def v2_bytes(r: Report) -> bytes:
    try:
        return b"".join(chunk.encode("utf-8") for chunk in v2_chunks(r))
    except UnicodeEncodeError as e:
        raise InputError(f"the text to write holds a lone surrogate at offset {e.start}, which is not UTF-8; "
                         "a name in the input is not text") from None


# Reading ------------------------------------------------------------------------------

class Budget:
    """The int64 bytes columns may still decode into (see `DECODE_BASE_BYTES`)."""

    def __init__(self, size_hint: int | None) -> None:
        self.left = DECODE_BASE_BYTES + DECODE_PER_TEXT_BYTE * (size_hint or 0)

    def take(self, n: int, place: str) -> None:
        if n > self.left:
            raise InputError(f"decoding {n} bytes would pass the {self.left} left for this report's columns "
                             f"({DECODE_BASE_BYTES} + {DECODE_PER_TEXT_BYTE} x its size); is it a real report?",
                             place)
        self.left -= n


def unpack_column(r: Fields, count: int, budget: Budget, minimum: int = 0, maximum: int = INT64_MAX,
                  nullable: bool = False) -> np.ndarray:
    """An integer column of `count` entries in [minimum, maximum] as int64 (-1 for null
    where `nullable`); `InputError` located at the column or the entry otherwise."""
    place = r.place
    budget.take(8 * count, place)
    if isinstance(r.obj, list):
        items = r.obj
        if len(items) != count:
            raise InputError(f"expected {count} entries (the table's count), found {len(items)}", place)
        for i, x in enumerate(items):
            if x is None and nullable:
                continue
            if type(x) is not int or not minimum <= x <= maximum:
                bounds = f"an integer in [{minimum}, {maximum}]" + (" or null" if nullable else "")
                raise InputError(f"expected {bounds}, found {brief(x)}", f"{place}[{i}]")
        return np.array([-1 if x is None else x for x in items], dtype=np.int64)
    r.mapping()
    length = r.sub("length").integer(maximum=MAX_ROWS)
    if length != count:
        raise InputError(f"length {length} differs from the table's count {count}", f"{place}.length")
    width = r.sub("width").integer()
    if width not in WIDTHS:
        raise InputError(f"width must be one of {', '.join(map(str, WIDTHS))}, found {width}", f"{place}.width")
    delta = r.sub("delta").boolean()
    text = r.sub("zlib").string()
    try:
        packed = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InputError("not base64 text", f"{place}.zlib") from None
    expected = length * width
    d = zlib.decompressobj()
    try:
        raw = d.decompress(packed, expected + 1)
    except zlib.error as e:
        raise InputError(f"not zlib data ({e})", f"{place}.zlib") from None
    if len(raw) != expected or not d.eof or d.unused_data:
        size = f"more than {expected}" if len(raw) > expected or (not d.eof and d.unconsumed_tail) else len(raw)
        why = "" if d.eof or len(raw) > expected else " (the stream is cut short)"
        if d.unused_data:
            why = " (bytes follow the stream)"
        raise InputError(f"decompresses to {size} bytes{why}; length {length} x width {width} is {expected}",
                         f"{place}.zlib")
    arr = np.frombuffer(raw, dtype=f"<i{width}").astype(np.int64)
    if delta:
        arr = np.cumsum(arr)
    low = -1 if nullable else minimum
    bad = (arr < low) | (arr > maximum)
    if nullable:
        bad |= (arr < minimum) & (arr != -1)
    if bad.any():
        i = int(np.argmax(bad))
        bounds = f"an integer in [{minimum}, {maximum}]" + (" or -1 (null)" if nullable else "")
        raise InputError(f"expected {bounds}, found {int(arr[i])}", f"{place}[{i}]")
    return arr


def _strings(r: Fields, count: int | None = None) -> list[str]:
    items = r.entries()
    if count is not None and len(items) != count:
        raise InputError(f"expected {count} entries (the table's count), found {len(items)}", r.place)
    for i, x in enumerate(items):
        if type(x) is not str:
            raise InputError(f"expected a string, found {brief(x)}", f"{r.place}[{i}]")
    return items


def _count_of(r: Fields) -> int:
    return r.mapping().sub("count").integer(maximum=MAX_ROWS)


def _tables(t: Fields, tile_count: int) -> dict[str, list[Any]]:
    interned = Interned()
    layouts = []
    for i, text in enumerate(_strings(t.sub("layouts"))):
        layout = interned.layout(text, f"{t.place}.layouts[{i}]")
        if layout.tiling.tile_count != tile_count:
            raise InputError(f"layout tile_count {layout.tiling.tile_count} differs from the report's tile_count "
                             f"{tile_count}", f"{t.place}.layouts[{i}]")
        layouts.append(layout)
    precisions = [interned.precision(text, f"{t.place}.precisions[{i}]")
                  for i, text in enumerate(_strings(t.sub("precisions")))]
    shapes = [tuple(d.integer(minimum=1) for d in s.items(most=MAX_RANK)) for s in t.sub("shapes").items()]
    roles = []
    for i, role in enumerate(_strings(t.sub("roles"))):
        if role not in ROLE_OF_TEXT:
            raise InputError(f"role must be one of {', '.join(ROLES)}, found {brief(role)}", f"{t.place}.roles[{i}]")
        roles.append(ROLE_OF_TEXT[role])
    return {"layouts": layouts, "precisions": precisions, "shapes": shapes, "groups": _strings(t.sub("groups")),
            "roles": roles, "operations": _strings(t.sub("operations"))}


def _index(tables: dict[str, list[Any]], name: str) -> int:
    """The largest index into a table (-1 when it is empty: no index is valid)."""
    return len(tables[name]) - 1


def read_v2(r: Fields, size_hint: int | None) -> Report:
    """A version-2 report object (its `version` read) as a `Report`."""
    obj = r.obj
    budget = Budget(size_hint)
    r.sub("peak")
    tile_count = read_tile_count(r)
    timeline = r.sub("timeline").mapping()
    tables = _tables(timeline.sub("tables").mapping(), tile_count)
    sv = timeline.sub("steps")
    n_steps = _count_of(sv)
    col = lambda t, key, count, **kw: unpack_column(t.sub(key), count, budget, **kw)  # noqa: E731
    last_step = n_steps - 1
    steps_cols = {
        "source": col(sv, "source", n_steps),
        "operation": col(sv, "operation", n_steps, maximum=_index(tables, "operations")),
        "execution_count": col(sv, "execution_count", n_steps, minimum=1),
        "scratch_standard": col(sv, "scratch_standard", n_steps),
        "scratch_interleaved": col(sv, "scratch_interleaved", n_steps),
        "usage_standard": col(sv, "usage_standard", n_steps, nullable=True),
        "usage_interleaved": col(sv, "usage_interleaved", n_steps, nullable=True),
    }
    vv = timeline.sub("values")
    n = _count_of(vv)
    names = _strings(vv.sub("name"), n)
    c = {key: col(vv, key, n) for key in ("id", "origin", "root", "storage_group")}
    c["group"] = col(vv, "group", n, maximum=_index(tables, "groups"))
    c["shape"] = col(vv, "shape", n, maximum=_index(tables, "shapes"))
    c["precision"] = col(vv, "precision", n, maximum=_index(tables, "precisions"))
    c["layout"] = col(vv, "layout", n, maximum=_index(tables, "layouts"))
    for key in ("shard_bytes", "aligned_bytes", "bytes"):
        c[key] = col(vv, key, n, nullable=True)
    c["copies"] = col(vv, "copies", n, minimum=1)
    c["alignment_bytes"] = col(vv, "alignment_bytes", n, minimum=1, nullable=True)
    c["role"] = col(vv, "role", n, maximum=_index(tables, "roles"), nullable=True)
    c["first"] = col(vv, "first", n, maximum=last_step)
    c["last"] = col(vv, "last", n, maximum=last_step)
    later = np.flatnonzero(c["first"] > c["last"])
    if later.size:
        i = int(later[0])
        raise InputError(f"value {int(c['id'][i])} is first live in step {int(c['first'][i])}, after its last "
                         f"step {int(c['last'][i])}", f"timeline.values.first[{i}]")
    ordered = np.sort(c["id"])
    twice = np.flatnonzero(ordered[1:] == ordered[:-1])
    if twice.size:
        raise InputError(f"value id {int(ordered[twice[0]])} appears twice", "timeline.values.id")
    values = _values(names, c, tables)
    steps = StepTable(operation_texts=tables["operations"], **{k: v for k, v in steps_cols.items()
                                                               if not k.startswith("usage")},
                      usage_standard=np.maximum(steps_cols["usage_standard"], 0),
                      usage_interleaved=np.maximum(steps_cols["usage_interleaved"], 0),
                      standard_known=steps_cols["usage_standard"] >= 0,
                      interleaved_known=steps_cols["usage_interleaved"] >= 0,
                      value_ids=c["id"], first=c["first"], last=c["last"])
    top = {k: v for k, v in obj.items() if k != "timeline"}
    if isinstance(obj.get("exact"), dict) and "steps" in obj["exact"]:
        top["exact"] = _read_exact(r.sub("exact"), n_steps, tile_count, budget)
    decoded: dict[str, Section] = {}
    if isinstance(obj.get("operations"), dict):
        ops = _read_operations(r.sub("operations"), n_steps, budget)
        top["operations"] = ops.to_json()
        decoded["operations"] = ops
    return assemble(r, VERSION_2, tile_count, values, steps, top, decoded)


def _values(names: list[str], c: dict[str, np.ndarray], tables: dict[str, list[Any]]) -> tuple[Value, ...]:
    """The `Value`s of the columns, every table entry shared (parsed once)."""
    layouts, precisions, shapes = tables["layouts"], tables["precisions"], tables["shapes"]
    groups, roles = tables["groups"], [*tables["roles"], None]  # role -1: none
    nullable = lambda a: [None if x < 0 else x for x in a.tolist()]  # noqa: E731
    lists = [c[k].tolist() for k in ("id", "origin", "root")]
    group, shape, precision, layout = (c[k].tolist() for k in ("group", "shape", "precision", "layout"))
    sizes = [nullable(c[k]) for k in ("shard_bytes", "aligned_bytes")]
    return tuple(Value(i, o, rt, name, groups[g], shapes[s], precisions[p], layouts[lay], sg, sb, ab, cp, b, al,
                       roles[ro])
                 for i, o, rt, name, g, s, p, lay, sg, sb, ab, cp, b, al, ro in zip(
                     *lists, names, group, shape, precision, layout, c["storage_group"].tolist(), *sizes,
                     c["copies"].tolist(), nullable(c["bytes"]), nullable(c["alignment_bytes"]), c["role"].tolist(),
                     strict=True))


def _read_exact(e: Fields, n_steps: int, tile_count: int, budget: Budget) -> dict[str, Any]:
    """`exact` with its `steps` columns as one int64 array of rows, `steps_columns` named."""
    section = dict(e.mapping().obj)
    s = e.sub("steps")
    count = _count_of(s)
    if count != n_steps:
        raise InputError(f"expected one row per step ({n_steps}), found count {count}", f"{s.place}.count")
    columns = [unpack_column(s.sub(k), count, budget, maximum=tile_count - 1 if k == "worst_tile" else INT64_MAX)
               for k in EXACT_COLUMNS]
    section["steps"] = np.stack(columns, axis=1) if count else np.zeros((0, len(EXACT_COLUMNS)), dtype=np.int64)
    section["steps_columns"] = list(EXACT_COLUMNS)
    return section


def _read_operations(o: Fields, n_steps: int, budget: Budget) -> Operations:
    """`operations` columns, each checked, as the typed section."""
    count = _count_of(o)
    kinds = _strings(o.sub("kinds"))
    col = lambda key, **kw: unpack_column(o.sub(key), count, budget, **kw)  # noqa: E731
    index, origin = col("index"), col("origin")
    kind = col("kind", maximum=len(kinds) - 1)
    runs = col("execution_count", minimum=1)
    first, last = col("first", maximum=max(0, n_steps - 1)), col("last", maximum=max(0, n_steps - 1))
    names = _strings(o.sub("name"), count)
    later = np.flatnonzero(first > last)
    if later.size:
        i = int(later[0])
        raise InputError(f"expected [first, last] steps in order, found first {int(first[i])} after last "
                         f"{int(last[i])}", f"{o.place}.first[{i}]")
    ordered = np.sort(index)
    twice = np.flatnonzero(ordered[1:] == ordered[:-1])
    if twice.size:
        raise InputError(f"expected each operation index once, found {int(ordered[twice[0]])} twice",
                         f"{o.place}.index")
    return Operations(rows=tuple(zip(index.tolist(), origin.tolist(), names, [kinds[k] for k in kind.tolist()],
                                     runs.tolist(), first.tolist(), last.tolist(), strict=True)))
