"""3-D convolutions through the tt-mlir frontend (frontends/tt_mlir/convert_conv3d.py):
the Conv3dConfig each build attaches, the ttnn.pad of the input channels, tt-mlir #7351's
published overflow on Qwen2.5-VL's patch embedding, and the one-line refusals."""

from __future__ import annotations

from functools import lru_cache

import pytest

from tileplan.errors import InputError, ModelError
from tileplan.model.ir import Program
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_conv3d import conv3d_config
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import PadAttrs
from tileplan.targets.tenstorrent.plan import op_target, plan_tt
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import Conv3dRule

from tt_mlir_support import BF16, n150

#: the tt-mlir #7351 build: its system descriptor's L1 base (devices/wormhole_b0.toml)
BUILD_7351 = "2026-03-20"
#: tt-mlir #7351 / tt-xla #3656, as published
MESSAGE_7351 = ("Statically allocated circular buffers on core range [(x=0,y=0) - (x=7,y=7)] grow to 1738528 B "
                "which is beyond max L1 size of 1499136 B")


def _module(conv: object, example: tuple[object, ...], name: str) -> Program:
    from tileplan.importers.torch_export import from_torch

    return from_torch(conv, example, name).to_program(BF16, BF16, repeat=False)


@lru_cache(maxsize=None)
def patch_embed() -> Program:
    """transformers' own Qwen2.5-VL vision patch embedding (3 -> 1280 channels, kernel =
    stride = [2, 14, 14], no bias) in bfloat16, on 64 patches of 1,176 values."""
    import torch
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionPatchEmbed

    module = Qwen2_5_VisionPatchEmbed(patch_size=14, temporal_patch_size=2, in_channels=3, embed_dim=1280)
    return _module(module.to(torch.bfloat16), (torch.zeros(64, 1176, dtype=torch.bfloat16),), "patch-embed")


def conv3d(out: int = 64, kernel: tuple[int, int, int] = (3, 3, 3), stride: int = 1, padding: object = 0,
           channels: int = 8, groups: int = 1, dilation: int = 1) -> Program:
    import torch

    module = torch.nn.Conv3d(channels, out, kernel, stride=stride, padding=padding, groups=groups, dilation=dilation,
                             bias=True).to(torch.bfloat16)
    return _module(module, (torch.zeros(1, channels, 4, 16, 16, dtype=torch.bfloat16),), "conv3d")


def lowered(program: Program, version: str | None = None, machine: str = "n150"):
    device = load_device(machine, version=version)
    return lower(program, TtMlirOptions(opt_level=0), device), device


@pytest.mark.parametrize(("rule", "channels", "kernel", "block"), [
    (Conv3dRule.MINIMAL, 32, (2, 14, 14), 16),  # kvol 392 = 8 x 49: 32 / gcd(392, 32) = 4, lcm(16, 4) = 16
    (Conv3dRule.MINIMAL, 32, (2, 16, 16), 16),  # kvol 512: factor 1, the L1 alignment
    (Conv3dRule.MINIMAL, 32, (3, 3, 3), 32),    # kvol 27 is odd: factor 32
    (Conv3dRule.MINIMAL, 64, (3, 3, 3), 32),
    (Conv3dRule.BLOCKING, 32, (2, 14, 14), 32),
    (Conv3dRule.BLOCKING, 96, (3, 3, 3), 96),
    (Conv3dRule.BLOCKING, 256, (3, 3, 3), 128),
    (Conv3dRule.TILE, 256, (3, 3, 3), 32),
])
def test_each_rule_picks_tt_mlirs_input_channel_block(rule, channels, kernel, block):
    config = conv3d_config(rule, channels, kernel, "here")
    assert (config.c_in_block, config.c_out_block) == (block, 32)


@pytest.mark.parametrize("rule", [Conv3dRule.NONE, Conv3dRule.UNMODELLED])
def test_a_build_whose_config_is_not_modelled_is_refused(rule):
    with pytest.raises(ModelError, match="does not model"):
        conv3d_config(rule, 32, (3, 3, 3), "here")


@pytest.mark.parametrize(("version", "rule"), [
    ("2025-10", Conv3dRule.NONE), ("2025-12", Conv3dRule.UNMODELLED), (BUILD_7351, Conv3dRule.BLOCKING),
    ("2026-04", Conv3dRule.UNMODELLED), (None, Conv3dRule.MINIMAL),
])
def test_the_builds_conv3d_config_follows_tt_mlirs_history(version, rule):
    assert load_device("n150", version=version).software.conv3d_config is rule


def test_qwen2_5_vl_patch_embed_overflows_l1_as_tt_mlir_7351_published():
    """Channels padded 3 -> 32, C_in_block 32: CBs 25,088 + 392 tiles x 2,048 twice + two
    result tiles = 1,634,816 B above the build's 103,712 B base; the published core range
    is an 8 x 8 grid (n300's; n150's is 8 x 9)."""
    program, device = lowered(patch_embed(), BUILD_7351, "n300")
    conv = [op for op in program.ops if op.kind is OpKind.CONV3D]
    assert len(conv) == 1 and conv[0].attrs.config.c_in_block == 32
    plan = plan_tt(program, device)
    assert not plan.fits
    assert plan.verdict.message == MESSAGE_7351
    program, device = lowered(patch_embed(), BUILD_7351)
    assert plan_tt(program, device).verdict.message == MESSAGE_7351.replace("y=7)]", "y=8)]")


def test_the_default_build_fits_the_patch_embed_with_the_minimal_block():
    program, device = lowered(patch_embed())
    kinds = [op.kind for op in program.ops]
    assert kinds.index(OpKind.PERMUTE) < kinds.index(OpKind.PAD) < kinds.index(OpKind.CONV3D)
    conv = next(op for op in program.ops if op.kind is OpKind.CONV3D)
    assert conv.attrs.config.c_in_block == 16
    assert plan_tt(program, device).fits


def test_channels_already_whole_tiles_need_no_pad():
    program, _ = lowered(conv3d(channels=32))
    assert OpKind.PAD not in [op.kind for op in program.ops]
    assert OpKind.CONV3D in [op.kind for op in program.ops]


@pytest.mark.parametrize(("module", "message"), [
    (lambda: conv3d(channels=8, groups=2), "groups == 1"),
    (lambda: conv3d(kernel=(1, 3, 3), dilation=2), "no dilation"),
    (lambda: conv3d(padding=(1, 1, 1)), "none in depth"),
    (lambda: conv3d(kernel=(1, 1, 1)), "matmul"),
])
def test_what_ttnn_conv3d_cannot_take_is_refused_in_one_line(module, message):
    with pytest.raises(ModelError, match=message):
        lowered(module())


def test_output_channels_not_whole_tiles_are_refused_before_tt_mlir_7640():
    with pytest.raises(ModelError, match="7640"):
        lowered(conv3d(out=40), BUILD_7351)


def test_a_build_without_the_lowering_names_the_issue():
    with pytest.raises(ModelError, match="5397"):
        lowered(conv3d(), "2025-10")


def pad(shape: tuple[int, ...], padding: tuple[tuple[int, int], ...], layout: Layout = Layout.TILE,
        dtype: DataType = DataType.BFLOAT16):
    x = TensorSpec(shape, dtype, layout, DRAM_INTERLEAVED)
    return plan_op(OpKind.PAD, OpRequest((x,), OutputRequest(), op_target(n150()), None), PadAttrs(padding))


def test_a_pad_within_the_tile_fills_the_implicit_padding_in_place():
    """fill_pad: one CB of 2 pages of 16 bf16 and a uint16 (68 B); the output is a view."""
    p = pad((64, 2, 14, 14, 3), ((0, 0),) * 4 + ((0, 29),))
    assert p.outputs[0].shape == (64, 2, 14, 14, 32)
    (program,) = p.programs
    assert program.name == "FillPadProgramFactory" and program.cb_bytes == 2 * (2 * 16 + 2)
    assert p.buffers == ()
    assert pad((32, 3), ((0, 0), (0, 29)), dtype=DataType.FLOAT32).programs[0].cb_bytes == 2 * (4 * 16 + 2)


@pytest.mark.parametrize(("shape", "padding", "layout", "dtype", "message"), [
    ((32, 3), ((0, 0), (1, 0)), Layout.TILE, DataType.BFLOAT16, "front padding"),
    ((32, 3), ((0, 0), (0, 5)), Layout.TILE, DataType.BFLOAT8_B, "typecasts"),
])
def test_pads_the_rule_does_not_model_are_refused_by_name(shape, padding, layout, dtype, message):
    with pytest.raises(InputError, match=message):
        pad(shape, padding, layout, dtype)


def test_pad_amounts_are_non_negative():
    with pytest.raises(ValueError, match=">= 0"):
        PadAttrs(((0, -1),))


def test_the_ipu_plans_a_torch_conv3d_through_the_api():
    import torch

    import tileplan

    module = torch.nn.Conv3d(32, 64, 3).to(torch.bfloat16)
    example = (torch.zeros(1, 32, 4, 16, 16, dtype=torch.bfloat16),)
    assert tileplan.plan(module, example_inputs=example, what_if=False).fits


def test_a_plan_on_an_older_build_that_fails_says_the_latest_build_fits(tmp_path):
    import torch
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionPatchEmbed

    from tileplan.app.tenstorrent.request import tt_request
    from tileplan.app.tenstorrent.run import plan_report

    module = Qwen2_5_VisionPatchEmbed(patch_size=14, temporal_patch_size=2, in_channels=3, embed_dim=1280)
    path = tmp_path / "patch-embed.pt2"
    example = (torch.zeros(64, 1176, dtype=torch.bfloat16),)
    torch.export.save(torch.export.export(module.to(torch.bfloat16), example), str(path))
    latest = load_device("n300").version
    report = plan_report(tt_request(str(path), "n300", version=BUILD_7351))
    assert report.what_if is not None
    row = next(r for r in report.what_if.rows if r.knob == "tt_version")
    assert row.fits and row.value == f"{latest} (the latest build tileplan models)"
    assert row.command.endswith(f"--tt-version {latest}")
    on_latest = plan_report(tt_request(str(path), "n300", version=latest))
    assert on_latest.what_if is not None and "tt_version" not in [r.knob for r in on_latest.what_if.rows]
