"""A Tenstorrent report: its top level, read and written in one place, and its JSON
Schema generated from the sections' declarations (docs/report-format.md, "Tenstorrent
reports"; `tenstorrent-report.schema.json` shipped beside this module).

The top level: `"target": "tenstorrent"` (what tells it from an IPU report, which has
no `target`), `"format": 1`, the model's name, then each section by its key. Reading
names the JSON path of any problem in one line; writing is deterministic (sorted keys).

`python -m tileplan.report.tt_report` writes the schema file; tests check it is what
this module generates.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tileplan.errors import InputError
from tileplan.report.fields import Fields, Section
from tileplan.report.tt_sections import TtDevice, TtFrontend, TtMemory, TtReproduce, TtVerdict, TtWhatIf
from tileplan.report.tt_tables import TtBuffers, TtCircularBuffers, TtOperations, TtPrograms

TARGET = "tenstorrent"
FORMAT = 1
SCHEMA_FILE = Path(__file__).parent / "tenstorrent-report.schema.json"

#: the sections a report must have, in the order they are written
REQUIRED: tuple[type[Section], ...] = (TtDevice, TtFrontend, TtVerdict, TtMemory, TtBuffers, TtOperations, TtPrograms,
                                       TtCircularBuffers)
#: the sections a report may have
OPTIONAL: tuple[type[Section], ...] = (TtWhatIf, TtReproduce)


@dataclass(frozen=True, slots=True)
class TtReport:
    """A whole Tenstorrent report (see the module docstring)."""

    model: str
    device: TtDevice
    frontend: TtFrontend
    verdict: TtVerdict
    memory: TtMemory
    buffers: TtBuffers
    operations: TtOperations
    programs: TtPrograms
    circular_buffers: TtCircularBuffers
    what_if: TtWhatIf | None = None
    reproduce: TtReproduce | None = None

    @property
    def fits(self) -> bool:
        return self.verdict.fits

    def with_(self, **changes: Any) -> TtReport:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON: the one place its top level is built."""
        out: dict[str, Any] = {"target": TARGET, "format": FORMAT, "model": self.model}
        for cls in (*REQUIRED, *OPTIONAL):
            section = getattr(self, cls.KEY)
            if section is not None:
                out[cls.KEY] = section.to_json()
        return out

    def to_bytes(self) -> bytes:
        return (json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def is_tt_report(obj: Any) -> bool:
    """Whether a report's JSON object is a Tenstorrent report."""
    return isinstance(obj, dict) and obj.get("target") == TARGET


def read_tt_report(obj: Any) -> TtReport:
    """A Tenstorrent report from its JSON object (`InputError` naming the JSON path)."""
    f = Fields(obj, "")
    if not is_tt_report(obj):
        raise InputError(f"expected \"target\": \"{TARGET}\"", "report")
    fmt = f.sub("format").integer()
    if fmt != FORMAT:
        raise InputError(f"unsupported format {fmt}; this tileplan reads Tenstorrent reports of format {FORMAT}",
                         "format")
    known = {"target", "format", "model", *(c.KEY for c in (*REQUIRED, *OPTIONAL))}
    unknown = sorted(k for k in obj if k not in known)
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r}; a Tenstorrent report has {', '.join(sorted(known))}",
                         "report")
    sections: dict[str, Any] = {}
    for cls in REQUIRED:
        sections[cls.KEY] = cls.from_json(f.sub(cls.KEY).obj, cls.KEY)
    for cls in OPTIONAL:
        sections[cls.KEY] = cls.from_json(obj[cls.KEY], cls.KEY) if f.has(cls.KEY) else None
    return TtReport(model=f.sub("model").string(), **sections)


def schema() -> dict[str, Any]:
    """The JSON Schema of what `TtReport.to_json` writes."""
    properties: dict[str, Any] = {"target": {"const": TARGET}, "format": {"const": FORMAT},
                                  "model": {"type": "string"}}
    for cls in (*REQUIRED, *OPTIONAL):
        properties[cls.KEY] = cls.json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tileplan Tenstorrent report",
        "description": "A model planned on a Tenstorrent chip by tt-metal's allocator rules (docs/report-format.md, "
                       "'Tenstorrent reports')",
        "type": "object",
        "required": ["target", "format", "model", *(c.KEY for c in REQUIRED)],
        "properties": properties,
        "additionalProperties": False,
        "$defs": {"bytes": {"type": "integer", "minimum": 0, "maximum": 2**64 - 1},
                  "bytes_or_null": {"anyOf": [{"$ref": "#/$defs/bytes"}, {"type": "null"}]},
                  "positive": {"type": "integer", "minimum": 1, "maximum": 2**64 - 1}},
    }


def schema_text() -> str:
    return json.dumps(schema(), indent=1) + "\n"


if __name__ == "__main__":
    if SCHEMA_FILE.exists() and SCHEMA_FILE.read_text() == schema_text():
        sys.exit(0)
    SCHEMA_FILE.write_text(schema_text())
    print(f"wrote {SCHEMA_FILE}")
