"""The report as data: its version-1 fields, its timeline and its typed sections.

`Report` holds the reference's fields (docs/report-format.md, "Top level"), the
timeline (`values`, `steps`) and, in `extra`, tileplan's additions in their JSON form
as they were read or built (written back as they are: a report reads and writes to the
same bytes). Read them through `Report.sections`, typed (`tileplan.report.sections`):
each is read from its JSON once, and again only if its JSON is replaced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from tileplan.model.timeline import Rejection, Step, Value
from tileplan.report.fields import U64_MAX, Bounds, Section
from tileplan.report.sections import (
    SECTIONS,
    AvailableMemoryProportion,
    Exact,
    NonTensor,
    Operations,
    Pipeline,
    Placement,
    PlacementSkipped,
    Program,
    RejectedOperation,
    Verdict,
    WhatIf,
    WhatIfSkipped,
)

VERSION = 1
#: the versions this tileplan reads and writes
VERSIONS = (1, 2)

__all__ = ["U64_MAX", "VERSION", "VERSIONS", "Extra", "PeakFigures", "Report", "Sections"]

S = TypeVar("S", bound=Section)


class Extra(Mapping[str, Any]):
    """A report's sections as JSON, by key: those given as JSON (read from a file) and
    those built here as typed sections, whose JSON is made on first use and kept. A
    writer that can write a built section from its typed form (version 2's operation
    columns) asks for it (`section`) and never makes its JSON objects: a million-value
    plan's 800,000 operation objects are a fifth of its memory. Immutable: `with_sections`
    makes another."""

    __slots__ = ("_json", "_sections", "_order")

    def __init__(self, given: Mapping[str, Any] | None = None, sections: Iterable[Section] = ()) -> None:
        self._json: dict[str, Any] = dict(given or {})
        self._sections: dict[str, Section] = {}
        for section in sections:
            self._json.pop(section.KEY, None)
            self._sections[section.KEY] = section
        self._order = (*(k for k in self._json if k not in self._sections), *self._sections)

    def __getitem__(self, key: str) -> Any:
        try:
            return self._json[key]
        except KeyError:
            section = self._sections[key]  # KeyError: no such section
            obj = self._json[key] = section.to_json()
            return obj

    def __contains__(self, key: object) -> bool:
        return key in self._json or key in self._sections

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"Extra({', '.join(self._order)})"

    def section(self, key: str) -> Section | None:
        """The typed section `key` was built from, None for JSON given as such."""
        return self._sections.get(key)

    def with_sections(self, sections: Iterable[Section]) -> Extra:
        """These sections with `sections` added (or replacing those of the same key)."""
        new = list(sections)
        keys = {s.KEY for s in new}
        out = Extra({k: v for k, v in self._json.items() if k not in self._sections and k not in keys},
                    [*(s for k, s in self._sections.items() if k not in keys), *new])
        for k, v in self._json.items():  # JSON already made from a kept section
            if k in self._sections and k not in keys:
                out._json[k] = v
        return out


@dataclass(frozen=True, slots=True)
class PeakFigures:
    standard: int | None
    interleaved: int | None
    total: int | None
    exchange_rows: int | None
    maximum_standard_allocation: int | None


@dataclass(frozen=True, slots=True)
class Report:
    """A whole report. `extra` holds tileplan's additions beyond version 1's original
    fields as JSON (verdict, exact accounting, what-if, ...), written after them;
    `sections` reads them typed.

    `steps` is a tuple of `Step` (a version-1 report) or a `StepTable` (version 2,
    and the planner's): both are sequences of `Step`. `version` is the version read
    (or to write)."""

    scope: str
    model: str
    tile_count: int
    budget_bytes: int
    interleaved_budget_bytes: int
    standard_contiguous_overflow_bytes: int | None
    fits_budget: bool
    support_reserve_bytes: int
    effective_peak_bytes: int | None
    peak: PeakFigures
    total_peak_step: int | None
    standard_peak_step: int | None
    interleaved_peak_step: int | None
    gemm_output_packing: str
    attention_products: str
    values: Sequence[Value]
    steps: Sequence[Step]
    rejections: tuple[Rejection, ...] = ()
    exchange_row_bytes: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    version: int = VERSION
    #: key -> (the JSON a section was read from, the section): read once per JSON object
    _typed: dict[str, tuple[object, Section | None]] = field(default_factory=dict, init=False, repr=False,
                                                             compare=False)

    @property
    def sections(self) -> Sections:
        return Sections(self)

    @property
    def bounds(self) -> Bounds:
        """What a step and a tile of this report are (what its sections are checked against)."""
        return Bounds(len(self.steps), self.tile_count)

    def with_sections(self, *sections: Section) -> Report:
        """This report with `sections` added (or replacing those of the same key)."""
        extra = self.extra if isinstance(self.extra, Extra) else Extra(self.extra)
        out = replace(self, extra=extra.with_sections(sections))
        keys = {s.KEY for s in sections}
        out._typed.update({k: v for k, v in self._typed.items() if k not in keys})
        return out

    def seed(self, sections: dict[str, Section]) -> None:
        """Record `sections` as the typed form of this report's `extra` (their JSON is there)."""
        for key, section in sections.items():
            self._typed[key] = (self.extra[key], section)


class Sections:
    """The typed sections of a report, None where it has none (`Report.sections`).

    A section is read from the report's JSON (`extra`) on first use, against the
    report's steps and tiles: strictly (an `InputError` naming its place) for the
    sections views read, field by field for the lenient ones (`Section.LENIENT`: a
    section that is not an object reads as None). The reader reads every section
    first, so a report read from a file never raises here."""

    __slots__ = ("_report",)

    def __init__(self, report: Report) -> None:
        self._report = report

    def given(self, cls: type[Section]) -> bool:
        """Whether the report has the section at all (even null, or of a wrong shape)."""
        return cls.KEY in self._report.extra

    def written(self, cls: type[Section]) -> Any:
        """The section's JSON as the report holds it (None when absent): what `check`
        compares a re-derived section with, field by field."""
        return self._report.extra.get(cls.KEY)

    def seeded(self, cls: type[S]) -> S | None:
        """The section in its typed form without reading or making JSON: as the builder
        made it (`Extra`) or as a reader recorded it (`Report.seed`); None otherwise."""
        report = self._report
        extra = report.extra
        if isinstance(extra, Extra):
            built = extra.section(cls.KEY)
            if built is not None:
                assert isinstance(built, cls), (cls.KEY, type(built))
                return built
        found = report._typed.get(cls.KEY)
        if found is None or cls.KEY not in extra or found[0] is not extra[cls.KEY] \
                or not isinstance(found[1], cls):
            return None
        return found[1]

    def get(self, cls: type[S]) -> S | None:
        report = self._report
        seeded = self.seeded(cls)
        if seeded is not None:
            return seeded
        obj = report.extra.get(cls.KEY)
        if obj is None:
            return None
        found = report._typed.get(cls.KEY)
        if found is not None and found[0] is obj:
            section = found[1]
        else:
            section = read_section(cls, obj, report.bounds)
            report._typed[cls.KEY] = (obj, section)
        assert section is None or isinstance(section, cls), (cls.KEY, type(section))
        return section

    @property
    def program(self) -> Program | None:
        return self.get(Program)

    @property
    def operations(self) -> Operations | None:
        return self.get(Operations)

    @property
    def rejected_operation(self) -> RejectedOperation | None:
        return self.get(RejectedOperation)

    @property
    def verdict(self) -> Verdict | None:
        return self.get(Verdict)

    @property
    def exact(self) -> Exact | None:
        return self.get(Exact)

    @property
    def what_if(self) -> WhatIf | None:
        return self.get(WhatIf)

    @property
    def what_if_skipped(self) -> WhatIfSkipped | None:
        return self.get(WhatIfSkipped)

    @property
    def available_memory_proportion(self) -> AvailableMemoryProportion | None:
        return self.get(AvailableMemoryProportion)

    @property
    def pipeline(self) -> Pipeline | None:
        return self.get(Pipeline)

    @property
    def non_tensor(self) -> NonTensor | None:
        return self.get(NonTensor)

    @property
    def placement(self) -> Placement | None:
        return self.get(Placement)

    @property
    def placement_skipped(self) -> PlacementSkipped | None:
        return self.get(PlacementSkipped)


def read_section(cls: type[S], obj: object, bounds: Bounds | None, place: str | None = None) -> S | None:
    """A section read from its JSON: None for a lenient section that is not an object."""
    if cls.LENIENT and not isinstance(obj, dict):
        return None
    return cls.from_json(obj, cls.KEY if place is None else place, bounds)


def read_sections(top: dict[str, Any], bounds: Bounds) -> dict[str, Section]:
    """Every section of a report's top level, read (strict ones raise `InputError`)."""
    out: dict[str, Section] = {}
    for key, cls in SECTIONS.items():
        obj = top.get(key)
        if obj is not None:
            section = read_section(cls, obj, bounds)
            if section is not None:
                out[key] = section
    return out
