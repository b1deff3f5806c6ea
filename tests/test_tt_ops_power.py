"""`ttnn.pow_scalar` (tileplan.targets.tenstorrent.ops.tt_power: tt-metal's
`ExecutePower::invoke`) and an L2 norm through the tt-mlir frontend (convert_basic.py
`convert_reduce_l2`: abs, pow 2, sum, pow 0.5, as torch-xla lowers it)."""

from __future__ import annotations

import json

import pytest
import torch
from tt_ops_support import DRAM, MLIR, tile

import tileplan
from tileplan.errors import InputError
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_power import PowScalarAttrs


def _pow(exponent: float):
    x = tile((32, 768), DRAM)
    return plan_op(OpKind.POW_SCALAR, OpRequest((x,), OutputRequest.of(DRAM), MLIR), PowScalarAttrs(exponent))


def test_a_whole_exponent_is_the_unary_power_program():
    plan = _pow(2.0)
    assert [p.name for p in plan.programs] == ["UnaryProgramFactory"]
    assert plan.cb_peak == 2 * 2 * 2048


def test_a_fractional_exponent_is_the_composite_of_seven_programs():
    """log, x fraction, exp, power(floor), multiply, ltz, where(ltz, nan, result); the
    named pow_frac and result live to the end, the temporaries to their one reader."""
    plan = _pow(0.5)
    assert [p.name for p in plan.programs] == [
        "UnaryProgramFactory", "BinaryNgProgramFactory", "UnaryProgramFactory", "UnaryProgramFactory",
        "BinaryNgProgramFactory", "UnaryProgramFactory", "TernaryProgramFactory"]
    assert [(b.name, b.live) for b in plan.buffers] == [
        ("log", (0, 1)), ("pow_trunc_log", (1, 2)), ("pow_frac", (2, 6)), ("power", (3, 4)), ("result", (4, 6)),
        ("ltz", (5, 6)), ("output0", (6, 6))]
    where = plan.programs[-1]
    assert [(c.index, c.pages) for c in where.circular_buffers] == [(0, 2), (1, 2), (3, 2)]


def test_a_negative_exponent_is_refused_in_tt_metals_words():
    with pytest.raises(InputError, match="works for positive exponents only"):
        _pow(-1.0)


class Normalised(torch.nn.Module):
    """SigLIP's and CLIP's embedding normalisation."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / x.norm(p=2, dim=-1, keepdim=True)


def test_an_l2_norm_plans_as_abs_square_sum_and_square_root():
    x = torch.zeros(1, 768, dtype=torch.bfloat16)
    report = json.loads(tileplan.plan(Normalised(), (x,), machine="n150", what_if=False).to_json())
    kinds = report["operations"]["kind"]
    norm = kinds.index("ttnn.abs")
    assert kinds[norm:norm + 4] == ["ttnn.abs", "ttnn.pow_scalar", "ttnn.sum", "ttnn.pow_scalar"]
    assert kinds[-1] == "ttnn.divide"
    assert report["verdict"]["fits"] is True
