"""Mapping ONNX's data movement onto registry operators: Reshape, Flatten, Unsqueeze,
Squeeze, Transpose, Slice, Split, Concat, Expand, Tile, Gather, Pad, CumSum,
GatherElements, ConstantOfShape and Range.

Their shape operands (a Reshape's target, an Unsqueeze's axes, a Slice's bounds) are
values the importer knows: constants, initializers, shape arithmetic it folded. A
file saved without its external data holds none of an initializer's values; then
the output's static shape the file states (`value_info`, which the dynamo exporter
writes for every value) decides the operation (`OnnxImporter.stated_shape`), and only
when the file states none is it a one-line error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tileplan.errors import ModelError
from tileplan.importers.aten_views import crop_slices
from tileplan.importers.onnx.common import Mapper, OnnxImporter, Shape, broadcast, fallback, known_scalar
from tileplan.importers.onnx.fold import reshape_target, slice_args
from tileplan.importers.onnx.load import np_class


def _view(imp: OnnxImporter, node: Any, x: str, target: Shape, module: str | None) -> list[str | None]:
    """`x` reshaped to `target` (the ONNX shape, rank 0 allowed)."""
    imp.set_shape(node.output[0], target)
    return [imp.emit("reshape", [imp.read(x, module)], {"shape": tuple(target) or (1,)}, module, fallback(node))]


def _map_reshape(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    values = imp.ints(ins[1])
    if values is None:
        target = imp.stated_shape(node, "Reshape shape")
        if math.prod(target) != math.prod(imp.shape(ins[0])):
            raise ModelError(f"Reshape of {list(imp.shape(ins[0]))} to {list(target)} (the file's value_info): "
                             "the element counts differ")
    else:
        target = reshape_target(imp.shape(ins[0]), values, bool(attrs.get("allowzero")))
    return _view(imp, node, ins[0], target, module)


def _map_flatten(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    axis = int(attrs.get("axis", 1))
    axis = axis + len(s) if axis < 0 else axis
    return _view(imp, node, ins[0], (math.prod(s[:axis]), math.prod(s[axis:])), module)


def _map_unsqueeze(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    s = list(imp.shape(ins[0]))
    axes = imp.ints(ins[1]) if len(ins) > 1 and ins[1] else [int(a) for a in attrs["axes"]]
    if axes is None:
        return _view(imp, node, ins[0], imp.stated_shape(node, "Unsqueeze axes"), module)
    rank = len(s) + len(axes)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        s.insert(a, 1)
    return _view(imp, node, ins[0], tuple(s), module)


def _map_squeeze(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                 module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    if len(ins) > 1 and ins[1]:
        axes = imp.ints(ins[1])
        if axes is None:
            return _view(imp, node, ins[0], imp.stated_shape(node, "Squeeze axes"), module)
    elif "axes" in attrs:
        axes = [int(a) for a in attrs["axes"]]
    else:
        axes = [d for d, n in enumerate(s) if n == 1]
    drop = {a + len(s) if a < 0 else a for a in axes}
    return _view(imp, node, ins[0], tuple(n for d, n in enumerate(s) if d not in drop), module)


def _map_transpose(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    rank = len(imp.shape(ins[0]))
    perm = tuple(int(p) for p in attrs.get("perm", range(rank - 1, -1, -1)))
    return [imp.emit("transpose", [imp.read(ins[0], module)], {"perm": perm}, module, fallback(node))]


def _slices_of(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any]) -> list[tuple[int, range]]:
    """(axis, kept indices) of each axis a Slice cuts: from its bounds, or when they
    are not known from the stated output shape (the first indices of each cut axis)."""
    s = imp.shape(ins[0])
    values = [imp.known.get(i) if i else None for i in ins]
    if any(i and i not in imp.known for i in ins[1:]):
        target = imp.stated_shape(node, "Slice bounds")
        if len(target) != len(s) or any(t > n for t, n in zip(target, s)):
            raise ModelError(f"Slice of {list(s)} to {list(target)} (the file's value_info): not a slice")
        return [(d, range(t)) for d, (t, n) in enumerate(zip(target, s)) if t != n]
    out = []
    for start, end, axis, step in zip(*slice_args(values, attrs, len(s))):
        if step < 1:
            raise ModelError(f"Slice with step {step} along axis {axis}: tileplan slices forwards only")
        out.append((axis, range(*slice(start, end, step).indices(s[axis]))))
    return out


def _map_slice(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    s = list(imp.shape(ins[0]))
    cuts = _slices_of(imp, node, ins, attrs)
    if any(not len(r) for _, r in cuts):  # no elements (a rotary pass-through of none): a Concat drops it
        for axis, r in cuts:
            s[axis] = len(r)
        imp.known[node.output[0]] = np.zeros(s, dtype=np.float32)
        return [None]
    out = imp.read(ins[0], module)
    for axis, r in cuts:
        if len(r) == s[axis]:
            continue
        out = imp.emit("slice", [out], {"axis": axis, "start": r.start, "end": r.stop, "step": r.step}, module,
                       fallback(node))
        s[axis] = len(r)
    if out == imp.names.get(ins[0]):
        out = imp.emit("alias", [out], None, module, fallback(node))
    return [out]


def _map_split(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    axis = int(attrs.get("axis", 0))
    axis = axis + len(s) if axis < 0 else axis
    n = len(node.output)
    sizes = imp.ints(ins[1]) if len(ins) > 1 and ins[1] else None
    if len(ins) > 1 and ins[1] and sizes is None:
        sizes = [imp.stated_shape(node, "Split sizes", k)[axis] for k in range(n)]
    elif sizes is None and "split" in attrs:
        sizes = [int(v) for v in attrs["split"]]
    elif sizes is None:
        chunk = -(-s[axis] // int(attrs.get("num_outputs", n)))
        sizes = [min(chunk, s[axis] - k * chunk) for k in range(n)]
    if sum(sizes) != s[axis] or len(sizes) != n:
        raise ModelError(f"Split of {s[axis]} into {sizes} for {n} outputs: the sizes do not add up")
    x = imp.read(ins[0], module)
    outputs = {o.name for o in imp.model.graph.output}
    outs: list[str | None] = []
    start = 0
    for o, size in zip(node.output, sizes):
        if o and imp.readers[o] or o in outputs:
            outs.append(imp.emit("slice", [x], {"axis": axis, "start": start, "end": start + size, "step": 1},
                                 module, o))
        else:
            outs.append(None)
        start += size
    return outs


def _map_concat(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    parts = [i for i in ins if i and math.prod(imp.shape(i)) > 0]
    rank = len(imp.shape(parts[0]))
    return [imp.emit("concat", [imp.read(i, module) for i in parts], {"axis": int(attrs["axis"]) % rank}, module,
                     fallback(node))]


def _map_expand(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    shape = imp.ints(ins[1])
    target = broadcast(s, shape) if shape is not None else imp.stated_shape(node, "Expand shape")
    if broadcast(s, target) != target:
        raise ModelError(f"Expand of {list(s)} to {list(target)}: not a broadcast")
    x = imp.read(ins[0], module)
    imp.set_shape(node.output[0], target)
    if target == s:
        return [imp.emit("alias", [x], None, module, fallback(node))]
    return [imp.emit("expand", [x], {"shape": target}, module, fallback(node))]


def _map_tile(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
              module: str | None) -> list[str | None]:
    s = imp.shape(ins[0])
    reps = imp.ints(ins[1])
    if reps is None:
        target = imp.stated_shape(node, "Tile repeats")
        if len(target) != len(s) or any(t % n for t, n in zip(target, s)):
            raise ModelError(f"Tile of {list(s)} to {list(target)} (the file's value_info): not a whole repeat")
        reps = [t // n for t, n in zip(target, s)]
    if len(reps) != len(s) or any(r < 1 for r in reps):
        raise ModelError(f"Tile of {list(s)} by {list(reps)}: expected one repeat >= 1 per dimension")
    x = imp.read(ins[0], module)
    if all(r == 1 for r in reps):
        return [imp.emit("alias", [x], None, module, fallback(node))]
    imp.set_shape(node.output[0], tuple(n * r for n, r in zip(s, reps)))
    return [imp.emit("tile", [x], {"repeats": tuple(reps)}, module, fallback(node))]


def _map_gather(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    data, idx = ins
    s = imp.shape(data)
    axis = int(attrs.get("axis", 0)) % len(s)
    fb = fallback(node)
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


def _map_pad(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
             module: str | None) -> list[str | None]:
    mode = attrs.get("mode", "constant")
    s = imp.shape(ins[0])
    rank = len(s)
    pads = imp.ints(ins[1]) if len(ins) > 1 and ins[1] else [int(p) for p in attrs["pads"]]
    axes = imp.ints(ins[3]) if len(ins) > 3 and ins[3] else list(range(rank))
    if pads is None or axes is None:  # padded at the end by what the stated shape adds
        target = imp.stated_shape(node, "Pad pads")
        pads, axes = [0] * rank + [t - n for t, n in zip(target, s)], list(range(rank))
    # the pad value costs nothing: one not known (external data absent) is planned as 0
    value = known_scalar(imp, ins[2]) if len(ins) > 2 and ins[2] else 0.0
    full = [0] * (2 * rank)
    for k, a in enumerate(a % rank for a in axes):
        full[a], full[a + rank] = pads[k], pads[k + len(axes)]
    x = imp.read(ins[0], module)
    crops = crop_slices(s, full[:rank], full[rank:], f"Pad with pads {full}")
    for d, start, end in crops:
        x = imp.emit("slice", [x], {"axis": d, "start": start, "end": end, "step": 1}, module, fallback(node))
    full = [max(0, p) for p in full]
    if max(full, default=0) == 0:
        return [x if crops else imp.emit("alias", [x], None, module, fallback(node))]
    return [imp.emit("pad", [x], {"pads": tuple(full), "value": value or 0.0, "mode": mode}, module, fallback(node))]


def _map_cumsum(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                module: str | None) -> list[str | None]:
    axes = imp.ints(ins[1])
    if axes is None:  # the output's shape does not say: the last axis (position ids along the sequence)
        imp.assumed["CumSum axis the last"] += 1
        axes = [-1]
    return [imp.emit("cumsum", [imp.read(ins[0], module)], {"axis": axes[0]}, module, fallback(node))]


def _map_gather_nd(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                   module: str | None) -> list[str | None]:
    data, idx = imp.read(ins[0], module, "weight"), imp.read(ins[1], module, "indices")
    return [imp.emit("gather_nd", [data, idx], {"batch_dims": int(attrs.get("batch_dims", 0))}, module,
                     fallback(node), dtype=imp.b.dtypes[data])]


def _map_gather_elements(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                         module: str | None) -> list[str | None]:
    data, idx = (imp.read(i, module) for i in ins)
    return [imp.emit("gather_elements", [data, idx], {"axis": int(attrs.get("axis", 0))}, module, fallback(node))]


def _fill(imp: OnnxImporter, node: Any, shape: Shape, value: Any, dtype: str, module: str | None) -> list[str | None]:
    imp.set_shape(node.output[0], shape)
    return [imp.b.op("fill", [], {"shape": tuple(shape) or (1,), "value": value},
                     name=imp.op_name(module, "fill", fallback(node)), module=module, dtype=dtype)]


def _map_constant_of_shape(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
                           module: str | None) -> list[str | None]:
    from onnx import numpy_helper

    values = imp.ints(ins[0])
    shape = tuple(values) if values is not None else imp.stated_shape(node, "ConstantOfShape shape")
    value = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else np.zeros(1, np.float32)
    return _fill(imp, node, shape, value[0].item(), np_class(value), module)


def _map_range(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    """A Range whose bounds the importer does not know (else it is folded): the
    numbers made on the device, of the stated shape."""
    shape = imp.stated_shape(node, "Range bounds")
    dtype = imp.b.dtypes[imp.names[ins[0]]] if ins[0] in imp.names else (
        np_class(imp.known[ins[0]]) if ins[0] in imp.known else "int")
    return _fill(imp, node, shape, 0, dtype, module)


VIEW_MAPPERS: dict[str, Mapper] = {
    "Reshape": _map_reshape, "Flatten": _map_flatten, "Unsqueeze": _map_unsqueeze, "Squeeze": _map_squeeze,
    "Transpose": _map_transpose, "Slice": _map_slice, "Split": _map_split, "Concat": _map_concat,
    "Expand": _map_expand, "Tile": _map_tile, "Gather": _map_gather, "Pad": _map_pad, "CumSum": _map_cumsum,
    "GatherElements": _map_gather_elements, "GatherND": _map_gather_nd, "ConstantOfShape": _map_constant_of_shape,
    "Range": _map_range,
}
