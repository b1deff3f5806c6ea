"""The liveness view as one self-contained HTML page (jinja2).

Everything is inline: the style, the script and the data, so the page works offline
and from a file. Names from models reach the page two ways, both inert: the template
escapes every text it prints (autoescape), and the data is embedded as JSON with `<`,
`>`, `&` and the JavaScript line separators written as \\u escapes, so no name can
close its <script> element; the script puts names in the page with textContent only.
A Content-Security-Policy allows the page's own script (by hash) and nothing else:
no network, no other script.

Bounded for any program (`page_data`): the chart is drawn from at most
`PAGE_COLUMNS` columns (runs of consecutive steps, each shown as its tallest step,
so no peak is lost), and what a person reads one step at a time (a step's figures
and its live values) is embedded compressed: every step's and every value's figures
as little-endian typed arrays, the values' live intervals, and the texts (names,
layouts, operations) once each, each block zlib-compressed and base64-encoded. The
page inflates them (the browser's DecompressionStream) when a step is first shown
and lists a step's live values by a scan of the intervals. A million-value
program's page is a few MB; the same report gives the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from importlib import resources
from typing import Any

import jinja2
import numpy as np

from tileplan.model.role import ROLE_OF_TEXT
from tileplan.version import __version__
from tileplan.render import human_bytes
from tileplan.render.address_map import address_map_svg
from tileplan.views.liveness import Liveness, chart_buckets, column_max, first_in_column, step_heights

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
REGION_NOTES = {
    "total": "both regions and the exchange rows: what the verdict judges",
    "standard": "the non-interleaved region; past it, standard data overflows into the interleaved region",
    "interleaved": "the interleaved region",
}
#: columns of the page's chart at most (it is about 1100 pixels wide)
PAGE_COLUMNS = 1500
#: an Int32Array entry that means "unknown" (a Float64Array says NaN)
NULL_I4 = -(2**31)
COMPRESSION = 6


def embed_json(obj: Any) -> str:
    """JSON that can sit inside a <script> element: deterministic (sorted keys) and
    without a `<`, `>` or `&` that the HTML parser could read."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw, escaped in _ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def _packed(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, COMPRESSION)).decode("ascii")


class Arrays:
    """Typed arrays in one buffer: each entry `[name, kind, delta, offset, count]`,
    `kind` "i4" (Int32Array, `NULL_I4` for unknown) or "f8" (Float64Array, NaN for
    unknown), `delta` when the array holds differences (the page sums them up),
    `offset` a multiple of 8 bytes."""

    def __init__(self) -> None:
        self.specs: list[list[Any]] = []
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, name: str, values: np.ndarray, known: np.ndarray | None = None, delta: bool = False) -> None:
        v = values if known is None else np.where(known, values, 0)
        if delta and len(v):
            v = np.diff(v, prepend=v[:1] * 0)
        small = v.dtype != object and (not len(v) or (int(v.min()) > NULL_I4 and int(v.max()) < 2**31))
        if not small and delta:  # absurd figures: kept whole, as doubles
            self.add(name, values, known)
            return
        out = np.array(v, dtype="<i4" if small else "<f8")
        if known is not None:
            out[~known] = NULL_I4 if small else np.nan
        raw = out.tobytes()
        self.specs.append([name, "i4" if small else "f8", delta, self.size, len(out)])
        pad = -len(raw) % 8
        self.parts.append(raw + b"\0" * pad)
        self.size += len(raw) + pad

    def packed(self) -> str:
        return _packed(b"".join(self.parts))


def _interned(items: list[str]) -> tuple[np.ndarray, list[str]]:
    """Codes into a table of the distinct `items` (in order of first appearance)."""
    table: dict[str, int] = {}
    return np.array([table.setdefault(x, len(table)) for x in items], dtype=np.int64), list(table)


def _detail(lv: Liveness) -> dict[str, Any]:
    """Every step's and every value's figures, the live intervals and the texts: the
    page reads them one step at a time (see the module docstring)."""
    steps, cols = lv.steps, lv.columns
    arrays = Arrays()
    brief_code, briefs = _interned(list(steps.briefs))
    arrays.add("source", steps.source, delta=True)
    arrays.add("operation", brief_code[steps.operation] if len(brief_code) else steps.operation)
    arrays.add("execution_count", steps.execution_count)
    arrays.add("standard", steps.standard, steps.standard_known)
    arrays.add("interleaved", steps.interleaved, steps.interleaved_known)
    arrays.add("total", steps.total, steps.total_known)
    arrays.add("tile", steps.tile, steps.tile >= 0)
    arrays.add("unknown", lv.unknown)

    values, rows = cols.values, lv.values
    # tables of the distinct layouts, shapes, precisions and roles, in order of first use
    layouts: dict[int, int] = {}  # id(layout) -> code: a few layout objects serve many values
    layout_rows: list[tuple[str, str, str]] = []
    for k, v in enumerate(values):
        if id(v.layout) not in layouts:
            row = rows[k]
            layouts[id(v.layout)] = len(layout_rows)
            layout_rows.append((row.layout, row.layout_text, row.region))
    precision_of: dict[int, str] = {id(v.precision): rows.precision_text(v.precision)
                                    for v in {id(v.precision): v for v in values}.values()}
    shapes: dict[tuple[int, ...], int] = {}
    precisions: dict[str, int] = {}
    roles: dict[str | None, int] = {None: 0, **{text: k for k, text in enumerate(ROLE_OF_TEXT, start=1)}}
    layout_code = np.array([layouts[id(v.layout)] for v in values], dtype=np.int64)
    shape_code = np.array([shapes.setdefault(v.shape, len(shapes)) for v in values], dtype=np.int64)
    precision_code = np.array([precisions.setdefault(precision_of[id(v.precision)], len(precisions))
                               for v in values], dtype=np.int64)
    role_code = np.array([roles.get(v.role, 0) for v in values], dtype=np.int64)
    arrays.add("value_id", cols.id, delta=True)
    arrays.add("value_bytes", cols.bytes, cols.known)
    arrays.add("value_layout", layout_code)
    arrays.add("value_shape", shape_code)
    arrays.add("value_precision", precision_code)
    arrays.add("value_role", role_code)
    at, first, last = lv.live_runs.intervals()
    arrays.add("run_value", at, delta=True)
    arrays.add("run_first", first, delta=True)
    arrays.add("run_length", last - first + 1)

    texts = {
        "names": [v.name for v in values], "briefs": briefs,
        "layouts": [b for b, _, _ in layout_rows], "layout_texts": [t for _, t, _ in layout_rows],
        "layout_regions": [r for _, _, r in layout_rows],
        "shapes": ["x".join(map(str, s)) for s in shapes], "precisions": list(precisions),
        "roles": [r for r, _ in sorted(roles.items(), key=lambda x: x[1])],
        "operation_index": [i for i, _ in lv.operations], "operation_names": [name for _, name in lv.operations],
    }
    text = json.dumps(texts, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return {"arrays": arrays.specs, "binary": arrays.packed(), "texts": _packed(text.encode("utf-8")),
            "steps": len(steps), "values": len(values), "runs": len(at)}


def _known_list(values: np.ndarray, known: np.ndarray) -> list[int | None]:
    return [int(x) if k else None for x, k in zip(values.tolist(), known.tolist(), strict=True)]


def page_data(lv: Liveness, most: int = PAGE_COLUMNS) -> dict[str, Any]:
    """What the page embeds: the figures the chart draws, per column (see
    `chart_buckets`), and the compressed detail of every step and value."""
    steps = lv.steps
    n = len(steps)
    lo, hi, shown = chart_buckets(step_heights(lv), most)
    top, top_known = column_max(steps.total, steps.total_known, lo)
    ops = dict(lv.operations)
    column_steps = []
    for i in shown.tolist():
        s = steps[i]
        column_steps.append({"operation": s.operation, "source": s.source, "name": ops.get(s.source),
                             "execution_count": s.execution_count, "total": s.total, "tile": s.tile})
    unknown = lv.unknown > 0
    marks = []
    if n and unknown.any():
        top_step = first_in_column(unknown, lo)
        bottom_step = first_in_column(unknown & ~steps.interleaved_known, lo)
        for c in np.flatnonzero(top_step >= 0).tolist():
            t, b = int(top_step[c]), int(bottom_step[c])
            marks.append([c, t, int(lv.unknown[t]), b, int(lv.unknown[b]) if b >= 0 else 0])
    return {
        "title": lv.title, "scope": lv.scope, "fits": lv.fits, "judged_on": lv.judged_on, "verdict": lv.verdict,
        "regions": [r.to_json() for r in lv.regions], "budget_bytes": lv.budget_bytes,
        "interleaved_budget_bytes": lv.interleaved_budget_bytes, "standard_budget_bytes": lv.standard_budget_bytes,
        "budget_label": lv.budget_label,
        "exchange_bytes": lv.exchange_bytes, "peak_step": lv.peak_step, "steps": n,
        "repeats": [{"first_step": r.first_step, "last_step": r.last_step, "count": r.count,
                     "operations": len(r.operations)} for r in lv.repeats],
        "columns": np.stack([lo, hi, shown], axis=1).tolist() if n else [],
        "column_steps": column_steps, "column_total": _known_list(top, top_known), "unknown": marks,
        "bands": [{"group": b.group, "label": b.label, "region": b.region, "bytes": b.bytes[shown].tolist()}
                  for b in lv.bands],
        "tiles": None if lv.tiles is None else lv.tiles.to_json(),
        "detail": _detail(lv),
    }


DATA_OPEN = '<script type="application/json" id="tileplan-data">'


def read_page(text: str) -> dict[str, Any]:
    """The data a page embeds (`page_data`), its detail unpacked: `detail["arrays"]`
    maps each name to its numpy array (differences summed up; unknowns as NaN in a
    float array), `detail["texts"]` is the texts object. The exact inverse of the
    encoding, for tests and for anyone reading a page without a browser."""
    start = text.index(DATA_OPEN) + len(DATA_OPEN)
    data: dict[str, Any] = json.loads(text[start:text.index("</script>", start)])
    d = data["detail"]
    raw = zlib.decompress(base64.b64decode(d["binary"]))
    arrays = {}
    for name, kind, delta, offset, count in d["arrays"]:
        a = np.frombuffer(raw, dtype="<i4" if kind == "i4" else "<f8", count=count, offset=offset)
        a = np.cumsum(a, dtype=np.int64) if delta else a
        if kind == "i4" and not delta and (a == NULL_I4).any():
            a = np.where(a == NULL_I4, np.nan, a)
        arrays[name] = a
    d["arrays"] = arrays
    d["texts"] = json.loads(zlib.decompress(base64.b64decode(d["texts"])).decode("utf-8"))
    del d["binary"]
    return data


def _asset(name: str) -> str:
    return resources.files("tileplan.render").joinpath("templates", name).read_text(encoding="utf-8")


def _percent(p: float | None) -> str:
    return "unknown" if p is None else f"{p:.1f}%"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("tileplan.render", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["human"] = human_bytes
    env.filters["percent"] = _percent
    return env


def render_html(lv: Liveness) -> str:
    """The whole page. Same view model, same bytes."""
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    address_map = None if lv.placed_tile is None else address_map_svg(
        lv.placed_tile, lv.placed_names or {}, boundary=lv.standard_budget_bytes)
    return environment().get_template("report.html.j2").render(
        lv=lv, notes=REGION_NOTES, version=__version__, style=_asset("report.css"), script=script,
        script_hash=f"sha256-{digest}", data_json=embed_json(page_data(lv)), address_map=address_map)
