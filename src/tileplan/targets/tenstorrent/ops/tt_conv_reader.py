"""conv2d's split reader: whether two activation readers pay off, as tt-metal decides it
(ttnn/cpp/ttnn/operations/conv/conv2d/conv2d_utils.cpp `is_split_reader_viable`, with its
measured NOC transfer rates and tilize cycles per architecture, ported as they are).

Worked example: H3 (tt_conv.py) on Blackhole, act block 5 x 3 tiles of 32 bf16 channels:
half the activation read plus the weights beats the whole read plus tilizing, so the
activation CB splits 3 + 2 rows."""

from __future__ import annotations

from tileplan.targets.tenstorrent.ops.base import Arch
from tileplan.targets.tenstorrent.tiles import TILE, DataType

#: (linear-growth threshold B, rate at the minimum transfer, peak rate) in GB/s
_L1_RATES = {Arch.BLACKHOLE: (4096, 1.124, 80.48), Arch.WORMHOLE_B0: (1024, 0.868, 27.84)}
_DRAM_RATES = {Arch.BLACKHOLE: (2048, 0.671, 80.885), Arch.WORMHOLE_B0: (2048, 0.436, 28.411)}
_MCAST_RATES = {Arch.BLACKHOLE: (65536, 0.182, 57.677), Arch.WORMHOLE_B0: (65536, 0.318, 25.345)}
#: tilize cycles a tile, (halo input, output) -> (no fp32 acc, fp32 acc)
_F32, _BF16, _BFP8 = DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B
_TILIZE_CYCLES = {
    Arch.BLACKHOLE: {(_F32, _F32): (132, 132), (_F32, _BF16): (132, 80), (_F32, _BFP8): (132, 77),
                     (_BF16, _F32): (105, 128), (_BF16, _BF16): (72, 72), (_BF16, _BFP8): (60, 60)},
    Arch.WORMHOLE_B0: {(_F32, _F32): (107, 128), (_F32, _BF16): (74, 74), (_F32, _BFP8): (74, 70),
                       (_BF16, _F32): (92, 117), (_BF16, _BF16): (61, 68), (_BF16, _BFP8): (40, 43)}}


def _rate(table: dict[Arch, tuple[int, float, float]], arch: Arch, size: int, min_size: int) -> float:
    threshold, low, peak = table[arch]
    size = min(max(size, min_size), threshold)
    return low + (peak - low) / (threshold - min_size) * (size - min_size)


def split_reader_viable(arch: Arch, act_block_h: int, c_pad: int, kernel_w: int, in_dtype: DataType,
                        weights_block_tiles: int, weights_tile: int, dilation_w: int, act_block_w: int, fp32: bool,
                        out_dtype: DataType, l1_alignment: int) -> bool:
    """`is_split_reader_viable`: two activation readers pay off when half the activation
    read plus max(weights, tilize) beats max(activation + tilize, weights), all in cycles
    from the measured NOC rates."""
    if arch not in _L1_RATES:
        return False
    clock = 1.35 if arch is Arch.BLACKHOLE else 1.0
    elem = 4 if in_dtype is DataType.FLOAT32 else 2
    halo_dtype = DataType.FLOAT32 if in_dtype is DataType.FLOAT32 else DataType.BFLOAT16
    unit = elem * c_pad * (kernel_w if dilation_w == 1 else 1)
    act = clock * (elem * act_block_h * TILE * c_pad * kernel_w) / _rate(_L1_RATES, arch, unit, l1_alignment)
    w_bytes = weights_tile * weights_block_tiles
    weights = clock * w_bytes * (1 / _rate(_DRAM_RATES, arch, weights_tile, l1_alignment)
                                 + 1 / _rate(_MCAST_RATES, arch, w_bytes, l1_alignment))
    cycles = _TILIZE_CYCLES[arch].get((halo_dtype, out_dtype), (0, 0))[1 if fp32 else 0]
    tilize = cycles * act_block_w * act_block_h
    return act / 2 + max(weights, tilize) < max(act + tilize, weights)
