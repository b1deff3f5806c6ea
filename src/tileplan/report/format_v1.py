"""Report version 1, the reference's format (docs/report-format.md): the timeline as a
list of value objects and a list of step objects, each step with its live set.

Writing is deterministic: the reference's fields in its order, then tileplan's
additions in sorted order; the same report gives the same bytes. Where the reference
wrote the sentinel 2^64 - 1 for an unknown size, tileplan writes `null` and lists the
cause under `rejections`. Reading accepts the reference as it is (sentinels included)
so that `tileplan check` can name its defects.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from tileplan.errors import InputError
from tileplan.model.role import ROLE_OF_TEXT, Role
from tileplan.model.timeline import REGIONS, Step, Value
from tileplan.report.fields import U64_MAX, Fields
from tileplan.report.model import Report
from tileplan.report.reader import MAX_RANK, Interned, assemble, read_tile_count

VERSION_1 = 1
#: a value's `role`: the roles' texts (`tileplan.model.role`; docs/report-format.md, "Roles")
ROLES = tuple(ROLE_OF_TEXT)


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


def to_json_dict(r: Report, deferred: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The report as version 1's JSON object (its `version` field as the report says:
    version 2 writes the same top level in the same order). A section in `deferred` is
    None here, its place kept: its writer writes it from its typed form."""
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
        out[key] = None if key in deferred else r.extra[key]
    return out


def json_default(x: object) -> object:
    """numpy arrays and integers (`exact.steps`) as JSON."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.integer):
        return int(x)
    raise TypeError(f"{type(x).__name__} is not JSON")


def to_json_text(r: Report) -> str:
    """Deterministic version-1 text: the same report gives the same bytes."""
    return json.dumps(to_json_dict(r), separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                      default=json_default) + "\n"


def v1_bytes(r: Report) -> bytes:
    try:
        return to_json_text(r).encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(f"the report holds a lone surrogate at offset {e.start}, which is not UTF-8; a name "
                         "in the input is not text") from None


# Reading ----------------------------------------------------------------------------

def read_v1(r: Fields) -> Report:
    """A version-1 report object (its `version` read) as a `Report`."""
    obj = r.obj
    r.sub("peak")
    timeline = r.sub("timeline")
    interned = Interned()
    values_r = timeline.sub("values")
    values = tuple(_quick_value(d, f"timeline.values[{i}]", interned)
                   or _read_value(values_r.sub(i), interned) for i, d in enumerate(values_r.entries()))
    steps_r = timeline.sub("steps")
    steps = tuple(_quick_step(d, interned) or _read_step(steps_r.sub(i), interned)
                  for i, d in enumerate(steps_r.entries()))
    tile_count = read_tile_count(r)
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
    return assemble(r, VERSION_1, tile_count, values, steps, {k: v for k, v in obj.items() if k != "timeline"})


def _read_value(r: Fields, interned: Interned) -> Value:
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


def _quick_value(d: object, place: str, interned: Interned) -> Value | None:
    """`_read_value` without a `Fields` per field: the value, or None when anything is
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
    alignment, role = d.get("alignment_bytes"), d.get("role")
    if ("alignment_bytes" in d and not _count(alignment, 1)) or \
            ("role" in d and (type(role) is not str or role not in ROLE_OF_TEXT)):
        return None
    return Value(vid, origin, root, name, interned.text(group), interned.shape(tuple(shape)), p, lay, storage_group,
                 shard, aligned, copies, size, alignment, None if role is None else ROLE_OF_TEXT[role])


def _role(r: Fields) -> Role:
    role = r.sub("role").string()
    if role not in ROLE_OF_TEXT:
        raise InputError(f"role must be one of {', '.join(ROLES)}, found {role!r}", f"{r.place}.role")
    return ROLE_OF_TEXT[role]


def _read_step(r: Fields, interned: Interned) -> Step:
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


def _quick_step(d: object, interned: Interned) -> Step | None:
    """`_read_step` without a `Fields` per field, or None when anything is off."""
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


__all__ = ["VERSION_1", "json_default", "read_v1", "step_to_json", "to_json_dict", "to_json_text",
           "v1_bytes", "value_to_json"]
