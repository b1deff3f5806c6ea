"""The SigLIP towers planned end to end: so400m with F8 weights fits, every parameter
live throughout, scratch counted once per repeat block; F16 weights an honest verdict
naming steps, region and bytes; the policies' and options' effects; the CLI's verdict
and its one-line errors."""

import json
import math

import pytest

from tileplan.cli.main import main
from tileplan.model.layout import Layout, Spread
from tileplan.model.tiling import shards_of

from helpers import plan, report_json

SENTINEL = 2**64 - 1


@pytest.fixture(scope="module")
def f8_27():
    return plan()


def test_so400m_f8_plans_to_the_end_and_fits(f8_27):
    report = report_json(f8_27)
    assert report["scope"] == "program" and report["rejections"] == []
    assert report["program"]["layers"] == 27
    verdict = report["verdict"]
    assert verdict["fits"] is True and report["fits_budget"] is True
    regions = {r["region"]: r for r in verdict["regions"]}
    assert regions["total"]["margin"] == report["budget_bytes"] - regions["total"]["peak"] > 0
    assert regions["total"]["estimate"] == report["effective_peak_bytes"] >= regions["total"]["peak"]
    # the memory that is not tensors sits in the non-interleaved region: the interleaved
    # one is the tensors' whole
    assert report["interleaved_budget_bytes"] == 425984
    assert regions["interleaved"]["margin"] == report["interleaved_budget_bytes"] - report["peak"]["interleaved"]
    assert verdict["over_budget"] is None
    # every operation of the tower has steps, the encoder's with execution_count 27
    ops = report["operations"]
    assert len(ops) == 32 and [o["index"] for o in ops] == list(range(32))
    assert {o["execution_count"] for o in ops if ".encoder.layer{i}." in o["name"]} == {27}
    kinds = {o["kind"] for o in ops}
    assert kinds == {"matmul", "add", "layernorm", "attention", "gelu"}


def test_every_parameter_is_live_for_the_whole_program(f8_27):
    """Weights are Poplar variables: live from the first step to the last (PopVision's
    always-live memory), every layer's, though the repeat block reads layer 0's first."""
    report = report_json(f8_27)
    steps = report["timeline"]["steps"]
    values = report["timeline"]["values"]
    qkv = [v["id"] for v in values if v["group"] == "vit.encoder.attention.qkv.weight"]
    assert len(qkv) == 27
    parameters = {v["id"] for v in values if v.get("role") == "parameter"}
    assert set(qkv) <= parameters and len(parameters) > 27 * 12
    for s in steps:
        assert parameters <= set(s["live"]), s["index"]


def test_the_reference_policy_frees_a_weight_after_its_last_use():
    """The seed's reference planner freed each weight at its last read: `--policy reference`
    keeps that (the 4-layer reference program stops at operation 0, where the patch
    embedding's weight is read and dies)."""
    from tileplan.lowering.program import last_readers
    from tileplan.builtins import siglip
    from tileplan.model.precision import from_option
    program = siglip.build_vit(siglip.config("siglip-so400m-patch14-384", layers=2), from_option("f8f143:-4"))
    weight = "vit.embedding.weight"
    assert last_readers(program)[weight] == 0
    assert last_readers(program, always_live=True)[weight] == 1 << 62


def test_scratch_is_not_multiplied_by_the_repeat_count(f8_27):
    """A step's scratch is one execution's: the encoder's steps, run 27 times, hold what
    the same steps of a 2-layer tower hold; each product's temporaries within the
    memory cap (27 times the largest would be over 1.3 MB)."""
    report = report_json(f8_27)
    block = [(s["operation"], s["scratch"]) for s in report["timeline"]["steps"] if s["execution_count"] == 27]
    two = [(s["operation"], s["scratch"]) for s in report_json(plan(layers=2))["timeline"]["steps"]
           if s["execution_count"] == 2]
    assert block and block == two
    products = [scratch for text, scratch in block if text.startswith("Matmul")]
    assert len(products) == 4  # qkv, output, up, down
    assert all(0 < scratch["standard"] + scratch["interleaved"] <= int(0.6 * 638976) for scratch in products)


def test_f16_weights_get_an_honest_verdict_naming_steps_region_and_bytes():
    report = report_json(plan(weights="f16"))
    assert report["scope"] == "program" and report["fits_budget"] is False
    over = report["verdict"]["over_budget"]
    steps = report["timeline"]["steps"]
    for which in ("first", "worst"):
        entry = over[which]
        step = steps[entry["step"]]
        # all memory counted: the tensors' budget is the tile less the memory that is not tensors
        assert entry["region"] == "total" and entry["budget"] == 638976 - report["support_reserve_bytes"]
        exact_total = report["exact"]["steps"][entry["step"]][1]  # the step's worst tile
        assert entry["usage"] == exact_total + report["peak"]["exchange_rows"] * report["exchange_row_bytes"]
        assert entry["tile"] == report["exact"]["steps"][entry["step"]][0]
        assert entry["usage"] <= step["usage"]["standard"] + step["usage"]["interleaved"] + \
            report["peak"]["exchange_rows"] * report["exchange_row_bytes"]
        assert entry["bytes_over"] == entry["usage"] - entry["budget"] > 0
    assert over["worst"]["bytes_over"] >= over["first"]["bytes_over"]
    total = next(r for r in report["verdict"]["regions"] if r["region"] == "total")
    assert over["worst"]["bytes_over"] == total["peak"] - report["budget_bytes"] == -total["margin"]


def test_default_policy_plans_operation_0_as_poplin_and_rests_every_vector(reference_json):
    """The reference's operation 0 (Convert, Copy, Copy, Gemm, Sum into the reference's
    layouts) is the reference policy's (tests/test_plan_reference.py). The default
    policy plans the patch embedding [729, 588] x [588, 1152] in F8 as poplin would:
    the patches converted to F8, then one Matmul step. Its plan splits the 729 rows 8
    ways (92 a tile), K 4 ways (147, padded to the F8 grain of 32: 160) and N 46 ways
    (25.04 -> 26, padded to the output grain of 16: 32): poplin's temporary is the row
    block 92 x 160 + the weight block 160 x 32 (F8, 1 B) + the partials 92 x 32 in
    F16: 14,720 + 5,120 + 5,888 = 25,728 B. As scratch: standard the two blocks (the
    weights are spread, the rows split, so each tile receives its block) plus the
    input's rearranged share (it rests spread, the plan splits N): ceil(729 x 588 /
    1472) = 292 B; interleaved the partials, 5,888 B (their reduction over the 4 K
    partitions fits in the operands' buffers, which are free by then)."""
    report = report_json(plan(layers=4))
    steps = [s for s in report["timeline"]["steps"] if s["source"] == 0]
    assert [s["operation"].split(" ")[0] for s in steps] == ["Convert", "Matmul"]
    matmul = steps[1]
    for field in ("batch_split: 8,", "field_split: 1,", "in_split: 4,", "out_split: 46,", "serial: 1 out,",
                  "temporary: 25728,", "accumulate: F16,"):
        assert field in matmul["operation"], field
    assert matmul["scratch"] == {"standard": 92 * 160 + 160 * 32 + math.ceil(729 * 588 / 1472),
                                 "interleaved": 92 * 32 * 2}
    # the 43 vectors the reference's resting layout could not represent: the MAP head's
    # four one-row biases rest where their add (their first reader) lays out its
    # [1, 1, N] output, which holds each once; every other vector's add broadcasts it
    # over 729 rows (a replicated layout), so it is created linearly, as PopART's linear
    # mapper creates it: 8-byte blocks (4 F16 elements), 16 or more a tile (128 B), on
    # the fewest tiles, held once, each vector starting where the one before it ended
    mine = {v["name"]: v for v in report["timeline"]["values"]}
    vectors = [v for v in reference_json["timeline"]["values"] if v["shard_bytes"] == SENTINEL]
    assert len(vectors) == 43
    created = {f"vit.map.{n}.bias" for n in ("attention.query", "attention.output", "mlp.up", "mlp.down")}
    for v in vectors:
        assert mine[v["name"]]["layout"] != v["layout"] and mine[v["name"]]["shard_bytes"] is not None
        blocks = math.prod(v["shape"]) // 4
        layout = Layout.from_text(mine[v["name"]]["layout"])
        (axis,) = layout.tiling.axes
        if v["name"] in created:
            assert layout.tiling.replicas == 1 and axis.partitions == 1472, v["name"]
        else:
            assert layout.tiling.replicas == 1 and axis.spread is Spread.LEADING and axis.min_blocks == 16
            held = shards_of(layout, tuple(v["shape"])).shard_elements().ravel()
            assert held.sum() == 4 * blocks and (held[held > 0] >= 64).all(), v["name"]
            # splitRegions: at most ceil(blocks / (blocks // 16)) blocks a tile, on the fewest tiles
            most = math.ceil(blocks / max(1, blocks // 16))
            assert (held > 0).sum() == math.ceil(blocks / most) and held.max() <= 4 * most, v["name"]


def _attention_steps(report):
    ops = {o["index"]: o for o in report["operations"]}
    return [s for s in report["timeline"]["steps"] if ops[s["source"]]["kind"] == "attention"]


def test_streamed_attention_lowers_the_attention_peak():
    materialized = report_json(plan(layers=2, attention="Materialized"))
    streamed = report_json(plan(layers=2, attention="Streamed"))
    automatic = report_json(plan(layers=2, attention="Automatic"))
    peak = lambda r: max(s["usage"]["standard"] + s["usage"]["interleaved"] for s in _attention_steps(r))  # noqa: E731
    assert any(s["operation"].startswith("AttentionScores") for s in _attention_steps(materialized))
    assert any(s["operation"].startswith("AttentionStreamed") for s in _attention_steps(streamed))
    assert peak(streamed) < peak(materialized)
    assert peak(automatic) == min(peak(streamed), peak(materialized))
    assert (materialized["attention_products"], streamed["attention_products"]) == ("Materialized", "Streamed")


def test_packed_partials_are_not_rounded_to_elements():
    """The reference's Gemm writes its K partials as a value in interleaved memory, each
    shard rounded up to a 32 KiB element pair unless packed (the reference policy keeps
    that lowering; it stops after operation 0, whose partials [4, 1, 729, 1152] are
    4,608 B a tile)."""
    native = report_json(plan(layers=1, packing="Native", policy_name="reference"))
    packed = report_json(plan(layers=1, packing="Packed", policy_name="reference"))
    partials = lambda r: [v for v in r["timeline"]["values"] if v["class"].endswith("Interleaved")  # noqa: E731
                          and len(v["shape"]) == 4]
    assert partials(native) and partials(packed)
    assert all(v["aligned_bytes"] % 32768 == 0 for v in partials(native))
    assert all(v["aligned_bytes"] == v["shard_bytes"] == 4608 for v in partials(packed))
    assert packed["peak"]["interleaved"] < native["peak"]["interleaved"]


def test_default_policy_partials_are_scratch_whatever_the_packing():
    """With the default policy a product's partials are its Matmul step's interleaved
    scratch, counted in elements (poplin's estimate): no partials value (the only
    interleaved values are materialized attention scores), nothing rounded to element
    pairs, so the output packing changes no number."""
    native = report_json(plan(layers=1, packing="Native"))
    packed = report_json(plan(layers=1, packing="Packed"))
    assert not [v for v in native["timeline"]["values"] if v["class"].endswith("Interleaved")
                and not v["name"].endswith((" scores", " probabilities"))]
    matmuls = [s for s in native["timeline"]["steps"] if s["operation"].startswith("Matmul")]
    assert matmuls and all(s["scratch"]["interleaved"] > 0 and s["scratch"]["interleaved"] % 32768 for s in matmuls)
    strip = lambda r: [(s["scratch"], s["usage"]) for s in r["timeline"]["steps"]]  # noqa: E731
    assert strip(native) == strip(packed) and native["peak"] == packed["peak"]


def test_base_model_and_f8f152_plan_to_the_end():
    report = report_json(plan(model="siglip-base-patch16-224", weights="f8f152:0"))
    assert report["scope"] == "program" and report["rejections"] == []


def test_plan_cli_prints_the_verdict(tmp_path, capsys):
    out = tmp_path / "f16.json"
    assert main(["plan", "--weights", "f16", "--layers", "27", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1].startswith("Out of memory on tile ")
    assert "over budget in" in text and "worst at step" in text
    assert json.loads(out.read_text())["fits_budget"] is False


@pytest.mark.parametrize("argv,message", [
    (["plan", "--layers", "0"], "--layers must be in [1, 1000], found 0"),
    (["plan", "--layers", "100000"], "--layers must be in [1, 1000], found 100000"),
    (["plan", "--weights", "f12"], "--weights 'f12': expected f16, f32, bf16, f8f143:SCALE or f8f152:SCALE"),
    (["plan", "--weights", "f8f143:40"], "scale_exponent must be in [-31, 31], found 40"),
    (["plan", "vit-huge"], "unknown model 'vit-huge'"),
    (["plan", "--machine", "mk9"], "unknown machine 'mk9'"),
])
def test_plan_bad_options_are_one_line_errors(tmp_path, capsys, argv, message):
    assert main([*argv, "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()
