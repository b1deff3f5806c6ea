"""The ATen table's views and data movement (`tileplan.importers.aten`): reshapes,
permutes, expands, repeats, slices, selects, strided windows, concatenations, splits,
unbinds and pads, each onto the registry's view and movement operators."""

from __future__ import annotations

import math
from typing import Any

from tileplan.errors import ModelError
from tileplan.importers.aten_table import AtenImporter, aten


@aten("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.unsqueeze.default",
      "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.flatten.using_ints",
      "aten.view_copy.default")
def _view(im: AtenImporter, node: Any) -> str:
    return im.reshape(im.arg(0), im.out_shape())


@aten("aten.permute.default", "aten.transpose.int", "aten.t.default", "aten.permute_copy.default")
def _permute(im: AtenImporter, node: Any) -> str:
    x = im.arg(0)
    rank = len(im.shape(x))
    target = str(node.target)
    if "permute" in target:
        perm = tuple(int(p) % rank for p in im.arg(1))
    else:
        a, b = (0, 1) if target == "aten.t.default" else (int(im.arg(1)) % rank, int(im.arg(2)) % rank)
        p = list(range(rank))
        p[a], p[b] = p[b], p[a]
        perm = tuple(p)
    if perm == tuple(range(rank)):
        return x
    return im.op("transpose", [x], {"perm": perm}, "transpose")


@aten("aten.expand.default", "aten.expand_copy.default")
def _expand(im: AtenImporter, node: Any) -> str:
    x = im.arg(0)
    shape = im.out_shape()
    if shape == im.shape(x):
        return x
    if len(shape) > len(im.shape(x)):
        x = im.reshape(x, (1,) * (len(shape) - len(im.shape(x))) + im.shape(x))
    return im.op("expand", [x], {"shape": shape})


@aten("aten.repeat.default")
def _repeat(im: AtenImporter, node: Any) -> str:
    x = im.arg(0)
    shape = im.out_shape()
    # repeat copies data like an expand of a [1, ...]-shaped view, then a reshape
    reps = tuple(int(r) for r in im.arg(1))
    base = (1,) * (len(reps) - len(im.shape(x))) + im.shape(x)
    inter = im.reshape(x, tuple(d for pair in zip((1,) * len(base), base) for d in pair))
    grown = im.op("expand", [inter], {"shape": tuple(d for pair in zip(reps, base) for d in pair)}, "repeat")
    return im.reshape(grown, shape)


@aten("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(im: AtenImporter, node: Any) -> str:
    x = im.arg(0)
    dim = int(im.arg(1, 0))
    start, end, step = im.arg(2), im.arg(3), im.arg(4, 1)
    extent = im.shape(x)[dim]
    # Python's rule for the bounds: a negative start or end counts from the end
    # (DETR's `y_embed[:, -1:, :]`), and both are clipped to the extent
    start, end, step = slice(None if start is None else int(start), None if end is None else int(end),
                             int(step)).indices(extent)
    if (start, end, step) == (0, extent, 1):
        return x
    return im.op("slice", [x], {"axis": dim, "start": start, "end": max(start, end), "step": step})


@aten("aten.select.int")
def _select(im: AtenImporter, node: Any) -> str:
    x, dim, index = im.arg(0), int(im.arg(1)), int(im.arg(2))
    extent = im.shape(x)[dim]
    index %= extent
    y = im.op("slice", [x], {"axis": dim, "start": index, "end": index + 1, "step": 1}, "select")
    return im.reshape(y, im.out_shape())


@aten("aten.as_strided.default", "aten.as_strided_copy.default")
def _as_strided(im: AtenImporter, node: Any) -> str:
    """A strided view of as many elements as its input is a reshape (the same bytes,
    perhaps in another order: Swin's pooled output); of fewer, a slice of the
    flattened input; of more (overlapping windows) it is refused."""
    x = im.arg(0)
    shape = im.out_shape()
    have, want = math.prod(im.shape(x)), math.prod(shape)
    if want == have:
        return im.reshape(x, shape)
    if want > have:
        raise ModelError(f"as_strided of {list(im.shape(x))} to {list(shape)} reads elements more than once "
                         "(overlapping windows): not supported")
    flat = im.reshape(x, (have,))
    part = im.op("slice", [flat], {"axis": 0, "start": int(im.kwarg("storage_offset", 3, 0) or 0) % have,
                                   "end": None, "step": 1}, "as_strided")
    if math.prod(im.shape(part)) > want:
        part = im.op("slice", [part], {"axis": 0, "start": 0, "end": want, "step": 1}, "as_strided")
    return im.reshape(part, shape)


@aten("aten.cat.default", "aten.concat.default")
def _cat(im: AtenImporter, node: Any) -> str:
    xs = [x for x in im.arg(0) if isinstance(x, str)]  # empty tensors (None or EMPTY) add nothing
    dim = int(im.arg(1, 0))
    if len(xs) == 1:
        return xs[0]
    return im.op("concat", xs, {"axis": dim}, "concat")


@aten("aten.split_with_sizes.default", "aten.split.Tensor", "aten.split_with_sizes_copy.default")
def _split(im: AtenImporter, node: Any) -> tuple[str, ...]:
    x = im.arg(0)
    dim = int(im.arg(2, 0))
    extent = im.shape(x)[dim]
    sizes = im.arg(1)
    if isinstance(sizes, int):
        sizes = [min(sizes, extent - s) for s in range(0, extent, sizes)]
    out, start = [], 0
    for size in sizes:
        out.append(im.op("slice", [x], {"axis": dim, "start": start, "end": start + int(size), "step": 1}, "split"))
        start += int(size)
    return tuple(out)


@aten("aten.unbind.int")
def _unbind(im: AtenImporter, node: Any) -> tuple[str, ...]:
    x = im.arg(0)
    dim = int(im.arg(1, 0)) % len(im.shape(x))
    shape = im.shape(x)
    rest = shape[:dim] + shape[dim + 1:]
    return tuple(im.reshape(im.op("slice", [x], {"axis": dim, "start": i, "end": i + 1, "step": 1}, "unbind"), rest)
                 for i in range(shape[dim]))


@aten("aten.constant_pad_nd.default")
def _pad(im: AtenImporter, node: Any) -> str:
    x = im.arg(0)
    pad = [int(p) for p in im.arg(1)]
    rank = len(im.shape(x))
    begins, ends = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):  # torch pads the last dimension first
        begins[rank - 1 - k], ends[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    crops = crop_slices(im.shape(x), begins, ends, f"padding {pad}")
    for d, start, end in crops:
        x = im.op("slice", [x], {"axis": d, "start": start, "end": end, "step": 1}, "crop")
    begins, ends = [max(0, b) for b in begins], [max(0, e) for e in ends]
    if max(begins + ends) == 0:
        return x if crops else im.op("alias", [x])
    return im.op("pad", [x], {"pads": (*begins, *ends), "value": float(im.arg(2, 0.0))})


def crop_slices(shape: tuple[int, ...], begins: list[int], ends: list[int], what: str) -> list[tuple[int, int, int]]:
    """(axis, start, end) of the slice each negative pad asks for (a negative pad
    crops: RWKV's time shift), to take before padding by the non-negative ones; a
    one-line error when a dimension would keep nothing. Shared by the ATen and ONNX
    pads."""
    out = []
    for d, (b, e) in enumerate(zip(begins, ends)):
        if b < 0 or e < 0:
            start, end = max(0, -b), shape[d] - max(0, -e)
            if end <= start:
                raise ModelError(f"{what} crops every element of dimension {d}")
            out.append((d, start, end))
    return out
