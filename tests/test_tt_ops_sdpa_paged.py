"""chunked_scaled_dot_product_attention (ops/tt_sdpa_paged.py): the prefill factory's
circular buffers plus the page table's row in c_6 (sdpa_program_factory.cpp,
`is_chunked`)."""

from __future__ import annotations

from tt_ops_support import DRAM, MLIR, row_major, tile

from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_sdpa import SDPAProgramConfig, SdpaAttrs
from tileplan.targets.tenstorrent.ops.tt_sdpa_paged import ChunkedSdpaAttrs
from tileplan.targets.tenstorrent.tiles import DataType


def test_chunked_sdpa_adds_the_page_table_row() -> None:
    q = tile((1, 32, 1024, 128), DRAM)
    cache = tile((2048, 8, 32, 128), DRAM, DataType.BFLOAT8_B)
    table = row_major((1, 2048), DRAM, DataType.INT32)
    sdpa = SdpaAttrs(program_config=SDPAProgramConfig((8, 8), 256, 256))
    req = OpRequest((q, cache, cache), OutputRequest.of(DRAM), MLIR)
    plain = plan_op(OpKind.SDPA, req, sdpa)
    chunked = plan_op(OpKind.SDPA_CHUNKED, req, ChunkedSdpaAttrs(sdpa, table))
    assert chunked.cb_peak == plain.cb_peak + 8192
    assert chunked.outputs == plain.outputs
