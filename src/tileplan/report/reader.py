"""What reading a report of either version shares: interned texts, the top-level
scalars, the rejections and the typed sections (`Report.sections`), each with the
JSON path of any error.

Version 1 (`format_v1`) and version 2 (`format_v2`) read their timelines their own
way and hand the rest here; `format.from_json_dict` picks the version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tileplan.errors import InputError, TileplanError
from tileplan.model.layout import Layout
from tileplan.model.precision import Precision
from tileplan.model.timeline import Rejection, Step, Value
from tileplan.report.fields import U64_MAX, Bounds, Fields
from tileplan.report.model import PeakFigures, Report, read_sections
from tileplan.report.sections import MAX_TILES, Section

# What a real report can hold. A report beyond these is refused at reading with one
# line, before any reader allocates per tile or multiplies shard sizes in int64.
#: dimensions of a value
MAX_RANK = 16

#: the top-level fields of version 1 (anything else is a section, in `Report.extra`)
KNOWN_TOP = frozenset({
    "version", "scope", "model", "tile_count", "budget_bytes", "interleaved_budget_bytes",
    "standard_contiguous_overflow_bytes", "fits_budget", "support_reserve_bytes",
    "effective_peak_bytes", "peak", "total_peak_step", "standard_peak_step",
    "interleaved_peak_step", "gemm_output_packing", "attention_products", "timeline",
    "rejections", "exchange_row_bytes",
})


class Interned:
    """Each distinct layout, precision, shape and operation text of a report, read
    once and shared by every value and step that names it."""

    def __init__(self) -> None:
        self.layouts: dict[str, Layout] = {}
        self.precisions: dict[str, Precision] = {}
        self.shapes: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.texts: dict[str, str] = {}

    def layout(self, text: str, place: str) -> Layout:
        found = self.layouts.get(text)
        if found is None:
            try:
                found = Layout.from_text(text)
            except TileplanError as e:
                raise e.at(place) from None
            check_layout_bounds(found, place)
            self.layouts[text] = found
        return found

    def precision(self, text: str, place: str) -> Precision:
        found = self.precisions.get(text)
        if found is None:
            try:
                found = Precision.from_text(text)
            except TileplanError as e:
                raise e.at(place) from None
            self.precisions[text] = found
        return found

    def shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.shapes.setdefault(shape, shape)

    def text(self, text: str) -> str:
        return self.texts.setdefault(text, text)


def check_layout_bounds(layout: Layout, place: str) -> None:
    """Refuse a layout for more tiles than any machine has (`MAX_TILES`) before any
    reader sizes something per tile. Other layout numbers, however large, are read:
    `check` sizes shards with exact integers and names what is wrong."""
    tiling = layout.tiling
    if not 1 <= tiling.tile_count <= MAX_TILES:
        raise InputError(f"tile_count must be in [1, {MAX_TILES}], found {tiling.tile_count}", place)


def read_tile_count(r: Fields) -> int:
    return r.sub("tile_count").integer(minimum=1, maximum=MAX_TILES)


def read_rejections(r: Fields) -> tuple[Rejection, ...]:
    return tuple(Rejection(j.sub("value").integer(), j.sub("name").string(), j.sub("reason").string())
                 for j in (r.sub("rejections").items() if r.has("rejections") else []))


def assemble(r: Fields, version: int, tile_count: int, values: tuple[Value, ...], steps: Sequence[Step],
             top: dict[str, Any], decoded: dict[str, Section] | None = None) -> Report:
    """The `Report` of a top level read by `r` (both versions), its timeline read:
    its scalar fields, the rejections and every section, typed. `top` is the top
    level with any section a version decoded itself (version 2's columns) in JSON form
    already, typed in `decoded`."""
    view = Fields(top, "")
    rejections = read_rejections(view)
    extra = {k: v for k, v in top.items() if k not in KNOWN_TOP}
    rest = {k: v for k, v in extra.items() if not decoded or k not in decoded}
    sections = {**read_sections(rest, Bounds(len(steps), tile_count)), **(decoded or {})}
    peak = r.sub("peak")
    nullable_step = lambda key: r.sub(key).integer(nullable=True)  # noqa: E731
    report = Report(
        version=version,
        scope=r.sub("scope").string(), model=r.sub("model").string(),
        tile_count=tile_count,
        # negative where the memory that is not tensors alone exceeds the tile
        # (`Machine.counting_all_memory`)
        budget_bytes=r.sub("budget_bytes").integer(minimum=-U64_MAX),
        interleaved_budget_bytes=r.sub("interleaved_budget_bytes").integer(minimum=-U64_MAX),
        standard_contiguous_overflow_bytes=r.sub("standard_contiguous_overflow_bytes").integer(nullable=True),
        fits_budget=r.sub("fits_budget").boolean(),
        support_reserve_bytes=r.sub("support_reserve_bytes").integer(),
        effective_peak_bytes=r.sub("effective_peak_bytes").integer(nullable=True),
        peak=PeakFigures(*(peak.sub(k).integer(nullable=True) for k in (
            "standard", "interleaved", "total", "exchange_rows", "maximum_standard_allocation"))),
        total_peak_step=nullable_step("total_peak_step"),
        standard_peak_step=nullable_step("standard_peak_step"),
        interleaved_peak_step=nullable_step("interleaved_peak_step"),
        gemm_output_packing=r.sub("gemm_output_packing").string(),
        attention_products=r.sub("attention_products").string(),
        values=values, steps=steps, rejections=rejections,
        exchange_row_bytes=r.sub("exchange_row_bytes").integer() if r.has("exchange_row_bytes") else None,
        extra=extra,
    )
    report.seed(sections)
    return report
