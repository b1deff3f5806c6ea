"""Reading and writing reports, either version: the one place a report's version is
decided.

Version 1 is the reference's format (`format_v1`, docs/report-format.md); version 2
the compact form for large programs (`format_v2`, docs/report-format-v2.md): the same
fields, the timeline as interned tables and columns. Both read into the same `Report`
(`tileplan.report.model`), its sections typed (`Report.sections`); reading names the
JSON path of any problem in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tileplan.errors import InputError, TileplanError
from tileplan.ioutil import parse_json, read_text, write_atomic
from tileplan.report.fields import U64_MAX, Fields
from tileplan.report.format_v1 import read_v1, step_to_json, to_json_dict, to_json_text, v1_bytes, value_to_json
from tileplan.report.format_v2 import read_v2, v2_bytes, v2_chunks
from tileplan.report.model import VERSION, VERSIONS, PeakFigures, Report
from tileplan.report.reader import MAX_RANK
from tileplan.report.sections import MAX_HISTOGRAM_BINS, MAX_TILES

#: values beyond which a report is written as version 2 unless asked otherwise (version
#: 1 is about 1.1 KB a value: 115 MB at 100,000 values)
V1_LIMIT = 20_000

__all__ = ["MAX_HISTOGRAM_BINS", "MAX_RANK", "MAX_TILES", "U64_MAX", "V1_LIMIT", "VERSION", "VERSIONS",
           "PeakFigures", "Report", "auto_version", "from_json_dict", "from_json_text", "read_report",
           "report_bytes", "step_to_json", "to_json_dict", "to_json_text", "value_to_json", "write_report"]


def auto_version(report: Report, limit: int = V1_LIMIT) -> int:
    """The version `tileplan plan` writes by default: 1 up to `limit` values, 2 beyond."""
    return 1 if len(report.values) <= limit else 2


def report_bytes(r: Report, version: int = VERSION) -> bytes:
    """The report as UTF-8 JSON of `version` (1 or 2), deterministic."""
    if version == 1:
        return v1_bytes(r)
    if version == 2:
        return v2_bytes(r)
    raise InputError(f"report version must be one of {', '.join(map(str, VERSIONS))}, found {version}")


def write_report(path: str | Path, r: Report, version: int = VERSION) -> None:
    """Write the report atomically (`ioutil.write_atomic`) as `version` 1 or 2."""
    if version == 2:  # streamed: the chunks go to the temporary file as they are made
        write_atomic(path, v2_chunks(r))
        return
    write_atomic(path, to_json_text(r) if version == 1 else report_bytes(r, version))


def from_json_dict(obj: Any, size_hint: int | None = None) -> Report:
    """Read a report object (version 1 or 2); raise `InputError` naming the JSON path
    of any problem. `size_hint`, the text's length, bounds what version 2 decodes."""
    r = Fields(obj, "")
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, found {type(obj).__name__}", "report")
    version = r.sub("version").integer()
    if version == 2:
        return read_v2(r, size_hint)
    if version != VERSION:
        raise InputError(f"unsupported version {version}; this tileplan reads versions "
                         f"{' and '.join(map(str, VERSIONS))}", "version")
    return read_v1(r)


def from_json_text(text: str, source: str = "report") -> Report:
    return _located(parse_json(text, source), source, len(text))


def read_report(path: str) -> Report:
    text = read_text(path)
    return _located(parse_json(text, path), path, len(text))


def _located(obj: object, source: str, size_hint: int | None = None) -> Report:
    try:
        return from_json_dict(obj, size_hint)
    except TileplanError as e:
        raise e.at(source, sep=": ") from None
