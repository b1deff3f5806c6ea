"""The verdict's error band (`verdict.error_band`, docs/report-format.md): tileplan's
measured error against every published figure of all the memory on an IPU's worst
tile, the band those errors span, and where this plan's margin falls in it.

The rule, stated once here for the builder (`tileplan.app.error_band`) and for
`tileplan check` (`tileplan.check.band`), each of which applies it with its own code:

* a measurement's error is (tileplan - published) / published, on the same quantity:
  all the memory on the worst tile, tileplan's figure the verdict's total peak plus
  what the budget sets aside for the memory that is not tensors (`tile_bytes` -
  `budget_bytes`);
* the band is the smallest and the largest error, in percent, rounded outward to 0.1
  (`lower_percent` down, `upper_percent` up);
* `margin_percent` is the verdict's margin (`budget` - `peak`, bytes) as a share of
  the tile's memory, in percent, rounded to 0.1 (halves to even);
* `inside`: the verdict could be turned by an error within the band, that is
  `lower_percent` < -margin / tile_bytes x 100 <= `upper_percent`, exactly (from the
  integers, not the rounded `margin_percent`). A real tile holding tileplan's figure
  divided by (1 + error) fits for every error of the band when the margin is at least
  -`lower_percent`, and is over for every one when it is below -`upper_percent`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.report.fields import Count, Positive, Section, json_field

#: the most measurements a report's band may list
MAX_MEASUREMENTS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class BandMeasurement(Section):
    """One published figure of all the memory on an IPU's worst tile (`published`,
    bytes) and tileplan's figure for that tile (`tileplan`: the total peak plus what
    the budget sets aside): a case of docs/fidelity.md or docs/fidelity-training.md
    and the IPU of its plan."""

    case: str
    ipu: Count
    published: Positive
    tileplan: Count


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorBand(Section):
    """tileplan's measured error on the worst tile's memory, the band it spans and where
    this plan's margin falls in it (see the module docstring for the rule)."""

    tile_bytes: Positive
    lower_percent: float
    upper_percent: float
    margin_percent: float
    inside: bool
    measurements: tuple[BandMeasurement, ...] = json_field((), most=MAX_MEASUREMENTS,
                                                           schema={"minItems": 1})

    def text(self) -> str:
        """The band as people read it: "-18.8 % to +4.5 %"."""
        return f"{self.lower_percent:+.1f} % to {self.upper_percent:+.1f} %"
