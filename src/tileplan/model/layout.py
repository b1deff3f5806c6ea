"""Layouts: element order, tiling over tiles and memory class, as immutable values.

A layout's text form is the reference's, byte for byte, e.g.::

    Layout { order: RowMajor, tiling: TensorTiling { tile_count: 1472, replicas: 1,
      axes: [AxisTiling { axis: Linear, partitions: 1472, padding_groups: 1,
      block_size: 4, padding_multiple: 4, shard_padding_multiple: 1, padding: Reject,
      tile_stride: None }] }, memory_class: Ipu21Standard }

(on one line). `Layout.from_text(text).to_text() == text` for every layout the
reference writes. Constructors check the invariants that need no tensor shape
(positive counts, partitions x replicas = tile_count); the shape-dependent rules
(is the tensor representable?) live in `tileplan.model.tiling`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import Enum

from tileplan.errors import LayoutError, TextSyntaxError
from tileplan.model.debugtext import Node, describe, expect_fields, expect_int, parse


class Padding(Enum):
    """`Zero`: pad with zeros (stored); `Reject`: the tiling may not pad at all."""

    ZERO = "Zero"
    REJECT = "Reject"


class Spread(Enum):
    """How an axis's blocks go to its partitions (`tileplan.model.tiling.split_axis`).

    `Rounded`: every partition, partition p from block round(p x blocks / P), the
    reference's rule. `Leading`: as PopLibs' `poputil::splitRegions` spreads a linear
    mapping (graphcore/poplibs lib/poputil/Util.cpp `splitRegionsAux`, called by
    lib/poputil/TileMapping.cpp `calcLinearTileMapping`): the fewest leading
    partitions, each holding at least `min_blocks` blocks where there are that many
    (`leading_partitions`), evenly by floor(v x blocks / V); the later partitions are
    empty. A small tensor thus sits on the first partitions, 128 bytes or more each."""

    ROUNDED = "Rounded"
    LEADING = "Leading"


@dataclass(frozen=True, slots=True)
class Axis:
    """Which extent an `AxisTiling` splits.

    `FromEnd(k)` is ``shape[-k]`` (k >= 1), `FromStart(k)` is ``shape[k]`` (k >= 0),
    `Linear` is all elements of the tensor in row-major order.
    """

    kind: str  # "FromEnd" | "FromStart" | "Linear"
    index: int | None = None

    def __post_init__(self) -> None:
        if self.kind == "Linear":
            if self.index is not None:
                raise LayoutError("axis Linear takes no index")
        elif self.kind == "FromEnd":
            if self.index is None or self.index < 1:
                raise LayoutError(f"axis FromEnd(k) needs k >= 1, found {self.index}")
        elif self.kind == "FromStart":
            if self.index is None or self.index < 0:
                raise LayoutError(f"axis FromStart(k) needs k >= 0, found {self.index}")
        else:
            raise LayoutError(f"unknown axis {self.kind!r}; expected FromEnd(k), FromStart(k) or Linear")

    @property
    def is_linear(self) -> bool:
        return self.kind == "Linear"

    def dim(self, rank: int) -> int:
        """The dimension this axis splits in a tensor of `rank`; -1 if out of range."""
        assert self.index is not None
        d = rank - self.index if self.kind == "FromEnd" else self.index
        return d if 0 <= d < rank else -1

    def to_text(self) -> str:
        return "Linear" if self.is_linear else f"{self.kind}({self.index})"

    @staticmethod
    def from_end(k: int) -> "Axis":
        return Axis("FromEnd", k)

    @staticmethod
    def from_start(k: int) -> "Axis":
        return Axis("FromStart", k)


LINEAR = Axis("Linear")


@dataclass(frozen=True, slots=True)
class AxisTiling:
    """How one axis is split over tiles.

    The extent is padded to `padding_multiple` (per each of `padding_groups` equal
    groups), cut into blocks of `block_size`, and the blocks are spread evenly over
    `partitions` (the first ``blocks % partitions`` partitions get one more). A
    partition's stored extent is its blocks x block_size rounded up to
    `shard_padding_multiple`. `tile_stride`: partition p sits `tile_stride` tiles after
    partition p-1 (None: the default in `tileplan.model.tiling`). `spread` and
    `min_blocks` say how the blocks go to the partitions (`Spread`; the text names
    them only for `Leading`, so the reference's text is unchanged).
    Invariant: every count is positive; `min_blocks` is 1 unless the spread is
    `Leading`.
    """

    axis: Axis
    partitions: int
    padding_groups: int = 1
    block_size: int = 1
    padding_multiple: int = 1
    shard_padding_multiple: int = 1
    padding: Padding = Padding.ZERO
    tile_stride: int | None = None
    spread: Spread = Spread.ROUNDED
    min_blocks: int = 1

    def __post_init__(self) -> None:
        for name in ("partitions", "padding_groups", "block_size", "padding_multiple",
                     "shard_padding_multiple", "min_blocks"):
            value = getattr(self, name)
            if value < 1:
                raise LayoutError(f"AxisTiling {self.axis.to_text()}: {name} must be >= 1, found {value}")
        if self.tile_stride is not None and self.tile_stride < 1:
            raise LayoutError(
                f"AxisTiling {self.axis.to_text()}: tile_stride must be >= 1, found {self.tile_stride}")
        if self.spread is Spread.ROUNDED and self.min_blocks != 1:
            raise LayoutError(
                f"AxisTiling {self.axis.to_text()}: min_blocks applies to spread Leading only, found "
                f"{self.min_blocks} with spread Rounded")

    def to_text(self) -> str:
        stride = "None" if self.tile_stride is None else f"Some({self.tile_stride})"
        spread = "" if self.spread is Spread.ROUNDED else \
            f", spread: {self.spread.value} {{ min_blocks: {self.min_blocks} }}"
        return (
            f"AxisTiling {{ axis: {self.axis.to_text()}, partitions: {self.partitions}, "
            f"padding_groups: {self.padding_groups}, block_size: {self.block_size}, "
            f"padding_multiple: {self.padding_multiple}, "
            f"shard_padding_multiple: {self.shard_padding_multiple}, "
            f"padding: {self.padding.value}, tile_stride: {stride}{spread} }}"
        )


@dataclass(frozen=True, slots=True)
class TensorTiling:
    """A tensor split over `tile_count` tiles: the axes' partitions, each shard held by
    `replicas` tiles, the whole map turned `first_tile` tiles on (tile t's shard goes to
    tile (t + first_tile) mod tile_count: PopART's `LinearMapper` turns each linearly
    created tensor to start where the last one ended; the text names it only when not
    0). Invariant: product(partitions) x replicas == tile_count, each axis named once,
    `Linear` only alone, 0 <= first_tile < tile_count.
    """

    tile_count: int
    replicas: int
    axes: tuple[AxisTiling, ...]
    first_tile: int = 0
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._hash

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.tile_count, self.replicas, self.axes, self.first_tile)))
        if self.tile_count < 1:
            raise LayoutError(f"TensorTiling: tile_count must be >= 1, found {self.tile_count}")
        if not 0 <= self.first_tile < self.tile_count:
            raise LayoutError(f"TensorTiling: first_tile must be at least 0 and below tile_count "
                              f"{self.tile_count}, found {self.first_tile}")
        if self.replicas < 1:
            raise LayoutError(f"TensorTiling: replicas must be >= 1, found {self.replicas}")
        shards = math.prod(a.partitions for a in self.axes)
        if shards * self.replicas != self.tile_count:
            parts = " x ".join(str(a.partitions) for a in self.axes) or "1"
            raise LayoutError(
                f"TensorTiling: partitions ({parts}) x replicas {self.replicas} = "
                f"{shards * self.replicas}, expected tile_count {self.tile_count}")
        names = [a.axis for a in self.axes]
        if len(set(names)) != len(names):
            raise LayoutError("TensorTiling: an axis is tiled twice")
        if any(a.axis.is_linear for a in self.axes) and len(self.axes) != 1:
            raise LayoutError("TensorTiling: a Linear axis must be the only axis")

    def to_text(self) -> str:
        axes = ", ".join(a.to_text() for a in self.axes)
        first = f", first_tile: {self.first_tile}" if self.first_tile else ""
        return (f"TensorTiling {{ tile_count: {self.tile_count}, replicas: {self.replicas}, "
                f"axes: [{axes}]{first} }}")


@dataclass(frozen=True, slots=True)
class Order:
    """Element order within a shard: `RowMajor`,
    `BlockMajor(TransposedMatrix { row_block, column_block })` or `Amp(TransposedLeft)`.
    Orders do not change byte counts; they say what a consumer can read in place.
    """

    kind: str
    row_block: int | None = None
    column_block: int | None = None

    def __post_init__(self) -> None:
        if self.kind == "BlockMajor":
            if not (self.row_block and self.row_block > 0 and self.column_block and self.column_block > 0):
                raise LayoutError(
                    f"BlockMajor needs positive row_block and column_block, found "
                    f"{self.row_block}, {self.column_block}")
        elif self.kind in ("RowMajor", "AmpTransposedLeft"):
            if self.row_block is not None or self.column_block is not None:
                raise LayoutError(f"order {self.kind} takes no blocks")
        else:
            raise LayoutError(f"unknown order {self.kind!r}")

    def to_text(self) -> str:
        if self.kind == "BlockMajor":
            return (f"BlockMajor(TransposedMatrix {{ row_block: {self.row_block}, "
                    f"column_block: {self.column_block} }})")
        if self.kind == "AmpTransposedLeft":
            return "Amp(TransposedLeft)"
        return self.kind


ROW_MAJOR = Order("RowMajor")
AMP_TRANSPOSED_LEFT = Order("AmpTransposedLeft")


def block_major(row_block: int, column_block: int) -> Order:
    return Order("BlockMajor", row_block, column_block)


_CLASS_NAME = re.compile(r"^([A-Z][A-Za-z0-9]*?)(Standard|Interleaved)$")


@dataclass(frozen=True, slots=True)
class MemoryClass:
    """Where a value may live: `<Machine>Standard` prefers the non-interleaved region
    (and may overflow into the interleaved one); `<Machine>Interleaved` must sit in
    the interleaved region."""

    machine: str
    region: str  # "Standard" | "Interleaved"

    def __post_init__(self) -> None:
        if self.region not in ("Standard", "Interleaved") or not re.fullmatch(r"[A-Z][A-Za-z0-9]*", self.machine):
            raise LayoutError(f"unknown memory class {self.machine}{self.region}")

    @property
    def is_interleaved(self) -> bool:
        return self.region == "Interleaved"

    @property
    def usage_key(self) -> str:
        """The key of this class in a step's `usage` and `scratch`."""
        return "standard" if self.region == "Standard" else "interleaved"

    def to_text(self) -> str:
        return f"{self.machine}{self.region}"

    @classmethod
    def from_text(cls, text: str, what: str = "memory class") -> "MemoryClass":
        m = _CLASS_NAME.match(text)
        if not m:
            raise TextSyntaxError(
                f"{what}: expected <Machine>Standard or <Machine>Interleaved, found {text!r}")
        return cls(m.group(1), m.group(2))


@dataclass(frozen=True, slots=True)
class Layout:
    """Order + tiling + memory class of one value."""

    order: Order
    tiling: TensorTiling
    memory_class: MemoryClass
    # a layout is hashed and rendered often and never changes: both are kept
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    _text: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.order, self.tiling, self.memory_class)))

    def __hash__(self) -> int:
        return self._hash

    def to_text(self) -> str:
        if not self._text:
            object.__setattr__(self, "_text", f"Layout {{ order: {self.order.to_text()}, tiling: "
                               f"{self.tiling.to_text()}, memory_class: {self.memory_class.to_text()} }}")
        return self._text

    def __str__(self) -> str:
        return self.to_text()

    @classmethod
    def from_text(cls, text: str, what: str = "layout") -> "Layout":
        return _layout_from_node(parse(text, what), what)


# Reading the tree of a layout text ------------------------------------------------

def _layout_from_node(node: object, what: str) -> Layout:
    f = expect_fields(node, "Layout", ("order", "tiling", "memory_class"), what)
    mc = f["memory_class"]
    if not isinstance(mc, Node) or mc.args is not None or mc.fields is not None:
        raise TextSyntaxError(f"{what}: memory_class must be a name, found {describe(mc)}")
    return Layout(_order_from_node(f["order"], what), _tiling_from_node(f["tiling"], what),
                  MemoryClass.from_text(mc.name, what))


def _order_from_node(node: object, what: str) -> Order:
    if isinstance(node, Node):
        if node.name == "RowMajor" and node.args is None and node.fields is None:
            return ROW_MAJOR
        if node.name == "Amp" and node.args is not None and len(node.args) == 1:
            inner = node.args[0]
            if isinstance(inner, Node) and inner.name == "TransposedLeft" and inner.args is None \
                    and inner.fields is None:
                return AMP_TRANSPOSED_LEFT
        if node.name == "BlockMajor" and node.args is not None and len(node.args) == 1:
            f = expect_fields(node.args[0], "TransposedMatrix", ("row_block", "column_block"), what)
            return block_major(expect_int(f["row_block"], what), expect_int(f["column_block"], what))
    raise TextSyntaxError(
        f"{what}: unknown order {describe(node)}; expected RowMajor, "
        "BlockMajor(TransposedMatrix { row_block, column_block }) or Amp(TransposedLeft)")


def _tiling_from_node(node: object, what: str) -> TensorTiling:
    keys = ("tile_count", "replicas", "axes")
    rotated = isinstance(node, Node) and node.fields is not None and len(node.fields) == len(keys) + 1
    f = expect_fields(node, "TensorTiling", (*keys, "first_tile") if rotated else keys, what)
    axes = f["axes"]
    if not isinstance(axes, list):
        raise TextSyntaxError(f"{what}: axes must be a list, found {describe(axes)}")
    return TensorTiling(expect_int(f["tile_count"], what), expect_int(f["replicas"], what),
                        tuple(_axis_tiling_from_node(a, what) for a in axes),
                        expect_int(f["first_tile"], what) if rotated else 0)


_AXIS_FIELDS = ("axis", "partitions", "padding_groups", "block_size", "padding_multiple",
                "shard_padding_multiple", "padding", "tile_stride")


def _axis_tiling_from_node(node: object, what: str) -> AxisTiling:
    spread, min_blocks = Spread.ROUNDED, 1
    if isinstance(node, Node) and node.fields is not None and len(node.fields) == len(_AXIS_FIELDS) + 1:
        f = expect_fields(node, "AxisTiling", (*_AXIS_FIELDS, "spread"), what)
        named = f["spread"]
        if not isinstance(named, Node) or named.name != Spread.LEADING.value or named.args is not None:
            raise TextSyntaxError(f"{what}: spread must be Leading {{ min_blocks: n }}, found {describe(named)}")
        min_blocks = expect_int(expect_fields(named, Spread.LEADING.value, ("min_blocks",), what)["min_blocks"], what)
        spread = Spread.LEADING
    else:
        f = expect_fields(node, "AxisTiling", _AXIS_FIELDS, what)
    padding = f["padding"]
    if not isinstance(padding, Node) or padding.name not in ("Zero", "Reject") or padding.args or padding.fields:
        raise TextSyntaxError(f"{what}: padding must be Zero or Reject, found {describe(padding)}")
    stride = f["tile_stride"]
    if isinstance(stride, Node) and stride.name == "None" and stride.args is None and stride.fields is None:
        tile_stride = None
    elif isinstance(stride, Node) and stride.name == "Some" and stride.args and len(stride.args) == 1:
        tile_stride = expect_int(stride.args[0], what)
    else:
        raise TextSyntaxError(f"{what}: tile_stride must be None or Some(n), found {describe(stride)}")
    return AxisTiling(
        axis=_axis_from_node(f["axis"], what),
        partitions=expect_int(f["partitions"], what),
        padding_groups=expect_int(f["padding_groups"], what),
        block_size=expect_int(f["block_size"], what),
        padding_multiple=expect_int(f["padding_multiple"], what),
        shard_padding_multiple=expect_int(f["shard_padding_multiple"], what),
        padding=Padding(padding.name),
        tile_stride=tile_stride,
        spread=spread,
        min_blocks=min_blocks,
    )


def _axis_from_node(node: object, what: str) -> Axis:
    if isinstance(node, Node):
        if node.name == "Linear" and node.args is None and node.fields is None:
            return LINEAR
        if node.name in ("FromEnd", "FromStart") and node.args is not None and len(node.args) == 1:
            return Axis(node.name, expect_int(node.args[0], what))
    raise TextSyntaxError(f"{what}: unknown axis {describe(node)}; expected FromEnd(k), FromStart(k) or Linear")
