"""tileplan's measured error band (src/tileplan/app/ipu-error-band.json): the file holds
the fidelity cases' published figures (tests/test_fidelity.py and
tests/test_fidelity_training.py hold tileplan's figures in it to what the cases plan
now), the band is derived from it as documented, and a plan carries it: the verdict
line, `verdict.error_band`, the what-if rows, each re-derived by `tileplan check`, which
catches a tampered band."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import jsonschema
import pytest

from tileplan.app.build import build_report
from tileplan.app.error_band import DATA, Band, Quantity, derive, ipu_band, read
from tileplan.app.request import PlanRequest
from tileplan.app.whatif import with_what_if
from tileplan.check.driver import check_report
from tileplan.render.terminal import render_headline
from tileplan.report.format import from_json_text, to_json_text
from tileplan.views.common import verdict_line
from tileplan.views.headline import build_headline

ROOT = Path(__file__).resolve().parent.parent
MK2_FILE = ROOT / "tests" / "data" / "machines" / "mk2-2tiles.toml"
SCHEMA = ROOT / "src" / "tileplan" / "report" / "report.schema.json"


def _benchmark():
    spec = importlib.util.spec_from_file_location("fidelity_benchmark", ROOT / "benchmarks" / "fidelity.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules.setdefault("fidelity_benchmark", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(module)
    return module


BENCHMARK = _benchmark()


# the file and the cases --------------------------------------------------------------

def test_the_file_holds_every_published_figure_of_the_cases_and_no_other():
    """One row per published worst-tile figure and per published variables figure of the
    cases, with the case's source; tileplan's figures are taken from the file here (the
    fidelity tests hold them to what the cases plan now)."""
    rows = read()
    answers: dict[str, dict[Quantity, dict[int, int]]] = {}
    variables: dict[str, dict[int, int]] = {}
    for m in rows:
        if m.quantity.worst_tile:
            answers.setdefault(m.case, {}).setdefault(m.quantity, {})[m.ipu] = m.tileplan
        else:
            variables.setdefault(m.case, {})[m.ipu] = m.tileplan
    expected = BENCHMARK.measurements(answers, variables)
    assert [m.to_json() for m in rows] == [m.to_json() for m in expected]
    assert {(m.case, m.quantity) for m in rows if m.quantity.worst_tile} == {
        ("matmul-chain", Quantity.WORST_TILE), ("bert-large-inference-profile-split", Quantity.POPLINER_TILE),
        ("vit-b16-fp32-mb64", Quantity.WORST_TILE), ("bert-tiny-squad-profile", Quantity.POPLINER_TILE)}
    published = {(m.case, m.ipu): m.published for m in rows if m.quantity.worst_tile}
    assert published == {("matmul-chain", 0): 674_752, ("bert-large-inference-profile-split", 0): 336_670,
                         ("bert-large-inference-profile-split", 1): 291_170, ("vit-b16-fp32-mb64", 0): 826_928,
                         ("bert-tiny-squad-profile", 0): 106_267}


def test_the_band_is_the_smallest_and_largest_worst_tile_error_rounded_outward():
    rows = read()
    errors = [100 * (m.tileplan - m.published) / m.published for m in rows if m.quantity.worst_tile]
    band = derive(rows)
    assert band.lower_percent == math.floor(10 * min(errors)) / 10
    assert band.upper_percent == math.ceil(10 * max(errors)) / 10
    assert band.lower_percent <= min(errors) and band.upper_percent >= max(errors)
    assert len(band.measurements) == len(errors) < len(rows)  # the variables rows are not in it
    stated = json.loads(DATA.read_text())["band"]
    assert (stated["lower_percent"], stated["upper_percent"]) == (band.lower_percent, band.upper_percent)
    assert ipu_band() == band


def test_docs_fidelity_ends_with_the_band_the_file_gives():
    text = (ROOT / "docs" / "fidelity.md").read_text()
    assert text.endswith("\n" + BENCHMARK.band_section(list(read())))


# the rule ------------------------------------------------------------------------------

def test_inside_means_an_error_within_the_band_could_turn_the_verdict():
    """lower < -margin / tile <= upper, exactly: a margin of exactly -lower fits for every
    error of the band; one byte less may not."""
    band = Band(-188, 45, ())
    tile = 638_976
    edge = 188 * tile // 1000  # -margin / tile just above -18.8 %
    assert band.inside(edge, tile) and not band.inside(edge + 1, tile)
    assert band.inside(0, tile)  # fits by nothing: an error of -0.1 % turns it
    over = -(45 * tile // 1000)  # over by at most 4.5 %: an error of +4.5 % turns it
    assert band.inside(over, tile) and not band.inside(over - 1, tile)
    assert band.margin_percent(14_698, tile) == 2.3 and band.margin_percent(-160_952, tile) == -25.2


# plans inside and outside the band ---------------------------------------------------------

def machine_file(tmp_path: Path, tile: int) -> str:
    """A Mk2 of 1472 tiles whose tile has `tile` bytes (half of them interleaved): the
    verdict counts all the memory against it (the file's own budgets, which only the
    reference policy uses, shrink to fit)."""
    interleaved = tile // 2
    path = tmp_path / f"mk2-{tile}.toml"
    path.write_text(MK2_FILE.read_text().replace("tile_count = 2", "tile_count = 1472")
                    .replace("tile_bytes = 638976", f"tile_bytes = {tile}")
                    .replace("non_interleaved_bytes = 212992", f"non_interleaved_bytes = {tile - interleaved}")
                    .replace("interleaved_bytes = 425984", f"interleaved_bytes = {interleaved}")
                    .replace("support_reserve_bytes = 49152", "support_reserve_bytes = 0")
                    .replace("standard_budget_bytes = 162080", "standard_budget_bytes = 0")
                    .replace("interleaved_budget_bytes = 424880", "interleaved_budget_bytes = 1"))
    return str(path)


def planned(machine: str, what_if: bool = False):
    """The report of synthetic:500 in F16 on `machine` (with its what-if table)."""
    request = PlanRequest(model="synthetic:500", machine=machine, weights="f16").resolved()
    plan = request.plan()
    report = build_report(plan)
    return with_what_if(report, request, plan) if what_if else report


@pytest.fixture(scope="module")
def used() -> int:
    """The plan's worst tile on the Mk2 preset: its tensors and the memory that is not
    tensors, all the memory the verdict counts."""
    report = planned("mk2")
    total = report.sections.verdict.region("total")
    assert total is not None and total.peak is not None
    return total.peak + report.support_reserve_bytes


def on_a_tile_with_margin(tmp_path: Path, used: int, share: float, what_if: bool = False):
    """The plan on a tile sized so that `used` bytes leave `share` of it free (negative:
    over), and its margin as a share of that tile, read off the report."""
    tile = round(used / (1 - share))
    report = planned(machine_file(tmp_path, tile), what_if)
    total = report.sections.verdict.region("total")
    assert band_of(report)["tile_bytes"] == tile
    return report, total.margin / tile


def band_of(report) -> dict:
    return report.extra["verdict"]["error_band"]


def test_a_plan_that_fits_far_from_the_line_says_so_plainly():
    report = planned("mk2")
    band = band_of(report)
    total = report.sections.verdict.region("total")
    assert band["tile_bytes"] == 638_976 and not band["inside"]
    assert band["margin_percent"] == round(100 * total.margin / 638_976, 1) > 90
    assert (band["lower_percent"], band["upper_percent"]) == (ipu_band().lower_percent, ipu_band().upper_percent)
    assert len(band["measurements"]) == len(ipu_band().measurements)
    line = verdict_line(report)
    assert line.endswith(f"; fits by {band['margin_percent']:.1f} % of the tile, outside tileplan's measured band "
                         f"of {ipu_band().lower_percent:+.1f} % to {ipu_band().upper_percent:+.1f} %")
    assert "compile to be sure" not in line
    jsonschema.validate(json.loads(to_json_text(report)), json.loads(SCHEMA.read_text()))
    assert check_report(from_json_text(to_json_text(report))).consistent


def test_the_measured_band_lies_below_zero():
    """tileplan has measured low on every published tile so far (its figures under the
    published ones): the cases below rest on it."""
    assert ipu_band().lower_percent < ipu_band().upper_percent < 0


def test_a_plan_whose_margin_an_error_of_the_band_could_take_away_is_inside(tmp_path, used):
    share = -(ipu_band().lower_percent + ipu_band().upper_percent) / 200  # the band's middle
    report, margin = on_a_tile_with_margin(tmp_path, used, share)
    band = band_of(report)
    assert report.fits_budget and band["inside"] and band["margin_percent"] == round(100 * margin, 1)
    assert verdict_line(report).endswith(f"; fits by {band['margin_percent']:.1f} % of the tile, inside tileplan's "
                                         f"measured band of {ipu_band().lower_percent:+.1f} % to "
                                         f"{ipu_band().upper_percent:+.1f} %: compile to be sure")
    assert check_report(from_json_text(to_json_text(report))).consistent


def test_a_plan_that_fits_by_less_than_every_measured_error_is_likely_out_of_memory(tmp_path, used):
    """Fits by 0.5 % where tileplan measured at least 1.4 % low on every published tile:
    every error of the band turns it; the line says so."""
    report, margin = on_a_tile_with_margin(tmp_path, used, -ipu_band().upper_percent / 200)
    band = band_of(report)
    assert report.fits_budget and not band["inside"] and 0 < margin < -ipu_band().upper_percent / 100
    assert verdict_line(report).endswith(f"; fits by {band['margin_percent']:.1f} % of the tile, but tileplan "
                                         f"measured low on every published tile ({ipu_band().lower_percent:+.1f} % "
                                         f"to {ipu_band().upper_percent:+.1f} %): the compile is likely out of memory")
    assert check_report(from_json_text(to_json_text(report))).consistent


def test_the_what_if_table_says_a_row_every_error_turns_is_likely_over(tmp_path, used):
    """The as-planned row of a plan that fits by less than every measured error says
    "likely over" in the band column; rows far from the line say "outside"."""
    report, _ = on_a_tile_with_margin(tmp_path, used, -ipu_band().upper_percent / 200, what_if=True)
    lines = render_headline(build_headline(report))
    at = next(i for i, line in enumerate(lines) if line.startswith("what if "))
    planned_row = next(line for line in lines[at + 2:] if line.strip().startswith("as planned"))
    assert planned_row.split()[-2:] == ["likely", "over"] and planned_row.split()[-7] == "fits"
    assert report.extra["what_if"]["baseline"]["inside_band"] is False  # the JSON keeps inside_band's rule


def test_a_plan_over_by_one_percent_is_over_for_every_error_of_the_band(tmp_path, used):
    """tileplan reads low: a real tile holds more than it says, so over stays over."""
    report, margin = on_a_tile_with_margin(tmp_path, used, -0.009)
    band = band_of(report)
    assert not report.fits_budget and not band["inside"] and band["margin_percent"] == round(100 * margin, 1) < 0
    oom = report.extra["verdict"]["out_of_memory"]
    assert oom.startswith("Out of memory on tile ") and f"tiles only have {band['tile_bytes']} bytes" in oom
    assert verdict_line(report) == (f"{oom}; over by {-band['margin_percent']:.1f} % of the tile, outside "
                                    f"tileplan's measured band of {ipu_band().lower_percent:+.1f} % to "
                                    f"{ipu_band().upper_percent:+.1f} %")
    assert check_report(from_json_text(to_json_text(report))).consistent


# check catches a tampered band ---------------------------------------------------------------

def _findings(doc: dict) -> list[str]:
    return [f.place for f in check_report(from_json_text(json.dumps(doc))).findings]


@pytest.fixture(scope="module")
def inside_doc(tmp_path_factory, used) -> dict:
    """A plan in the middle of the band, with its what-if table."""
    share = -(ipu_band().lower_percent + ipu_band().upper_percent) / 200
    report, _ = on_a_tile_with_margin(tmp_path_factory.mktemp("band"), used, share, what_if=True)
    doc = json.loads(to_json_text(report))
    assert not _findings(doc)
    return doc


@pytest.mark.parametrize("field, value", [("inside", False), ("margin_percent", 1.9), ("lower_percent", -5.0),
                                          ("upper_percent", 4.4), ("tile_bytes", 638_977)])
def test_check_catches_a_tampered_band(inside_doc, field, value):
    doc = json.loads(json.dumps(inside_doc))
    doc["verdict"]["error_band"][field] = value
    assert f"verdict.error_band.{field}" in _findings(doc)


def test_check_rederives_the_bounds_from_the_measurements(inside_doc):
    """A measurement moved past the band's edge moves the bound check derives."""
    doc = json.loads(json.dumps(inside_doc))
    rows = doc["verdict"]["error_band"]["measurements"]
    rows[0]["tileplan"] = rows[0]["published"] * 2  # +100 %
    assert "verdict.error_band.upper_percent" in _findings(doc)


def test_check_holds_the_tile_bytes_to_the_report(inside_doc):
    doc = json.loads(json.dumps(inside_doc))
    doc["verdict"]["error_band"]["tile_bytes"] = doc["budget_bytes"]  # less than the budgets and the reserve
    assert "verdict.error_band.tile_bytes" in _findings(doc)


# the what-if rows -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def edge_doc(tmp_path_factory, used) -> dict:
    """A plan whose margin is just inside the band's lower edge (0.05 % of the tile
    less), so that half partials (256 B less) move it out."""
    share = -ipu_band().lower_percent / 100 - 0.0005
    report, _ = on_a_tile_with_margin(tmp_path_factory.mktemp("edge"), used, share, what_if=True)
    return json.loads(to_json_text(report))


def test_each_what_if_row_says_where_its_margin_falls(inside_doc, edge_doc):
    for doc in (inside_doc, edge_doc):
        band = doc["verdict"]["error_band"]
        tile = band["tile_bytes"]
        rows = [doc["what_if"]["baseline"], *[r for r in doc["what_if"]["rows"] if "error" not in r]]
        assert len(rows) > 3
        for r in rows:
            assert r["margin_percent"] == round(100 * r["margin"] / tile, 1)
            over = -r["margin"] / tile * 100
            assert r["inside_band"] == (band["lower_percent"] < over <= band["upper_percent"]), r
        assert doc["what_if"]["baseline"]["inside_band"] is True
        assert band["inside"] is True
    assert not _findings(edge_doc)
    partials = next(r for r in edge_doc["what_if"]["rows"] if r["knob"] == "partials")
    assert partials["margin"] > edge_doc["what_if"]["baseline"]["margin"] and partials["inside_band"] is False


@pytest.mark.parametrize("field, value", [("inside_band", False), ("margin_percent", 50.0)])
def test_check_catches_a_tampered_what_if_row(inside_doc, field, value):
    doc = json.loads(json.dumps(inside_doc))
    doc["what_if"]["baseline"][field] = value
    k = next(i for i, r in enumerate(doc["what_if"]["rows"]) if "error" not in r)
    doc["what_if"]["rows"][k][field] = not doc["what_if"]["rows"][k][field] if field == "inside_band" else value
    found = _findings(doc)
    assert f"what_if.baseline.{field}" in found and f"what_if.rows[{k}].{field}" in found


def test_the_what_if_table_prints_each_rows_place_in_the_band(inside_doc):
    lines = render_headline(build_headline(from_json_text(json.dumps(inside_doc))))
    at = next(i for i, line in enumerate(lines) if line.startswith("what if "))
    header = lines[at + 1].split()
    assert header[-4:] == ["B", "of", "tile", "band"]
    planned_row = next(line for line in lines[at + 2:] if line.strip().startswith("as planned"))
    margin = inside_doc["what_if"]["baseline"]["margin_percent"]
    assert planned_row.split()[-3:] == [f"{margin:+.1f}", "%", "inside"]
    band = ipu_band()
    assert (f"  band: tileplan's measured error on the worst tile, {band.lower_percent:+.1f} % to "
            f"{band.upper_percent:+.1f} % (docs/fidelity.md); a margin inside it: compile to be sure") in lines


def test_a_report_without_a_band_reads_and_checks_as_before(inside_doc):
    """A report of a tileplan before the band: no clause, no columns, check consistent."""
    doc = json.loads(json.dumps(inside_doc))
    del doc["verdict"]["error_band"]
    for r in [doc["what_if"]["baseline"], *doc["what_if"]["rows"]]:
        r.pop("margin_percent", None)
        r.pop("inside_band", None)
    report = from_json_text(json.dumps(doc))
    assert check_report(report).consistent
    assert verdict_line(report).endswith(" B)")
    assert not any("band" in line for line in render_headline(build_headline(report)))
    # rows that state a place in a band the verdict does not state are caught
    doc["what_if"]["baseline"]["inside_band"] = True
    assert "what_if.baseline.inside_band" in _findings(doc)
