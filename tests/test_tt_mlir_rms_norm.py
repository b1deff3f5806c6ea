"""An RMS norm through the tt-mlir frontend, by build.

tt-xla's FX fusion (devices/software.toml `rms_norm_fusion`, fusion.py `fuse_rms_norm`)
makes Hugging Face's RMSNorm one `ttnn.rms_norm` from 2026-01-15, but from 2026-01-26 to
03-25 not when the weight is wider than 3,968; unfused, the norm is torch's
decomposition in float32 between two casts. A fused norm's row is one core's whole row
of tiles until tt-metal PR #38006 (2026-02) gave RMSNorm the large-tensor path
(`norm_large_tensor`, ops/tt_norm.py; the factory's own rule is tested in
test_tt_ops_norm.py): from then a 5,120-wide float32 norm streams its row and fits."""

from __future__ import annotations

from functools import lru_cache

import pytest
import torch

from tileplan.model.ir import Program
from tileplan.model.precision import F32, Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.program import TtProgram
from tileplan.targets.tenstorrent.tiles import DataType

BF16 = Precision("BF16")


class RmsNorm(torch.nn.Module):
    """Hugging Face's LlamaRMSNorm (the float32 upcast and the cast back)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * h.to(dtype)


@lru_cache(maxsize=None)
def _program(width: int, precision: Precision) -> Program:
    from tileplan.importers.torch_export import from_torch

    dtype = torch.float32 if precision == F32 else torch.bfloat16
    module = RmsNorm(width).to(dtype)
    return from_torch(module, (torch.zeros(1, 32, width, dtype=dtype),), "rms").to_program(precision, precision,
                                                                                          repeat=False)


def _lowered(width: int, precision: Precision, version: str) -> TtProgram:
    return lower(_program(width, precision), TtMlirOptions(opt_level=0), load_device("n150", version=version))


def _kinds(program: TtProgram) -> list[OpKind]:
    return [op.kind for op in program.ops]


@pytest.mark.parametrize(("version", "width", "fused"), [
    ("2025-12-18", 2048, False),  # before tt-xla's FX fusion pass (2026-01-15)
    ("2026-03-20", 3968, True),   # the filter's widest
    ("2026-03-20", 4096, False),  # wider than the filter lets through (2026-01-26 .. 03-25)
    ("2026-04-21", 4096, True),   # the filter gone (2026-03-26)
])
def test_the_fusion_by_build_and_width(version: str, width: int, fused: bool) -> None:
    kinds = _kinds(_lowered(width, BF16, version))
    assert (OpKind.RMS_NORM in kinds) is fused
    assert (OpKind.RSQRT in kinds) is not fused


def test_an_unfused_bf16_norm_runs_in_float32_between_two_casts() -> None:
    ops = [(op.kind, op.out.dtype) for op in _lowered(2048, BF16, "2025-12-18").ops if op.kind is not OpKind.TO_LAYOUT]
    f32, bf16 = DataType.FLOAT32, DataType.BFLOAT16
    assert ops == [(OpKind.TYPECAST, f32), (OpKind.POW, f32), (OpKind.MEAN, f32), (OpKind.ADD, f32),
                   (OpKind.RSQRT, f32), (OpKind.MULTIPLY, f32), (OpKind.TYPECAST, bf16),
                   (OpKind.MULTIPLY, bf16)]  # the last: the weight's product, in the model's type


def test_a_wide_float32_norm_fused_after_pr_38006_streams_its_row_and_fits() -> None:
    device = load_device("n150", version="2026-04-21")
    program = lower(_program(5120, F32), TtMlirOptions(opt_level=0), device)
    assert _kinds(program).count(OpKind.RMS_NORM) == 1
    assert plan_tt(program, device).fits
