"""The model IR: tensors and operations in topological order, with repeat blocks.

A `Program` lists graph nodes in declaration order; each node (a tensor declared as
input or parameter, or an operation) has a stable `origin` number, the reference's
`origin`. Operations are numbered separately (`index`): "operation 0" is the first.
A `RepeatBlock` runs its body `count` times; its parameters come in families, one
tensor per iteration (`vit.encoder.layer{i}.attention.qkv.weight`), and each body
operation names the family (`{i}` in the name) for the per-iteration tensor.

Operations name an operator of the registry (`tileplan.ops`) by `kind`; validity
(`tileplan.ops.check_program`) is a separate pass: names defined before use, shapes
that agree with each operator's rule. Errors name the operation and the rule.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields

from tileplan.errors import ModelError
from tileplan.model.info import ProgramInfo
from tileplan.model.precision import Precision
from tileplan.model.role import DECLARED, MADE, Role

#: a layer index in a value's name, taken out of its display group (`group_of`)
LAYER_INDEX = re.compile(r"\.layer(?:\d+|\{i\})(?=\.)|(?<=\.)(?:layers?|h|blocks?)\.\d+\.")
ITERATION = "{i}"


def group_of(name: str) -> str:
    """A value's group, what the report's `group` column and the views gather values
    by: its name without the layer index (`vit.encoder.layer3.mlp.up.bias` ->
    `vit.encoder.mlp.up.bias`, `model.layers.5.mlp.down_proj` -> `model.mlp.down_proj`).
    For display only: a value's name is all the lowering has of it there; which layer an
    operation belongs to is `Operation.layer`, and nothing splits by names."""
    return LAYER_INDEX.sub("", name)


@dataclass(frozen=True, slots=True)
class Tensor:
    """A declared tensor: the model's input, a weight, a buffer or training state, as
    its `role` says. `source_shape`: the shape the framework holds it in, where the
    importer declares it permuted (a Linear weight [out, in] declared [in, out]; what a
    runtime that uploads the framework's tensor receives), else None. Invariants: dims
    >= 1; the role is a declared one; a source shape is a permutation of the shape."""

    origin: int
    name: str
    shape: tuple[int, ...]
    precision: Precision
    role: Role
    source_shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.shape or any(d < 1 for d in self.shape):
            raise ModelError(f"shape {list(self.shape)}: every dimension must be >= 1", self.name)
        if self.source_shape is not None and sorted(self.source_shape) != sorted(self.shape):
            raise ModelError(f"source shape {list(self.source_shape)} is not a permutation of {list(self.shape)}",
                             self.name)
        if self.role not in DECLARED:
            raise ModelError(f"a declared tensor's role must be one of {', '.join(sorted(DECLARED))}, found "
                             f"{str(self.role)!r}", self.name)
        if math.prod(self.shape) > MAX_ELEMENTS:
            raise ModelError(f"shape {list(self.shape)} has more than 2^48 elements", self.name)

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


#: more elements than any tensor on any machine (2^48): beyond it a shape is a typo or hostile
MAX_ELEMENTS = 1 << 48


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the registry's operator `kind`. `inputs` and `output` are
    tensor names; inside a repeat block a name may hold `{i}`, the iteration. `attrs`
    are sorted (key, value) pairs. `module` is where it comes from in the user's model
    (`encoder.layer.3.attention`), when known.

    `layer`: the model layer it belongs to, counting the model's layers (the entries
    of its module lists, `encoder.layer.3` -> 3, a second list's after the first's)
    from 0 in the order they run; None outside them (embeddings, the head, the loss) or
    where the importer cannot tell. In a repeat block's body it is the first
    iteration's: iteration i runs layer `layer + i`. `role`: what its values are,
    activations and temporaries but in a training program (the operations making a
    parameter's gradient, the weight update's)."""

    origin: int
    index: int
    kind: str
    name: str
    inputs: tuple[str, ...]
    output: str
    output_shape: tuple[int, ...]
    output_precision: Precision
    attrs: tuple[tuple[str, object], ...] = ()
    module: str | None = None
    layer: int | None = None
    role: Role = Role.ACTIVATION

    def __init__(self, origin: int, index: int, kind: str, name: str, inputs: tuple[str, ...], output: str,
                 output_shape: tuple[int, ...], output_precision: Precision,
                 attrs: tuple[tuple[str, object], ...] = (), module: str | None = None, layer: int | None = None,
                 role: Role = Role.ACTIVATION) -> None:
        """The fields, each set through its slot's own setter (`_OPERATION_SETTERS`), then
        `__post_init__`: the generated frozen `__init__` goes through `object.__setattr__`
        for each field, twice as slow, and a synthetic chain makes a million operations."""
        s = _OPERATION_SETTERS
        s[0](self, origin)
        s[1](self, index)
        s[2](self, kind)
        s[3](self, name)
        s[4](self, inputs)
        s[5](self, output)
        s[6](self, output_shape)
        s[7](self, output_precision)
        s[8](self, attrs)
        s[9](self, module)
        s[10](self, layer)
        s[11](self, role)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not self.output_shape or min(self.output_shape) < 1:
            raise ModelError(f"output shape {list(self.output_shape)}: every dimension must be >= 1",
                             f"operation {self.index} ({self.name})")
        if self.role is not Role.ACTIVATION and self.role not in MADE:
            raise ModelError(f"an operation makes values of role {', '.join(sorted(MADE))}, found "
                             f"{str(self.role)!r}", f"operation {self.index} ({self.name})")
        if self.layer is not None and self.layer < 0:
            raise ModelError(f"layer must be >= 0, found {self.layer}", f"operation {self.index} ({self.name})")

    def attr(self, key: str, default: object = None) -> object:
        return dict(self.attrs).get(key, default)

    def int_attr(self, key: str, default: int | None = None) -> int:
        """An integer attribute; `ModelError` naming the operation if it is anything else."""
        value = dict(self.attrs).get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelError(f"attribute {key!r} must be an integer, found {value!r}",
                             f"operation {self.index} ({self.name})")
        return value

    def ints_attr(self, key: str) -> tuple[int, ...]:
        """An attribute that is a sequence of integers."""
        value = dict(self.attrs).get(key)
        if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                           for v in value):
            raise ModelError(f"attribute {key!r} must be a list of integers, found {value!r}",
                             f"operation {self.index} ({self.name})")
        return tuple(value)


#: `Operation`'s fields' slot setters, in field order (`Operation.__init__`)
_OPERATION_SETTERS = [getattr(Operation, f.name).__set__ for f in fields(Operation)]


@dataclass(frozen=True, slots=True)
class RepeatBlock:
    """`body` runs `count` times; `families` are the parameter families it reads,
    iteration i reading member `first + i` (a pipeline stage runs layers
    [first, first + count) of a model). `carried_in` is the tensor made before the
    block that the first iteration reads where later ones read the iteration before's
    `carried_out` (the residual stream); after the block, `carried_out` names the last
    iteration's value."""

    count: int
    name: str
    families: tuple[str, ...]
    body: tuple[Operation, ...]
    first: int = 0
    carried_in: str | None = None
    carried_out: str | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ModelError(f"repeat count must be >= 1, found {self.count}", self.name)
        if self.first < 0:
            raise ModelError(f"first iteration must be >= 0, found {self.first}", self.name)

    def members(self, name: str) -> tuple[str, ...]:
        """The tensors a family name stands for, one per iteration."""
        return tuple(family_member(name, self.first + i) for i in range(self.count))


@dataclass(frozen=True, slots=True)
class Program:
    """A whole model: declared tensors (input first, then parameters in declaration
    order), then the items (operations and repeat blocks) in execution order, and
    what the program says about itself (`info`)."""

    name: str
    tensors: tuple[Tensor, ...]
    items: tuple[Operation | RepeatBlock, ...]
    outputs: tuple[str, ...] = ()
    info: ProgramInfo = ProgramInfo()

    def operations(self) -> list[Operation]:
        ops: list[Operation] = []
        for item in self.items:
            ops.extend(item.body if isinstance(item, RepeatBlock) else (item,))
        return ops

    def tensor(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def parameter_count(self) -> int:
        """The model's parameters (weights; not buffers, nor training state)."""
        return sum(t.elements for t in self.tensors if t.role is Role.WEIGHT)


def family_member(name: str, iteration: int) -> str:
    return name.replace(ITERATION, str(iteration))
