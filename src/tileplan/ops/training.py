"""What a training program runs besides the forward and backward passes: gradient
accumulation, the weight update, a pipeline's stash and its copies between IPUs.

Memory rules (TRAINING-NOTES.md sections 1 and 2; each lowering's docstring states
its scratch; `tests/test_gradients.py` checks them):

* `accumulate(G, A)`: A += G, in place in the accumulator A, which rests in the
  gradient's layout (PopART's AccumulateOpx clones the gradient's mapping).
* `optimizer_update(W, G, *state)`: the weight update of one weight, after its
  gradient (or, with accumulation, after the last micro-batch). Its state tensors
  (first and second moment, velocity) rest in the gradient's layout; state kept off
  chip is loaded for the update only; Adam and LAMB make one weight-sized updater
  term (PopART's AdamUpdaterOp), in the weight's precision when the weight decay
  reaches it, else the first moment's (the operation's output precision, which the
  importer decides: `TrainingSetup.updater`).
* `stash(X, S)`, `restore(S)`: a pipeline stage's stash, `depth` copies of X laid
  out as X (`popops::createSliceableTensorFromSlice`), written after the forward pass
  and read back in place (PopART's RestoreInplace) by the backward pass.
* `send(X)`, `receive()`: a tensor crossing to another IPU of the pipeline.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from tileplan.errors import ModelError, TilingError
from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, FragmentBuilder, Operand, StepKind, ValueKind
from tileplan.model.ir import Operation
from tileplan.model.layout import Axis, AxisTiling, Layout, TensorTiling
from tileplan.model.precision import Precision
from tileplan.ops.base import (
    REQUIRED, InputInfo, OpPlan, Shape, activation_layout, copy_if_needed, flag, register, shard_elements,
    spread_layout, write_result,
)

#: the optimizers `optimizer_update` knows, and the state tensors each keeps besides
#: the weight (PopART's decompositions; TRAINING-NOTES.md section 1.3)
OPTIMIZER_STATE = {"sgd": (), "sgd-momentum": ("velocity",), "adam": ("first moment", "second moment"),
                   "adamw": ("first moment", "second moment"), "lamb": ("first moment", "second moment")}
#: optimizers whose update makes a weight-sized updater term (PopART's AdamUpdaterOp)
UPDATER_TERM = ("adam", "adamw", "lamb")


# Gradient accumulation ---------------------------------------------------------------

def accumulate_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    g, a = ins
    if math.prod(g) != math.prod(a):
        raise ModelError(f"accumulate needs a gradient and an accumulator of one size, found {list(g)} and {list(a)}")
    return a


def plan_accumulate(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    layout = activation_layout(k, ins[0])
    return OpPlan(wanted=(None, layout), rest=(None, layout), output=layout, detail=None)


def lower_accumulate(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                     dies: Sequence[bool]) -> Fragment:
    """A += G: one `Optimizer { op: Accumulate }` step writing in place in A (which
    rests in G's layout: no exchange, no scratch; its output is A, a view); G is
    re-laid out first if A rests elsewhere."""
    b = FragmentBuilder(operands)
    a = b.operand(1)
    g = copy_if_needed(k, b, op, b.operand(0), b.layout(a))
    out = b.new(ValueKind.VIEW, b.shape(a), b.precision(a), b.layout(a), of=a)  # A itself, written in place
    b.step(StepKind.OPTIMIZER, "Optimizer { op: Accumulate, in_place: true }", (g, a), (out,))
    return b.done(out)


# The weight update ---------------------------------------------------------------------

def update_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    w, g, *state = ins
    if math.prod(w) != math.prod(g):
        raise ModelError(f"optimizer_update needs a weight and a gradient of one size, found {list(w)} and {list(g)}")
    if attrs["optimizer"] not in OPTIMIZER_STATE:
        raise ModelError(f"unknown optimizer {attrs['optimizer']!r}; expected one of {', '.join(OPTIMIZER_STATE)}")
    return w


def plan_update(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    """The state (inputs 2..) rests in the gradient's layout, as PopART creates it like
    the gradient; with replicated tensor sharding it is a flat shard spread compactly."""
    layout = activation_layout(k, ins[1])
    sharded = int(op.int_attr("shards", 1)) > 1
    rest = tuple(None if sharded else layout for _ in ins[2:])
    return OpPlan(wanted=(None, None, *(None for _ in ins[2:])), rest=(None, None, *rest), output=layout, detail=None)


def lower_update(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                 dies: Sequence[bool]) -> Fragment:
    """One `Optimizer { op: <optimizer>Update }` step: the state updated in place, W
    updated in place. New values, each live at this step only: the state kept off
    chip, loaded (attribute `offchip`: one precision per state tensor, each a shard of
    ceil(W's elements on the tile / shards) elements; labels `<state> loaded`), and,
    for Adam and LAMB, the updater term x (W's shape, the operation's output precision:
    W's, or the first moment's when no weight decay reaches W; in the gradient's
    layout: the operation's output). Scratch, per tile, W's largest shard e: for Adam
    and LAMB with an FP16 gradient and both moments FP32, the gradient cast to F32 (e x
    4 B; PopART's `gradCast`, not made when a moment is FP16); with replicas
    (`replicas` > 1), the gradient's reduction across them (e x gradient bytes: the
    AllReduce, or ReduceScatter and AllGather with sharding). An optimizer without an
    updater term writes W in place: its output is a view of W."""
    b = FragmentBuilder(operands)
    w, g = b.operand(0), b.operand(1)
    state = [b.operand(i) for i in range(2, len(operands))]
    kind = str(op.attr("optimizer"))
    shards = max(1, op.int_attr("shards", 1))
    e = shard_elements(k, b.layout(w), b.shape(w), b.label(w, op.name))
    layout = b.layout(g)
    loaded = []
    names = OPTIMIZER_STATE[kind]
    for label, text in zip(names, _texts(op.attr("offchip"))):
        p = Precision.from_text(text)
        elements = math.prod(op.output_shape) if shards == 1 else -(-math.prod(op.output_shape) // shards)
        flat = spread_layout(k, p) if shards > 1 else layout
        loaded.append(b.new(ValueKind.RESULT, (elements,) if shards > 1 else op.output_shape, p, flat,
                            label=f"{label} loaded"))
    scratch = 0
    state_precisions = [b.precision(s) for s in state] + [b.precision(v) for v in loaded]
    if kind in UPDATER_TERM and b.precision(g).bytes < 4 and state_precisions and \
            all(p.bytes == 4 for p in state_precisions):  # PopART's gradCast (adamdecompose.cpp)
        scratch += e * 4
    if int(op.int_attr("replicas", 1)) > 1:
        scratch += e * b.precision(g).bytes
    if kind in UPDATER_TERM:
        out = write_result(b, op, layout)
    else:
        out = b.new(ValueKind.VIEW, b.shape(w), b.precision(w), b.layout(w), of=w)
    head = kind.replace("-", " ").title().replace(" ", "")
    fields = [f"op: {head}Update", f"state: {len(names)}", f"offchip: {flag(bool(loaded))}"]
    exchange = bool(loaded) or int(op.int_attr("replicas", 1)) > 1
    if exchange:
        fields.append("exchange: true")
    b.step(StepKind.OPTIMIZER, f"Optimizer {{ {', '.join(fields)} }}", (w, g, *state, *loaded), (out, *loaded),
           {"standard": scratch}, exchange=exchange)
    return b.done(out)


def _texts(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
        raise ModelError(f"offchip must be a tuple of precisions, found {value!r}")
    return value


# The stash of a pipeline stage -----------------------------------------------------------

def stacked_layout(layout: Layout, rank: int) -> Layout | None:
    """`layout` of a tensor of `rank` dimensions, on the same tensor with one leading
    dimension more, every tile holding the same elements of each slice (the slices
    stacked): a linear tiling or axes counted from the end carry over, axes counted
    from the start move by one. None when an axis would not."""
    axes = []
    for a in layout.tiling.axes:
        if a.axis.is_linear or a.axis.kind == "FromEnd":
            axes.append(a)
        elif a.axis.index is not None and a.axis.dim(rank) >= 0:
            axes.append(AxisTiling(Axis.from_start(a.axis.index + 1), a.partitions, a.padding_groups, a.block_size,
                                   a.padding_multiple, a.shard_padding_multiple, a.padding, a.tile_stride))
        else:
            return None
    return Layout(layout.order, TensorTiling(layout.tiling.tile_count, layout.tiling.replicas, tuple(axes)),
                  layout.memory_class)


def stash_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, s = ins
    if s[1:] != x:
        raise ModelError(f"stash of {list(x)} needs a stash [depth, {', '.join(map(str, x))}], found {list(s)}")
    return s


def plan_stash(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    x, s = ins
    rest = None if x.layout is None else stacked_layout(x.layout, len(x.shape))
    return OpPlan(wanted=(None, None), rest=(None, rest), output=spread_layout(k, op.output_precision), detail=None)


def lower_stash(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                dies: Sequence[bool]) -> Fragment:
    """X into its slot of the stash S: one `Copy { mapping: Stash }` step, local (no
    exchange) when S is X's layout stacked, else exchanging; no scratch. The output is
    a view of S."""
    b = FragmentBuilder(operands)
    x, s = b.operand(0), b.operand(1)
    local = stacked_layout(b.layout(x), len(b.shape(x))) == b.layout(s)
    out = b.new(ValueKind.VIEW, b.shape(s), b.precision(s), b.layout(s), of=s)
    b.step(StepKind.COPY, f"Copy {{ mapping: Stash, reuse_local: {flag(local)} }}", (x, s), (out,),
           exchange=not local)
    return b.done(out)


def restore_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    (s,) = ins
    if len(s) < 2:
        raise ModelError(f"restore needs a stash [depth, ...], found {list(s)}")
    return s[1:]


def lower_restore(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                  dies: Sequence[bool]) -> Fragment:
    """One slot of the stash, read in place (PopART's RestoreInplace): a view of S (a
    `View` step: no program, no scratch) in S's layout when that holds the slot's
    shape, else spread."""
    b = FragmentBuilder(operands)
    s = b.operand(0)
    layout = b.layout(s)
    try:
        k.shards(layout, op.output_shape, op.name)
    except TilingError:
        layout = spread_layout(k, b.precision(s))
    out = b.new(ValueKind.VIEW, op.output_shape, b.precision(s), layout, of=s)
    b.step(StepKind.VIEW, "View { op: Restore }", (s,), (out,))
    return b.done(out)


def plan_as_is(k: Kernel, op: Operation, ins: list[InputInfo]) -> OpPlan[None]:
    return OpPlan(wanted=tuple(None for _ in ins), rest=tuple(None for _ in ins),
                  output=spread_layout(k, op.output_precision), detail=None)


def lower_send(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
               dies: Sequence[bool]) -> Fragment:
    """X sent to another IPU: one exchanging `Copy { mapping: Send }` step reading X
    (which lives to here); its output is a view of X. No scratch."""
    b = FragmentBuilder(operands)
    x = b.operand(0)
    out = b.new(ValueKind.VIEW, b.shape(x), b.precision(x), b.layout(x), of=x)
    b.step(StepKind.COPY, "Copy { mapping: Send, reuse_local: false }", (x,), (out,), exchange=True)
    return b.done(out)


def receive_shape(ins: list[Shape], attrs: Mapping[str, Any]) -> Shape:
    shape = tuple(int(d) for d in attrs["shape"])
    if not shape or any(d < 1 for d in shape):
        raise ModelError(f"receive needs a shape of dimensions >= 1, found {list(shape)}")
    return shape


def lower_receive(k: Kernel, op: Operation, plan: OpPlan[None], operands: Sequence[Sequence[Operand]],
                  dies: Sequence[bool]) -> Fragment:
    """A tensor received from another IPU: one exchanging `Copy { mapping: Receive }`
    step writing a new value, spread. No scratch."""
    b = FragmentBuilder(operands)
    out = write_result(b, op, plan.output)
    b.step(StepKind.COPY, "Copy { mapping: Receive, reuse_local: false }", (), (out,), exchange=True)
    return b.done(out)


register("accumulate", inputs=(2, 2), shape=accumulate_shape, plan=plan_accumulate, lower=lower_accumulate)
register("optimizer_update", inputs=(2, 4), attrs={"optimizer": REQUIRED, "offchip": None, "shards": 1,
                                                   "replicas": 1},
         shape=update_shape, plan=plan_update, lower=lower_update)
register("stash", inputs=(2, 2), shape=stash_shape, plan=plan_stash, lower=lower_stash)
register("restore", inputs=(1, 1), shape=restore_shape, plan=plan_as_is, lower=lower_restore, view=True)
register("send", inputs=(1, 1), shape=lambda ins, attrs: ins[0], plan=plan_as_is, lower=lower_send, view=True)
register("receive", inputs=(0, 0), attrs={"shape": REQUIRED}, shape=receive_shape, plan=plan_as_is,
         lower=lower_receive)
