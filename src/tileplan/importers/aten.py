"""The ATen table: each core-ATen operator (after `run_decompositions()`, attention
kept whole) mapped onto registry operators by one small function.

`ATEN` maps an operator's name (`aten.addmm.default`; `getitem` for tuple reads) to a
handler: the importer (`im`, at the fx node being read: its arguments through
`im.arg`/`im.kwarg`, its module through the names `im.op` gives) and the node in,
the builder tensor (or tuple of them, or None for no output) out. `@aten(...)`
registers a handler under each name (`aten_table`; the views and data movement in
`aten_views`); an operator not in the table stops the import with the others the
importer does not know.
"""

from __future__ import annotations

from typing import Any

from tileplan.errors import ModelError
from tileplan.importers import aten_views  # noqa: F401  (its view and movement handlers register on import)
from tileplan.importers.aten_table import ATEN, AtenImporter, Handler, aten

__all__ = ["ATEN", "Handler", "aten"]


@aten("getitem")
def _getitem(im: AtenImporter, node: Any) -> Any:
    return im.arg(0)[im.arg(1)]


@aten("aten._assert_tensor_metadata.default", "aten._assert_scalar.default",
      "aten.sym_constrain_range_for_size.default")
def _nothing(im: AtenImporter, node: Any) -> Any:
    return None


@aten("aten.clone.default", "aten.alias.default", "aten.contiguous.default", "aten.lift_fresh_copy.default",
      "aten.detach.default", "aten.dropout.default")
def _alias(im: AtenImporter, node: Any) -> str:
    return im.arg(0)


@aten("aten.copy.default")
def _copy(im: AtenImporter, node: Any) -> str:
    """`dst.copy_(src)`, functionalised (`output[:, t] = ...` in RWKV's loop): the
    result is `src`, cast to `dst`'s element class and broadcast to its shape; `dst`
    gives only the shape."""
    dst, src = im.arg(0), im.arg(1)
    x = src
    if im.b.dtypes[src] != im.b.dtypes[dst]:
        x = im.op("cast", [x], what="copy", dtype=im.b.dtypes[dst])
    shape, have = im.shape(dst), im.shape(src)
    if have != shape:
        if len(shape) > len(have):
            x = im.reshape(x, (1,) * (len(shape) - len(have)) + have)
        x = im.op("expand", [x], {"shape": shape}, "copy")
    return x


@aten("aten._to_copy.default")
def _to_copy(im: AtenImporter, node: Any) -> str:
    x = im.arg(0)
    dtype = im.out_dtype()
    if dtype == im.b.dtypes[x]:
        return x  # a precision round-trip within one class (F32 <-> F16) costs nothing at one precision
    return im.op("cast", [x], what="cast", dtype=dtype)


BINARY = {"add": "add", "sub": "sub", "rsub": "sub", "mul": "mul", "div": "div", "pow": "pow",
          "maximum": "maximum", "minimum": "minimum", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
          "ge": "ge", "logical_and": "and", "bitwise_and": "and", "logical_or": "or", "bitwise_or": "or",
          "logical_xor": "xor", "bitwise_xor": "xor", "remainder": "mod", "fmod": "mod", "floor_divide": "div"}


def _binary(kind: str) -> Handler:
    def handle(im: AtenImporter, node: Any) -> str:
        a, b = im.arg(0), im.arg(1)
        if kind in ("add", "sub") and im.kwarg("alpha", 2, 1) != 1:
            raise ModelError("add/sub with alpha != 1 is not supported")
        if not isinstance(a, str):  # a scalar first: 2 - x, 2 ** x
            if kind in ("add", "mul", "eq", "ne", "maximum", "minimum", "and", "or", "xor"):
                a, b = b, a
            else:
                return im.op(kind, [b], {"scalar": float(a)}, dtype=im.out_dtype())
        ins, attrs = im.tensor(b)
        return im.op(kind, [a, *ins], attrs, dtype=im.out_dtype())
    return handle


for _name, _kind in BINARY.items():
    for _overload in ("Tensor", "Scalar", "Tensor_Scalar", "Tensor_Tensor", "Scalar_Tensor", "default", "Tensor_mode"):
        ATEN[f"aten.{_name}.{_overload}"] = _binary(_kind)

UNARY = {"neg": "neg", "exp": "exp", "log": "log", "tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu",
         "silu": "silu", "rsqrt": "rsqrt", "sqrt": "sqrt", "reciprocal": "reciprocal", "abs": "abs", "sin": "sin",
         "cos": "cos", "erf": "erf", "logical_not": "not", "bitwise_not": "not", "isnan": "isnan", "isinf": "isinf",
         "floor": "floor", "ceil": "ceil", "round": "round", "sign": "sign", "softplus": "softplus", "elu": "elu",
         "hardswish": "hardswish", "hardsigmoid": "hardsigmoid", "mish": "mish", "leaky_relu": "leaky_relu",
         "exp2": "exp", "log2": "log", "log1p": "log", "expm1": "exp"}


def _unary(kind: str) -> Handler:
    def handle(im: AtenImporter, node: Any) -> str:
        return im.op(kind, [im.arg(0)], dtype=im.out_dtype())
    return handle


for _name, _kind in UNARY.items():
    ATEN[f"aten.{_name}.default"] = _unary(_kind)


@aten("aten.gelu.default")
def _gelu(im: AtenImporter, node: Any) -> str:
    return im.op("gelu", [im.arg(0)], {"approximate": im.kwarg("approximate", 1, "none")})


@aten("aten.clamp.default", "aten.clamp_min.default", "aten.clamp_max.default", "aten.hardtanh.default")
def _clamp(im: AtenImporter, node: Any) -> str:
    target = str(node.target)
    lo = im.kwarg("min", 1) if "clamp_max" not in target else None
    hi = im.kwarg("max", 2) if "clamp_min" not in target else im.kwarg("max", 1)
    attrs = {k: float(v) for k, v in (("min", lo), ("max", hi)) if v is not None}
    return im.op("clamp", [im.arg(0)], attrs)


@aten("aten.where.self", "aten.where.ScalarOther", "aten.where.ScalarSelf", "aten.where.Scalar")
def _where(im: AtenImporter, node: Any) -> str:
    cond, x, y = im.arg(0), im.arg(1), im.arg(2)
    if isinstance(x, str) and isinstance(y, str):
        return im.op("where", [cond, x, y], dtype=im.out_dtype())
    if isinstance(x, str):
        return im.op("where", [cond, x], {"scalar": float(y)}, dtype=im.out_dtype())
    if isinstance(y, str):  # where(c, s, y) = where(not c, y, s)
        flipped = im.op("not", [cond], what="not")
        return im.op("where", [flipped, y], {"scalar": float(x)}, dtype=im.out_dtype())
    filled = im.op("fill", [], {"shape": im.out_shape(), "value": float(y)}, dtype=im.out_dtype())
    return im.op("where", [cond, filled], {"scalar": float(x)}, dtype=im.out_dtype())


# matrix products ----------------------------------------------------------------------

@aten("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(im: AtenImporter, node: Any) -> str:
    return im.op("matmul", [im.arg(0), im.arg(1)])


@aten("aten.addmm.default", "aten.baddbmm.default")
def _addmm(im: AtenImporter, node: Any) -> str:
    bias, a, b = im.arg(0), im.arg(1), im.arg(2)
    if im.kwarg("beta", 3, 1) != 1 or im.kwarg("alpha", 4, 1) != 1:
        raise ModelError("addmm with alpha or beta != 1 is not supported")
    y = im.op("matmul", [a, b])
    return im.op("add", [y, bias], what="bias_add")


@aten("aten.linear.default")
def _linear(im: AtenImporter, node: Any) -> str:
    x, w, bias = im.arg(0), im.arg(1), im.arg(2)
    wt = im.op("transpose", [w], {"perm": (1, 0)}, "weight_t")
    y = im.op("matmul", [x, wt])
    return y if bias is None else im.op("add", [y, bias], what="bias_add")


@aten("aten.convolution.default")
def _convolution(im: AtenImporter, node: Any) -> str:
    x, w, bias, stride, padding, dilation, transposed, _, groups = (im.arg(i) for i in range(9))
    n = len(im.shape(w)) - 2
    stride, padding, dilation = (tuple(v) * (n if len(v) == 1 else 1) for v in (stride, padding, dilation))
    pads = (*padding, *padding)
    if transposed:
        return transposed_conv(lambda kind, ins, attrs, what: im.op(kind, ins, attrs, what), x, w, bias,
                               im.out_shape(), int(groups), im.reshape, tuple(stride), pads, tuple(dilation))
    ins = [x, w] if bias is None else [x, w, bias]
    return im.op("conv", ins, {"strides": tuple(stride), "pads": pads, "dilations": tuple(dilation),
                               "groups": int(groups)})


def transposed_conv(op: Any, x: str, w: str, bias: str | None, out_shape: tuple[int, ...], groups: int,
                    reshape: Any, strides: tuple[int, ...], pads: tuple[int, ...], dilations: tuple[int, ...]) -> str:
    """A transposed convolution (DPT's and segmentation heads' upsampling): the data
    gradient of the convolution it transposes, whose output is this one's input, so
    `conv_grad_input` of x with the same weight [C_in, C_out/g, *kernel], this output's
    shape and the transposed convolution's strides, pads (begins then ends) and
    dilations, planned as poplin plans that product (`ops/gradients.py`); then the bias,
    broadcast over the field. `op(kind, inputs, attrs, what)` emits."""
    y = op("conv_grad_input", [x, w], {"input_shape": tuple(out_shape), "groups": groups, "strides": strides,
                                       "pads": pads, "dilations": dilations}, "conv_transpose")
    if bias is None:
        return y
    b = reshape(bias, (1, out_shape[1], *(1 for _ in out_shape[2:])))
    return op("add", [y, b], None, "bias_add")


@aten("aten.scaled_dot_product_attention.default")
def _sdpa(im: AtenImporter, node: Any) -> str:
    q, k, v = im.arg(0), im.arg(1), im.arg(2)
    mask = im.kwarg("attn_mask", 3)
    causal = bool(im.kwarg("is_causal", 5, False))
    scale = im.kwarg("scale", 6)
    ins = [q, k, v] if mask is None else [q, k, v, mask]
    attrs: dict[str, Any] = {"causal": causal}
    if scale is not None:
        attrs["scale"] = float(scale)
    return im.op("sdpa", ins, attrs, "attention")


# normalisations -----------------------------------------------------------------------

@aten("aten.native_layer_norm.default")
def _layer_norm(im: AtenImporter, node: Any) -> tuple[str, None, None]:
    x, normalized, w, b, eps = (im.arg(i) for i in range(5))
    if len(normalized) != 1:
        raise ModelError(f"layer norm over {len(normalized)} dimensions; tileplan normalises the last one")
    ins = [x] + [t for t in (w, b) if t is not None]
    if w is None and b is not None:
        raise ModelError("layer norm with a bias but no weight is not supported")
    return im.op("layernorm", ins, {"eps": float(eps)}, "layernorm"), None, None


@aten("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(im: AtenImporter, node: Any) -> tuple[str, None, None]:
    x, w, b, mean, var = (im.arg(i) for i in range(5))
    if w is None or b is None:
        raise ModelError("batch norm without affine weight and bias is not supported")
    return im.op("batchnorm", [x, w, b, mean, var], {"eps": float(im.arg(6, 1e-5))}, "batchnorm"), None, None


@aten("aten._native_batch_norm_legit_functional.default", "aten._native_batch_norm_legit.default")
def _batch_norm_training_mode(im: AtenImporter, node: Any) -> tuple[str | None, ...]:
    """Batch norm of a module exported in training mode (`model.eval()` forgotten):
    the batch's statistics normalise the input, per channel as the running statistics
    do (the same memory); the updated running statistics, buffer mutations of the
    program, are not planned."""
    x, w, b, mean, var = (im.arg(i) for i in range(5))
    if w is None or b is None:
        raise ModelError("batch norm without affine weight and bias is not supported")
    out = im.op("batchnorm", [x, w, b, mean, var], {"eps": float(im.arg(7, 1e-5))}, "batchnorm")
    return (out, None, None, None, None) if "functional" in str(node.target) else (out, None, None)


@aten("aten.native_dropout.default")
def _dropout_training_mode(im: AtenImporter, node: Any) -> tuple[str, None]:
    """Dropout of a module exported in training mode: its input (an inference plan;
    Poplar regenerates a dropout mask from the seed and keeps none, docs/notes/TRAINING-NOTES.md);
    the mask, which only a backward pass reads, is not made."""
    return im.arg(0), None


@aten("aten.native_group_norm.default")
def _group_norm(im: AtenImporter, node: Any) -> tuple[str, None, None]:
    x, w, b = im.arg(0), im.arg(1), im.arg(2)
    groups, eps = int(im.arg(6)), float(im.arg(7, 1e-5))
    if w is None and b is not None:
        raise ModelError("group norm with a bias but no weight is not supported")
    ins = [x] + [t for t in (w, b) if t is not None]
    return im.op("groupnorm", ins, {"groups": groups, "eps": eps}, "groupnorm"), None, None


@aten("aten._softmax.default", "aten._log_softmax.default")
def _softmax(im: AtenImporter, node: Any) -> str:
    kind = "log_softmax" if "log" in str(node.target) else "softmax"
    return im.op(kind, [im.arg(0)], {"axis": int(im.arg(1))})


# reductions ---------------------------------------------------------------------------

def _reduce(kind: str) -> Handler:
    def handle(im: AtenImporter, node: Any) -> Any:
        x = im.arg(0)
        dims = im.kwarg("dim", 1)
        keep = bool(im.kwarg("keepdim", 2, False))
        if isinstance(dims, int):
            dims = (dims,)
        axes = None if dims is None or len(dims) == 0 else tuple(int(d) for d in dims)
        attrs: dict[str, Any] = {"axes": axes, "keepdims": keep}
        dtype = "int" if kind.startswith("arg") else ("bool" if kind in ("reduce_any", "reduce_all") else None)
        out = im.op(kind, [x], attrs, dtype=dtype)
        if str(node.target) == "aten.max.dim" or str(node.target) == "aten.min.dim":
            index = im.op("argmax" if "max" in str(node.target) else "argmin", [x], attrs, dtype="int")
            return out, index
        return out
    return handle


for _name, _kind in {"sum.dim_IntList": "reduce_sum", "sum.default": "reduce_sum", "mean.dim": "reduce_mean",
                     "mean.default": "reduce_mean", "amax.default": "reduce_max", "amin.default": "reduce_min",
                     "max.dim": "reduce_max", "min.dim": "reduce_min", "any.dim": "reduce_any",
                     "any.dims": "reduce_any", "any.default": "reduce_any", "all.dim": "reduce_all",
                     "argmax.default": "argmax", "argmin.default": "argmin", "prod.dim_int": "reduce_prod",
                     "var.correction": "reduce_var", "var.dim": "reduce_var"}.items():
    ATEN[f"aten.{_name}"] = _reduce(_kind)


@aten("aten.linalg_vector_norm.default")
def _vector_norm(im: AtenImporter, node: Any) -> str:
    """`torch.linalg.vector_norm` (weight norm's `_weight_norm_interface` decomposes to
    it, ConvNeXt-V2's GRN calls it): ord 2 `reduce_l2`, ord 1 `reduce_l1`."""
    order = float(im.kwarg("ord", 1, 2))
    kinds = {2.0: "reduce_l2", 1.0: "reduce_l1"}
    if order not in kinds:
        raise ModelError(f"vector norm of order {order}: tileplan plans orders 1 and 2")
    dims = im.kwarg("dim", 2)
    if isinstance(dims, int):
        dims = (dims,)
    axes = None if not dims else tuple(int(d) for d in dims)
    return im.op(kinds[order], [im.arg(0)], {"axes": axes, "keepdims": bool(im.kwarg("keepdim", 3, False))},
                 "norm", dtype="float")


@aten("aten.topk.default")
def _topk(im: AtenImporter, node: Any) -> tuple[str, str]:
    x, k = im.arg(0), int(im.arg(1))
    attrs = {"k": k, "axis": int(im.kwarg("dim", 2, -1)), "largest": bool(im.kwarg("largest", 3, True))}
    return (im.op("topk", [x], {**attrs, "indices": False}, "topk", dtype=im.b.dtypes[x]),
            im.op("topk", [x], {**attrs, "indices": True}, "topk_indices", dtype="int"))


@aten("aten.sort.default", "aten.sort.stable")
def _sort(im: AtenImporter, node: Any) -> tuple[str, str]:
    x = im.arg(0)
    stable = str(node.target) == "aten.sort.stable"
    attrs = {"axis": int(im.kwarg("dim", None if stable else 1, -1)),
             "descending": bool(im.kwarg("descending", None if stable else 2, False))}
    return (im.op("sort", [x], {**attrs, "indices": False}, "sort", dtype=im.b.dtypes[x]),
            im.op("sort", [x], {**attrs, "indices": True}, "sort_indices", dtype="int"))


@aten("aten.histc.default")
def _histc(im: AtenImporter, node: Any) -> str:
    attrs = {"bins": int(im.kwarg("bins", 1, 100)), "min": float(im.kwarg("min", 2, 0)),
             "max": float(im.kwarg("max", 3, 0))}
    return im.op("histogram", [im.arg(0)], attrs, "histc", dtype=im.out_dtype())


@aten("aten.clamp.Tensor", "aten.clamp_min.Tensor", "aten.clamp_max.Tensor")
def _clamp_tensor(im: AtenImporter, node: Any) -> str:
    """Bounds that are tensors (PhiMoE's router): `maximum` by the lower, `minimum`
    by the upper, each a broadcast elementwise operation."""
    target = str(node.target)
    if "clamp_min" in target:
        lo, hi = im.kwarg("min", 1), None
    elif "clamp_max" in target:
        lo, hi = None, im.kwarg("max", 1)
    else:
        lo, hi = im.kwarg("min", 1), im.kwarg("max", 2)
    x = im.arg(0)
    for kind, bound in (("maximum", lo), ("minimum", hi)):
        if isinstance(bound, str):
            x = im.op(kind, [x, bound], what="clamp")
        elif bound is not None:
            x = im.op("clamp", [x], {"min" if kind == "maximum" else "max": float(bound)})
    return x


@aten("aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default", "aten.scatter.reduce",
      "aten.scatter.value_reduce")
def _scatter(im: AtenImporter, node: Any) -> str:
    """`x.scatter(dim, index, src or value)`: values written at `index` along `dim`
    (a scalar value broadcast to the index's shape first), added with `scatter_add`
    or a reduction."""
    x, dim, index, src = im.arg(0), int(im.arg(1)), im.arg(2), im.arg(3)
    if not isinstance(src, str):
        src = im.op("fill", [], {"shape": im.shape(index), "value": float(src)}, "scatter_value",
                    dtype=im.b.dtypes[x])
    accumulate = "add" in str(node.target) or im.kwarg("reduce", 4) is not None
    return im.op("scatter", [x, index, src], {"axes": (dim,), "accumulate": accumulate}, "scatter",
                 dtype=im.out_dtype())


@aten("aten.slice_scatter.default")
def _slice_scatter(im: AtenImporter, node: Any) -> str:
    """`src` written over a slice of `x` (Funnel's and ViT-MAE's in-place writes,
    functionalised): the parts of `x` before and after the slice and `src`
    concatenated along `dim`, a new tensor of `x`'s shape."""
    x, src = im.arg(0), im.arg(1)
    shape = im.shape(x)
    dim = int(im.kwarg("dim", 2, 0)) % len(shape)
    start, end, step = im.kwarg("start", 3), im.kwarg("end", 4), int(im.kwarg("step", 5, 1))
    n = shape[dim]
    start = 0 if start is None else max(0, min(n, int(start) + n if int(start) < 0 else int(start)))
    end = n if end is None else max(start, min(n, int(end) + n if int(end) < 0 else int(end)))
    if step != 1:
        raise ModelError(f"slice_scatter with step {step}: only contiguous slices (step 1) are supported")
    parts = []
    if start > 0:
        parts.append(im.op("slice", [x], {"axis": dim, "start": 0, "end": start, "step": 1}, "slice_scatter"))
    parts.append(src)
    if end < n:
        parts.append(im.op("slice", [x], {"axis": dim, "start": end, "end": n, "step": 1}, "slice_scatter"))
    if len(parts) == 1:
        return im.op("alias", [src])
    return im.op("concat", parts, {"axis": dim}, "slice_scatter")


@aten("aten.index_put.default", "aten.index_put_.default")
def _index_put(im: AtenImporter, node: Any) -> str:
    x, indices, values = im.arg(0), im.arg(1), im.arg(2)
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    attrs = {"axes": tuple(d for d, _ in given), "accumulate": bool(im.kwarg("accumulate", 3, False))}
    return im.op("scatter", [x, *(i for _, i in given), values], attrs, "index_put", dtype=im.out_dtype())


@aten("aten.index_copy.default")
def _index_copy(im: AtenImporter, node: Any) -> str:
    """`index_copy(x, dim, index, source)`: the rows of `source` written at `index` along
    `dim` (transformers' StaticLayer.update writes a step's keys into a static cache so):
    a scatter along that one axis."""
    x, dim, index, source = im.arg(0), int(im.arg(1)), im.arg(2), im.arg(3)
    attrs = {"axes": (dim % len(im.shape(x)),), "accumulate": False}
    return im.op("scatter", [x, index, source], attrs, "index_copy", dtype=im.out_dtype())


@aten("transformers.grouped_mm_fallback.default", "aten._grouped_mm.default")
def _grouped_mm(im: AtenImporter, node: Any) -> str:
    """A mixture of experts' products (transformers' `grouped_mm`): rows sorted by
    expert times each expert's weights, with the experts' row offsets."""
    x, w, offsets = im.arg(0), im.arg(1), im.kwarg("offs", 2)
    if not isinstance(offsets, str):
        raise ModelError("a grouped matmul without its offsets tensor is not supported")
    return im.op("grouped_matmul", [x, w, offsets], what="experts")


@aten("aten.cumsum.default")
def _cumsum(im: AtenImporter, node: Any) -> str:
    return im.op("cumsum", [im.arg(0)], {"axis": int(im.arg(1))}, dtype=im.out_dtype())


# lookups --------------------------------------------------------------------------------

@aten("aten.embedding.default")
def _embedding(im: AtenImporter, node: Any) -> str:
    return im.op("gather", [im.arg(0), im.arg(1)], {"axis": 0}, "embedding")


@aten("aten.index_select.default")
def _index_select(im: AtenImporter, node: Any) -> str:
    return im.op("gather", [im.arg(0), im.arg(2)], {"axis": int(im.arg(1))}, "index_select")


@aten("aten.gather.default")
def _gather(im: AtenImporter, node: Any) -> str:
    return im.op("gather_elements", [im.arg(0), im.arg(2)], {"axis": int(im.arg(1))}, "gather")


@aten("aten.index.Tensor")
def _index(im: AtenImporter, node: Any) -> str:
    x, indices = im.arg(0), im.arg(1)
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) == 1 and len(im.shape(given[0][1])) == 1:
        d, idx = given[0]
        return im.op("gather", [x, idx], {"axis": d}, "index")
    return im.op("index", [x, *(i for _, i in given)], {"axes": tuple(d for d, _ in given)}, "index")


# pooling --------------------------------------------------------------------------------

@aten("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default", "aten.avg_pool2d.default",
      "aten.max_pool1d.default", "aten.avg_pool1d.default")
def _pool(im: AtenImporter, node: Any) -> Any:
    x = im.arg(0)
    kernel = tuple(int(k) for k in im.arg(1))
    stride = tuple(int(s) for s in (im.arg(2) or kernel))
    padding = tuple(int(p) for p in im.arg(3, (0,) * len(kernel)))
    if len(padding) == 1:
        padding = padding * len(kernel)
    kind = "maxpool" if "max" in str(node.target) else "avgpool"
    ceil = bool(im.arg(5, False)) if kind == "maxpool" else bool(im.arg(4, False))
    y = im.op(kind, [x], {"kernel": kernel, "strides": stride, "pads": (*padding, *padding), "ceil_mode": ceil})
    return (y, None) if "with_indices" in str(node.target) else y


@aten("aten.upsample_nearest1d.vec", "aten.upsample_nearest2d.vec", "aten.upsample_nearest3d.vec",
      "aten._upsample_nearest_exact1d.vec", "aten._upsample_nearest_exact2d.vec", "aten.upsample_linear1d.vec",
      "aten.upsample_bilinear2d.vec", "aten.upsample_trilinear3d.vec", "aten.upsample_bicubic2d.vec",
      "aten._upsample_bilinear2d_aa.vec", "aten.upsample_nearest2d.default", "aten.upsample_bilinear2d.default")
def _upsample(im: AtenImporter, node: Any) -> str:
    target = str(node.target)
    mode = "nearest" if "nearest" in target else "cubic" if "bicubic" in target else "linear"
    attrs: dict[str, Any] = {"size": im.out_shape()[2:], "mode": mode}
    if "nearest_exact" in target:  # F.interpolate(mode="nearest-exact"): pixel centres
        attrs["exact"] = True
    if target.endswith("_aa.vec"):  # antialias=True
        attrs["antialias"] = True
    return im.op("resize", [im.arg(0)], attrs, "resize")


@aten("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool1d.default",
      "aten.adaptive_avg_pool1d.default")
def _adaptive(im: AtenImporter, node: Any) -> str:
    return im.op("adaptive_avgpool", [im.arg(0)], {"output_size": tuple(int(s) for s in im.arg(1))})


# tensors made on the device ---------------------------------------------------------------

@aten("aten.full.default", "aten.full_like.default", "aten.zeros.default", "aten.ones.default",
      "aten.zeros_like.default", "aten.ones_like.default", "aten.arange.start_step", "aten.arange.default",
      "aten.arange.start", "aten.scalar_tensor.default", "aten.empty.memory_format", "aten.empty_like.default",
      "aten.new_zeros.default", "aten.new_ones.default", "aten.new_full.default", "aten.new_empty.default",
      "aten.empty_strided.default", "aten.empty_permuted.default", "aten.rand.default", "aten.randn.default",
      "aten.tril.default",
      "aten.triu.default")
def _fill(im: AtenImporter, node: Any) -> str:
    target = str(node.target)
    if target in ("aten.tril.default", "aten.triu.default"):  # a mask made from a tensor: same shape, new data
        return im.op("identity", [im.arg(0)], what=target.split(".")[1], dtype=im.out_dtype())
    # the one value every element takes; None where the elements differ (an arange, a
    # random draw) or are undefined (empty)
    value: float | None = None
    if "full" in target:
        value = float(im.kwarg("fill_value", 1 if "like" in target or target.startswith("aten.full.") else 2, 0.0))
    elif target.startswith("aten.scalar_tensor"):
        value = float(im.arg(0))
    elif "ones" in target:
        value = 1.0
    elif "zeros" in target:
        value = 0.0
    return im.op("fill", [], {"shape": im.out_shape(), "value": value}, target.split(".")[1], dtype=im.out_dtype())


@aten("aten.lift_fresh.default")
def _lift(im: AtenImporter, node: Any) -> str:
    return im.arg(0)
