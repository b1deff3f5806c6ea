from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "reference_000.json"


@pytest.fixture(scope="session")
def reference_json() -> dict:
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="session")
def reference_values(reference_json) -> list[dict]:
    return reference_json["timeline"]["values"]
