"""The report's `exact` section and the live values on the peak tile."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from tileplan.model.tiling import Shards
from tileplan.model.timeline import Step, Value
from tileplan.planner.exact import ExactAccounting, tile_values
from tileplan.views.classes import class_rows
from tileplan.report.sections import (
    EXACT_COLUMNS,
    Exact,
    ExactPeak,
    ExactPeaks,
    Histogram,
    PeakGroup,
    PeakTile,
    PeakValue,
    Scratch,
    TileFigures,
    TopTile,
)

EXACT_MODEL = ("Bytes on each tile from the tile maps (each value rounded up per tile to its alignment, a storage "
               "group at the per-tile maximum of its members); a step's scratch is charged to every tile at its "
               "stated size. The estimate (peak.*) adds per-allocation maxima and is an upper bound.")
HISTOGRAM_BINS = 32
TOP_TILES = 5
TOP_VALUES = 10


def exact_section(exact: ExactAccounting, estimate_total: int | None) -> Exact:
    peaks = {region: ExactPeak(bytes=b, tile=tile, step=step)
             for region, (b, tile, step) in ((r, exact.peak(r)) for r in ("total", "standard", "interleaved"))}
    tile_peak = exact.tile_peak
    top = sorted(range(len(tile_peak)), key=lambda t: (-int(tile_peak[t]), t))[:TOP_TILES]
    return Exact(
        model=EXACT_MODEL,
        peak=ExactPeaks(**peaks),
        estimate_total=estimate_total,
        ratio_exact_to_estimate=ratio(peaks["total"].bytes, estimate_total),
        # an int64 array of [tile, total, standard, interleaved] rows (written as JSON lists)
        steps=np.column_stack((exact.step_tile, exact.step_total, exact.step_standard, exact.step_interleaved)),
        steps_columns=EXACT_COLUMNS,
        tiles=TileFigures(peak=tuple(tile_peak.tolist()), peak_step=tuple(exact.tile_peak_step.tolist()),
                          peak_resident=tuple(exact.tile_peak_resident.tolist()),
                          peak_interleaved=tuple(exact.tile_peak_interleaved.tolist())),
        histogram=histogram(tile_peak),
        top_tiles=tuple(TopTile(tile=t, bytes=int(tile_peak[t]), step=int(exact.tile_peak_step[t]),
                                resident=int(exact.tile_peak_resident[t])) for t in top),
    )


def ratio(exact: int, estimate: int | None) -> float | None:
    """exact / estimate to 4 decimals (a number for people, not for arithmetic)."""
    return None if not estimate else round(exact / estimate, 4)


def histogram(tile_peak: np.ndarray) -> Histogram:
    """Tile peaks in equal integer-width bins from the smallest to the largest."""
    lo, hi = int(tile_peak.min()), int(tile_peak.max())
    width = max(1, -(-(hi - lo + 1) // HISTOGRAM_BINS))
    counts = np.bincount((tile_peak - lo) // width, minlength=HISTOGRAM_BINS)
    return Histogram(first_bytes=lo, bin_bytes=width, counts=tuple(counts.tolist()))


def peak_tile_section(values: Sequence[Value], steps: Sequence[Step], shards: Mapping[int, Shards],
                      exact: ExactAccounting, training: bool = False) -> PeakTile:
    """The worst tile at the peak step: its live values with their bytes there (and
    with `training`, their classes: `tileplan.views.classes`)."""
    _, tile, step = exact.peak("total")
    s = steps[step]
    live = tile_values(values, shards, s, tile)
    scratch = s.scratch.get("standard", 0) + s.scratch.get("interleaved", 0)
    return PeakTile(
        tile=tile, step=step, operation=s.operation, source=s.source,
        scratch=Scratch(standard=s.scratch.get("standard", 0), interleaved=s.scratch.get("interleaved", 0)),
        values=tuple(PeakValue(id=v.id, name=v.name, shape=tuple(v.shape), precision=v.precision.to_text(),
                               memory_class=v.memory_class.to_text(), bytes=b, resident=v.resident)
                     for v, b in live[:TOP_VALUES]),
        values_shown=min(TOP_VALUES, len(live)),
        values_live=len(live),
        groups=top_groups(live),
        classes=class_rows(live, scratch) if training else None,
    )


def top_groups(live: list[tuple[Value, int]]) -> tuple[PeakGroup, ...]:
    """Live bytes on the tile by value group (layers folded together), largest first."""
    sums: dict[str, list[int]] = {}
    for v, b in live:
        entry = sums.setdefault(v.group, [0, 0])
        entry[0] += b
        entry[1] += 1
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_VALUES]
    return tuple(PeakGroup(group=g, bytes=b, values=n) for g, (b, n) in ranked)
