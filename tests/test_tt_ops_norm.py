"""Softmax, layer norm and RMS norm rules (tileplan.targets.tenstorrent.ops.tt_softmax,
tt_norm) against the ground truth of TENSTORRENT-NOTES.md (h)."""

from __future__ import annotations

import pytest
from tt_ops_support import DRAM, E150, L1, MLIR, N300, footprint, height_sharded, sharded, tile

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import CoreRange, MemoryConfig, MemoryLayout, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, MathFidelity, OpRequest, OpTarget, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_norm import LayerNormShardedProgramConfig, NormAttrs
from tileplan.targets.tenstorrent.ops.tt_softmax import SoftmaxAttrs, SoftmaxShardedProgramConfig
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import NormLargeTensor

HS16 = tile((3, 1, 1024, 1024), sharded(MemoryLayout.HEIGHT_SHARDED, CoreRange((0, 0), (3, 3)), (192, 1024)))
I4X2 = tile((4, 2, 160, 224))
HS64 = height_sharded(64, 8, 8, (512, 32))


def _plan(kind: OpKind, x: TensorSpec, out: MemoryConfig, target: OpTarget, attrs: object = None,
          dtype: DataType | None = None) -> tuple[int, int]:
    return footprint(plan_op(kind, OpRequest((x,), OutputRequest.of(out, dtype), target), attrs))


@pytest.mark.parametrize(("source", "x", "target", "expected"), [
    ("H1 #3 softmax HS16 N300", HS16, N300, (137_216, 393_216)),
    ("H1 #3 softmax HS16 E150", HS16, E150, (137_216, 393_216)),
    ("H1 #4 softmax I4x2 N300", I4X2, N300, (28_672, 10_240)),
    ("H1 #4 softmax I4x2 E150", I4X2, E150, (28_672, 6_144)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_h1_softmax(source: str, x: TensorSpec, target: OpTarget, expected: tuple[int, int]) -> None:
    """H1 SoftmaxOpIfTest, dim -1, no program config: the interleaved attention-softmax
    factory even for the sharded input. HS16: Wt 32, block find_max_divisor(32, 8) = 8:
    in0 16 + out 16 + exps 32 + 3 one-tile CBs = 67 tiles. I4x2: Wt 7, and
    find_max_divisor skips 7, so block 1: 2 + 2 + 7 + 3 = 14 tiles."""
    assert _plan(OpKind.SOFTMAX, x, x.memory, target, SoftmaxAttrs(dim=-1)) == expected


@pytest.mark.parametrize(("x_mem", "out", "expected"), [
    (DRAM, DRAM, (137_216, 0)), (DRAM, L1, (137_216, 2_048)), (L1, DRAM, (137_216, 0)), (L1, L1, (137_216, 2_048)),
], ids=["H2 SoftmaxInterleaved DRAM->DRAM", "H2 DRAM->L1", "H2 L1->DRAM", "H2 L1->L1"])
def test_h2_softmax_interleaved(x_mem: MemoryConfig, out: MemoryConfig, expected: tuple[int, int]) -> None:
    """H2 SoftmaxInterleaved: {64, 1024} (Wt 32), 67 tiles of CBs."""
    assert _plan(OpKind.SOFTMAX, tile((64, 1024), x_mem), out, MLIR, SoftmaxAttrs(dim=-1)) == expected


@pytest.mark.parametrize(("x_mem", "out"), [(HS64, HS64), (HS64, L1), (L1, HS64)],
                         ids=["H2 SoftmaxSharded HS->HS", "H2 HS->L1", "H2 L1->HS"])
def test_h2_softmax_over_h(x_mem: MemoryConfig, out: MemoryConfig) -> None:
    """H2 SoftmaxSharded, dim -2 of {32768, 32}: the general H factory; its small-kernel
    CBs (Ht = 1024 tiles each) exceed the 512 KiB budget, so the large kernel's 12 tiles
    (24,576 B); the output 1,024 tiles over 64 cores."""
    assert _plan(OpKind.SOFTMAX, tile((32768, 32), x_mem), out, MLIR, SoftmaxAttrs(dim=-2)) == (24_576, 32_768)


def test_softmax_sharded_program_config() -> None:
    """softmax_sharded_program_factory: with a SoftmaxShardedProgramConfig the input and
    output CBs bind the shards; what remains is im/scaler/reduce tiles."""
    x = tile((1, 1, 256, 1024), sharded(MemoryLayout.HEIGHT_SHARDED, CoreRange((0, 0), (7, 0)), (32, 1024)))
    attrs = SoftmaxAttrs(dim=-1, program_config=SoftmaxShardedProgramConfig((8, 1), 8, 1, 32))
    plan = plan_op(OpKind.SOFTMAX, OpRequest((x,), OutputRequest.of(x.memory), N300), attrs)
    bound = [cb for cb in plan.programs[0].circular_buffers if cb.globally_allocated]
    assert {cb.name for cb in bound} >= {"in0", "out0"}
    assert plan.output_bytes_per_core(0) == 32 * 1024 * 2


def test_softmax_refuses_an_outer_dim() -> None:
    with pytest.raises(InputError, match="dim"):
        _plan(OpKind.SOFTMAX, tile((4, 64, 64)), L1, MLIR, SoftmaxAttrs(dim=0))


def _gamma(width: int, memory: MemoryConfig) -> TensorSpec:
    return tile((width,), memory)


@pytest.mark.parametrize(("x", "out", "attrs", "expected"), [
    (tile((1, 32, 128, 128), DRAM), DRAM, NormAttrs(_gamma(128, DRAM), _gamma(128, DRAM)), (94_208, 0)),
    (tile((1, 64, 64, 64), DRAM), DRAM, NormAttrs(), (45_056, 0)),
    (tile((1, 32, 32, 32), L1), L1, NormAttrs(_gamma(32, L1), _gamma(32, L1)), (45_056, 2_048)),
    (tile((2, 16, 64, 64), DRAM), DRAM, NormAttrs(_gamma(64, DRAM)), (57_344, 0)),
    (tile((1, 16, 32, 32), DRAM), DRAM, NormAttrs(), (36_864, 0)),
], ids=["H2 rmsNormTestValues 1 (w,b)", "H2 2 (none)", "H2 3 L1 (w,b)", "H2 4 (w)", "H2 5 (none)"])
def test_h2_rms_norm(x: TensorSpec, out: MemoryConfig, attrs: NormAttrs, expected: tuple[int, int]) -> None:
    """H2 rmsNormTestValues: layernorm_op_multi_core.cpp interleaved, RMS: in0 and the
    x^2 / x*rstd CBs Wt tiles each (block = Wt when it fits), 2-tile out/scaler/eps, one
    c_24 only with gamma or beta, gamma/beta Wt tiles."""
    assert _plan(OpKind.RMS_NORM, x, out, MLIR, attrs) == expected


def test_layer_norm_adds_the_mean_cbs() -> None:
    """LayerNorm over the same input as H2 rmsNorm row 2 (Wt = 2): E[x] c_18 (2 tiles)
    and x - E[x] c_24 (Wt tiles) join what RMS norm allocates."""
    x = tile((1, 64, 64, 64), DRAM)
    rms = plan_op(OpKind.RMS_NORM, OpRequest((x,), OutputRequest.of(DRAM), MLIR), NormAttrs())
    ln = plan_op(OpKind.LAYER_NORM, OpRequest((x,), OutputRequest.of(DRAM), MLIR), NormAttrs())
    assert ln.cb_peak - rms.cb_peak == (2 + 2) * 2048


def test_sharded_layer_norm_binds_input_and_output() -> None:
    """layernorm_op_multi_core_sharded.cpp: in0 and out bound to the shards, the rest
    unbound; block 1 x 4 tiles over 8 cores."""
    x = tile((1, 1, 32, 1024), sharded(MemoryLayout.WIDTH_SHARDED, CoreRange((0, 0), (7, 0)), (32, 128)))
    cfg = LayerNormShardedProgramConfig((8, 1), subblock_w=4, block_h=1, block_w=4)
    plan = plan_op(OpKind.LAYER_NORM, OpRequest((x,), OutputRequest.of(x.memory), N300), NormAttrs(program_config=cfg))
    cbs = {cb.name: cb for cb in plan.programs[0].circular_buffers}
    assert cbs["in0"].globally_allocated and cbs["out"].globally_allocated
    assert plan.output_bytes_per_core(0) == 4 * 2048


#: tt-mlir #6754 (2026-01-27), Qwen3-Embedding-8B on an N150: ttnn.rms_norm of a [32, 4096]
#: float32 DRAM tensor with a bf16 TILE gamma, HiFi4 with fp32 accumulation
QWEN3_EMBEDDING_NORM = tile((32, 4096), DRAM, DataType.FLOAT32)
FP32_ACC = ComputeConfig(MathFidelity.HIFI4, False, True, True)


def _rms_cbs(rule: NormLargeTensor) -> dict[str, int]:
    attrs = NormAttrs(gamma=_gamma(4096, DRAM), large_tensor=rule)
    plan = plan_op(OpKind.RMS_NORM, OpRequest((QWEN3_EMBEDDING_NORM,), OutputRequest.of(DRAM), MLIR, FP32_ACC),
                   attrs)
    return {cb.name: cb.total_bytes for cb in plan.programs[0].circular_buffers}


def test_a_wide_rms_norm_keeps_whole_rows_before_pr_38006() -> None:
    """Before tt-metal PR #38006 the large-tensor path is LayerNorm's only: Qwen3-
    Embedding-8B's row of Wt = 128 float32 tiles keeps in0 and x^2 whole (128 x 4,096 B
    each), with gamma's 128 bf16 tiles: 1,425,408 B of CBs on one core, beyond the
    1,499,136-B L1 once the unreserved base (about 100 KB) is below them. tt-mlir #6754
    printed 'grow to 1528960 B which is beyond max L1 size of 1499136 B' (1,528,960 -
    1,425,408 = 103,552 B of base on its build, between the 102,208 of 2025-12-18 and
    the 103,712 of 2026-03-20)."""
    cbs = _rms_cbs(NormLargeTensor.LAYER_NORM)
    assert cbs["in0"] == cbs["xmm2"] == 128 * 4096 and cbs["gamma"] == 128 * 2048
    assert "xmm" not in cbs and "accumulate" not in cbs
    assert sum(cbs.values()) == 1_425_408


def test_a_wide_rms_norm_streams_its_row_from_pr_38006() -> None:
    """From PR #38006 RMSNorm takes the large-tensor path: with gamma (and a float32
    input) the row is cut to 56 tiles for in0, c_24, x^2 and gamma; c_24 exists, and the
    one-tile Float32 accumulator c_26 joins: 921,600 B."""
    cbs = _rms_cbs(NormLargeTensor.WITH_RMS)
    assert cbs["in0"] == cbs["xmm"] == cbs["xmm2"] == 56 * 4096 and cbs["gamma"] == 56 * 2048
    assert cbs["accumulate"] == 4096
    assert sum(cbs.values()) == 921_600


def test_row_major_gamma_keeps_whole_rows_on_every_build() -> None:
    """tt-transformers' norms read a row-major gamma: the reader for it has no
    large-tensor variant, so the row stays whole on both rules."""
    gamma = TensorSpec((1, 1, 128, 32), DataType.BFLOAT16, Layout.ROW_MAJOR, DRAM)
    sizes = {rule: footprint(plan_op(OpKind.RMS_NORM, OpRequest((QWEN3_EMBEDDING_NORM,), OutputRequest.of(DRAM),
                                                                 MLIR, FP32_ACC), NormAttrs(gamma=gamma,
                                                                                            large_tensor=rule)))
             for rule in NormLargeTensor}
    assert sizes[NormLargeTensor.LAYER_NORM] == sizes[NormLargeTensor.WITH_RMS]
    assert sizes[NormLargeTensor.LAYER_NORM][0] > 1_400_000


def test_the_large_layer_norm_row_by_build() -> None:
    """LayerNorm of a 8,192-wide bf16 row with gamma and beta (tt-metal #16721's shape):
    the large path on both rules, 60 tiles a row before PR #38006 and 56 after, with
    c_26 after."""
    x = tile((32, 8192), DRAM)
    attrs = {rule: NormAttrs(_gamma(8192, DRAM), _gamma(8192, DRAM), large_tensor=rule) for rule in NormLargeTensor}
    cbs = {rule: {cb.name: cb.total_bytes for cb in plan_op(OpKind.LAYER_NORM, OpRequest((x,), OutputRequest.of(DRAM),
                                                                                         MLIR), a).programs[0]
                  .circular_buffers} for rule, a in attrs.items()}
    assert cbs[NormLargeTensor.LAYER_NORM]["in0"] == 60 * 2048 and "accumulate" not in cbs[NormLargeTensor.LAYER_NORM]
    assert cbs[NormLargeTensor.WITH_RMS]["in0"] == 56 * 2048 and cbs[NormLargeTensor.WITH_RMS]["accumulate"] == 2048
