"""A clamp by constant bounds through the tt-mlir frontend (convert_basic.py
`convert_clamp`): ReLU6, hardtanh and a one-sided clamp become `ttnn.clamp` (tt-mlir's
`ttnn.clamp_scalar`, tt-metal's unary CLAMP_TSS), planned by the unary program factory
with the circular buffers of any unary op; MobileNetV2 (ReLU6 after every convolution)
plans on n150 (tests/test_tt_mlir_cnn_zoo.py)."""

from __future__ import annotations

import json
import pytest
import torch

import tileplan

class Activated(torch.nn.Module):
    def __init__(self, act: torch.nn.Module) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(256, 256)
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.linear(x))


class ClampMin(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x * 2.0, min=1e-6)


def columns(table: dict) -> list[dict]:
    keys = [k for k, v in table.items() if isinstance(v, list)]
    return [dict(zip(keys, values)) for values in zip(*(table[k] for k in keys))]


def activation_program(module: torch.nn.Module, kind: str) -> tuple[str, list[tuple[int, int, int]]]:
    """The program of the model's one `kind` operation: its factory and its circular
    buffers (index, pages, page bytes)."""
    result = tileplan.plan(module.to(torch.bfloat16), (torch.zeros(64, 256, dtype=torch.bfloat16),),
                           machine="n150", what_if=False)
    report = json.loads(result.to_json())
    ops = columns(report["operations"])
    (op,) = [o for o in ops if o["kind"] == kind]
    program = op["first_program"]
    factory = report["programs"]["factory"][program]
    cbs = [(c["cb_index"], c["pages"], c["page_bytes"]) for c in columns(report["circular_buffers"])
           if c["program"] == program]
    return factory, sorted(cbs)


@pytest.mark.parametrize("act", [torch.nn.ReLU6(), torch.nn.Hardtanh(-2.0, 2.0)], ids=["relu6", "hardtanh"])
def test_a_clamp_between_two_bounds_is_ttnn_clamp_with_the_unary_factorys_buffers(act):
    factory, cbs = activation_program(Activated(act), "ttnn.clamp")
    assert (factory, cbs) == activation_program(Activated(torch.nn.ReLU()), "ttnn.relu")
    # unary_program_factory.cpp: c_0 and c_2 of two bf16 tiles each
    assert (factory, cbs) == ("UnaryProgramFactory", [(0, 2, 2048), (2, 2, 2048)])


def test_a_one_sided_clamp_is_the_same_unary_clamp():
    factory, cbs = activation_program(ClampMin(), "ttnn.clamp")
    assert (factory, cbs) == ("UnaryProgramFactory", [(0, 2, 2048), (2, 2, 2048)])


class HardSwished(torch.nn.Module):
    """MobileNetV3's activation after a convolution and after a Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.hardswish(self.conv(x))
        return torch.nn.functional.hardswish(self.fc(y.mean((2, 3))))


def test_hardswish_is_torchs_core_decomposition_and_keeps_a_conv_output_flattened():
    """x * clamp(clamp(x + 3, min=0), max=6) / 6 (core_aten_decompositions, which tt-xla
    applies): add, clamp, clamp, multiply, divide, twice; the first on the conv's
    flattened output, before the unflatten to NCHW the mean needs."""
    x = torch.zeros(1, 16, 32, 32, dtype=torch.bfloat16)
    result = tileplan.plan(HardSwished().to(torch.bfloat16), (x,), machine="n150", what_if=False)
    report = json.loads(result.to_json())
    kinds = report["operations"]["kind"]
    chain = ["ttnn.add", "ttnn.clamp", "ttnn.clamp", "ttnn.multiply", "ttnn.divide"]
    conv = kinds.index("ttnn.conv2d")
    assert kinds[conv + 1:conv + 6] == chain and kinds[-5:] == chain
    assert report["verdict"]["fits"] is True


class LeakyConv(torch.nn.Module):
    """A YOLO-style convolution followed by a leaky ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 32, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(self.conv(x), 0.1)


@pytest.mark.parametrize("version", [None, "2025-12"])
def test_a_leaky_relu_is_torch_xlas_select_of_a_compare_and_a_scaled_copy(version):
    """BuildLeakyRelu: Select(Gt(x, 0), x, slope * x): gt, multiply, where on the conv's
    flattened output, at either where regime (same shapes: nothing repeated)."""
    x = torch.zeros(1, 16, 32, 32, dtype=torch.bfloat16)
    options = {"tt_version": version} if version else {}
    result = tileplan.plan(LeakyConv().to(torch.bfloat16), (x,), machine="n150", what_if=False, **options)
    kinds = json.loads(result.to_json())["operations"]["kind"]
    conv = kinds.index("ttnn.conv2d")
    assert kinds[conv + 1:conv + 4] == ["ttnn.gt", "ttnn.multiply", "ttnn.where"]
    assert "ttnn.repeat" not in kinds and result.fits
