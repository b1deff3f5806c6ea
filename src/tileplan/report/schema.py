"""The JSON Schemas of both report versions, shipped in the package
(`report.schema.json`, `report-v2.schema.json`): each section's schema generated from
its typed declaration (`tileplan.report.sections`, one declaration for reading,
writing and the schema); the top level, the timeline and version 2's columns are
written in the files themselves.

`python -m tileplan.report.schema` writes the generated sections into the files (the
rest of each file kept); `tests/test_report_schema.py` checks the files are what it
writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tileplan.report.sections import EXACT_COLUMNS, SECTIONS

FILES = {1: "report.schema.json", 2: "report-v2.schema.json"}
HERE = Path(__file__).parent


def section_schemas(version: int) -> dict[str, dict[str, Any]]:
    """The schema of each section of a report of `version`, by key. Version 2 writes
    `exact.steps` and `operations` as tables of columns (docs/report-format-v2.md)."""
    out = {key: cls.json_schema() for key, cls in SECTIONS.items()}
    if version == 2:
        exact = out["exact"]
        del exact["properties"]["steps_columns"]
        exact["required"] = [k for k in exact["required"] if k != "steps_columns"]
        exact["properties"]["steps"] = {
            "type": "object", "required": ["count", *EXACT_COLUMNS],
            "properties": {"count": {"$ref": "#/$defs/bytes"},
                           **{c: {"$ref": "#/$defs/column"} for c in EXACT_COLUMNS}},
            "additionalProperties": False}
        columns = ("index", "origin", "kind", "execution_count", "first", "last")
        out["operations"] = {"oneOf": [out["operations"], {
            "type": "object", "required": ["count", "kinds", "index", "origin", "name", "kind", "execution_count",
                                           "first", "last"],
            "properties": {"count": {"$ref": "#/$defs/bytes"}, "kinds": {"$ref": "#/$defs/strings"},
                           "name": {"$ref": "#/$defs/strings"}, **{c: {"$ref": "#/$defs/column"} for c in columns}},
            "additionalProperties": False}]}
    return out


def schema(version: int, base: dict[str, Any]) -> dict[str, Any]:
    """`base` (the file's schema) with every section's schema generated."""
    generated = section_schemas(version)
    properties = {k: generated.get(k, v) for k, v in base["properties"].items()}
    properties.update({k: v for k, v in generated.items() if k not in properties})
    return {**base, "properties": properties}


def schema_text(version: int) -> str:
    """The text `write` puts in the file of `version`."""
    path = HERE / FILES[version]
    return json.dumps(schema(version, json.loads(path.read_text())), indent=1) + "\n"


def write() -> list[Path]:
    """Write both files; the paths that changed."""
    changed = []
    for version, name in FILES.items():
        path, text = HERE / name, schema_text(version)
        if path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p}")
    sys.exit(0)
