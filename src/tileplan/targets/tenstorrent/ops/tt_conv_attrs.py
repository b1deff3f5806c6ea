"""ttnn.conv2d's arguments as tileplan's conv rules read them (tt_conv.py,
tt_conv_grid.py, tt_conv_dram.py, tt_conv_transpose.py): `Conv2dConfig`, the slice type,
`Conv2dAttrs` and tt-metal's `padding_n4`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.targets.tenstorrent.memory import MemoryLayout
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import BlockGrids, ReaderIndicesCb


@dataclass(frozen=True, slots=True)
class Conv2dConfig:
    """ttnn `Conv2dConfig`: the fields that change buffers."""

    shard_layout: MemoryLayout | None = None
    weights_dtype: DataType | None = None
    act_block_h_override: int = 0
    act_block_w_div: int = 1
    enable_act_double_buffer: bool = False
    enable_weights_double_buffer: bool = False
    force_split_reader: bool | None = None
    output_layout: Layout = Layout.TILE
    config_tensors_in_dram: bool = False
    transpose_shards: bool = False
    enable_channels_padding: bool = True
    #: move the halo output after the op's own sharded input is freed (conv2d.cpp
    #: `conv2d_L1`: `ttnn::move(halo_output)`); tt-metal's default true since PR #16185
    reallocate_halo_output: bool = True
    #: free the input after the halo (conv_transpose2d keeps its own sharded copy to the
    #: end without it; conv2d drops its copy whatever this says); tt-metal's default false
    deallocate_activation: bool = False
    #: not a ttnn field: how the tt-metal build sizes the READER_INDICES CB
    #: (tt_conv_config.py `ReaderIndicesCb`; the frontend takes the build's)
    reader_indices_cb: ReaderIndicesCb = ReaderIndicesCb.WORST_CASE
    #: not a ttnn field: whether the build gives a block-sharded output its own channel
    #: cores (tt_conv_grid.py `BlockGrids`; the frontend takes the build's)
    block_grids: BlockGrids = BlockGrids.SHARED


class SliceType(Enum):
    """ttnn `Conv2dSliceConfig::SliceType` (op_slicing `Op2DSliceConfig`)."""

    DRAM_HEIGHT = "dram_height"
    DRAM_WIDTH = "dram_width"
    L1_FULL = "l1_full"


@dataclass(frozen=True, slots=True)
class Conv2dAttrs:
    """ttnn.conv2d arguments (the input is [N, H, W, C] or flattened [1, 1, N*H*W, C])."""

    in_channels: int
    out_channels: int
    batch: int
    input_hw: tuple[int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = False
    config: Conv2dConfig = Conv2dConfig()
    #: (bottom, right) padding when it differs from (top, left) = `padding` (a DRAM
    #: slice's conv, conv2d.cpp `Conv2dSliceAttr::get_input_slice_and_padding`)
    padding_end: tuple[int, int] | None = None
    #: ttnn.conv2d's `slice_config` (None: unset, so a DRAM input takes the DRAM path,
    #: conv2d_utils.cpp `determine_conv2d_execution_path`; tt_conv_dram.py)
    slice_type: SliceType | None = SliceType.L1_FULL

    @property
    def pads(self) -> tuple[int, int, int, int]:
        return padding_n4(self.padding, self.padding_end)

    @property
    def output_hw(self) -> tuple[int, int]:
        (h, w), (kh, kw), (sh, sw), (dh, dw) = self.input_hw, self.kernel, self.stride, self.dilation
        pt, pb, pl, pr = self.pads
        return (h + pt + pb - dh * (kh - 1) - 1) // sh + 1, (w + pl + pr - dw * (kw - 1) - 1) // sw + 1


def is_1d_depthwise(attrs: Conv2dAttrs) -> bool:
    """conv2d_utils.cpp `is_1d_deptwise_conv`: groups equal to both channel counts, a
    kernel and an image one wide (`is_1d_conv`), no bias. tt-metal gives it its own
    depthwise kernels and circular buffers (the weights' CB by `act_block_h_ntiles`),
    which this rule does not model; any other grouped conv takes the regular path."""
    depthwise = attrs.groups == attrs.in_channels == attrs.out_channels
    return depthwise and attrs.kernel[1] == 1 and attrs.input_hw[1] == 1 and not attrs.bias


def padding_n4(padding: tuple[int, int], padding_end: tuple[int, int] | None) -> tuple[int, int, int, int]:
    """(top, bottom, left, right), tt-metal's `padding_n4`, from a convolution's (top,
    left) `padding` and its (bottom, right) `padding_end` where that differs."""
    bottom, right = padding_end if padding_end is not None else padding
    return padding[0], bottom, padding[1], right
