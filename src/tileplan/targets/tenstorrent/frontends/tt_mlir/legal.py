"""tt-mlir's legal sharded layouts of a tensor, and the reshards drawn from them.

`sharded_layout_pool` is what tenstorrent/tt-mlir lib/Dialect/TTNN/Analysis/
LegalTensorLayoutAnalysis.cpp generates for a tensor type; `legal_sharded_layouts` the
part of it an operation's output may take (LegalOpLayoutAnalysis.cpp); `reshard_layouts`
the layouts the greedy layout propagation may move an operand to before its operation
(MemoryLayoutPropagation.cpp `generateReshardCandidates`). The propagation that uses them
is layouts.py.

Worked example: [576, 23040] bf16 (18 x 720 tiles) on n150 in April 2026: the pool starts
width 60, 56, 52, 48, block 6 x 8, ...; an interleaved operand's reshards at #7987's rule
are the four largest grids of each sharding type, largest first: width 60, 56, 52, 48,
block 6 x 8, ...
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
)
from tileplan.targets.tenstorrent.ops.base import OpTarget
from tileplan.targets.tenstorrent.tiles import TILE, Layout, padded_height_width
from tileplan.targets.tenstorrent.versions import ReshardRule, Software

#: #7856's cap over all sharding types (`maxReshardCandidates`) and #7987's per type
#: (`maxReshardCandidatesPerType`)
RESHARDS_GLOBAL, RESHARDS_PER_TYPE = 8, 4
#: the bucket order of #7987's per-type selection (an unspecified DenseMap order at the
#: April builds; the memory layout enum's, Height < Width < Block, from fe1f20899a)
BUCKETS = (MemoryLayout.HEIGHT_SHARDED, MemoryLayout.WIDTH_SHARDED, MemoryLayout.BLOCK_SHARDED)


@dataclass(frozen=True, slots=True)
class LegalLayout:
    """One sharded layout of tt-mlir's legal-layout pool: its memory layout, its grid
    (rows, columns) as tt-mlir writes it ({h, w} block, {h, 1} height, {1, w} width) and
    the shard it gives."""

    layout: MemoryLayout
    grid: tuple[int, int]
    shard: ShardSpec

    @property
    def volume(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def memory(self) -> MemoryConfig:
        """The layout as an L1 memory config."""
        return MemoryConfig(BufferType.L1, self.layout, self.shard)


def legal_sharded_layouts(value: Value, target: OpTarget, software: Software) -> tuple[LegalLayout, ...]:
    """The sharded layouts tt-mlir's legal-layout analysis keeps for an operation's
    output: the first `legal_layouts_cap` of `sharded_layout_pool` (LegalOpLayoutAnalysis.cpp
    `fillTTNNLayoutAttrs`, maxShardedConfigs = the pipeline's maxLegalLayouts with
    row-major layouts off)."""
    return sharded_layout_pool(value, target, software)[:software.legal_layouts_cap]


@lru_cache(maxsize=1024)
def sharded_layout_pool(value: Value, target: OpTarget, software: Software) -> tuple[LegalLayout, ...]:
    """tt-mlir's legal sharded layouts of a TILE value ([H, W] padded to tiles: Ht x Wt
    tiles) on a worker grid of C columns and R rows (N = R C cores), largest first:

    - generated as tenstorrent/tt-mlir lib/Dialect/TTNN/Analysis/
      LegalTensorLayoutAnalysis.cpp `generateAllPossibleLayouts` does: block grids
      {h, w} for h in 1..R, w in 1..C, then height grids {h, 1} and width grids {1, w}
      for 1..N; the shard is ceil(Ht / rows) x ceil(Wt / columns) tiles, and within each
      memory layout a grid whose shard an earlier (smaller) grid already gave is dropped
      (`checkIfShardShapeExists`);
    - kept when legal (`tensorShapeCompatibleWithShard`): at least as many tiles as the
      grid in each dimension, and the shard's cores inside the worker rectangle
      `isLayoutLegalForTensorShape` checks (the build's `legal_layout_grid`: the device's,
      or, from tt-mlir #3560 to #8234, the transposed one, CoreCoord{rows, columns});
      a block grid is a rectangle of w columns and h rows from core (0, 0), height and
      width grids fill rows of C cores (`createSingleDeviceVirtualToPhysicalAffineMaps`);
    - sorted by grid volume, largest first (`std::sort`; tileplan keeps the generation
      order among equal volumes). This is the whole pool the operand reshards draw on
      (MemoryLayoutPropagation.cpp `generateReshardCandidates` reads the tensor type's
      possible layouts, not the operation's capped list); `legal_sharded_layouts` keeps
      the first `legal_layouts_cap` of it for an operation's output.

    Memoized: a model's layers ask it of the same values again and again (a pure function
    of frozen values; the result is a tuple).

    Worked example: [576, 23040] bf16 (18 x 720 tiles) on n150's 8 x 9 grid with the
    transposed check (tt-mlir of April 2026): width 60 (12 tiles a core), 56, 52, 48
    (15), block 6 x 8 (3 x 90), width 45, 43, block 6 x 7, ... (the first 8 are the
    operation's legal layouts with a cap of 8)."""
    if value.layout is not Layout.TILE:
        return ()
    h, w = padded_height_width(value.shape, Layout.TILE)
    ht, wt = h // TILE, w // TILE
    columns, rows = target.grid
    cores = columns * rows
    grid_rule = software.legal_layout_grid
    found: list[LegalLayout] = []

    def legal(grid: tuple[int, int], box: tuple[int, int]) -> bool:
        return ht >= grid[0] and wt >= grid[1] and grid_rule.holds(box[0], box[1], target.grid)

    seen: set[tuple[int, int]] = set()
    for gh in range(1, rows + 1):
        for gw in range(1, columns + 1):
            shard = (math.ceil(ht / gh), math.ceil(wt / gw))
            if shard in seen:
                continue
            seen.add(shard)
            if legal((gh, gw), (gw, gh)):
                found.append(LegalLayout(MemoryLayout.BLOCK_SHARDED, (gh, gw),
                                         ShardSpec(CoreRange.grid(gw, gh), (shard[0] * TILE, shard[1] * TILE))))
    for layout in (MemoryLayout.HEIGHT_SHARDED, MemoryLayout.WIDTH_SHARDED):
        seen = set()
        for n in range(1, cores + 1):
            grid = (n, 1) if layout is MemoryLayout.HEIGHT_SHARDED else (1, n)
            shard = (math.ceil(ht / grid[0]), math.ceil(wt / grid[1]))
            if shard in seen:
                continue
            seen.add(shard)
            box = (min(n, columns), math.ceil(n / columns))
            if legal(grid, box):
                found.append(LegalLayout(layout, grid, ShardSpec(CoreRangeSet.from_count(n, columns, rows),
                                                                  (shard[0] * TILE, shard[1] * TILE))))
    found.sort(key=lambda x: -x.volume)
    return tuple(found)


def reshard_layouts(pool: tuple[LegalLayout, ...], bases: list[MemoryConfig], explore: bool,
                    present: set[MemoryConfig], most: int | None, rule: ReshardRule) -> list[MemoryConfig]:
    """`generateReshardCandidates` over the operand's `bases` (its pre-pass layout and its
    candidates' layouts), deduplicated and without the layouts already `present` in its
    list: from a sharded base (or, with `explore`, any base) the tensor's legal sharded
    layouts (`pool`, largest first) other than the base, on no more cores than the
    operation's output has tiles (`most`; None: no bound), then the 8 largest grids
    (#7856, `RESHARDS_GLOBAL`) or the 4 largest of each sharding type, largest first
    (#7987, `RESHARDS_PER_TYPE`)."""
    found: list[MemoryConfig] = []
    for base in bases:
        if base.shard is None and not explore:
            continue
        cands = [x for x in pool if (most is None or x.volume <= most) and x.memory != base]
        if rule is ReshardRule.GLOBAL_8:
            picked = cands[:RESHARDS_GLOBAL]
        else:
            picked = [x for layout in BUCKETS for x in [c for c in cands if c.layout is layout][:RESHARDS_PER_TYPE]]
            picked.sort(key=lambda x: -x.volume)
        for x in picked:
            if x.memory not in found and x.memory not in present:
                found.append(x.memory)
    return found
