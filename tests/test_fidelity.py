"""Every published compile of tests/fidelity_cases.py planned, its verdict pinned: where
tileplan agrees with the published result the test holds the agreement; where it does
not, the case states why (docs/fidelity.md shows both) and the test holds tileplan's
answer, so that a change to the physics that moves a verdict is seen and the table
rewritten (`benchmarks/fidelity.py`)."""

from __future__ import annotations

import pytest

from fidelity_cases import CASES, Evidence, torchvision_zoo
from tileplan.app.error_band import Quantity, read

BY_KEY = {c.key: c for c in CASES}


def assert_band_file_holds(key: str, all_memory: tuple[int, ...], variables: tuple[int, ...],
                           stack: tuple[int, ...]) -> None:
    """tileplan's figures in the error band's file (src/tileplan/app/ipu-error-band.json)
    are what the case plans now, on each measurement's quantity (all the memory;
    PopLiner's terms, all but the stack; the variables): else `benchmarks/fidelity.py
    --band` rewrites it."""
    figures = {Quantity.WORST_TILE: all_memory, Quantity.VARIABLES: variables,
               Quantity.POPLINER_TILE: tuple(a - s for a, s in zip(all_memory, stack))}
    for m in read():
        if m.case == key:
            mine = figures[m.quantity][m.ipu]
            assert m.tileplan == mine, (f"{key} IPU {m.ipu} ({m.quantity.value}): the band's file says "
                                        f"{m.tileplan}, the case plans {mine}: run benchmarks/fidelity.py --band")


@pytest.mark.parametrize("key", [c.key for c in CASES])
def test_the_verdict_is_as_the_table_says(key):
    case = BY_KEY[key]
    answer = case.build()
    if case.not_comparable:  # no verdict on fitting published: tileplan's own answer held
        assert not answer.fits and not case.miss, key
    elif case.miss:
        assert answer.fits != case.published_fits, f"{key} now agrees with the published result: drop its miss"
    else:
        assert answer.fits == case.published_fits, f"{key}: tileplan says {'fits' if answer.fits else 'OOM'}"
    assert len(answer.peaks) == len(answer.variables) == len(answer.all_memory) >= 1
    assert all(v >= p for v, p in zip(answer.variables, answer.peaks))
    assert_band_file_holds(key, answer.all_memory, answer.variables, answer.stack)


@pytest.mark.parametrize("key", [c.key for c in CASES if c.variables is not None])
def test_a_real_profiles_variables_are_within_10_percent(key):
    """Where a real compile's profile is published, each IPU's variables summed over
    the tiles are within 10 % of tileplan's."""
    case = BY_KEY[key]
    answer = case.build()
    assert case.variables is not None and len(answer.variables) == len(case.variables)
    for mine, published in zip(answer.variables, case.variables):
        assert abs(mine - published) <= 0.1 * published, (mine, published)


def test_the_table_in_docs_lists_every_case():
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "fidelity.md").read_text()
    for case in CASES:
        assert f"| {case.key} |" in text, case.key


@pytest.mark.parametrize("name", ["resnet18", "resnext50_32x4d", "mnasnet1_0", "mobilenet_v2", "googlenet",
                                  "inception_v3", "squeezenet1_1"])
def test_the_torchvision_models_poptorch_tests_fit_on_mk2_too(name):
    """The table plans them on Mk1 and says they fit on Mk2 too."""
    assert torchvision_zoo(name, "mk2")().fits


def test_the_page_begins_with_the_prose_the_benchmark_writes_and_its_counts_hold():
    """docs/fidelity.md is written by benchmarks/fidelity.py, its prose ("How close to
    the compiler") included, so a re-run keeps it; the prose's counts are the cases'."""
    import importlib.util
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("fidelity_benchmark", root / "benchmarks" / "fidelity.py")
    assert spec is not None and spec.loader is not None
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    text = (root / "docs" / "fidelity.md").read_text()
    assert text.startswith(benchmark.HEADER)
    prose = " ".join(benchmark.HEADER.split())
    for evidence, pattern in ((Evidence.CALIBRATION, r"(\d+) of (\d+) calibration verdicts agree"),
                              (Evidence.HELD_OUT, r"Held out: (\d+) of (\d+) inference verdicts agree")):
        m = re.search(pattern, prose)
        assert m, f"the prose's count of {evidence.value} verdicts"
        comparable = [c for c in CASES if c.evidence is evidence and not c.not_comparable]
        assert (int(m.group(1)), int(m.group(2))) == (sum(not c.miss for c in comparable), len(comparable))
