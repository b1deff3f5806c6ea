"""conv3d as ttnn runs it (`ttnn.experimental.conv3d`): one program over the grid, from
tenstorrent/tt-metal ttnn/cpp/ttnn/operations/experimental/conv3d/device/
conv3d_program_factory.cpp (see `plan_conv3d`)."""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import CoreRange, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    ceil_div,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv import CONV_DEFAULT_COMPUTE
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up


@dataclass(frozen=True, slots=True)
class Conv3dConfig:
    """ttnn `Conv3dConfig`: the output block a core computes and the channel blocks
    (0: all channels), the grid (None: the device's)."""

    t_out_block: int = 1
    h_out_block: int = 1
    w_out_block: int = 1
    c_out_block: int = 0
    c_in_block: int = 0
    grid: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Conv3dAttrs:
    """ttnn.experimental.conv3d arguments (input [N, T, H, W, C] row-major)."""

    out_channels: int
    kernel: tuple[int, int, int]
    stride: tuple[int, int, int] = (1, 1, 1)
    padding: tuple[int, int, int] = (0, 0, 0)
    dilation: tuple[int, int, int] = (1, 1, 1)
    bias: bool = False
    config: Conv3dConfig = Conv3dConfig()


CONV3D_SOURCE = "ttnn/cpp/ttnn/operations/experimental/conv3d/device/conv3d_program_factory.cpp"
#: conv3d_program_factory.cpp: the kernel-code reserve and the cap of the L1 prefetch shard
L1_KERNEL_CODE_RESERVE, L1_PREFETCH_HARD_CAP = 200 * 1024, 500 * 1024


def plan_conv3d(kind: OpKind, req: OpRequest, attrs: Conv3dAttrs) -> OpPlan:
    """conv3d_program_factory.cpp `Conv3dProgramFactory::create` (2026 version): vol2col
    rows (up to 2 x 32 patches of the tile-padded patch), one tile row of tilized
    patches, the weight block K_t x N_t, the partials and the untilized result M_t x N_t
    (partials float32 with fp32 accumulation over several C_in blocks, plus a zero tile),
    the cross-core reduction and its ack tile with several C_in blocks, the bias N_t
    tiles, and (kernel > 1 x 1 x 1, no dilation) the L1 prefetch of one block's receptive
    field when it fits the remaining L1 (less 200 KiB for kernel code, at most 500 KiB)."""
    op = kind.value
    x = req.inputs[0]
    require(len(x.shape) == 5 and x.layout is Layout.ROW_MAJOR, op, "input [N, T, H, W, C] row-major expected")
    cfg = attrs.config
    n, t_in, h_in, w_in, c_in = x.shape
    (kt, kh, kw), (st, sh, sw), (pt, ph, pw), (dt, dh, dw) = attrs.kernel, attrs.stride, attrs.padding, attrs.dilation
    t_out = (t_in + 2 * pt - dt * (kt - 1) - 1) // st + 1
    h_out = (h_in + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    w_out = (w_in + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    padded_c_out = round_up(attrs.out_channels, TILE)
    c_out_block = cfg.c_out_block or padded_c_out
    c_in_block = cfg.c_in_block or c_in
    require(c_in % c_in_block == 0 and padded_c_out % c_out_block == 0, op,
            "channel blocks must divide the (tile-padded) channels")
    elem, tile = x.dtype.element_bytes, x.dtype.tile_bytes
    patch = kt * kh * kw * c_in_block
    patches = cfg.t_out_block * cfg.h_out_block * cfg.w_out_block
    m_t, k_t, n_t = ceil_div(patches, TILE), ceil_div(patch, TILE), ceil_div(c_out_block, TILE)
    compute = req.compute or CONV_DEFAULT_COMPUTE
    blocks_in = c_in // c_in_block
    fp32_partials = compute.fp32_dest_acc_en and blocks_in > 1
    partial = DataType.FLOAT32.tile_bytes if fp32_partials else tile
    gx, gy = cfg.grid or req.target.grid
    grid = CoreRange((0, 0), (gx - 1, gy - 1))
    rm_pages = min(patches, 2 * TILE)
    cbs = [cbuf(0, "vol2col_rm", rm_pages, round_up(patch, TILE) * elem, grid),
           cbuf(1, "vol2col_tiled", k_t, tile, grid), cbuf(2, "weight_tiled", k_t * n_t, tile, grid),
           cbuf(3, "matmul_interm", m_t * n_t, partial, grid), cbuf(4, "matmul_result_rm", m_t * n_t, tile, grid)]
    if fp32_partials:
        cbs.append(cbuf(len(cbs), "zero", 1, tile, grid))
    if blocks_in > 1:
        cbs += [cbuf(len(cbs), "reduction", m_t * n_t, partial, grid), cbuf(len(cbs) + 1, "worker_ack", 1, tile, grid)]
    if attrs.bias:
        cbs.append(cbuf(len(cbs), "bias", n_t, tile, grid))
    usable = req.target.l1_size - req.target.l1_unreserved_base - L1_KERNEL_CODE_RESERVE
    others = sum(cb.total_bytes for cb in cbs)
    prefetch_max = min(usable - others, L1_PREFETCH_HARD_CAP) if others < usable else 0
    if (kt, kh, kw) != (1, 1, 1) and (dt, dh, dw) == (1, 1, 1):
        positions = (((cfg.t_out_block - 1) * st + kt) * ((cfg.h_out_block - 1) * sh + kh)
                     * ((cfg.w_out_block - 1) * sw + kw))
        if positions * c_in_block * elem <= prefetch_max:
            cbs.append(cbuf(len(cbs), "input_shard", positions, c_in_block * elem, grid))
    out = TensorSpec((n, t_out, h_out, w_out, attrs.out_channels), req.out.dtype or x.dtype, Layout.ROW_MAJOR,
                     req.out.memory())
    program = Program("Conv3dProgramFactory", CONV3D_SOURCE, grid, tuple(cbs))
    return OpPlan(op, (program,), (out,), (tensor_buffer("output0", BufferRole.OUTPUT, out, req.target, (0, 0)),))
