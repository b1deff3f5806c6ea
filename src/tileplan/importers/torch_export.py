"""Import a PyTorch model through `torch.export`: `from_torch(module, example_inputs)`
and `from_exported(ep)`.

The module is exported (non-strict, static shapes) and decomposed to core ATen with
one exception: `scaled_dot_product_attention` stays whole (its decomposition
materialises several [B, H, S, S] tensors Poplar never makes). Parameters, buffers
and lifted constants are read by shape and dtype only, so a model built on
`torch.device("meta")` plans without its weights in memory. Each ATen operator maps
to registry operators through `ATEN` (`importers/aten.py`), one small function per
operator; an operator not in the table is listed (with its count and first module)
in one error, and nothing is planned. Names come from the module hierarchy
(`nn_module_stack`): a parameter keeps its state-dict name, an operation is named
after the module that ran it and what it does (`encoder.layer.3.attention.query.matmul`).
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

from tileplan.errors import InputError, ModelError
from tileplan.importers.aten import ATEN
from tileplan.importers.graph import Graph, GraphBuilder, unsupported
from tileplan.importers.pt2 import RUNTIME_ASSERTS
from tileplan.model.precision import Precision


def _torch() -> Any:
    try:
        import torch
    except ImportError:  # pragma: no cover - the import extra is installed by make test
        raise InputError("importing PyTorch models needs the `import` extra: pip install 'tileplan[import]'") from None
    return torch


def decompositions() -> Any:
    """Core ATen decompositions without the one for scaled dot-product attention."""
    torch = _torch()
    table = torch.export.default_decompositions()
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    return table


def from_torch(module: Any, example_inputs: Sequence[Any], name: str | None = None,
               kwargs: dict[str, Any] | None = None, strip: str = "") -> Graph:
    """Export `module` (in eval mode) on `example_inputs` and import it. A forward that
    takes `use_cache` is called with `use_cache=False` unless `kwargs` says otherwise:
    a decoder would return its cache, which is no tensor torch.export can output (plan
    a decoding step with its cache with `importers.decode`). `strip`: a prefix taken
    off every name (a wrapper's attribute)."""
    torch = _torch()
    module.eval()
    kwargs = dict(kwargs or {})
    if "use_cache" not in kwargs and takes(module, "use_cache"):
        kwargs["use_cache"] = False
    try:
        ep = torch.export.export(module, tuple(example_inputs), kwargs=kwargs or None, strict=False)
    except Exception as e:  # torch raises many types; one line names the cause
        raise ModelError(f"torch.export failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                         name or type(module).__name__) from None
    return from_exported(ep, name or type(module).__name__, strip)


def takes(module: Any, keyword: str) -> bool:
    """Whether the module's forward takes the keyword argument `keyword` by name."""
    import inspect

    try:
        parameters = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False
    p = parameters.get(keyword)
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def from_exported(ep: Any, name: str = "model", strip: str = "") -> Graph:
    """Import an ExportedProgram (decomposed here to core ATen, attention kept whole)."""
    try:
        ep = ep.run_decompositions(decompositions())
    except Exception as e:
        raise ModelError(f"decomposing to core ATen failed: {type(e).__name__}: {str(e).splitlines()[0]}",
                         name) from None
    drop_runtime_asserts(ep.graph)
    return Importer(ep, name, strip).run()


def drop_runtime_asserts(graph: Any) -> None:
    """Erase the run-time assertions of `graph` and what only they read (the `.item()`
    of a reduction and the comparison on it), so that a program which asserts on its
    data plans; a value the program uses otherwise stays, and is refused as before
    when it is data-dependent."""
    asserts = [n for n in graph.nodes if n.op == "call_function" and str(n.target) in RUNTIME_ASSERTS]
    for node in asserts:
        graph.erase_node(node)
    if asserts:
        graph.eliminate_dead_code()


def load_exported(path: str) -> Graph:
    """Import a saved ExportedProgram (`torch.export.save`, a `.pt2` file), read by
    `importers.pt2` without unpickling or calling anything from the file."""
    _torch()
    try:  # a Hugging Face model's outputs are pytree nodes transformers registers on import, and
        import transformers.modeling_outputs  # noqa: F401
        import transformers.integrations.moe  # noqa: F401  (its grouped matmul an operator)
    except ImportError:  # pragma: no cover
        pass
    from tileplan.importers.pt2 import load_program
    ep = load_program(path)
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "model"
    return from_exported(ep, stem)


def float_precision(dtype: Any) -> str:
    """A floating torch dtype as the precision tileplan plans it in: float32 and
    float64 "F32", float16 "F16", bfloat16 "F16" (IPUs compute in IEEE half; Graphcore's
    ports cast bfloat16 models with `.half()`), float8 "F16" too (an FP8 plan is asked
    for with --weights)."""
    torch = _torch()
    return "F32" if dtype in (torch.float32, torch.float64) else "F16"


U8, I8, I16 = Precision("U8"), Precision("I8"), Precision("I16")


def narrow_integer(dtype: Any) -> Precision | None:
    """An integer torch dtype narrower than 32 bits as the precision Poplar holds it in:
    PopTorch lowers uint8 to UNSIGNED_CHAR and int8 to CHAR (graphcore/poptorch
    poptorch/source/dispatch_tracer/dispatchers/MlirDispatch.cpp, `toCompilerType`),
    int16 to INT16 (`scalarTypeToOnnxString`); one byte or two an element. None for the
    others: int32 and int64 (which PopART casts to int32) are held in 32 bits, I32."""
    torch = _torch()
    return {torch.uint8: U8, torch.int8: I8, torch.int16: I16}.get(dtype)


def dtype_class(dtype: Any) -> str:
    torch = _torch()
    if dtype == torch.bool:
        return "bool"
    if dtype.is_floating_point:
        return "float"
    if dtype.is_complex:
        raise ModelError(f"complex tensors ({dtype}) are not supported")
    return "int"


class Empty:
    """A tensor of no elements (a slice past the end: Phi-3's rotary pass-through of
    zero channels). It holds no memory; a concatenation drops it."""

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY = Empty()
#: the operators that may read an empty tensor (and drop it)
READS_EMPTY = frozenset({"aten.cat.default", "aten.concat.default"})


class Importer:
    """One walk over an exported program's fx graph: state the ATen handlers share."""

    def __init__(self, ep: Any, name: str, strip: str = "") -> None:
        self.ep = ep
        self.strip = strip
        self.b = GraphBuilder(name)
        self.env: dict[str, Any] = {}  # fx node name -> tensor name (or tuple of them, or a Python value)
        self.node: Any = None
        self.unknown: dict[str, tuple[int, str]] = {}

    # -- helpers used by the operator functions --------------------------------------
    @property
    def module(self) -> str:
        stack = self.node.meta.get("nn_module_stack") if self.node is not None else None
        if not stack:
            return ""
        path = str(list(stack.values())[-1][0])
        return path[len(self.strip):] if self.strip and path.startswith(self.strip) else path

    def name(self, what: str) -> str:
        return f"{self.module}.{what}" if self.module else what

    def op(self, kind: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None, what: str | None = None,
           dtype: str | None = None) -> str:
        return self.b.op(kind, list(inputs), attrs, name=self.name(what or kind), module=self.module or None,
                         dtype=dtype)

    def arg(self, i: int, default: Any = None) -> Any:
        args = self.node.args
        return self.value(args[i]) if i < len(args) else default

    def kwarg(self, key: str, position: int | None = None, default: Any = None) -> Any:
        if key in self.node.kwargs:
            return self.value(self.node.kwargs[key])
        if position is not None and position < len(self.node.args):
            return self.value(self.node.args[position])
        return default

    def value(self, a: Any) -> Any:
        torch = _torch()
        if isinstance(a, torch.fx.Node):
            return self.env[a.name]
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        return a

    def shape(self, t: str) -> tuple[int, ...]:
        return self.b.shapes[t]

    def out_shape(self) -> tuple[int, ...]:
        val = self.node.meta.get("val")
        return tuple(int(d) for d in val.shape) or (1,)

    def out_dtype(self) -> str:
        return dtype_class(self.node.meta["val"].dtype)

    def tensor(self, x: Any) -> tuple[list[str], dict[str, Any]]:
        """A binary operand: a tensor name, or a Python number as the `scalar` attribute."""
        if isinstance(x, str):
            return [x], {}
        return [], {"scalar": float(x)}

    def reshape(self, x: str, shape: Sequence[int], what: str = "reshape") -> str:
        shape = tuple(int(d) for d in shape) or (1,)
        if shape == self.shape(x):
            return x
        return self.op("reshape", [x], {"shape": shape}, what)

    # -- the walk ------------------------------------------------------------------------
    def run(self) -> Graph:
        torch = _torch()
        sig = self.ep.graph_signature
        kinds = {s.arg.name: s for s in sig.input_specs if hasattr(s.arg, "name")}
        user_inputs = []
        for node in self.ep.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                spec = kinds.get(node.name)
                val = node.meta.get("val")
                if not isinstance(val, torch.Tensor):
                    self.env[node.name] = val  # a constant Python value
                    continue
                if val.numel() == 0 and (spec is None or spec.kind.name != "USER_INPUT"):
                    self.env[node.name] = EMPTY  # a constant of no elements (a cache not yet filled)
                    continue
                shape = tuple(val.shape)
                dtype = dtype_class(val.dtype)
                narrow = narrow_integer(val.dtype)
                kind = getattr(spec, "kind", None)
                if kind is not None and kind.name == "USER_INPUT":
                    self.env[node.name] = self.b.input(node.name, shape, dtype, narrow)
                    user_inputs.append(node.name)
                else:
                    target = str(getattr(spec, "target", None) or node.name)
                    if self.strip and target.startswith(self.strip):
                        target = target[len(self.strip):]
                    buffer = kind is None or kind.name != "PARAMETER"
                    self.env[node.name] = self.b.parameter(str(target), shape, dtype, buffer=buffer, narrow=narrow)
                if dtype == "float":
                    self.b.note_precision(self.env[node.name], float_precision(val.dtype))
            elif node.op == "call_function":
                key = str(node.target) if node.target is not operator.getitem else "getitem"
                val = node.meta.get("val")
                if isinstance(val, torch.Tensor) and val.numel() == 0:
                    self.env[node.name] = EMPTY  # no elements, no memory: a concatenation drops it
                    continue
                if key not in READS_EMPTY and any(self.env.get(a.name) is EMPTY for a in node.all_input_nodes):
                    raise ModelError(f"{key} reads a tensor of no elements: expected only a concatenation to",
                                     self.name(node.name))
                fn = ATEN.get(key)
                if fn is None:
                    count, first = self.unknown.get(key, (0, self.module))
                    self.unknown[key] = (count + 1, first)
                    self.env[node.name] = None
                    continue
                if self.unknown:  # keep walking only to list every unknown operator
                    self.env[node.name] = None
                    continue
                try:
                    self.env[node.name] = fn(self, node)
                except ModelError as e:
                    raise ModelError(f"{key}: {e.detail}", e.place or self.name(node.name)) from None
            elif node.op == "output":
                if self.unknown:
                    break
                for out in _flatten(self.value(node.args[0])):
                    if isinstance(out, str):
                        self.b.output(out)
        if self.unknown:
            raise unsupported(self.unknown, self.b.name)
        if not user_inputs:
            raise ModelError("the exported program has no user inputs", self.b.name)
        return self.b.build()


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    return [x]
