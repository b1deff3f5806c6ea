"""What `tileplan check` finds and how it says it: findings, the result, the text of
reported numbers (null, the reference's sentinel, a wrapped subtraction) and names,
and the comparison of a reported number or JSON section with the one re-derived."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tileplan.errors import InputError
from tileplan.report.fields import U64_MAX, Section
from tileplan.report.model import Report

S = TypeVar("S", bound=Section)

SENTINEL = U64_MAX  # the reference's "unknown"
WRAP_FLOOR = 2**63
#: how the section checks report a finding: (kind, place, message)
Add = Callable[[str, str, str], None]


@dataclass(frozen=True, slots=True)
class Finding:
    """One result of the check. `kind`: "rejected" (an unrepresentable value the report
    sizes as null and lists under rejections: consistent), "unrepresentable" (one it
    does not), "disagree" or "defect"."""

    kind: str
    place: str
    message: str

    def to_text(self) -> str:
        return f"{self.kind}: {self.place}: {self.message}"


@dataclass(frozen=True, slots=True)
class Peaks:
    """Peak usage per region and in total with the first step reaching each, and the
    largest standard storage group live in any step; None where a size is unknown."""

    standard: int | None
    interleaved: int | None
    total: int | None
    standard_step: int | None
    interleaved_step: int | None
    total_step: int | None
    maximum_standard_allocation: int | None


@dataclass(slots=True)
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    values_agreeing: int = 0
    values_total: int = 0
    steps_agreeing: int = 0
    steps_total: int = 0
    #: Peaks of the representable values alone (unrepresentable ones sized 0): a lower
    #: bound shown when the real peaks cannot be known.
    known_peaks: Peaks | None = None

    @property
    def consistent(self) -> bool:
        return all(f.kind == "rejected" for f in self.findings)

    def add(self, kind: str, place: str, message: str) -> None:
        self.findings.append(Finding(kind, place, message))


def describe_number(n: int | None) -> str:
    """How a reported number reads: null, the sentinel, a wrapped subtraction, or itself."""
    if n is None:
        return "null"
    if n == SENTINEL:
        return "18446744073709551615 (the sentinel 2^64 - 1)"
    if n >= WRAP_FLOOR:
        return f"{n} (= 2^64 - 1 - {SENTINEL - n}: wrapped arithmetic)"
    return str(n)


def text(s: str, limit: int = 80) -> str:
    """A name from a report as one printable line: escapes for what is not printable
    (newlines, lone surrogates), cut at `limit` characters."""
    if len(s) <= limit and s.isprintable():
        return s
    out = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in s[:limit])
    return out + ("..." if len(s) > limit else "")


def compare(result: CheckResult, place: str, reported: int | None, derived: int | None,
             why_unknown: str = "") -> bool:
    """Record a finding unless `reported` equals `derived`; True when they agree."""
    if reported == derived:
        return True
    if derived is None:
        kind = "defect" if reported is not None and reported >= WRAP_FLOOR else "disagree"
        result.add(kind, place, f"reports {describe_number(reported)}; it cannot be known{why_unknown}, "
                                "expected null")
    elif reported is not None and reported >= WRAP_FLOOR:
        result.add("defect", place, f"reports {describe_number(reported)}; re-derived {derived}")
    else:
        result.add("disagree", place, f"reports {describe_number(reported)}; re-derived {derived}")
    return False


def section_of(report: Report, cls: type[S], result: CheckResult) -> S | None:
    """A report's typed section, or None: absent, or of a wrong shape (a finding; the
    reader refuses such a section, so only a report made in memory has one)."""
    try:
        return report.sections.get(cls)
    except InputError as e:
        result.add("disagree", e.place or cls.KEY, e.detail)
        return None


# comparing JSON sections ------------------------------------------------------------------

_MISSING = "(missing)"


def compare_json(result: CheckResult, place: str, reported: object, derived: object) -> None:
    """Compare a JSON section; name the first place inside it that differs."""
    found = first_difference(reported, derived, place)
    if found is not None:
        where, mine, theirs = found
        result.add("disagree", where, f"reports {show(mine)}; re-derived {show(theirs)}")


def first_difference(a: object, b: object, place: str) -> tuple[str, object, object] | None:
    """The first path (in key and index order) where two JSON values differ, with both
    sides there; None when equal. `True` and `1` differ; recursion follows `b`, the
    derived side, so its depth is bounded."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            found = first_difference(a.get(key, _MISSING), b.get(key, _MISSING), f"{place}.{text(str(key))}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{place} (length)", len(a), len(b)
        if a == b and all(type(x) is type(y) and not isinstance(y, (list, dict)) for x, y in zip(a, b)):
            return None  # the common case, a list of numbers, without a call per element
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{place}[{i}]")
            if found is not None:
                return found
        return None
    if type(a) is type(b) and a == b:
        return None
    return place, a, b


def ids_text(ids: list[int], limit: int = 8) -> str:
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


def is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def show(x: object, limit: int = 120) -> str:
    """A JSON value as one short line: huge integers and deep structures by kind."""
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) >= 10**40:
        return f"an integer of {x.bit_length()} bits"
    try:
        text = json.dumps(x)
    except (ValueError, RecursionError, TypeError):
        text = f"a {type(x).__name__}"
    return text if len(text) <= limit else text[:limit] + "..."
