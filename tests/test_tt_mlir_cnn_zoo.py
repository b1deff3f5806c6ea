"""torchvision's own CNNs (tests/data/zoo: FP32 at [1, 3, 224, 224], no weights) through
the tt-mlir frontend on n150, as tt-xla's test runner compiles them: MobileNetV2 (ReLU6
as ttnn.clamp, depthwise convolutions), MNASNet and ResNeXt (grouped convolutions),
GoogLeNet (ceil-mode max pools) and Inception v3 plan; at level 0 grouped convolutions
take conv2d's DRAM path, sliced as a dense conv is (tt_conv_dram.py); at level 2 a
block-sharded conv whose channels pad to its channel cores (GoogLeNet's 208, Inception's
320, MNASNet's 480) hands its logical channels to the reshape or 1x1 conv after it, its
shards reserved whole (ops/base.py tensor_buffer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tileplan

ZOO = Path(__file__).resolve().parent / "data" / "zoo"


def kinds(result) -> list[str]:
    return json.loads(result.to_json())["operations"]["kind"]


@pytest.mark.parametrize("level", [0, 1, 2])
def test_mobilenet_v2_plans_on_n150_at_every_level(level, tmp_path):
    result = tileplan.plan(str(ZOO / "mobilenet_v2.pt2"), machine="n150", opt_level=level, what_if=False)
    (tmp_path / "mobilenet_v2.json").write_text(result.to_json())
    assert kinds(result).count("ttnn.clamp") == 35  # every ReLU6
    assert result.fits


#: conv2d_DRAM with one slice: conv2d_L1 on the whole DRAM input, its output moved to DRAM
ONE_SLICE = ["InterleavedToShardedProgramFactory", "UntilizeWithHaloProgramFactory", "MoveShardedProgramFactory",
             "Conv2dShardedProgramFactory", "ShardedToInterleavedProgramFactory"]


@pytest.mark.parametrize(("model", "conv"), [("mnasnet1_0", "layers.3.conv"),  # depthwise, 32 groups
                                             ("resnext50_32x4d", "layer1.0.conv2.conv")])  # 32 groups of 4
def test_grouped_convolutions_take_the_dram_path_at_level_0(model, conv, tmp_path):
    result = tileplan.plan(str(ZOO / f"{model}.pt2"), machine="n150", what_if=False)
    (tmp_path / f"{model}.json").write_text(result.to_json())
    report = json.loads(result.to_json())
    ops, factories = report["operations"], report["programs"]["factory"]
    at = ops["name"].index(conv)
    first, count = ops["first_program"][at], ops["program_count"][at]
    assert factories[first:first + count] == ONE_SLICE
    assert result.fits


@pytest.mark.parametrize("model", ["googlenet", "inception_v3", "mnasnet1_0"])
@pytest.mark.parametrize("level", [0, 2])
def test_cnns_with_ceil_pools_and_padded_channels_plan_on_n150(model, level, tmp_path):
    result = tileplan.plan(str(ZOO / f"{model}.pt2"), machine="n150", opt_level=level, what_if=False)
    (tmp_path / f"{model}.json").write_text(result.to_json())
    assert result.fits
