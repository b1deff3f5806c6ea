"""The joint forward and backward graph of a PyTorch model with its loss (training).

The recipe of docs/notes/TRAINING-NOTES.md section 4.2, on a model built on the meta device: its
parameters become fake tensors (`FakeTensorMode`, `to_empty`: shapes and dtypes, no
storage), it is exported in training mode (`torch.export`, non-strict) with a wrapper
returning only its loss, and `aot_export_joint_with_descriptors` traces the forward
and backward passes as one graph, whose descriptors say which input is a parameter,
a buffer, a user input or the loss's gradient seed, and which output is the loss or
a parameter's gradient. Forward nodes keep their `nn_module_stack` and backward nodes
their forward module's (`fwd_nn_module_stack`), so a backward operation is named after
the module whose forward it differentiates (`encoder.layer.3.output.dense.backward.
matmul_grad_input`) and lands on that layer's IPU.

The walk is the inference importer's (`importers.torch_export.Importer`, the ATen
table of `importers.aten`) with the backward operators mapped onto
`tileplan.ops.gradients` and fully connected layers recognised: a forward product of
an activation and a parameter is a `matmul` planned jointly (`joint`), the backward
product dY W^T is `matmul_grad_input` and X^T dY (or its transpose, nn.Linear's
dW^T) `matmul_grad_weight`. Dropout is the identity here: Poplar regenerates its mask
from the seed in the backward pass, so no mask is kept.
"""

from __future__ import annotations

import contextlib
import operator
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from tileplan.errors import InputError, ModelError
from tileplan.importers.aten import ATEN, Handler
from tileplan.importers.aten_table import registrar
from tileplan.importers.graph import Graph, unsupported
from tileplan.importers.torch_export import Importer, _torch, dtype_class, float_precision

#: the model's attribute in the wrapper that returns its loss (stripped from names)
WRAPPED = "model"


@dataclass(frozen=True, slots=True)
class JointGraph:
    """A model's forward and backward passes as one graph. `graph.outputs` are the loss
    and each trained parameter's gradient (`gradients`: (parameter, gradient tensor),
    the gradient in the parameter's declared shape); `backward` holds the outputs of
    the backward pass's operations; `seed` is the loss gradient's input."""

    graph: Graph
    loss: str
    gradients: tuple[tuple[str, str], ...]
    backward: frozenset[str]
    seed: str


def joint_graph(model: Any, inputs: dict[str, tuple[tuple[int, ...], Any]], name: str,
                positional: bool = False, prepare: Callable[[Any], None] | None = None) -> JointGraph:
    """The joint graph of `model` (built on the meta device, or holding real weights:
    either way only shapes are kept; in training mode) called with `inputs` (name ->
    (shape, torch dtype)) as keywords, or in order with `positional`, which must make
    it return a loss (a tensor, or `.loss` of its output). `prepare` changes the model
    once its parameters are fake tensors (modules it makes then are fake too)."""
    torch = _torch()
    from torch._functorch.aot_autograd import aot_export_joint_with_descriptors
    from torch._subclasses.fake_tensor import FakeTensorMode

    names = tuple(inputs)
    module: Any = torch.nn.Module

    class Loss(module):
        def __init__(self, m: Any) -> None:
            super().__init__()
            setattr(self, WRAPPED, m)

        def forward(self, *args: Any) -> tuple[Any]:
            m = getattr(self, WRAPPED)
            out = m(*args) if positional else m(**dict(zip(names, args)))
            loss = out if isinstance(out, torch.Tensor) else getattr(out, "loss", None)
            if loss is None:
                raise InputError(f"{type(getattr(self, WRAPPED)).__name__} returned no loss for inputs "
                                 f"{', '.join(names)}")
            return (loss,)

    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            on_meta = any(p.is_meta for p in model.parameters())
            if on_meta:
                model = model.to_empty(device="cpu")
                if hasattr(model, "tie_weights"):  # to_empty gives each module its own tensor: tie them again
                    model.tie_weights()
            if prepare is not None:
                prepare(model)
            wrapped = Loss(model.train())
            args = tuple(torch.zeros(*shape, dtype=dtype) for shape, dtype in inputs.values())
            ep = torch.export.export(wrapped, args, strict=False)
            with contextlib.ExitStack() as stack:
                joint = aot_export_joint_with_descriptors(stack, ep.module(), args).graph_module
    except InputError:
        raise
    except Exception as e:  # torch raises many types; one line names the cause
        first = str(e).splitlines()[0] if str(e) else ""
        raise ModelError(f"exporting the joint forward and backward graph failed: {type(e).__name__}: {first[:300]}",
                         name) from None
    return JointImporter(joint, name, names).walk()


def _strip(path: str) -> str:
    """A module or parameter path without the wrapper's attribute."""
    if path == WRAPPED:
        return ""
    return path[len(WRAPPED) + 1:] if path.startswith(WRAPPED + ".") else path


class JointImporter(Importer):
    """The walk over a joint graph (see the module docstring)."""

    def __init__(self, gm: Any, name: str, input_names: Sequence[str]) -> None:
        super().__init__(None, name)
        self.gm = gm
        self.input_names = tuple(input_names)
        self.backward: set[str] = set()
        self.parameters: set[str] = set()
        #: a transpose's input and permutation, by its output
        self.transposed: dict[str, tuple[str, tuple[int, ...]]] = {}
        #: a reshape's or transpose's input, by its output
        self.view_of: dict[str, str] = {}
        self._module = ""

    # -- names: backward operations after their forward module --------------------------
    @property
    def in_backward(self) -> bool:
        return self.node is not None and bool(self.node.meta.get("autograd_backward"))

    @property
    def module(self) -> str:
        if self.node is None:
            return ""
        stack = self.node.meta.get("fwd_nn_module_stack" if self.in_backward else "nn_module_stack")
        if stack:
            self._module = _strip(str(list(stack.values())[-1][0]))
        elif self.in_backward:
            pass  # a sum of gradients between modules: the module of the backward operation before
        else:
            self._module = ""
        return self._module

    def name(self, what: str) -> str:
        what = f"backward.{what}" if self.in_backward else what
        return f"{self.module}.{what}" if self.module else what

    def op(self, kind: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None, what: str | None = None,
           dtype: str | None = None) -> str:
        if kind == "transpose":
            perm = tuple(int(p) for p in (attrs or {})["perm"])
            before = self.transposed.get(inputs[0])
            if before is not None and tuple(before[1][p] for p in perm) == tuple(range(len(perm))):
                return before[0]  # a transpose undone
        out = super().op(kind, inputs, attrs, what, dtype)
        if self.in_backward:
            self.backward.add(out)
        if kind == "transpose":
            self.transposed[out] = (inputs[0], tuple(int(p) for p in (attrs or {})["perm"]))
        if kind in ("transpose", "reshape"):
            self.view_of[out] = inputs[0]
        return out

    def root(self, name: str) -> str:
        while name in self.view_of:
            name = self.view_of[name]
        return name

    def is_weight(self, name: str) -> bool:
        """A 2-D operand that is a parameter read through views."""
        return len(self.shape(name)) == 2 and self.root(name) in self.parameters

    # -- the walk --------------------------------------------------------------------------
    def walk(self) -> JointGraph:
        torch = _torch()
        seed = loss = None
        raw: list[tuple[str, str]] = []
        for node in self.gm.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                desc = node.meta.get("desc")
                val = node.meta.get("val")
                kind = type(desc).__name__
                if not isinstance(val, torch.Tensor):
                    self.env[node.name] = val
                    continue
                shape, dtype = tuple(val.shape) or (1,), dtype_class(val.dtype)
                if kind == "ParamAOTInput":
                    t = self.b.parameter(_strip(str(desc.target)), shape, dtype)
                    self.parameters.add(t)
                elif kind == "BufferAOTInput":
                    t = self.b.parameter(_strip(str(desc.target)), shape, dtype, buffer=True)
                elif kind == "PlainAOTInput":
                    t = self.b.input(self.input_names[desc.idx], shape, dtype)
                elif kind == "TangentAOTInput":
                    t = seed = self.b.input("loss [seed]", shape, dtype)
                else:
                    raise ModelError(f"unexpected input {kind} in the joint graph", node.name)
                self.env[node.name] = t
                if dtype == "float":
                    self.b.note_precision(t, float_precision(val.dtype))
            elif node.op == "get_attr":  # a constant the trace lifted (a scalar tensor, a mask)
                val = getattr(self.gm, str(node.target), None)
                if isinstance(val, torch.Tensor):
                    self.env[node.name] = self.b.parameter(f"constant {node.target}", tuple(val.shape) or (1,),
                                                           dtype_class(val.dtype), buffer=True)
                else:
                    self.env[node.name] = val
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                if self.unknown:
                    break
                for out, desc in zip(node.args[0], node.meta.get("desc") or ()):
                    kind = type(desc).__name__
                    value = self.value(out) if out is not None else None
                    if kind == "PlainAOTOutput" and isinstance(value, str):
                        loss = value
                    elif kind == "GradAOTOutput" and isinstance(value, str) and \
                            type(desc.grad_of).__name__ == "ParamAOTInput":
                        raw.append((_strip(str(desc.grad_of.target)), value))
        self.node = None
        if self.unknown:
            raise unsupported(self.unknown, self.b.name)
        if loss is None or seed is None:
            raise ModelError("the joint graph has no loss", self.b.name)
        folded = self._folded()
        pairs = []
        for param, grad in raw:  # a weight declared transposed (nn.Linear's) takes its gradient transposed back
            pairs.append((param, self.op("transpose", [grad], {"perm": folded[param]}) if param in folded else grad))
        self.b.output(loss)
        for _, g in pairs:
            self.b.output(g)
        graph = self.b.build()
        made = {o.output for o in graph.ops}
        declared = {t.name: t.shape for t in graph.tensors}
        for param, g in pairs:
            if param in declared and declared[param] != self.shape(g):
                raise ModelError(f"the gradient {g} has shape {list(self.shape(g))}, the parameter "
                                 f"{list(declared[param])}", param)
        return JointGraph(graph, loss, tuple((p, g) for p, g in pairs if p in declared),
                          frozenset(self.backward & made), seed)

    def _folded(self) -> dict[str, tuple[int, ...]]:
        """The parameters `GraphBuilder.build` will declare transposed
        (`fold_parameter_transposes`: every reader transposes them the same way), with
        that permutation."""
        readers: dict[str, list[Any]] = {}
        for o in self.b.ops:
            for i in set(o.inputs):
                readers.setdefault(i, []).append(o)
        out = {}
        for name in self.parameters:
            users = readers.get(name, [])
            perms = {o.attrs for o in users if o.kind == "transpose"}
            if users and len(perms) == 1 and all(o.kind == "transpose" for o in users):
                out[name] = tuple(int(p) for p in dict(users[0].attrs)["perm"])
        return out

    def _call(self, node: Any) -> None:
        key = str(node.target) if node.target is not operator.getitem else "getitem"
        fn = JOINT.get(key) or ATEN.get(key)
        if fn is None:
            count, first = self.unknown.get(key, (0, self.module))
            self.unknown[key] = (count + 1, first)
            self.env[node.name] = None
            return
        if self.unknown:
            self.env[node.name] = None
            return
        try:
            self.env[node.name] = fn(self, node)
        except ModelError as e:
            raise ModelError(f"{key}: {e.detail}", e.place or self.name(node.name)) from None


# The backward operators and the products of fully connected layers ------------------------

JOINT: dict[str, Handler] = {}
#: register the decorated handler of a backward operator under each of the names given
joint = registrar(JOINT)


def _im(im: Any) -> JointImporter:
    assert isinstance(im, JointImporter)
    return im


@joint("aten.mm.default", "aten.matmul.default")
def _mm(im: Any, node: Any) -> str:
    im = _im(im)
    a, b = im.arg(0), im.arg(1)
    if not im.in_backward:
        return im.op("matmul", [a, b], {"joint": True} if im.is_weight(b) else None)
    if im.is_weight(b):  # dY W^T: W as the forward product read it (b's transpose, undone when b is one)
        return im.op("matmul_grad_input", [a, im.op("transpose", [b], {"perm": (1, 0)})])
    if len(im.shape(a)) == 2 and a in im.transposed and not im.is_weight(b):
        p = im.transposed[a][0]
        if p in im.backward and b not in im.backward:  # dY^T X = dW^T (nn.Linear's weight is [out, in])
            gw = im.op("matmul_grad_weight", [b, p])
            return im.op("transpose", [gw], {"perm": (1, 0)})
        if p not in im.backward and b in im.backward:  # X^T dY = dW (GPT-2's Conv1D)
            return im.op("matmul_grad_weight", [p, b])
    return im.op("matmul", [a, b])


@joint("aten.addmm.default")
def _addmm(im: Any, node: Any) -> str:
    im = _im(im)
    bias, a, b = im.arg(0), im.arg(1), im.arg(2)
    if im.kwarg("beta", 3, 1) != 1 or im.kwarg("alpha", 4, 1) != 1:
        raise ModelError("addmm with alpha or beta != 1 is not supported")
    y = im.op("matmul", [a, b], {"joint": True} if im.is_weight(b) and not im.in_backward else None)
    return im.op("add", [y, bias], what="bias_add")


@joint("aten.bmm.default")
def _bmm(im: Any, node: Any) -> str:
    """Attention's products and their gradients: poplin's grouped matmul (`grouped`)."""
    return im.op("matmul", [im.arg(0), im.arg(1)], {"grouped": True})


@joint("aten.native_dropout.default")
def _dropout(im: Any, node: Any) -> tuple[str, None]:
    return im.arg(0), None


@joint("aten.native_dropout_backward.default")
def _dropout_backward(im: Any, node: Any) -> str:
    return im.arg(0)


@joint("aten._safe_softmax.default")
def _safe_softmax(im: Any, node: Any) -> str:
    return im.op("softmax", [im.arg(0)], {"axis": int(im.arg(1))})


@joint("aten._softmax_backward_data.default", "aten._log_softmax_backward_data.default")
def _softmax_backward(im: Any, node: Any) -> str:
    log = "log" in str(node.target)
    return im.op("softmax_grad", [im.arg(0), im.arg(1)], {"axis": int(im.arg(2)), "log": log})


@joint("aten.native_layer_norm_backward.default")
def _layer_norm_backward(im: Any, node: Any) -> tuple[str, str, str]:
    dy, x, weight = im.arg(0), im.arg(1), im.arg(5)
    dx = im.op("layernorm_grad", [dy, x] + ([weight] if isinstance(weight, str) else []), what="layernorm_grad")
    dw = im.op("layernorm_grad_weight", [dy, x], what="layernorm_grad_weight")
    axes = tuple(range(len(im.shape(dy)) - 1))
    db = im.op("reduce_sum", [dy], {"axes": axes, "keepdims": False}, what="layernorm_grad_bias")
    return dx, dw, db


def _activation(fn: str) -> Handler:
    def handle(im: Any, node: Any) -> str:
        return im.op("activation_grad", [im.arg(0), im.arg(1)], {"fn": fn}, what=f"{fn}_grad")
    return handle


for _name, _fn in {"gelu_backward": "gelu", "tanh_backward": "tanh", "silu_backward": "silu",
                   "sigmoid_backward": "sigmoid", "threshold_backward": "relu"}.items():
    JOINT[f"aten.{_name}.default"] = _activation(_fn)


@joint("aten.embedding_dense_backward.default")
def _embedding_backward(im: Any, node: Any) -> str:
    return im.op("embedding_grad", [im.arg(0), im.arg(1)], {"rows": int(im.arg(2))}, what="embedding_grad")


@joint("aten.nll_loss_forward.default")
def _nll(im: Any, node: Any) -> tuple[str, None]:
    return im.op("nll_loss", [im.arg(0), im.arg(1)], what="nll_loss"), None


@joint("aten.nll_loss_backward.default")
def _nll_backward(im: Any, node: Any) -> str:
    return im.op("nll_loss_grad", [im.arg(0), im.arg(1), im.arg(2)], what="nll_loss_grad")


@joint("aten.slice_backward.default")
def _slice_backward(im: Any, node: Any) -> str:
    """The gradient of a slice: zeros of the input's shape with the slice's gradient
    in place, a `pad`."""
    g, sizes, dim, start, end, step = (im.arg(i) for i in range(6))
    if int(step) != 1:
        raise ModelError("the gradient of a strided slice is not supported")
    dim = int(dim) % len(sizes)
    extent = int(sizes[dim])
    start = max(0, min(int(start) + (extent if int(start) < 0 else 0), extent))
    begins, ends = [0] * len(sizes), [0] * len(sizes)
    begins[dim] = start
    ends[dim] = extent - start - im.shape(g)[dim]
    return im.op("pad", [g], {"pads": (*begins, *ends)}, what="slice_grad")


@joint("aten.select_backward.default")
def _select_backward(im: Any, node: Any) -> str:
    g, sizes, dim, index = (im.arg(i) for i in range(4))
    dim = int(dim) % len(sizes)
    extent = int(sizes[dim])
    index = int(index) % extent
    shape = list(im.shape(g))
    shape.insert(dim, 1)
    x = im.reshape(g, shape)
    begins, ends = [0] * len(sizes), [0] * len(sizes)
    begins[dim], ends[dim] = index, extent - index - 1
    return im.op("pad", [x], {"pads": (*begins, *ends)}, what="select_grad")


# Tensors made from others (a decoder's inputs shifted from its labels) -------------------

@joint("aten.fill.Tensor", "aten.fill.Scalar")
def _fill_like(im: Any, node: Any) -> str:
    """A tensor's shape filled with one value: the scalar's, or (from a tensor) not known here."""
    value = im.arg(1)
    known = float(value) if isinstance(value, (int, float)) else None
    return im.op("fill", [], {"shape": im.out_shape(), "value": known}, what="fill", dtype=im.out_dtype())


@joint("aten.masked_fill.Scalar")
def _masked_fill(im: Any, node: Any) -> str:
    x, mask, value = im.arg(0), im.arg(1), im.arg(2)
    keep = im.op("not", [mask], what="not")
    return im.op("where", [keep, x], {"scalar": float(value)}, what="masked_fill", dtype=im.out_dtype())


def _scattered(im: Any, x: str, src: str, dim: int, start: int) -> str:
    """`x` with `src` written along `dim` from `start`: a new tensor of x's shape (src
    padded to it, then combined)."""
    shape = im.shape(x)
    begins, ends = [0] * len(shape), [0] * len(shape)
    begins[dim], ends[dim] = start, shape[dim] - start - im.shape(src)[dim]
    padded = im.op("pad", [src], {"pads": (*begins, *ends)}, what="scatter_pad")
    return im.op("add", [x, padded], what="scatter", dtype=im.out_dtype())


@joint("aten.slice_scatter.default")
def _slice_scatter(im: Any, node: Any) -> str:
    x, src = im.arg(0), im.arg(1)
    dim = int(im.arg(2, 0)) % len(im.shape(x))
    start = im.arg(3, 0)
    start = 0 if start is None else int(start) % max(1, im.shape(x)[dim] + 1)
    if int(im.arg(5, 1)) != 1:
        raise ModelError("a strided slice_scatter is not supported")
    return _scattered(im, x, src, dim, start)


@joint("aten.select_scatter.default")
def _select_scatter(im: Any, node: Any) -> str:
    x, src = im.arg(0), im.arg(1)
    dim = int(im.arg(2)) % len(im.shape(x))
    index = int(im.arg(3)) % im.shape(x)[dim]
    shape = list(im.shape(src))
    shape.insert(dim, 1)
    return _scattered(im, x, im.reshape(src, shape), dim, index)


@joint("aten.convolution_backward.default")
def _convolution_backward(im: Any, node: Any) -> tuple[str | None, str | None, str | None]:
    """dX, dW and the bias's gradient, as the output mask asks."""
    dy, x, w = im.arg(0), im.arg(1), im.arg(2)
    transposed, groups, mask = im.arg(7), int(im.arg(9)), im.arg(10)
    if transposed:
        raise ModelError("the gradient of a transposed convolution is not supported")
    shape = im.shape(w)
    n = len(shape) - 2
    stride, padding, dilation = (tuple(int(v) for v in im.arg(i)) for i in (4, 5, 6))
    stride, padding, dilation = (v * (n if len(v) == 1 else 1) for v in (stride, padding, dilation))
    geometry = {"strides": stride, "pads": (*padding, *padding), "dilations": dilation}
    dx = im.op("conv_grad_input", [dy, w], {"input_shape": im.shape(x), "groups": groups, **geometry},
               what="conv_grad_input") if mask[0] else None
    dw = im.op("conv_grad_weight", [x, dy], {"kernel": shape[2:], "groups": groups}, what="conv_grad_weight") \
        if mask[1] else None
    axes = (0, *range(2, len(im.shape(dy))))
    db = im.op("reduce_sum", [dy], {"axes": axes, "keepdims": False}, what="conv_grad_bias") if mask[2] else None
    return dx, dw, db
