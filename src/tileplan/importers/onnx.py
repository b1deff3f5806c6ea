"""The ONNX importer: `from_onnx(path)` reads an ONNX file's graph (never its weights)
and builds a `Graph` of registry operators.

Both exporters' output is read: the dynamo exporter (opset 18+, value_info, node
metadata naming modules) and the legacy one (opset 17: no value_info, `Constant`
nodes, shape arithmetic as Shape/Gather/Concat/ConstantOfShape/... chains). Shapes
are never taken from the file's value_info: every runtime tensor's shape comes from
the registry's rules, and every value computable from constants and shapes is kept as
a NumPy array (`known`) and folded away: shape arithmetic costs no device memory.

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

import ast
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tileplan.errors import InputError, ModelError
from tileplan.importers.graph import Graph, GraphBuilder, GraphOp, unsupported
from tileplan.ioutil import read_bytes
from tileplan.model.ir import MAX_ELEMENTS
from tileplan.ops import REGISTRY
from tileplan.ops.elementwise import BINARY, UNARY

#: a value computed at import time with more elements than this is not folded
FOLD_LIMIT = 1 << 22
#: embedded initializers with at most this many elements are read as known values
KNOWN_LIMIT = 1 << 16

_FLOAT_TYPES = {1, 10, 11, 16, 17, 18, 19, 20, 23}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16, FLOAT8*, FLOAT4
_INT_TYPES = {2, 3, 4, 5, 6, 7, 12, 13, 21, 22}
_BOOL_TYPES = {9}

BINARY_ONNX = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Mod": "mod", "Equal": "eq",
    "Less": "lt", "LessOrEqual": "le", "Greater": "gt", "GreaterOrEqual": "ge", "And": "and", "Or": "or",
    "Xor": "xor", "Max": "maximum", "Min": "minimum",
}
ONE_INPUT_ELEMENTWISE = frozenset({*BINARY, *UNARY, "gelu", "clamp"})
UNARY_ONNX = {
    "Neg": "neg", "Exp": "exp", "Log": "log", "Tanh": "tanh", "Sigmoid": "sigmoid", "Relu": "relu",
    "Sqrt": "sqrt", "Reciprocal": "reciprocal", "Abs": "abs", "Sin": "sin", "Cos": "cos", "Erf": "erf",
    "Not": "not", "IsNaN": "isnan", "IsInf": "isinf", "Floor": "floor", "Ceil": "ceil", "Round": "round",
    "Sign": "sign", "Softplus": "softplus", "Elu": "elu", "HardSwish": "hardswish", "HardSigmoid": "hardsigmoid",
    "Mish": "mish", "LeakyRelu": "leaky_relu",
}
REDUCE_ONNX = {"ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceMax": "reduce_max",
               "ReduceMin": "reduce_min", "ReduceProd": "reduce_prod"}
ARG_ONNX = {"ArgMax": "argmax", "ArgMin": "argmin"}
_NUMPY_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Pow": np.power, "Equal": np.equal, "Less": np.less,
    "LessOrEqual": np.less_equal, "Greater": np.greater, "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor, "Max": np.maximum, "Min": np.minimum,
}
_NUMPY_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Neg": np.negative, "Exp": np.exp, "Log": np.log, "Tanh": np.tanh, "Sqrt": np.sqrt, "Abs": np.abs,
    "Sin": np.sin, "Cos": np.cos, "Not": np.logical_not, "IsNaN": np.isnan, "IsInf": np.isinf,
    "Floor": np.floor, "Ceil": np.ceil, "Round": np.round, "Sign": np.sign,
    "Reciprocal": lambda x: np.reciprocal(x.astype(np.float64)), "Relu": lambda x: np.maximum(x, 0),
    "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


class _Unsupported(Exception):
    """A node this importer cannot map (collected, then reported together)."""


class _NotFolded(Exception):
    """A value that is not computed at import time (too large, or no rule)."""


def from_onnx(path: str, *, batch: int | None = None, sequence_length: int | None = None) -> Graph:
    """The graph of the ONNX file at `path`, weights never read. Symbolic input
    dimensions take `batch` (default 1) for the first and `sequence_length` for the
    second; a fixed dimension keeps its value (a different `batch` or
    `sequence_length` is an error: re-export with dynamic axes)."""
    model = _load(path)
    return _Importer(model, path, batch, sequence_length).run()


#: the largest ONNX file read: protobuf's own limit for one message (a larger model keeps
#: its weights as external data, which tileplan never reads)
MAX_ONNX_BYTES = 2 << 30


def _load(path: str) -> Any:
    import onnx
    from google.protobuf.message import DecodeError

    data = read_bytes(path, MAX_ONNX_BYTES)  # a regular file of at most 2 GiB, or one line
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError, OSError, UnicodeDecodeError, TypeError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"not a readable ONNX model ({first[:120]}): expected a protobuf ModelProto file; "
                         "is it truncated or another format?", path) from None
    if not model.HasField("graph") or not model.graph.node:
        raise InputError("the ONNX model has no graph nodes: expected a ModelProto with a graph", path)
    return model


def _elem_class(elem_type: int, where: str) -> str:
    if elem_type in _FLOAT_TYPES:
        return "float"
    if elem_type in _INT_TYPES:
        return "int"
    if elem_type in _BOOL_TYPES:
        return "bool"
    raise ModelError(f"element type {elem_type} is not a number or boolean: expected float, int or bool tensors",
                     where)


def _np_class(a: np.ndarray) -> str:
    if a.dtype == np.bool_:
        return "bool"
    return "int" if np.issubdtype(a.dtype, np.integer) else "float"


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    out = {}
    for a in node.attribute:
        if a.type in (4, 9):  # TENSOR, TENSORS: read where used
            out[a.name] = a.t if a.type == 4 else list(a.tensors)
            continue
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _module_of(node: Any) -> str | None:
    """The module path the node belongs to: the dynamo exporter's name scopes, else the
    legacy exporter's `/a/b.0/c/Op` node name."""
    meta = {p.key: p.value for p in node.metadata_props}
    scopes = meta.get("pkg.torch.onnx.name_scopes")
    if scopes:
        try:
            parts = ast.literal_eval(scopes)
        except (ValueError, SyntaxError):
            parts = None
        if isinstance(parts, list) and len(parts) >= 2:
            mods = [p for p in parts[:-1] if isinstance(p, str) and p]
            if mods:
                return mods[-1]
    name = node.name
    if name.startswith("/") and name.count("/") >= 2:
        return ".".join(p for p in name.strip("/").split("/")[:-1] if p) or None
    return None


_ANONYMOUS = re.compile(r"^(val_\d+|onnx::.*|_v_\d+|[A-Za-z]+_\d+|\d+)$")


class _Importer:
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
        self.names: dict[str, str] = {}  # ONNX tensor -> builder tensor
        self.shapes: dict[str, tuple[int, ...]] = {}  # ONNX shape of every runtime tensor (rank 0 allowed)
        self.isnan_of: dict[str, str] = {}  # IsNaN output -> its input
        self.unknown: dict[str, tuple[int, str]] = {}
        self.poisoned: set[str] = set()
        self.readers: Counter[str] = Counter()

    # Entry ----------------------------------------------------------------------------

    def run(self) -> Graph:
        g = self.model.graph
        self._single_assignment(g)
        for node in g.node:
            self.readers.update(i for i in node.input if i)
        self._initializers(g)
        self._inputs(g)
        for node in g.node:
            if node.domain not in ("", "ai.onnx"):
                self._unknown(f"{node.domain}.{node.op_type}", node)
                continue
            if any(i in self.poisoned for i in node.input if i):
                if node.op_type not in MAPPERS and node.op_type not in FOLDERS:
                    self._unknown(node.op_type, node)
                self.poisoned.update(o for o in node.output if o)
                continue
            try:
                self._node(node)
            except _Unsupported:
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
            return place_views_beside_readers(elementwise_before_views(self.b.build()))
        except ModelError as e:
            raise e.at(self.path, ": ") from None

    def _single_assignment(self, g: Any) -> None:
        """ONNX graphs assign each tensor once (the IR's static single assignment
        rule): no output written by two nodes, nor a node writing a graph input or an
        initializer."""
        writer: dict[str, str] = {t.name: "an initializer" for t in g.initializer}
        writer.update((i.name, "a graph input") for i in g.input if i.name not in writer)
        for k, node in enumerate(g.node):
            here = f"node {node.name or k!r} ({node.op_type})"
            for out in node.output:
                if not out:
                    continue
                if out in writer:
                    raise ModelError(f"tensor {out!r} is written by {here} and by {writer[out]}: an ONNX graph "
                                     "assigns each tensor once (is the file hand-edited?)", self.path)
                writer[out] = here

    def _unknown(self, op_type: str, node: Any) -> None:
        count, first = self.unknown.get(op_type, (0, _module_of(node) or node.name or node.output[0]))
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
            cls = _elem_class(t.data_type, f"{self.path}: {t.name}")
            external = t.data_location == 1 or any(e.key == "location" for e in t.external_data)
            if not external and math.prod(dims) <= KNOWN_LIMIT:
                try:
                    self.known[t.name] = numpy_helper.to_array(t)
                    self.from_initializer.add(t.name)
                    continue
                except (ValueError, TypeError):
                    pass
            self.params[t.name] = (dims, cls)

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
                if d.HasField("dim_value") and d.dim_value > 0:
                    fixed = int(d.dim_value)
                    asked = self.batch if k == 0 else self.sequence_length if k == 1 else None
                    if asked is not None and asked != fixed:
                        raise ModelError(f"dimension {k} is fixed at {fixed} in the file, asked {asked}: re-export "
                                         "with dynamic axes, or drop the option", where)
                    dims.append(fixed)
                    continue
                label = d.dim_param or f"dimension {k}"
                value = self._symbolic(k, label)
                if value is None:
                    raise ModelError(f"dimension {k} ({label!r}) is symbolic and has no value: pass "
                                     f"{'sequence_length' if k == 1 else 'batch'}=... (or export with static "
                                     "shapes)", where)
                dims.append(value)
            if self.readers[inp.name]:
                self.names[inp.name] = self.b.input(inp.name, dims, _elem_class(tt.elem_type, where))
                self.shapes[inp.name] = tuple(dims)

    def _symbolic(self, k: int, label: str) -> int | None:
        lowered = label.lower()
        if k == 0 or "batch" in lowered:
            return 1 if self.batch is None else self.batch
        if k == 1 or any(w in lowered for w in ("seq", "len", "token")):
            return self.sequence_length
        return None

    # Reading operands -----------------------------------------------------------------

    def _is_runtime(self, name: str) -> bool:
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
            self.shapes[name] = dims
            return self.names[name]
        if name in self.known:
            a = self.known[name]
            shape = tuple(a.shape)
            if name not in self.from_initializer and a.size and a.size <= FOLD_LIMIT and np.all(a == a.flat[0]):
                value = a.flat[0].item()
                out = self.b.op("fill", [], {"shape": shape or (1,), "value": value},
                                name=self._op_name(module, "constant"), module=module, dtype=_np_class(a))
            else:
                label = self._param_name(name, module, role)
                out = self.b.parameter(label, shape or (1,), _np_class(a))
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

    def _op_name(self, module: str | None, what: str, fallback: str | None = None) -> str:
        if module:
            return f"{module}.{what}"
        return fallback or what

    def int_list(self, name: str, what: str) -> list[int]:
        if name not in self.known:
            raise ModelError(f"{what} is computed at run time: expected a constant (tileplan plans static shapes)")
        return [int(v) for v in np.asarray(self.known[name]).reshape(-1)]

    # Nodes ----------------------------------------------------------------------------

    def _node(self, node: Any) -> None:
        op = node.op_type
        ins = [i for i in node.input]
        present = [i for i in ins if i]
        attrs = _attrs(node)
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
                values = FOLDERS[op](self, [self.known[i] if i else None for i in ins], attrs)
            except _NotFolded:
                values = None
            if values is not None:
                for o, v in zip(node.output, values):
                    if o:
                        self.known[o] = v
                return
        if op not in MAPPERS:
            raise _Unsupported(op)
        module = _module_of(node)
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
        raise _Unsupported("Constant")

    # Emitting -------------------------------------------------------------------------

    def emit(self, kind: str, inputs: Sequence[str], attrs: dict[str, Any] | None, module: str | None,
             fallback: str, dtype: str | None = None) -> str:
        return self.b.op(kind, list(inputs), attrs or {}, name=self._op_name(module, kind, fallback), module=module,
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
            first = replace(o, inputs=(source,), shape=shapes[source])
            view = replace(v, inputs=(o.output,))
            rest = [replace(x, inputs=tuple(v.output if i == o.output else i for i in x.inputs)) for x in ops[k + 1:]]
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


# Folding: NumPy rules for values computed at import time --------------------------------

def _check_size(shape: Sequence[int]) -> None:
    if math.prod(int(d) for d in shape) > FOLD_LIMIT:
        raise _NotFolded()


def _fold_binary(op: str) -> Callable[[_Importer, list[Any], dict[str, Any]], list[np.ndarray]]:
    def rule(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
        a, b = v
        _check_size(np.broadcast_shapes(a.shape, b.shape))
        if op == "Div":
            if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
                return [np.trunc(a / np.where(b == 0, 1, b)).astype(a.dtype)]
            return [np.divide(a, b)]
        if op == "Mod":
            return [np.fmod(a, b) if attrs.get("fmod") else np.mod(a, b)]
        out = _NUMPY_BINARY[op](a, b)
        return [out.astype(a.dtype) if out.dtype != np.bool_ and out.dtype != a.dtype else out]
    return rule


def _fold_unary(op: str) -> Callable[[_Importer, list[Any], dict[str, Any]], list[np.ndarray]]:
    def rule(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
        out = _NUMPY_UNARY[op](v[0])
        return [out.astype(v[0].dtype) if out.dtype != np.bool_ and op != "Reciprocal" else out]
    return rule


def _axes(v: list[Any], attrs: dict[str, Any], index: int = 1) -> list[int] | None:
    if len(v) > index and v[index] is not None:
        return [int(a) for a in np.asarray(v[index]).reshape(-1)]
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    return None


def _fold_cast(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    from onnx import helper

    return [v[0].astype(helper.tensor_dtype_to_np_dtype(int(attrs["to"])))]


def _fold_gather(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    data, idx = v
    _check_size(data.shape[:max(attrs.get("axis", 0), 0)] + idx.shape)
    return [np.take(data, idx.astype(np.int64), axis=int(attrs.get("axis", 0)))]


def _fold_slice(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    data = v[0]
    starts, ends, axes, steps = _slice_args(v, attrs, len(data.shape))
    index = [slice(None)] * data.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    return [data[tuple(index)]]


def _slice_args(v: list[Any], attrs: dict[str, Any], rank: int) -> tuple[list[int], ...]:
    if "starts" in attrs:  # opset < 10
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = [int(x) for x in np.asarray(v[1]).reshape(-1)]
        ends = [int(x) for x in np.asarray(v[2]).reshape(-1)]
        axes = ([int(x) for x in np.asarray(v[3]).reshape(-1)] if len(v) > 3 and v[3] is not None
                else list(range(len(starts))))
        steps = [int(x) for x in np.asarray(v[4]).reshape(-1)] if len(v) > 4 and v[4] is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ModelError("Slice starts, ends, axes and steps differ in length")
    axes = [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in axes):
        raise ModelError(f"Slice axes {axes} out of range for rank {rank}")
    big = 1 << 62
    ends = [max(min(e, big), -big) for e in ends]
    starts = [max(min(s, big), -big) for s in starts]
    return starts, ends, axes, steps


def _fold_concat(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    parts = [x for x in v if x is not None]
    return [np.concatenate([np.atleast_1d(x) for x in parts], axis=int(attrs["axis"]))]


def _fold_unsqueeze(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = v[0]
    axes = _axes(v, attrs) or []
    rank = x.ndim + len(axes)
    shape = list(x.shape)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        shape.insert(a, 1)
    return [x.reshape(shape)]


def _fold_squeeze(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = v[0]
    axes = _axes(v, attrs)
    if axes is None:
        return [np.squeeze(x)]
    return [np.squeeze(x, axis=tuple(a + x.ndim if a < 0 else a for a in axes))]


def _reshape_target(shape: Sequence[int], target: Sequence[int], allowzero: bool) -> tuple[int, ...]:
    out = [(shape[i] if d == 0 and not allowzero and i < len(shape) else d) for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise ModelError(f"Reshape target {list(target)} has more than one -1")
    if -1 in out:
        rest = math.prod(d for d in out if d != -1)
        if rest == 0 or math.prod(shape) % rest:
            raise ModelError(f"Reshape of {list(shape)} to {list(target)}: the element counts do not divide")
        out[out.index(-1)] = math.prod(shape) // rest
    if math.prod(out) != math.prod(shape) or any(d < 0 for d in out):
        raise ModelError(f"Reshape of {list(shape)} to {list(target)}: the element counts differ")
    return tuple(out)


def _fold_reshape(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, target = v
    return [x.reshape(_reshape_target(x.shape, [int(d) for d in target], bool(attrs.get("allowzero", 0))))]


def _fold_expand(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, shape = v
    out = np.broadcast_shapes(x.shape, tuple(int(d) for d in shape))
    _check_size(out)
    return [np.broadcast_to(x, out).copy()]


def _fold_constant_of_shape(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    from onnx import numpy_helper

    shape = tuple(int(d) for d in np.asarray(v[0]).reshape(-1))
    _check_size(shape)
    value = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else np.zeros(1, np.float32)
    return [np.full(shape, value[0], dtype=value.dtype)]


def _fold_range(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    start, limit, delta = (np.asarray(x).reshape(()) for x in v)
    if delta == 0:
        raise ModelError("Range with delta 0")
    _check_size((max(math.ceil((float(limit) - float(start)) / float(delta)), 0),))
    return [np.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)]


def _fold_where(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    c, x, y = v
    _check_size(np.broadcast_shapes(c.shape, x.shape, y.shape))
    return [np.where(c, x, y)]


def _fold_reduce(fn: Callable[..., np.ndarray]) -> Callable[[_Importer, list[Any], dict[str, Any]], list[np.ndarray]]:
    def rule(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
        x = v[0]
        axes = _axes(v, attrs)
        keep = bool(attrs.get("keepdims", 1))
        if axes is None and attrs.get("noop_with_empty_axes"):
            return [x]
        ax = None if axes is None or not axes else tuple(a + x.ndim if a < 0 else a for a in axes)
        return [np.asarray(fn(x, axis=ax, keepdims=keep)).astype(x.dtype)]
    return rule


def _fold_transpose(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    perm = attrs.get("perm")
    return [np.transpose(v[0], perm)]


def _fold_flatten(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = v[0]
    axis = int(attrs.get("axis", 1))
    axis = axis + x.ndim if axis < 0 else axis
    return [x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))]


def _fold_trilu(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    k = int(np.asarray(v[1]).reshape(())) if len(v) > 1 and v[1] is not None else 0
    return [np.triu(v[0], k) if attrs.get("upper", 1) else np.tril(v[0], k)]


def _fold_tile(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    reps = [int(r) for r in np.asarray(v[1]).reshape(-1)]
    _check_size([a * r for a, r in zip(v[0].shape, reps)])
    return [np.tile(v[0], reps)]


def _fold_cumsum(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    if attrs.get("exclusive") or attrs.get("reverse"):
        raise _NotFolded()
    return [np.cumsum(v[0], axis=int(np.asarray(v[1]).reshape(()))).astype(v[0].dtype)]


def _fold_gather_elements(imp: _Importer, v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.take_along_axis(v[0], v[1].astype(np.int64), axis=int(attrs.get("axis", 0)))]


FOLDERS: dict[str, Callable[[_Importer, list[Any], dict[str, Any]], list[np.ndarray]]] = {
    **{op: _fold_binary(op) for op in (*_NUMPY_BINARY, "Div", "Mod")},
    **{op: _fold_unary(op) for op in _NUMPY_UNARY},
    "Identity": lambda imp, v, a: [v[0]], "Cast": _fold_cast, "Gather": _fold_gather, "Slice": _fold_slice,
    "Concat": _fold_concat, "Unsqueeze": _fold_unsqueeze, "Squeeze": _fold_squeeze, "Reshape": _fold_reshape,
    "Expand": _fold_expand, "ConstantOfShape": _fold_constant_of_shape, "Range": _fold_range,
    "Where": _fold_where, "Transpose": _fold_transpose, "Flatten": _fold_flatten, "Trilu": _fold_trilu,
    "Tile": _fold_tile, "CumSum": _fold_cumsum, "GatherElements": _fold_gather_elements,
    "ReduceProd": _fold_reduce(np.prod), "ReduceSum": _fold_reduce(np.sum), "ReduceMax": _fold_reduce(np.max),
    "ReduceMin": _fold_reduce(np.min), "ReduceMean": _fold_reduce(np.mean),
    "Dropout": lambda imp, v, a: [v[0]], "CastLike": lambda imp, v, a: [v[0].astype(v[1].dtype)],
}


# Mapping: ONNX nodes on run-time tensors onto registry operators ------------------------

Mapper = Callable[[_Importer, Any, list[str], dict[str, Any], "str | None"], list["str | None"]]


def _fallback(node: Any) -> str:
    return node.output[0] if node.output else node.name


def _map_alias(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    return [imp.emit("alias", [x], None, module, _fallback(node))]


def _known_scalar(imp: _Importer, name: str) -> float | int | bool | None:
    """The number a known one-element value holds (any rank: callers reshape the
    result to the broadcast shape), else None."""
    if name in imp.known and imp.known[name].size == 1:
        return imp.known[name].reshape(-1)[0].item()
    return None


def _map_binary(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    if len(ins) != 2:
        raise _Unsupported(node.op_type)
    kind = BINARY_ONNX[node.op_type]
    a, b = ins
    role_b = "bias" if kind == "add" else ("weight" if kind == "mul" else "")
    sb, sa = _known_scalar(imp, b), _known_scalar(imp, a)
    imp.set_shape(node.output[0], np.broadcast_shapes(imp.shape(a), imp.shape(b)))
    dtype = "bool" if kind in ("eq", "lt", "le", "gt", "ge", "and", "or", "xor") else None
    if sb is not None and not imp._is_runtime(b):
        out = imp.emit(kind, [imp.read(a, module)], {"scalar": sb}, module, _fallback(node), dtype)
        return [imp.reshape(out, np.broadcast_shapes(imp.shape(a), imp.shape(b)), module, _fallback(node))]
    if sa is not None and REGISTRY[kind].commutative and not imp._is_runtime(a):
        out = imp.emit(kind, [imp.read(b, module)], {"scalar": sa}, module, _fallback(node), dtype)
        return [imp.reshape(out, np.broadcast_shapes(imp.shape(a), imp.shape(b)), module, _fallback(node))]
    xa, xb = imp.read(a, module, role_b), imp.read(b, module, role_b)
    out = imp.emit(kind, [xa, xb], None, module, _fallback(node), dtype)
    return [imp.reshape(out, np.broadcast_shapes(imp.shape(a), imp.shape(b)), module, _fallback(node))]


def _map_unary(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    kind = UNARY_ONNX[node.op_type]
    out = imp.emit(kind, [imp.read(ins[0], module)], {"alpha": attrs["alpha"]} if "alpha" in attrs else None,
                   module, _fallback(node), "bool" if kind in ("not", "isnan", "isinf") else None)
    if kind == "isnan":
        imp.isnan_of[node.output[0]] = ins[0]
    return [out]


def _map_gelu(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    approx = attrs.get("approximate", "none")
    return [imp.emit("gelu", [imp.read(ins[0], module)], {"approximate": approx}, module, _fallback(node))]


def _map_clip(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    lo = attrs.get("min")
    hi = attrs.get("max")
    if len(ins) > 1 and ins[1]:
        lo = _known_scalar(imp, ins[1])
        if lo is None:
            raise _Unsupported("Clip")
    if len(ins) > 2 and ins[2]:
        hi = _known_scalar(imp, ins[2])
        if hi is None:
            raise _Unsupported("Clip")
    kind = "relu" if lo == 0 and hi is None else "clamp"
    a = {} if kind == "relu" else {"min": lo, "max": hi}
    return [imp.emit(kind, [imp.read(ins[0], module)], a, module, _fallback(node))]


def _map_where(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    c, x, y = ins
    # the dynamo exporter's NaN guard after an attention softmax: Where(IsNaN(p), 0, p)
    if imp.isnan_of.get(c) == y and _known_scalar(imp, x) == 0:
        return [imp.read(y, module)]
    shape = np.broadcast_shapes(imp.shape(c), imp.shape(x), imp.shape(y))
    imp.set_shape(node.output[0], shape)
    sy = _known_scalar(imp, y)
    if sy is not None and not imp._is_runtime(y):
        out = imp.emit("where", [imp.read(c, module), imp.read(x, module)], {"scalar": sy}, module, _fallback(node),
                       dtype=imp.b.dtypes[imp.read(x, module)])
    else:
        xs = imp.read(x, module)
        out = imp.emit("where", [imp.read(c, module), xs, imp.read(y, module)], None, module, _fallback(node),
                       dtype=imp.b.dtypes[xs])
    return [imp.reshape(out, shape, module, _fallback(node))]


def _map_cast(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    if node.op_type == "CastLike":
        target = imp.b.dtypes[imp.read(ins[1], module)] if ins[1] not in imp.known else _np_class(imp.known[ins[1]])
    else:
        target = _elem_class(int(attrs["to"]), node.name or node.output[0])
    if target == imp.b.dtypes[x]:
        return [imp.emit("alias", [x], None, module, _fallback(node))]
    return [imp.emit("cast", [x], None, module, _fallback(node), dtype=target)]


def _map_matmul(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    a, b = ins
    sa, sb = imp.shape(a), imp.shape(b)
    if len(sa) < 2 or len(sb) < 2:
        raise ModelError(f"MatMul of {list(sa)} x {list(sb)}: vector operands are not supported; expected "
                         "[..., M, K] x [..., K, N]")
    return [imp.emit("matmul", [imp.read(a, module, "weight"), imp.read(b, module, "weight")], None, module,
                     _fallback(node))]


def _map_gemm(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    fb = _fallback(node)
    a, b = imp.read(ins[0], module, "input"), imp.read(ins[1], module, "weight")
    if attrs.get("transA"):
        a = imp.emit("transpose", [a], {"perm": (1, 0)}, module, fb)
    if attrs.get("transB"):
        b = imp.emit("transpose", [b], {"perm": (1, 0)}, module, fb)
    out = imp.emit("matmul", [a, b], None, module, fb)
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    if alpha != 1.0:
        out = imp.emit("mul", [out], {"scalar": alpha}, module, fb)
    if len(ins) > 2 and ins[2] and beta != 0.0:
        c = ins[2]
        sc = _known_scalar(imp, c)
        if sc is not None and not imp._is_runtime(c):
            out = imp.emit("add", [out], {"scalar": sc * beta}, module, fb)
        else:
            bias = imp.read(c, module, "bias")
            if beta != 1.0:
                bias = imp.emit("mul", [bias], {"scalar": beta}, module, fb)
            out = imp.emit("add", [out, bias], None, module, fb)
    return [out]


def _spatial_attrs(imp: _Importer, node: Any, attrs: dict[str, Any], x: tuple[int, ...], kernel: Sequence[int],
                   what: str) -> dict[str, Any]:
    n = len(kernel)
    strides = list(attrs.get("strides", [1] * n))
    dilations = list(attrs.get("dilations", [1] * n))
    pads = list(attrs.get("pads", [0] * (2 * n)))
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * n)
        for d in range(n):
            out = -(-x[2 + d] // strides[d])
            total = max((out - 1) * strides[d] + dilations[d] * (kernel[d] - 1) + 1 - x[2 + d], 0)
            small, large = total // 2, total - total // 2
            pads[d], pads[d + n] = (small, large) if auto == "SAME_UPPER" else (large, small)
    elif auto not in ("NOTSET", "VALID"):
        raise ModelError(f"{what} auto_pad {auto!r}: expected NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    return {"strides": tuple(strides), "pads": tuple(pads), "dilations": tuple(dilations)}


def _map_conv(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    w = imp.read(ins[1], module, "weight")
    ws = imp.b.shapes[w]
    a = _spatial_attrs(imp, node, attrs, imp.b.shapes[x], ws[2:], "Conv")
    a["groups"] = int(attrs.get("group", 1))
    operands = [x, w]
    if len(ins) > 2 and ins[2]:
        operands.append(imp.read(ins[2], module, "bias"))
    return [imp.emit("conv", operands, a, module, _fallback(node))]


def _map_pool(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    kernel = tuple(int(k) for k in attrs["kernel_shape"])
    a = _spatial_attrs(imp, node, attrs, imp.b.shapes[x], kernel, node.op_type)
    a.update(kernel=kernel, ceil_mode=bool(attrs.get("ceil_mode", 0)))
    kind = "maxpool" if node.op_type == "MaxPool" else "avgpool"
    return [imp.emit(kind, [x], a, module, _fallback(node))]


def _map_global_pool(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                     module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    if node.op_type == "GlobalAveragePool":
        return [imp.emit("adaptive_avgpool", [x], {"output_size": (1,) * (rank - 2)}, module, _fallback(node))]
    return [imp.emit("reduce_max", [x], {"axes": tuple(range(2, rank)), "keepdims": True}, module, _fallback(node))]


def _map_layernorm(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    axis = int(attrs.get("axis", -1))
    if axis % rank != rank - 1:
        raise ModelError(f"LayerNormalization over axes from {axis} of rank {rank}: tileplan normalises the last "
                         "dimension only")
    operands = [x] + [imp.read(i, module, role) for i, role in zip(ins[1:3], ("weight", "bias")) if i]
    return [imp.emit("layernorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, _fallback(node))]


def _map_rmsnorm(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    if int(attrs.get("axis", -1)) % rank != rank - 1:
        raise ModelError("RMSNormalization over more than the last dimension: tileplan normalises the last only")
    operands = [x] + [imp.read(i, module, "weight") for i in ins[1:2] if i]
    return [imp.emit("rmsnorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, _fallback(node))]


def _map_batchnorm(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    roles = ("input", "weight", "bias", "running_mean", "running_var")
    operands = [imp.read(i, module, r) for i, r in zip(ins[:5], roles)]
    return [imp.emit("batchnorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, _fallback(node))]


def _map_softmax(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.shape(ins[0]))
    axis = int(attrs.get("axis", -1 if imp.opset >= 13 else 1))
    if imp.opset < 13 and axis % max(rank, 1) != rank - 1:
        raise ModelError(f"{node.op_type} (opset {imp.opset}) over axis {axis} of rank {rank}: the flattening "
                         "semantics before opset 13 are supported for the last axis only")
    kind = "softmax" if node.op_type == "Softmax" else "log_softmax"
    return [imp.emit(kind, [x], {"axis": axis}, module, _fallback(node))]


def _map_reduce(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.shape(ins[0]))
    if len(ins) > 1 and ins[1]:
        axes: list[int] | None = imp.int_list(ins[1], f"{node.op_type} axes")
    else:
        axes = [int(a) for a in attrs["axes"]] if "axes" in attrs else None
    keep = bool(attrs.get("keepdims", 1))
    if not axes:
        if attrs.get("noop_with_empty_axes"):
            return [imp.emit("alias", [x], None, module, _fallback(node))]
        axes = list(range(rank))
    out = imp.emit(REDUCE_ONNX[node.op_type], [x], {"axes": tuple(axes), "keepdims": keep}, module, _fallback(node))
    if not keep and len(axes) == rank:
        imp.set_shape(node.output[0], ())
    return [out]


def _map_arg(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
             module: str | None) -> list[str | None]:
    if attrs.get("select_last_index"):
        raise _Unsupported(node.op_type)
    x = imp.read(ins[0], module)
    a = {"axes": (int(attrs.get("axis", 0)),), "keepdims": bool(attrs.get("keepdims", 1))}
    return [imp.emit(ARG_ONNX[node.op_type], [x], a, module, _fallback(node), dtype="int")]


def _map_reshape(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    target = _reshape_target(imp.shape(ins[0]), imp.int_list(ins[1], "Reshape shape"), bool(attrs.get("allowzero")))
    imp.set_shape(node.output[0], target)
    return [imp.emit("reshape", [x], {"shape": target or (1,)}, module, _fallback(node))]


def _map_flatten(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    axis = int(attrs.get("axis", 1))
    axis = axis + len(s) if axis < 0 else axis
    target = (math.prod(s[:axis]), math.prod(s[axis:]))
    return [imp.emit("reshape", [imp.read(ins[0], module)], {"shape": target}, module, _fallback(node))]


def _map_unsqueeze(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    s = list(imp.shape(ins[0]))
    axes = imp.int_list(ins[1], "Unsqueeze axes") if len(ins) > 1 and ins[1] else [int(a) for a in attrs["axes"]]
    rank = len(s) + len(axes)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        s.insert(a, 1)
    imp.set_shape(node.output[0], tuple(s))
    return [imp.emit("reshape", [imp.read(ins[0], module)], {"shape": tuple(s)}, module, _fallback(node))]


def _map_squeeze(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    if len(ins) > 1 and ins[1]:
        axes = imp.int_list(ins[1], "Squeeze axes")
    elif "axes" in attrs:
        axes = [int(a) for a in attrs["axes"]]
    else:
        axes = [d for d, n in enumerate(s) if n == 1]
    drop = {a + len(s) if a < 0 else a for a in axes}
    target = tuple(n for d, n in enumerate(s) if d not in drop)
    imp.set_shape(node.output[0], target)
    return [imp.emit("reshape", [imp.read(ins[0], module)], {"shape": target or (1,)}, module, _fallback(node))]


def _map_transpose(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    rank = len(imp.shape(ins[0]))
    perm = tuple(int(p) for p in attrs.get("perm", range(rank - 1, -1, -1)))
    return [imp.emit("transpose", [imp.read(ins[0], module)], {"perm": perm}, module, _fallback(node))]


def _map_slice(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    s = list(imp.shape(ins[0]))
    values = [imp.known.get(i) if i else None for i in ins]
    for i in ins[1:]:
        if i and i not in imp.known:
            raise ModelError("Slice bounds are computed at run time: expected constants (static shapes)")
    starts, ends, axes, steps = _slice_args(values, attrs, len(s))
    out = imp.read(ins[0], module)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step < 1:
            raise ModelError(f"Slice with step {step} along axis {axis}: tileplan slices forwards only")
        r = range(*slice(start, end, step).indices(s[axis]))
        if len(r) == s[axis]:
            continue
        if not len(r):
            raise ModelError(f"Slice [{start}:{end}:{step}] of axis {axis} ({s[axis]}) is empty")
        out = imp.emit("slice", [out], {"axis": axis, "start": r.start, "end": r.stop, "step": step}, module,
                       _fallback(node))
        s[axis] = len(r)
    if out == imp.names.get(ins[0]):
        out = imp.emit("alias", [out], None, module, _fallback(node))
    return [out]


def _map_split(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    axis = int(attrs.get("axis", 0))
    axis = axis + len(s) if axis < 0 else axis
    n = len(node.output)
    if len(ins) > 1 and ins[1]:
        sizes = imp.int_list(ins[1], "Split sizes")
    elif "split" in attrs:
        sizes = [int(v) for v in attrs["split"]]
    else:
        chunk = -(-s[axis] // int(attrs.get("num_outputs", n)))
        sizes = [min(chunk, s[axis] - k * chunk) for k in range(n)]
    if sum(sizes) != s[axis] or len(sizes) != n:
        raise ModelError(f"Split of {s[axis]} into {sizes} for {n} outputs: the sizes do not add up")
    x = imp.read(ins[0], module)
    outs: list[str | None] = []
    start = 0
    for o, size in zip(node.output, sizes):
        if o and imp.readers[o] or o in _graph_outputs(imp):
            outs.append(imp.emit("slice", [x], {"axis": axis, "start": start, "end": start + size, "step": 1},
                                 module, o))
        else:
            outs.append(None)
        start += size
    return outs


def _graph_outputs(imp: _Importer) -> set[str]:
    return {o.name for o in imp.model.graph.output}


def _map_concat(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    parts = [i for i in ins if i and math.prod(imp.shape(i)) > 0]
    rank = len(imp.shape(parts[0]))
    return [imp.emit("concat", [imp.read(i, module) for i in parts], {"axis": int(attrs["axis"]) % rank}, module,
                     _fallback(node))]


def _map_expand(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    target = tuple(int(d) for d in np.broadcast_shapes(s, tuple(imp.int_list(ins[1], "Expand shape"))))
    x = imp.read(ins[0], module)
    if target == s:
        return [imp.emit("alias", [x], None, module, _fallback(node))]
    return [imp.emit("expand", [x], {"shape": target}, module, _fallback(node))]


def _map_gather(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    data, idx = ins
    s = imp.shape(data)
    axis = int(attrs.get("axis", 0)) % len(s)
    fb = _fallback(node)
    if idx in imp.known and not imp._is_runtime(idx):
        v = imp.known[idx].astype(np.int64).reshape(-1)
        v = np.where(v < 0, v + s[axis], v)
        target = (*s[:axis], *imp.known[idx].shape, *s[axis + 1:])
        if v.size and np.array_equal(v, np.arange(v[0], v[0] + v.size)):
            x = imp.read(data, module, "weight")
            out = x if v.size == s[axis] else imp.emit(
                "slice", [x], {"axis": axis, "start": int(v[0]), "end": int(v[0]) + v.size, "step": 1}, module, fb)
            if out == x:
                out = imp.emit("alias", [x], None, module, fb)
            imp.set_shape(node.output[0], target)
            return [imp.reshape(out, target, module, fb)]
    target = (*s[:axis], *imp.shape(idx), *s[axis + 1:])
    out = imp.emit("gather", [imp.read(data, module, "weight"), imp.read(idx, module, "indices")], {"axis": axis},
                   module, fb, dtype=imp.b.dtypes.get(imp.read(data, module)))
    imp.set_shape(node.output[0], target)
    return [imp.reshape(out, target, module, fb)]


def _map_pad(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
             module: str | None) -> list[str | None]:
    mode = attrs.get("mode", "constant")
    rank = len(imp.shape(ins[0]))
    pads = imp.int_list(ins[1], "Pad pads") if len(ins) > 1 and ins[1] else [int(p) for p in attrs["pads"]]
    value = 0.0
    if len(ins) > 2 and ins[2]:
        sv = _known_scalar(imp, ins[2])
        if sv is None:
            raise ModelError("Pad value is computed at run time: expected a constant")
        value = sv
    if len(ins) > 3 and ins[3]:
        axes = [a % rank for a in imp.int_list(ins[3], "Pad axes")]
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[a + rank] = pads[k], pads[k + len(axes)]
        pads = full
    if any(p < 0 for p in pads):
        raise ModelError(f"Pad with negative pads {pads}: expected pads >= 0")
    return [imp.emit("pad", [imp.read(ins[0], module)], {"pads": tuple(pads), "value": value, "mode": mode}, module,
                     _fallback(node))]


def _map_cumsum(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    axis = imp.int_list(ins[1], "CumSum axis")[0]
    return [imp.emit("cumsum", [imp.read(ins[0], module)], {"axis": axis}, module, _fallback(node))]


def _map_gather_elements(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                         module: str | None) -> list[str | None]:
    data, idx = (imp.read(i, module) for i in ins)
    return [imp.emit("gather_elements", [data, idx], {"axis": int(attrs.get("axis", 0))}, module, _fallback(node))]


def _map_constant_of_shape(imp: _Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                           module: str | None) -> list[str | None]:
    from onnx import numpy_helper

    shape = tuple(imp.int_list(ins[0], "ConstantOfShape shape"))
    value = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else np.zeros(1, np.float32)
    return [imp.b.op("fill", [], {"shape": shape or (1,), "value": value[0].item()},
                     name=imp._op_name(module, "fill", _fallback(node)), module=module, dtype=_np_class(value))]


MAPPERS: dict[str, Mapper] = {
    **{op: _map_binary for op in BINARY_ONNX},
    **{op: _map_unary for op in UNARY_ONNX},
    **{op: _map_reduce for op in REDUCE_ONNX},
    **{op: _map_arg for op in ARG_ONNX},
    "Identity": _map_alias, "Dropout": _map_alias, "Gelu": _map_gelu, "Clip": _map_clip, "Where": _map_where,
    "Cast": _map_cast, "CastLike": _map_cast, "MatMul": _map_matmul, "Gemm": _map_gemm, "Conv": _map_conv,
    "MaxPool": _map_pool, "AveragePool": _map_pool, "GlobalAveragePool": _map_global_pool,
    "GlobalMaxPool": _map_global_pool, "LayerNormalization": _map_layernorm, "RMSNormalization": _map_rmsnorm,
    "BatchNormalization": _map_batchnorm, "Softmax": _map_softmax, "LogSoftmax": _map_softmax,
    "Reshape": _map_reshape, "Flatten": _map_flatten, "Unsqueeze": _map_unsqueeze, "Squeeze": _map_squeeze,
    "Transpose": _map_transpose, "Slice": _map_slice, "Split": _map_split, "Concat": _map_concat,
    "Expand": _map_expand, "Gather": _map_gather, "Pad": _map_pad, "CumSum": _map_cumsum,
    "GatherElements": _map_gather_elements, "ConstantOfShape": _map_constant_of_shape,
}

__all__ = ["from_onnx", "place_views_beside_readers"]
