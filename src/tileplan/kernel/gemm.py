"""The GEMM partitioner: split [.., M, K] x [K, N] over the tiles for the AMP.

Every tile computes one (M, K, N) block: partitions pm x pk x pn = tile_count. Rows
come in blocks of the AMP's `rows` (16), K in blocks of its `input_channels` (32 for
FP8, 16 for F16), N in column pairs. A tile's blocks:

    m_tile = ceil(ceil(M / rows) / pm) * rows
    k_tile = ceil(ceil(K / input_channels) / pk) * input_channels   (the inner_block)
    n_tile = ceil(ceil(N / 2) / pn) * 2

Work is the padded multiply-accumulates on the busiest tile (N rounded up to whole
AMP passes of `output_channels`); bytes are a tile's left block, weight block (both
in the multiply precision) and partials block (accumulate precision). Among the
splits within `WORK_SLACK` (10 %) of the least work, the partitioner takes the fewest
bytes per tile, then the least work, the fewest K partials, the most M partitions.
Worked example (the reference): M 729, K 588, N 1152, FP8, 1472 tiles -> pm 46 x 16
rows, pk 4 x 160, pn 8 x 144: 16 x 160 x 144 = 368640 MACs per tile, the least; the
next splits need 409600 (11 % more), so this one is taken. For the QKV projection
(K 1152, N 3456) the least-work split (46, 4, 8) needs 142848 B per tile, while
(23, 4, 16) needs 85248 B for 3.7 % more work: the partitioner takes the latter.
The left operand is replicated pn times, the weights pm times; K partials
[pk, .., M, N] go to interleaved memory and a Sum adds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tileplan.errors import TileplanError
from tileplan.model.layout import (
    AMP_TRANSPOSED_LEFT, Axis, AxisTiling, Layout, MemoryClass, Padding, TensorTiling, block_major,
)
from tileplan.model.machine import AmpGeometry
from tileplan.model.precision import Precision
from tileplan.model.tiling import ceil_div, round_up


#: splits within 10 % of the least work compete on bytes per tile
WORK_SLACK_NUM, WORK_SLACK_DEN = 11, 10


class PlanningError(TileplanError):
    """An operation that cannot be planned at all (impossible sizes for its partitioner)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class GemmPartition:
    """A chosen split. Invariant: pm * pk * pn == tile_count; tiles are
    m + pm * k + pm * pk * n."""

    m: int
    k: int
    n: int
    pm: int
    pk: int
    pn: int
    rows: int
    m_tile: int
    k_tile: int
    n_tile: int
    geometry: AmpGeometry

    def __post_init__(self) -> None:
        assert self.m_tile % self.rows == 0 and self.k_tile % self.geometry.input_channels == 0, self
        assert self.n_tile % 2 == 0, self

    @property
    def tile_count(self) -> int:
        return self.pm * self.pk * self.pn

    @property
    def work(self) -> int:
        """Padded multiply-accumulates on each tile, N in whole AMP passes."""
        return self.m_tile * self.k_tile * round_up(self.n_tile, self.geometry.output_channels)


def _split(m: int, k: int, n: int, pm: int, pk: int, pn: int, g: AmpGeometry) -> GemmPartition:
    return GemmPartition(
        m, k, n, pm, pk, pn, g.rows,
        m_tile=ceil_div(ceil_div(m, g.rows), pm) * g.rows,
        k_tile=ceil_div(ceil_div(k, g.input_channels), pk) * g.input_channels,
        n_tile=ceil_div(ceil_div(n, 2), pn) * 2,
        geometry=g,
    )


def partition_gemm(m: int, k: int, n: int, tile_count: int, geometry: AmpGeometry, multiply_bytes: int,
                   accumulate_bytes: int, name: str = "gemm", cap_bytes: int | None = None) -> GemmPartition:
    """The best split of an M x K x N product over `tile_count` tiles (see module doc);
    memoized on everything but `name`, which only locates errors.

    `cap_bytes` is Poplar's availableMemoryProportion x the tile's bytes: a cap on the
    product's temporary bytes per tile (`temporary_bytes`: its left, weight and partials
    blocks). When the split above exceeds it, the least-work split under the cap is
    taken instead; when no split is under it, the one with the fewest temporary bytes
    (Poplar's soft cap: it plans anyway, and the report names the product)."""
    try:
        return _best_partition(m, k, n, tile_count, geometry, multiply_bytes, accumulate_bytes, cap_bytes)
    except PlanningError as e:
        raise PlanningError(e.detail, name) from None


def gemm_text(p: GemmPartition, multiply: Precision, accumulate: Precision) -> str:
    """The `Gemm` step's operation text for a partition (the reference's form)."""
    return (f"Gemm {{ multiply: {multiply.to_text()}, accumulate: {accumulate.to_text()}, mode: Initialize, "
            f"weights: Standard, inner_block: {p.k_tile}, output_columns: {p.geometry.output_channels} }}")


def temporary_bytes(p: GemmPartition, multiply_bytes: int, accumulate_bytes: int) -> int:
    """A tile's left block, weight block (multiply precision) and partials block
    (accumulate precision): what poplin's planner counts against the cap."""
    return (p.m_tile * p.k_tile + p.k_tile * p.n_tile) * multiply_bytes + p.m_tile * p.n_tile * accumulate_bytes


@lru_cache(maxsize=4096)
def _best_partition(m: int, k: int, n: int, tile_count: int, geometry: AmpGeometry, multiply_bytes: int,
                    accumulate_bytes: int, cap_bytes: int | None = None) -> GemmPartition:
    if min(m, k, n, tile_count) < 1:
        raise PlanningError(f"gemm {m} x {k} x {n} over {tile_count} tiles: every size must be >= 1")
    candidates: list[tuple[int, int, GemmPartition]] = []
    for pm in _divisors(tile_count):
        for pk in _divisors(tile_count // pm):
            pn = tile_count // pm // pk
            # no split may leave a whole partition of padding along K (it would add zeros)
            if (pk - 1) * ceil_div(ceil_div(k, geometry.input_channels), pk) >= ceil_div(k, geometry.input_channels):
                continue
            p = _split(m, k, n, pm, pk, pn, geometry)
            candidates.append((p.work, temporary_bytes(p, multiply_bytes, accumulate_bytes), p))
    assert candidates, "pk = 1 is always a legal split"
    least = min(work for work, _, _ in candidates)
    within = [c for c in candidates if c[0] * WORK_SLACK_DEN <= least * WORK_SLACK_NUM]
    best = min(within, key=lambda c: (c[1], c[0], c[2].pk, -c[2].pm))
    if cap_bytes is None or best[1] <= cap_bytes:
        return best[2]
    under = [c for c in candidates if c[1] <= cap_bytes]
    if under:
        return min(under, key=lambda c: (c[0], c[1], c[2].pk, -c[2].pm))[2]
    return min(candidates, key=lambda c: (c[1], c[0], c[2].pk, -c[2].pm))[2]


@lru_cache(maxsize=256)
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


# Layouts of a partition -------------------------------------------------------------

def _axis(axis: Axis, partitions: int, block: int, stride: int | None, padding: Padding = Padding.ZERO) -> AxisTiling:
    return AxisTiling(axis, partitions, 1, block, block, 1, padding, stride)


def left_layout(p: GemmPartition, rank: int, machine_prefix: str, resting: bool) -> Layout:
    """The left operand [.., M, K]: M x K blocks, replicated over the pn N partitions.

    `resting` is the form a value waits in (axes counted from the end, K's stride by
    default); the Gemm reads the operand form (axes from the start, explicit strides).
    Both put block (m, k) of replica n on tile m + pm * k + pm * pk * n.
    """
    if resting:
        axes = (_axis(Axis.from_end(2), p.pm, p.rows, 1), _axis(Axis.from_end(1), p.pk, p.k_tile, None))
    else:
        axes = (_axis(Axis.from_start(rank - 2), p.pm, p.rows, 1),
                _axis(Axis.from_start(rank - 1), p.pk, p.k_tile, p.pm))
    return Layout(block_major(p.k_tile, p.rows), TensorTiling(p.tile_count, p.pn, axes),
                  MemoryClass(machine_prefix, "Standard"))


def weight_layout(p: GemmPartition, machine_prefix: str) -> Layout:
    """The weights [K, N]: K x N blocks in AMP order, replicated over the pm M partitions."""
    axes = (_axis(Axis.from_end(2), p.pk, p.k_tile, None), _axis(Axis.from_end(1), p.pn, 2, None))
    return Layout(AMP_TRANSPOSED_LEFT, TensorTiling(p.tile_count, p.pm, axes), MemoryClass(machine_prefix, "Standard"))


def partials_layout(p: GemmPartition, rank: int, machine_prefix: str) -> Layout:
    """The K partials [pk, .., M, N] (rank + 1 dims), one block per tile, interleaved."""
    axes = (_axis(Axis.from_start(rank - 1), p.pm, p.rows, 1),
            _axis(Axis.from_start(rank), p.pn, 2, p.pm * p.pk),
            _axis(Axis.from_start(0), p.pk, 1, p.pm, Padding.REJECT))
    return Layout(AMP_TRANSPOSED_LEFT, TensorTiling(p.tile_count, 1, axes), MemoryClass(machine_prefix, "Interleaved"))


def output_layout(p: GemmPartition, machine_prefix: str) -> Layout:
    """The summed output [.., M, N]: each tile keeps its slice of its N block, so the
    N axis has pk x pn partitions; partial (m, k, n) and output (m, k + pk * n) share
    a tile."""
    axes = (_axis(Axis.from_end(2), p.pm, p.rows, 1), _axis(Axis.from_end(1), p.pk * p.pn, 2, p.pm))
    return Layout(AMP_TRANSPOSED_LEFT, TensorTiling(p.tile_count, 1, axes), MemoryClass(machine_prefix, "Interleaved"))
