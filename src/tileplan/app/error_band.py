"""tileplan's measured error band on an IPU, from its measurements
(`ipu-error-band.json`, beside this module), and where a plan's margin falls in it:
the report's `verdict.error_band` and each what-if row's `margin_percent` and
`inside_band`, by the rule `tileplan.report.sections_band` states.

The measurements are written by `benchmarks/fidelity.py` from the fidelity cases that
carry a published figure of all the memory on an IPU's worst tile
(tests/fidelity_cases.py, benchmarks/fidelity_training.py: Poplar's out-of-memory
messages and PopLiner's `max_tile_mem`), each with its source; the file also lists
tileplan's error on the published variables summed over an IPU's tiles, another
quantity, which the band leaves out. tests/test_error_band.py holds the file to the
cases and to what they plan now.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path

from tileplan.report.sections_band import BandMeasurement, ErrorBand

DATA = Path(__file__).with_name("ipu-error-band.json")


class Quantity(enum.Enum):
    """What a measurement compares. `WORST_TILE`: all the memory on an IPU's worst tile
    (Poplar's out-of-memory message), tileplan's figure the verdict's total peak plus
    the memory that is not tensors (what the budget sets aside). `POPLINER_TILE`:
    PopLiner's `max_tile_mem` terms on the worst tile (variables, vertex code and
    state, exchange and control code: no stack, host exchange, descriptors or gaps;
    a lower bound of the real tile, graphcore/popliner tests/test_single_stage.py),
    tileplan's figure the same less its stack. The band is made of these two.
    `VARIABLES`: the variables summed over an IPU's tiles (a profile's
    `max_vars_usage`), tileplan's each tile's peak tensor bytes summed; listed beside
    the band, not in it."""

    WORST_TILE = "worst tile, all memory"
    POPLINER_TILE = "worst tile, PopLiner's terms"
    VARIABLES = "variables, summed over the tiles"

    @property
    def worst_tile(self) -> bool:
        """A figure of the worst tile: in the band."""
        return self is not Quantity.VARIABLES


@dataclass(frozen=True, slots=True)
class Measurement:
    """One published figure and tileplan's on the same quantity (bytes), with the case,
    the IPU of its plan, the table the case is in, whether it was looked at while
    modelling, what the figure is and where it is published."""

    case: str
    table: str
    evidence: str
    quantity: Quantity
    ipu: int
    published: int
    tileplan: int
    what: str
    source: str

    def __post_init__(self) -> None:
        if self.published <= 0 or self.tileplan < 0 or self.ipu < 0:
            raise ValueError(f"{self.case}: a measurement's figures are bytes (published > 0), found "
                             f"published {self.published}, tileplan {self.tileplan}, ipu {self.ipu}")

    @property
    def error_percent(self) -> float:
        """(tileplan - published) / published, in percent (for display)."""
        return 100 * (self.tileplan - self.published) / self.published

    def to_json(self) -> dict[str, object]:
        return {"case": self.case, "table": self.table, "evidence": self.evidence, "quantity": self.quantity.value,
                "ipu": self.ipu, "published": self.published, "tileplan": self.tileplan,
                "error_percent": round(self.error_percent, 2), "what": self.what, "source": self.source}

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> Measurement:
        def integer(key: str) -> int:
            v = doc[key]
            assert isinstance(v, int) and not isinstance(v, bool), f"{key}: an integer"
            return v
        return cls(str(doc["case"]), str(doc["table"]), str(doc["evidence"]), Quantity(doc["quantity"]),
                   integer("ipu"), integer("published"), integer("tileplan"), str(doc["what"]), str(doc["source"]))


@dataclass(frozen=True, slots=True)
class Band:
    """The band in tenths of a percent (`lower` rounded down, `upper` up) and the
    worst-tile measurements it comes from."""

    lower: int
    upper: int
    measurements: tuple[Measurement, ...]

    @property
    def lower_percent(self) -> float:
        return self.lower / 10

    @property
    def upper_percent(self) -> float:
        return self.upper / 10

    def margin_percent(self, margin: int, tile_bytes: int) -> float:
        """`margin` as a share of the tile's memory, percent, to 0.1 (halves to even)."""
        return round(Fraction(1000 * margin, tile_bytes)) / 10

    def inside(self, margin: int, tile_bytes: int) -> bool:
        """Whether an error within the band could turn the verdict: lower < -margin /
        tile_bytes <= upper (percent), exactly."""
        return self.lower * tile_bytes < -1000 * margin <= self.upper * tile_bytes

    def section(self, margin: int, tile_bytes: int) -> ErrorBand:
        """`verdict.error_band` for a plan of this `margin` on a tile of `tile_bytes`."""
        return ErrorBand(tile_bytes=tile_bytes, lower_percent=self.lower_percent, upper_percent=self.upper_percent,
                         margin_percent=self.margin_percent(margin, tile_bytes),
                         inside=self.inside(margin, tile_bytes),
                         measurements=tuple(BandMeasurement(case=m.case, ipu=m.ipu, published=m.published,
                                                            tileplan=m.tileplan) for m in self.measurements))


def derive(measurements: tuple[Measurement, ...]) -> Band:
    """The band of the worst-tile measurements: their smallest error rounded down and
    their largest rounded up, to a tenth of a percent."""
    rows = tuple(m for m in measurements if m.quantity.worst_tile)
    if not rows:
        raise ValueError("an error band needs at least one worst-tile measurement")
    lower = min(1000 * (m.tileplan - m.published) // m.published for m in rows)
    upper = max(-(-1000 * (m.tileplan - m.published) // m.published) for m in rows)
    return Band(lower, upper, rows)


def read(path: Path = DATA) -> tuple[Measurement, ...]:
    """Every measurement of the file, in its order."""
    doc = json.loads(path.read_text())
    return tuple(Measurement.from_json(m) for m in doc["measurements"])


@cache
def ipu_band() -> Band:
    """The IPU's band, from the shipped measurements (read once)."""
    return derive(read())
