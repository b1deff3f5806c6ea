"""The what-if's searches (largest batch, longest cache, most layers) do not assume
that memory grows with what they vary, and each row says how far it looked."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, strategies as st

from tileplan.app.request import PlanRequest
from tileplan.app.whatif import Found, largest_batch_rows, largest_found, what_if
from tileplan.cli.main import main



@given(st.sets(st.integers(1, 300)), st.integers(1, 300), st.integers(1, 300))
def test_the_search_answers_the_largest_fit_up_to_where_it_looked(fitting, start, cap):
    planned: list[int] = []

    def fits(n: int) -> bool:
        assert 1 <= n <= cap
        planned.append(n)
        return n in fitting

    found = largest_found(fits, start, cap)
    assert len(planned) == len(set(planned))  # each value planned once
    assert found.best == 0 or found.best in fitting
    assert found.upto == cap if found.best == cap else found.best < found.upto <= cap
    # every value above the answer, up to where the row says it looked, was planned and does not fit
    assert all(n in planned and n not in fitting for n in range(found.best + 1, found.upto + 1))


def test_a_fit_past_a_failure_is_found():
    """Fits at 1..5 and 7, not 6: a bisection trusting monotone memory answers 5."""
    found = largest_found(lambda n: n <= 5 or n == 7, 1, 64)
    assert found == Found(7, 10, 64) and found.text("largest") == "7 (the largest that fits up to 10)"


def test_the_largest_batch_is_found_where_memory_falls_with_the_batch():
    """so400m at 14 layers on one IPU21: batch 8 does not fit, batches 9 to 12 (a better
    tiling) do, so a search assuming memory grows with the batch would stop at 7."""
    base = PlanRequest(layers=14).resolved()
    assert [base.with_(batch=b).plan().verdict.fits for b in (7, 8, 9, 12, 13)] == [True, False, True, True, False]
    one = largest_batch_rows(base, lambda r: r.plan())[0]
    assert one.request.batch == 12 and one.outcome.fits
    assert one.value == "12 (the largest that fits up to 15)"


def test_the_layers_row_says_when_the_search_stopped_at_its_cap(tmp_path, capsys):
    """Two layers planned: the search ends at four, which fit; so do more."""
    rows = {r.knob: r for r in what_if(PlanRequest(layers=2))}
    assert rows["layers"].value == "4 (all fit up to the search's end: twice the planned 2)"
    assert PlanRequest(layers=5).plan().verdict.fits
    assert main(["plan", "--layers", "2", "-o", str(tmp_path / "r.json")]) == 0
    assert "(the most that fit)" not in capsys.readouterr().out


def test_a_pipeline_stage_margin_shrinks_with_its_layers():
    """The premise of the split search's bisection over a stage's layers
    (`tileplan.planner.pipeline.most_layers`; not over the batch): each stage kind,
    first, middle or last, loses margin with every layer it is given, at a batch whose
    whole-program memory does not grow monotonically."""
    from tileplan.lowering.policy import policy
    from tileplan.model.machine import machine
    from tileplan.model.stages import split_program
    from tileplan.planner.pipeline import margin
    from tileplan.planner.plan import plan_program

    layers = 6
    request = PlanRequest(layers=layers, batch=6).resolved()
    program = request.program()
    for kind, counts, index in (("first", lambda c: (c, layers - c), 0), ("last", lambda c: (layers - c, c), -1),
                                ("middle", lambda c: (layers - c, c, 0), 1)):
        margins = [margin(plan_program(split_program(program, counts(c))[index], machine(request.machine),
                                       policy(request.policy), request.options))
                   for c in range(1, layers + 1)]
        assert all(a > b for a, b in zip(margins, margins[1:])), (kind, margins)


def test_the_pipelines_page_names_the_default_plans_largest_batches():
    """docs/pipelines.md quotes the default plan's batch rows: they hold."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "pipelines.md").read_text()
    one, two = largest_batch_rows(PlanRequest(), lambda r: r.plan())
    text = " ".join(page.split())
    m = re.search(r"names batch (\d+) as the largest that fits one IPU21 and batch (\d+) on two \(rows `batch ([^`]*)` "
                  r"and `batch on 2 IPUs ([^`]*)`\)", text)
    assert m, "docs/pipelines.md's sentence on the default plan's batch rows"
    assert (int(m.group(1)), int(m.group(2))) == (one.request.batch, two.request.batch)
    assert (m.group(3), m.group(4)) == (one.value, two.value)
