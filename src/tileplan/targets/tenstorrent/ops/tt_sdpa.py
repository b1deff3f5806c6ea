"""Scaled dot-product attention: prefill (ttnn.transformer.scaled_dot_product_attention,
ttnn/cpp/ttnn/operations/transformer/sdpa/device/sdpa_program_factory.cpp, read at the
mid/late-2025 version) and decode (..._decode, sdpa_decode/device/
sdpa_decode_program_factory.cpp `SdpaDecodeProgramFactory::create`, read at the 2026
version with the tree reduction).

Prefill, for q [B, NQH, Sq, DH], k [B, NKH, Sk, DH], v [B, NKH, Sk, vDH], chunks of
q_chunk x k_chunk rows (the program config's, 32 x 32 without one), Sq_t / Sk_t / DHt /
vDHt their tile counts: the grid (the config's or the device's) splits batch, then heads,
then q chunks (`q_parallel_factor`); a core with more than one q chunk double-buffers q.
CBs: q c_0 Sq_t x DHt x (1 or 2), k c_1 Sk_t x DHt x 2, v c_2 Sk_t x vDHt x 2, the mask
c_3 Sq_t x Sk_t x 2 (the mask's dtype, else bfloat4_b) when a mask is given, the
attention is causal or the last k chunk is padded, the scale and column identity c_5 /
c_7 one bf16 tile each, the attention sink c_4 Sq_t, QK c_24 Sq_t x Sk_t, out_im c_25 and
out_acc c_26 Sq_t x vDHt, five statistics c_27..c_31 Sq_t each (intermediates bf16 even
with fp32 accumulation: tt-metal #13364), out c_16 Sq_t x vDHt in the output's dtype.

Decode, for q [1, B, NH, DH] (NH padded to PNHt tiles) and k / v [B, NKV, S, DH]: every
CB on the whole grid; the k chunk is the largest power of two dividing the cache length (at
most 512; sdpa_decode.cpp `get_chunk_size`), 0 for paged attention: chunks sized at run
time, the CBs then sized for 8
tiles (4 with fp32 accumulation); causal bf16 q with at most 16 heads uses 16 x 32 half
tiles for q, mask, scalars, intermediates and statistics. CBs: q c_0 and tilized q c_10
PNHt x DHt, k c_1 / v c_2 chunk x DHt (vDHt) x 2, mask c_3 PNHt x chunk, sink c_4, scale
c_5, m_in / l_in c_6 / c_7, cur_pos c_8 (with a position tensor), page table c_9 (paged),
identity c_11 (a full tile) and c_12, sliding-window mask c_13, QK c_24, out_im c_25 /
c_26 / c_23, statistics c_27..c_31 / c_21 / c_22 / c_17 / c_18, c_16, the tree
reduction's c_19 ((out + 2 PNHt) x (cores per head - 1)) and the output c_20.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRange, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    CircularBuffer,
    ComputeConfig,
    MathFidelity,
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
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up

SOURCE_DIR = "ttnn/cpp/ttnn/operations/transformer/"
#: the SDPA ops' default compute config (`init_device_compute_kernel_config(..., HiFi2, true, false, false)`)
SDPA_DEFAULT_COMPUTE = ComputeConfig(MathFidelity.HIFI2, True, False, False)


@dataclass(frozen=True, slots=True)
class SDPAProgramConfig:
    """ttnn `SDPAProgramConfig`: the grid and the chunk sizes (rows)."""

    grid: tuple[int, int]
    q_chunk_size: int = 32
    k_chunk_size: int = 32
    max_cores_per_head_batch: int | None = None


@dataclass(frozen=True, slots=True)
class SdpaAttrs:
    """Prefill: an attention mask and a sink (their specs), causal; decode: the k chunk
    (0: the default: `get_chunk_size` of the cache length, or for paged attention sized at
    run time), a cur_pos tensor, a page table, a sliding window."""

    is_causal: bool = True
    mask: TensorSpec | None = None
    sink: TensorSpec | None = None
    program_config: SDPAProgramConfig | None = None
    k_chunk_size: int = 0
    cur_pos: TensorSpec | None = None
    page_table: TensorSpec | None = None
    sliding_window: int = 0


def decode_chunk_size(s: int) -> int:
    """sdpa_decode.cpp `get_chunk_size`: the largest power of two (from 2) dividing the
    cache length, at most 512."""
    i = 1
    while i < s and s % (1 << (i + 1)) == 0:
        i += 1
    return min(512, 1 << i)


def plan_sdpa(kind: OpKind, req: OpRequest, attrs: SdpaAttrs | None = None) -> OpPlan:
    """scaled_dot_product_attention (inputs q, k, v), sdpa_program_factory.cpp."""
    attrs = attrs or SdpaAttrs()
    op = kind.value
    q, k, v = req.inputs[:3]
    for t in (q, k, v):
        require(t.layout is Layout.TILE and len(t.shape) == 4, op, "q, k and v are 4-D TILE tensors")
    b, nqh, sq, dh = padded_shape4(q)
    vdh = padded_shape4(v)[3]
    cfg = attrs.program_config
    q_chunk, k_chunk = (cfg.q_chunk_size, cfg.k_chunk_size) if cfg else (32, 32)
    require(q_chunk % TILE == 0 and k_chunk % TILE == 0, op, "chunk sizes are whole tiles")
    gx, gy = cfg.grid if cfg else req.target.grid
    cores = gx * gy
    sq_t, sk_t, dht, vdht = q_chunk // TILE, k_chunk // TILE, dh // TILE, vdh // TILE
    q_chunks = ceil_div(sq, q_chunk)
    batch_pf = min(b, cores)
    nh_pf = min(cores // batch_pf, nqh)
    q_pf = min(cores // (batch_pf * nh_pf), q_chunks)
    q_buffer = 2 if ceil_div(q_chunks, max(q_pf, 1)) > 1 else 1
    im = bf = DataType.BFLOAT16  # intermediates stay Float16_b (fp32 CBs disabled, tt-metal #13364)
    out_dtype = req.out.dtype or q.dtype
    grid = CoreRange((0, 0), (gx - 1, gy - 1))
    logical_sk = k.shape[-2]
    cbs: list[CircularBuffer] = [cbuf(0, "q", sq_t * dht * q_buffer, q.dtype.tile_bytes, grid),
                                 cbuf(1, "k", sk_t * dht * 2, k.dtype.tile_bytes, grid),
                                 cbuf(2, "v", sk_t * vdht * 2, v.dtype.tile_bytes, grid)]
    if attrs.mask is not None or attrs.is_causal or logical_sk % k_chunk:
        mask_dtype = attrs.mask.dtype if attrs.mask is not None else DataType.BFLOAT4_B
        cbs.append(cbuf(3, "mask", sq_t * sk_t * 2, mask_dtype.tile_bytes, grid))
    cbs += [cbuf(5, "identity_scale", 1, bf.tile_bytes, grid), cbuf(7, "col_identity", 1, bf.tile_bytes, grid)]
    if attrs.sink is not None:
        cbs.append(cbuf(4, "attention_sink", sq_t, attrs.sink.dtype.tile_bytes, grid))
    cbs += [cbuf(24, "qk_im", sq_t * sk_t, im.tile_bytes, grid),
            cbuf(25, "out_im", sq_t * vdht, im.tile_bytes, grid),
            cbuf(26, "out_accumulate_im", sq_t * vdht, im.tile_bytes, grid)]
    cbs += [cbuf(27 + i, name, sq_t, im.tile_bytes, grid)
            for i, name in enumerate(("cur_max", "prev_max", "cur_sum", "prev_sum", "exp_max_diff"))]
    cbs.append(cbuf(16, "out", sq_t * vdht, out_dtype.tile_bytes, grid))
    out = TensorSpec(q.shape[:-1] + (v.shape[-1],), out_dtype, Layout.TILE, req.out.memory())
    program = Program("SDPAProgramFactory", SOURCE_DIR + "sdpa/device/sdpa_program_factory.cpp", grid, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def plan_sdpa_decode(kind: OpKind, req: OpRequest, attrs: SdpaAttrs | None = None) -> OpPlan:
    """scaled_dot_product_attention_decode (inputs q, k, v), sdpa_decode_program_factory.cpp."""
    attrs = attrs or SdpaAttrs(is_causal=True)
    op = kind.value
    q, k, v = req.inputs[:3]
    for t in (k, v):
        require(t.layout is Layout.TILE and len(t.shape) == 4, op, "k and v are 4-D TILE tensors")
    require(len(q.shape) == 4, op, "q is [1, B, heads, head_dim]")
    q_dims = padded_shape4(q)
    b = q_dims[1]
    pnh = ceil_div(q_dims[2], TILE) * TILE
    num_q_heads = q.shape[2]
    _, nkv, _, dh = padded_shape4(k)
    vdh = padded_shape4(v)[3]
    cfg = attrs.program_config
    gx, gy = cfg.grid if cfg else req.target.grid
    available = gx * gy
    require(available >= b, op, f"{available} cores for a batch of {b}")
    per_head_max = cfg.max_cores_per_head_batch if cfg and cfg.max_cores_per_head_batch else available
    per_batch = min(available, per_head_max * b * nkv) // b
    per_head = max(1, per_batch // nkv)
    compute = req.compute or SDPA_DEFAULT_COMPUTE
    dst = 4 if compute.fp32_dest_acc_en else 8
    k_chunk = attrs.k_chunk_size
    if not k_chunk and attrs.page_table is None:
        k_chunk = decode_chunk_size(k.shape[-2])
    sk_t = k_chunk // TILE
    chunk = sk_t if sk_t else dst
    dht, vdht, pnht = dh // TILE, vdh // TILE, pnh // TILE
    half = attrs.is_causal and num_q_heads <= 16 and q.dtype is DataType.BFLOAT16

    def size(dtype: DataType, halved: bool = True) -> int:
        return dtype.tile_bytes // 2 if half and halved else dtype.tile_bytes

    bf = DataType.BFLOAT16
    mask_dtype = attrs.mask.dtype if attrs.mask is not None else bf
    out_dtype = req.out.dtype or q.dtype
    q_tiles, qk_tiles, out_tiles = pnht * dht, pnht * chunk, pnht * vdht
    grid = CoreRange((0, 0), (gx - 1, gy - 1))
    q_tile = size(q.dtype)
    cbs: list[CircularBuffer] = [cbuf(0, "q", q_tiles, q_tile, grid),
                                 cbuf(1, "k", chunk * dht * 2, k.dtype.tile_bytes, grid),
                                 cbuf(2, "v", chunk * vdht * 2, v.dtype.tile_bytes, grid),
                                 cbuf(3, "mask", qk_tiles, size(mask_dtype), grid)]
    if attrs.sink is not None:
        cbs.append(cbuf(4, "attention_sink", pnht, size(bf), grid))
    cbs += [cbuf(5, "scale", 1, size(bf), grid), cbuf(6, "m_in", pnht, size(bf), grid),
            cbuf(7, "l_in", pnht, size(bf), grid)]
    if attrs.cur_pos is not None:
        stick = round_up(attrs.cur_pos.pages().page_bytes, req.target.alignment(attrs.cur_pos.memory.buffer_type))
        cbs.append(cbuf(8, "cur_pos", 1, stick, grid, globally_allocated=attrs.cur_pos.memory.layout.sharded))
    if attrs.page_table is not None:
        stick = round_up(attrs.page_table.pages().page_bytes,
                         req.target.alignment(attrs.page_table.memory.buffer_type))
        table_sharded = attrs.page_table.memory.layout.sharded
        cbs.append(cbuf(9, "page_table", b if table_sharded else 1, stick, grid, globally_allocated=table_sharded))
    cbs += [cbuf(10, "q_tilized", q_tiles, q_tile, grid), cbuf(11, "col_identity", 1, bf.tile_bytes, grid),
            cbuf(12, "scalar", 1, size(bf), grid)]
    if attrs.sliding_window > 0:
        cbs.append(cbuf(13, "sliding_window_mask", qk_tiles, size(mask_dtype), grid))
    im = bf
    cbs += [cbuf(24, "qk_im", qk_tiles, size(im), grid), cbuf(25, "out_im", out_tiles, size(im), grid),
            cbuf(26, "out_im_2", out_tiles, size(im), grid)]
    cbs += [cbuf(i, f"statistics_{i}", pnht, size(bf), grid) for i in (27, 28, 29, 30, 31, 21, 22)]
    cbs += [cbuf(23, "out_im_3", out_tiles, size(im), grid), cbuf(16, "out_o", out_tiles, size(bf), grid),
            cbuf(17, "out_m", pnht, size(bf), grid), cbuf(18, "out_l", pnht, size(bf), grid)]
    if per_head > 1:
        cbs.append(cbuf(19, "intermediate_output", (out_tiles + 2 * pnht) * (per_head - 1), size(bf), grid))
    out = TensorSpec(q.shape[:-1] + (v.shape[-1],), out_dtype, Layout.TILE, req.out.memory())
    cbs.append(cbuf(20, "out_final", out_tiles, out_dtype.tile_bytes, grid, globally_allocated=req.out.sharded))
    program = Program("SdpaDecodeProgramFactory", SOURCE_DIR + "sdpa_decode/device/sdpa_decode_program_factory.cpp",
                      grid, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
