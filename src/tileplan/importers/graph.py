"""What every importer builds: a graph of registry operators, then a program.

An importer (torch.export, ONNX, the built-in towers of `tileplan.builtins`) calls
`GraphBuilder`: `input`, `parameter` and `op` (an operator of `tileplan.ops` by name,
its inputs and attributes; the output's shape comes from the operator's shape rule,
so an importer never states shapes it could get wrong), `repeat` (alike layers run as
one repeat block, `importers.repeats`) and `output`. Each operation carries the model
layer it belongs to (`GraphOp.layer`): the layers of `repeat` (a built-in tower's) or
those a built-in states, else (an importer's graph) the layers its module paths name
(`number_layers`). Element types are classes
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
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from tileplan.errors import ModelError
from tileplan.importers.graph_nodes import GraphOp, GraphTensor
from tileplan.importers.repeats import Block, Repeat, find_repeats, layer_key
from tileplan.model.info import ProgramInfo
from tileplan.model.ir import MAX_ELEMENTS, Operation, Program, RepeatBlock, Tensor, family_member
from tileplan.model.precision import BOOL, F16, F32, Precision
from tileplan.model.role import Role
from tileplan.ops import REGISTRY, infer_dtype, infer_shape
from tileplan.ops.base import broadcast_shapes
from tileplan.ops.elementwise import BINARY

DTYPES = ("float", "int", "bool")
INT = Precision("I32")  # Poplar indexes with 32-bit integers
#: operators that broadcast their operands without materialising them
BROADCASTING = frozenset({*BINARY, "where"})


@dataclass(frozen=True, slots=True)
class Graph:
    """Tensors (inputs first), operations in execution order, outputs."""

    name: str
    tensors: tuple[GraphTensor, ...]
    ops: tuple[GraphOp, ...]
    outputs: tuple[str, ...]
    #: the tensors and operation outputs in the order they were declared, when the
    #: program's origins number them so (`GraphBuilder(..., origins="declared")`: the
    #: reference's numbering); empty: the tensors first, then the operations
    order: tuple[str, ...] = ()
    #: the repeat blocks the builder was told of (`GraphBuilder.repeat`); empty: those
    #: `find_repeats` finds from the module paths
    blocks: tuple[Block, ...] = ()
    #: the model's own floating-point precision ("F32", "F16"): that of most of its
    #: floating parameters' elements (else its floating inputs'), as the importer
    #: found it; None when nothing says (a built-in model)
    float_precision: str | None = None
    #: the class the model was built as, in words, when an importer chose it (a
    #: config.json's `architectures`: `BertForQuestionAnswering`); None otherwise
    architecture: str | None = None
    #: what the plan should say about how the model was read, once each (an ONNX file's
    #: shape operands taken from its value_info); the report's `program.note`
    notes: tuple[str, ...] = ()

    def to_program(self, weights: Precision, activations: Precision = F16, info: ProgramInfo | None = None,
                   repeat: bool = True) -> Program:
        """The program with precisions: parameters read (possibly through views) as a
        matmul's or convolution's weights take `weights`, other floating parameters and
        every floating activation `activations`; integers I32 (a declared tensor's own
        `narrow` precision where it is under 4 bytes: a uint8 image U8), booleans Bool. With
        `repeat`, layers that repeat (`repeats`) become one repeat block each. Origins
        number the tensors, then the operations; or every node as declared (`order`).
        `info` is what the program says about itself, its `weights` set here."""
        weight_params = weight_parameters(self)
        runs = self.repeats() if repeat else []
        origins = self._origins(runs)
        base = len(self.tensors)  # without `order`, operation k is node base + k
        precision = {"float": activations, "int": INT, "bool": BOOL}
        tensors = [Tensor(origins[t.name] if origins else k, t.name, t.shape, weights if t.name in weight_params
                          else t.narrow or precision[t.dtype], t.role, t.source_shape)
                   for k, t in enumerate(self.tensors)]
        own = self._view_precisions({t.name: t.precision for t in tensors}, precision)
        items: list[Operation | RepeatBlock] = []
        renamed: dict[str, str] = {}
        index, at = 0, 0
        for run in [*runs, None]:
            stop = run.start if run is not None else len(self.ops)
            chunk = self.ops[at:stop]
            items.extend(Operation(origins[output] if origins else base + k, k, kind, name,
                                   tuple([renamed.get(i, i) for i in inputs]) if renamed else inputs, output, shape,
                                   own.get(output) or precision[dtype], attrs, module, layer)
                         for k, (kind, name, inputs, output, shape, dtype, attrs, module, layer)
                         in enumerate(chunk, start=index))
            index += len(chunk)
            if run is None:
                break
            layer0 = self.ops[run.start:run.start + run.length]
            made = {o.output for o in layer0}
            body = tuple(Operation(origins[o.output] if origins else base + k, k, o.kind, run.template(o.name),
                                   tuple(run.body_input(i, renamed, made) for i in o.inputs), run.template(o.output),
                                   o.shape, own.get(o.output) or precision[o.dtype], o.attrs, o.module, o.layer)
                         for k, o in enumerate(layer0, start=index))
            index += len(body)
            last = self.ops[run.start + (run.count - 1) * run.length + run.carried]
            carried_out = run.template(self.ops[run.start + run.carried].output)
            carried_in = renamed.get(run.carried_in, run.carried_in)
            items.append(RepeatBlock(run.count, run.name, run.families, body, carried_in=carried_in,
                                     carried_out=carried_out))
            renamed[last.output] = carried_out
            at = run.start + run.count * run.length
        outputs = tuple(renamed.get(o, o) for o in self.outputs)
        return Program(self.name, tuple(tensors), tuple(items), outputs,
                       replace(info or ProgramInfo(), weights=weights))

    def _view_precisions(self, declared: Mapping[str, Precision], precision: Mapping[str, Precision]
                         ) -> dict[str, Precision]:
        """The precision of each tensor that is not its class's (`precision`): a
        declared tensor's (`declared`: weights read by matmuls in the weights'
        precision, a narrow integer's own), and every view's output of such a tensor,
        through views of views: a view (`OpDef.view`: a slice, transpose or reshape)
        moves or renames elements and never converts them, as a Poplar tensor's slice,
        transpose and reshape are of its element type (an FP8 weight sliced from
        `nn.MultiheadAttention`'s packed in-projection and transposed for its product
        is FP8 all the way). Empty when every declared tensor has its class's."""
        classes = {t.name: t.dtype for t in self.tensors}
        own = {name: p for name, p in declared.items() if p != precision[classes[name]]}
        if own:
            for o in self.ops:
                if o.inputs and o.inputs[0] in own and REGISTRY[o.kind].view:
                    own[o.output] = own[o.inputs[0]]
        return own

    def repeats(self) -> list[Repeat]:
        """The runs of alike layers that become repeat blocks: the builder's (`blocks`),
        else those found from the module paths."""
        if self.blocks:
            return [block.resolve(self) for block in self.blocks]
        return find_repeats(self)

    def _origins(self, runs: Sequence[Repeat]) -> dict[str, int] | None:
        """With `order`, each program node's origin by tensor or operation output: the
        tensors and the operations the program keeps (a run's first layer, not the
        others) numbered in declaration order. None otherwise: the tensors are numbered
        first, then the operations in execution order."""
        if not self.order:
            return None
        nodes = [t.name for t in self.tensors]
        at = 0
        for run in runs:  # a run keeps its first layer
            nodes.extend(o.output for o in self.ops[at:run.start + run.length])
            at = run.start + run.count * run.length
        nodes.extend(o.output for o in self.ops[at:])
        rank = {name: k for k, name in enumerate(self.order)}
        assert all(n in rank for n in nodes), "every node of a graph numbered as declared is in its order"
        nodes.sort(key=rank.__getitem__)
        return {name: k for k, name in enumerate(nodes)}

    @property
    def parameter_count(self) -> int:
        return sum(math.prod(t.shape) for t in self.tensors if t.role is Role.WEIGHT)


def weight_parameters(graph: Graph) -> set[str]:
    """Floating parameters read as an operator's weights (`OpDef.weight_inputs`: a
    matmul's or convolution's), directly or through views."""
    source = {o.output: o.inputs[0] for o in graph.ops if REGISTRY[o.kind].view}
    floats = {t.name for t in graph.tensors if t.role is not Role.INPUT and t.dtype == "float"}
    out = set()
    for o in graph.ops:
        for read in (o.inputs[p] for p in REGISTRY[o.kind].weight_inputs if p < len(o.inputs)):
            root = read
            while root in source:
                root = source[root]
            if root in floats:
                out.add(root)
    return out


# Building -----------------------------------------------------------------------------

class GraphBuilder:
    """Collects tensors and operations; shapes come from the registry's rules. With
    `origins="declared"` the program numbers its nodes (tensors and operations
    together) in the order they were declared, as the reference numbers the built-in
    towers; by default the tensors come first, then the operations."""

    def __init__(self, name: str, *, origins: str = "tensors first") -> None:
        if origins not in ("tensors first", "declared"):
            raise ValueError(f"origins must be 'tensors first' or 'declared', found {origins!r}")
        self.name = name
        self.tensors: list[GraphTensor] = []
        self.ops: list[GraphOp] = []
        self.outputs: list[str] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.dtypes: dict[str, str] = {}
        self.blocks: list[Block] = []
        self._names: dict[str, int] = {}
        #: (kind, attributes, input shapes, input classes or the dtype given) -> (shape, dtype)
        self._rules: dict[tuple, tuple[tuple[int, ...], str]] = {}
        self._order: list[str] | None = [] if origins == "declared" else None
        #: the layer the operations being added belong to (inside `repeat`), and the
        #: layers the repeat blocks so far ran
        self._layer: int | None = None
        self._layers = 0
        #: elements of each floating precision the importer declared, parameters and
        #: inputs apart (`note_precision`)
        self.float_elements: dict[tuple[bool, str], int] = {}

    def note_precision(self, name: str, precision: str) -> None:
        """Record that declared tensor `name` is floating point in `precision` ("F32",
        "F16"): the graph's `float_precision` is the precision of most parameter
        elements, else of most input elements."""
        t = next(t for t in reversed(self.tensors) if t.name == name)
        key = (t.role is Role.INPUT, precision)
        self.float_elements[key] = self.float_elements.get(key, 0) + math.prod(t.shape)

    def _float_precision(self) -> str | None:
        for inputs in (False, True):
            counts = {p: n for (i, p), n in self.float_elements.items() if i == inputs}
            if counts:
                return max(sorted(counts), key=counts.__getitem__)
        return None

    def _declare(self, name: str, shape: Sequence[int], dtype: str, role: Role,
                 narrow: Precision | None = None) -> str:
        shape = _shape(shape, name)
        if dtype not in DTYPES:
            raise ModelError(f"element type {dtype!r}: expected one of {', '.join(DTYPES)}", name)
        if name in self.shapes:
            raise ModelError("tensor declared twice", name)
        if narrow is not None and (dtype != "int" or narrow.bytes >= 4):
            raise ModelError(f"a narrow precision is an integer's of under 4 bytes, found {narrow} for a {dtype} "
                             "tensor", name)
        self.tensors.append(GraphTensor(name, shape, dtype, role, narrow))
        self.shapes[name], self.dtypes[name] = shape, dtype
        if self._order is not None:
            self._order.append(name)
        return name

    def input(self, name: str, shape: Sequence[int], dtype: str, narrow: Precision | None = None) -> str:
        """An input; `narrow`: an integer input's own precision, under 4 bytes (U8)."""
        return self._declare(name, shape, dtype, Role.INPUT, narrow)

    def parameter(self, name: str, shape: Sequence[int], dtype: str, buffer: bool = False,
                  narrow: Precision | None = None) -> str:
        """A parameter, or with `buffer` state that is not trained (running statistics,
        position ids, constants): resident all the same. `narrow` as for `input`."""
        return self._declare(name, shape, dtype, Role.BUFFER if buffer else Role.WEIGHT, narrow)

    def unique(self, name: str) -> str:
        """`name`, or `name:2`, `name:3`, ... when it is taken."""
        n = self._names[name] = self._names.get(name, 0) + 1
        return name if n == 1 else f"{name}:{n}"

    def op(self, kind: str, inputs: Sequence[str], attrs: Mapping[str, Any] | None = None, *, name: str,
           module: str | None = None, dtype: str | None = None, output: str | None = None,
           layer: int | None = None) -> str:
        """Add an operation; returns its output tensor's name: `output`, or by default
        the operation's own (`name`, made unique). `dtype` defaults to what the
        operator's dtype rule gives (`tileplan.ops.infer_dtype`). `layer`: the model
        layer it belongs to, when the builder knows it (inside `repeat`: that layer).
        The shape and dtype rules are pure: a chain of a million alike operations asks
        each once per kind, attributes and input shapes and classes."""
        shapes_of, dtypes_of = self.shapes, self.dtypes
        try:
            shapes = tuple([shapes_of[i] for i in inputs])
        except KeyError as e:
            raise ModelError(f"input {e.args[0]!r} is not defined before this operation", name) from None
        n = self._names.get(name, 0) + 1  # `unique`, inline: once per operation
        self._names[name] = n
        label = name if n == 1 else f"{name}:{n}"
        if output is None:
            output = label
        elif output in shapes_of:
            raise ModelError("tensor declared twice", output)
        items = tuple(sorted((k, _frozen(v)) for k, v in attrs.items())) if attrs else ()
        classes = tuple([dtypes_of[i] for i in inputs])
        asked = (kind, items, shapes, classes if dtype is None else dtype)
        try:
            known, hashable = self._rules.get(asked), True
        except TypeError:  # an unhashable attribute: asked each time
            known, hashable = None, False
        if known is None:
            probe = Operation(0, len(self.ops), kind, label, tuple(inputs), output, (1,), F32, items, module)
            shape = _shape(infer_shape(probe, list(shapes)), label)
            known = (shape, infer_dtype(probe, list(classes)) if dtype is None else dtype)
            if hashable:
                self._rules[asked] = known
        shape, dtype = known
        self.ops.append(tuple.__new__(GraphOp, (kind, label, tuple(inputs), output, shape, dtype, items, module,
                                                self._layer if layer is None else layer)))
        shapes_of[output] = shape
        dtypes_of[output] = dtype
        if self._order is not None:
            self._order.append(output)
        return output

    def repeat(self, name: str, layer: str, count: int, x: str, body: Callable[[str, str], str]) -> str:
        """`count` alike layers run as one repeat block `name`: layer i is `body(path,
        x)`, `path` being `layer` at i (`vit.encoder.layer{i}` -> `vit.encoder.layer3`),
        which adds the layer's operations, named under `path` and reading parameters
        `{path}.*` declared before, on `x`: the tensor the layer before returned (for
        layer 0 the `x` given). Returns the last layer's; `Graph.to_program(repeat=False)`
        runs the layers one after another instead."""
        if count < 1:
            raise ModelError(f"repeat count must be >= 1, found {count}", name)
        start, carried_in = len(self.ops), x
        length, carried = 0, 0
        first_layer = self._layers
        for i in range(count):
            before = len(self.ops)
            self._layer = first_layer + i  # the model's layers, counted over every block
            try:
                x = body(family_member(layer, i), x)
            finally:
                self._layer = None
            made = len(self.ops) - before
            if i == 0:
                length = made
                carried = next((k for k in range(start, len(self.ops)) if self.ops[k].output == x), -1) - start
                if not length or carried < 0:
                    raise ModelError("a layer must add operations and return one of their results", name)
            elif made != length:
                raise ModelError(f"layer {i} adds {made} operations, layer 0 {length}: layers must be alike", name)
        self.blocks.append(Block(name, layer, count, length, self.ops[start].output, carried, carried_in))
        self._layers += count
        return x

    def output(self, name: str) -> None:
        if name not in self.shapes:
            raise ModelError("program output is never computed", name)
        if name not in self.outputs:
            self.outputs.append(name)

    def build(self) -> Graph:
        inputs = [t for t in self.tensors if t.role is Role.INPUT]
        params = [t for t in self.tensors if t.role is not Role.INPUT]
        ops = self.ops if any(o.layer is not None for o in self.ops) else number_layers(self.ops)
        graph = Graph(self.name, (*inputs, *params), tuple(ops), tuple(self.outputs),
                      tuple(self._order or ()), tuple(self.blocks), self._float_precision())
        kinds = {o.kind for o in graph.ops}
        if "softmax" in kinds:  # unread operations (an exporter's NaN guard) are not readers to the fusion
            graph = prune(graph)
        for step, kind in PASSES:
            if kind in kinds:  # a pass changes nothing without its operator
                graph = step(graph)
        graph = prune(graph)
        if not graph.ops:
            raise ModelError("the model computes nothing from its inputs (no operation reaches an output)",
                             self.name)
        return graph


def number_layers(ops: Sequence[GraphOp]) -> list[GraphOp]:
    """Each operation with the model layer its module path names (an importer's graph,
    whose builder states none): the entries of the model's module lists
    (`repeats.layer_key`: `bert.encoder.layer.3.attention` -> layer 3 of
    `bert.encoder.layer`), numbered from 0 in the order they first run, a second
    list's after the first's (T5's decoder blocks after its encoder's); None for an
    operation outside them (embeddings, the head)."""
    number: dict[tuple[str, int], int] = {}
    out = []
    for o in ops:
        key = layer_key(o.module)
        layer = None if key is None else number.setdefault(key, len(number))
        out.append(o._replace(layer=layer) if layer is not None else o)
    return out


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
    return [o._replace(inputs=tuple(resolve(i) for i in o.inputs)) for o in ops]


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
    if not names:
        return graph
    ops = _rename((o for o in graph.ops if o.kind != "alias"), names)
    return replace(graph, ops=tuple(ops), outputs=_outputs(graph, names))


def fold_parameter_transposes(graph: Graph) -> Graph:
    """A parameter every reader of which transposes it the same way is declared in the transposed
    shape (a Linear weight [out, in] read as [in, out]; `source_shape` the framework's)."""
    readers: dict[str, list[GraphOp]] = {}
    for o in graph.ops:
        for i in set(o.inputs):
            readers.setdefault(i, []).append(o)
    params = {t.name: t for t in graph.tensors if t.role is not Role.INPUT}
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
    tensors = tuple(replace(t, shape=shapes[t.name], source_shape=t.source_shape or t.shape) if t.name in shapes else t
                    for t in graph.tensors)
    ops = _rename((o for o in graph.ops if o.output not in names), names)
    return replace(graph, tensors=tensors, ops=tuple(ops), outputs=_outputs(graph, names))


def fold_expands(graph: Graph) -> Graph:
    """An `expand` read only by broadcasting operators is read unexpanded, when each of them
    makes the same shape without it (an expand that alone gives a `where` its shape stays)."""
    readers: dict[str, list[GraphOp]] = {}
    for o in graph.ops:
        for i in o.inputs:
            readers.setdefault(i, []).append(o)
    shapes = {t.name: t.shape for t in graph.tensors} | {o.output: o.shape for o in graph.ops}

    def unchanged(r: GraphOp, expand: GraphOp) -> bool:
        ins = [shapes[expand.inputs[0]] if i == expand.output else shapes[i] for i in r.inputs]
        try:
            return broadcast_shapes(*ins) == r.shape
        except ModelError:
            return False

    names = {o.output: o.inputs[0] for o in graph.ops
             if o.kind == "expand" and o.output not in graph.outputs and readers.get(o.output)
             and all(r.kind in BROADCASTING and unchanged(r, o) for r in readers[o.output])}
    if not names:
        return graph
    ops = _rename((o for o in graph.ops if o.output not in names), names)
    return replace(graph, ops=tuple(ops))


def fuse_attention(graph: Graph) -> Graph:
    """scores = q @ kT, optionally scaled by a scalar (or q and kT each scaled, as the
    dynamo exporter writes it) and a mask added, softmax over the last axis, then @ v:
    one `sdpa` of q, k, v (and the mask). Every intermediate must have no other reader
    (unread operations, such as an exporter's NaN guard, are pruned first); kT must be k
    with its last two dimensions swapped (a transpose is added when the graph holds
    only kT)."""
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
        # the dynamo exporter scales q and kT each by a scalar (sqrt of the scale) before
        # their product: folded into the attention's scale
        for side in (0, 1):
            operand = (q, kt)[side]
            maker = ops[producer[operand]] if operand in producer else None
            factor = dict(maker.attrs).get("scalar") if maker is not None else None
            if (maker is not None and maker.kind in ("mul", "div") and len(maker.inputs) == 1 and factor
                    and len(readers.get(operand, [])) == 1):
                value = float(factor) if maker.kind == "mul" else 1.0 / float(factor)
                scale = value if scale is None else scale * value
                chain.append(producer[operand])
                q, kt = (maker.inputs[0], kt) if side == 0 else (q, maker.inputs[0])
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
                                (("perm", swap),), first.module, first.layer))
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
        made.append(GraphOp("sdpa", label, ins, out.output, out.shape, out.dtype, attrs, out.module, out.layer))
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
    tensors = tuple(t for t in graph.tensors if t.name in needed or t.role is Role.INPUT)
    return replace(graph, tensors=tensors, ops=tuple(reversed(kept)))


#: the passes `GraphBuilder.build` runs, each with the operator it rewrites, then `prune`
PASSES = ((fold_aliases, "alias"), (fold_parameter_transposes, "transpose"), (fold_expands, "expand"),
          (fuse_attention, "softmax"))


def unsupported(unknown: Mapping[str, tuple[int, str]], where: str) -> ModelError:
    """One error for every operator an importer does not know: how often each occurs
    and the first module using it."""
    items = sorted(unknown.items(), key=lambda kv: (-kv[1][0], kv[0]))
    listed = "; ".join(f"{op} x{count} (first in {module or 'the top level'})" for op, (count, module) in items)
    return ModelError(f"{len(items)} operator{'s' if len(items) > 1 else ''} tileplan does not know: {listed}. "
                      "Nothing was planned; see `tileplan.ops` for what it knows", where)
