"""A torch 1-D convolution through the tt-mlir frontend (convert_conv.py): torch-xla's
2-D convolution of [N, C, 1, L] lowered as any `ttnn.conv2d` before tt-mlir ff14c6957a
(2026-07-14), and as `ttnn.conv1d` (conv2d of height 1 inside tt-metal, config tensors in
L1_SMALL, no slice config, no fused bias) from it; Whisper's encoder convolutions."""

from __future__ import annotations

from functools import lru_cache

import pytest
import torch

from tileplan.model.ir import Program
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import TtnnGraph
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dAttrs
from tileplan.targets.tenstorrent.plan import plan_tt

BF16 = Precision("BF16")


class WhisperStem(torch.nn.Module):
    """Whisper-tiny's encoder convolutions: Conv1d(80, 384, 3, padding=1) and
    Conv1d(384, 384, 3, stride=2, padding=1), each followed by GELU, on 3,000 frames."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv1d(80, 384, 3, padding=1)
        self.conv2 = torch.nn.Conv1d(384, 384, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.gelu(self.conv1(x))
        return torch.nn.functional.gelu(self.conv2(x)).permute(0, 2, 1)


@lru_cache(maxsize=None)
def _program() -> Program:
    from tileplan.importers.torch_export import from_torch

    module = WhisperStem().to(torch.bfloat16)
    x = torch.zeros(1, 80, 3000, dtype=torch.bfloat16)
    return from_torch(module, (x,), "whisper_stem").to_program(BF16, BF16, repeat=False)


def _graph(version: str | None) -> TtnnGraph:
    return lower_graph(_program(), TtMlirOptions(opt_level=0), load_device("n150", version=version))


def _convs(graph: TtnnGraph) -> list[tuple[Conv2dAttrs, int]]:
    return [(n.attrs, len(n.inputs)) for n in graph.nodes if n.kind is OpKind.CONV2D]  # type: ignore[misc]


def test_before_2026_07_14_a_conv1d_is_tt_mlirs_conv2d_of_height_1():
    convs = _convs(_graph("2026-04"))
    assert [(a.input_hw, a.kernel, a.stride, a.padding) for a, _ in convs] == [
        ((1, 3000), (1, 3), (1, 1), (0, 1)), ((1, 3000), (1, 3), (1, 2), (0, 1))]
    assert all(a.config is not None and a.config.config_tensors_in_dram for a, _ in convs)
    assert [inputs for _, inputs in convs] == [3, 3]  # the bias fused (ConvAddBias)
    kinds = [n.kind for n in _graph("2026-04").nodes]
    assert OpKind.ADD not in kinds  # the GELU reads the flattened output, the second conv too


def test_from_2026_07_14_it_is_ttnn_conv1d_with_its_config_tensors_in_l1_small_and_its_bias_apart():
    graph = _graph(None)
    convs = _convs(graph)
    assert [(a.input_hw, a.kernel, a.stride, a.padding) for a, _ in convs] == [
        ((1, 3000), (1, 3), (1, 1), (0, 1)), ((1, 3000), (1, 3), (1, 2), (0, 1))]
    assert all(a.config is not None and not a.config.config_tensors_in_dram and a.slice_type is None
               for a, _ in convs)
    assert [inputs for _, inputs in convs] == [2, 2]
    adds = [graph.values[n.inputs[1]].shape for n in graph.nodes if n.kind is OpKind.ADD]
    assert adds == [(1, 384, 1, 1), (1, 384, 1, 1)]  # each bias, broadcast over [N, O, 1, L]


@pytest.mark.parametrize("version", [None, "2026-04"])
def test_whispers_stem_plans_on_n150(version):
    device = load_device("n150", version=version)
    assert plan_tt(lower(_program(), TtMlirOptions(opt_level=0), device), device).verdict.fits
