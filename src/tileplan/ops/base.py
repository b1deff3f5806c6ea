"""The operator registry and what every operator's lowering shares.

An operator is one `OpDef`: its name (the IR's `Operation.kind`), how many inputs it
takes, its attributes with their defaults, its shape rule, its planning rule (which
layout each input is read in, where a parameter should rest, the output's layout)
and its lowering (the tile-level steps, each stating its scratch). One module per
family (`ops/matmul.py`, `ops/elementwise.py`, ...) registers its operators with
`register`; nothing dispatches on strings elsewhere. Importers map ATen and ONNX
names onto these entries through their own tables.

Conventions every lowering follows (docs/report-format.md, "Operations"):
* An input is read where the plan wants it; if it is elsewhere, one `Copy` step
  re-lays it out first (`copy_if_needed`, `place`).
* An elementwise output takes its full-shape input's layout and is written in place
  when that input dies at this operation (`can_write_in_place`).
* A tensor no operation lays out is spread linearly over every tile in 8-byte grains
  (`spread_layout`).
* Values an operation creates are named after the operation (`op.name`), with what
  they are (`partials`, `scores`, `... copy for ...`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from tileplan.errors import ModelError, TilingError
from tileplan.lowering.core import LoweringContext
from tileplan.lowering.layouts import linear_layout, same_placement
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout, Padding
from tileplan.model.precision import Precision

Shape = tuple[int, ...]
F32_BYTES = 4
#: partial statistics a tile combines at once: a row split over more partitions is
#: reduced in a tree of this fan-in (as Poplar's multi-stage reductions do)
REDUCE_FAN_IN = 16


@dataclass(frozen=True, slots=True)
class InputInfo:
    """What planning knows of an input: shape, precision, layout (None for a tensor
    whose resting layout the policy has not chosen yet) and whether it is declared."""

    shape: Shape
    precision: Precision
    layout: Layout | None
    declared: bool


@dataclass(frozen=True, slots=True)
class OpPlan:
    """Per input: the layout it is read in (`wanted`; None: as it is) and where a
    parameter should rest (`rest`; None: wherever the policy puts it compactly)."""

    wanted: tuple[Layout | None, ...]
    rest: tuple[Layout | None, ...]
    output: Layout
    alignment: tuple[int | None, ...] = ()
    detail: object = None


ShapeRule = Callable[[list[Shape], Mapping[str, Any]], Shape]
PlanRule = Callable[[LoweringContext, Operation, list[InputInfo]], OpPlan]
LowerRule = Callable[[LoweringContext, Operation, OpPlan, list[tuple[int, ...]], int, list[bool]], int]

#: an attribute that must be given
REQUIRED = object()


@dataclass(frozen=True, slots=True)
class OpDef:
    """One operator. `inputs` = (fewest, most) inputs; `attrs` maps each attribute
    to its default (`REQUIRED` when it has none). `view` operators make no data of
    their own when the layout allows (their output may share the input's storage)."""

    kind: str
    inputs: tuple[int, int]
    attrs: Mapping[str, object]
    shape: ShapeRule
    plan: PlanRule
    lower: LowerRule
    view: bool = False

    def __post_init__(self) -> None:
        assert 0 <= self.inputs[0] <= self.inputs[1], self


REGISTRY: dict[str, OpDef] = {}


def register(kind: str, *, inputs: tuple[int, int], shape: ShapeRule, plan: PlanRule, lower: LowerRule,
             attrs: Mapping[str, object] | None = None, view: bool = False) -> OpDef:
    assert kind not in REGISTRY, f"operator {kind} registered twice"
    entry = OpDef(kind, inputs, dict(attrs or {}), shape, plan, lower, view)
    REGISTRY[kind] = entry
    return entry


def where(op: Operation) -> str:
    return f"operation {op.index} ({op.name})"


def attributes(op: Operation, entry: OpDef) -> dict[str, Any]:
    """The operation's attributes with the operator's defaults filled in; unknown or
    missing ones are a `ModelError` naming the operation."""
    given = dict(op.attrs)
    unknown = sorted(set(given) - set(entry.attrs))
    if unknown:
        expected = ", ".join(sorted(entry.attrs)) or "none"
        raise ModelError(f"{op.kind} has no attribute {unknown[0]!r}; expected {expected}", where(op))
    out = {}
    for key, default in entry.attrs.items():
        if key in given:
            out[key] = given[key]
        elif default is REQUIRED:
            raise ModelError(f"{op.kind} needs attribute {key!r}", where(op))
        else:
            out[key] = default
    return out


#: shapes already inferred, by (kind, attributes, input shapes): a program repeats a few
_SHAPES: dict[tuple, Shape] = {}
_SHAPES_LIMIT = 1 << 16


def infer_shape(op: Operation, ins: list[Shape]) -> Shape:
    """The output shape the operator's rule gives for these input shapes (remembered
    for each kind, attributes and input shapes: the rules are pure)."""
    key: tuple | None = (op.kind, op.attrs, tuple(ins))
    try:
        known = _SHAPES.get(key)  # type: ignore[arg-type]
    except TypeError:  # an unhashable attribute: computed each time
        key, known = None, None
    if known is not None:
        return known
    out = _infer_shape(op, ins)
    if key is not None and len(_SHAPES) < _SHAPES_LIMIT:
        _SHAPES[key] = out
    return out


def _infer_shape(op: Operation, ins: list[Shape]) -> Shape:
    entry = REGISTRY.get(op.kind)
    if entry is None:
        raise ModelError(f"unknown operator {op.kind!r}; tileplan knows {len(REGISTRY)} (see `tileplan.ops`)",
                         where(op))
    lo, hi = entry.inputs
    if not lo <= len(ins) <= hi:
        count = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ModelError(f"{op.kind} takes {count} inputs, found {len(ins)}", where(op))
    try:
        return tuple(int(d) for d in entry.shape(ins, attributes(op, entry)))
    except ModelError as e:
        if e.place is None:
            raise ModelError(e.detail, where(op)) from None
        raise


# Shape helpers ------------------------------------------------------------------------

def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy broadcasting; `ModelError` (no place) when the shapes do not broadcast."""
    rank = max(len(s) for s in shapes)
    out = []
    for k in range(1, rank + 1):
        dims = {s[-k] for s in shapes if len(s) >= k} - {1}
        if len(dims) > 1:
            raise ModelError(f"shapes {' and '.join(str(list(s)) for s in shapes)} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(reversed(out))


def axis_of(axis: int, rank: int, what: str = "axis") -> int:
    """A possibly negative axis as an index in [0, rank)."""
    if not -rank <= axis < rank:
        raise ModelError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


# Layout helpers -----------------------------------------------------------------------

def spread_layout(ctx: LoweringContext, precision: Precision) -> Layout:
    """Where a tensor no operation lays out goes: linearly over every tile in 8-byte
    grains (Poplar's `mapTensorLinearly`; tileplan does not keep its 128-byte minimum
    per tile, so a small tensor sits thinner on more tiles)."""
    return linear_layout(ctx.machine.tile_count, precision.bytes, ctx.prefix, Padding.ZERO)


def activation_layout(ctx: LoweringContext, info: InputInfo) -> Layout:
    """An input's layout if known, else where an undecided tensor would be spread."""
    if info.layout is not None:
        return info.layout
    return spread_layout(ctx, info.precision)


def shard_elements(ctx: LoweringContext, layout: Layout, shape: Shape, name: str) -> int:
    """Elements of the largest shard of a value of `shape` in `layout`."""
    return ctx.shards(layout, shape, name).largest_elements


def row_split(ctx: LoweringContext, layout: Layout, shape: Shape, name: str) -> tuple[int, int]:
    """(rows per tile, partitions of the last dimension) of a layout on a shape; a
    row is the last dimension."""
    shards = ctx.shards(layout, shape, name)
    last = len(shape) - 1
    for axis, split in zip(layout.tiling.axes, shards.splits):
        if axis.axis.is_linear:  # rows are cut anywhere: a tile may touch two more rows
            return math.ceil(shards.largest_elements / shape[-1]) + 1, min(axis.partitions, shape[-1])
        if axis.axis.dim(len(shape)) == last:
            return shards.largest_elements // split.largest, axis.partitions
    return shards.largest_elements // shape[-1], 1


# Steps every lowering uses ------------------------------------------------------------

def copy_text(local: bool) -> str:
    return f"Copy {{ mapping: CoordinateMapping {{ offsets: [], view: None }}, reuse_local: {str(local).lower()} }}"


def copy_if_needed(ctx: LoweringContext, op: Operation, vid: int, wanted: Layout | None, count: int,
                   alignment: int | None = None, name: str | None = None) -> int:
    """A `Copy` of value `vid` into `wanted` unless it is there already. The copy
    reuses local data (`reuse_local: true`) when every tile already holds the
    elements it needs, and exchanges otherwise. `name` names the copy (default: the
    operation's result, as the reference names it). `wanted` None: read as it is."""
    v = ctx.value(vid)
    if wanted is None or v.layout == wanted:
        return vid
    label = name if name is not None else f"operation {op.index} result 0"
    copied = ctx.new_value(op.origin, label, v.shape, v.precision, wanted, alignment_bytes=alignment)
    try:
        local = same_placement(ctx.shards(v.layout, v.shape, v.name), ctx.shards(wanted, v.shape, v.name))
    except TilingError:
        local = False
    ctx.add_step(op, copy_text(local), count, (vid,), (copied,))
    return copied


def place(ctx: LoweringContext, op: Operation, ids: tuple[int, ...], wanted: Layout | None, count: int,
          alignment: int | None = None, name: str | None = None) -> tuple[int, ...]:
    """An input as the operation reads it: as is when every member is in `wanted`, else
    one `Copy` (of the current iteration's member, for a family read in a repeat
    block) into a new value."""
    if wanted is None or all(ctx.value(i).layout == wanted for i in ids):
        return ids
    if len(ids) == 1:
        return (copy_if_needed(ctx, op, ids[0], wanted, count, alignment, name),)
    first = ctx.value(ids[0])
    label = name if name is not None else f"operation {op.index} result 0"
    copied = ctx.new_value(op.origin, label, first.shape, first.precision, wanted, alignment_bytes=alignment)
    ctx.add_step(op, copy_text(False), count, ids, (copied,))
    return (copied,)


def can_write_in_place(ctx: LoweringContext, vid: int, dies: bool, layout: Layout, op: Operation,
                       shape: Shape | None = None, precision: Precision | None = None) -> bool:
    """An output may take the storage of input `vid` when that storage dies here, is
    not a declared tensor's (nor an alias of one), has the output's layout and shape
    and is at least as wide."""
    v = ctx.value(vid)
    shape = op.output_shape if shape is None else shape
    precision = op.output_precision if precision is None else precision
    return (dies and v.storage_group >= ctx.declared_count and v.layout == layout
            and v.precision.bytes >= precision.bytes and v.shape == shape)


def write_output(ctx: LoweringContext, op: Operation, layout: Layout, in_place_of: int | None = None,
                 name: str | None = None) -> int:
    """The operation's output value, in the storage of `in_place_of` when given."""
    return ctx.new_value(op.origin, op.name if name is None else name, op.output_shape, op.output_precision,
                         layout, storage_of=in_place_of)


@dataclass
class Gathered:
    """Operands read where they are and brought to the tiles that need them: the
    bytes each tile receives (scratch), and whether anything moves between tiles."""

    scratch: int = 0
    exchange: bool = False
    reads: list[int] = field(default_factory=list)


def gather_operand(ctx: LoweringContext, vid: int, out_layout: Layout, out_shape: Shape, got: Gathered) -> None:
    """An operand broadcast against an output it does not match: every tile receives
    the elements its part of the output needs, at most min(operand, output shard)
    elements (the bound tileplan charges as scratch)."""
    v = ctx.value(vid)
    need = min(math.prod(v.shape), shard_elements(ctx, out_layout, out_shape, v.name))
    got.scratch += need * v.precision.bytes
    got.exchange = True
    got.reads.append(vid)


def flag(x: bool) -> str:
    return str(x).lower()
