"""PopLibs' cycle estimates of its AMP convolution vertices, vectorised over candidates.

poplin's planner costs the work a tile does in a convolution or matmul with the cycle
estimates of the vertex it would run there (graphcore/poplibs lib/poplin/ConvModel.cpp
`addPartialCalcCycleEstimate`, the `Plan::Amp` visitor): the 1x1 vertex
(`ConvPartial1x1Out`) when `canUseConvPartial1x1Vertex` holds, else the nx1 vertex
(`ConvPartialnx1`) plus the zeroing of its partials (`estimateZeroSupervisorCycles`).
Each function here is the function of lib/poplin/PerformanceEstimation.hpp it names,
line for line, on numpy arrays: one entry per partition candidate.

The target's figures (`AmpVertex.of`): the conv units per precision and partials type
(`getNumConvUnits`: `getFp16InFp32OutConvUnitsPerTile` 8, `getFp16InFp16OutConvUnits
PerTile` 16 on Mk2 and IPU21, the "dual AMP" poplibs tests/poplin/CMakeLists.txt
`conv_dual_amp_half_1x1_*` constrain to; the 16.32 units are limited by the 64-bit
store width, tools/single_conv_layer.cpp "adjust 16.32 units": 4 pipeline stages x 2
floats = 8; `getFp32InFp32OutConvUnitsPerTile` 8, the `conv_1x1_double_input_width_
float_float` test's `convUnits`; FP8 16, `getConvPartial1x1SupervisorInnerLoopCycle
EstimateQuarter` asserts it) are the geometry's output channels a pass
(`partialChansPerGroup`, one `numConvUnits` candidate of `getConvVertexAMPCandidates`);
the weights a conv unit holds (`getWeightsPerConvUnit`: 16 half, 8 float, 32 quarter)
its input channels a pass; `weightBytesPerConvUnit` those times the element's bytes
(32 B each). The coefficient load rate: ld128's 16 B a cycle, halved by poplin
because `use128BitConvUnitLoad` defaults to false (lib/poplin/ConvOptions.hpp line
42; ConvModel.cpp lines 290-294; PerformanceEstimation.hpp
`getConvPartialAmpSupervisorWeightLoadCycleEstimate`: "ld128 allows to us to load 16
bytes per cycle"), so a pass loads its weights in conv units x 32 / 8 cycles: 32 with
8 units, 64 with 16. Six worker contexts a tile (Graphcore's IPU Programmer's Guide,
"Tile architecture": six hardware worker threads; `target.getNumWorkerContexts()`),
a 64-bit data path (`getDataPathWidth`, the zeroing vertex's vector width).

Worked example, ResNet-50's 1x1 64 -> 256 convolution's tile of 196 positions (one
flattened row), half activations, float partials, 8 conv units, one group, 4 input
and 32 output groups: the positions split over the workers 32, 33, 33, 32, 33, 33
(`partitionConvPartialByWorker`); a worker's pass costs 37 + 30 x 4 - 7 = 150 cycles
with zeroing, 151 without, for 33 positions (`coreCycles` 4 a position, 7 saved by
state retention), x 6 contexts: 900 and 906; the outer loop adds 50 + 6 x (7 + 3 x 3)
= 146 for the retention, then for the group 13 + 3 x (15 + 32 x (19 + 6 + 32 + 906)) +
11 + 32 x (18 + 7 + 32 + 900): 123,287 cycles.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from tileplan.model.machine import AmpGeometry
from tileplan.model.precision import FP8_FORMATS, PLAIN_BYTES

#: worker contexts a tile (`getNumWorkerContexts`; IPU Programmer's Guide: six workers)
WORKER_CONTEXTS = 6
#: bytes the conv units' coefficients load a cycle: ld128's 16, halved as
#: `use128BitConvUnitLoad` defaults to false (ConvOptions.hpp line 42; ConvModel.cpp 290-294)
COEFF_LOAD_BYTES_PER_CYCLE = 16 // 2
#: the data path's width in bits (`getDataPathWidth`: 64-bit loads)
DATA_PATH_BITS = 64


class Acts(enum.Enum):
    """The activations' type as the estimates branch on it."""

    HALF = "half"
    FLOAT = "float"
    QUARTER = "quarter"


@dataclass(frozen=True, slots=True)
class AmpVertex:
    """What the AMP estimates read of the target and the vertex type: the
    activations' type, float partials or not, `conv_units` (`numConvUnits`, also
    `outChansPerGroup`: one pass of output channels), `weights_per_conv_unit` (the
    input channels a group), `weight_bytes_per_conv_unit`."""

    acts: Acts
    float_partials: bool
    conv_units: int
    weights_per_conv_unit: int
    weight_bytes_per_conv_unit: int

    @staticmethod
    def of(geometry: AmpGeometry) -> "AmpVertex":
        if geometry.multiply in FP8_FORMATS:
            acts, size = Acts.QUARTER, 1
        else:
            acts, size = (Acts.FLOAT if geometry.multiply == "F32" else Acts.HALF), PLAIN_BYTES[geometry.multiply]
        return AmpVertex(acts, geometry.accumulate == "F32", geometry.output_channels, geometry.input_channels,
                         geometry.input_channels * size)

    @property
    def weight_loads(self) -> int:
        """`getConvPartialAmpSupervisorWeightLoadCycleEstimate` with a filter height of
        1: numConvUnits x weightBytesPerConvUnit / the coefficient load rate."""
        return self.conv_units * self.weight_bytes_per_conv_unit // COEFF_LOAD_BYTES_PER_CYCLE

    @property
    def common_path(self) -> bool:
        """`commonHalfAndFloatPartialsCodePath`: half activations with 16 conv units
        run the code of half activations with float partials."""
        return (self.acts is not Acts.FLOAT and self.conv_units == 16) or self.float_partials

    @property
    def retention(self) -> tuple[int, int]:
        """`conv1x1WorkerRetentionSavings`: (7, 3) for half activations with float
        partials or with 16 conv units, else none."""
        if self.acts is Acts.HALF and (self.float_partials or self.conv_units == 16):
            return 7, 3
        return 0, 0


def _i64(x: np.ndarray | int) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


# The 1x1 vertex ------------------------------------------------------------------------

def _worker_1x1(v: AmpVertex, n: np.ndarray, zeroing: bool) -> np.ndarray:
    """One worker's cycles for its `n` positions, n >= 1
    (`getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat`, the switch on
    numElems, less the retention savings; `...Quarter`, its overhead 17 included)."""
    z = int(zeroing)
    if v.acts is Acts.QUARTER:
        save = 5 * z
        return 17 + np.where(n == 1, 18 - save, np.where(n == 2, 23 - save, 27 - save + (n - 3) * 4))
    if v.acts is Acts.FLOAT:
        per_group = 8 if v.conv_units == 16 else 4 if v.float_partials else 2  # zeroCyclesPerGroup
        cycles = np.where(n == 1, 47 + (2 + per_group) * z, np.where(
            n == 2, 46 + (2 + per_group * 2) * z, 46 + (2 + per_group * n) * z + (n - 3) * 8))
    elif v.common_path:
        cycles = np.where(n == 1, 31 + (1 if z else 2), np.where(n == 2, 40 + (1 if z else 2),
                                                                   (37 if z else 38) + (n - 3) * 4))
    else:
        per_group = 4 if v.float_partials else 2
        cycles = np.where(n == 1, 39 + (2 + per_group) * z, np.where(
            n == 2, 40 + (2 + per_group * 2) * z, 41 + (2 + per_group * n) * z + (n - 3) * 4))
    return cycles - v.retention[0]


def inner_1x1(v: AmpVertex, positions: np.ndarray | int, zeroing: bool) -> np.ndarray:
    """`getConvPartial1x1InnerLoopCycleEstimate`: the tile's `positions` (one row: the
    1x1 vertex runs on a flattened field) split over the workers as
    `partitionConvPartialByWorker` splits them (worker i the elements [i P / 6, (i + 1)
    P / 6): P mod 6 workers take one more than the rest), each worker's cycles x 6, the
    most of them, but at least the least + 14 (the tag cost); a worker with nothing
    costs 0 (17 for FP8)."""
    p = _i64(positions)
    q, r = p // WORKER_CONTEXTS, p % WORKER_CONTEXTS
    empty = 17 if v.acts is Acts.QUARTER else 0
    small = np.where(q > 0, _worker_1x1(v, np.maximum(q, 1), zeroing), empty) * WORKER_CONTEXTS
    large = _worker_1x1(v, q + 1, zeroing) * WORKER_CONTEXTS
    # 6 - r workers take q (always some), r take q + 1
    most = np.where(r > 0, np.maximum(small, large), small)
    least = np.where(r > 0, np.minimum(small, large), small)
    return np.maximum(most, least + 14)


def cycles_1x1(v: AmpVertex, positions: np.ndarray | int, groups: np.ndarray | int, in_groups: np.ndarray | int,
               out_groups: np.ndarray | int) -> np.ndarray:
    """`getConvPartial1x1SupervisorCycleEstimate`: the inner loop with and without
    zeroing (`inner_1x1`) in the supervisor's outer loop over conv groups, input and
    output channel groups (`...OuterLoopCycleEstimateHalfFloat`: 50 cycles, the
    retention's state per worker, per group 12 (13 on the common path), the later
    input groups' 16 (15 on the common path) and per output group 19 then 6 + the
    weight loads + the inner loop without zeroing, the first input group's 11 and per
    output group 19 (18) then 7 + the loads + the inner loop with zeroing; one pass of
    output channels a group; `...Quarter` likewise with its own overheads)."""
    with_zero, without = inner_1x1(v, positions, True), inner_1x1(v, positions, False)
    cg, ig, og = _i64(groups), _i64(in_groups), _i64(out_groups)
    loads = v.weight_loads
    w = WORKER_CONTEXTS
    if v.acts is Acts.QUARTER:
        worker_call = w * 6
        ig_first = w * 14 + 11 + worker_call
        ig_later = w * 11 + 6 + worker_call
        return 46 + cg * (w * 2 + 9 + og * (w * 6 + 10 + ig_first + loads + with_zero
                                            + (ig - 1) * (ig_later + loads + without)))
    c = int(v.common_path)
    first, second = v.retention
    return (50 + w * (first + second * (ig * cg - 1))
            + cg * (12 + c + (ig - 1) * (15 - c + 1 + og * (19 + (6 + loads + without)))
                    + (10 + 1 + og * (19 - c + (7 + loads + with_zero)))))


# The nx1 vertex ------------------------------------------------------------------------

def _item_nx1(v: AmpVertex, n: np.ndarray) -> np.ndarray:
    """One worklist item of `n` >= 1 output positions in `getConvPartialnx1WorkerCycles`
    (3 for its pointers, the switch on numElems, less the 9 retained) or
    `...WorkerCyclesQuarter` (16 for the loop, the switch)."""
    if v.acts is Acts.QUARTER:
        return 16 + np.where(n == 1, 18, np.where(n == 2, 23, 27 + (n - 3) * 4))
    if v.acts is Acts.FLOAT:
        work = np.where(n == 1, 33, np.where(n == 2, 44, 45 + (n - 3) * 8))
    else:
        extra = int((not v.float_partials and v.conv_units == 16) or (v.float_partials and v.conv_units == 8))
        work = np.where(n == 1, 29, np.where(n == 2, 33 + extra, 34 + (n - 3) * 4))
    return 3 + work - 9  # convnx1WorkerRetentionSavings


def kernel_position_nx1(v: AmpVertex, rows: np.ndarray | int, width: np.ndarray | int) -> np.ndarray:
    """The cycles of one kernel position (`getConvPartialnx1SupervisorKernelLoop
    CycleEstimateHalfFloat` / `...Quarter`, the same worklist at every position): the
    tile's `rows` of `width` output positions split over the workers as
    `partitionConvPartialByWorker` splits them (worker i the elements [i N / 6, (i + 1)
    N / 6) of the rows laid end to end, one worklist item per row it touches), each
    worker 17 cycles (18 with half partials; 18 for FP8) plus its items, x 6: the
    most, but at least the least + 9; one pass of output channels."""
    r, wd = _i64(rows), np.maximum(_i64(width), 1)
    total = r * wd
    base = 18 if v.acts is Acts.QUARTER else 17 + (0 if v.float_partials else 1)
    per_worker = []
    for i in range(WORKER_CONTEXTS):
        start, end = i * total // WORKER_CONTEXTS, (i + 1) * total // WORKER_CONTEXTS
        last = np.maximum(end - 1, start)
        first_row, last_row = start // wd, last // wd
        one_row = _item_nx1(v, np.maximum(end - start, 1))
        head = _item_nx1(v, np.maximum(wd - start % wd, 1))
        tail = _item_nx1(v, last % wd + 1)
        full = np.maximum(last_row - first_row - 1, 0) * _item_nx1(v, wd)
        items = np.where(first_row == last_row, one_row, head + tail + full)
        per_worker.append(base + np.where(end > start, items, 0))
    cycles = np.stack(per_worker) * WORKER_CONTEXTS
    return np.maximum(cycles.max(axis=0), cycles.min(axis=0) + 9)


def cycles_nx1(v: AmpVertex, rows: np.ndarray | int, width: np.ndarray | int, kernel_outer: int, kernel_inner: int,
               groups: np.ndarray | int, in_groups: np.ndarray | int, out_groups: np.ndarray | int) -> np.ndarray:
    """The nx1 vertex as ConvModel.cpp costs it: `getConvPartialnx1InnerLoopCycleEstimate`
    (filter height 1: the kernel's first dimension `kernel_outer` positions, the rest
    `kernel_inner`; per outer position 14, per inner position 12 + the weight loads +
    15 + 3 (`...SupervisorInnerLoopCycleEstimateHalfFloat`), plus `kernel_position_nx1`
    at every position) in `getConvPartialnx1SupervisorOuterLoopCycleEstimate` (109, the
    workers' retained state 6 x (9 + 9, 10 with half partials), the partials' zeroing
    loop per group and output group, per group 16 + per input group 14 + per output
    group 14 + the inner loop; `...Quarter` its own overheads), plus
    `estimateZeroSupervisorCycles` (each worker zeroes a sixth of the positions x the
    output channels of a group, two floats a cycle, 14 - 9 cycles besides, per output
    group and group)."""
    cg, ig, og = _i64(groups), _i64(in_groups), _i64(out_groups)
    positions = _i64(rows) * _i64(width)
    per_position = kernel_position_nx1(v, rows, width)
    loads = v.weight_loads
    w = WORKER_CONTEXTS
    if v.acts is Acts.QUARTER:
        worker_call = w * 6
        inner = (kernel_outer * (w * 5 + 3 + (w * 9 + 13 + worker_call) + loads
                                 + (kernel_inner - 1) * (w * 7 + 8 + worker_call) + loads)
                 + per_position * kernel_outer * kernel_inner)
        outer = 83 + cg * (w * 5 + 7 + og * (w * 8 + 10 + ig * (w * 8 + 13 + inner)))
    else:
        innermost = loads + 15 + 3
        inner = kernel_outer * (14 + kernel_inner * (17 - 5 + innermost)) + per_position * kernel_outer * kernel_inner
        zero_retention = 9 if v.float_partials else 10
        outer = (109 + w * 9 + w * zero_retention + cg * (og * 17 + (og - 1) * 6 + 1) + (cg - 1) * 6 + 1
                 + cg * (16 + ig * (14 + og * (14 + inner))))
    vector = DATA_PATH_BITS // 32  # the zeroing vertex writes floats
    per_worker = -(-positions * v.conv_units // w)
    zeroing = (-(-per_worker // vector) + 14 - 9) * w * og * cg
    return outer + zeroing


# What poplin runs on a tile -------------------------------------------------------------

def partial_calc_cycles(vertex: AmpVertex, kernel_shape: tuple[int, ...], strides: tuple[int, ...],
                        expanded: tuple[int, ...], batch_t: np.ndarray, field_t: np.ndarray, groups: np.ndarray,
                        in_groups: np.ndarray, out_groups: np.ndarray) -> np.ndarray:
    """The cycles of a tile's AMP work as poplin estimates them (ConvModel.cpp
    `addPartialCalcCycleEstimate`): `batch_t` images x
    `field_t` output positions (one row per candidate), `groups` conv groups, input
    and output channel groups of the AMP's pass; `kernel_shape` and `strides` per
    field dimension.

    The field as poplin transforms it first (ConvModel.cpp `applyTransform`): padded
    to two dimensions (`calculateExtraFieldDims`: a leading 1), the `expanded`
    dimensions made kernel 1 and stride 1 (`expandDim`), then the batch and every
    dimension of kernel 1 and stride 1 (`dimCanBeFlattened`; tileplan's shapes carry
    no padding or input dilation) folded into the innermost such dimension
    (`calculateFlattenedParams`). The 1x1 vertex runs when every dimension folds
    (`canUseConvPartial1x1Vertex`: batch 1, kernel 1, outer dimensions 1, input
    dilation equal to the stride; the input channels a group are the conv units'
    weights, tileplan's grain): its positions are one row. Else the nx1 vertex: rows
    of the innermost dimension's width (the folded dimensions widening it when it is
    foldable), its kernel's first dimension outer, the rest inner."""
    dims = len(kernel_shape)
    pad = max(0, 2 - dims)
    kernel = [1] * pad + [1 if d in expanded else k for d, k in enumerate(kernel_shape)]
    stride = [1] * pad + [1 if d in expanded else s for d, s in enumerate(strides)]
    folds = [k == 1 and s == 1 for k, s in zip(kernel, stride)]
    sizes = [np.ones(len(batch_t), dtype=np.int64)] * pad + [field_t[:, d] for d in range(dims)]
    if all(folds):
        positions = batch_t * np.prod(field_t, axis=1)
        return cycles_1x1(vertex, positions, groups, in_groups, out_groups)
    if folds[-1]:
        width = batch_t * math.prod(f for f, ok in zip(sizes, folds) if ok)
        rows = math.prod(f for f, ok in zip(sizes, folds) if not ok)
    else:
        width, rows = sizes[-1], batch_t * math.prod(sizes[:-1])
    return cycles_nx1(vertex, rows, width, kernel[0], math.prod(kernel[1:]), groups, in_groups, out_groups)
