"""The placement check: one sweep over the lifetimes (O(n log n) plus the overlaps it
reports) against a brute-force pairwise check on random small placements, valid or
not; the compiled sweep against the Python one; a deadline ends the sweep."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tileplan.placement import Buffer, Problem, find_violations
from tileplan.placement import verify as verify_module
from tileplan.placement.problem import VALUE_LIMIT
from tileplan.placement.verify import verify


def pairwise(buffers: list[Buffer], offsets: list[int]) -> tuple[set[str], set[frozenset[str]]]:
    """Brute force: the buffers outside their range or alignment, the colliding pairs."""
    ranged = {b.id for b, o in zip(buffers, offsets)
              if o < b.floor or o % b.alignment or (b.ceiling is not None and o + b.size > b.ceiling)}
    pairs = set()
    for x, (a, oa) in enumerate(zip(buffers, offsets)):
        for b, ob in zip(buffers[x + 1:], offsets[x + 1:]):
            if a.lower < b.upper and b.lower < a.upper and oa < ob + b.size and ob < oa + a.size:
                pairs.add(frozenset((a.id, b.id)))
    return ranged, pairs


@st.composite
def placements(draw: st.DrawFn) -> tuple[list[Buffer], list[int]]:
    n = draw(st.integers(0, 14))
    buffers, offsets = [], []
    for i in range(n):
        lower = draw(st.integers(0, 8))
        size = draw(st.integers(0, 6))
        floor = draw(st.sampled_from([0, 0, 0, 2]))
        ceiling = draw(st.sampled_from([None, None, floor + size + draw(st.integers(0, 6))]))
        buffers.append(Buffer(f"b{i}", lower, lower + draw(st.integers(1, 5)), size,
                              draw(st.sampled_from([1, 1, 2])), floor, ceiling))
        offsets.append(draw(st.integers(0, 14)))
    if draw(st.booleans()):  # stacked: valid but for a ceiling, then perhaps one buffer moved
        offsets, top = [], 0
        for b in buffers:
            offsets.append(-(-max(top, b.floor) // b.alignment) * b.alignment)
            top = offsets[-1] + b.size
        if n and draw(st.booleans()):
            offsets[draw(st.integers(0, n - 1))] = draw(st.integers(0, 14))
    return buffers, offsets


@given(case=placements(), limit=st.integers(1, 12))
def test_the_sweep_agrees_with_a_pairwise_check(case: tuple[list[Buffer], list[int]], limit: int) -> None:
    buffers, offsets = case
    ranged, pairs = pairwise(buffers, offsets)
    messages = find_violations(Problem(tuple(buffers)), offsets, limit=limit)
    assert (messages == []) == (not ranged and not pairs)
    assert len(messages) <= limit and (len(messages) == limit or len(messages) >= len(ranged))
    for message in messages:
        names = message.split("'")[1::2]
        if message.startswith("buffers "):
            assert frozenset(names) in pairs and message.endswith("overlap while both live")
        else:
            assert names[0] in ranged and message.endswith("breaks its alignment or allowed range")


def test_the_messages_name_both_buffers_and_their_bytes() -> None:
    problem = Problem((Buffer("a\nb", 0, 4, 100), Buffer("c", 2, 6, 50, alignment=8), Buffer("d", 6, 9, 10)))
    assert find_violations(problem, (0, 60, 0)) == [
        r"buffer 'c' at 60 breaks its alignment or allowed range",
        r"buffers 'a\nb' [0, 100) and 'c' [60, 110) overlap while both live"]
    assert find_violations(problem, (0, 104, 0)) == []  # d starts when a ends: no overlap


def random_placement(seed: int, n: int) -> tuple[Problem, np.ndarray]:
    """Short lifetimes, offsets from a first-fit stack cut in places: some overlaps."""
    rng = random.Random(seed)
    buffers = []
    for i in range(n):
        lower = rng.randrange(0, n // 4)
        buffers.append(Buffer(str(i), lower, lower + rng.randrange(1, 30), rng.randrange(0, 1000)))
    problem = Problem(tuple(buffers))
    sizes = problem.columns().size
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])) % 200_000
    return problem, offsets


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_sweep_finds_what_the_python_sweep_does(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    problem, offsets = random_placement(seed, 3000)
    monkeypatch.setattr(verify_module, "COMPILE_FROM", 1)
    compiled = verify(problem, offsets, limit=50)
    monkeypatch.setattr(verify_module, "COMPILE_FROM", VALUE_LIMIT)
    plain = verify(problem, offsets, limit=50)
    assert compiled == plain and len(plain.messages) == 50 and plain.complete


def test_a_deadline_ends_the_sweep_between_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    problem, offsets = random_placement(0, 500)
    offsets = np.concatenate(([0], np.cumsum(problem.columns().size)[:-1]))  # valid: every buffer apart
    monkeypatch.setattr(verify_module, "PYTHON_CHUNK", 64)
    cut = verify(problem, offsets, deadline=0.0)
    assert not cut.complete and cut.messages == [] and cut.checked == 64
    whole = verify(problem, offsets, deadline=None)
    assert whole.complete and whole.messages == [] and whole.checked == whole.total == 500 - \
        int((problem.columns().size == 0).sum())
