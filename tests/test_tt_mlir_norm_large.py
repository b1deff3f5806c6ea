"""A wide RMSNorm through the tt-mlir frontend, by build (devices/software.toml
`norm_large_tensor`, ops/tt_norm.py): before tt-metal PR #38006 (2026-02) the
interleaved norm factory's large-tensor path was LayerNorm's only, so an RMSNorm keeps
its whole row of tiles on each core and a row of 5,120 float32 values (Wt = 160) grows
the circular buffers beyond L1, as tt-metal #36094 (tt-mlir's rms_norm of (1, 5120)) and
tt-mlir #6754 (Qwen3-Embedding-8B) report; from it the row is streamed in blocks of 56
tiles and the norm fits."""

from __future__ import annotations

from functools import lru_cache

import torch

from tileplan.model.ir import Program
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import plan_tt

F32 = Precision("F32")
WIDTH = 5120


class RmsNorm(torch.nn.Module):
    """Hugging Face's LlamaRMSNorm, as tt-xla's RMSNorm fusion finds it."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + 1e-6))


@lru_cache(maxsize=None)
def _program() -> Program:
    from tileplan.importers.torch_export import from_torch

    return from_torch(RmsNorm(), (torch.zeros(1, 32, WIDTH),), "rms").to_program(F32, F32, repeat=False)


def _plan(version: str):
    device = load_device("n150", version=version)
    program = lower(_program(), TtMlirOptions(opt_level=0), device)
    assert [op.kind for op in program.ops if op.kind is OpKind.RMS_NORM] == [OpKind.RMS_NORM]
    return plan_tt(program, device)


def test_before_pr_38006_the_rms_norm_row_grows_beyond_l1():
    plan = _plan("2025-12-18")
    assert not plan.fits
    assert "grow to" in plan.verdict.message and "beyond max L1 size of 1499136 B" in plan.verdict.message


def test_from_pr_38006_the_rms_norm_streams_its_row_and_fits():
    assert _plan("2026-03-20").fits
