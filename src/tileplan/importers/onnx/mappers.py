"""Mapping: ONNX nodes on run-time tensors onto registry operators.

`MAPPERS` is the one table of ONNX op type -> mapper. A mapper reads its operands
through the importer (`imp.read`: parameters declared on first read, known values
materialised), emits registry operators (`imp.emit`) and returns the builder tensor
of each ONNX output it maps (None for an output nothing reads). It raises
`Unsupported` for a form it does not map: the importer then lists the op type with
the others it does not know.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tileplan.errors import ModelError
from tileplan.importers.aten import transposed_conv
from tileplan.importers.onnx.einsum import map_einsum
from tileplan.importers.onnx.common import Mapper, OnnxImporter, Unsupported, broadcast, fallback, known_scalar
from tileplan.importers.onnx.load import elem_class, np_class
from tileplan.importers.onnx.views import VIEW_MAPPERS
from tileplan.ops import REGISTRY

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
               "ReduceMin": "reduce_min", "ReduceProd": "reduce_prod", "ReduceL2": "reduce_l2", "ReduceL1": "reduce_l1",
               "ReduceSumSquare": "reduce_sum_square", "ReduceLogSumExp": "reduce_logsumexp"}
ARG_ONNX = {"ArgMax": "argmax", "ArgMin": "argmin"}


def _map_alias(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    return [imp.emit("alias", [x], None, module, fallback(node))]


def _map_binary(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    if len(ins) != 2:
        raise Unsupported(node.op_type)
    kind = BINARY_ONNX[node.op_type]
    a, b = ins
    role_b = "bias" if kind == "add" else ("weight" if kind == "mul" else "")
    sb, sa = known_scalar(imp, b), known_scalar(imp, a)
    imp.set_shape(node.output[0], broadcast(imp.shape(a), imp.shape(b)))
    dtype = "bool" if kind in ("eq", "lt", "le", "gt", "ge", "and", "or", "xor") else None
    if sb is not None and not imp.is_runtime(b):
        out = imp.emit(kind, [imp.read(a, module)], {"scalar": sb}, module, fallback(node), dtype)
        return [imp.reshape(out, broadcast(imp.shape(a), imp.shape(b)), module, fallback(node))]
    if sa is not None and REGISTRY[kind].commutative and not imp.is_runtime(a):
        out = imp.emit(kind, [imp.read(b, module)], {"scalar": sa}, module, fallback(node), dtype)
        return [imp.reshape(out, broadcast(imp.shape(a), imp.shape(b)), module, fallback(node))]
    xa, xb = imp.read(a, module, role_b), imp.read(b, module, role_b)
    out = imp.emit(kind, [xa, xb], None, module, fallback(node), dtype)
    return [imp.reshape(out, broadcast(imp.shape(a), imp.shape(b)), module, fallback(node))]


def _map_unary(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    kind = UNARY_ONNX[node.op_type]
    out = imp.emit(kind, [imp.read(ins[0], module)], {"alpha": attrs["alpha"]} if "alpha" in attrs else None,
                   module, fallback(node), "bool" if kind in ("not", "isnan", "isinf") else None)
    if kind == "isnan":
        imp.isnan_of[node.output[0]] = ins[0]
    return [out]


def _map_gelu(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    approx = attrs.get("approximate", "none")
    return [imp.emit("gelu", [imp.read(ins[0], module)], {"approximate": approx}, module, fallback(node))]


def _map_clip(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    """Clip with known bounds is `clamp` (`relu` for [0, inf)); a bound whose value the
    file does not hold (its external data absent) is read as a one-element operand of
    `maximum` (lower) and `minimum` (upper): the same memory."""
    x = imp.read(ins[0], module)
    lo, hi = attrs.get("min"), attrs.get("max")
    runtime: list[tuple[str, str]] = []
    for position, kind in ((1, "maximum"), (2, "minimum")):
        if len(ins) > position and ins[position]:
            value = known_scalar(imp, ins[position])
            if value is None:
                runtime.append((kind, ins[position]))
            elif position == 1:
                lo = value
            else:
                hi = value
    out = x
    if lo is not None or hi is not None:
        kind = "relu" if lo == 0 and hi is None else "clamp"
        out = imp.emit(kind, [x], {} if kind == "relu" else {"min": lo, "max": hi}, module, fallback(node))
    for kind, bound in runtime:
        out = imp.emit(kind, [out, imp.read(bound, module)], None, module, fallback(node))
    if out == x:
        out = imp.emit("alias", [x], None, module, fallback(node))
    return [imp.reshape(out, imp.shape(ins[0]), module, fallback(node))]


def _map_where(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    c, x, y = ins
    # the dynamo exporter's NaN guard after an attention softmax: Where(IsNaN(p), 0, p)
    # (its 0 may be an initializer whose value the file does not hold: any one number)
    if imp.isnan_of.get(c) == y and (known_scalar(imp, x) == 0 or imp.one_number(x)):
        return [imp.read(y, module)]
    shape = broadcast(imp.shape(c), imp.shape(x), imp.shape(y))
    imp.set_shape(node.output[0], shape)
    sy = known_scalar(imp, y)
    if sy is not None and not imp.is_runtime(y):
        out = imp.emit("where", [imp.read(c, module), imp.read(x, module)], {"scalar": sy}, module, fallback(node),
                       dtype=imp.b.dtypes[imp.read(x, module)])
    else:
        xs = imp.read(x, module)
        out = imp.emit("where", [imp.read(c, module), xs, imp.read(y, module)], None, module, fallback(node),
                       dtype=imp.b.dtypes[xs])
    return [imp.reshape(out, shape, module, fallback(node))]


def _map_cast(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    if node.op_type == "CastLike":
        target = imp.b.dtypes[imp.read(ins[1], module)] if ins[1] not in imp.known else np_class(imp.known[ins[1]])
    else:
        target = elem_class(int(attrs["to"]), node.name or node.output[0])
    if target == imp.b.dtypes[x]:
        return [imp.emit("alias", [x], None, module, fallback(node))]
    return [imp.emit("cast", [x], None, module, fallback(node), dtype=target)]


def _map_matmul(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    a, b = ins
    sa, sb = imp.shape(a), imp.shape(b)
    if len(sa) < 2 or len(sb) < 2:
        raise ModelError(f"MatMul of {list(sa)} x {list(sb)}: vector operands are not supported; expected "
                         "[..., M, K] x [..., K, N]")
    return [imp.emit("matmul", [imp.read(a, module, "weight"), imp.read(b, module, "weight")], None, module,
                     fallback(node))]


def _map_gemm(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    fb = fallback(node)
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
        sc = known_scalar(imp, c)
        if sc is not None and not imp.is_runtime(c):
            out = imp.emit("add", [out], {"scalar": sc * beta}, module, fb)
        else:
            bias = imp.read(c, module, "bias")
            if beta != 1.0:
                bias = imp.emit("mul", [bias], {"scalar": beta}, module, fb)
            out = imp.emit("add", [out, bias], None, module, fb)
    return [out]


def _spatial_attrs(imp: OnnxImporter, node: Any, attrs: dict[str, Any], x: tuple[int, ...], kernel: Sequence[int],
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


def _map_conv(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    w = imp.read(ins[1], module, "weight")
    ws = imp.b.shapes[w]
    a = _spatial_attrs(imp, node, attrs, imp.b.shapes[x], ws[2:], "Conv")
    a["groups"] = int(attrs.get("group", 1))
    operands = [x, w]
    if len(ins) > 2 and ins[2]:
        operands.append(imp.read(ins[2], module, "bias"))
    return [imp.emit("conv", operands, a, module, fallback(node))]


def _map_conv_transpose(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                        module: str | None) -> list[str | None]:
    """ConvTranspose: its output's field from ONNX's rule (`output_shape` when given,
    else stride (in - 1) + output_padding + dilation (k - 1) + 1 - pads, SAME_* auto
    padding in x stride), then as `tileplan.importers.aten.transposed_conv`."""
    x = imp.read(ins[0], module)
    w = imp.read(ins[1], module, "weight")
    xs, ws = imp.b.shapes[x], imp.b.shapes[w]
    n = len(ws) - 2
    groups = int(attrs.get("group", 1))
    strides = [int(v) for v in attrs.get("strides", [1] * n)]
    dilations = [int(v) for v in attrs.get("dilations", [1] * n)]
    pads = [int(v) for v in attrs.get("pads", [0] * (2 * n))]
    extra = [int(v) for v in attrs.get("output_padding", [0] * n)]
    auto = str(attrs.get("auto_pad", "NOTSET"))
    if "output_shape" in attrs or auto in ("SAME_UPPER", "SAME_LOWER"):
        field = ([int(v) for v in attrs["output_shape"]][-n:] if "output_shape" in attrs
                 else [xs[2 + d] * strides[d] for d in range(n)])
        # the pads ONNX's ConvTranspose derives from the output's field: total = s (in - 1)
        # + output_padding + d (k - 1) + 1 - out, the larger half at the end for
        # SAME_UPPER, at the start otherwise
        total = [max(0, strides[d] * (xs[2 + d] - 1) + extra[d] + dilations[d] * (ws[2 + d] - 1) + 1 - field[d])
                 for d in range(n)]
        ends = [t - t // 2 if auto == "SAME_UPPER" else t // 2 for t in total]
        pads = [t - e for t, e in zip(total, ends)] + ends
    else:
        field = [strides[d] * (xs[2 + d] - 1) + extra[d] + dilations[d] * (ws[2 + d] - 1) + 1 - pads[d] - pads[d + n]
                 for d in range(n)]
    if min(field, default=1) < 1:
        raise ModelError(f"ConvTranspose of {list(xs)} by {list(ws)}: an output field of {field}; expected sizes >= 1")
    out = (xs[0], ws[1] * groups, *field)
    bias = imp.read(ins[2], module, "bias") if len(ins) > 2 and ins[2] else None
    fb = fallback(node)
    imp.set_shape(node.output[0], out)
    return [transposed_conv(lambda kind, i, a, what: imp.emit(kind, i, a, module, fb), x, w, bias, out, groups,
                            lambda t, shape: imp.reshape(t, shape, module, fb), tuple(strides), tuple(pads),
                            tuple(dilations))]


def _map_pool(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    kernel = tuple(int(k) for k in attrs["kernel_shape"])
    a = _spatial_attrs(imp, node, attrs, imp.b.shapes[x], kernel, node.op_type)
    a.update(kernel=kernel, ceil_mode=bool(attrs.get("ceil_mode", 0)))
    kind = "maxpool" if node.op_type == "MaxPool" else "avgpool"
    return [imp.emit(kind, [x], a, module, fallback(node))]


def _map_global_pool(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                     module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    if node.op_type == "GlobalAveragePool":
        return [imp.emit("adaptive_avgpool", [x], {"output_size": (1,) * (rank - 2)}, module, fallback(node))]
    return [imp.emit("reduce_max", [x], {"axes": tuple(range(2, rank)), "keepdims": True}, module, fallback(node))]


def _map_layernorm(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    axis = int(attrs.get("axis", -1))
    if axis % rank != rank - 1:
        raise ModelError(f"LayerNormalization over axes from {axis} of rank {rank}: tileplan normalises the last "
                         "dimension only")
    operands = [x] + [imp.read(i, module, role) for i, role in zip(ins[1:3], ("weight", "bias")) if i]
    return [imp.emit("layernorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, fallback(node))]


def _map_rmsnorm(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.b.shapes[x])
    if int(attrs.get("axis", -1)) % rank != rank - 1:
        raise ModelError("RMSNormalization over more than the last dimension: tileplan normalises the last only")
    operands = [x] + [imp.read(i, module, "weight") for i in ins[1:2] if i]
    return [imp.emit("rmsnorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, fallback(node))]


def _map_batchnorm(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    roles = ("input", "weight", "bias", "running_mean", "running_var")
    operands = [imp.read(i, module, r) for i, r in zip(ins[:5], roles)]
    return [imp.emit("batchnorm", operands, {"eps": float(attrs.get("epsilon", 1e-5))}, module, fallback(node))]


def _map_instancenorm(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                      module: str | None) -> list[str | None]:
    """InstanceNormalization: a group norm with one group per channel;
    GroupNormalization: `num_groups` groups (scale and bias per channel, or per group
    as opset 18 has them)."""
    x = imp.read(ins[0], module)
    s = imp.b.shapes[x]
    if len(s) < 3:
        raise ModelError(f"{node.op_type} of {list(s)}: expected [N, C, ...] with a spatial dimension")
    groups = s[1] if node.op_type == "InstanceNormalization" else int(attrs.get("num_groups", 0))
    operands = [x] + [imp.read(i, module, role) for i, role in zip(ins[1:3], ("weight", "bias")) if i]
    return [imp.emit("groupnorm", operands, {"groups": groups, "eps": float(attrs.get("epsilon", 1e-5))}, module,
                     fallback(node))]


def _map_resize(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    """Resize (opset 10+: X, roi, scales, sizes) and Upsample (X, scales) of the
    spatial dimensions: by `sizes`, else by `scales`, else by the stated shape."""
    x = imp.read(ins[0], module)
    s = imp.b.shapes[x]
    if len(s) < 3:
        raise ModelError(f"{node.op_type} of {list(s)}: expected [N, C, ...] with a spatial dimension")
    sizes = imp.ints(ins[3]) if len(ins) > 3 and ins[3] else None
    scales_name = ins[1] if node.op_type == "Upsample" else (ins[2] if len(ins) > 2 else "")
    scales = imp.known.get(scales_name) if scales_name else None
    if sizes is not None:
        target = tuple(sizes)
    elif scales is not None and scales.size:
        target = tuple(int(n * float(f)) for n, f in zip(s, scales.reshape(-1)))
    else:
        target = imp.stated_shape(node, f"{node.op_type} scales and sizes")
    if len(target) != len(s) or tuple(target[:2]) != tuple(s[:2]):
        raise ModelError(f"{node.op_type} of {list(s)} to {list(target)}: only the spatial dimensions are resized")
    mode = str(attrs.get("mode", "nearest"))
    return [imp.emit("resize", [x], {"size": tuple(target[2:]), "mode": mode}, module, fallback(node))]


def _map_softmax(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.shape(ins[0]))
    axis = int(attrs.get("axis", -1 if imp.opset >= 13 else 1))
    if imp.opset < 13 and axis % max(rank, 1) != rank - 1:
        raise ModelError(f"{node.op_type} (opset {imp.opset}) over axis {axis} of rank {rank}: the flattening "
                         "semantics before opset 13 are supported for the last axis only")
    kind = "softmax" if node.op_type == "Softmax" else "log_softmax"
    return [imp.emit(kind, [x], {"axis": axis}, module, fallback(node))]


def _map_reduce(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    x = imp.read(ins[0], module)
    rank = len(imp.shape(ins[0]))
    keep = bool(attrs.get("keepdims", 1))
    if len(ins) > 1 and ins[1]:
        axes = imp.ints(ins[1])
        if axes is None:
            axes = reduced_axes(imp.shape(ins[0]), imp.stated_shape(node, f"{node.op_type} axes"), keep)
            if not axes:  # only dimensions of size 1 reduced: the same elements
                return [imp.emit("alias", [x], None, module, fallback(node))]
    else:
        axes = [int(a) for a in attrs["axes"]] if "axes" in attrs else None
    if not axes:
        if attrs.get("noop_with_empty_axes"):
            return [imp.emit("alias", [x], None, module, fallback(node))]
        axes = list(range(rank))
    out = imp.emit(REDUCE_ONNX[node.op_type], [x], {"axes": tuple(axes), "keepdims": keep}, module, fallback(node))
    if not keep and len(axes) == rank:
        imp.set_shape(node.output[0], ())
    return [out]


def reduced_axes(x: Sequence[int], out: Sequence[int], keep: bool) -> list[int]:
    """The axes a reduction of `x` to `out` reduced: with `keep`, those where `out` is 1
    and `x` is not; without, those `out` skips (matched from the left). Worked example:
    [2, 5, 7] -> [2, 1, 1] keeping gives [1, 2]; [2, 5, 7] -> [2, 7] gives [1]."""
    if keep:
        if len(out) != len(x):
            raise ModelError(f"a reduction keeping its dimensions of {list(x)} to {list(out)}: the ranks differ")
        return [d for d, (a, b) in enumerate(zip(x, out)) if b == 1 and a != 1]
    axes, j = [], 0
    for d, n in enumerate(x):
        if j < len(out) and out[j] == n and len(x) - d - 1 >= len(out) - j - 1:
            j += 1
        else:
            axes.append(d)
    if j != len(out):
        raise ModelError(f"a reduction of {list(x)} to {list(out)}: not a reduction of some dimensions")
    return axes


def _map_arg(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
             module: str | None) -> list[str | None]:
    if attrs.get("select_last_index"):
        raise Unsupported(node.op_type)
    x = imp.read(ins[0], module)
    a = {"axes": (int(attrs.get("axis", 0)),), "keepdims": bool(attrs.get("keepdims", 1))}
    return [imp.emit(ARG_ONNX[node.op_type], [x], a, module, fallback(node), dtype="int")]


def _map_scatter(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    """ScatterND (data, indices [..., k], updates) and ScatterElements (data,
    indices, updates along `axis`): the registry's `scatter`, its memory the index
    tensor received and the updates written (one index tensor: `axes` names the axis
    it indexes, the first for ScatterND's tuples)."""
    data, idx, updates = (imp.read(i, module) for i in ins[:3])
    axis = int(attrs.get("axis", 0)) if node.op_type == "ScatterElements" else 0
    accumulate = attrs.get("reduction", "none") != "none"
    return [imp.emit("scatter", [data, idx, updates], {"axes": (axis,), "accumulate": accumulate}, module,
                     fallback(node), dtype=imp.b.dtypes[data])]


def _map_topk(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    """TopK (X, K): the k best of each row along `axis`, values and their indices."""
    x = imp.read(ins[0], module)
    ks = imp.ints(ins[1]) if len(ins) > 1 and ins[1] else [int(attrs["k"])] if "k" in attrs else None
    axis = int(attrs.get("axis", -1))
    if ks is None:
        k = imp.stated_shape(node, "TopK k")[axis]
    else:
        k = int(ks[0])
    a = {"k": k, "axis": axis, "largest": bool(attrs.get("largest", 1))}
    fb = fallback(node)
    return [imp.emit("topk", [x], {**a, "indices": False}, module, fb, dtype=imp.b.dtypes[x]),
            imp.emit("topk", [x], {**a, "indices": True}, module, fb, dtype="int")]


def _map_random(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    """RandomUniform(Like) and RandomNormal(Like): a new tensor of the given (or the
    input's) shape, its values made on the tiles (`fill`)."""
    shape = imp.shape(ins[0]) if node.op_type.endswith("Like") else tuple(int(d) for d in attrs["shape"])
    dtype = elem_class(int(attrs["dtype"]), node.name or node.output[0]) if "dtype" in attrs else (
        imp.b.dtypes[imp.read(ins[0], module)] if ins else "float")
    imp.set_shape(node.output[0], shape)
    return [imp.emit("fill", [], {"shape": tuple(shape) or (1,), "value": None}, module, fallback(node), dtype=dtype)]


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
    "InstanceNormalization": _map_instancenorm, "GroupNormalization": _map_instancenorm, "Resize": _map_resize,
    "Upsample": _map_resize, "ConvTranspose": _map_conv_transpose, "Einsum": map_einsum,
    "ScatterND": _map_scatter, "ScatterElements": _map_scatter,
    "TopK": _map_topk, "RandomUniformLike": _map_random, "RandomNormalLike": _map_random,
    "RandomUniform": _map_random, "RandomNormal": _map_random, **VIEW_MAPPERS,
}
