"""MiniMalloc's CSV format: a header naming `id,lower,upper,size` and optionally
`alignment` (any order), one buffer a row. Written back with an `offset` column.

Errors name the file, the row (1 is the header) and the rule broken.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from tileplan.errors import InputError
from tileplan.placement.problem import VALUE_LIMIT, Buffer, Problem

REQUIRED = ("id", "lower", "upper", "size")
OPTIONAL = ("alignment",)
MAX_FIELD = 1 << 16  # a longer field is not a buffer row
MAX_ROWS = 5_000_000  # keeps memory bounded: about 1 KB a buffer through the passes
# csv's own limit raises an error we word ourselves; keep it above MAX_FIELD
csv.field_size_limit(max(csv.field_size_limit(), MAX_FIELD + 1))


def read_csv(path: str) -> Problem:
    """The problem in a CSV file; `InputError` naming the file and row otherwise."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return parse_csv(fh, path)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path) from None


def parse_csv(lines: Iterable[str], source: str) -> Problem:
    """Parse CSV rows into a `Problem`; blank lines are skipped."""
    reader = csv.reader(lines)
    try:
        header = next(reader, None)
        if header is None:
            raise InputError("empty file; expected a header id,lower,upper,size[,alignment]", source)
        names = [h.strip().lower() for h in header]
        for name in REQUIRED:
            if name not in names:
                raise InputError(f"row 1: missing column {name!r} (header has {','.join(names)})", source)
        unknown = [n for n in names if n not in REQUIRED + OPTIONAL + ("offset",)]
        if unknown or len(set(names)) != len(names):
            raise InputError(f"row 1: unexpected or repeated column in header {','.join(names)}", source)
        where = {name: names.index(name) for name in names}
        buffers: list[Buffer] = []
        seen: dict[str, int] = {}
        for row in reader:
            rowno = reader.line_num
            if not row or all(not f.strip() for f in row):
                continue
            if len(buffers) >= MAX_ROWS:
                raise InputError(f"row {rowno}: more than {MAX_ROWS} buffers", source)
            buffers.append(_buffer(row, where, rowno, seen, source))
    except csv.Error as e:
        raise InputError(f"row {reader.line_num}: not valid CSV ({e})", source) from None
    problem = Problem(tuple(buffers))
    return problem


def _buffer(row: list[str], where: dict[str, int], rowno: int, seen: dict[str, int], source: str) -> Buffer:
    place = f"row {rowno}"
    if len(row) != len(where):
        raise InputError(f"{place}: expected {len(where)} fields, found {len(row)}", source)
    ident = row[where["id"]].strip()
    if not ident:
        raise InputError(f"{place}: empty id", source)
    if ident in seen:
        raise InputError(f"{place}: duplicate id {ident!r} (first on row {seen[ident]})", source)
    seen[ident] = rowno
    values = {name: _integer(row[where[name]], name, place, source) for name in where if name not in ("id", "offset")}
    try:
        return Buffer(ident, values["lower"], values["upper"], values["size"], values.get("alignment", 1))
    except InputError as e:
        raise InputError(f"{place}: {e.detail}", source) from None


def _integer(text: str, name: str, place: str, source: str) -> int:
    text = text.strip()
    if len(text) > 24 or not text.lstrip("-").isdigit() or not text.isascii():
        shown = text if len(text) <= 24 else text[:24] + "..."
        raise InputError(f"{place}: {name} must be an integer, found {shown!r}", source)
    value = int(text)
    if abs(value) >= VALUE_LIMIT:
        raise InputError(f"{place}: {name} {value} is too large (limit 2**62)", source)
    return value


def render_csv(problem: Problem, offsets: tuple[int, ...]) -> str:
    """The problem's rows, in input order, with an `offset` column."""
    if len(offsets) != len(problem.buffers):
        raise ValueError(f"{len(offsets)} offsets for {len(problem.buffers)} buffers")
    with_alignment = any(b.alignment != 1 for b in problem.buffers)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(REQUIRED) + (["alignment"] if with_alignment else []) + ["offset"])
    for buf, offset in zip(problem.buffers, offsets):
        alignment = [buf.alignment] if with_alignment else []
        writer.writerow([buf.id, buf.lower, buf.upper, buf.size, *alignment, offset])
    return out.getvalue()
