"""What a lowering returns: a typed fragment of the timeline, relative to its operation.

A lowering (`tileplan.ops.OpDef.lower`) is pure. It is given its operation, its plan
and its operands (`Operand`: what it may know of each input member: layout, shape,
precision, alignment, whether its storage is a declared tensor's, and a name for its
errors) and returns a `Fragment`:

* new values (`NewValue`), each of a `ValueKind`: the operation's result or another
  of its products (`RESULT`, with a label: `partials`, `scores`), a copy of an input
  or of a new value in another layout (`COPY`, with why: `AMP copy`), a conversion to
  another precision (`CONVERTED`) or a view of an input's data (`VIEW`); with its
  shape, precision, layout, alignment and, when it is written in place, the value
  whose storage it shares;
* typed steps (`FragmentStep`): a `StepKind`, the report's text, the values read and
  written, scratch per region and whether the step exchanges between tiles;
* which value is the operation's output.

Values are referenced by `Ref`: an input member (members counted over the input
positions in order; a position holds several members for a parameter family read in
a repeat block) or the k-th new value. The driver (`tileplan.lowering`) numbers the
values, names them from (operation, kind) and memoizes fragments by what the
lowering was given, so lowering a repeated signature is a lookup.

`FragmentBuilder` is how a lowering writes one: a local record, frozen by `done`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Mapping, NamedTuple, Sequence

from tileplan.model.layout import Layout
from tileplan.model.precision import Precision

Shape = tuple[int, ...]


class ValueKind(Enum):
    """What a new value is (the driver names it from this: `tileplan.lowering.naming`)."""

    RESULT = "result"  # the operation's output or another of its products
    COPY = "copy"  # a value in another layout
    CONVERTED = "converted"  # a value in another precision
    VIEW = "view"  # an input's data under another shape or layout: shares its root


class StepKind(Enum):
    """A step's operation: the first word of its text."""

    COPY = "Copy"
    VIEW = "View"
    CONVERT = "Convert"
    GEMM = "Gemm"
    MATMUL = "Matmul"
    CONV = "Conv"
    SUM = "Sum"
    BATCHED_GEMM = "BatchedGemm"
    GROUPED_CONV = "GroupedConv"
    POOL = "Pool"
    BINARY = "Binary"
    UNARY = "Unary"
    SELECT = "Select"
    LAYER_NORM = "LayerNorm"
    RMS_NORM = "RmsNorm"
    BATCH_NORM = "BatchNorm"
    REDUCE = "Reduce"
    SOFTMAX = "Softmax"
    LOG_SOFTMAX = "LogSoftmax"
    SCAN = "Scan"
    GATHER = "Gather"
    ATTENTION_SCORES = "AttentionScores"
    ATTENTION_VALUES = "AttentionValues"
    ATTENTION_STREAMED = "AttentionStreamed"
    BROADCAST = "Broadcast"
    CONCAT = "Concat"
    PAD = "Pad"
    FILL = "Fill"
    TILE = "Tile"
    GROUP_NORM = "GroupNorm"
    RESIZE = "Resize"
    TOP_K = "TopK"
    SCATTER = "Scatter"
    GROUPED_GEMM = "GroupedGemm"
    OPTIMIZER = "Optimizer"  # training: gradient accumulation and the weight update

    @property
    def program(self) -> bool:
        """A step of the device program (a `View` is none: it only renames data)."""
        return self is not StepKind.VIEW

    @property
    def compute(self) -> bool:
        """A step running vertices (not a `Copy`, which is exchange, nor a `View`)."""
        return self not in (StepKind.VIEW, StepKind.COPY)


class Ref(NamedTuple):
    """An input member (`new` False; `number` counts the members of every input
    position in order) or the `number`-th new value (`new` True)."""

    new: bool
    number: int


class Operand(NamedTuple):
    """What a lowering knows of one input member. `declared_storage`: its storage is
    a declared tensor's (never written in place). `name` is for error messages only:
    a lowering's result may not depend on it (fragments are shared across names)."""

    layout: Layout
    shape: Shape
    precision: Precision
    alignment: int | None
    declared_storage: bool
    name: str


@dataclass(frozen=True, slots=True)
class NewValue:
    """A value a lowering makes. `of`: the value it is a copy, conversion or view of
    (a `VIEW` shares its root and storage). `operand`: a `COPY` named after the
    operation's input at this position as the operation names it (a parameter
    family's `...{i}...` name) rather than after `of`. `storage`: the value whose
    storage it is written into (in place). `label`: what a `RESULT` is besides the
    output (`partials`), or why a `COPY` was made (`AMP copy`)."""

    kind: ValueKind
    shape: Shape
    precision: Precision
    layout: Layout
    label: str = ""
    of: Ref | None = None
    operand: int | None = None
    alignment: int | None = None
    storage: Ref | None = None

    def __post_init__(self) -> None:
        assert (self.of is None) == (self.kind is ValueKind.RESULT), self
        assert self.operand is None or self.kind is ValueKind.COPY, self
        assert self.kind is not ValueKind.VIEW or self.storage == self.of, self


@dataclass(frozen=True, slots=True)
class FragmentStep:
    """One step: `scratch` is (region, bytes) pairs, sorted, none zero."""

    kind: StepKind
    text: str
    reads: tuple[Ref, ...]
    writes: tuple[Ref, ...]
    scratch: tuple[tuple[str, int], ...]
    exchange: bool

    def __post_init__(self) -> None:
        head = self.kind.value
        assert self.text == head or self.text.startswith(head + " "), (self.kind, self.text)


@dataclass(frozen=True, slots=True)
class Fragment:
    """A lowering's result (see the module docstring)."""

    values: tuple[NewValue, ...]
    steps: tuple[FragmentStep, ...]
    output: Ref


class FragmentBuilder:
    """Collects one lowering's new values and steps; `done` freezes them."""

    __slots__ = ("_operands", "_starts", "_values", "_declared", "_steps")

    def __init__(self, operands: Sequence[Sequence[Operand]]) -> None:
        self._operands = [m for members in operands for m in members]
        starts = [0]
        for members in operands:
            starts.append(starts[-1] + len(members))
        self._starts = starts
        self._values: list[NewValue] = []
        self._declared: list[bool] = []
        self._steps: list[FragmentStep] = []

    # Reading --------------------------------------------------------------------------

    def operand(self, position: int, member: int = 0) -> Ref:
        """Input `position`'s member (the first, or the current iteration's in a repeat
        block)."""
        assert 0 <= member < self._starts[position + 1] - self._starts[position], (position, member)
        return Ref(False, self._starts[position] + member)

    def members(self, position: int) -> tuple[Ref, ...]:
        return tuple(Ref(False, i) for i in range(self._starts[position], self._starts[position + 1]))

    def layout(self, ref: Ref) -> Layout:
        return self._values[ref.number].layout if ref.new else self._operands[ref.number].layout

    def shape(self, ref: Ref) -> Shape:
        return self._values[ref.number].shape if ref.new else self._operands[ref.number].shape

    def precision(self, ref: Ref) -> Precision:
        return self._values[ref.number].precision if ref.new else self._operands[ref.number].precision

    def declared_storage(self, ref: Ref) -> bool:
        """Whether `ref`'s storage is a declared tensor's (a new value written in place
        of one has that storage too)."""
        return self._declared[ref.number] if ref.new else self._operands[ref.number].declared_storage

    def label(self, ref: Ref, op_name: str) -> str:
        """A name for an error about `ref`: an input's name, or for a new value the
        operation's name (the driver names new values later)."""
        return op_name if ref.new else self._operands[ref.number].name

    # Writing --------------------------------------------------------------------------

    def new(self, kind: ValueKind, shape: Shape, precision: Precision, layout: Layout, *, label: str = "",
            of: Ref | None = None, operand: int | None = None, alignment: int | None = None,
            storage: Ref | None = None) -> Ref:
        if kind is ValueKind.VIEW:
            storage = of
        self._values.append(NewValue(kind, shape, precision, layout, label, of, operand, alignment, storage))
        self._declared.append(storage is not None and self.declared_storage(storage))
        return Ref(True, len(self._values) - 1)

    def step(self, kind: StepKind, text: str, reads: Sequence[Ref], writes: Sequence[Ref],
             scratch: Mapping[str, int] | None = None, exchange: bool = False) -> None:
        items = tuple(sorted((k, v) for k, v in (scratch or {}).items() if v))
        self._steps.append(FragmentStep(kind, text, tuple(reads), tuple(writes), items, exchange))

    def done(self, output: Ref) -> Fragment:
        return Fragment(tuple(self._values), tuple(self._steps), output)
