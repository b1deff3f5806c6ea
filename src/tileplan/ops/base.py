"""The operator registry and what every operator's lowering shares.

An operator is one `OpDef`, which owns every fact about it: its name (the IR's
`Operation.kind`), how many inputs it takes, its attributes with their defaults, its
shape rule, its dtype rule (the output's element class from its inputs' classes),
which inputs it reads as weights (in the weight precision), whether it is
commutative, whether it is a view, its planning rule and its lowering. One module
per family (`ops/matmul.py`, `ops/elementwise.py`, ...) registers its operators with
`register`; nothing dispatches on operator names elsewhere. Importers map ATen and
ONNX names onto these entries through their own tables.

Both rules are pure functions of their arguments and the read-only
`tileplan.kernel.context.Kernel`:
* `plan(kernel, op, inputs) -> OpPlan[D]`: which layout each input is read in, where
  a parameter should rest, the output's layout, the product's temporary bytes per
  tile (a matmul's or convolution's, which the driver compares with the cap) and the
  operator's own `detail` of type D (a partition, a grid; None when it has none), which
  its lowering reads typed: an `OpDef[D]` pairs a plan and a lowering of one D;
* `lower(kernel, op, plan, operands, dies) -> Fragment`: the new values (with their
  kind) and the typed steps, each stating its scratch and whether it exchanges
  (`tileplan.kernel.fragment`).

Conventions every lowering follows (docs/report-format.md, "Operations"):
* An input is read where the plan wants it; if it is elsewhere, one `Copy` step
  re-lays it out first (`copy_if_needed`, `place`).
* An elementwise output takes its full-shape input's layout and is written in place
  when that input dies at this operation (`can_write_in_place`).
* A tensor no operation lays out is spread linearly over every tile in 8-byte grains
  (`spread_layout`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

from tileplan.errors import ModelError, TilingError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, Ref, StepKind, ValueKind
from tileplan.kernel.layouts import LINEAR_MIN_BYTES_PER_TILE, linear_layout, mapped_linearly, same_placement
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout, Padding
from tileplan.model.precision import Precision

Shape = tuple[int, ...]
F32_BYTES = 4
#: partial statistics a tile combines at once: a row split over more partitions is
#: reduced in a tree of this fan-in (as Poplar's multi-stage reductions do)
REDUCE_FAN_IN = 16
#: element classes (the importers' dtypes; `Graph.to_program` makes them precisions)
DTYPES = ("float", "int", "bool")


@dataclass(frozen=True, slots=True)
class InputInfo:
    """What planning knows of an input: shape, precision, layout (None for a tensor
    whose resting layout the policy has not chosen yet) and whether it is declared."""

    shape: Shape
    precision: Precision
    layout: Layout | None
    declared: bool


#: an operator's plan detail (`OpPlan.detail`): read-only, so a plan of a narrower
#: detail is a plan of a wider one (`OpPlan[GemmPartition]` is an `OpPlan[object]`)
D_co = TypeVar("D_co", covariant=True)
D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class OpPlan(Generic[D_co]):
    """Per input: the layout it is read in (`wanted`; None: as it is) and where a
    parameter should rest (`rest`; None: wherever the policy puts it compactly).
    `temporary`: the product's temporary bytes per tile (a matmul's or convolution's
    blocks), which Poplar caps; None for operations it does not cap. `detail`: what
    the operator's lowering needs of its plan besides (its partition, its grid), typed;
    None for an operator that needs nothing (an `OpPlan[None]`)."""

    wanted: tuple[Layout | None, ...]
    rest: tuple[Layout | None, ...]
    output: Layout
    alignment: tuple[int | None, ...] = ()
    temporary: int | None = None
    detail: D_co = field(kw_only=True)


ShapeRule = Callable[[list[Shape], Mapping[str, Any]], Shape]
DtypeRule = Callable[[list[str], Mapping[str, Any]], str]
PlanRule = Callable[[Kernel, Operation, list[InputInfo]], OpPlan[D]]
LowerRule = Callable[[Kernel, Operation, OpPlan[D], Sequence[Sequence[Operand]], Sequence[bool]], Fragment]

#: an attribute that must be given
REQUIRED = object()


def same_as(position: int) -> DtypeRule:
    """The dtype rule "the class of input `position`" (`float` without inputs)."""
    def rule(classes: list[str], attrs: Mapping[str, Any]) -> str:
        return classes[position] if len(classes) > position else "float"
    return rule


def always(dtype: str) -> DtypeRule:
    """The dtype rule "always `dtype`" (comparisons: `bool`; argmax: `int`)."""
    assert dtype in DTYPES, dtype
    return lambda classes, attrs: dtype


@dataclass(frozen=True, slots=True)
class OpDef(Generic[D]):
    """One operator. `inputs` = (fewest, most) inputs; `attrs` maps each attribute
    to its default (`REQUIRED` when it has none). `weight_inputs`: the positions read
    as weights (a parameter read there takes the weight precision). `commutative`: a
    binary operator whose operands may be swapped. `view` operators make no data of
    their own when the layout allows (their output may share the input's storage).
    Its plan makes the plans of detail D its lowering reads."""

    kind: str
    inputs: tuple[int, int]
    attrs: Mapping[str, object]
    shape: ShapeRule
    dtype: DtypeRule
    plan: PlanRule[D]
    lower: LowerRule[D]
    weight_inputs: tuple[int, ...] = ()
    commutative: bool = False
    view: bool = False

    def __post_init__(self) -> None:
        assert 0 <= self.inputs[0] <= self.inputs[1], self
        assert all(0 <= p < self.inputs[1] for p in self.weight_inputs), self
        assert not self.commutative or self.inputs[1] == 2, self


REGISTRY: dict[str, OpDef[Any]] = {}


def register(kind: str, *, inputs: tuple[int, int], shape: ShapeRule, plan: PlanRule[D], lower: LowerRule[D],
             attrs: Mapping[str, object] | None = None, dtype: DtypeRule | None = None,
             weight_inputs: tuple[int, ...] = (), commutative: bool = False, view: bool = False) -> OpDef[D]:
    assert kind not in REGISTRY, f"operator {kind} registered twice"
    entry = OpDef(kind, inputs, dict(attrs or {}), shape, dtype or same_as(0), plan, lower, weight_inputs,
                  commutative, view)
    REGISTRY[kind] = entry
    return entry


def where(op: Operation) -> str:
    return f"operation {op.index} ({op.name})"


def attributes(op: Operation, entry: OpDef[Any]) -> Mapping[str, object]:
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
    asked = (op.kind, op.attrs, tuple(ins))
    key: tuple | None = asked
    try:
        known = _SHAPES.get(asked)
    except TypeError:  # an unhashable attribute: computed each time
        key, known = None, None
    if known is not None:
        return known
    out = _infer_shape(op, ins)
    if key is not None and len(_SHAPES) < _SHAPES_LIMIT:
        _SHAPES[key] = out
    return out


def _entry(op: Operation, count: int) -> OpDef[Any]:
    entry = REGISTRY.get(op.kind)
    if entry is None:
        raise ModelError(f"unknown operator {op.kind!r}; tileplan knows {len(REGISTRY)} (see `tileplan.ops`)",
                         where(op))
    lo, hi = entry.inputs
    if not lo <= count <= hi:
        expected = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ModelError(f"{op.kind} takes {expected} inputs, found {count}", where(op))
    return entry


def _infer_shape(op: Operation, ins: list[Shape]) -> Shape:
    entry = _entry(op, len(ins))
    try:
        return tuple(int(d) for d in entry.shape(ins, attributes(op, entry)))
    except ModelError as e:
        if e.place is None:
            raise ModelError(e.detail, where(op)) from None
        raise


def infer_dtype(op: Operation, classes: list[str]) -> str:
    """The output's element class (`float`, `int` or `bool`) the operator's dtype rule
    gives for these input classes."""
    entry = _entry(op, len(classes))
    out = entry.dtype(classes, attributes(op, entry))
    assert out in DTYPES, (op.kind, out)
    return out


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

def spread_layout(k: Kernel, precision: Precision) -> Layout:
    """Where a tensor no operation lays out goes: linearly over every tile in 8-byte
    grains, evenly (tileplan's stand-in for the mapping the operation's own plan gives
    its output; where PopLibs maps an output with `mapTensorLinearly` the operation
    says so with `linear_output`)."""
    return linear_layout(k.tile_count, precision.bytes, k.prefix, Padding.ZERO)


def linear_output(k: Kernel, precision: Precision, min_bytes_per_tile: int = LINEAR_MIN_BYTES_PER_TILE) -> Layout:
    """An output PopLibs maps with `poputil::mapTensorLinearly`: 8-byte grains from tile
    0, at least `min_bytes_per_tile` a tile (the default 128), so a small output sits
    on the fewest, lowest tiles (`mapped_linearly`). Under the reference's kernels, the
    even spread the reference planner used (`spread_layout`)."""
    if not k.poplibs:
        return spread_layout(k, precision)
    return mapped_linearly(k.tile_count, precision.bytes, k.prefix, min_bytes_per_tile)


def activation_layout(k: Kernel, info: InputInfo) -> Layout:
    """An input's layout if known, else where an undecided tensor would be spread."""
    if info.layout is not None:
        return info.layout
    return spread_layout(k, info.precision)


def shard_elements(k: Kernel, layout: Layout, shape: Shape, name: str) -> int:
    """Elements of the largest shard of a value of `shape` in `layout`."""
    return k.shards(layout, shape, name).largest_elements


def row_split(k: Kernel, layout: Layout, shape: Shape, name: str) -> tuple[int, int]:
    """(rows per tile, partitions of the last dimension) of a layout on a shape; a
    row is the last dimension."""
    shards = k.shards(layout, shape, name)
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


def copy_if_needed(k: Kernel, b: FragmentBuilder, op: Operation, x: Ref, wanted: Layout | None, *,
                   alignment: int | None = None, why: str = "copy", operand: int | None = None) -> Ref:
    """A `Copy` of `x` into `wanted` unless it is there already, named `<x> [why]`
    (after the operation's input `operand` when given). The copy reuses local data
    (`reuse_local: true`) when every tile already holds the elements it needs, and
    exchanges otherwise. `wanted` None: read as it is. No scratch."""
    layout, shape = b.layout(x), b.shape(x)
    if wanted is None or layout == wanted:
        return x
    copied = b.new(ValueKind.COPY, shape, b.precision(x), wanted, label=why, of=x, operand=operand,
                   alignment=alignment)
    name = b.label(x, op.name)
    try:
        local = same_placement(k.shards(layout, shape, name), k.shards(wanted, shape, name))
    except TilingError:
        local = False
    b.step(StepKind.COPY, copy_text(local), (x,), (copied,), exchange=not local)
    return copied


def place(k: Kernel, b: FragmentBuilder, op: Operation, position: int, wanted: Layout | None, *,
          alignment: int | None = None, why: str = "copy") -> tuple[Ref, ...]:
    """Input `position` as the operation reads it: as is when every member is in
    `wanted`, else one `Copy` (of the current iteration's member, for a family read in
    a repeat block: it exchanges) into a new value named after the operation's input
    (`<input> [why]`)."""
    members = b.members(position)
    if wanted is None or all(b.layout(m) == wanted for m in members):
        return members
    if len(members) == 1:
        return (copy_if_needed(k, b, op, members[0], wanted, alignment=alignment, why=why, operand=position),)
    first = members[0]
    copied = b.new(ValueKind.COPY, b.shape(first), b.precision(first), wanted, label=why, of=first,
                   operand=position, alignment=alignment)
    b.step(StepKind.COPY, copy_text(False), members, (copied,), exchange=True)
    return (copied,)


def can_write_in_place(b: FragmentBuilder, x: Ref, dies: bool, layout: Layout, op: Operation,
                       shape: Shape | None = None, precision: Precision | None = None) -> bool:
    """An output may take the storage of `x` when that storage dies here, is not a
    declared tensor's (nor an alias of one), has the output's layout and shape and is
    at least as wide."""
    shape = op.output_shape if shape is None else shape
    precision = op.output_precision if precision is None else precision
    return (dies and not b.declared_storage(x) and b.layout(x) == layout
            and b.precision(x).bytes >= precision.bytes and b.shape(x) == shape)


def write_result(b: FragmentBuilder, op: Operation, layout: Layout, label: str = "", *,
                 in_place_of: Ref | None = None, shape: Shape | None = None, precision: Precision | None = None,
                 alignment: int | None = None) -> Ref:
    """A value the operation makes (by default its output, in the operation's shape
    and precision), in the storage of `in_place_of` when given."""
    return b.new(ValueKind.RESULT, op.output_shape if shape is None else shape,
                 op.output_precision if precision is None else precision, layout, label=label,
                 alignment=alignment, storage=in_place_of)


@dataclass
class Gathered:
    """Operands read where they are and brought to the tiles that need them: the
    bytes each tile receives (scratch), and whether anything moves between tiles."""

    scratch: int = 0
    exchange: bool = False
    reads: list[Ref] = field(default_factory=list)


def gather_operand(k: Kernel, b: FragmentBuilder, op: Operation, x: Ref, out_layout: Layout, out_shape: Shape,
                   got: Gathered) -> None:
    """An operand broadcast against an output it does not match: every tile receives
    the elements its part of the output needs, at most min(operand, output shard)
    elements (the bound tileplan charges as scratch)."""
    shape = b.shape(x)
    need = min(math.prod(shape), shard_elements(k, out_layout, out_shape, b.label(x, op.name)))
    got.scratch += need * b.precision(x).bytes
    got.exchange = True
    got.reads.append(x)


def flag(x: bool) -> str:
    return str(x).lower()
