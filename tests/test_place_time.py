"""`tileplan place` under its time limit: the limit reaches the check of the placement,
every single-pass member after the first gives up at the deadline, the first (the time
sweep from SWEEP_FIRST buffers) always ends with a valid placement, and the compiled
skyline dive and sweep agree with their plain forms. No clock is asserted on: timing
figures are in benchmarks/placement.py and docs/placement.md."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest

from tileplan.cli import place as place_cli
from tileplan.cli.main import main
from tileplan.placement import Buffer, Problem, find_violations, lower_bound, place, read_csv
from tileplan.placement import compiled, greedy
from tileplan.placement.greedy import PORTFOLIO, SWEEP_FIRST, Greedy, Skyline, Sweep, place_sweep, run_member
from tileplan.placement.problem import VALUE_LIMIT, Columns
from tileplan.placement.verify import Verification

PROBLEM = "id,lower,upper,size\na,0,4,100\nb,2,6,50\nc,4,8,100\n"


def generated(n: int, seed: int = 0) -> Problem:
    """Short lifetimes over n / 8 steps, a few long ones, sizes from 1 B to 64 KB, some aligned."""
    rng = random.Random(seed)
    buffers = []
    for i in range(n):
        lower = rng.randrange(n // 8)
        life = rng.randrange(1, n // 4) if rng.random() < 0.01 else rng.randrange(1, 12)
        buffers.append(Buffer(f"t{i}", lower, lower + life, rng.choice((0, 1, 64, 4096, rng.randrange(1, 65536))),
                              rng.choice((1, 1, 1, 8, 64))))
    return Problem(tuple(buffers))


def write_csv(problem: Problem, path: Path) -> str:
    rows = ["id,lower,upper,size,alignment"] + [f"{b.id},{b.lower},{b.upper},{b.size},{b.alignment}"
                                                for b in problem.buffers]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_the_time_limit_reaches_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "p.csv"
    src.write_text(PROBLEM)
    seen: list[tuple[float | None, float]] = []
    real_verify = place_cli.verify
    real_place = place_cli.place

    def spy_place(*args: object, **kwargs: object) -> object:
        seen.append((None, float(kwargs["time_limit"])))  # type: ignore[arg-type]
        return real_place(*args, **kwargs)  # type: ignore[arg-type]

    def spy_verify(problem: Problem, offsets: tuple[int, ...], limit: int = 10,
                   deadline: float | None = None) -> Verification:
        seen.append((deadline, time.perf_counter()))
        return real_verify(problem, offsets, limit, deadline)

    monkeypatch.setattr(place_cli, "place", spy_place)
    monkeypatch.setattr(place_cli, "verify", spy_verify)
    before = time.perf_counter()
    assert main(["place", str(src), "--capacity", "150", "--time-limit", "7"]) == 0
    (_, search_limit), (deadline, checked_at) = seen
    assert search_limit <= 7 and deadline is not None and before < deadline <= before + 7 + 1
    assert deadline > checked_at


def test_a_check_cut_short_by_the_limit_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "p.csv"
    src.write_text(PROBLEM)
    monkeypatch.setattr(place_cli, "verify", lambda *a, **k: Verification([], False, 1, 3))
    assert main(["place", str(src), "--capacity", "150"]) == 0
    assert "not fully checked: the time limit ended the check for overlaps after 1 of 3 buffers" \
        in capsys.readouterr().out


def test_a_tiny_limit_on_a_large_problem_still_gives_a_valid_placement(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    problem = generated(SWEEP_FIRST + 5000)
    src = write_csv(problem, tmp_path / "large.csv")
    bound = lower_bound(problem.columns())
    code = main(["place", src, "--capacity", str(bound), "--time-limit", "0.001"])
    out = capsys.readouterr().out
    assert code in (0, 3) and "sweep first-fit" in out
    placed = read_csv(str(tmp_path / "large.placed.csv"))
    offsets = [int(line.rsplit(",", 1)[1]) for line in (tmp_path / "large.placed.csv").read_text().splitlines()[1:]]
    assert placed.ids == problem.ids and find_violations(problem, offsets) == []
    result = place(problem, bound, time_limit=0.001)
    assert result.attempts[0].method == "sweep first-fit" and result.attempts[0].height is not None
    assert all(a.height is None for a in result.attempts[1:]) and find_violations(problem, result.offsets) == []


@pytest.mark.parametrize("member", [Greedy("size", "best"), Skyline("area"), Sweep()], ids=lambda m: m.name)
def test_members_after_the_first_give_up_at_the_deadline(member: Greedy | Skyline | Sweep,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cols = generated(3000).columns()
    monkeypatch.setattr(greedy, "SWEEP_CHUNK", 100)
    assert run_member(cols, member, deadline=0.0) is None
    done = run_member(cols, member, deadline=None)
    assert done is not None and done[1]


def test_the_compiled_dive_gives_up_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    cols = generated(3000).columns()
    monkeypatch.setattr(greedy, "DIVE_FROM", 0)
    monkeypatch.setattr(greedy, "DIVE_CHUNK", 100)
    assert run_member(cols, Skyline("area"), deadline=0.0) is None


def test_the_sweep_runs_first_from_sweep_first_buffers() -> None:
    assert greedy.members(SWEEP_FIRST - 1) == PORTFOLIO
    assert greedy.members(SWEEP_FIRST) == (Sweep(),) + PORTFOLIO


def random_columns(seed: int) -> Problem:
    rng = random.Random(seed)
    buffers = []
    for i in range(rng.randint(1, 60)):
        lower = rng.randint(0, 6)
        size = rng.choice([0, 5, 5, 8, rng.randint(0, 60)])
        floor = rng.choice([0, 0, 0, 16])
        ceiling = rng.choice([None, None, floor + size + rng.randint(0, 150)])
        buffers.append(Buffer(str(i), lower, lower + rng.randint(1, 4), size, rng.choice([1, 1, 4, 8]), floor,
                              ceiling))
    return Problem(tuple(buffers))


@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_dive_places_as_the_numpy_dive(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cols = random_columns(seed).columns()
    for order in ("area", "size", "lifetime"):
        by_numpy = run_member(cols, Skyline(order))
        monkeypatch.setattr(greedy, "DIVE_FROM", 0)
        by_kernel = run_member(cols, Skyline(order))
        monkeypatch.setattr(greedy, "DIVE_FROM", 10**9)
        assert by_numpy is not None and by_kernel is not None
        assert by_numpy[0].tolist() == by_kernel[0].tolist() and by_numpy[1] == by_kernel[1]


@pytest.mark.parametrize("seed", range(40))
def test_the_sweep_places_validly_first_fit(seed: int) -> None:
    problem = random_columns(seed)
    cols = problem.columns()
    placed = place_sweep(cols)
    assert placed is not None
    offsets, kept = placed
    messages = find_violations(problem, offsets, limit=100)
    assert all("overlap" not in m for m in messages) and (messages == []) == kept
    # first fit: no buffer could sit lower among those live at its lower step and placed before it
    order = greedy.sweep_order(cols).tolist()
    for k, i in enumerate(order):
        if cols.size[i] == 0 or offsets[i] == -(-cols.floor[i] // cols.alignment[i]) * cols.alignment[i]:
            continue
        meets = [j for j in order[:k] if cols.upper[j] > cols.lower[i] and cols.size[j] > 0]
        for at in range(int(cols.floor[i]), int(offsets[i])):
            if at % cols.alignment[i] or at + cols.size[i] > cols.ceiling[i]:
                continue
            clash = any(offsets[j] < at + cols.size[i] and at < offsets[j] + cols.size[j] for j in meets)
            assert clash, (i, at, int(offsets[i]))


def test_the_sweep_repacks_its_blocks_when_they_run_out() -> None:
    """The same offsets with just enough blocks (repacked again and again) as with plenty.
    Over steps 0 to 255, 256 spans of 1 byte stack up and fill blocks; all but one in 32
    leave at step 256, leaving blocks of one span each; then 200 larger spans stack
    above them."""
    first = [Buffer(f"a{i}", i, 1000 if i % 32 == 0 else 256, 1) for i in range(256)]
    then = [Buffer(f"b{i}", 300, 1000, 64) for i in range(200)]
    problem = Problem(tuple(first + then))
    cols = problem.columns()
    plenty = place_sweep(cols)
    assert plenty is not None and find_violations(problem, plenty[0]) == []
    n = len(cols)
    enter = greedy.sweep_order(cols)
    leave = np.argsort(cols.upper, kind="stable").astype(np.int64)
    blocks = 256 // (compiled.BLOCK // 2) + 2  # the most live at once, packed half a block to a block, and two
    arrays = [np.zeros((blocks, compiled.BLOCK), dtype=np.int64), np.zeros((blocks, compiled.BLOCK), dtype=np.int64)]
    arrays += [np.zeros(blocks, dtype=np.int64) for _ in range(3)] + [np.zeros(blocks // compiled.GROUP + 2,
                                                                                 dtype=np.int64)]
    arrays += [np.arange(blocks - 1, -1, -1, dtype=np.int64)]
    regs = np.zeros(compiled.SWEEP_REGISTERS, dtype=np.int64)
    regs[compiled.KEPT], regs[compiled.FREE] = 1, blocks
    offsets = np.zeros(n, dtype=np.int64)
    compiled.sweep(regs, enter, leave, cols.lower, cols.upper, cols.size, cols.alignment, cols.floor, cols.ceiling,
                   offsets, *arrays, n)
    assert offsets.tolist() == plenty[0].tolist()


# --minimize ---------------------------------------------------------------------------------------

MINIMALLOC = Path(__file__).parent / "data" / "minimalloc"


def test_place_stops_at_the_first_fit_unless_minimising() -> None:
    problem = read_csv(str(MINIMALLOC / "D.1048576.csv"))
    first = place(problem, 1048576, node_limit=30_000, minimize=False)
    assert first.fits and not first.minimized and first.height > first.lower_bound
    assert [a.capacity for a in first.attempts if a.capacity is not None] == [1048576]  # one search, at the capacity
    assert first.verdict.endswith("over the lower bound (exact search); not minimised: the first placement within "
                                  "the capacity")
    lowest = place(problem, 1048576, node_limit=30_000, minimize=True)
    assert lowest.minimized and any(a.capacity is not None and a.capacity < 1048576 for a in lowest.attempts)
    assert lowest.height <= first.height and lowest.fits
    assert find_violations(problem, first.offsets) == find_violations(problem, lowest.offsets) == []


def test_the_single_pass_members_stop_at_the_first_fit_unless_minimising() -> None:
    problem = generated(200)
    roomy = 10**9
    first = place(problem, roomy, minimize=False)
    assert len(first.attempts) == 1 and first.fits and first.height > first.lower_bound
    lowest = place(problem, roomy, minimize=True, node_limit=2000)
    assert len(lowest.attempts) > len(PORTFOLIO) and lowest.height < first.height


@pytest.mark.parametrize("flag", [[], ["--minimize"]])
def test_the_cli_passes_minimize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: list[str],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "p.csv"
    src.write_text(PROBLEM)
    asked: list[bool] = []
    real = place_cli.place

    def spy(*args: object, **kwargs: object) -> object:
        asked.append(bool(kwargs["minimize"]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(place_cli, "place", spy)
    assert main(["place", str(src), "--capacity", "1000", *flag]) == 0
    assert asked == [bool(flag)]


def test_the_cli_says_when_the_height_was_not_minimised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = MINIMALLOC / "D.1048576.csv"
    out_csv = tmp_path / "D.placed.csv"
    assert main(["place", str(src), "--capacity", "1048576", "-o", str(out_csv)]) == 0
    out = capsys.readouterr().out
    assert "within capacity 1048576" in out and "the first placement within the capacity; --minimize searches lower" \
        in out


def first_fit_reference(cols: Columns) -> list[int]:
    """The sweep by plain means: for each buffer in the sweep's order, the gaps among the
    placed buffers still live at its lower step, lowest first; the first that holds it
    under its ceiling, else the first that holds it at all."""
    offsets = np.zeros(len(cols), dtype=np.int64)
    placed = np.zeros(0, dtype=np.int64)
    for i in greedy.sweep_order(cols).tolist():
        size, align, floor = int(cols.size[i]), int(cols.alignment[i]), int(cols.floor[i])
        if size == 0:
            offsets[i] = -(-floor // align) * align
            continue
        placed = placed[cols.upper[placed] > cols.lower[i]]
        order = np.argsort(offsets[placed])
        starts, tops = offsets[placed][order], (offsets + cols.size)[placed][order]
        low = np.concatenate(([0], tops))
        high = np.concatenate((starts, [VALUE_LIMIT * 2]))
        at = -(-np.maximum(low, floor) // align) * align
        for limit in (int(cols.ceiling[i]), VALUE_LIMIT * 2):
            fits = np.flatnonzero(at + size <= np.minimum(high, limit))
            if len(fits):
                offsets[i] = at[fits[0]]
                break
        placed = np.append(placed, i)
    return offsets.tolist()


def test_the_sweep_is_first_fit_over_many_groups_of_blocks() -> None:
    """Thousands of live spans (many groups of blocks, most skipped whole) with gaps,
    alignments, floors and ceilings: the offsets of the plain first fit."""
    rng = random.Random(5)
    buffers = []
    for i in range(5000):
        lower = rng.randrange(300)
        life = rng.randrange(300, 600) if rng.random() < 0.6 else rng.randrange(1, 6)
        size = rng.choice((1, 8, 100, rng.randrange(1, 3000)))
        floor = rng.choice((0, 0, 0, 0, 5000))
        ceiling = floor + size + rng.randrange(0, 400_000) if rng.random() < 0.1 else None
        buffers.append(Buffer(str(i), lower, lower + life, size, rng.choice((1, 1, 16)), floor, ceiling))
    cols = Problem(tuple(buffers)).columns()
    live = max(int(((cols.lower <= s) & (cols.upper > s)).sum()) for s in range(0, 900, 50))
    assert live > compiled.GROUP * compiled.BLOCK  # more blocks than one group holds, even full ones
    placed = place_sweep(cols)
    assert placed is not None and placed[0].tolist() == first_fit_reference(cols)
