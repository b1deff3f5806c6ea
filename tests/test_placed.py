"""Placement of the worst tiles inside plans: fits by bytes and by placement, or not."""

from __future__ import annotations

import json

from tileplan.cli.main import main
from tileplan.placement import find_violations  # noqa: F401  (the engine's own checker exists)
from tileplan.planner.placed import place_buffers, placement_verdict


def test_a_tile_whose_bytes_fit_but_whose_buffers_cannot_be_placed():
    """Budget 10 KB, the interleaved region from 4 KB: at every step the live bytes fit
    (9, 7, 7 KB; interleaved at most 5 KB of 6) but no placement exists: the interleaved
    buffers pin the standard ones apart."""
    k = 1024
    drafts = [("group", 0, "interleaved", 1, 2, 5 * k), ("group", 1, "standard", 2, 4, 3 * k),
              ("group", 2, "standard", 1, 3, 4 * k), ("group", 3, "interleaved", 3, 4, 4 * k)]
    for step in range(4):
        live = [d for d in drafts if d[3] <= step < d[4]]
        assert sum(d[5] for d in live) <= 10 * k
        assert sum(d[5] for d in live if d[2] == "interleaved") <= 6 * k
    p = place_buffers(7, "worst tile (total)", 1, drafts, 10 * k, 4 * k)
    assert not p.fits and p.infeasible and p.height > 10 * k
    verdict = placement_verdict([p], True, {0: "a", 1: "b", 2: "c", 3: "d"})
    assert verdict.startswith("fits by bytes, not by placement: on tile 7 no placement exists (proven)")


def test_the_default_plan_places_its_worst_tiles_at_their_lower_bounds(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["plan", "--no-what-if", "-o", str(out)]) == 0
    assert "fits by bytes and by placement" in capsys.readouterr().out
    section = json.loads(out.read_text())["placement"]
    assert section["verdict"] == "fits by bytes and by placement"
    tiles = section["tiles"]
    assert tiles[0]["why"] == "worst tile (total)" and tiles[0]["height"] == tiles[0]["lower_bound"]
    floor = 586960 - 424880
    for t in tiles:
        assert all(b[6] >= floor for b in t["buffers"] if b[2] == "interleaved")
        assert max(b[6] + b[5] for b in t["buffers"]) == t["height"] <= t["capacity"]
    doc = json.loads(out.read_text())
    buffers = [b for b in doc["placement"]["tiles"][0]["buffers"] if b[5]]
    a, b = next((a, b) for a in buffers for b in buffers
                if a is not b and a[2] == b[2] and a[3] < b[4] and b[3] < a[4])  # live at a common step
    b[6] = a[6]  # move one onto the other's bytes
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["check", str(bad)]) == 1


def test_a_tile_with_more_buffers_than_the_limit_is_said_not_placed() -> None:
    from tileplan.kernel.options import Options
    from tileplan.lowering.policy import policy
    from tileplan.model.machine import IPU21
    from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic
    from tileplan.planner.placed import BUFFER_LIMIT
    from tileplan.planner.plan import plan_program
    from tileplan.app.build import build_report

    plan = plan_program(build_synthetic(SyntheticConfig(4400)), IPU21, policy("default"), Options())
    assert plan.verdict.fits and plan.placements == ()
    skipped = plan.placement_skipped
    assert skipped is not None and skipped.buffers > BUFFER_LIMIT == skipped.limit
    extra = build_report(plan).extra
    assert "placement" not in extra
    assert extra["placement_skipped"]["tile"] == plan.exact.peak("total")[1]
    assert "the verdict is by bytes" in extra["placement_skipped"]["reason"]


def test_the_plan_and_the_summary_say_when_the_worst_tile_was_not_placed(tmp_path, capsys) -> None:
    from tileplan.cli.main import main

    out = tmp_path / "s.json"
    assert main(["plan", "synthetic:4400", "--no-what-if", "-o", str(out)]) == 0
    assert "placement    not placed: tile " in capsys.readouterr().out
    assert main(["summary", str(out)]) == 0
    assert "Placement: not placed: tile " in capsys.readouterr().out
