"""nlp_concat_heads, split_query_key_value_and_split_heads and embedding rules
(tileplan.targets.tenstorrent.ops.tt_transformer, tt_embedding) against the ground
truth of TENSTORRENT-NOTES.md (h)."""

from __future__ import annotations

import pytest
from tt_ops_support import DRAM, L1, MLIR, footprint, tile

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import MemoryConfig, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_embedding import EmbeddingAttrs
from tileplan.targets.tenstorrent.ops.tt_transformer import SplitQkvAttrs


@pytest.mark.parametrize(("x", "out", "expected"), [
    (tile((1, 8, 512, 64), L1), L1, (65_536, 8_192)),
    (tile((2, 12, 1024, 64), DRAM), DRAM, (98_304, 0)),
    (tile((1, 16, 256, 32), DRAM), L1, (65_536, 4_096)),
    (tile((4, 24, 2048, 128), DRAM), DRAM, (393_216, 0)),
], ids=["H2 concatenateHeadsParams [1,8,512,64] L1->L1", "H2 [2,12,1024,64] DRAM->DRAM",
        "H2 [1,16,256,32] DRAM->L1", "H2 [4,24,2048,128] DRAM->DRAM"])
def test_h2_concat_heads(x: TensorSpec, out: MemoryConfig, expected: tuple[int, int]) -> None:
    """H2 ConcatenateHeads: c_0 holds one output tile row (heads x D / 32 tiles), twice."""
    assert footprint(plan_op(OpKind.NLP_CONCAT_HEADS, OpRequest((x,), OutputRequest.of(out), MLIR))) == expected


@pytest.mark.parametrize(("x", "out", "heads", "transpose", "expected"), [
    (tile((8, 16, 3072), L1), L1, 32, False, (8_192, 8_192)),
    (tile((2, 1024, 2304), DRAM), DRAM, 12, False, (8_192, 0)),
    (tile((1, 256, 1536), DRAM), L1, 16, False, (8_192, 4_096)),
    (tile((4, 2048, 9216), DRAM), DRAM, 24, False, (8_192, 0)),
    (tile((1, 512, 1536), L1), L1, 16, True, (24_576, 8_192)),
], ids=["H2 splitQueryKeyValueAndSplitHeadsParams [8,16,3072] L1", "H2 [2,1024,2304] DRAM",
        "H2 [1,256,1536] DRAM->L1", "H2 [4,2048,9216] DRAM", "H2 [1,512,1536] transpose_key"])
def test_h2_split_qkv(x: TensorSpec, out: MemoryConfig, heads: int, transpose: bool,
                      expected: tuple[int, int]) -> None:
    """H2 SplitQueryKeyValueAndSplitHeads: nlp_create_qkv_heads' 4-tile c_1, the K
    transpose's c_0 and c_16 of 4 tiles; the asserted output size is Q's."""
    plan = plan_op(OpKind.SPLIT_QKV, OpRequest((x,), OutputRequest.of(out), MLIR),
                   SplitQkvAttrs(heads, None, transpose))
    assert footprint(plan) == expected
    assert len(plan.outputs) == 3


@pytest.mark.parametrize(("idx", "weights", "output", "expected"), [
    (tile((1, 1024), DRAM), tile((256, 128), DRAM), tile((256, 128), L1), (16_384, 2_048)),
    (tile((2, 512), L1), tile((512, 256), DRAM), tile((512, 256), L1), (32_768, 4_096)),
], ids=["H2 EmbeddingTests idx [1,1024] DRAM, w [256,128]", "H2 idx [2,512] L1, w [512,256]"])
def test_h2_embedding(idx: TensorSpec, weights: TensorSpec, output: TensorSpec, expected: tuple[int, int]) -> None:
    """H2 EmbeddingTests: TILE weights are untilized first (Wt + Wt tiles), TILE
    indices take the tilized-indices factory, the row-major gather is tilized after.
    tt-mlir's OpModel hands ttnn a preallocated output built from the weight shape
    (convertToTensorSpec(device, weightShape, outputLayout)), so the asserted output is
    that tensor's: [256, 128] bf16 over 64 banks = 1 tile, [512, 256] = 2 tiles."""
    plan = plan_op(OpKind.EMBEDDING, OpRequest((idx, weights), OutputRequest.of(L1), MLIR),
                   EmbeddingAttrs(output=output))
    assert footprint(plan) == expected


def test_embedding_output_without_a_preallocated_tensor_is_b_1_s_d() -> None:
    plan = plan_op(OpKind.EMBEDDING, OpRequest((tile((1, 1024), DRAM), tile((256, 128), DRAM)),
                                               OutputRequest.of(L1), MLIR))
    assert plan.outputs[0].shape == (1, 1, 1024, 128)
    assert plan.output_bytes_per_core(0) == 2 * 2048


def test_concat_heads_takes_a_4d_tensor() -> None:
    with pytest.raises(InputError, match="4-D"):
        plan_op(OpKind.NLP_CONCAT_HEADS, OpRequest((tile((8, 512, 64)),), OutputRequest.of(L1), MLIR))
