"""The ttnn.conv_transpose2d rule (tileplan.targets.tenstorrent.ops.tt_conv_transpose):
conv2d's programs over the full input tt-metal's halo builds (conv_transpose2d.cpp
`conv_transpose2d_L1`, prepare_conv_transpose2d_weights.cpp
`compute_conv_transpose2d_dimensions`, sliding_window.cpp with `is_transpose`), its
geometry held to PyTorch's ConvTranspose2d, and what it refuses."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tt_ops_support import DRAM, MLIR, footprint, row_major

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dAttrs, Conv2dConfig
from tileplan.targets.tenstorrent.ops.tt_conv_transpose import ConvTranspose2dAttrs

#: height sharded, one activation reader (the split reader's cost model is tt_conv's,
#: tested there), the config tensors in DRAM as tt-mlir sets them
HS = Conv2dConfig(shard_layout=MemoryLayout.HEIGHT_SHARDED, force_split_reader=False, config_tensors_in_dram=True)
#: UNet's upconv4: [1, 512, 30, 40] by a 2 x 2 stride-2 kernel to 256 channels, with bias
UPCONV4 = ConvTranspose2dAttrs(512, 256, 1, (30, 40), (2, 2), (2, 2), bias=True, config=HS)


def _upconv4():
    x = row_major((1, 1, 1200, 512), DRAM)
    w = row_major((512, 256, 2, 2), DRAM)
    return plan_op(OpKind.CONV_TRANSPOSE2D, OpRequest((x, w), OutputRequest.of(DRAM), MLIR), UPCONV4)


def test_the_dimensions_are_compute_conv_transpose2d_dimensions() -> None:
    """Output (30 - 1) x 2 - 0 + 1 x (2 - 1) + 0 + 1 = 60 by (40 - 1) x 2 + 2 = 80; the
    full input 60 + 1 = 61 by 81; the strided input (30 - 1) x 2 + 1 = 59 by 79; the
    real padding (61 - 59) / 2 = 1 on each side."""
    assert UPCONV4.output_hw == (60, 80)
    assert UPCONV4.full_input_hw == (61, 81)
    assert UPCONV4.strided_input_hw == (59, 79)
    assert UPCONV4.real_padding == ((1, 1), (1, 1))
    conv = UPCONV4.as_conv2d()
    assert (conv.input_hw, conv.stride, conv.padding, conv.output_hw) == ((61, 81), (1, 1), (0, 0), (60, 80))


def test_upconv4_runs_conv2ds_programs_on_the_full_input() -> None:
    """On the 8 x 8 grid: the output's 4,800 rows are 150 tiles, height sharded over
    find_closest_largest_divisor_with_num_padding_and_mult(150, 64) = 50 cores (3 tiles,
    96 rows a core; 51..64 cores pad 150 by at least a core's share). The input's own
    1,200 sticks are padded to a whole tile a core (conv2d_utils.cpp
    determine_input_memory_config: 1,600 rows) and sharded 32 a core (32 x 512 x 2 =
    32,768 B). The halo gives a core
    the full-input sticks from its first output's window to its last's: 96 outputs span
    at most one row change of the 80-wide output (the first at x = 16c mod 80 <= 64), so
    95 + 1 sticks apart in the 81-wide full input, plus the window's (2 - 1) x 81 + 1 and
    the stick itself: 179 sticks x 1,024 B = 183,296 B. The conv: act_block_w = 512 x 2 /
    32 = 32 tiles, act_block_h 3; weights 8 x 32 = 256 tiles (524,288 B), activation and
    tilized activation 3 x 32 = 96 tiles each (196,608 B), bias 8 tiles (16,384 B),
    reader indices one page of 3 x 32 x 2 = 192 B (config tensors in DRAM), the 64-B
    scratch: 934,144 B; its output 3 x 8 tiles = 49,152 B a core, then sharded to
    interleaved into DRAM."""
    plan = _upconv4()
    # tt-metal's default Conv2dConfig: the halo output moved (reallocate_halo_output), the
    # op's own sharded input kept to the end (no deallocate_activation)
    assert [p.name for p in plan.programs] == ["InterleavedToShardedProgramFactory",
                                               "UntilizeWithHaloProgramFactory", "MoveShardedProgramFactory",
                                               "Conv2dShardedProgramFactory", "ShardedToInterleavedProgramFactory"]
    sizes = {b.name: (b.bytes_per_bank, b.banks) for b in plan.buffers
             if b.name != "output0" and b.buffer_type is BufferType.L1}
    assert sizes == {"conv_input_sharded": (32_768, 50), "halo_output": (183_296, 50),
                     "halo_output (moved)": (183_296, 50), "conv_output_sharded": (49_152, 50)}
    # the config tensors in DRAM, a row for each of the 50 cores: the halo's for its
    # transposed window (tt_sliding_window.py), the conv's reader indices
    configs = [b.name for b in plan.buffers if b.buffer_type is BufferType.DRAM and b.pages == 50]
    assert configs == ["halo_padding_config0", "halo_padding_config1", "halo_gather_config0", "halo_gather_config1",
                       "conv_reader_indices"]
    assert next(b for b in plan.buffers if b.name == "conv_input_sharded").live == (0, 4)
    conv = plan.programs[3]
    unbound = [(cb.name, cb.total_bytes) for cb in conv.circular_buffers if not cb.globally_allocated]
    assert unbound == [("weights", 524_288), ("act", 196_608), ("act_tilized", 196_608), ("bias", 16_384),
                       ("reader_indices", 192), ("l1_array", 64)]
    assert footprint(plan) == (934_144, 0)
    assert plan.outputs[0].shape == (1, 1, 4_800, 256)


def test_a_stride_1_transposed_conv_is_the_conv2d_padded_by_the_kernels_reach() -> None:
    """With stride 1 the full input is the input padded by d (k - 1) - p on each side:
    the same programs, circular buffers and buffers as conv2d of that padding (conv2d's
    halo output kept where it was made: a transposed conv's move is not modelled)."""
    cfg = Conv2dConfig(shard_layout=MemoryLayout.HEIGHT_SHARDED, config_tensors_in_dram=True,
                       reallocate_halo_output=False, deallocate_activation=True)
    x, w = row_major((1, 1, 32 * 48, 64), DRAM), row_major((64, 32, 3, 3), DRAM)
    req = OpRequest((x, w), OutputRequest.of(DRAM), MLIR)
    transposed = plan_op(OpKind.CONV_TRANSPOSE2D, req,
                         ConvTranspose2dAttrs(64, 32, 1, (32, 48), (3, 3), (1, 1), (1, 1), config=cfg))
    direct = plan_op(OpKind.CONV2D, req, Conv2dAttrs(64, 32, 1, (32, 48), (3, 3), (1, 1), (1, 1), config=cfg))
    assert transposed.programs == direct.programs and transposed.outputs == direct.outputs
    # the same buffers, the config tensors too (a transposed window's halo configs, sized
    # by tt_sliding_window.py, equal the padded conv2d's), held by other cached programs
    unkeyed = [[replace(b, cache_key=None) for b in plan.buffers] for plan in (transposed, direct)]
    assert unkeyed[0] == unkeyed[1]
    assert {b.cache_key for b in transposed.buffers} != {b.cache_key for b in direct.buffers}


GEOMETRIES = [  # in_hw, kernel, stride, padding, output_padding, dilation
    ((5, 7), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1)),
    ((5, 7), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    ((4, 6), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),
    ((6, 5), (3, 2), (1, 2), (2, 0), (0, 1), (2, 1)),
    ((3, 4), (3, 3), (3, 3), (2, 1), (1, 0), (1, 1)),
]


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_the_full_input_with_the_flipped_kernel_is_pytorchs_conv_transpose(geometry) -> None:
    """tt-metal's transposition, computed: the input with s - 1 zeros between its rows and
    columns placed in the full input at the real padding, convolved (stride 1, no
    padding, the rule's dilation) with the kernel mirrored and its channels swapped
    (`transform_weights_for_conv_transpose2d`), is PyTorch's conv_transpose2d."""
    hw, k, s, p, op, d = geometry
    attrs = ConvTranspose2dAttrs(3, 2, 1, hw, k, s, p, op, d)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, 3, *hw, generator=gen, dtype=torch.float64)
    w = torch.randn(3, 2, *k, generator=gen, dtype=torch.float64)
    want = torch.nn.functional.conv_transpose2d(x, w, stride=s, padding=p, output_padding=op, dilation=d)
    (top, _), (left, _) = attrs.real_padding
    full = torch.zeros(1, 3, *attrs.full_input_hw, dtype=torch.float64)
    sh, sw = attrs.strided_input_hw
    full[:, :, top:top + sh:s[0], left:left + sw:s[1]] = x
    got = torch.nn.functional.conv2d(full, w.flip(2, 3).transpose(0, 1), dilation=d)
    assert tuple(want.shape[2:]) == attrs.output_hw
    assert torch.allclose(got, want)


def test_an_output_padding_of_two_or_more_is_split_as_tt_metal_splits_it() -> None:
    """`get_transposed_real_padding` halves the full input's padding, so an output
    padding of 2 (stride 3, padding 2, 3 rows in: output (3 - 1) x 3 - 4 + 2 + 2 + 1 = 7,
    full input 9, strided input 7) puts one row above and one below where PyTorch puts
    both below (d (k - 1) - p = 0 above): the same full input (the same buffers), other
    numbers in its edge rows. The columns (output padding 0) agree: 12 - 10 = 2, one
    each side, as d (k - 1) - p = 1."""
    attrs = ConvTranspose2dAttrs(3, 2, 1, (3, 4), (3, 3), (3, 3), (2, 1), (2, 0))
    assert (attrs.output_hw, attrs.full_input_hw, attrs.strided_input_hw) == ((7, 10), (9, 12), (7, 10))
    assert attrs.real_padding == ((1, 1), (1, 1))


def test_conv_transpose_refuses_what_it_does_not_model() -> None:
    x, w = row_major((1, 1, 1200, 512), DRAM), row_major((512, 256, 2, 2), DRAM)
    req = OpRequest((x, w), OutputRequest.of(DRAM), MLIR)

    def plan(**changes: object) -> None:
        base = dict(in_channels=512, out_channels=256, batch=1, input_hw=(30, 40), kernel=(2, 2), stride=(2, 2),
                    config=HS)
        plan_op(OpKind.CONV_TRANSPOSE2D, req, ConvTranspose2dAttrs(**{**base, **changes}))  # type: ignore[arg-type]

    with pytest.raises(InputError, match="grouped transposed convs"):
        plan(groups=2)
    with pytest.raises(InputError, match="1x1 transposed conv"):
        plan(kernel=(1, 1))
    with pytest.raises(InputError, match="real padding would be negative"):
        plan(padding=(2, 0))
    with pytest.raises(InputError, match=r"is not \[1, 1, 2400, 512\]"):
        plan(batch=2)
    with pytest.raises(InputError, match=r"is not \[1, 1, 1200, 520\]"):
        plan(in_channels=520)
    with pytest.raises(InputError, match="shard layout"):
        plan(config=Conv2dConfig())
    with pytest.raises(InputError, match="must be >= 1"):
        ConvTranspose2dAttrs(512, 256, 1, (30, 40), (2, 2), (0, 2))
