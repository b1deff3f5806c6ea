"""rotary_embedding_llama: the rotary embedding tt-transformers applies to Q and K
(`ttnn.experimental.rotary_embedding_llama(x, cos, sin, trans_mat, is_decode_mode)`),
tt-metal ttnn/cpp/ttnn/operations/experimental/transformer/rotary_embedding_llama/device/.

Prefill (interleaved x [B, heads, S, D], cos / sin [1, 1, S, D] interleaved:
rotary_embedding_llama_multi_core_program_factory.cpp `RotaryEmbeddingLlamaMultiCore::create`,
read at 0016fcf7): on the whole compute grid, Wt = D / 32; the batch is split over
min(B, cores) cores and the tile rows of S over min(cores / that, St) more, a core taking
rows = ceil(St / seq_parallel) rows of every head. When rows x heads > 8 (or the cos /
sin vary per head) the factory reloads cos and sin for every row and sizes the input,
cos and sin CBs to 2 Wt tiles each; else the input to rows x 2 Wt and cos / sin to 2 Wt x
rows. Then trans_mat c_3 one tile, the rotated input, cos and sin intermediates c_24 /
c_25 / c_26 Wt tiles each and the output c_16 2 Wt tiles.
Worked example: Llama-3.1-8B Q of a 4,096-token prefill ([1, 32, 4096, 128] bf16) on
8 x 8: 128 tile rows over 64 cores = 2 rows, 64 row-heads > 8 -> reload: 8 + 8 + 8 + 1
+ 4 + 4 + 4 + 8 = 45 tiles = 92,160 B.

Decode (x height-sharded [1, B, 32, D] one user per core: rotary_embedding_llama_sharded_
program_factory.cpp `RotaryEmbeddingLlamaMultiCoreSharded`): x, cos, sin, trans_mat and
the output are bound to their shards; only the three intermediates c_24 / c_25 / c_26
(Wt tiles each) take space, on the shard grid's bounding box.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRange, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    CircularBuffer,
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    ceil_div,
    output_buffers,
    padded_shape4,
    require,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, Layout

SOURCE_DIR = "ttnn/cpp/ttnn/operations/experimental/transformer/rotary_embedding_llama/device/"
#: the row-heads a core holds before the factory reloads cos / sin (`num_rows_per_core > 8`)
RELOAD_ROWS = 8


@dataclass(frozen=True, slots=True)
class RotaryAttrs:
    """`is_decode_mode`: the sharded decode factory (one user per core)."""

    decode: bool = False


def prefill_program(x: TensorSpec, cos: TensorSpec, trans: TensorSpec, out_dtype_bytes: int,
                    grid: tuple[int, int]) -> Program:
    """RotaryEmbeddingLlamaMultiCore::create (see the module docstring)."""
    b, heads, s, d = padded_shape4(x)
    st, wt = s // TILE, d // TILE
    cores = grid[0] * grid[1]
    batch_pf = min(b, cores)
    seq_pf = min(cores // batch_pf, st)
    rows = ceil_div(st, seq_pf)
    freq_per_head = padded_shape4(cos)[1] == heads  # the factory's test: one head also counts
    reload = rows * heads > RELOAD_ROWS or freq_per_head
    in_tiles = 2 * wt if reload else rows * 2 * wt
    cos_tiles = 2 * wt if reload else 2 * wt * rows
    all_cores = CoreRange.grid(*grid)
    cbs: list[CircularBuffer] = [
        cbuf(0, "input", in_tiles, x.dtype.tile_bytes, all_cores),
        cbuf(1, "cos", cos_tiles, cos.dtype.tile_bytes, all_cores),
        cbuf(2, "sin", cos_tiles, cos.dtype.tile_bytes, all_cores),
        cbuf(3, "trans_mat", 1, trans.dtype.tile_bytes, all_cores),
        cbuf(24, "rotated_input_interm", wt, x.dtype.tile_bytes, all_cores),
        cbuf(25, "cos_interm", wt, cos.dtype.tile_bytes, all_cores),
        cbuf(26, "sin_interm", wt, cos.dtype.tile_bytes, all_cores),
        cbuf(16, "output", 2 * wt, out_dtype_bytes, all_cores)]
    return Program("RotaryEmbeddingLlamaMultiCore",
                   SOURCE_DIR + "rotary_embedding_llama_multi_core_program_factory.cpp",
                   all_cores, tuple(cbs))


def decode_program(x: TensorSpec, cos: TensorSpec) -> Program:
    """RotaryEmbeddingLlamaMultiCoreSharded: the three intermediates of Wt tiles."""
    shard = x.memory.shard
    assert shard is not None
    wt = shard.shape[1] // TILE
    box = shard.bounding_box()
    cbs = (cbuf(24, "rotated_input_interm", wt, x.dtype.tile_bytes, box),
           cbuf(25, "cos_interm", wt, cos.dtype.tile_bytes, box),
           cbuf(26, "sin_interm", wt, cos.dtype.tile_bytes, box))
    return Program("RotaryEmbeddingLlamaMultiCoreSharded",
                   SOURCE_DIR + "rotary_embedding_llama_sharded_program_factory.cpp", box, cbs)


def plan_rotary(kind: OpKind, req: OpRequest, attrs: RotaryAttrs | None = None) -> OpPlan:
    """rotary_embedding_llama (inputs x, cos, sin, trans_mat): the output has x's shape,
    dtype and memory (decode: x's shard spec)."""
    attrs = attrs or RotaryAttrs()
    op = kind.value
    x, cos, sin, trans = req.inputs
    for t in (x, cos, sin, trans):
        require(t.layout is Layout.TILE, op, "inputs are TILE tensors")
    require(len(x.shape) == 4 and x.shape[-1] % TILE == 0, op,
            "x is [B, heads, S, head_dim], head_dim a multiple of 32")
    require(cos.shape == sin.shape, op, f"cos {list(cos.shape)} and sin {list(sin.shape)} differ")
    out_dtype = req.out.dtype or x.dtype
    if attrs.decode:
        require(x.memory.layout.sharded and cos.memory.layout.sharded, op,
                "decode mode takes height-sharded x, cos and sin (one user per core)")
        out = TensorSpec(x.shape, out_dtype, Layout.TILE, x.memory)
        program = decode_program(x, cos)
    else:
        require(not x.memory.layout.sharded, op, "a sharded prefill input is not modelled")
        require(cos.shape[-2] >= x.shape[-2], op, f"cos / sin hold {cos.shape[-2]} positions for {x.shape[-2]} rows")
        out = TensorSpec(x.shape, out_dtype, Layout.TILE, req.out.memory())
        program = prefill_program(x, cos, trans, out_dtype.tile_bytes, req.target.grid)
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
