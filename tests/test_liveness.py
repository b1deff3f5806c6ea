"""The liveness view model behind the HTML report and the plot."""

import json

import pytest

from tileplan.report.liveness import BANDS_PER_REGION, OTHER, SCRATCH, build_liveness, heat_columns, what_if_rows
from tileplan.report.views import known

from report_files import read_back

pytest_plugins = ["report_fixtures"]


@pytest.mark.parametrize("fixture", ["f8_path", "f16_path"])
def test_bands_add_up_to_each_steps_usage(fixture, request):
    report = read_back(request.getfixturevalue(fixture))
    lv = build_liveness(report)
    for region in ("standard", "interleaved"):
        bands = [b for b in lv.bands if b.region == region]
        assert len([b for b in bands if b.group not in (OTHER, SCRATCH)]) <= BANDS_PER_REGION
        for s in report.steps:
            assert sum(b.bytes[s.index] for b in bands) == s.usage[region], (region, s.index)
    assert all(n == 0 for n in lv.unknown)


def test_resident_weights_keep_a_band_and_intermediates_are_named_by_operation(f8_path):
    lv = build_liveness(read_back(f8_path))
    labels = [b.label for b in lv.bands if b.region == "standard"]
    for group in ("vit.encoder.mlp.up.weight", "vit.encoder.mlp.down.weight", "vit.encoder.attention.qkv.weight"):
        assert group in labels
    assert "vit.encoder.attention.qkv.weight [AMP copy]" in {b.label for b in lv.bands}  # not "qkv result"
    assert not any(label.startswith("operation ") for label in labels)


def test_live_sets_values_and_top_allocations(f8_path):
    report = read_back(f8_path)
    lv = build_liveness(report)
    assert lv.live == tuple(tuple(sorted(s.live)) for s in report.steps)
    assert [v.id for v in lv.values] == sorted(v.id for v in report.values)
    sizes = [v.bytes for v in lv.top_allocations]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] == max(v.bytes for v in report.values)
    qkv = next(v for v in lv.values if v.name == "vit.encoder.layer0.attention.qkv.weight")
    assert (qkv.first_step, qkv.last_step) == (0, max(s.index for s in report.steps if qkv.id in s.live))
    assert qkv.role == "parameter" and qkv.region == "standard"


def test_repeat_blocks_cover_the_steps_run_more_than_once(f8_path):
    report = read_back(f8_path)
    lv = build_liveness(report)
    assert len(lv.repeats) == 1
    r = lv.repeats[0]
    assert r.count == 27 and len(r.operations) == 14
    repeated = [s.index for s in report.steps if s.execution_count > 1]
    assert (r.first_step, r.last_step) == (repeated[0], repeated[-1])
    assert repeated == list(range(r.first_step, r.last_step + 1))


def test_peak_and_tiles_follow_the_exact_section(f16_path):
    report = read_back(f16_path)
    lv = build_liveness(report)
    exact = report.extra["exact"]
    assert lv.peak_step == report.extra["verdict"]["peak_tile"]["step"] == exact["peak"]["total"]["step"]
    assert lv.tiles is not None
    assert list(lv.tiles.peak) == exact["tiles"]["peak"] and len(lv.tiles.peak) == 1472
    assert lv.tiles.columns == 46
    assert sum(lv.tiles.histogram_counts) == 1472
    assert lv.tiles.top_tiles[0] == (exact["top_tiles"][0]["tile"], exact["top_tiles"][0]["bytes"],
                                     exact["top_tiles"][0]["step"])


def test_stopped_plan_marks_unknown_steps(rejected_path):
    report = read_back(rejected_path)
    lv = build_liveness(report)
    assert lv.peak_step is None and lv.tiles is None and lv.what_if is None and lv.repeats == ()
    for s in report.steps:
        missing = sum(known(v.bytes) is None for v in report.values if v.id in s.live)
        assert lv.unknown[s.index] == missing > 0
        # the bands hold the known part: at most the usage of the region that is known
        inter = sum(b.bytes[s.index] for b in lv.bands if b.region == "interleaved")
        assert inter == s.usage["interleaved"]
    assert len(lv.rejections) == 43
    json.dumps(lv.to_json(), allow_nan=False)


def test_what_if_rows_put_the_plan_as_it_is_first(f8_path):
    report = read_back(f8_path)
    report.extra["what_if"] = {
        "baseline": {"fits": True, "scope": "program", "peak": 368480, "margin": 218480, "command": "tileplan plan"},
        "rows": [{"knob": "weights", "value": "f16", "fits": False, "scope": "program", "peak": 676544,
                  "margin": -89584, "command": "tileplan plan --weights f16"}],
    }
    rows = what_if_rows(report)
    assert [(r.knob, r.value, r.fits, r.margin) for r in rows] == [
        ("as planned", "", True, 218480), ("weights", "f16", False, -89584)]
    report.extra["what_if"] = [{"knob": "layers", "value": "47", "fits": True, "peak": 1, "margin": 2,
                                "command": "c"}]
    assert [r.knob for r in what_if_rows(report)] == ["layers"]
    del report.extra["what_if"]
    assert what_if_rows(report) is None


@pytest.mark.parametrize("tiles,columns", [(1472, 46), (1216, 38), (64, 8), (7, 3), (1, 1)])
def test_heat_map_columns(tiles, columns):
    assert heat_columns(tiles) == columns
    rows = -(-tiles // columns)
    assert columns * rows >= tiles and columns <= 2 * rows + 1


def test_every_value_of_the_default_report_has_its_own_readable_name(f8_path):
    names = [v.name for v in read_back(f8_path).values]
    assert len(set(names)) == len(names)
    assert not any(n.startswith("operation ") for n in names)
    assert "vit.encoder.layer{i}.attention.qkv.weight [AMP copy]" in names
    assert "vit.encoder.layer{i}.attention_norm [as F8]" in names  # the norm's output converted for the AMP
