"""poplin's candidate sets and its choice among them, for `tileplan.kernel.convplan`:
the splits of the tile count, the `expandDims` sets, what an expansion's transform
costs, and `createPlan`'s relaxation of the memory bound.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

#: bytes a tile receives per cycle over the exchange (Mk2: about 8 TB/s over 1472
#: tiles at 1.33 GHz)
EXCHANGE_BYTES_PER_CYCLE = 4


def divisor_splits(tile_count: int, dims: int) -> np.ndarray:
    """Every way to write `tile_count` as an ordered product of `dims` factors, as
    rows of an int64 array."""
    rows: list[tuple[int, ...]] = [()]
    for d in range(dims):
        nxt = []
        for row in rows:
            rest = tile_count // math.prod(row) if row else tile_count
            if d == dims - 1:
                nxt.append((*row, rest))
            else:
                nxt.extend((*row, f) for f in range(1, rest + 1) if rest % f == 0)
        rows = nxt
    return np.asarray(rows, dtype=np.int64).reshape(-1, dims)


def fastest_within(temps: np.ndarray, cycles: np.ndarray, cap: int | None, tile_bytes: int) -> int:
    """The candidate poplin's `createPlan` picks (lib/poplin/ConvPlan.cpp, the
    `minimizeCycles` and `minimizeMemory` lambdas): the fewest cycles, then the fewest
    temporary bytes, among those under `cap`; when none is, the do-while of
    `minimizeMemory`: the bound doubled and tried again while the bound tried was below
    twice the tile's bytes (`stepMemBound < 2 * getBytesPerTile()`: at proportion 0.6,
    1.2 and 2.4 tiles), then no bound (`PlanningObjective::minimizeCycles()`)."""
    def best(ok: np.ndarray) -> int:
        idx = np.flatnonzero(ok)
        return int(idx[np.lexsort((temps[idx], cycles[idx]))[0]])

    if cap is None:
        return best(np.ones(len(temps), dtype=bool))
    assert cap > 0, "a proportion in (0, 1] of a tile"
    bound = cap
    if (temps <= bound).any():
        return best(temps <= bound)
    while True:  # do { bound *= 2; try } while (bound < 2 x tile)
        bound *= 2
        if (temps <= bound).any():
            return best(temps <= bound)
        if bound >= 2 * tile_bytes:
            return best(np.ones(len(temps), dtype=bool))


def expansions(kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The sets of field dimensions poplin tries to expand (lib/poplin/ConvPlan.cpp
    `getExpandDimsCandidates`): the power set (`getPowerSet`) of the dimensions whose
    expansion changes the convolution (`expandingDimChangesParams`: a kernel wider
    than 1, a stride or a dilation; a dimension whose input is narrower than its
    kernel is skipped, which an unpadded shape never is), the empty set first."""
    dims = [d for d, (k, s, t) in enumerate(zip(kernel, stride, dilation)) if k > 1 or s > 1 or t > 1]
    return [c for r in range(len(dims) + 1) for c in itertools.combinations(dims, r)]


def transform_costs(expanded: tuple[int, ...], input_share: int, weight_share: int, channels: int,
                     element_bytes: int) -> tuple[int, int, int]:
    """What an `expandDims` transform costs a tile (lib/poplin/ConvModel.cpp
    `addTransformCycleEstimate`: expanding rearranges the input and the weights):
    (the input's cycles, the weights' cycles, the weights' share in bytes). Each is
    its share of the transformed tensor (`input_share`, `weight_share`: its bytes over
    the tiles) exchanged at the exchange's rate and copied at the element's bytes a
    cycle (`reorderBytesPerCycle` = min(memcpy rate, element bytes): tileplan takes
    the element's, the memcpy rate being no less) times the fudge factor 5/4, 5/3
    when the input x output channels are not a multiple of 4 (2 for float:
    `getScaleFactorForTransform`). None without an expansion."""
    if not expanded:
        return 0, 0, 0
    num, den = (5, 4) if channels % (2 if element_bytes == 4 else 4) == 0 else (5, 3)

    def cycles(share: int) -> int:
        return -(-share * num // (element_bytes * den)) + -(-share // EXCHANGE_BYTES_PER_CYCLE)

    return cycles(input_share), cycles(weight_share), weight_share
