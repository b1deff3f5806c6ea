"""The model IR: tensors and operations in topological order, with repeat blocks.

A `Program` lists graph nodes in declaration order; each node (a tensor declared as
input or parameter, or an operation) has a stable `origin` number, the reference's
`origin`. Operations are numbered separately (`index`): "operation 0" is the first.
A `RepeatBlock` runs its body `count` times; its parameters come in families, one
tensor per iteration (`vit.encoder.layer{i}.attention.qkv.weight`), and each body
operation names the family (`{i}` in the name) for the per-iteration tensor.

Validity (`check_program`) is a separate pass: names defined before use, shapes
that agree with each operation's rule. Errors name the operation and the rule.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from tileplan.errors import ModelError
from tileplan.model.precision import Precision

LAYER_INDEX = re.compile(r"\.layer\d+(?=\.)")
ITERATION = "{i}"


def group_of(name: str) -> str:
    """A value's group: its name without the layer index
    (`vit.encoder.layer3.mlp.up.bias` -> `vit.encoder.mlp.up.bias`)."""
    return LAYER_INDEX.sub("", name)


@dataclass(frozen=True, slots=True)
class Tensor:
    """A declared tensor: the model's input or a parameter. Invariant: dims >= 1."""

    origin: int
    name: str
    shape: tuple[int, ...]
    precision: Precision
    role: str  # "input" | "parameter"

    def __post_init__(self) -> None:
        if not self.shape or any(d < 1 for d in self.shape):
            raise ModelError(f"shape {list(self.shape)}: every dimension must be >= 1", self.name)
        if self.role not in ("input", "parameter"):
            raise ModelError(f"role must be input or parameter, found {self.role!r}", self.name)

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


OP_KINDS = ("matmul", "add", "layernorm", "attention", "gelu")


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation. `inputs` and `output` are tensor names; inside a repeat block a
    name may hold `{i}`, the iteration. `attrs` are sorted (key, value) pairs."""

    origin: int
    index: int
    kind: str
    name: str
    inputs: tuple[str, ...]
    output: str
    output_shape: tuple[int, ...]
    output_precision: Precision
    attrs: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in OP_KINDS:
            raise ModelError(f"unknown operation kind {self.kind!r}; expected one of {', '.join(OP_KINDS)}",
                             f"operation {self.index} ({self.name})")

    def attr(self, key: str, default: object = None) -> object:
        return dict(self.attrs).get(key, default)


@dataclass(frozen=True, slots=True)
class RepeatBlock:
    """`body` runs `count` times; `families` are the parameter families it reads,
    each with its `count` members (in order of iteration)."""

    count: int
    name: str
    families: tuple[str, ...]
    body: tuple[Operation, ...]

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ModelError(f"repeat count must be >= 1, found {self.count}", self.name)


@dataclass(frozen=True, slots=True)
class Program:
    """A whole model: declared tensors (input first, then parameters in declaration
    order), then the items (operations and repeat blocks) in execution order."""

    name: str
    tensors: tuple[Tensor, ...]
    items: tuple[Operation | RepeatBlock, ...]
    outputs: tuple[str, ...] = ()
    options: dict[str, object] = field(default_factory=dict)

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
        return sum(t.elements for t in self.tensors if t.role == "parameter")


def family_member(name: str, iteration: int) -> str:
    return name.replace(ITERATION, str(iteration))


def check_program(program: Program) -> None:
    """Raise `ModelError` unless every name is defined before use, names are unique,
    and each operation's shapes follow its rule."""
    shapes: dict[str, tuple[int, ...]] = {}
    for t in program.tensors:
        if t.name in shapes:
            raise ModelError("tensor declared twice", t.name)
        shapes[t.name] = t.shape
    index = 0
    for item in program.items:
        if isinstance(item, RepeatBlock):
            for family in item.families:
                for i in range(item.count):
                    if family_member(family, i) not in shapes:
                        raise ModelError(f"repeat block {item.name}: family member {family_member(family, i)} "
                                         "is not declared")
            iterations = range(item.count)
            body = item.body
        else:
            iterations = range(1)
            body = (item,)
        for op in body:
            if op.index != index:
                raise ModelError(f"operations must be numbered in order: expected {index}, found {op.index}",
                                 op.name)
            index += 1
            for i in iterations:
                ins = []
                for name in op.inputs:
                    member = family_member(name, i)
                    if member not in shapes:
                        raise ModelError(f"input {member} is not defined before operation {op.index}", op.name)
                    ins.append(shapes[member])
                expected = infer_shape(op, ins)
                if expected != op.output_shape:
                    raise ModelError(f"{op.kind} of {' and '.join(map(str, map(list, ins)))} gives "
                                     f"{list(expected)}, declared {list(op.output_shape)}", op.name)
                shapes[family_member(op.output, i)] = op.output_shape
                if isinstance(item, RepeatBlock):
                    shapes[op.output] = op.output_shape
    for out in program.outputs:
        if out not in shapes:
            raise ModelError("program output is never computed", out)


def infer_shape(op: Operation, ins: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The output shape an operation's rule gives for its input shapes."""
    where = f"operation {op.index} ({op.name})"

    def need(count: int) -> None:
        if len(ins) != count:
            raise ModelError(f"{op.kind} takes {count} inputs, found {len(ins)}", where)

    if op.kind == "matmul":
        need(2)
        (x, w) = ins
        if len(w) != 2 or len(x) < 2 or x[-1] != w[0]:
            raise ModelError(f"matmul needs [..., M, K] x [K, N], found {list(x)} x {list(w)}", where)
        return (*x[:-1], w[1])
    if op.kind == "add":
        need(2)
        a, b = ins
        if len(b) > len(a) or any(bd not in (1, ad) for ad, bd in zip(a[::-1], b[::-1])):
            raise ModelError(f"add cannot broadcast {list(b)} to {list(a)}", where)
        return a
    if op.kind == "layernorm":
        need(3)
        x, s, b = ins
        if s[-1] != x[-1] or b[-1] != x[-1] or math.prod(s) != x[-1] or math.prod(b) != x[-1]:
            raise ModelError(f"layernorm scale and bias must be vectors of {x[-1]}, found {list(s)}, {list(b)}",
                             where)
        return x
    if op.kind == "gelu":
        need(1)
        return ins[0]
    if op.kind == "attention":
        heads = int(op.attr("heads", 0))
        if len(ins) == 1:  # packed [.., S, 3D]
            (qkv,) = ins
            if qkv[-1] % 3 or heads < 1 or (qkv[-1] // 3) % heads:
                raise ModelError(f"attention needs packed q, k, v of 3 x heads x head_dim, found {list(qkv)} "
                                 f"with {heads} heads", where)
            return (*qkv[:-1], qkv[-1] // 3)
        need(2)  # q [.., Sq, D], kv [.., S, 2D]
        q, kv = ins
        if kv[-1] != 2 * q[-1] or heads < 1 or q[-1] % heads:
            raise ModelError(f"attention needs q [.., D] and kv [.., 2D] with D divisible by heads, found "
                             f"{list(q)}, {list(kv)}, {heads} heads", where)
        return q
    raise ModelError(f"no shape rule for {op.kind}", where)
