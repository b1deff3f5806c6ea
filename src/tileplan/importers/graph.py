"""What every importer builds: a graph of registry operators, then a program.

An importer (torch.export, ONNX, a built-in builder) calls `GraphBuilder`: `input`,
`parameter` and `op` (an operator of `tileplan.ops` by name, its inputs and
attributes; the output's shape comes from the operator's shape rule, so an importer
never states shapes it could get wrong) and `output`. Element types are classes
(`float`, `int`, `bool`), not precisions: `Graph.to_program` assigns those, so one
import serves every `--weights` choice. `build` runs small named passes that take a
graph and return a graph: `fold_aliases` (clone, contiguous, dropout: nothing),
`fold_parameter_transposes` (a weight read only transposed is declared transposed:
the bytes are the same), `fold_expands` (an expand read only by broadcasting
operators is not materialised), `fuse_attention` (MatMul -> scale -> mask -> Softmax
-> MatMul, as ONNX exports attention, becomes one `sdpa`, as torch.export keeps it)
and `prune` (operations whose results nothing reads).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.model.ir import MAX_ELEMENTS, Operation, Program, RepeatBlock, Tensor
from tileplan.model.precision import F16, F32, Precision
from tileplan.ops import REGISTRY, infer_shape
from tileplan.ops.elementwise import BINARY

DTYPES = ("float", "int", "bool")
INT = Precision("I32")  # Poplar indexes with 32-bit integers
BOOL = Precision("Bool")
#: operators that broadcast their operands without materialising them
BROADCASTING = frozenset({*BINARY, "where"})
#: operators whose second input is a weight in the weight precision
WEIGHT_READERS = {"matmul": 1, "conv": 1}


@dataclass(frozen=True, slots=True)
class GraphTensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str  # "input" | "parameter" | "buffer" (state that is not trained: resident like a parameter)


@dataclass(frozen=True, slots=True)
class GraphOp:
    """One operation: `name` is what people read (the module path and what it does),
    `output` the tensor it makes."""

    kind: str
    name: str
    inputs: tuple[str, ...]
    output: str
    shape: tuple[int, ...]
    dtype: str
    attrs: tuple[tuple[str, Any], ...]
    module: str | None


@dataclass(frozen=True, slots=True)
class Graph:
    """Tensors (inputs first), operations in execution order, outputs."""

    name: str
    tensors: tuple[GraphTensor, ...]
    ops: tuple[GraphOp, ...]
    outputs: tuple[str, ...]

    def to_program(self, weights: Precision, activations: Precision = F16,
                   options: Mapping[str, object] | None = None, repeat: bool = True) -> Program:
        """The program with precisions: parameters read (possibly through views) as a
        matmul's or convolution's weights take `weights`, other floating parameters and
        every floating activation `activations`; integers I32, booleans Bool. With
        `repeat`, layers that repeat (`find_repeats`) become one repeat block each."""
        weight_params = weight_parameters(self)
        tensors = []
        for origin, t in enumerate(self.tensors):
            precision = weights if t.name in weight_params else _precision(t.dtype, activations)
            tensors.append(Tensor(origin, t.name, t.shape, precision, "input" if t.role == "input" else "parameter"))
        runs = find_repeats(self) if repeat else []
        items: list[Operation | RepeatBlock] = []
        outputs = list(self.outputs)
        renamed: dict[str, str] = {}
        origin, index, at = len(self.tensors), 0, 0

        def operation(o: GraphOp, name: str, output: str, inputs: tuple[str, ...]) -> Operation:
            nonlocal origin, index
            op = Operation(origin, index, o.kind, name, inputs, output, o.shape, _precision(o.dtype, activations),
                           o.attrs, o.module)
            origin, index = origin + 1, index + 1
            return op

        for run in [*runs, None]:
            stop = run.start if run is not None else len(self.ops)
            for o in self.ops[at:stop]:
                items.append(operation(o, o.name, o.output, tuple(renamed.get(i, i) for i in o.inputs)))
            if run is None:
                break
            layer0 = self.ops[run.start:run.start + run.length]
            made = {o.output for o in layer0}
            body = tuple(operation(o, run.template(o.name), run.template(o.output),
                                   tuple(run.body_input(i, renamed, made) for i in o.inputs))
                         for o in layer0)
            last = self.ops[run.start + (run.count - 1) * run.length + run.carried]
            carried_out = run.template(self.ops[run.start + run.carried].output)
            carried_in = renamed.get(run.carried_in, run.carried_in)
            items.append(RepeatBlock(run.count, run.prefix, run.families, body, carried_in=carried_in,
                                     carried_out=carried_out))
            renamed[last.output] = carried_out
            at = run.start + run.count * run.length
        outputs = [renamed.get(o, o) for o in outputs]
        opts: dict[str, object] = {"weights": weights.to_text(), **(options or {})}
        return Program(self.name, tuple(tensors), tuple(items), tuple(outputs), opts)

    @property
    def parameter_count(self) -> int:
        return sum(math.prod(t.shape) for t in self.tensors if t.role == "parameter")


# Repeated layers --------------------------------------------------------------------------

#: the first numeric component of a module path: `model.layers.5.mlp` -> (`model.layers`, 5)
_LAYER = re.compile(r"^(?P<prefix>(?:[^.]+\.)*?[^.]+)\.(?P<index>\d+)(?=\.|$)")


@dataclass(frozen=True, slots=True)
class Repeat:
    """`count` layers of `length` operations each from operation `start`: layer i's
    operations are layer 0's with `{prefix}.0.` read as `{prefix}.{i}.`, reading the
    parameter `families`, tensors made before the block, and the output of operation
    `carried` of the layer before (layer 0: the same tensor made before the block)."""

    prefix: str
    start: int
    length: int
    count: int
    carried: int
    carried_in: str
    families: tuple[str, ...]

    def template(self, name: str) -> str:
        return name.replace(f"{self.prefix}.0.", f"{self.prefix}.{{i}}.", 1) if name.startswith(
            f"{self.prefix}.0.") or f".{self.prefix}.0." in name else name

    def body_input(self, name: str, renamed: Mapping[str, str], made: set[str]) -> str:
        """How the body reads `name`: a layer-0 result or parameter by its `{i}` form,
        anything made before the block (or shared by every layer) as it is."""
        out = self.template(name)
        if out != name and (name in made or out in self.families):
            return out
        return renamed.get(name, name)


def _layer_of(op: GraphOp) -> tuple[str, int] | None:
    m = _LAYER.match(op.module or "")
    return (m.group("prefix"), int(m.group("index"))) if m else None


def find_repeats(graph: Graph) -> list[Repeat]:
    """Runs of layers 0..n-1 (n >= 2) of one module list whose operations are alike: the
    same operators, attributes, shapes and element types in the same order, inputs
    made inside the layer at the same positions, parameters differing only by the
    layer index, one tensor carried from each layer to the next, and nothing else a
    layer makes read outside it."""
    ops = graph.ops
    keys = [_layer_of(o) for o in ops]
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
        run = _check_run(graph, key[0], groups[g][1], groups[g][2], n) if n >= 2 else None
        if run is not None:
            runs.append(run)
            g += run.count
        else:
            g += 1
    return runs


def _check_run(graph: Graph, prefix: str, start: int, length: int, count: int) -> Repeat | None:
    """The longest alike prefix of layers 0..count-1 as a `Repeat`, or None."""
    ops = graph.ops
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
                return _shorter(graph, prefix, start, length, layer)
            for x, y in zip(a.inputs, b.inputs):
                p = producer.get(y)
                if p is not None and lo <= p < lo + length:  # made in this layer: the same position
                    if producer.get(x) != p - layer * length:
                        return _shorter(graph, prefix, start, length, layer)
                elif p is not None and lo - length <= p < lo:  # carried from the layer before
                    if carried is None:
                        carried, carried_in = p - (lo - length), x
                    first = producer.get(x)
                    if p - (lo - length) != carried or (first is not None and first >= start):
                        return _shorter(graph, prefix, start, length, layer)
                elif y in declared and y != x:  # a parameter of this layer
                    family = x.replace(f"{prefix}.0.", f"{prefix}.{{i}}.", 1)
                    if family == x or y != family.replace("{i}", str(layer)):
                        return _shorter(graph, prefix, start, length, layer)
                    families[family] = None
                elif x != y:
                    return _shorter(graph, prefix, start, length, layer)
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
    return Repeat(prefix, start, length, count, carried, carried_in, tuple(families))


def _shorter(graph: Graph, prefix: str, start: int, length: int, alike: int) -> Repeat | None:
    return _check_run(graph, prefix, start, length, alike) if alike >= 2 else None


def _precision(dtype: str, activations: Precision) -> Precision:
    return {"float": activations, "int": INT, "bool": BOOL}[dtype]


def weight_parameters(graph: Graph) -> set[str]:
    """Floating parameters read as a matmul's or convolution's weight operand, directly
    or through views."""
    source = {o.output: o.inputs[0] for o in graph.ops if REGISTRY[o.kind].view}
    floats = {t.name for t in graph.tensors if t.role != "input" and t.dtype == "float"}
    out = set()
    for o in graph.ops:
        position = WEIGHT_READERS.get(o.kind)
        if position is None or len(o.inputs) <= position:
            continue
        name = o.inputs[position]
        while name in source:
            name = source[name]
        if name in floats:
            out.add(name)
    return out


# Building -----------------------------------------------------------------------------

class GraphBuilder:
    """Collects tensors and operations; shapes come from the registry's rules."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tensors: list[GraphTensor] = []
        self.ops: list[GraphOp] = []
        self.outputs: list[str] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.dtypes: dict[str, str] = {}
        self._names: Counter[str] = Counter()

    def _declare(self, name: str, shape: Sequence[int], dtype: str, role: str) -> str:
        shape = _shape(shape, name)
        if dtype not in DTYPES:
            raise ModelError(f"element type {dtype!r}: expected one of {', '.join(DTYPES)}", name)
        if name in self.shapes:
            raise ModelError("tensor declared twice", name)
        self.tensors.append(GraphTensor(name, shape, dtype, role))
        self.shapes[name], self.dtypes[name] = shape, dtype
        return name

    def input(self, name: str, shape: Sequence[int], dtype: str) -> str:
        return self._declare(name, shape, dtype, "input")

    def parameter(self, name: str, shape: Sequence[int], dtype: str, buffer: bool = False) -> str:
        """A parameter, or with `buffer` state that is not trained (running statistics,
        position ids, constants): resident all the same."""
        return self._declare(name, shape, dtype, "buffer" if buffer else "parameter")

    def unique(self, name: str) -> str:
        """`name`, or `name:2`, `name:3`, ... when it is taken."""
        self._names[name] += 1
        n = self._names[name]
        return name if n == 1 else f"{name}:{n}"

    def op(self, kind: str, inputs: Sequence[str], attrs: Mapping[str, Any] | None = None, *, name: str,
           module: str | None = None, dtype: str | None = None) -> str:
        """Add an operation; returns its output tensor's name. `dtype` defaults to the
        first input's element type (`bool` for comparisons)."""
        for i in inputs:
            if i not in self.shapes:
                raise ModelError(f"input {i!r} is not defined before this operation", name)
        label = self.unique(name)
        items = tuple(sorted((k, _frozen(v)) for k, v in (attrs or {}).items()))
        probe = Operation(0, len(self.ops), kind, label, tuple(inputs), label, (1,), F32, items, module)
        shape = _shape(infer_shape(probe, [self.shapes[i] for i in inputs]), label)
        if dtype is None:
            dtype = "bool" if kind in COMPARISONS else (self.dtypes[inputs[0]] if inputs else "float")
        self.ops.append(GraphOp(kind, label, tuple(inputs), label, shape, dtype, items, module))
        self.shapes[label], self.dtypes[label] = shape, dtype
        return label

    def output(self, name: str) -> None:
        if name not in self.shapes:
            raise ModelError("program output is never computed", name)
        if name not in self.outputs:
            self.outputs.append(name)

    def build(self) -> Graph:
        inputs = [t for t in self.tensors if t.role == "input"]
        params = [t for t in self.tensors if t.role != "input"]
        graph = Graph(self.name, (*inputs, *params), tuple(self.ops), tuple(self.outputs))
        for step in (fold_aliases, fold_parameter_transposes, fold_expands, fuse_attention, prune):
            graph = step(graph)
        if not graph.ops:
            raise ModelError("the model computes nothing from its inputs (no operation reaches an output)",
                             self.name)
        return graph


COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not", "isnan", "isinf"})


def _shape(shape: Iterable[int], name: str) -> tuple[int, ...]:
    """A shape as tileplan holds it: integers >= 1, rank >= 1 (a scalar is [1])."""
    out = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int):
            raise ModelError(f"dimension {d!r} is not a fixed integer: export with static shapes "
                             "(tileplan plans one shape at a time)", name)
        out.append(d)
    if any(d < 1 for d in out):
        raise ModelError(f"shape {out} has a dimension < 1", name)
    if math.prod(out) > MAX_ELEMENTS:
        raise ModelError(f"shape {out} has more than 2^48 elements", name)
    return tuple(out) or (1,)


def _frozen(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    return v


# Passes -------------------------------------------------------------------------------

def _rename(ops: Iterable[GraphOp], names: Mapping[str, str]) -> list[GraphOp]:
    def resolve(n: str) -> str:
        while n in names:
            n = names[n]
        return n
    return [replace(o, inputs=tuple(resolve(i) for i in o.inputs)) for o in ops]


def _outputs(graph: Graph, names: Mapping[str, str]) -> tuple[str, ...]:
    out = []
    for output in graph.outputs:
        name = output
        while name in names:
            name = names[name]
        out.append(name)
    return tuple(dict.fromkeys(out))


def fold_aliases(graph: Graph) -> Graph:
    """`alias` operations (clone, contiguous, dropout at inference) disappear."""
    names = {o.output: o.inputs[0] for o in graph.ops if o.kind == "alias"}
    ops = _rename((o for o in graph.ops if o.kind != "alias"), names)
    return replace(graph, ops=tuple(ops), outputs=_outputs(graph, names))


def fold_parameter_transposes(graph: Graph) -> Graph:
    """A parameter every reader of which transposes it the same way is declared in the
    transposed shape (a Linear weight [out, in] read as [in, out]); the transposes go."""
    readers: dict[str, list[GraphOp]] = {}
    for o in graph.ops:
        for i in set(o.inputs):
            readers.setdefault(i, []).append(o)
    params = {t.name: t for t in graph.tensors if t.role != "input"}
    names: dict[str, str] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    for name in params:
        users = readers.get(name, [])
        perms = {o.attrs for o in users if o.kind == "transpose"}
        if users and len(perms) == 1 and all(o.kind == "transpose" for o in users) and name not in graph.outputs:
            shapes[name] = users[0].shape
            names.update({o.output: name for o in users})
    if not names:
        return graph
    tensors = tuple(replace(t, shape=shapes.get(t.name, t.shape)) for t in graph.tensors)
    ops = _rename((o for o in graph.ops if o.output not in names), names)
    return replace(graph, tensors=tensors, ops=tuple(ops), outputs=_outputs(graph, names))


def fold_expands(graph: Graph) -> Graph:
    """An `expand` read only by broadcasting operators is read unexpanded."""
    readers: dict[str, list[GraphOp]] = {}
    for o in graph.ops:
        for i in o.inputs:
            readers.setdefault(i, []).append(o)
    names = {o.output: o.inputs[0] for o in graph.ops
             if o.kind == "expand" and o.output not in graph.outputs and readers.get(o.output)
             and all(r.kind in BROADCASTING for r in readers[o.output])}
    if not names:
        return graph
    ops = _rename((o for o in graph.ops if o.output not in names), names)
    return replace(graph, ops=tuple(ops))


def fuse_attention(graph: Graph) -> Graph:
    """scores = q @ kT, optionally scaled by a scalar and a mask added, softmax over the
    last axis, then @ v: one `sdpa` of q, k, v (and the mask). Every intermediate must
    have no other reader; kT must be k with its last two dimensions swapped (a
    transpose is added when the graph holds only kT)."""
    ops = list(graph.ops)
    producer = {o.output: i for i, o in enumerate(ops)}
    readers: dict[str, list[int]] = {}
    for i, o in enumerate(ops):
        for name in o.inputs:
            readers.setdefault(name, []).append(i)
    shape = {t.name: t.shape for t in graph.tensors} | {o.output: o.shape for o in ops}
    taken = {o.name for o in ops}
    dropped: set[int] = set()
    replaced: dict[int, list[GraphOp]] = {}
    for i, soft in enumerate(ops):
        if soft.kind != "softmax" or dict(soft.attrs).get("axis", -1) not in (-1, len(soft.shape) - 1):
            continue
        after = readers.get(soft.output, [])
        if len(after) != 1 or ops[after[0]].kind != "matmul" or ops[after[0]].inputs[0] != soft.output:
            continue
        out = ops[after[0]]
        chain: list[int] = []
        mask: str | None = None
        scale: float | None = None
        name = soft.inputs[0]
        while name in producer and len(readers.get(name, [])) == 1:
            op = ops[producer[name]]
            scalar = dict(op.attrs).get("scalar")
            if op.kind == "add" and len(op.inputs) == 2 and mask is None:
                mask, name = op.inputs[1], op.inputs[0]
            elif op.kind in ("mul", "div") and len(op.inputs) == 1 and scale is None and scalar:
                scale, name = (float(scalar) if op.kind == "mul" else 1.0 / float(scalar)), op.inputs[0]
            else:
                break
            chain.append(producer[op.output])
        first = ops[producer[name]] if name in producer else None
        if first is None or first.kind != "matmul" or len(readers.get(name, [])) != 1:
            continue
        q, kt = first.inputs
        v = out.inputs[1]
        rank = len(shape[q])
        if rank not in (3, 4) or len(shape[kt]) != rank or len(shape[v]) != rank:
            continue
        swap = (*range(rank - 2), rank - 1, rank - 2)
        made: list[GraphOp] = []
        maker = ops[producer[kt]] if kt in producer else None
        if maker is not None and maker.kind == "transpose" and tuple(dict(maker.attrs)["perm"]) == swap:
            k = maker.inputs[0]
        else:
            k = _fresh(f"{kt} [k]", taken)
            made.append(GraphOp("transpose", k, (kt,), k, tuple(shape[kt][d] for d in swap), first.dtype,
                                (("perm", swap),), first.module))
            shape[k] = made[-1].shape
        label = _fresh(f"{out.module}.attention" if out.module else f"{out.name}.attention", taken)
        ins = (q, k, v) if mask is None else (q, k, v, mask)
        attrs: tuple[tuple[str, Any], ...] = (("causal", False),)
        if scale is not None:
            attrs += (("scale", scale),)
        probe = Operation(0, 0, "sdpa", label, ins, label, (1,), F32, attrs, out.module)
        try:
            if infer_shape(probe, [shape[x] for x in ins]) != out.shape:
                continue
        except ModelError:
            continue
        made.append(GraphOp("sdpa", label, ins, out.output, out.shape, out.dtype, attrs, out.module))
        dropped.update({producer[name], i, after[0], *chain})
        replaced[after[0]] = made
    if not replaced:
        return graph
    result: list[GraphOp] = []
    for i, o in enumerate(ops):
        if i in replaced:
            result.extend(replaced[i])
        elif i not in dropped:
            result.append(o)
    return replace(graph, ops=tuple(result))


def _fresh(name: str, taken: set[str]) -> str:
    out, n = name, 1
    while out in taken:
        n += 1
        out = f"{name}:{n}"
    taken.add(out)
    return out


def prune(graph: Graph) -> Graph:
    """Keep the operations an output depends on, and the tensors they read."""
    needed = set(graph.outputs)
    kept = []
    for o in reversed(graph.ops):
        if o.output in needed:
            kept.append(o)
            needed.update(o.inputs)
    tensors = tuple(t for t in graph.tensors if t.name in needed or t.role == "input")
    return replace(graph, tensors=tensors, ops=tuple(reversed(kept)))


def unsupported(unknown: Mapping[str, tuple[int, str]], where: str) -> ModelError:
    """One error for every operator an importer does not know: how often each occurs
    and the first module using it."""
    items = sorted(unknown.items(), key=lambda kv: (-kv[1][0], kv[0]))
    listed = "; ".join(f"{op} x{count} (first in {module or 'the top level'})" for op, (count, module) in items)
    return ModelError(f"{len(items)} operator{'s' if len(items) > 1 else ''} tileplan does not know: {listed}. "
                      "Nothing was planned; see `tileplan.ops` for what it knows", where)
