"""Convolutions and matmuls split over the tiles as poplin plans them.

poplin plans a convolution, and a matmul as a 1-D convolution (`getConvParams` in
poplibs lib/poplin/MatMul.cpp: [G, M, K] x [G, K, N] is batch M, field 1, kernel 1,
K input and N output channels, G groups), by enumerating partitions and keeping the
fastest whose temporary bytes per tile fit a bound (lib/poplin/ConvPlan.cpp
`createPlan`, `choosePlan`; lib/poplin/ConvModel.cpp `constructModel`, `addEstimates`;
CONV-NOTES.md sections 1 and 2). This module is that search, with poplin's estimate of
its AMP vertices' cycles and a simpler one of the exchange:

* A partition splits, in parallel, the batch, each output field dimension, the input
  channels, the output channels and the groups (`ConvPartition`); their product is
  the machine's tile count (a split may exceed its dimension: those tiles get
  nothing, and the ceilings below count the padding). One serial split divides the
  output channels or the input channels into loop iterations (poplin allows one kind
  at a time: `min(inChan.serial, outChan.serial) == 1`).
* Per tile and per serial iteration: output positions `batch_t x prod(field_t)`, the
  input window those need (`(field_t - 1) x stride + (kernel - 1) x dilation + 1` per
  dimension), input channels `in_t` and output channels `out_t` rounded up to the
  AMP's grains (`input_channels`, `output_channels` of the machine's geometry:
  channel padding is temporary too), groups `group_t`.
* Temporary bytes, poplin's estimate (`addConvTempMemoryEstimate`,
  `addInPlaceEstimate`, `addReduceCycleEstimate`, summed and max'd as `addEstimates`
  does): the input window and the weights block in the multiply precision, the
  partials in the accumulate precision, plus, with a serial input-channel split, the
  output block accumulated in place across iterations. A parallel input-channel
  split's reduction (its first stage receives as many partials as the tile made) is
  max'd with these, which hold the partials already, so it adds nothing to the
  estimate; what the step really holds then (`partials_scratch`) can be more. An
  expansion's transforms (below) are max'd in, doubled (`totalTransformTempBytes`:
  the copies before and after are both live), except the input's with a serial
  output-channel split, held across the loop and added
  (`broadcastInputBeforeLoopTempBytes`). A fully connected pass with a serial split
  adds a share of the weights, rearranged before they are sliced
  (`addRearrangeBeforeSliceEstimate`; `fully_connected`: PopART plans an inference
  matmul of weights as `FC_INFERENCE_FWD`, willow/src/popx/devicex.cpp).
* Cycles: the AMP vertex's own estimate of the tile's work (`ampcycles.partial_calc_cycles`,
  PopLibs' `getConvPartial1x1SupervisorCycleEstimate` or the nx1 vertex's, ported in
  `kernel/ampcycles.py`: per output position 4 cycles a worker for half activations,
  8 for float, over the six workers' shares; the weights loaded at 8 B a cycle, the
  default without `use128BitConvUnitLoad`; per conv group, input and output channel
  group), plus
  the bytes each tile receives at 4 a cycle (the input window; the weights block when
  the batch or field is split, as the weights are then broadcast; with a parallel
  input-channel split, the partials reduced across it) and `ITERATION_CYCLES`, times
  the serial iterations; a serial split of the output channels receives the input
  once, before its loop (`broadcastInputBeforeLoop`), and reduces each iteration's
  partials in it; a serial input-channel split adds each iteration's partials to the
  accumulated ones.
* The choice (`runPlanner`, `createPlan`): the fewest cycles with temporary bytes at
  most the bound `availableMemoryProportion x tile bytes`; ties to fewer bytes. When
  no partition fits, poplin's do-while doubles the bound and tries again while the
  bound tried was below twice the tile's bytes (at 0.6: 1.2, then 2.4 tiles), still
  the fewest cycles, then takes the fewest cycles of all (`fastest_within`). The
  chosen plan says whether it kept to the first bound (`within_cap`).

poplin's `expandDims` widens the input channels: a field dimension's kernel
positions become input channels (a ViT patch embedding, stride = kernel, becomes its
[729, 588] matmul exactly); the expanded input is a copy held during the step (its
share per tile), each output position then reads its own column, and the transform
costs its shares' exchange and copy (`convsearch.transform_costs`). The sets tried
are the power set of the dimensions an expansion changes (`convsearch.expansions`).

Depthwise convolutions combine groups into one AMP group (`combineConvGroupsFactor`,
tried when a group has one input channel, or two in F16; poplibs ConvPlan.cpp
`getCombineConvGroupCandidates`): `F = min(groups, input grain / input channels)`
groups become one of F times the channels, the weights padded off the block
diagonal; other narrow groups pad their channels to the grain.

Worked example (CONV-NOTES.md section 3): ResNet-50's 3x3 64->64 convolution at 56 x
56, batch 90, F16 on 1472 tiles. Batch 90 over 46 partitions and 4 x 8 over the field
give 2 images x 14 x 7 positions a tile with every channel: a window 2 x 16 x 9 x 64
x 2 B = 36,864 B, weights 9 x 64 x 64 x 2 B = 73,728 B broadcast to every tile,
partials 196 x 64 x 4 B = 50,176 B: 160,768 B a tile, under the 383,385 B bound of
proportion 0.6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from typing import TYPE_CHECKING

import numpy as np

from tileplan.errors import TileplanError
from tileplan.kernel import ampcycles
from tileplan.kernel.convsearch import (
    EXCHANGE_BYTES_PER_CYCLE, divisor_splits, expansions, fastest_within, transform_costs,
)
from tileplan.kernel.ampcycles import AmpVertex
from tileplan.model.machine import AmpGeometry
from tileplan.model.tiling import ceil_div

if TYPE_CHECKING:
    from tileplan.kernel.gemm import GemmPartition
    from tileplan.model.layout import Layout

#: the serial splits tried (poplin caps them by the channel grains)
SERIAL_SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
#: cycles each serial iteration costs beyond its work: a sync, the exchange's setup and
#: the vertices' start (poplin's estimate adds such per-iteration terms; tileplan's figure)
ITERATION_CYCLES = 2000


class ConvPlanningError(TileplanError):
    """A convolution or matmul with no legal partition."""


@dataclass(frozen=True, slots=True)
class ConvShape:
    """One convolution: `batch`, the output `field` and `kernel` per spatial dimension
    with `stride` and `dilation`, `in_chans` and `out_chans` per group, `groups`. A
    matmul [.., M, K] x [K, N] is `ConvShape.matmul(M, K, N)`: field (1,), kernel (1,)."""

    batch: int
    field: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    in_chans: int
    out_chans: int
    groups: int = 1

    def __post_init__(self) -> None:
        dims = len(self.field)
        assert dims == len(self.kernel) == len(self.stride) == len(self.dilation), self
        assert min(self.batch, self.in_chans, self.out_chans, self.groups, *self.field, *self.kernel) >= 1, self

    @staticmethod
    def matmul(m: int, k: int, n: int, groups: int = 1) -> "ConvShape":
        return ConvShape(m, (1,), (1,), (1,), (1,), k, n, groups)

    @property
    def macs(self) -> int:
        return self.batch * math.prod(self.field) * math.prod(self.kernel) * self.in_chans * self.out_chans * \
            self.groups


@dataclass(frozen=True, slots=True)
class ConvPartition:
    """A chosen plan: the parallel splits (their product the tile count), one serial
    split (`serial`, over `serial_dim` "out" or "in"), the per-tile sizes of one
    serial iteration in elements (channels rounded up to the AMP's grains), the
    temporary bytes and cycles, and whether it kept to the first bound. `combine`:
    groups combined into one AMP group (depthwise). `expanded`: field dimensions folded
    into the input channels (their input elements then counted by output position)."""

    shape: ConvShape
    batch_split: int
    field_split: tuple[int, ...]
    in_split: int
    out_split: int
    group_split: int
    serial: int
    serial_dim: str
    combine: int
    input_elements: int
    weight_elements: int
    partial_elements: int
    output_elements: int
    temp_bytes: int
    cycles: int
    within_cap: bool
    #: the field dimensions whose kernel positions became input channels (poplin's
    #: `expandDims`), and the bytes per tile of that expanded input copy
    expanded: tuple[int, ...] = ()
    transform_bytes: int = 0

    @property
    def tiles(self) -> int:
        return self.batch_split * math.prod(self.field_split) * self.in_split * self.out_split * self.group_split

    @property
    def broadcasts_weights(self) -> bool:
        """Whether several tiles need the same weights (the batch or field is split):
        the weights are then received into a temporary on each; else each tile holds
        its block where the weights were created."""
        return self.batch_split * math.prod(self.field_split) > 1


def _ceil(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    return -(-np.asarray(a) // np.asarray(b))


def plan_conv(shape: ConvShape, tile_count: int, geometry: AmpGeometry, multiply_bytes: int, partial_bytes: int,
              tile_bytes: int, proportion: float | None, name: str = "conv",
              fully_connected: bool = False) -> ConvPartition:
    """The plan poplin would choose (see the module docstring); memoized.
    `fully_connected`: a fully connected pass (an inference matmul of weights), whose
    serial plans count the weights' rearrangement before slicing."""
    try:
        return _plan(shape, tile_count, geometry, multiply_bytes, partial_bytes, tile_bytes, proportion,
                     fully_connected)
    except ConvPlanningError as e:
        raise ConvPlanningError(e.detail, name) from None


@lru_cache(maxsize=4096)
def _plan(shape: ConvShape, tile_count: int, geometry: AmpGeometry, multiply_bytes: int, partial_bytes: int,
          tile_bytes: int, proportion: float | None, fully_connected: bool = False) -> ConvPartition:
    ig = geometry.input_channels
    combine = 1
    # combineConvGroupsFactor: one input channel a group (FP32), one or two (F16)
    if shape.groups > 1 and shape.in_chans <= (2 if ig >= 16 else 1):
        combine = min(shape.groups, max(1, ig // shape.in_chans))
    options = [_candidates(shape, e, combine, tile_count, geometry, multiply_bytes, partial_bytes, fully_connected)
               for e in expansions(shape.kernel, shape.stride, shape.dilation)]
    temps = np.concatenate([t for o in options for t in o.temps])
    cycles = np.concatenate([c for o in options for c in o.cycles])
    cap = None if proportion is None else int(proportion * tile_bytes)
    chosen = fastest_within(temps, cycles, cap, tile_bytes)
    for o in options:
        size = sum(len(t) for t in o.temps)
        if chosen < size:
            return o.partition(chosen, cap)
        chosen -= size
    raise AssertionError("the chosen candidate is one of the options'")


@dataclass
class _Options:
    """The candidates of one expansion set: per (serial dimension, serial split) block,
    the per-split arrays; `partition` makes the chosen one a `ConvPartition`."""

    shape: ConvShape
    expanded: tuple[int, ...]
    combine: int
    splits: np.ndarray
    positions: np.ndarray
    out_t_all: np.ndarray
    group_t: np.ndarray
    transform: np.ndarray
    blocks: list[tuple]
    temps: list[np.ndarray]
    cycles: list[np.ndarray]

    def partition(self, chosen: int, cap: int | None) -> ConvPartition:
        block, row = divmod(chosen, len(self.splits))
        dim, serial, inputs, weights, partials = self.blocks[block]
        temp, cyc = int(self.temps[block][row]), int(self.cycles[block][row])
        dims = len(self.shape.field)
        s = self.splits[row]
        return ConvPartition(
            self.shape, int(s[0]), tuple(int(f) for f in s[1:1 + dims]), int(s[1 + dims]), int(s[2 + dims]),
            int(s[3 + dims]), serial, dim, self.combine, int(inputs[row]), int(weights[row]), int(partials[row]),
            int(self.positions[row] * self.out_t_all[row] * self.group_t[row]), temp, cyc,
            cap is None or temp <= cap, self.expanded, int(self.transform[row]))


def _candidates(shape: ConvShape, expanded: tuple[int, ...], combine: int, tile_count: int, geometry: AmpGeometry,
                multiply_bytes: int, partial_bytes: int, fully_connected: bool = False) -> _Options:
    ig, og = geometry.input_channels, geometry.output_channels
    vertex = AmpVertex.of(geometry)
    groups = -(-shape.groups // combine)
    kernel_dims = [1 if d in expanded else k for d, k in enumerate(shape.kernel)]
    in_chans = shape.in_chans * combine * math.prod(shape.kernel[d] for d in expanded)
    out_chans = shape.out_chans * combine
    dims = len(shape.field)
    # the dimensions split in parallel: batch, field..., in, out, groups; a field or
    # group dimension of 1 is never split (a matmul's field, a convolution of one group)
    sizes = [shape.batch, *shape.field, in_chans, out_chans, groups]
    free = [k for k, size in enumerate(sizes) if size > 1 or k in (0, dims + 1, dims + 2)]
    free_splits = divisor_splits(tile_count, len(free))
    splits = np.ones((len(free_splits), len(sizes)), dtype=np.int64)
    splits[:, free] = free_splits
    useful = np.all(splits <= np.maximum(np.asarray(sizes) * 2, 1), axis=1)  # no more than twice a dimension
    if useful.any():
        splits = splits[useful]
    batch_s, field_s = splits[:, 0], splits[:, 1:1 + dims]
    in_s, out_s, group_s = splits[:, 1 + dims], splits[:, 2 + dims], splits[:, 3 + dims]
    batch_t = _ceil(shape.batch, batch_s)
    field_t = _ceil(np.asarray(shape.field), field_s)
    group_t = _ceil(groups, group_s)
    window = np.ones(len(splits), dtype=np.int64)
    positions = batch_t.copy()
    expanded_elements = shape.batch * in_chans * groups
    for d in range(dims):
        if d in expanded:  # the expanded input holds one column per output position
            window *= field_t[:, d]
            expanded_elements *= shape.field[d]
        else:
            window *= (field_t[:, d] - 1) * shape.stride[d] + (shape.kernel[d] - 1) * shape.dilation[d] + 1
            expanded_elements *= (shape.field[d] - 1) * shape.stride[d] + (shape.kernel[d] - 1) * \
                shape.dilation[d] + 1
        positions *= field_t[:, d]
    # the expanded input is a copy of its own (`expandDims`, a transform held by the step)
    transform = np.full(len(splits), -(-expanded_elements // tile_count) * multiply_bytes if expanded else 0,
                        dtype=np.int64)
    input_cycles, weight_cycles, weight_share = transform_costs(
        expanded, -(-expanded_elements // tile_count) * multiply_bytes,
        -(-math.prod(kernel_dims) * in_chans * out_chans * groups * multiply_bytes // tile_count),
        in_chans * out_chans, multiply_bytes)
    # poplin's FC passes with a serial split rearrange the weights before slicing them
    # (ConvModel.cpp `addRearrangeBeforeSliceEstimate`): a share of them a tile, added
    rearranged_weights = -(-_ceil(in_chans, ig) * ig * _ceil(out_chans, og) * og * groups // tile_count) \
        * multiply_bytes
    kernel = math.prod(kernel_dims)
    in_t_all = _ceil(in_chans, in_s)
    out_t_all = _ceil(out_chans, out_s)
    out = _Options(shape, expanded, combine, splits, positions, out_t_all, group_t, transform, [], [], [])
    for dim in ("out", "in"):
        for serial in SERIAL_SPLITS:
            if serial > 1 and (dim == "out" and serial * og > out_chans or dim == "in" and serial * ig > in_chans):
                continue
            in_t = _ceil(in_t_all, serial) if dim == "in" else in_t_all
            out_t = _ceil(out_t_all, serial) if dim == "out" else out_t_all
            in_p, out_p = _ceil(in_t, ig) * ig, _ceil(out_t, og) * og
            inputs = batch_t * window * in_p * group_t
            weights = kernel * in_p * out_p * group_t
            partials = positions * out_p * group_t
            before_loop = dim == "out" and serial > 1
            conv_temp = (inputs + weights) * multiply_bytes + partials * partial_bytes
            if not expanded:
                temp = conv_temp
            elif before_loop:  # the input and its transform held across the loop, added
                temp = transform + inputs * multiply_bytes + np.maximum(
                    2 * weight_share, weights * multiply_bytes + partials * partial_bytes)
            else:  # the transforms' bytes doubled, max'd with the convolution's
                temp = np.maximum(2 * np.maximum(transform, weight_share), conv_temp)
            if fully_connected and serial > 1:
                temp = temp + rearranged_weights
            if dim == "in" and serial > 1:
                temp = temp + positions * out_t_all * group_t * partial_bytes
            # a parallel input-channel split reduces the partials across tiles: the first
            # stage receives as many partial elements as the tile made (`reduceTempBytes`),
            # which poplin max's with the rest, partials included: never more than the rest
            compute = ampcycles.partial_calc_cycles(vertex, shape.kernel, shape.stride, expanded, batch_t, field_t,
                                                    group_t, in_p // ig, out_p // og)
            weights_received = np.where(batch_s * np.prod(field_s, axis=1) > 1, weights * multiply_bytes, 0)
            # a serial output-channel split broadcasts the input, and transforms it, once,
            # before the loop (`broadcastInputBeforeLoop`)
            received = weights_received + (0 if before_loop else inputs * multiply_bytes)
            looped = weight_cycles + (0 if before_loop else input_cycles)
            once = (inputs * multiply_bytes // EXCHANGE_BYTES_PER_CYCLE + input_cycles) if before_loop else 0
            reduce = np.where(in_s > 1, partials * partial_bytes * (in_s - 1) // in_s, 0)
            reductions = serial if dim == "out" else 1  # each output slice is reduced in its iteration
            accumulate = partials * serial if dim == "in" and serial > 1 else 0  # adding each iteration's partials
            cycles = (serial * (compute + received // EXCHANGE_BYTES_PER_CYCLE + looped + ITERATION_CYCLES)
                      + accumulate + once + reductions * reduce // EXCHANGE_BYTES_PER_CYCLE)
            out.blocks.append((dim, serial, inputs, weights, partials))
            out.temps.append(temp)
            out.cycles.append(cycles)
    return out


# What a plan's step holds ------------------------------------------------------------

def rearranged_bytes(cp: ConvPartition, layout: "Layout", shape: tuple[int, ...], element_bytes: int,
                     tile_count: int) -> int:
    """The rearranged copy of the input poplin makes before a plan that broadcasts it
    (lib/poplin/Convolution.cpp: `rearrangeActs`, then `convolutionPreprocess` copies
    the input into `actsRearranged`, laid out as the plan expects), held for the whole
    step: each tile's share of the input, when the plan splits the output channels over
    tiles (so each input element goes to several) and poplin rearranges: the input
    rests in a linear mapping (a variable, an elementwise or matmul output: its
    detected channel grouping is 1), or it goes to more than 7 tiles
    (`inViewMaxBroadcastDests`: the output-channel split, tileplan's plans having no
    kernel split), whatever its layout. 0 otherwise (without that split each tile's
    input block is the rearranged data itself). poplin's memory estimate does not
    count this copy (ConvModel.cpp counts a rearrangement only for its transforms), so
    it is held without moving the plan's choice."""
    linear = bool(layout.tiling.axes) and layout.tiling.axes[0].axis.is_linear
    if cp.out_split <= 1 or not (linear or cp.out_split > 7):
        return 0
    return -(-math.prod(shape) // tile_count) * element_bytes


def step_scratch(cp: ConvPartition, rearranged: int, weights_received: bool, multiply_bytes: int,
                 partial_bytes: int) -> dict[str, int]:
    """What a plan's `Matmul` or `Conv` step holds per tile and serial iteration: in
    standard memory the input block `input_elements` with the input's rearranged share
    (`rearranged_bytes`), the weight block `weight_elements` when the tile receives it
    (`weights_received`: else it reads them where they were created), and the expanded
    input's share, all in the multiply precision; in interleaved memory
    `partials_scratch`."""
    input_bytes = cp.input_elements * multiply_bytes + rearranged
    standard = input_bytes + (cp.weight_elements * multiply_bytes if weights_received else 0) + cp.transform_bytes
    return {"standard": standard, "interleaved": partials_scratch(cp, standard, input_bytes, partial_bytes)}


def partials_scratch(cp: ConvPartition, operand_bytes: int, input_bytes: int, partial_bytes: int) -> int:
    """The interleaved scratch of a plan's step: its partials, plus with a serial
    input-channel split the output accumulated across iterations, and with a parallel
    input-channel split the partials received to reduce them (the first stage of the
    reduction receives as many as the tile made), where they exceed what the operands'
    buffers free by then leave. Those are all of `operand_bytes` (the standard
    scratch), but with a serial output-channel split the input's (`input_bytes`: its
    window, and its rearranged copy), which poplin broadcasts before the loop and every
    iteration reads again, so it is live while each iteration's partials are reduced
    (lib/poplin/Convolution.cpp: the input broadcast before the serial loop, the
    reduction inside it; ConvModel.cpp `addEstimates` max's `reduceTempBytes` with the
    conv's temporaries, which the real reduction holds alongside them). The step holds
    max(operands + partials, held input + twice the partials)."""
    partials = cp.partial_elements * partial_bytes
    if cp.serial_dim == "in" and cp.serial > 1:
        partials += cp.output_elements * partial_bytes
    if cp.in_split > 1:
        held = input_bytes if cp.serial_dim == "out" and cp.serial > 1 else 0
        partials += max(0, cp.partial_elements * partial_bytes - (operand_bytes - held))
    return partials


# Layouts of a plan ------------------------------------------------------------------

def gemm_partition(cp: ConvPartition, geometry: AmpGeometry, whole: bool = False) -> "GemmPartition":
    """A matmul plan as the GEMM partitioner's `GemmPartition` (M over `batch_split`,
    K over `in_split`, N over `out_split`, rows in grains of 1 as poplin's field and
    batch grains), whose layout functions (`tileplan.kernel.gemm`) then apply; with a
    serial split, the partition of one iteration's slice of N or K (`whole`: of the
    whole product, where the weights rest)."""
    from tileplan.kernel.gemm import GemmPartition

    s = cp.shape
    m, k, n = s.batch, s.in_chans, s.out_chans
    if whole:
        pass
    elif cp.serial_dim == "out":
        n = -(-n // cp.serial)
    else:
        k = -(-k // cp.serial)
    ig = geometry.input_channels
    return GemmPartition(m, k, n, cp.batch_split, cp.in_split, cp.out_split, 1,
                         m_tile=ceil_div(m, cp.batch_split), k_tile=ceil_div(ceil_div(k, ig), cp.in_split) * ig,
                         n_tile=ceil_div(ceil_div(n, 2), cp.out_split) * 2, geometry=geometry)


def conv_output_layout(cp: ConvPartition, channels: int, rank: int, prefix: str) -> "Layout":
    """A convolution's output [N, C, *field] where its plan computed it: the batch over
    `batch_split`, the channels over `out_split x in_split x group_split` (the input-
    channel partitions each keep a slice of the reduced output, as poplin's reduction
    leaves it), each field dimension over its split; every element on one tile."""
    from tileplan.model.layout import ROW_MAJOR, Axis, AxisTiling, Layout, MemoryClass, Padding, TensorTiling

    def axis(dim: int, parts: int, extent: int) -> AxisTiling:
        block = max(1, -(-extent // parts))
        return AxisTiling(Axis.from_start(dim), parts, 1, block, block, 1, Padding.ZERO, None)

    s = cp.shape
    chans = cp.out_split * cp.in_split * cp.group_split
    axes = [axis(0, cp.batch_split, s.batch), axis(1, chans, channels)]
    axes += [axis(2 + d, f, s.field[d]) for d, f in enumerate(cp.field_split)]
    assert len(axes) == rank, (rank, axes)
    total = cp.batch_split * chans * math.prod(cp.field_split)
    return Layout(ROW_MAJOR, TensorTiling(total, 1, tuple(axes)), MemoryClass(prefix, "Standard"))


def plan_text(kind: str, cp: ConvPartition, multiply: str, accumulate: str) -> str:
    """The step's text: what poplin's plan is (`Matmul { ... }`, `Conv { ... }`)."""
    field = " x ".join(str(f) for f in cp.field_split)
    expand = " x ".join(str(d) for d in cp.expanded) or "none"
    return (f"{kind} {{ multiply: {multiply}, accumulate: {accumulate}, batch_split: {cp.batch_split}, "
            f"field_split: {field}, in_split: {cp.in_split}, out_split: {cp.out_split}, "
            f"group_split: {cp.group_split}, serial: {cp.serial} {cp.serial_dim}, combine: {cp.combine}, "
            f"expand: {expand}, temporary: {cp.temp_bytes}, exchange: true }}")


# Fully connected layers in training: one joint plan for three passes -----------------

@dataclass(frozen=True, slots=True)
class JointPlan:
    """poplin's joint plan of a fully connected layer in training, x [M, K] @ W [K, N]
    (lib/poplin/ConvPlan.cpp `isJointPlan`, lib/poplin/ConvModel.cpp `constructModel`
    and `addBwdEstimates`/`addWuEstimates`; TRAINING-NOTES.md section 3.1): the
    forward pass, the backward pass dX = dY W^T and the weight update dW = X^T dY all
    use the forward pass's partition of W, so no weight moves between passes. A joint
    plan swaps the operands (`getSwapOperandCandidates`: "the joint planning logic
    assumes swapped operands"; `swapOperands` exchanges the batch and the output
    channels), so the convolution's output channels are the rows M, which the forward
    pass never splits over tiles (`outChanSplit.parallel = 1`: "each weight is used on
    exactly one tile") and may split serially; its input channels K are never split
    serially (`inChanSplit.serial = 1`). Each pass's temporary bytes are bounded by the
    cap on its own; the plan's are the most of the three (`maxTempBytesPerTile`) and
    its cycles their sum. `ConvPartition`s here read: `in_split` K, `out_split` N,
    `serial` over M (`serial_dim` "batch"), elements per tile and iteration."""

    forward: ConvPartition
    backward: ConvPartition
    update: ConvPartition

    @property
    def temp_bytes(self) -> int:
        return max(self.forward.temp_bytes, self.backward.temp_bytes, self.update.temp_bytes)


def plan_joint_fc(m: int, k: int, n: int, tile_count: int, geometry: AmpGeometry, multiply_bytes: int,
                  partial_bytes: int, tile_bytes: int, proportion: float | None, name: str = "matmul") -> JointPlan:
    """The joint plan of x [m, k] @ W [k, n] (see `JointPlan`); memoized.

    Candidates: K over a tiles, N over b (a x b the tile count), M in s serial
    iterations. Per tile and iteration, with k_t = ceil(K / a), n_t = ceil(N / b), m_t =
    ceil(M / s), the AMP's input grain ig and output grain og applied as the swapped
    convolution of each pass applies them:
    forward (batch N, K in, M out): x block k_t^ig x m_t^og received, W block n_t x
    k_t^ig where it rests, partials n_t x m_t^og, reduced over the a partitions of K;
    backward dX (batch K, N in, M out): dY block n_t^ig x m_t^og received, W block k_t x
    n_t^ig where it rests, partials k_t x m_t^og, reduced over the b partitions of N;
    update dW (batch N, M in, K out): dY block n_t x m_t^ig and X block m_t^ig x k_t^og
    received, partials n_t x k_t^og where W rests, plus with s > 1 dW accumulated across
    iterations (n_t x k_t partials).
    Worked example, BERT-Large's FFN up-projection at sequence 384 (M 384, K 1024, N
    4096, F16, F32 partials, 1472 tiles, grains 16 in and 8 out): a = 23 and b = 64
    give k_t 45 (48 in grains) and n_t 64, s = 1: forward (48 x 384 + 64 x 48) x 2 B +
    64 x 384 x 4 B = 141,312 B, backward (64 x 384 + 45 x 64) x 2 + 45 x 384 x 4 =
    124,032 B, update (64 x 384 + 384 x 48) x 2 + 64 x 48 x 4 = 98,304 B: 141,312 B,
    under the 383,385 B of proportion 0.6."""
    try:
        return _joint(m, k, n, tile_count, geometry, multiply_bytes, partial_bytes, tile_bytes, proportion)
    except ConvPlanningError as e:
        raise ConvPlanningError(e.detail, name) from None


def _grain(x: np.ndarray | int, grain: int) -> np.ndarray:
    return _ceil(x, grain) * grain


@lru_cache(maxsize=4096)
def _joint(m: int, k: int, n: int, tile_count: int, geometry: AmpGeometry, mb: int, pb: int, tile_bytes: int,
           proportion: float | None) -> JointPlan:
    ig, og = geometry.input_channels, geometry.output_channels
    vertex = AmpVertex.of(geometry)
    splits = divisor_splits(tile_count, 2)  # (a over K, b over N)
    useful = (splits[:, 0] <= max(2 * k, 1)) & (splits[:, 1] <= max(2 * n, 1))
    if useful.any():
        splits = splits[useful]
    a, b = splits[:, 0], splits[:, 1]
    k_t, n_t = _ceil(k, a), _ceil(n, b)
    rows = []
    for serial in SERIAL_SPLITS:
        if serial > 1 and serial * og > m:
            continue
        m_t = -(-m // serial)
        m_in, m_out = _grain(m_t, ig), _grain(m_t, og)
        k_in, k_out, n_in = _grain(k_t, ig), _grain(k_t, og), _grain(n_t, ig)
        passes = []
        # (received, resting, partials, extra partials, reduced over, the AMP's positions,
        # input and output channels)
        for received, resting, partials, extra, reduce_over, amp in (
                (k_in * m_out, n_t * k_in, n_t * m_out, 0, a, (n_t, k_in, m_out)),
                (n_in * m_out, k_t * n_in, k_t * m_out, 0, b, (k_t, n_in, m_out)),
                (n_t * m_in + m_in * k_out, 0, n_t * k_out, n_t * k_t if serial > 1 else 0, 1, (n_t, m_in, k_out))):
            temp = (received + resting) * mb + (partials + extra) * pb
            reduce = np.where(reduce_over > 1, partials * pb * (reduce_over - 1) // reduce_over, 0)
            positions, in_c, out_c = amp
            compute = ampcycles.cycles_1x1(vertex, positions, 1, in_c // ig, out_c // og)
            cycles = (serial * (compute + received * mb // EXCHANGE_BYTES_PER_CYCLE
                                + ITERATION_CYCLES) + serial * reduce // EXCHANGE_BYTES_PER_CYCLE)
            passes.append((received, resting, partials + extra, temp, cycles))
        rows.append((serial, m_t, passes))
    temps = np.concatenate([np.maximum(np.maximum(p[0][3], p[1][3]), p[2][3]) for _, _, p in rows])
    cycles = np.concatenate([p[0][4] + p[1][4] + p[2][4] for _, _, p in rows])
    cap = None if proportion is None else int(proportion * tile_bytes)
    chosen = fastest_within(temps, cycles, cap, tile_bytes)
    block, row = divmod(chosen, len(splits))
    serial, m_t, passes = rows[block]
    within = cap is None or int(temps[chosen]) <= cap
    ks, ns = int(a[row]), int(b[row])
    kt, nt = int(k_t[row]), int(n_t[row])

    def pass_of(shape: ConvShape, index: int, output: int) -> ConvPartition:
        received, resting, partials, temp, cyc = (int(np.asarray(c)[row]) if np.ndim(c) else int(c)
                                                  for c in passes[index])
        return ConvPartition(shape, 1, (1,), ks, ns, 1, serial, "batch", 1, received, resting, partials, output,
                             temp, cyc, within)

    return JointPlan(forward=pass_of(ConvShape.matmul(m, k, n), 0, m_t * nt),
                     backward=pass_of(ConvShape.matmul(m, n, k), 1, m_t * kt),
                     update=pass_of(ConvShape.matmul(k, m, n), 2, kt * nt))
