"""The compiled search kernel against the numpy search (the same nodes, the same
offsets, the same node counts), and the public MiniMalloc instances: all eleven
placed at their capacity, each validated by the independent checker."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from test_placement import independent_check, perfect_packing, random_problem

from tileplan.placement import Problem, find_violations, lower_bound, place, read_csv
from tileplan.placement import kernel
from tileplan.placement.problem import Columns
from tileplan.placement.search import PREORDERS, _State

#: MiniMalloc's challenging suite, kept in the repository (tests/data/minimalloc/README.md)
MINIMALLOC = Path(__file__).parent / "data" / "minimalloc"
DATA = Path(__file__).parent / "data" / "placement"


def _positive(problem: Problem) -> Columns:
    cols = problem.columns()
    keep = np.flatnonzero(cols.size > 0)
    return Columns(cols.lower[keep], cols.upper[keep], cols.size[keep], cols.alignment[keep], cols.floor[keep],
                   cols.ceiling[keep])


def _both(cols: Columns, capacity: int, rank: np.ndarray, preorder: str | None, budget: int) -> tuple:
    """One run by the numpy search and one by the kernel, from fresh states."""
    deadline = time.perf_counter() + 600
    numpy_state = _State(cols, capacity)
    by_numpy = numpy_state.run(rank, budget, deadline, preorder)
    kernel_state = _State(cols, capacity)
    kernel_state.use_kernel = True
    by_kernel = kernel_state.run(rank, budget, deadline, preorder)
    # a run that ends (not cut short) leaves the kernel's state as it found it
    if by_kernel[0] is not None or by_kernel[1]:
        assert not kernel_state.placed.any()
        assert (kernel_state.total == kernel_state.sec_total_all).all()
        assert (kernel_state.cuts == kernel_state.cuts_all).all()
        assert (kernel_state.min_offset == kernel_state.start_offsets).all()
    return by_numpy, by_kernel


CASES = [(perfect_packing(seed, pieces=pieces), 1 << 16) for seed in range(3) for pieces in (30, 70)]
CASES += [(random_problem(seed), None) for seed in range(3)]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_kernel_visits_the_nodes_the_numpy_search_does(case: int) -> None:
    problem, capacity = CASES[case]
    cols = _positive(problem)
    if capacity is None:  # just above the bound: some runs place, some prove, some run out
        capacity = lower_bound(cols) + 3000
    state = _State(cols, capacity)
    seen = set()
    for preorder in PREORDERS:
        for budget in (40, 400, 4000):
            by_numpy, by_kernel = _both(cols, capacity, state.ranks[preorder], preorder, budget)
            assert by_numpy == by_kernel, (preorder, budget)
            seen.add("placed" if by_numpy[0] is not None else ("proven" if by_numpy[1] else "cut"))
    for seed in range(3):  # the static, shuffled ranks of the dives
        assert _both(cols, capacity, state.shuffled_rank(seed), None, 1000)[0] == \
            _both(cols, capacity, state.shuffled_rank(seed), None, 1000)[1]
    assert seen & {"placed", "proven"}


def test_kernel_agrees_on_a_published_instance_cut_short() -> None:
    cols = read_csv(str(DATA / "J.1048576.csv")).columns()
    state = _State(cols, 1048576)
    for preorder in PREORDERS:
        by_numpy, by_kernel = _both(cols, 1048576, state.ranks[preorder], preorder, 700)
        assert by_numpy == by_kernel


def test_place_gives_the_same_offsets_with_and_without_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = read_csv(str(DATA / "J.1048576.csv"))
    with_kernel = place(problem, 1048576, node_limit=20_000, minimize=True)
    monkeypatch.setattr("tileplan.placement.search.kernel_available", lambda: False)
    without = place(problem, 1048576, node_limit=20_000, minimize=True)
    assert with_kernel.offsets == without.offsets and with_kernel.fits
    assert [a.nodes for a in with_kernel.attempts] == [a.nodes for a in without.attempts]


@pytest.mark.parametrize("name", "ABCDEFGHIJK")
def test_every_minimalloc_instance_is_placed_at_its_capacity(name: str) -> None:
    assert kernel.COMPILED, "numba is a dependency: the compiled search must load"
    capacity = 1048576
    problem = read_csv(str(MINIMALLOC / f"{name}.{capacity}.csv"))
    start = time.process_time()
    # the first placement within the capacity (each instance needs at most 233,000
    # nodes to it), not the height minimisation after it
    result = place(problem, capacity, time_limit=60, node_limit=1_000_000 if kernel.COMPILED else 100_000,
                   minimize=False)
    assert not any(a.capacity is not None and a.capacity < capacity for a in result.attempts)
    seconds = 0.0
    for attempt in result.attempts:
        seconds += attempt.seconds
        if attempt.height is not None and attempt.height <= capacity:
            break
    rows = [(b.lower, b.upper, b.size, b.alignment) for b in problem.buffers]
    assert independent_check(rows, list(result.offsets), capacity) == []
    assert find_violations(problem, result.offsets) == []
    assert result.fits and result.height <= capacity and not result.infeasible
    assert seconds < 60 and time.process_time() - start < 120
