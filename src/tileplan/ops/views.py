"""Views and data movement: `reshape`, `transpose`, `slice`, `alias` (clone,
contiguous, identity), `expand`, `tile`, `concat`, `pad` and `fill`.

A view costs nothing when the layout allows it: its output shares the input's storage
(one `View` step, no exchange, no scratch) with the input's layout carried to the new
shape. It allows it when every tiled dimension survives whole: a reshape that only
merges or splits untiled dimensions (or adds and drops ones of size 1), a transpose
of a dimension tiling (the tiled dimensions move, the tiles keep their elements), any
reshape of a linear tiling (the element order is unchanged), a slice along an untiled
dimension. Otherwise it is a real re-layout: a `Copy` into a linear spread, which
exchanges. `expand`, `concat` and `pad` write a new spread value.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError, TilingError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, StepKind, ValueKind
from tileplan.model.ir import Operation
from tileplan.model.layout import Axis, AxisTiling, Layout, TensorTiling
from tileplan.model.tiling import shards_of
from tileplan.ops.base import (
    REQUIRED, InputInfo, OpPlan, Shape, axis_of, broadcast_shapes, flag, register, spread_layout, write_result,
)


# Carrying a layout over a view --------------------------------------------------------

def _tiled_dims(layout: Layout, rank: int) -> list[int] | None:
    """The dimension each axis tiles; None for a linear tiling."""
    if any(a.axis.is_linear for a in layout.tiling.axes):
        return None
    return [a.axis.dim(rank) for a in layout.tiling.axes]


def _moved(layout: Layout, new_dims: Sequence[int], rank: int) -> Layout:
    axes = []
    for axis, d in zip(layout.tiling.axes, new_dims):
        moved = Axis.from_end(rank - d) if axis.axis.kind == "FromEnd" else Axis.from_start(d)
        axes.append(AxisTiling(moved, axis.partitions, axis.padding_groups, axis.block_size, axis.padding_multiple,
                               axis.shard_padding_multiple, axis.padding, axis.tile_stride))
    tiling = TensorTiling(layout.tiling.tile_count, layout.tiling.replicas, tuple(axes))
    return Layout(layout.order, tiling, layout.memory_class)


def reshape_groups(old: Shape, new: Shape) -> list[tuple[list[int], list[int]]]:
    """Consecutive dimensions of `old` and `new` with equal products, size-1 dimensions
    alone. Worked example: [2, 3, 4] -> [6, 1, 4] gives ([0, 1], [0]), ([], [1]),
    ([2], [2])."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(old) or j < len(new):
        if i < len(old) and old[i] == 1 and (j >= len(new) or new[j] != 1):
            groups.append(([i], []))
            i += 1
            continue
        if j < len(new) and new[j] == 1 and (i >= len(old) or old[i] != 1):
            groups.append(([], [j]))
            j += 1
            continue
        gi, gj = [i], [j]
        po, pn = old[i], new[j]
        i, j = i + 1, j + 1
        while po != pn:
            if po < pn:
                gi.append(i)
                po *= old[i]
                i += 1
            else:
                gj.append(j)
                pn *= new[j]
                j += 1
        groups.append((gi, gj))
    return groups


def reshape_layout(layout: Layout, old: Shape, new: Shape) -> Layout | None:
    """The input's layout on the reshaped tensor, or None when a tiled dimension does
    not survive whole."""
    dims = _tiled_dims(layout, len(old))
    if dims is None:
        return layout
    target = {}
    for gi, gj in reshape_groups(old, new):
        for d in gi:
            target[d] = gj[0] if len(gi) == 1 and len(gj) == 1 and old[d] == new[gj[0]] else None
    new_dims = [n for n in (target.get(d) for d in dims) if n is not None]
    if len(new_dims) != len(dims):
        return None
    return _checked(layout, _moved(layout, new_dims, len(new)), old, new)


def permute_layout(layout: Layout, shape: Shape, perm: Sequence[int]) -> Layout | None:
    """The input's layout on the transposed tensor (the tiles keep their elements), or
    None for a linear tiling whose element order the transpose changes."""
    new_shape = tuple(shape[p] for p in perm)
    dims = _tiled_dims(layout, len(shape))
    if dims is None:
        kept = [p for p in perm if shape[p] != 1]
        return layout if kept == sorted(kept) else None
    return _checked(layout, _moved(layout, [list(perm).index(d) for d in dims], len(shape)), shape, new_shape)


def _checked(old_layout: Layout, layout: Layout, old: Shape, new: Shape) -> Layout | None:
    try:
        same = shards_of(old_layout, old).largest_elements == shards_of(layout, new).largest_elements
    except TilingError:
        return None
    return layout if same else None


# Shape rules -------------------------------------------------------------------------

def reshape_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    shape = tuple(int(d) for d in attrs["shape"])
    if any(d < 1 for d in shape) or math.prod(shape) != math.prod(x):
        raise ModelError(f"reshape of {list(x)} ({math.prod(x)} elements) to {list(shape)}: the element counts "
                         "differ or a dimension is < 1")
    return shape


def transpose_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    perm = tuple(int(p) for p in attrs["perm"])
    if sorted(perm) != list(range(len(x))):
        raise ModelError(f"transpose permutation {list(perm)} is not a permutation of {len(x)} dimensions")
    return tuple(x[p] for p in perm)


def slice_bounds(extent: int, start: int, end: int, step: int) -> range:
    if step < 1:
        raise ModelError(f"slice step must be >= 1, found {step}")
    return range(*slice(start, end, step).indices(extent))


def slice_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    axis = axis_of(int(attrs["axis"]), len(x))
    end = x[axis] if attrs["end"] is None else int(attrs["end"])
    kept = len(slice_bounds(x[axis], int(attrs["start"]), end, int(attrs["step"])))
    if kept < 1:
        raise ModelError(f"slice [{attrs['start']}:{attrs['end']}:{attrs['step']}] of dimension {axis} "
                         f"({x[axis]}) is empty")
    return (*x[:axis], kept, *x[axis + 1:])


def expand_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    target = tuple(int(d) for d in attrs["shape"])
    target = tuple(x[len(x) - len(target) + i] if d == -1 and len(x) - len(target) + i >= 0 else d
                   for i, d in enumerate(target))
    out = broadcast_shapes(x, target)
    if out != target:
        raise ModelError(f"expand of {list(x)} to {list(target)}: not a broadcast")
    return out


def tile_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    reps = tuple(int(r) for r in attrs["repeats"])
    if len(reps) != len(x) or any(r < 1 for r in reps):
        raise ModelError(f"tile of {list(x)} by {list(reps)}: expected one repeat >= 1 per dimension")
    return tuple(n * r for n, r in zip(x, reps))


def concat_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    first = ins[0]
    axis = axis_of(int(attrs["axis"]), len(first))
    for s in ins[1:]:
        if len(s) != len(first) or any(a != b for d, (a, b) in enumerate(zip(s, first)) if d != axis):
            raise ModelError(f"concat along {axis} of {' and '.join(str(list(s)) for s in ins)}: other "
                             "dimensions differ")
    return (*first[:axis], sum(s[axis] for s in ins), *first[axis + 1:])


def pad_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (x,) = ins
    pads = tuple(int(p) for p in attrs["pads"])
    if len(pads) != 2 * len(x):
        raise ModelError(f"pad needs 2 x rank = {2 * len(x)} pads (all begins, then all ends), found {len(pads)}")
    out = tuple(n + pads[d] + pads[d + len(x)] for d, n in enumerate(x))
    if any(d < 1 for d in out):
        raise ModelError(f"pad of {list(x)} by {list(pads)} leaves a dimension < 1")
    return out


def fill_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    shape = tuple(int(d) for d in attrs["shape"])
    if not shape or any(d < 1 for d in shape):
        raise ModelError(f"fill needs a shape of dimensions >= 1, found {list(shape)}")
    return shape


# Plans and lowerings -----------------------------------------------------------------

def plan_as_is(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    """Inputs read where they are; the output spread (a view decides at lowering)."""
    return OpPlan(wanted=tuple(None for _ in ins), rest=tuple(None for _ in ins),
                  output=spread_layout(k, op.output_precision), detail=None)


VIEW_NAMES = {"reshape": "Reshape", "transpose": "Transpose", "slice": "Slice", "alias": "Alias"}


def carried_layout(op: Operation, layout: Layout, shape: Shape) -> Layout | None:
    """The layout of the view of a value in `layout` of `shape`, or None when it does
    not carry over."""
    if op.kind == "alias":
        return layout
    if op.kind == "reshape":
        return reshape_layout(layout, shape, op.output_shape)
    if op.kind == "transpose":
        return permute_layout(layout, shape, op.ints_attr("perm"))
    if op.kind == "slice":
        dims = _tiled_dims(layout, len(shape))
        axis = axis_of(op.int_attr("axis"), len(shape))
        if dims is None or axis in dims:
            return None
        return layout  # the sliced dimension is untiled: each tile keeps part of its elements
    raise AssertionError(op.kind)


def lower_view(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
               dies: Sequence[bool]) -> Fragment:
    """A `View` step sharing the input's storage when the layout carries over, else a
    `Copy` into a linear spread (exchanging). Neither has scratch."""
    b = FragmentBuilder(operands)
    x = b.operand(0)
    kind = VIEW_NAMES[op.kind]
    layout = carried_layout(op, b.layout(x), b.shape(x))
    if layout is not None:
        try:
            k.shards(layout, op.output_shape, op.name)
        except TilingError:
            layout = None
    if layout is not None:
        out = b.new(ValueKind.VIEW, op.output_shape, op.output_precision, layout, of=x)
        b.step(StepKind.VIEW, f"View {{ op: {kind} }}", (x,), (out,))
        return b.done(out)
    out = write_result(b, op, plan.output)
    b.step(StepKind.COPY, f"Copy {{ mapping: {kind}, reuse_local: false }}", (x,), (out,), exchange=True)
    return b.done(out)


MOVEMENT = {"expand": StepKind.BROADCAST, "tile": StepKind.TILE, "concat": StepKind.CONCAT, "pad": StepKind.PAD,
            "fill": StepKind.FILL}


def lower_movement(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                   dies: Sequence[bool]) -> Fragment:
    """One step writing a new spread value from its inputs (`Broadcast`, `Tile`,
    `Concat`, `Pad`: exchanging; each tile receives its output elements straight into
    the output) or from nothing (`Fill`). No scratch."""
    b = FragmentBuilder(operands)
    reads = tuple(b.operand(i) for i in range(len(operands)))
    out = write_result(b, op, plan.output)
    kind = MOVEMENT[op.kind]
    b.step(kind, f"{kind.value} {{ inputs: {len(reads)}, exchange: {flag(bool(reads))} }}", reads, (out,),
           exchange=bool(reads))
    return b.done(out)


register("reshape", inputs=(1, 1), attrs={"shape": REQUIRED}, shape=reshape_shape, plan=plan_as_is, lower=lower_view,
         view=True)
register("transpose", inputs=(1, 1), attrs={"perm": REQUIRED}, shape=transpose_shape, plan=plan_as_is,
         lower=lower_view, view=True)
register("slice", inputs=(1, 1), attrs={"axis": REQUIRED, "start": 0, "end": None, "step": 1}, shape=slice_shape,
         plan=plan_as_is, lower=lower_view, view=True)
register("alias", inputs=(1, 1), shape=lambda ins, attrs: ins[0], plan=plan_as_is, lower=lower_view, view=True)
register("expand", inputs=(1, 1), attrs={"shape": REQUIRED}, shape=expand_shape, plan=plan_as_is,
         lower=lower_movement)
register("tile", inputs=(1, 1), attrs={"repeats": REQUIRED}, shape=tile_shape, plan=plan_as_is, lower=lower_movement)
register("concat", inputs=(1, 64), attrs={"axis": REQUIRED}, shape=concat_shape, plan=plan_as_is,
         lower=lower_movement)
register("pad", inputs=(1, 1), attrs={"pads": REQUIRED, "value": 0.0, "mode": "constant"}, shape=pad_shape,
         plan=plan_as_is, lower=lower_movement)
register("fill", inputs=(0, 0), attrs={"shape": REQUIRED, "value": 0.0}, shape=fill_shape, plan=plan_as_is,
         lower=lower_movement)
