"""Unary, binary and reduction rules (tileplan.targets.tenstorrent.ops.tt_eltwise)
against the ground truth of TENSTORRENT-NOTES.md (h): every row asserts the
circular-buffer peak and the output's bytes per core exactly as the source does."""

from __future__ import annotations

import pytest
from tt_ops_support import DRAM, E150, L1, MLIR, N300, P150, footprint, height_sharded, sharded, tile

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import CoreRange, MemoryConfig, MemoryLayout, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OpTarget, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_reduce import ReduceAttrs
from tileplan.targets.tenstorrent.tiles import DataType

#: H1's tensors (test_graph_query_op_constraints.cpp @027519b)
HS16 = tile((3, 1, 1024, 1024), sharded(MemoryLayout.HEIGHT_SHARDED, CoreRange((0, 0), (3, 3)), (192, 1024)))
I4X2 = tile((4, 2, 160, 224))
B1X1 = tile((1, 1, 160, 224))
#: H2's tensors (TestOpModelLib.cpp @78b9ce3: interleavedN300X1024{Dram,L1})
I64_DRAM = tile((64, 1024), DRAM)
I64_L1 = tile((64, 1024), L1)
HS64 = height_sharded(64, 8, 8, (448, 32))
HS8 = sharded(MemoryLayout.HEIGHT_SHARDED, CoreRange((0, 0), (0, 7)), (4096, 32))


def _plan(kind: OpKind, inputs: tuple[TensorSpec, ...], out: MemoryConfig, target: OpTarget,
          attrs: object = None) -> tuple[int, int]:
    return footprint(plan_op(kind, OpRequest(inputs, OutputRequest.of(out), target), attrs))


@pytest.mark.parametrize(("source", "x", "target", "expected"), [
    ("H1 #1 relu HS16 N300", HS16, N300, (0, 393_216)),
    ("H1 #1 relu HS16 E150", HS16, E150, (0, 393_216)),
    ("H1 #2 relu I4x2 N300", I4X2, N300, (8_192, 10_240)),
    ("H1 #2 relu I4x2 E150", I4X2, E150, (8_192, 6_144)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_h1_relu(source: str, x: TensorSpec, target: OpTarget, expected: tuple[int, int]) -> None:
    """H1: relu, output spec = input spec."""
    assert _plan(OpKind.RELU, (x,), x.memory, target) == expected


UNARY_H2 = [OpKind.RELU, OpKind.RELU6, OpKind.SILU, OpKind.SQRT, OpKind.SIGMOID, OpKind.HARDSIGMOID, OpKind.SIN,
            OpKind.COS, OpKind.EXP, OpKind.TANH, OpKind.LOG, OpKind.ABS, OpKind.CEIL, OpKind.SIGN, OpKind.ERF,
            OpKind.ERFC, OpKind.FLOOR, OpKind.RECIPROCAL, OpKind.GELU, OpKind.ISFINITE, OpKind.LOGICAL_NOT,
            OpKind.NEG, OpKind.TAN, OpKind.ATAN, OpKind.RSQRT, OpKind.LOG1P, OpKind.EXPM1]


@pytest.mark.parametrize("kind", UNARY_H2, ids=lambda k: k.name)
@pytest.mark.parametrize(("x", "out", "expected"), [
    (I64_DRAM, DRAM, (8_192, 0)), (I64_DRAM, L1, (8_192, 2_048)), (I64_L1, DRAM, (8_192, 0)),
    (I64_L1, L1, (8_192, 2_048)), (tile((28672, 32), HS64), HS64, (0, 28_672)),
], ids=["H2 unaryEltwiseParams I64 DRAM->DRAM", "H2 I64 DRAM->L1", "H2 I64 L1->DRAM", "H2 I64 L1->L1",
        "H2 HS 64 cores->HS"])
def test_h2_unary(kind: OpKind, x: TensorSpec, out: MemoryConfig, expected: tuple[int, int]) -> None:
    """H2 unaryEltwiseParams / tanhParams, every unary op tt-mlir asserts exactly."""
    assert _plan(kind, (x,), out, MLIR) == expected


@pytest.mark.parametrize(("x", "out"), [(tile((28672, 32), L1), HS64), (tile((28672, 32), HS64), L1)],
                         ids=["H2 interleaved->HS illegal", "H2 HS->interleaved illegal"])
def test_h2_unary_refuses_mixed_sharding(x: TensorSpec, out: MemoryConfig) -> None:
    """H2 unaryEltwiseParams: ExpectedResult{false} for interleaved <-> sharded."""
    with pytest.raises(InputError, match="interleaved to interleaved or sharded to sharded"):
        _plan(OpKind.RELU, (x,), out, MLIR)


@pytest.mark.parametrize(("source", "a", "b", "target", "expected"), [
    ("H1 #5 add HS16+HS16 N300", HS16, HS16, N300, (0, 393_216)),
    ("H1 #5 add HS16+HS16 E150", HS16, HS16, E150, (0, 393_216)),
    ("H1 #6 add I4x2+I4x2 N300", I4X2, I4X2, N300, (12_288, 10_240)),
    ("H1 #6 add I4x2+I4x2 E150", I4X2, I4X2, E150, (12_288, 6_144)),
    ("H1 #7/#8 add bcast I4x2+1x1x160x224 N300", I4X2, B1X1, N300, (12_288, 10_240)),
    ("H1 #7/#8 add bcast I4x2+1x1x160x224 E150", I4X2, B1X1, E150, (12_288, 6_144)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_h1_add(source: str, a: TensorSpec, b: TensorSpec, target: OpTarget, expected: tuple[int, int]) -> None:
    """H1: add, output in a's memory config."""
    assert _plan(OpKind.ADD, (a, b), a.memory, target) == expected


BINARY_H2 = [OpKind.ADD, OpKind.MULTIPLY, OpKind.SUBTRACT, OpKind.MAXIMUM, OpKind.MINIMUM, OpKind.DIVIDE, OpKind.EQ,
             OpKind.NE, OpKind.GE, OpKind.GT, OpKind.LE, OpKind.LT, OpKind.POW]
BINARY_ROWS = [(I64_DRAM, I64_DRAM, DRAM, (12_288, 0)), (I64_DRAM, I64_L1, DRAM, (12_288, 0)),
               (I64_L1, I64_DRAM, DRAM, (12_288, 0)), (I64_L1, I64_L1, DRAM, (12_288, 0)),
               (I64_L1, I64_L1, L1, (12_288, 2_048)), (I64_DRAM, I64_L1, L1, (12_288, 2_048)),
               (I64_L1, I64_DRAM, L1, (12_288, 2_048)), (I64_DRAM, I64_DRAM, L1, (12_288, 2_048))]
BINARY_IDS = ["DRAM,DRAM->DRAM", "DRAM,L1->DRAM", "L1,DRAM->DRAM", "L1,L1->DRAM", "L1,L1->L1", "DRAM,L1->L1",
              "L1,DRAM->L1", "DRAM,DRAM->L1"]


@pytest.mark.parametrize("kind", BINARY_H2, ids=lambda k: k.name)
@pytest.mark.parametrize(("a", "b", "out", "expected"), BINARY_ROWS, ids=[f"H2 binaryEltwiseParams {i}"
                                                                          for i in BINARY_IDS])
def test_h2_binary(kind: OpKind, a: TensorSpec, b: TensorSpec, out: MemoryConfig, expected: tuple[int, int]) -> None:
    """H2 binaryEltwiseParams (and ...ForRemainderAndPow for pow): 12,288 B of CBs."""
    assert _plan(kind, (a, b), out, MLIR) == expected


@pytest.mark.parametrize("kind", [OpKind.LOGICAL_AND, OpKind.LOGICAL_OR, OpKind.LOGICAL_XOR], ids=lambda k: k.name)
@pytest.mark.parametrize(("a", "b", "out", "expected"), BINARY_ROWS, ids=[f"H2 binaryEltwiseParams {i}"
                                                                          for i in BINARY_IDS])
def test_h2_logical_binary_preactivates_both(kind: OpKind, a: TensorSpec, b: TensorSpec, out: MemoryConfig,
                                             expected: tuple[int, int]) -> None:
    """H2 LogicalAnd/Or/Xor: generateBinaryEltwiseParams(extraCbRequirement=4096), the
    two one-tile pre-activation CBs c_3 and c_4."""
    assert _plan(kind, (a, b), out, MLIR) == (expected[0] + 4_096, expected[1])


@pytest.mark.parametrize("kind", [OpKind.BITWISE_AND, OpKind.BITWISE_OR, OpKind.BITWISE_XOR], ids=lambda k: k.name)
@pytest.mark.parametrize(("a", "b", "out", "expected"), BINARY_ROWS, ids=[f"H2 binaryEltwiseParams {i}"
                                                                          for i in BINARY_IDS])
def test_h2_bitwise_binary_on_int32(kind: OpKind, a: TensorSpec, b: TensorSpec, out: MemoryConfig,
                                    expected: tuple[int, int]) -> None:
    """H2 BitwiseAnd/Or/Xor run on int32 (RunTestInt32): generateBinaryBitwiseParams
    doubles CBs and output (4,096-B tiles)."""
    a32 = TensorSpec(a.shape, DataType.INT32, a.layout, a.memory)
    b32 = TensorSpec(b.shape, DataType.INT32, b.layout, b.memory)
    assert _plan(kind, (a32, b32), out, MLIR) == (expected[0] * 2, expected[1] * 2)


@pytest.mark.parametrize(("a", "b", "out", "expected"), [
    (tile((32768, 32), HS8), tile((32768, 32), DRAM), HS8, (12_288, 262_144)),
    (tile((32768, 32), HS8), tile((32768, 32), DRAM), DRAM, (12_288, 0)),
    (tile((32768, 32), DRAM), tile((32768, 32), DRAM), HS8, (12_288, 262_144)),
], ids=["H2 HS8+DRAM->HS8", "H2 HS8+DRAM->DRAM", "H2 DRAM+DRAM->HS8"])
def test_h2_binary_height_sharded(a: TensorSpec, b: TensorSpec, out: MemoryConfig, expected: tuple[int, int]) -> None:
    """H2 binaryEltwiseParams, {16*64*32, 32} on virtual grid {8, 1}: b in DRAM, so not
    native L1 sharding; 2-tile CBs, the output's 4,096x32 shard per core."""
    assert _plan(OpKind.ADD, (a, b), out, MLIR) == expected


def test_h2_binary_refuses_incompatible_shapes() -> None:
    """H2 binaryEltwiseParams row 2: {64,1024} with {2048,2048} is illegal."""
    with pytest.raises(InputError, match="broadcast"):
        _plan(OpKind.ADD, (I64_DRAM, tile((2048, 2048), DRAM)), DRAM, MLIR)


def test_h3_add_height_sharded_binds_every_cb() -> None:
    """H3: add of two 2 MiB tensors height-sharded over 64 cores: 32,768 B per core per
    tensor, cb_peak 0 (binary_ng's native L1 sharding binds a, b and c)."""
    hs = height_sharded(64, 11, 10, (512, 32))
    x = tile((32768, 32), hs)
    assert _plan(OpKind.ADD, (x, x), hs, P150) == (0, 32_768)


@pytest.mark.parametrize(("x", "dims", "keepdim", "expected"), [
    (I64_DRAM, (1,), True, (12_288, 0)), (I64_DRAM, (1, 0), False, (12_288, 0)), (I64_L1, (1,), False, (12_288, 0)),
], ids=["H2 reductionParams dim [1] keepdim", "H2 dims [1,0]", "H2 L1 dim [1]"])
@pytest.mark.parametrize("kind", [OpKind.SUM, OpKind.MEAN, OpKind.MAX, OpKind.MIN], ids=lambda k: k.name)
def test_h2_reductions(kind: OpKind, x: TensorSpec, dims: tuple[int, ...], keepdim: bool,
                       expected: tuple[int, int]) -> None:
    """H2 reductionParams: the W reduction's 2 + 2 (scaler) + 2 tiles; [1, 0] runs W
    then H, whose 2 + 1 + 2 tiles stay below."""
    assert _plan(kind, (x,), DRAM, MLIR, ReduceAttrs(dims, keepdim)) == expected


def test_h2_reduction_refuses_a_dimension_out_of_range() -> None:
    """H2 reductionParams row 2: dims [1, 2] of a rank-2 tensor is illegal."""
    with pytest.raises(InputError, match="out of range"):
        _plan(OpKind.SUM, (I64_DRAM,), DRAM, MLIR, ReduceAttrs((1, 2), False))


def test_unary_with_a_temporary_cb() -> None:
    """unary_program_factory.cpp: HARDSHRINK, CBRT and LOGIT add the 2-tile c_1."""
    assert _plan(OpKind.CBRT, (I64_DRAM,), DRAM, MLIR) == (12_288, 0)



def test_h2_typecast() -> None:
    """H2 Typecast: {32768, 32} bf16 DRAM -> float32 DRAM: c_0 two bf16 tiles, c_2 two
    float32 tiles (12,288 B); to a height-sharded L1 output it is illegal."""
    x = tile((32768, 32), DRAM)
    plan = plan_op(OpKind.TYPECAST, OpRequest((x,), OutputRequest.of(DRAM, DataType.FLOAT32), MLIR))
    assert footprint(plan) == (12_288, 0)
    with pytest.raises(InputError):
        plan_op(OpKind.TYPECAST, OpRequest((x,), OutputRequest.of(height_sharded(64, 8, 8, (512, 32)),
                                                                  DataType.FLOAT32), MLIR))
