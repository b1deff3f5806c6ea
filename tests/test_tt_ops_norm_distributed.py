"""The distributed RMS norm's two halves (ops/tt_norm_distributed.py) against
layernorm_pre_all_gather_program_factory.cpp and
layernorm_post_all_gather_program_factory.cpp."""

from __future__ import annotations

from tt_ops_support import DRAM, MLIR, row_major, tile

from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, MathFidelity, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_norm import NormAttrs

FP32_ACC = ComputeConfig(MathFidelity.HIFI2, True, True, True)
X = tile((1, 1, 4096, 2560), DRAM)  # dim 5,120 over two chips: Wt 80


def test_pre_all_gather_worked_example() -> None:
    """160 x 2,048 + 4,096 + 160 x 4,096 + 2,048 = 989,184 B; the statistics [.., S, 32]."""
    plan = plan_op(OpKind.RMS_NORM_PRE_ALL_GATHER, OpRequest((X,), OutputRequest.of(DRAM), MLIR, FP32_ACC))
    assert plan.cb_peak == 989_184
    assert plan.outputs[0].shape == (1, 1, 4096, 32)


def test_post_all_gather_worked_example() -> None:
    """80 x 2,048 + 2 x 2,048 + 80 x 2,048 + 2 x 2,048 + 4 x 4,096 + 80 x 4,096 + 80 x
    2,048 = 843,776 B with the gathered statistics of two chips and a gamma."""
    stats = tile((1, 1, 4096, 64), DRAM)
    gamma = row_major((1, 1, 80, 32), DRAM)
    plan = plan_op(OpKind.RMS_NORM_POST_ALL_GATHER, OpRequest((X, stats), OutputRequest.of(DRAM), MLIR, FP32_ACC),
                   NormAttrs(gamma=gamma))
    assert plan.cb_peak == 843_776
    assert plan.outputs[0].shape == X.shape


def test_without_fp32_accumulation_the_intermediates_are_float16_b() -> None:
    plan = plan_op(OpKind.RMS_NORM_PRE_ALL_GATHER, OpRequest((X,), OutputRequest.of(DRAM), MLIR))
    assert plan.cb_peak == 160 * 2048 + 2048 + 160 * 2048 + 2048
