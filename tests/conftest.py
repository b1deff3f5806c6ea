from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import settings

# The same examples on every run: a property test either always passes or always
# fails on a given tree (CI must not turn red by chance); widen with more examples.
settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "reference_000.json"


@pytest.fixture(scope="session")
def reference_json() -> dict:
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="session")
def reference_values(reference_json) -> list[dict]:
    return reference_json["timeline"]["values"]


@pytest.fixture(autouse=True)
def every_written_report_passes_check(request):
    """Every report a test writes under its tmp_path must pass `tileplan check` (an IPU
    report or a Tenstorrent one)
    (reports that a test breaks on purpose are named bad*.json or cut*.json)."""
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if tmp is None:
        return
    from tileplan.check.driver import check_report
    from tileplan.report.format import read_report

    for path in sorted(Path(tmp).rglob("*.json")):
        if path.name.startswith(("bad", "cut", "deep", "list", "nan")) or not path.is_file() or path.is_symlink():
            continue  # broken on purpose, or not a regular file (a FIFO would block the read)
        text = path.read_text()
        if '"target":"tenstorrent"' in text:  # a Tenstorrent report
            from tileplan.check.tenstorrent import check_tt_report
            from tileplan.report.reading import read_any_report

            tt = check_tt_report(read_any_report(str(path)))  # type: ignore[arg-type]
            assert tt.consistent, (path, [f.to_text() for f in tt.findings][:3])
            continue
        if '"timeline"' not in text:
            continue  # a sweep or a summary, not a report
        result = check_report(read_report(str(path)))
        assert result.consistent, (path, [f.to_text() for f in result.findings if f.kind != "rejected"][:3])
