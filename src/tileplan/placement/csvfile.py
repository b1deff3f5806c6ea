"""MiniMalloc's CSV format: a header naming `id,lower,upper,size` and optionally
`alignment` (any order), one buffer a row. Written back with an `offset` column.

Reading: a regular file only (a FIFO, a device or a folder is refused before a byte is
read; opening never blocks), at most MAX_CSV_BYTES bytes, UTF-8 with or without a
byte-order mark, LF or CRLF line ends. Rows are split and converted a chunk at a time
into numpy columns (a million rows in under 2 s); a file the quick path does not
take whole (quoted fields, a bad value, a duplicate id) is read again row by row, which
says which row breaks which rule.

Errors name the file, the row (1 is the header) and the rule broken, in one line:
names from the file are quoted with repr.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from tileplan.errors import InputError
from tileplan.ioutil import read_text
from tileplan.placement.problem import VALUE_LIMIT, Buffer, Columns, Problem

REQUIRED = ("id", "lower", "upper", "size")
OPTIONAL = ("alignment",)
MAX_FIELD = 1 << 16  # a longer field is not a buffer row
MAX_ROWS = 5_000_000  # keeps memory bounded: about 1 KB a buffer through the passes
MAX_CSV_BYTES = 256 << 20  # 256 MiB: 5,000,000 rows of about 50 bytes
CHUNK_CHARS = 1 << 22  # the quick path splits and converts this much text at a time
# csv's own limit raises an error we word ourselves; keep it above MAX_FIELD
csv.field_size_limit(max(csv.field_size_limit(), MAX_FIELD + 1))
BOM = "\ufeff"


def shown(name: str, width: int = 200) -> str:
    """A path as one line: as it is when printable, else its repr; cut to about
    `width` characters."""
    text = name if name.isprintable() else repr(name)
    return text if len(text) <= width else text[:width] + f"... ({len(name)} characters)"


def quoted(name: str, width: int = 200) -> str:
    """A name from the input as one line: its repr, cut to about `width` characters."""
    text = repr(name)
    return text if len(text) <= width else text[:width] + f"... ({len(name)} characters)"


def read_csv(path: str, limit: int | None = None) -> Problem:
    """The problem in a CSV file of at most `limit` bytes (default MAX_CSV_BYTES);
    `InputError` naming the file and the row otherwise."""
    source = shown(str(path))
    try:
        text = read_text(str(path), MAX_CSV_BYTES if limit is None else limit)
    except InputError as e:
        raise InputError(e.detail, source) from None
    return parse_text(text, source)


def parse_csv(lines: Iterable[str], source: str) -> Problem:
    """Parse CSV rows (an iterable of lines, as a file opened with newline="" gives
    them) into a `Problem`; blank lines are skipped."""
    kept = lines if isinstance(lines, (list, tuple)) else list(lines)
    return _parse(kept, lambda: iter(kept), source)


def parse_text(text: str, source: str) -> Problem:
    """Parse a whole CSV text (a leading byte-order mark and CRLF line ends allowed)."""
    if text.startswith(BOM):
        text = text[1:]
    return _parse(text, lambda: io.StringIO(text, newline=""), source)


def _parse(whole: str | list[str] | tuple[str, ...], lines: Callable[[], Iterator[str]], source: str) -> Problem:
    """The quick path over `whole` when it takes it, else the row-by-row reader."""
    text = whole if isinstance(whole, str) else None
    if text is None and all(type(line) is str and line.endswith("\n") for line in whole[:-1]):
        text = "".join(whole)  # lines that end in a line break: the quick path may take them as one text
    if text is not None:
        problem = _quick(text, source)
        if problem is not None:
            return problem
    return _rows(lines(), source)


def _header(header: list[str] | None, source: str) -> dict[str, int]:
    """Column positions by name from the header row (names matched stripped, any case)."""
    if header is None:
        raise InputError("empty file; expected a header id,lower,upper,size[,alignment]", source)
    names = [h.strip().lower() for h in header]
    if names:
        names[0] = names[0].lstrip(BOM).strip()
    for name in REQUIRED:
        if name not in names:
            raise InputError(f"row 1: missing column {name!r} (header has {quoted(','.join(names))})", source)
    unknown = [n for n in names if n not in REQUIRED + OPTIONAL + ("offset",)]
    if unknown or len(set(names)) != len(names):
        raise InputError(f"row 1: unexpected or repeated column in header {quoted(','.join(names))}", source)
    return {name: names.index(name) for name in names}


# The quick path -----------------------------------------------------------------------


def _quick(text: str, source: str) -> Problem | None:
    """The problem when every row is plain (no quotes, the header's number of fields,
    ASCII integers, unique non-empty ids, every rule kept); None sends the text to the
    row-by-row reader, which finds the row and words the rule."""
    if '"' in text:
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            return None
    end = text.find("\n")
    end = len(text) if end < 0 else end
    header = text[:end]
    if not header.strip():
        return None
    where = _header(header.split(","), source)
    width = len(where)
    numeric = [name for name in where if name not in ("id", "offset")]
    ids: list[str] = []
    parts: dict[str, list[np.ndarray]] = {name: [] for name in numeric}
    pos = end + 1
    text = text.rstrip("\n") + "\n"  # blank lines at the end, as a file often has
    while pos < len(text):
        stop = text.find("\n", pos + CHUNK_CHARS)
        stop = len(text) if stop < 0 else stop + 1
        chunk = text[pos:stop]
        pos = stop
        # each line's end becomes a field of its own: every row holds `width` fields
        # exactly when the line ends fall every width + 1 fields (a blank line does not)
        fields = chunk.replace("\n", ",\n,").split(",")
        rows = chunk.count("\n")
        if len(fields) != rows * (width + 1) + 1 or fields[width::width + 1].count("\n") != rows:
            return None
        fields.pop()  # the empty field after the last line end
        if len(ids) + rows > MAX_ROWS:
            return None
        ids.extend(map(str.strip, fields[where["id"]::width + 1]))
        for name in numeric:
            values = _integers(fields[where[name]::width + 1])
            if values is None:
                return None
            parts[name].append(values)
    if "" in ids:
        return None
    n = len(ids)

    def column(name: str, default: int) -> np.ndarray:
        if name not in parts:
            return np.full(n, default, dtype=np.int64)
        return np.concatenate(parts[name]) if parts[name] else np.zeros(0, dtype=np.int64)

    cols = Columns(column("lower", 0), column("upper", 0), column("size", 0), column("alignment", 1),
                   np.zeros(n, dtype=np.int64), np.full(n, VALUE_LIMIT, dtype=np.int64))
    try:
        return Problem.from_columns(ids, cols)
    except InputError:
        return None


def _integers(texts: list[str]) -> np.ndarray | None:
    """The fields as int64 when each is an ASCII integer `_integer` accepts with the
    same value (optional spaces, an optional minus, at most 24 characters); None
    when any one might not be."""
    joined = "".join(texts)
    if not joined.isascii() or "_" in joined or "+" in joined or max(map(len, texts), default=0) > 24:
        return None
    try:
        return np.array(list(map(int, texts)), dtype=np.int64).reshape(len(texts))
    except (ValueError, OverflowError):
        return None


# The row-by-row reader ------------------------------------------------------------------


def _rows(lines: Iterator[str], source: str) -> Problem:
    """Read row by row, checking each: the first row that breaks a rule is named."""
    reader = csv.reader(lines)
    try:
        where = _header(next(reader, None), source)
        buffers: list[Buffer] = []
        seen: dict[str, int] = {}
        start = reader.line_num + 1  # the line where the next row starts (quoted fields may hold line breaks)
        for row in reader:
            rowno, start = start, reader.line_num + 1
            if not row or all(not f.strip() for f in row):
                continue
            if len(buffers) >= MAX_ROWS:
                raise InputError(f"row {rowno}: more than {MAX_ROWS} buffers", source)
            buffers.append(_buffer(row, where, rowno, seen, source))
    except csv.Error as e:
        raise InputError(f"row {reader.line_num}: not valid CSV ({shown(str(e))})", source) from None
    return Problem(tuple(buffers))


def _buffer(row: list[str], where: dict[str, int], rowno: int, seen: dict[str, int], source: str) -> Buffer:
    place = f"row {rowno}"
    if len(row) != len(where):
        raise InputError(f"{place}: expected {len(where)} fields, found {len(row)}", source)
    ident = row[where["id"]].strip()
    if not ident:
        raise InputError(f"{place}: empty id", source)
    if ident in seen:
        raise InputError(f"{place}: duplicate id {quoted(ident, 80)} (first on row {seen[ident]})", source)
    seen[ident] = rowno
    values = {name: _integer(row[where[name]], name, place, source) for name in where if name not in ("id", "offset")}
    try:
        return Buffer(ident, values["lower"], values["upper"], values["size"], values.get("alignment", 1))
    except InputError as e:
        raise InputError(f"{place}: {e.detail}", source) from None


def _integer(text: str, name: str, place: str, source: str) -> int:
    text = text.strip()
    if len(text) > 24 or not text.lstrip("-").isdigit() or not text.isascii():
        cut = text if len(text) <= 24 else text[:24] + "..."
        raise InputError(f"{place}: {name} must be an integer, found {cut!r}", source)
    value = int(text)
    if abs(value) >= VALUE_LIMIT:
        raise InputError(f"{place}: {name} {value} is too large (limit 2**62)", source)
    return value


# Writing -----------------------------------------------------------------------------------


def render_csv(problem: Problem, offsets: tuple[int, ...] | np.ndarray) -> str:
    """The problem's rows, in input order, with an `offset` column."""
    if len(offsets) != len(problem):
        raise ValueError(f"{len(offsets)} offsets for {len(problem)} buffers")
    cols = problem.columns()
    with_alignment = bool((cols.alignment != 1).any())
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(REQUIRED) + (["alignment"] if with_alignment else []) + ["offset"])
    columns = [problem.ids, cols.lower.tolist(), cols.upper.tolist(), cols.size.tolist()]
    columns += [cols.alignment.tolist()] if with_alignment else []
    columns += [np.asarray(offsets, dtype=np.int64).tolist()]
    ids = "".join(problem.ids)
    if not any(c in ids for c in ',"\r\n'):  # nothing to quote: the rows as csv writes them, joined at once
        row = ",".join(["{}"] * len(columns)) + "\n"
        return out.getvalue() + "".join(map(row.format, *columns))
    writer.writerows(zip(*columns))
    return out.getvalue()
