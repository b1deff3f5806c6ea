"""The sections beyond the tensors, read field by field (`LENIENT`: a malformed field
reads as None, a report written before them has none): which IPU of a pipeline a
report is, the products over the available memory proportion, the memory that is not
tensors, the placements of the worst tiles and a tile not placed
(docs/report-format.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

from tileplan.errors import InputError
from tileplan.report.fields import Context, Count, Fields, Positive, Section, json_field

@dataclass(frozen=True, slots=True, kw_only=True)
class Pipeline(Section):
    """This report is one IPU of a pipeline: IPU `ipu` of `ipus`, the layers on each
    IPU and its own layers [first, end)."""

    KEY: ClassVar[str] = "pipeline"
    LENIENT: ClassVar[bool] = True
    DESCRIPTION: ClassVar[str | None] = (
        "This report is one IPU of a pipeline over several (inference): its index, the IPU count, the layers on "
        "each IPU (optimum-graphcore's layers_per_ipu) and this IPU's layers [first, end).")
    ipu: Count | None = None
    ipus: Positive | None = None
    layers_per_ipu: tuple[Count, ...] | None = json_field(None, most=4096, schema={"minItems": 1})
    layers: tuple[Count, Count] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CapExceeded(Section):
    operation: Count | None = None
    name: str | None = None
    temporary_bytes: Count | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AvailableMemoryProportion(Section):
    """Poplar's availableMemoryProportion: the cap on one product's temporary bytes per
    tile and the products planned over it."""

    KEY: ClassVar[str] = "available_memory_proportion"
    LENIENT: ClassVar[bool] = True
    DESCRIPTION: ClassVar[str | None] = (
        "Poplar's availableMemoryProportion: the cap on one matmul's or convolution's temporary bytes per tile "
        "(cap_bytes = floor(proportion x tile_bytes), the machine's bytes per tile), and the products planned over "
        "it (planned anyway, with their least temporary split).")
    proportion: float | None = json_field(None, schema={"exclusiveMinimum": 0, "maximum": 1})
    cap_bytes: Count | None = None
    tile_bytes: Count | None = None
    exceeded: tuple[CapExceeded, ...] | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NonTensorCounts(Section):
    kinds: Count | None = None
    compute_steps: Count | None = None
    program_steps: Count | None = None
    exchange_steps: Count | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NonTensor(Section):
    """Estimated bytes per tile of memory that is not tensors, by Poplar's categories,
    the counts they come from and the outlining they were counted under; whether the
    verdict counts them (all memory) or the budgets' reserve stands for them, and how
    far their total passes that reserve."""

    KEY: ClassVar[str] = "non_tensor"
    LENIENT: ClassVar[bool] = True
    DESCRIPTION: ClassVar[str | None] = (
        "Estimated bytes per tile of memory that is not tensors (vertex code, vertex state, exchange code, "
        "control code, stack), the counts they come from and the outlining they were counted under (shared or "
        "per-layer); in_verdict: the verdict counts them with the tensors against the tile (support_reserve_bytes "
        "is then their total), else a fixed reserve stands for them and over_reserve is how far the total exceeds "
        "support_reserve_bytes (docs/report-format.md).")
    vertex_code: Count | None = None
    vertex_state: Count | None = None
    exchange_code: Count | None = None
    control_code: Count | None = None
    stack: Count | None = None
    total: Count | None = None
    reserve: Count | None = None
    over_reserve: Count | None = None
    counts: NonTensorCounts | None = None
    outlining: Literal["shared", "per-layer"] | None = None
    in_verdict: bool | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Buffer(Section):
    """One placed buffer, written as the list [what, storage group, region, first step,
    end step (exclusive), bytes, offset]."""

    what: Literal["group", "scratch", "exchange"]
    group: Count | None = None
    region: Literal["standard", "interleaved"]
    lower: Count
    upper: Count
    size: Count
    offset: Count

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        cells = f.items()
        if len(cells) != 7:
            raise InputError(f"expected [what, group, region, first, end, bytes, offset], found {len(cells)} "
                             "entries", f.place)
        what, group, region, lower, upper, size, offset = cells
        kinds = ("group", "scratch", "exchange")
        if what.string() not in kinds or region.string() not in ("standard", "interleaved"):
            raise InputError("expected what in group, scratch, exchange and region standard or interleaved",
                             f.place)
        return cls(what=what.obj, group=group.integer(nullable=True), region=region.obj, lower=lower.integer(),
                   upper=upper.integer(), size=size.integer(), offset=offset.integer())

    def to_json(self) -> list[Any]:
        return [self.what, self.group, self.region, self.lower, self.upper, self.size, self.offset]

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {"type": "array", "prefixItems": [
            {"enum": ["group", "scratch", "exchange"]}, {"anyOf": [{"$ref": "#/$defs/bytes"}, {"type": "null"}]},
            {"enum": ["standard", "interleaved"]}, *[{"$ref": "#/$defs/bytes"}] * 4], "minItems": 7, "maxItems": 7}


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacedTile(Section):
    """One placed tile: its buffers' offsets, their height against the capacity, the
    lower bound (its largest live total) and how the placement was found."""

    tile: Count | None = None
    why: str | None = None
    capacity: Count | None = None
    height: Count | None = None
    lower_bound: Count | None = None
    gaps: Count | None = None
    optimal: bool | None = None
    fits: bool | None = None
    infeasible: bool | None = None
    method: str | None = None
    peak_step: Count | None = None
    largest_free: Count | None = None
    buffers: tuple[Buffer, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement(Section):
    """Address placements of the worst tiles, and the verdict they give."""

    KEY: ClassVar[str] = "placement"
    LENIENT: ClassVar[bool] = True
    DESCRIPTION: ClassVar[str | None] = (
        "Address placements of the worst tiles (docs/report-format.md): whether the buffers live on a tile can be "
        "given offsets within the budget, interleaved ones in the interleaved region.")
    verdict: str | None = None
    tiles: tuple[PlacedTile, ...] | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementSkipped(Section):
    """The worst tile was not placed: it holds more buffers than a plan places."""

    KEY: ClassVar[str] = "placement_skipped"
    LENIENT: ClassVar[bool] = True
    DESCRIPTION: ClassVar[str | None] = (
        "The worst tile was not placed: it holds more buffers than the limit placed per tile in a plan; the "
        "verdict is by bytes.")
    tile: Count | None = None
    buffers: Count | None = None
    limit: Positive | None = None
    reason: str | None = None
