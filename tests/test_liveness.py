"""The liveness view model behind the HTML report and the plot."""

import json

import pytest

from tileplan.views.liveness import BANDS_PER_REGION, OTHER, SCRATCH, build_liveness, heat_columns, what_if_rows
from tileplan.views.common import known

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
    assert not any(label.startswith("operation ") for label in labels)
    # always-live weights fill the bands; an intermediate's group is labelled by its
    # operation's name, not "qkv result" nor "operation 4 result 0"
    labels_of = {v.name: v.label for v in lv.values}
    assert labels_of["vit.encoder.layer{i}.attention.qkv"] == "vit.encoder.attention.qkv"
    assert labels_of["vit.encoder.layer{i}.attention_norm [as F8]"] == "vit.encoder.attention_norm"
    assert not any(v.label.startswith("operation ") or v.label.endswith(" result") for v in lv.values)


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
    assert "vit.encoder.layer{i}.attention.qkv" in names  # the product, once for the repeat block
    assert "vit.encoder.layer{i}.attention_norm [as F8]" in names  # the norm's output converted for the AMP


def _reference_bands(report):
    """The bands and unknown counts by the plain per-step algorithm the columnar one
    replaced (a step's live storage groups as a set, each at its owner's bytes)."""
    from tileplan.views.common import group_label, operations

    values = {v.id: v for v in report.values}
    owner: dict[int, tuple] = {}
    unknown_size = set()
    for v in report.values:
        size = known(v.bytes)
        if size is None:
            unknown_size.add(v.storage_group)
        held = owner.get(v.storage_group)
        if held is None or (size or 0, -v.id) > (held[2], -held[3]):
            owner[v.storage_group] = (v.region, v.group, size or 0, v.id)
    n = len(report.steps)
    totals, first, unknown = {}, {}, []
    for i, s in enumerate(report.steps):
        unknown.append(len({vid for vid in s.live if known(values[vid].bytes) is None}))
        for gid in {values[vid].storage_group for vid in s.live}:
            if gid not in unknown_size:
                region, group, size, _ = owner[gid]
                totals[(region, group)] = totals.get((region, group), 0) + size
                if size:
                    first.setdefault((region, group), i)
    ops = operations(report)
    bands = []
    for region in ("standard", "interleaved"):
        ranked = sorted((g for (r, g) in totals if r == region), key=lambda g: (-totals[(region, g)], g))
        kept = sorted(ranked[:BANDS_PER_REGION], key=lambda g: (first.get((region, g), n), -totals[(region, g)], g))
        series = {g: [0] * n for g in kept}
        other = [0] * n
        for i, s in enumerate(report.steps):
            for gid in {values[vid].storage_group for vid in s.live}:
                r, g, size, _ = owner[gid]
                if r == region and gid not in unknown_size:
                    if g in series:
                        series[g][i] += size
                    else:
                        other[i] += size
        bands += [(g, group_label(g, ops), region, series[g]) for g in kept]
        if len(ranked) > BANDS_PER_REGION:
            bands.append((OTHER, f"{len(ranked) - BANDS_PER_REGION} other groups", region, other))
        scratch = [s.scratch.get(region, 0) for s in report.steps]
        if any(scratch):
            bands.append((SCRATCH, SCRATCH, region, scratch))
    return bands, unknown


def test_bands_equal_the_per_step_reference_on_random_reports():
    """Storage groups shared by values of different sizes (and live over disjoint
    runs), unknown sizes, ties, more groups than bands: the columnar bands and unknown
    counts equal the plain per-step algorithm's, step by step."""
    import random

    from tileplan.report.format import from_json_text

    from helpers import plan, report_json

    # materialized attention: its scores and probabilities are interleaved values (a
    # matmul's partials are its step's scratch, not values)
    doc = report_json(plan(layers=1, attention="Materialized"))
    templates = {}
    for v in doc["timeline"]["values"]:
        templates.setdefault(v["class"].endswith("Standard"), v)
    rng = random.Random(13)
    for _ in range(150):
        n_values, n_steps = rng.randint(1, 40), rng.randint(1, 30)
        values, live = [], [[] for _ in range(n_steps)]
        for i in range(n_values):
            v = dict(templates[rng.random() < 0.6], id=i, origin=i, root=i, name=f"v{i}",
                     group=f"g{rng.randint(0, 14)}", storage_group=rng.choice([i, i, rng.randint(0, 5)]),
                     bytes=rng.choice([None, 0, 16, 16, 32, 48, 64]))
            values.append(v)
            if rng.random() < 0.85:
                a = rng.randrange(n_steps)
                b = rng.randrange(a, n_steps)
                for s in range(a, b + 1):
                    live[s].append(i)
        steps = [{"index": s, "source": 0, "operation": "Copy", "execution_count": 1, "live": live[s],
                  "scratch": {"standard": rng.choice([0, 0, 8]), "interleaved": rng.choice([0, 0, 24])},
                  "usage": {"standard": 0, "interleaved": 0}} for s in range(n_steps)]
        case = dict(doc, timeline={"values": values, "steps": steps})
        for key in ("exact", "verdict", "operations", "what_if", "placement"):
            case.pop(key, None)
        report = from_json_text(json.dumps(case), "random.json")
        lv = build_liveness(report)
        expected, unknown = _reference_bands(report)
        assert [(b.group, b.label, b.region, b.bytes.tolist()) for b in lv.bands] == expected
        assert lv.unknown.tolist() == unknown
        assert lv.live == tuple(tuple(sorted(s.live)) for s in report.steps)


@pytest.mark.parametrize("policy_name, label", [("default", "tensors' budget"), ("reference", "budget")])
def test_the_budget_line_says_what_it_bounds(policy_name, label):
    """Where the verdict counts all memory the budget line is the tensors' (the tile less
    the memory that is not tensors); the reference policy's fixed budget is a budget."""
    from tileplan.app.request import PlanRequest
    from tileplan.app.build import build_report

    report = build_report(PlanRequest(model="synthetic:100", policy=policy_name).resolved().plan())
    lv = build_liveness(report)
    assert lv.budget_label == label and lv.to_json()["budget_label"] == label
    nt = report.sections.non_tensor
    assert (nt is not None and nt.in_verdict) == (policy_name == "default")
    if policy_name == "default":
        assert lv.budget_bytes + nt.total == 638_976
