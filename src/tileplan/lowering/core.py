"""The lowering's data and its context: values (not yet sized) and drafts of steps.

`lower_program` (in `tileplan.lowering.program`) walks the operations and asks one
function per operation kind for its steps; those functions create values and steps
through a `LoweringContext`, which numbers them in creation order (the report's ids)
and knows the machine, the layout policy and the options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from sys import intern
from typing import TYPE_CHECKING, NamedTuple

from tileplan.errors import InputError, TilingError
from tileplan.model.ir import Operation, Tensor, group_of
from tileplan.model.layout import Layout
from tileplan.model.machine import Machine
from tileplan.model.precision import Precision
from tileplan.model.tiling import Shards, round_up, shards_of
from tileplan.model.timeline import Value

if TYPE_CHECKING:
    from tileplan.lowering.policy import Policy


class GemmOutputPacking(Enum):
    """`Native`: AMP partials as the AMP lays them out, each on whole 32 KiB interleaved
    element pairs. `Packed`: partials packed densely, no element rounding."""

    NATIVE = "Native"
    PACKED = "Packed"


class AttentionProducts(Enum):
    """`Materialized`: the whole score matrix of a head at once. `Streamed`: scores in
    chunks of keys with an online softmax (bounded scratch). `Automatic`: whichever
    needs less memory at that step."""

    AUTOMATIC = "Automatic"
    MATERIALIZED = "Materialized"
    STREAMED = "Streamed"


@dataclass(frozen=True, slots=True)
class Options:
    """`available_memory_proportion`: Poplar's cap on one matmul's or convolution's
    temporary bytes per tile, as a proportion of the tile's bytes (None: no cap)."""

    gemm_output_packing: GemmOutputPacking = GemmOutputPacking.NATIVE
    attention_products: AttentionProducts = AttentionProducts.AUTOMATIC
    available_memory_proportion: float | None = None

    def __post_init__(self) -> None:
        p = self.available_memory_proportion
        if p is not None and not 0 < p <= 1:
            raise InputError(f"available memory proportion must be in (0, 1], found {p}")


class StepDraft(NamedTuple):
    """A step before liveness: what it reads and writes, and its scratch per region.
    (A named tuple: a million of them are made for a million-value program.)"""

    source: int
    operation: str
    execution_count: int
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    scratch: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class OperationInfo:
    """What the report says about an operation: index, node, name, kind, first step."""

    index: int
    origin: int
    name: str
    kind: str
    execution_count: int


@dataclass
class LoweringContext:
    """Mutable while one program is lowered; its products are immutable drafts."""

    machine: Machine
    policy: "Policy"
    options: Options
    #: the values made so far, sized (`shard_bytes`, `aligned_bytes`, `bytes` None
    #: where the layout cannot hold the shape: `unsized` says why)
    values: list[Value] = field(default_factory=list)
    steps: list[StepDraft] = field(default_factory=list)
    #: tensor name -> value id; a family name ("...layer{i}...") -> its members' ids
    binding: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: ids below this belong to declared tensors (the input and the parameters)
    declared_count: int = 0
    #: family members read by iterations after the first (see `Lowering.later_members`)
    later_members: set[int] = field(default_factory=set)
    #: products whose temporary bytes per tile exceed the cap: (operation, name, bytes)
    over_cap: list[tuple[int, str, int]] = field(default_factory=list)
    #: name intermediates as the reference does (`operation N result 0`) rather than
    #: by what they are (`<operation> partials`, `<weight> [AMP copy]`)
    reference_names: bool = False
    #: each value's shards, or why it has none (`TilingError`'s detail)
    value_shards: dict[int, Shards] = field(default_factory=dict)
    unsized: dict[int, str] = field(default_factory=dict)
    #: (layout, shape, precision, alignment) -> (shards, shard bytes, aligned bytes)
    _sizes: dict[tuple, tuple[Shards, int, int]] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return self.machine.class_prefix

    def new_value(self, origin: int, name: str, shape: tuple[int, ...], precision: Precision, layout: Layout,
                  alignment_bytes: int | None = None, storage_of: int | None = None, group: str | None = None,
                  role: str = "intermediate", alias_of: int | None = None) -> int:
        """Create a value; `storage_of` shares that value's storage group (written in
        place), `alias_of` too and says it is a view of that value's data (its `root`)."""
        vid = len(self.values)
        if alias_of is not None:
            storage_of = alias_of
        # a storage group is numbered by the value that owns the storage
        sg = vid if storage_of is None else self.values[storage_of].storage_group
        root = vid if alias_of is None else self.values[alias_of].root
        sized = self.size(vid, layout, shape, precision, alignment_bytes, name)
        shard, aligned = (None, None) if sized is None else sized[1:]
        self.values.append(Value(vid, origin, root, name, intern(group if group is not None else group_of(name)), shape,
                                 precision, layout, sg, shard, aligned, 1, aligned, alignment_bytes=alignment_bytes,
                                 role=role))
        return vid

    def size(self, vid: int, layout: Layout, shape: tuple[int, ...], precision: Precision, alignment: int | None,
             name: str) -> tuple[Shards, int, int] | None:
        """Value `vid`'s shards, largest shard bytes and those rounded up to its
        alignment (recorded in `value_shards`); None, with the reason in `unsized`,
        when the layout cannot hold the shape. Computed once per layout, shape,
        precision and alignment."""
        key = (layout, shape, precision, alignment)
        sized = self._sizes.get(key)
        if sized is None:
            try:
                shards = shards_of(layout, shape, name)
            except TilingError as e:
                self.unsized[vid] = e.detail
                return None
            shard = shards.largest_bytes(precision)
            sized = self._sizes[key] = (shards, shard, round_up(shard, alignment) if alignment else shard)
        self.value_shards[vid] = sized[0]
        return sized

    def value(self, vid: int) -> Value:
        return self.values[vid]

    @property
    def cap_bytes(self) -> int | None:
        """The temporary-memory cap of one matmul or convolution per tile, in bytes."""
        p = self.options.available_memory_proportion
        return None if p is None else int(p * self.machine.tile_bytes)

    def note_temporary(self, op: Operation, temporary: int) -> None:
        """Record a product planned over the cap (Poplar plans it anyway)."""
        cap = self.cap_bytes
        if cap is not None and temporary > cap and all(i != op.index for i, _, _ in self.over_cap):
            self.over_cap.append((op.index, op.name, temporary))

    def result_name(self, op: Operation, what: str = "") -> str:
        """The name of a value operation `op` makes: the operation's name with what the
        value is (`partials`, `scores`), or the reference's `operation N result 0`."""
        if self.reference_names:
            return op_result_name(op)
        return f"{op.name} {what}" if what else op.name

    def copy_name(self, op: Operation, vid: int, why: str = "copy", source: str | None = None) -> str:
        """A re-laid-out input: `<input> [<why>]`, or the reference's name. `source`
        names the input as the operation reads it (a parameter family's
        `...layer{i}...` in a repeat block, where `vid` is its first member)."""
        if self.reference_names:
            return op_result_name(op)
        return f"{source if source is not None else self.values[vid].name} [{why}]"

    def is_declared(self, vid: int) -> bool:
        return vid < self.declared_count

    def add_step(self, op: Operation, operation: str, count: int, reads: tuple[int, ...], writes: tuple[int, ...],
                 scratch: dict[str, int] | None = None) -> None:
        items = tuple(sorted((k, v) for k, v in (scratch or {}).items() if v))
        self.steps.append(StepDraft(op.index, operation, count, reads, writes, items))

    def shards(self, layout: Layout, shape: tuple[int, ...], name: str) -> Shards:
        """Shards of a layout on a shape; raises the `TilingError` naming `name`."""
        return shards_of(layout, shape, name)


def op_result_name(op: Operation, k: int = 0) -> str:
    """The reference's name for every value an operation's lowering creates."""
    return f"operation {op.index} result {k}"


def declared_tensor_value(ctx: LoweringContext, tensor: Tensor, layout: Layout, alignment: int | None) -> int:
    vid = ctx.new_value(tensor.origin, tensor.name, tensor.shape, tensor.precision, layout, alignment,
                        role=tensor.role)
    ctx.binding[tensor.name] = (vid,)
    return vid
