"""Scaled dot-product attention rules (tileplan.targets.tenstorrent.ops.tt_sdpa) against
tt-mlir's OpModel rows (TestOpModelLib.cpp @78b9ce3, the fixture's 8x8 grid). The test
asserts `cbSize <= expected`; for decode the expected values are reached exactly (every
row below hits its bound to the byte), for prefill only the bound holds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tt_ops_support import DRAM, MLIR, footprint, tile

from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_sdpa import SDPAProgramConfig, SdpaAttrs, decode_chunk_size

Q_DECODE = tile((1, 1, 12, 32), DRAM)
KV_DECODE = tile((1, 12, 128, 32), DRAM)
CUR_POS = tile((1,), DRAM)
MASK_DECODE = tile((1, 1, 12, 128), DRAM)
SINK = tile((12, 32), DRAM)


@pytest.mark.parametrize(("causal", "mask", "sink", "expected"), [
    (True, None, None, 78_848), (False, MASK_DECODE, None, 118_784), (True, None, SINK, 79_872),
    (False, MASK_DECODE, SINK, 120_832),
], ids=["H2 SDPADecode causal", "H2 SDPADecode mask", "H2 SDPADecode causal+sink", "H2 SDPADecode mask+sink"])
def test_h2_sdpa_decode(causal: bool, mask: TensorSpec | None, sink: TensorSpec | None, expected: int) -> None:
    """H2 scaledDotProductAttentionDecodeOpTestValues (each with and without a scale,
    which changes no CB): 12 heads, head_dim 32, cache 128: k chunk get_chunk_size(128) =
    128 (4 tiles); 64 cores over 12 KV heads give 5 cores a head, so the tree reduction's
    c_19 holds (1 + 2) x 4 tiles; causal bf16 q with <= 16 heads uses 1,024-B half tiles;
    the cur_pos tensor is a bf16 TILE tensor (a 2,048-B page)."""
    plan = plan_op(OpKind.SDPA_DECODE, OpRequest((Q_DECODE, KV_DECODE, KV_DECODE), OutputRequest.of(DRAM), MLIR),
                   SdpaAttrs(is_causal=causal, mask=mask, sink=sink, cur_pos=CUR_POS))
    assert footprint(plan) == (expected, 0)


@pytest.mark.parametrize(("q", "causal", "mask"), [
    (tile((1, 1, 128, 64), DRAM), True, None), (tile((1, 1, 32, 64), DRAM), False, tile((1, 1, 32, 128), DRAM)),
], ids=["H2 SDPA causal (<= 120,832 only)", "H2 SDPA mask (<= 120,832 only)"])
def test_h2_sdpa_prefill_within_the_bound(q: TensorSpec, causal: bool, mask: TensorSpec | None) -> None:
    """H2 scaledDotProductAttentionOpTestValues assert only cb <= 120,832 (the decode
    suite's last value). The port gives 32 x 32 chunks: q 2 + k 4 + v 4 + stats and the
    rest 14 tiles, and the mask (2 bfloat4_b tiles for causal, 2 bf16 tiles given)."""
    kv = tile((1, 1, 128, 64), DRAM)
    plan = plan_op(OpKind.SDPA, OpRequest((q, kv, kv), OutputRequest.of(DRAM), MLIR),
                   SdpaAttrs(is_causal=causal, mask=mask))
    cb, out = footprint(plan)
    assert cb <= 120_832 and out == 0
    assert cb == (50_304 if causal else 53_248)


def test_sdpa_prefill_double_buffers_q_when_a_core_takes_two_chunks() -> None:
    """sdpa_program_factory: q_per_core > 1 doubles c_0 (here 8 q chunks on a 2x2 grid)."""
    q = tile((1, 1, 256, 64), DRAM)
    plan = plan_op(OpKind.SDPA, OpRequest((q, q, q), OutputRequest.of(DRAM), MLIR),
                   SdpaAttrs(program_config=SDPAProgramConfig((2, 2))))
    cbs = {cb.name: cb.pages for cb in plan.programs[0].circular_buffers}
    assert cbs["q"] == 1 * 2 * 2


@given(st.integers(min_value=1, max_value=1 << 16))
def test_decode_chunk_size_is_a_dividing_power_of_two(s: int) -> None:
    chunk = decode_chunk_size(s)
    assert chunk & (chunk - 1) == 0 and 2 <= chunk <= 512
    if s % 2 == 0 and chunk < 512:
        assert s % chunk == 0 and s % (chunk * 2) != 0
