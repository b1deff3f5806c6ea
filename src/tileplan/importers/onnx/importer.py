"""The ONNX importer's walk: `from_onnx(path)` reads an ONNX file's graph (never its
weights; `load`) and builds a `Graph` of registry operators, folding what it can
compute at import time (`fold`) and mapping the rest node by node (`mappers`).

Both exporters' output is read: the dynamo exporter (opset 18+, value_info, node
metadata naming modules) and the legacy one (opset 17: no value_info, `Constant`
nodes, shape arithmetic as Shape/Gather/Concat/ConstantOfShape/... chains). Every
runtime tensor's shape comes from the registry's rules, and every value computable
from constants and shapes is kept as a NumPy array (`known`) and folded away: shape
arithmetic costs no device memory. Files as they come:
- with their external data beside them, the small integer initializers it holds
  (shape operands: at most `KNOWN_LIMIT` elements, in a file inside the model's
  folder) are read as known values; floating initializers (weights) never are;
- without it, a shape operand whose value is not known (a Reshape's target, an
  Unsqueeze's axes) is taken from the static shape the file states for the
  operation's output (`value_info`), and the graph says so once (`Graph.notes`: the
  report's `program.note`); only when neither gives a shape is it an error.

What becomes what:
- initializers are parameters (by name, dims and type; their bytes are never read,
  the file is opened with `load_external_data=False`), declared when a runtime
  operation first reads them. Anonymous ones (`val_N`, `onnx::MatMul_N`) are named
  after the module that reads them (`<module>.weight`, `<module>.bias`).
- A constant an operation reads is a parameter too, except a single number read by a
  binary operator (its `scalar` attribute) and a uniform value computed by the graph
  (a `fill`). A constant boolean or float mask that transformers built while tracing
  ([1, 1, S, S] causal or all-true) is kept as a parameter: its bytes are not read, so
  it is not recognised as causal or all-true, and its memory is charged (conservative).
- The NaN guard the dynamo exporter puts after an attention softmax,
  `Where(IsNaN(p), 0, p)`, is read as `p`: it rewrites rows a fully masked softmax
  fills with NaN, which the plan does not distinguish, and keeping it would charge
  two [B, H, S, S] tensors the legacy export of the same model does not have.
- Values are named `<module>.<operator>` where the dynamo exporter's metadata
  (`pkg.torch.onnx.name_scopes`, `namespace`) or the legacy exporter's node names
  (`/encoder/layer.0/attention/self/query/MatMul`) give the module, else by the ONNX
  output name.
- Operators tileplan does not know: all collected, then one error listing each with
  its count and first module (`tileplan.importers.graph.unsupported`).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tileplan.errors import ModelError, option
from tileplan.importers.graph import Graph, GraphBuilder, GraphOp, unsupported
from tileplan.importers.onnx.common import Unsupported
from tileplan.importers.onnx.fold import FOLD_LIMIT, FOLDERS, KNOWN_LIMIT, NotFolded
from tileplan.importers.onnx.load import (
    ExternalData, attributes, check_single_assignment, elem_class, load_model, module_of, np_class, onnx_precision,
    stated_shapes,
)
from tileplan.importers.onnx.mappers import MAPPERS
from tileplan.model.ir import MAX_ELEMENTS
from tileplan.ops import REGISTRY
from tileplan.ops.elementwise import BINARY, UNARY

#: operators `Importer._node` reads itself (no mapper or folder)
READ_HERE = ("Constant", "Shape", "Size")
ONE_INPUT_ELEMENTWISE = frozenset({*BINARY, *UNARY, "gelu", "clamp"})
_ANONYMOUS = re.compile(r"^(val_\d+|onnx::.*|_v_\d+|[A-Za-z]+_\d+|\d+)$")


def from_onnx(path: str, *, batch: int | None = None, sequence_length: int | None = None) -> Graph:
    """The graph of the ONNX file at `path`, weights never read. Symbolic input
    dimensions take `batch` (default 1) for the first and `sequence_length` for the
    second; a fixed dimension keeps its value (a different `batch` or
    `sequence_length` is an error: re-export with dynamic axes)."""
    model = load_model(path)
    return Importer(model, path, batch, sequence_length).run()


class Importer:
    """One walk over an ONNX graph: state shared by the mappers."""

    def __init__(self, model: Any, path: str, batch: int | None, sequence_length: int | None) -> None:
        self.model = model
        self.path = path
        self.batch = batch
        self.sequence_length = sequence_length
        self.b = GraphBuilder(os.path.splitext(os.path.basename(path))[0] or "onnx")
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
        self.known: dict[str, np.ndarray] = {}  # values computed at import time
        self.from_initializer: set[str] = set()
        self.params: dict[str, tuple[tuple[int, ...], str]] = {}  # initializers without data: shape, class
        self.elem_types: dict[str, int] = {}  # an initializer's ONNX element type
        self.names: dict[str, str] = {}  # ONNX tensor -> builder tensor
        self.shapes: dict[str, tuple[int, ...]] = {}  # ONNX shape of every runtime tensor (rank 0 allowed)
        self.isnan_of: dict[str, str] = {}  # IsNaN output -> its input
        self.unknown: dict[str, tuple[int, str]] = {}
        self.poisoned: set[str] = set()
        self.readers: Counter[str] = Counter()
        self.stated: dict[str, tuple[int, ...]] = {}  # static shapes the file states (value_info, outputs)
        self.stated_for: Counter[str] = Counter()  # shape operands taken from them, by what they are
        self.assumed: Counter[str] = Counter()  # shape operands neither gives, assumed (a CumSum's axis: the last)
        self.external = ExternalData(os.path.dirname(os.path.abspath(path)))

    # Entry ----------------------------------------------------------------------------

    def run(self) -> Graph:
        g = self.model.graph
        check_single_assignment(g, self.path)
        for node in g.node:
            self.readers.update(i for i in node.input if i)
        self.stated = stated_shapes(g)
        self._initializers(g)
        self._inputs(g)
        for node in g.node:
            if node.domain not in ("", "ai.onnx"):
                self._unknown(f"{node.domain}.{node.op_type}", node)
                continue
            if any(i in self.poisoned for i in node.input if i):
                # after an unknown operator: list the unknown ones only (Shape and Size,
                # which `_node` reads, too)
                if node.op_type not in MAPPERS and node.op_type not in FOLDERS and node.op_type not in READ_HERE:
                    self._unknown(node.op_type, node)
                self.poisoned.update(o for o in node.output if o)
                continue
            try:
                self._node(node)
            except Unsupported:
                self._unknown(node.op_type, node)
            except ModelError as e:
                raise e.at(f"{self.path}: {node.op_type} node {node.name or node.output[0]!r}", " ") from None
        if self.unknown:
            raise unsupported(self.unknown, self.path)
        for out in g.output:
            if out.name in self.known:
                continue
            if out.name not in self.names:
                raise ModelError("graph output is never computed", f"{self.path}: {out.name}")
            self.b.output(self.names[out.name])
        try:
            graph = place_views_beside_readers(elementwise_before_views(self.b.build()))
        except ModelError as e:
            raise e.at(self.path, ": ") from None
        return replace(graph, notes=self._notes())

    def _notes(self) -> tuple[str, ...]:
        """What the plan should say about how the file was read (once each)."""
        count = sum(self.stated_for.values()) + sum(self.assumed.values())
        if not count:
            return ()
        missing = f" ({self.external.missing_text()})" if self.external.missing else ""
        parts = []
        if self.stated_for:
            kinds = ", ".join(f"{what} x{n}" for what, n in sorted(self.stated_for.items()))
            parts.append(f"taken from the static shapes it states (value_info): {kinds}")
        if self.assumed:
            parts.append("assumed: " + ", ".join(f"{what} x{n}" for what, n in sorted(self.assumed.items())))
        return (f"{count} shape operand{'s' if count > 1 else ''} not in the file{missing}; " + "; ".join(parts),)

    def _unknown(self, op_type: str, node: Any) -> None:
        count, first = self.unknown.get(op_type, (0, module_of(node) or node.name or node.output[0]))
        self.unknown[op_type] = (count + 1, first)
        self.poisoned.update(o for o in node.output if o)

    def _initializers(self, g: Any) -> None:
        from onnx import numpy_helper

        for t in g.initializer:
            dims = tuple(int(d) for d in t.dims)
            if any(d < 0 for d in dims):
                raise ModelError(f"initializer dims {list(dims)} are negative", f"{self.path}: {t.name}")
            if math.prod(dims) > MAX_ELEMENTS:
                raise ModelError(f"initializer dims {list(dims)} have more than 2^48 elements",
                                 f"{self.path}: {t.name}")
            cls = elem_class(t.data_type, f"{self.path}: {t.name}")
            external = t.data_location == 1 or any(e.key == "location" for e in t.external_data)
            if math.prod(dims) <= KNOWN_LIMIT:
                value = None
                if not external:
                    try:
                        value = numpy_helper.to_array(t)
                    except (ValueError, TypeError):
                        pass
                elif cls == "int":  # a shape operand in the external data, when it is there; never a weight
                    value = self.external.ints(t, dims)
                if value is not None:
                    self.known[t.name] = value
                    self.from_initializer.add(t.name)
                    continue
            self.params[t.name] = (dims, cls)
            self.elem_types[t.name] = t.data_type

    def _inputs(self, g: Any) -> None:
        for inp in g.input:
            if inp.name in self.params or inp.name in self.known:
                continue  # old files list initializers as inputs too
            tt = inp.type.tensor_type
            where = f"{self.path}: input {inp.name!r}"
            if not inp.type.HasField("tensor_type"):
                raise ModelError("input is not a tensor: expected tensor inputs", where)
            dims = []
            for k, d in enumerate(tt.shape.dim):
                knob = "sequence_length" if k == 1 else "batch"
                if d.HasField("dim_value"):
                    fixed = int(d.dim_value)
                    if fixed < 1:
                        raise ModelError(f"dimension {k} is {fixed} in the file: expected a size >= 1, or a "
                                         "symbolic name (a dynamic axis)", where)
                    asked = self.batch if k == 0 else self.sequence_length if k == 1 else None
                    if asked is not None and asked != fixed:
                        raise ModelError(f"dimension {k} is fixed at {fixed} in the file, asked {asked} "
                                         f"({option(knob)}): re-export with dynamic axes to plan another size",
                                         where)
                    dims.append(fixed)
                    continue
                label = d.dim_param or f"dimension {k}"
                value = self._symbolic(k, label)
                if value is None and k > 1:
                    raise ModelError(f"dimension {k} ({label!r}) is symbolic and has no value: export with static "
                                     f"shapes (only the batch and the sequence take {option('batch')} and "
                                     f"{option('sequence_length')})", where)
                if value is None:
                    raise ModelError(f"dimension {k} ({label!r}) is symbolic and has no value: pass "
                                     f"{option(knob, '...')} (or export with static shapes)", where)
                dims.append(value)
            if self.readers[inp.name]:
                self.names[inp.name] = self.b.input(inp.name, dims, elem_class(tt.elem_type, where))
                if self.b.dtypes[self.names[inp.name]] == "float":
                    self.b.note_precision(self.names[inp.name], onnx_precision(tt.elem_type))
                self.shapes[inp.name] = tuple(dims)

    def _symbolic(self, k: int, label: str) -> int | None:
        lowered = label.lower()
        if k == 0 or "batch" in lowered:
            return 1 if self.batch is None else self.batch
        if k == 1 or any(w in lowered for w in ("seq", "len", "token")):
            return self.sequence_length
        return None

    # Reading operands -----------------------------------------------------------------

    def is_runtime(self, name: str) -> bool:
        return name in self.names or name in self.params

    def shape(self, name: str) -> tuple[int, ...]:
        if name in self.known:
            return tuple(self.known[name].shape)
        if name in self.params:
            return self.params[name][0]
        if name in self.shapes:
            return self.shapes[name]
        raise ModelError(f"tensor {name!r} is read before it is computed: expected nodes in topological order")

    def read(self, name: str, module: str | None, role: str = "") -> str:
        """The builder tensor for an ONNX tensor: declared as a parameter on first read
        (initializers), materialised when it is a constant."""
        if name in self.names:
            return self.names[name]
        if name in self.params:
            dims, cls = self.params[name]
            label = self._param_name(name, module, role)
            self.names[name] = self.b.parameter(label, dims or (1,), cls)
            if cls == "float":
                self.b.note_precision(self.names[name], onnx_precision(self.elem_types[name]))
            self.shapes[name] = dims
            return self.names[name]
        if name in self.known:
            a = self.known[name]
            shape = tuple(a.shape)
            if name not in self.from_initializer and a.size and a.size <= FOLD_LIMIT and np.all(a == a.flat[0]):
                value = a.flat[0].item()
                out = self.b.op("fill", [], {"shape": shape or (1,), "value": value},
                                name=self.op_name(module, "constant"), module=module, dtype=np_class(a))
            else:
                label = self._param_name(name, module, role)
                out = self.b.parameter(label, shape or (1,), np_class(a))
            self.names[name] = out
            self.shapes[name] = shape
            return out
        raise ModelError(f"tensor {name!r} is read before it is computed: expected nodes in topological order")

    def _param_name(self, name: str, module: str | None, role: str) -> str:
        if module and role and _ANONYMOUS.match(name):
            label = f"{module}.{role}"
        else:
            label = name
        label = self.b.unique(label)
        while label in self.b.shapes:
            label = self.b.unique(label)
        return label

    def op_name(self, module: str | None, what: str, fallback: str | None = None) -> str:
        if module:
            return f"{module}.{what}"
        return fallback or what

    def ints(self, name: str) -> list[int] | None:
        """The integers a known value holds, else None (computed at run time, or an
        initializer whose external data is absent)."""
        if name not in self.known:
            return None
        return [int(v) for v in np.asarray(self.known[name]).reshape(-1)]

    def stated_shape(self, node: Any, what: str, output: int = 0) -> tuple[int, ...]:
        """The static shape the file states for the node's `output`-th output, used when
        its shape operand `what` is not known (counted for `Graph.notes`); one line
        naming both when the file states none."""
        name = node.output[output]
        shape = self.stated.get(name)
        if shape is None:
            absent = f" ({self.external.missing_text()})" if self.external.missing else ""
            raise ModelError(f"{what} is not in the file{absent} or computed at run time, and the file states no "
                             f"static shape for {name!r} (value_info): export with static shapes, or keep the "
                             "external data beside the model")
        self.stated_for[what] += 1
        return shape

    def one_number(self, name: str) -> bool:
        """A constant or initializer of one element (its value known or not)."""
        if name in self.known:
            return bool(self.known[name].size == 1)
        return name in self.params and math.prod(self.params[name][0]) == 1

    # Nodes ----------------------------------------------------------------------------

    def _node(self, node: Any) -> None:
        op = node.op_type
        ins = [i for i in node.input]
        present = [i for i in ins if i]
        attrs = attributes(node)
        if op == "Constant":
            self.known[node.output[0]] = self._constant(attrs)
            return
        if op == "Shape" and present and self._has_shape(present[0]):
            s = np.array(self.shape(present[0]), dtype=np.int64)
            start, end = attrs.get("start", 0), attrs.get("end")
            self.known[node.output[0]] = s[start:end] if end is not None else s[start:]
            return
        if op == "Size" and present and self._has_shape(present[0]):
            self.known[node.output[0]] = np.array(math.prod(self.shape(present[0])), dtype=np.int64)
            return
        if all(i in self.known for i in present) and op in FOLDERS:
            try:
                values = FOLDERS[op]([self.known[i] if i else None for i in ins], attrs)
            except NotFolded:
                values = None
            except (ValueError, TypeError, IndexError, ArithmeticError) as e:  # NumPy's word on bad constants
                raise ModelError(f"{op} of constants: {' '.join(str(e).split())[:200]}") from None
            if values is not None:
                for o, v in zip(node.output, values):
                    if o:
                        self.known[o] = v
                return
        if op not in MAPPERS:
            raise Unsupported(op)
        module = module_of(node)
        outs = MAPPERS[op](self, node, ins, attrs, module)
        for o, out in zip(node.output, outs):
            if o and out is not None:
                self.names[o] = out
                self.shapes.setdefault(o, self.b.shapes[out])
        for o in node.output[len(outs):]:
            if o and self.readers[o]:
                raise ModelError(f"output {o!r} of {op} is read, and tileplan maps only its first "
                                 f"{len(outs)} output(s)")

    def _has_shape(self, name: str) -> bool:
        return name in self.known or name in self.params or name in self.shapes

    def _constant(self, attrs: dict[str, Any]) -> np.ndarray:
        from onnx import numpy_helper

        if "value" in attrs:
            return numpy_helper.to_array(attrs["value"])
        for key, dtype in (("value_float", np.float32), ("value_int", np.int64), ("value_floats", np.float32),
                           ("value_ints", np.int64)):
            if key in attrs:
                return np.array(attrs[key], dtype=dtype)
        raise Unsupported("Constant")

    # Emitting -------------------------------------------------------------------------

    def emit(self, kind: str, inputs: Sequence[str], attrs: dict[str, Any] | None, module: str | None,
             fallback: str, dtype: str | None = None) -> str:
        return self.b.op(kind, list(inputs), attrs or {}, name=self.op_name(module, kind, fallback), module=module,
                         dtype=dtype)

    def reshape(self, x: str, shape: Sequence[int], module: str | None, fallback: str) -> str:
        shape = tuple(int(d) for d in shape) or (1,)
        if self.b.shapes[x] == shape:
            return x
        return self.emit("reshape", [x], {"shape": shape}, module, fallback)

    def set_shape(self, onnx_name: str, shape: Sequence[int]) -> None:
        self.shapes[onnx_name] = tuple(shape)


def elementwise_before_views(graph: Graph) -> Graph:
    """A one-input elementwise operation (unary, or binary with a `scalar`) that is the
    only reader of a reshape or transpose runs before it instead: the same values, and
    the view then reads the elementwise result (the dynamo exporter scales the key after
    transposing it: `Mul(Reshape(Transpose(k)), s)`). Worked example: k [4, 17, 16] ->
    transpose [4, 16, 17] -> mul 0.5 becomes k -> mul 0.5 [4, 17, 16] -> transpose."""
    ops = list(graph.ops)
    shapes = {t.name: t.shape for t in graph.tensors} | {o.output: o.shape for o in ops}
    changed = True
    while changed:
        changed = False
        readers: Counter[str] = Counter(i for o in ops for i in o.inputs)
        producer = {o.output: k for k, o in enumerate(ops)}
        for k, o in enumerate(ops):
            if len(o.inputs) != 1 or o.kind not in ONE_INPUT_ELEMENTWISE or o.inputs[0] not in producer:
                continue
            v = ops[producer[o.inputs[0]]]
            if v.kind not in ("reshape", "transpose") or readers[v.output] != 1 or v.output in graph.outputs:
                continue
            j = producer[v.output]
            source = v.inputs[0]
            first = o._replace(inputs=(source,), shape=shapes[source])
            view = v._replace(inputs=(o.output,))
            rest = [x._replace(inputs=tuple(v.output if i == o.output else i for i in x.inputs)) for x in ops[k + 1:]]
            ops = [*ops[:j], first, view, *ops[j + 1:k], *rest]
            graph = replace(graph, outputs=tuple(v.output if n == o.output else n for n in graph.outputs))
            shapes[o.output] = shapes[source]
            changed = True
            break
    return replace(graph, ops=tuple(ops))


def place_views_beside_readers(graph: Graph) -> Graph:
    """The same graph with each view (reshape, transpose, slice) moved to just before
    its first reader: exports compute a view early (the key's transpose before the
    query's scaling), and a view's storage then stays live across unrelated steps.
    Execution order stays topological."""
    views = {o.output: o for o in graph.ops if REGISTRY[o.kind].view}
    placed: set[str] = set()
    order: list[GraphOp] = []

    def place(op: GraphOp) -> None:
        for i in op.inputs:
            if i in views and i not in placed:
                placed.add(i)
                place(views[i])
        order.append(op)

    for op in graph.ops:
        if op.output not in views:
            place(op)
    for op in graph.ops:
        if op.output not in placed and op.output in views:
            placed.add(op.output)
            place(op)
    assert len(order) == len(graph.ops), "every operation placed once"
    return replace(graph, ops=tuple(order))
