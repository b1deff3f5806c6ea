"""Mapping: ONNX nodes on run-time tensors onto registry operators.

`MAPPERS` is the one table of ONNX op type -> mapper. A mapper reads its operands
through the importer (`imp.read`: parameters declared on first read, known values
materialised), emits registry operators (`imp.emit`) and returns the builder tensor
of each ONNX output it maps (None for an output nothing reads). It raises
`Unsupported` for a form it does not map: the importer then lists the op type with
the others it does not know.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tileplan.errors import ModelError
from tileplan.importers.onnx.fold import reshape_target, slice_args
from tileplan.importers.onnx.load import elem_class, np_class
from tileplan.ops import REGISTRY

if TYPE_CHECKING:
    from tileplan.importers.onnx.importer import Importer

BINARY_ONNX = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Mod": "mod", "Equal": "eq",
    "Less": "lt", "LessOrEqual": "le", "Greater": "gt", "GreaterOrEqual": "ge", "And": "and", "Or": "or",
    "Xor": "xor", "Max": "maximum", "Min": "minimum",
}
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

Mapper = Callable[["Importer", Any, list[str], dict[str, Any], "str | None"], list["str | None"]]


class Unsupported(Exception):
    """A node this importer cannot map (collected, then reported together)."""


def _fallback(node: Any) -> str:
    return node.output[0] if node.output else node.name


def _map_alias(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    return [imp.emit("alias", [x], None, module, _fallback(node))]


def _known_scalar(imp: Importer, name: str) -> float | int | bool | None:
    """The number a known one-element value holds (any rank: callers reshape the
    result to the broadcast shape), else None."""
    if name in imp.known and imp.known[name].size == 1:
        return imp.known[name].reshape(-1)[0].item()
    return None


def _map_binary(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    if len(ins) != 2:
        raise Unsupported(node.op_type)
    kind = BINARY_ONNX[node.op_type]
    a, b = ins
    role_b = "bias" if kind == "add" else ("weight" if kind == "mul" else "")
    sb, sa = _known_scalar(imp, b), _known_scalar(imp, a)
    imp.set_shape(node.output[0], np.broadcast_shapes(imp.shape(a), imp.shape(b)))
    dtype = "bool" if kind in ("eq", "lt", "le", "gt", "ge", "and", "or", "xor") else None
    if sb is not None and not imp.is_runtime(b):
        out = imp.emit(kind, [imp.read(a, module)], {"scalar": sb}, module, _fallback(node), dtype)
        return [imp.reshape(out, np.broadcast_shapes(imp.shape(a), imp.shape(b)), module, _fallback(node))]
    if sa is not None and REGISTRY[kind].commutative and not imp.is_runtime(a):
        out = imp.emit(kind, [imp.read(b, module)], {"scalar": sa}, module, _fallback(node), dtype)
        return [imp.reshape(out, np.broadcast_shapes(imp.shape(a), imp.shape(b)), module, _fallback(node))]
    xa, xb = imp.read(a, module, role_b), imp.read(b, module, role_b)
    out = imp.emit(kind, [xa, xb], None, module, _fallback(node), dtype)
    return [imp.reshape(out, np.broadcast_shapes(imp.shape(a), imp.shape(b)), module, _fallback(node))]


def _map_unary(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    kind = UNARY_ONNX[node.op_type]
    out = imp.emit(kind, [imp.read(ins[0], module)], {"alpha": attrs["alpha"]} if "alpha" in attrs else None,
                   module, _fallback(node), "bool" if kind in ("not", "isnan", "isinf") else None)
    if kind == "isnan":
        imp.isnan_of[node.output[0]] = ins[0]
    return [out]


def _map_gelu(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    approx = attrs.get("approximate", "none")
    return [imp.emit("gelu", [imp.read(ins[0], module)], {"approximate": approx}, module, _fallback(node))]


def _map_clip(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    lo = attrs.get("min")
    hi = attrs.get("max")
    if len(ins) > 1 and ins[1]:
        lo = _known_scalar(imp, ins[1])
        if lo is None:
            raise Unsupported("Clip")
    if len(ins) > 2 and ins[2]:
        hi = _known_scalar(imp, ins[2])
        if hi is None:
            raise Unsupported("Clip")
    kind = "relu" if lo == 0 and hi is None else "clamp"
    a = {} if kind == "relu" else {"min": lo, "max": hi}
    return [imp.emit(kind, [imp.read(ins[0], module)], a, module, _fallback(node))]


def _map_where(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    c, x, y = ins
    # the dynamo exporter's NaN guard after an attention softmax: Where(IsNaN(p), 0, p)
    if imp.isnan_of.get(c) == y and _known_scalar(imp, x) == 0:
        return [imp.read(y, module)]
    shape = np.broadcast_shapes(imp.shape(c), imp.shape(x), imp.shape(y))
    imp.set_shape(node.output[0], shape)
    sy = _known_scalar(imp, y)
    if sy is not None and not imp.is_runtime(y):
        out = imp.emit("where", [imp.read(c, module), imp.read(x, module)], {"scalar": sy}, module, _fallback(node),
                       dtype=imp.b.dtypes[imp.read(x, module)])
    else:
        xs = imp.read(x, module)
        out = imp.emit("where", [imp.read(c, module), xs, imp.read(y, module)], None, module, _fallback(node),
                       dtype=imp.b.dtypes[xs])
    return [imp.reshape(out, shape, module, _fallback(node))]


def _map_cast(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    if node.op_type == "CastLike":
        target = imp.b.dtypes[imp.read(ins[1], module)] if ins[1] not in imp.known else np_class(imp.known[ins[1]])
    else:
        target = elem_class(int(attrs["to"]), node.name or node.output[0])
    if target == imp.b.dtypes[x]:
        return [imp.emit("alias", [x], None, module, _fallback(node))]
    return [imp.emit("cast", [x], None, module, _fallback(node), dtype=target)]


def _map_matmul(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    a, b = ins
    sa, sb = imp.shape(a), imp.shape(b)
    if len(sa) < 2 or len(sb) < 2:
        raise ModelError(f"MatMul of {list(sa)} x {list(sb)}: vector operands are not supported; expected "
                         "[..., M, K] x [..., K, N]")
    return [imp.emit("matmul", [imp.read(a, module, "weight"), imp.read(b, module, "weight")], None, module,
                     _fallback(node))]


def _map_gemm(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
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
        if sc is not None and not imp.is_runtime(c):
            out = imp.emit("add", [out], {"scalar": sc * beta}, module, fb)
        else:
            bias = imp.read(c, module, "bias")
            if beta != 1.0:
                bias = imp.emit("mul", [bias], {"scalar": beta}, module, fb)
            out = imp.emit("add", [out, bias], None, module, fb)
    return [out]


def _spatial_attrs(imp: Importer, node: Any, attrs: dict[str, Any], x: tuple[int, ...], kernel: Sequence[int],
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


def _map_conv(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
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


def _map_pool(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    kernel = tuple(int(k) for k in attrs["kernel_shape"])
    a = _spatial_attrs(imp, node, attrs, imp.b.shapes[x], kernel, node.op_type)
    a.update(kernel=kernel, ceil_mode=bool(attrs.get("ceil_mode", 0)))
    kind = "maxpool" if node.op_type == "MaxPool" else "avgpool"
    return [imp.emit(kind, [x], a, module, _fallback(node))]


def _map_global_pool(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                     module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    if node.op_type == "GlobalAveragePool":
        return [imp.emit("adaptive_avgpool", [x], {"output_size": (1,) * (rank - 2)}, module, _fallback(node))]
    return [imp.emit("reduce_max", [x], {"axes": tuple(range(2, rank)), "keepdims": True}, module, _fallback(node))]


def _map_layernorm(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    axis = int(attrs.get("axis", -1))
    if axis % rank != rank - 1:
        raise ModelError(f"LayerNormalization over axes from {axis} of rank {rank}: tileplan normalises the last "
                         "dimension only")
    operands = [x] + [imp.read(i, module, role) for i, role in zip(ins[1:3], ("weight", "bias")) if i]
    return [imp.emit("layernorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, _fallback(node))]


def _map_rmsnorm(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    if int(attrs.get("axis", -1)) % rank != rank - 1:
        raise ModelError("RMSNormalization over more than the last dimension: tileplan normalises the last only")
    operands = [x] + [imp.read(i, module, "weight") for i in ins[1:2] if i]
    return [imp.emit("rmsnorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, _fallback(node))]


def _map_batchnorm(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    roles = ("input", "weight", "bias", "running_mean", "running_var")
    operands = [imp.read(i, module, r) for i, r in zip(ins[:5], roles)]
    return [imp.emit("batchnorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, _fallback(node))]


def _map_softmax(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.shape(ins[0]))
    axis = int(attrs.get("axis", -1 if imp.opset >= 13 else 1))
    if imp.opset < 13 and axis % max(rank, 1) != rank - 1:
        raise ModelError(f"{node.op_type} (opset {imp.opset}) over axis {axis} of rank {rank}: the flattening "
                         "semantics before opset 13 are supported for the last axis only")
    kind = "softmax" if node.op_type == "Softmax" else "log_softmax"
    return [imp.emit(kind, [x], {"axis": axis}, module, _fallback(node))]


def _map_reduce(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
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


def _map_arg(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
             module: str | None) -> list[str | None]:
    if attrs.get("select_last_index"):
        raise Unsupported(node.op_type)
    x = imp.read(ins[0], module)
    a = {"axes": (int(attrs.get("axis", 0)),), "keepdims": bool(attrs.get("keepdims", 1))}
    return [imp.emit(ARG_ONNX[node.op_type], [x], a, module, _fallback(node), dtype="int")]


def _map_reshape(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    target = reshape_target(imp.shape(ins[0]), imp.int_list(ins[1], "Reshape shape"), bool(attrs.get("allowzero")))
    imp.set_shape(node.output[0], target)
    return [imp.emit("reshape", [x], {"shape": target or (1,)}, module, _fallback(node))]


def _map_flatten(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    axis = int(attrs.get("axis", 1))
    axis = axis + len(s) if axis < 0 else axis
    target = (math.prod(s[:axis]), math.prod(s[axis:]))
    return [imp.emit("reshape", [imp.read(ins[0], module)], {"shape": target}, module, _fallback(node))]


def _map_unsqueeze(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    s = list(imp.shape(ins[0]))
    axes = imp.int_list(ins[1], "Unsqueeze axes") if len(ins) > 1 and ins[1] else [int(a) for a in attrs["axes"]]
    rank = len(s) + len(axes)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        s.insert(a, 1)
    imp.set_shape(node.output[0], tuple(s))
    return [imp.emit("reshape", [imp.read(ins[0], module)], {"shape": tuple(s)}, module, _fallback(node))]


def _map_squeeze(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
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


def _map_transpose(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    rank = len(imp.shape(ins[0]))
    perm = tuple(int(p) for p in attrs.get("perm", range(rank - 1, -1, -1)))
    return [imp.emit("transpose", [imp.read(ins[0], module)], {"perm": perm}, module, _fallback(node))]


def _map_slice(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    s = list(imp.shape(ins[0]))
    values = [imp.known.get(i) if i else None for i in ins]
    for i in ins[1:]:
        if i and i not in imp.known:
            raise ModelError("Slice bounds are computed at run time: expected constants (static shapes)")
    starts, ends, axes, steps = slice_args(values, attrs, len(s))
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


def _map_split(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
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


def _graph_outputs(imp: Importer) -> set[str]:
    return {o.name for o in imp.model.graph.output}


def _map_concat(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    parts = [i for i in ins if i and math.prod(imp.shape(i)) > 0]
    rank = len(imp.shape(parts[0]))
    return [imp.emit("concat", [imp.read(i, module) for i in parts], {"axis": int(attrs["axis"]) % rank}, module,
                     _fallback(node))]


def _map_expand(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    target = tuple(int(d) for d in np.broadcast_shapes(s, tuple(imp.int_list(ins[1], "Expand shape"))))
    x = imp.read(ins[0], module)
    if target == s:
        return [imp.emit("alias", [x], None, module, _fallback(node))]
    return [imp.emit("expand", [x], {"shape": target}, module, _fallback(node))]


def _map_gather(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    data, idx = ins
    s = imp.shape(data)
    axis = int(attrs.get("axis", 0)) % len(s)
    fb = _fallback(node)
    if idx in imp.known and not imp.is_runtime(idx):
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


def _map_pad(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
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


def _map_cumsum(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    axis = imp.int_list(ins[1], "CumSum axis")[0]
    return [imp.emit("cumsum", [imp.read(ins[0], module)], {"axis": axis}, module, _fallback(node))]


def _map_gather_elements(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                         module: str | None) -> list[str | None]:
    data, idx = (imp.read(i, module) for i in ins)
    return [imp.emit("gather_elements", [data, idx], {"axis": int(attrs.get("axis", 0))}, module, _fallback(node))]


def _map_constant_of_shape(imp: Importer, node: Any, ins: list[str], attrs: dict[str, Any],
                           module: str | None) -> list[str | None]:
    from onnx import numpy_helper

    shape = tuple(imp.int_list(ins[0], "ConstantOfShape shape"))
    value = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else np.zeros(1, np.float32)
    return [imp.b.op("fill", [], {"shape": shape or (1,), "value": value[0].item()},
                     name=imp.op_name(module, "fill", _fallback(node)), module=module, dtype=np_class(value))]


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
