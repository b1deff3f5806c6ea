"""The what-if sections: the plan as it is and re-planned with each knob turned
(`what_if`), why they were not run (`what_if_skipped`), and a sweep's rows: other
plans, each with the `tileplan plan` command that re-derives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

from tileplan.report.fields import Context, Count, Fields, Positive, Section, Signed, json_field, slots_of

@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline(Section):
    """The plan as it is, as a what-if row reads it: what it came to and its command."""

    fits: bool | None = None
    scope: str | None = None
    peak: Count | None = json_field(None, null=True)
    budget: Signed | None = None  # negative: not tensors alone exceed the tile
    margin: Signed | None = json_field(None, null=True)
    tile: Count | None = json_field(None, null=True)
    step: Count | None = json_field(None, null=True)
    interleaved_peak: Count | None = json_field(None, null=True)
    command: str | None = None
    #: the margin as a share of the tile's memory (percent, to 0.1) and whether it lies
    #: inside tileplan's measured error band (`verdict.error_band`); absent without one
    margin_percent: float | None = json_field(None, omit=True)
    inside_band: bool | None = json_field(None, omit=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatIfRow(Section):
    """The plan re-planned with one knob turned: what it came to and the command that
    re-derives it (a tile and a step of that other plan). A row that could not be
    planned (a batch the file fixes, a knob this model does not have) holds its knob,
    value and command and, in `error`, why (one line); none of the outcome's fields."""

    knob: str | None = None
    value: str | None = None
    fits: bool | None = None
    scope: str | None = None
    peak: Count | None = json_field(None, null=True)
    budget: Signed | None = None  # negative: not tensors alone exceed the tile
    margin: Signed | None = json_field(None, null=True)
    tile: Count | None = json_field(None, null=True)
    step: Count | None = json_field(None, null=True)
    interleaved_peak: Count | None = json_field(None, null=True)
    command: str | None = None
    margin_percent: float | None = json_field(None, omit=True)
    inside_band: bool | None = json_field(None, omit=True)
    error: str | None = json_field(None, omit=True)

    #: the fields an unplanned row writes
    UNPLANNED: ClassVar[tuple[str, ...]] = ("knob", "value", "command", "error")

    def to_json(self) -> dict[str, Any]:
        out = Section.to_json(self)
        if self.error is not None:
            return {k: out[k] for k in self.UNPLANNED}
        return out

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        planned = cls.fields_schema()
        del planned["properties"]["error"]
        properties = {k: v for k, v in planned["properties"].items() if k in cls.UNPLANNED}
        properties["error"] = {"type": "string", "description": "why this row could not be planned (one line)"}
        unplanned = {"type": "object", "required": list(cls.UNPLANNED), "properties": properties,
                     "additionalProperties": False}
        return {"oneOf": [planned, unplanned]}


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatIf(Section):
    """The plan as it is (`baseline`) and re-planned with each knob (`rows`). A report
    may hold the rows alone, as a list (then `baseline` is None)."""

    KEY: ClassVar[str] = "what_if"
    baseline: Baseline | None = None
    rows: tuple[WhatIfRow, ...] = ()
    note: str | None = None

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        if isinstance(f.obj, list):
            return cls(rows=tuple(WhatIfRow.decode(r, ctx) for r in f.items()))
        return cls.decode_fields(f, ctx)


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatIfSkipped(Section):
    """Why the what-if re-plans were not run (a program of more values than `limit`)."""

    KEY: ClassVar[str] = "what_if_skipped"
    LENIENT: ClassVar[bool] = True
    DESCRIPTION: ClassVar[str | None] = (
        "The what-if re-plans were not run: the program has more values than the limit (each row re-plans the "
        "whole program); `tileplan plan --what-if` runs them.")
    values: Count | None = None
    limit: Positive | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRow(Section):
    """One combination of a sweep: its knobs (name -> value), what its plan came to,
    and the command that re-plans it."""

    knobs: tuple[tuple[str, str | int], ...] = ()
    outcome: Baseline

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        outcome = Baseline.decode(Fields({k: v for k, v in f.mapping().obj.items() if k in _OUTCOME_KEYS},
                                         f.place), ctx)
        knobs = tuple((k, v) for k, v in f.obj.items() if k not in _OUTCOME_KEYS and isinstance(v, (str, int)))
        return cls(knobs=knobs, outcome=outcome)

    def to_json(self) -> dict[str, Any]:
        return {**dict(self.knobs), **self.outcome.to_json()}


_OUTCOME_KEYS = tuple(s.key for s in slots_of(Baseline))


@dataclass(frozen=True, slots=True, kw_only=True)
class Sweep(Section):
    """A sweep's file (`MODEL.sweep.json`): the base command, the knobs and one row per
    combination."""

    base: str
    knobs: tuple[str, ...]
    rows: tuple[SweepRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "kind": "sweep", "base": self.base, "knobs": list(self.knobs),
                "rows": [r.to_json() for r in self.rows]}
