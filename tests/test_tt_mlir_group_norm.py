"""torch.nn.GroupNorm through the tt-mlir frontend (convert_nn.py `convert_group_norm`):
tt-mlir's TTNN decomposition at level 0 from the 2026-05 builds, and each build's
refusals in tt-mlir's own words (`group_norm_lowering`, devices/software.toml)."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

import tileplan
from tileplan.errors import ModelError

#: GroupNormDecompositionRewritePattern.cpp's operations, in order
DECOMPOSED = ["ttnn.reshape", "ttnn.mean", "ttnn.subtract", "ttnn.multiply", "ttnn.mean", "ttnn.add",
              "ttnn.rsqrt", "ttnn.multiply", "ttnn.reshape", "ttnn.multiply", "ttnn.add"]


class ConvNorm(torch.nn.Module):
    """A diffusion UNet's resnet block start: conv, GroupNorm(32, C), SiLU."""

    def __init__(self, channels: int = 64) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = torch.nn.GroupNorm(32, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(self.norm(self.conv(x)))


class Norm(torch.nn.Module):
    def __init__(self, groups: int, channels: int) -> None:
        super().__init__()
        self.norm = torch.nn.GroupNorm(groups, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x) * 2


def _plan(model: torch.nn.Module, x: torch.Tensor, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(model.eval(), (x,))
    return tileplan.plan(program, machine="n150", what_if=False, **options)


def _group_norm_ops(result) -> list[str]:
    ops = json.loads(result.to_json())["operations"]
    return [k for k, n in zip(ops["kind"], ops["name"]) if n.startswith("norm.")]


def test_a_unet_block_s_group_norm_is_decomposed_at_level_0_on_the_convolution_s_flat_output():
    """The latest build: the conv's [1, 1, H*W, C] output is reshaped to [1, H*W, 32,
    C/32] with no permute, the statistics are means over [1, 3], and the result stays
    flat for the SiLU."""
    result = _plan(ConvNorm(), torch.randn(1, 64, 32, 32))
    assert result.fits
    assert _group_norm_ops(result) == DECOMPOSED
    ops = json.loads(result.to_json())["operations"]
    assert "ttnn.permute" not in [k for k, n in zip(ops["kind"], ops["name"]) if n.startswith(("norm.", "mul"))]


def test_a_group_norm_of_a_model_input_permutes_its_channels_last_and_back():
    result = _plan(Norm(8, 64), torch.randn(2, 64, 16, 16))
    kinds = _group_norm_ops(result)
    assert kinds[0] == "ttnn.permute" and kinds[1:12] == DECOMPOSED and kinds[-1] == "ttnn.permute"


@pytest.mark.parametrize("version", ["2025-12", "2026-04-21"])
def test_builds_without_the_composite_take_torch_s_decomposition_in_float32(version):
    """torch/_refs native_group_norm: the bf16 input cast to float32 (with its tilize), viewed as [N, G,
    C/G, H*W] (C/G = 4 padded to a tile: 8x the bytes), var_mean, normalised, viewed back,
    the affine, cast back (the output's centring before the variance's: two subtracts);
    even a length that is no whole tiles plans."""
    model = Norm(16, 64).to(torch.bfloat16)
    result = _plan(model, torch.randn(1, 64, 319, dtype=torch.bfloat16), tt_version=version)
    kinds = _group_norm_ops(result)
    assert kinds == ["ttnn.reshape", "ttnn.mean", "ttnn.subtract", "ttnn.subtract", "ttnn.multiply", "ttnn.mean",
                     "ttnn.add", "ttnn.rsqrt", "ttnn.multiply", "ttnn.reshape", "ttnn.multiply", "ttnn.add",
                     "ttnn.typecast"]
    report = json.loads(result.to_json())
    buffers = report["buffers"]
    names = buffers["name"]
    (center,) = [i for i, name in enumerate(names) if name == "norm.groupnorm.center"]
    assert buffers["bytes"][center] == 16 * 32 * 320 * 4  # [1, 16, 4 -> 32, 319 -> 320] float32


def test_a_rank_3_group_norm_is_reshaped_to_rank_4():
    """wav2vec2's GroupNorm(512, 512) on [N, C, L], L whole tiles: [N, C, L, 1] first."""
    kinds = _group_norm_ops(_plan(Norm(16, 16), torch.randn(1, 16, 64)))
    assert kinds[:2] == ["ttnn.reshape", "ttnn.permute"] and kinds[-1] == "ttnn.reshape"


@pytest.mark.parametrize(("version", "options", "x", "message"), [
    (None, {}, torch.randn(1, 16, 319), "'ttnn.group_norm' op flattened height must be tile-aligned, got 319"),
    (None, {"opt_level": 1}, torch.randn(1, 64, 16, 16), "--opt-level 0 on builds from 2026-05-26"),
    ("2025-04", {}, torch.randn(1, 64, 16, 16), "no tt-xla lowering of GroupNorm"),
], ids=["unaligned height", "level 1", "too early"])
def test_each_build_s_refusal_says_what_tt_mlir_does(version, options, x, message):
    groups = 16 if x.shape[1] == 16 else 8
    if version:
        options = {**options, "tt_version": version}
    with pytest.raises(ModelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _plan(Norm(groups, x.shape[1]), x, **options)
