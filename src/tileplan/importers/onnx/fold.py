"""Folding: what an ONNX graph computes from constants and shapes, computed at import
time with NumPy (`known` values), so shape arithmetic costs no device memory.

`FOLDERS` maps an ONNX op type to a rule: the input values (None for an absent
optional input) and the node's attributes in, the output values out. A rule raises
`NotFolded` when the result would be too large (more than `FOLD_LIMIT` elements) or
it has no rule for the attributes; the node is then mapped onto registry operators.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tileplan.errors import ModelError

#: a value computed at import time with more elements than this is not folded
FOLD_LIMIT = 1 << 22
#: embedded initializers with at most this many elements are read as known values
KNOWN_LIMIT = 1 << 16

Folder = Callable[[list[Any], dict[str, Any]], list[np.ndarray]]

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


class NotFolded(Exception):
    """A value that is not computed at import time (too large, or no rule)."""


def _check_size(shape: Sequence[int]) -> None:
    if math.prod(int(d) for d in shape) > FOLD_LIMIT:
        raise NotFolded()


def _fold_binary(op: str) -> Folder:
    def rule(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
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


def _fold_unary(op: str) -> Folder:
    def rule(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
        out = _NUMPY_UNARY[op](v[0])
        return [out.astype(v[0].dtype) if out.dtype != np.bool_ and op != "Reciprocal" else out]
    return rule


def _axes(v: list[Any], attrs: dict[str, Any], index: int = 1) -> list[int] | None:
    if len(v) > index and v[index] is not None:
        return [int(a) for a in np.asarray(v[index]).reshape(-1)]
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    return None


def _fold_cast(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    from onnx import helper

    return [v[0].astype(helper.tensor_dtype_to_np_dtype(int(attrs["to"])))]


def _fold_gather(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    data, idx = v
    _check_size(data.shape[:max(attrs.get("axis", 0), 0)] + idx.shape)
    return [np.take(data, idx.astype(np.int64), axis=int(attrs.get("axis", 0)))]


def _fold_slice(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    data = v[0]
    starts, ends, axes, steps = slice_args(v, attrs, len(data.shape))
    index = [slice(None)] * data.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    return [data[tuple(index)]]


def slice_args(v: list[Any], attrs: dict[str, Any], rank: int) -> tuple[list[int], ...]:
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


def _fold_concat(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    parts = [x for x in v if x is not None]
    return [np.concatenate([np.atleast_1d(x) for x in parts], axis=int(attrs["axis"]))]


def _fold_unsqueeze(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = v[0]
    axes = _axes(v, attrs) or []
    rank = x.ndim + len(axes)
    shape = list(x.shape)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        shape.insert(a, 1)
    return [x.reshape(shape)]


def _fold_squeeze(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = v[0]
    axes = _axes(v, attrs)
    if axes is None:
        return [np.squeeze(x)]
    return [np.squeeze(x, axis=tuple(a + x.ndim if a < 0 else a for a in axes))]


def reshape_target(shape: Sequence[int], target: Sequence[int], allowzero: bool) -> tuple[int, ...]:
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


def _fold_reshape(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, target = v
    return [x.reshape(reshape_target(x.shape, [int(d) for d in target], bool(attrs.get("allowzero", 0))))]


def _fold_expand(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, shape = v
    out = np.broadcast_shapes(x.shape, tuple(int(d) for d in shape))
    _check_size(out)
    return [np.broadcast_to(x, out).copy()]


def _fold_constant_of_shape(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    from onnx import numpy_helper

    shape = tuple(int(d) for d in np.asarray(v[0]).reshape(-1))
    _check_size(shape)
    value = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else np.zeros(1, np.float32)
    return [np.full(shape, value[0], dtype=value.dtype)]


def _fold_range(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    start, limit, delta = (np.asarray(x).reshape(()) for x in v)
    if delta == 0:
        raise ModelError("Range with delta 0")
    _check_size((max(math.ceil((float(limit) - float(start)) / float(delta)), 0),))
    return [np.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)]


def _fold_where(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    c, x, y = v
    _check_size(np.broadcast_shapes(c.shape, x.shape, y.shape))
    return [np.where(c, x, y)]


def _fold_reduce(fn: Callable[..., np.ndarray]) -> Folder:
    def rule(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
        x = v[0]
        axes = _axes(v, attrs)
        keep = bool(attrs.get("keepdims", 1))
        if axes is None and attrs.get("noop_with_empty_axes"):
            return [x]
        ax = None if axes is None or not axes else tuple(a + x.ndim if a < 0 else a for a in axes)
        return [np.asarray(fn(x, axis=ax, keepdims=keep)).astype(x.dtype)]
    return rule


def _fold_transpose(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    perm = attrs.get("perm")
    return [np.transpose(v[0], perm)]


def _fold_flatten(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = v[0]
    axis = int(attrs.get("axis", 1))
    axis = axis + x.ndim if axis < 0 else axis
    return [x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))]


def _fold_trilu(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    k = int(np.asarray(v[1]).reshape(())) if len(v) > 1 and v[1] is not None else 0
    return [np.triu(v[0], k) if attrs.get("upper", 1) else np.tril(v[0], k)]


def _fold_tile(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    reps = [int(r) for r in np.asarray(v[1]).reshape(-1)]
    _check_size([a * r for a, r in zip(v[0].shape, reps)])
    return [np.tile(v[0], reps)]


def _fold_cumsum(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    if attrs.get("exclusive") or attrs.get("reverse"):
        raise NotFolded()
    return [np.cumsum(v[0], axis=int(np.asarray(v[1]).reshape(()))).astype(v[0].dtype)]


def _fold_gather_elements(v: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.take_along_axis(v[0], v[1].astype(np.int64), axis=int(attrs.get("axis", 0)))]


FOLDERS: dict[str, Folder] = {
    **{op: _fold_binary(op) for op in (*_NUMPY_BINARY, "Div", "Mod")},
    **{op: _fold_unary(op) for op in _NUMPY_UNARY},
    "Identity": lambda v, a: [v[0]], "Cast": _fold_cast, "Gather": _fold_gather, "Slice": _fold_slice,
    "Concat": _fold_concat, "Unsqueeze": _fold_unsqueeze, "Squeeze": _fold_squeeze, "Reshape": _fold_reshape,
    "Expand": _fold_expand, "ConstantOfShape": _fold_constant_of_shape, "Range": _fold_range,
    "Where": _fold_where, "Transpose": _fold_transpose, "Flatten": _fold_flatten, "Trilu": _fold_trilu,
    "Tile": _fold_tile, "CumSum": _fold_cumsum, "GatherElements": _fold_gather_elements,
    "ReduceProd": _fold_reduce(np.prod), "ReduceSum": _fold_reduce(np.sum), "ReduceMax": _fold_reduce(np.max),
    "ReduceMin": _fold_reduce(np.min), "ReduceMean": _fold_reduce(np.mean),
    "Dropout": lambda v, a: [v[0]], "CastLike": lambda v, a: [v[0].astype(v[1].dtype)],
}
