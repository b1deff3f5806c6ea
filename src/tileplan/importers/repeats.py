"""Repeated layers: runs of alike layers that a program runs as one repeat block.

An importer's graph has every layer's operations (`layers.0` ... `layers.21`);
`find_repeats` finds runs of layers of one module list that are alike (the same
operators, attributes and shapes, parameters differing only by the layer index, one
tensor carried from layer to layer), and a built-in tower states its own
(`GraphBuilder.repeat`: a `Block`). `Graph.to_program` turns each run into a
`RepeatBlock` whose body is the first layer's operations, named by the family
(`layers.{i}.mlp.up_proj`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from tileplan.importers.graph_nodes import GraphOp, GraphTensor
from tileplan.model.ir import ITERATION, family_member


class Graph(Protocol):
    """What the search reads of a graph (`tileplan.importers.graph.Graph` is one): its
    declared tensors, its operations in execution order and its outputs."""

    @property
    def tensors(self) -> Sequence[GraphTensor]: ...

    @property
    def ops(self) -> Sequence[GraphOp]: ...

    @property
    def outputs(self) -> Sequence[str]: ...

#: the first numeric component of a module path: `model.layers.5.mlp` -> (`model.layers`, 5)
_LAYER = re.compile(r"^(?P<prefix>(?:[^.]+\.)*?[^.]+)\.(?P<index>\d+)(?=\.|$)")


@dataclass(frozen=True, slots=True)
class Repeat:
    """`count` layers of `length` operations each from operation `start`, run as the
    repeat block `name`: layer i's operations are layer 0's with the path `layer`
    (`model.layers.{i}`, `vit.encoder.layer{i}`) at i rather than 0, reading the
    parameter `families`, tensors made before the block, and the output of operation
    `carried` of the layer before (layer 0: `carried_in`, made before the block)."""

    name: str
    layer: str
    start: int
    length: int
    count: int
    carried: int
    carried_in: str
    families: tuple[str, ...]

    def template(self, name: str) -> str:
        """`name` with layer 0's path read as the family's (`{i}`)."""
        return _template(name, self.layer)

    def body_input(self, name: str, renamed: Mapping[str, str], made: set[str]) -> str:
        """How the body reads `name`: a layer-0 result or parameter by its `{i}` form,
        anything made before the block (or shared by every layer) as it is."""
        out = self.template(name)
        if out != name and (name in made or out in self.families):
            return out
        return renamed.get(name, name)


def _template(name: str, layer: str) -> str:
    zero = family_member(layer, 0)
    return name.replace(f"{zero}.", f"{layer}.", 1) if name.startswith(f"{zero}.") or f".{zero}." in name else name


@dataclass(frozen=True, slots=True)
class Block:
    """Layers the builder was told run as one repeat block (`GraphBuilder.repeat`):
    `count` layers named under `layer` (`vit.encoder.layer{i}`), `length` operations
    each, layer 0's first making `first`; layer 0 reads `carried_in`, every later layer
    the output of operation `carried` of the layer before."""

    name: str
    layer: str
    count: int
    length: int
    first: str
    carried: int
    carried_in: str

    def resolve(self, graph: Graph) -> Repeat:
        """The block as a run of `graph`'s operations, its layers checked alike (as
        `find_repeats` checks them) when there are several."""
        start = next((k for k, o in enumerate(graph.ops) if o.output == self.first), -1)
        assert 0 <= start <= len(graph.ops) - self.count * self.length, f"repeat block {self.name}: layers lost"
        declared = {t.name for t in graph.tensors}
        families = dict.fromkeys(family for o in graph.ops[start:start + self.length] for x in o.inputs
                                 if x in declared and (family := _template(x, self.layer)) != x)
        run = Repeat(self.name, self.layer, start, self.length, self.count, self.carried, self.carried_in,
                     tuple(families))
        if self.count > 1:
            found = _check_run(graph, self.name, self.layer, start, self.length, self.count)
            assert found == run, f"repeat block {self.name}: its layers are not alike ({found})"
        return run


def layer_key(module: str | None) -> tuple[str, int] | None:
    """The module list and entry a module path is in: its first numeric component
    (`model.layers.5.mlp` -> (`model.layers`, 5)); None when it has none."""
    m = _LAYER.match(module or "")
    return (m.group("prefix"), int(m.group("index"))) if m else None


def find_repeats(graph: Graph) -> list[Repeat]:
    """Runs of layers 0..n-1 (n >= 2) of one module list whose operations are alike: the
    same operators, attributes, shapes and element types in the same order, inputs
    made inside the layer at the same positions, parameters differing only by the
    layer index, one tensor carried from each layer to the next, and nothing else a
    layer makes read outside it."""
    ops = graph.ops
    keys = [layer_key(o.module) for o in ops]
    groups: list[tuple[tuple[str, int] | None, int, int]] = []  # key, start, length
    for i, key in enumerate(keys):
        if groups and groups[-1][0] == key:
            k, start, n = groups[-1]
            groups[-1] = (k, start, n + 1)
        else:
            groups.append((key, i, 1))
    runs = []
    g = 0
    while g < len(groups):
        key = groups[g][0]
        if key is None or key[1] != 0:
            g += 1
            continue
        n = 1
        while (g + n < len(groups) and groups[g + n][0] == (key[0], n) and groups[g + n][2] == groups[g][2]):
            n += 1
        run = _check_run(graph, key[0], f"{key[0]}.{ITERATION}", groups[g][1], groups[g][2], n) if n >= 2 else None
        if run is not None:
            runs.append(run)
            g += run.count
        else:
            g += 1
    return runs


def _check_run(graph: Graph, block: str, layer_path: str, start: int, length: int, count: int) -> Repeat | None:
    """The longest alike prefix of layers 0..count-1 (named under `layer_path`) as a
    `Repeat` named `block`, or None."""
    ops = graph.ops
    zero = family_member(layer_path, 0)
    producer = {o.output: i for i, o in enumerate(ops)}
    declared = {t.name for t in graph.tensors}
    readers: dict[str, list[int]] = {}
    for i, o in enumerate(ops):
        for name in o.inputs:
            readers.setdefault(name, []).append(i)
    carried: int | None = None
    carried_in: str | None = None
    families: dict[str, None] = {}
    base = ops[start:start + length]
    for layer in range(1, count):
        lo = start + layer * length
        for a, b in zip(base, ops[lo:lo + length]):
            if (a.kind, a.attrs, a.shape, a.dtype, len(a.inputs)) != (b.kind, b.attrs, b.shape, b.dtype, len(b.inputs)):
                return _shorter(graph, block, layer_path, start, length, layer)
            for x, y in zip(a.inputs, b.inputs):
                p = producer.get(y)
                if p is not None and lo <= p < lo + length:  # made in this layer: the same position
                    if producer.get(x) != p - layer * length:
                        return _shorter(graph, block, layer_path, start, length, layer)
                elif p is not None and lo - length <= p < lo:  # carried from the layer before
                    if carried is None:
                        carried, carried_in = p - (lo - length), x
                    first = producer.get(x)
                    if p - (lo - length) != carried or (first is not None and first >= start):
                        return _shorter(graph, block, layer_path, start, length, layer)
                elif y in declared and y != x:  # a parameter of this layer
                    family = x.replace(f"{zero}.", f"{layer_path}.", 1)
                    if family == x or y != family.replace("{i}", str(layer)):
                        return _shorter(graph, block, layer_path, start, length, layer)
                    families[family] = None
                elif x != y:
                    return _shorter(graph, block, layer_path, start, length, layer)
    if carried is None or carried_in is None:
        return None
    end = start + count * length
    for i in range(start, end):  # nothing a layer makes is read elsewhere but by the next layer
        layer = (i - start) // length
        for r in readers.get(ops[i].output, []):
            r_layer = (r - start) // length if start <= r < end else None
            ok = r_layer == layer or (r_layer == layer + 1 and i - start - layer * length == carried) or (
                r >= end and layer == count - 1 and i - start - layer * length == carried)
            if not ok:
                return None
        if ops[i].output in graph.outputs and not (layer == count - 1 and i - start - layer * length == carried):
            return None
    for family in families:
        if any(family.replace("{i}", str(k)) not in declared for k in range(count)):
            return None
    return Repeat(block, layer_path, start, length, count, carried, carried_in, tuple(families))


def _shorter(graph: Graph, block: str, layer_path: str, start: int, length: int, alike: int) -> Repeat | None:
    return _check_run(graph, block, layer_path, start, length, alike) if alike >= 2 else None
