"""`ttnn.conv_transpose2d` as ttnn runs it: (interleaved-to-sharded) -> halo -> conv2d ->
(sharded-to-interleaved), conv2d's own programs (tt_conv.py `plan_sliding_conv`) on the
geometry the transposition gives them.

Sources (tenstorrent/tt-metal, ttnn/cpp/ttnn/operations/conv/conv_transpose2d/):
- conv_transpose2d.cpp `conv_transpose2d_L1` ("ConvTranspose2d is implemented via the
  Conv2d u_op with flipped weights. The input tensor is first passed to the halo op that
  pads the input. In the scenario, where stride > 1, the halo op will add interleaved 0s
  to the input tensor. The Conv2d u_op is then called with stride = 1, padding = 0"): the
  shard layout chosen by `determine_conv_config_for_auto_shard` with the output's height
  and width, the full input's (`dims.full_input_height/width`), kernel, dilation and
  `CONV2D_STRIDE` {1, 1} / `CONV2D_PADDING` {0, 0}; the input sharded by
  `shard_or_reshard_tensor_if_required` over the cores the output's rows give (the
  input's own N x H x W sticks a core, as for conv2d); `ttnn::halo` with the transposed
  `SlidingWindowConfig` (`is_transpose = true`, `snap_to_tile`); then `ttnn::prim::conv2d`
  (Conv2dShardedProgramFactory) with the output's sharded memory config, the per-core
  block config of conv2d and the prepared weights; a `to_memory_config` when the caller
  asked for another output memory config. Between the halo and the conv: the op's own
  sharded input freed only with `deallocate_activation` (`input_tensor_post_tm` is not
  reassigned, unlike conv2d's: without the flag it stays to the end), the halo output
  moved with `reallocate_halo_output` (`ttnn::move`); `ConvT2DSliceAttr::run_L1_op` (the
  DRAM path) forces both.
- prepare_conv_transpose2d_weights.cpp `compute_conv_transpose2d_dimensions`: output =
  (in - 1) s - 2 p + d (k - 1) + output_padding + 1; full input = output + d (k - 1);
  strided input = (in - 1) s + 1 (the input with s - 1 zero rows and columns between its
  own); the real padding of the full input: half the rest at the top / left, the other
  half at the bottom / right (`get_transposed_real_padding`; PyTorch puts d (k - 1) - p
  above, so the two agree for output paddings 0 and 1, and for 2 or more tt-metal's
  full input is as large but its zeros sit elsewhere).
- sliding_window.cpp (is_transpose): the halo's pad metadata marks every full-input stick
  that is padding or an interleaved zero; `generate_op_trace_metadata` reads output
  (b, h, w) at full-input stick b x H_full x W_full + h x W_full + w ("In Transpose as
  Conv2d, Stride is always 1"); `generate_shard_boundaries` gives a core the full-input
  sticks from its first output's window to its last output's window plus
  (k_h - 1) x W_full + k_w - 1 (dilated): tt_sliding_window.py `max_out_nsticks_per_core`
  of the transposed window (`halo_window`).
- the weights: `transform_weights_for_conv_transpose2d` turns the IOHW weight into OIHW
  with the kernel mirrored on the host, then conv2d's `prepare_conv_weights` as for a
  stride-1 conv over the full input: [1, 1, k_h x k_w x C_in (aligned), C_out (padded)]
  TILE, the same prepared weight a conv2d of C_in -> C_out has.
- the path (`determine_conv_transpose2d_execution_path`): before tt-metal commit 078f0f7
  (PR #33136, "Implement DRAM Slicing for conv_transpose2d", in tt-mlir's pin from its
  uplift #6208 of 2025-12-08, which added the `dram_slice_config_` argument it brought)
  always this L1 path ("Auto slicing is not currently supported for conv_transpose2d");
  from it, the L1 path with an L1_FULL slice config or with none and an L1 input, and
  otherwise `conv_transpose2d_DRAM` (below). tt-mlir passes no slice config to a
  conv_transpose2d at any optimization level (TTIRToTTNN.cpp
  `ConvTranspose2dOpConversionPattern`: `conv2d_slice_config = nullptr`; ConvRules.cpp
  `applyConvSliceConfig` sets L1_FULL on conv2d only), so a DRAM input is sliced at every
  level on those builds (devices/software.toml `conv_transpose2d_dram_path`).
- the DRAM path, conv_transpose2d.cpp `conv_transpose2d_DRAM`: the DRAM output [N, OH,
  OW, C_out] first, then op_slicing.cpp `run_sliced_op` with `ConvT2DSliceAttr`, shared
  with conv2d (tt_conv_dram.py `plan_sliced`: the slice dimension guessed from the input's
  H and W, the fewest slices whose L1 estimate fits, per slice padded_slice -> this L1
  path -> slice_write; one slice runs this L1 path on the DRAM input). A slice's input
  and padding, `ConvT2DSliceAttr::get_input_slice_and_padding` (`conv_transpose_slice`):
  with base = d (k - 1) and the real padding base - p at each side, an output range
  [a, b) reads input rows ceil((a - (base - p_lo)) / s) to ((b - (base - p_lo) + base) -
  1) / s + 1, clamped; its padding at each side is the larger of the real padding the
  range still covers and the offset to the next input row on the stride grid; at the
  tensor's edges the full real padding and (at the far edge) the output padding; the
  transposed conv's own padding is then base minus that; a width slice of a TILE output
  not a multiple of 32 wide gets the missing columns as output padding. Its shard layout
  is chosen anew for the slice (`get_input_memory_config`: tt-metal's auto shard of the
  slice's stride-1 conv, `auto_shard_layout`), its L1 estimate read off its programs as
  for conv2d (tileplan's reading of `get_L1_usage`: max(halo input + halo output, CBs +
  conv output + halo output); tt-metal's own estimate is `calculate_L1_usage` with a
  precise halo size, corrected by PR #37791 in 2026-02).

Not modelled (the rule refuses them by name): grouped transposed convs (tt-metal expands
the weights to groups = 1 first, 2026 versions), 1x1 kernels (`use_matmul_for_1x1_conv`
may run them as a matmul), padding beyond d (k - 1) (a negative real padding), a slice
whose stride-grid offset exceeds d (k - 1) (tt-metal's unsigned padding would wrap), a
ROW_MAJOR output on the DRAM path, the polyphase path of later 2026 versions (1-D-as-2-D
inputs: H = 1, k_h = 1), and what conv2d's rule refuses (a TILE input, no shard layout).

Worked example (UNet's upconv4 on n150): [1, 512, 30, 40] by a 2 x 2 stride-2 kernel to
256 channels: output 60 x 80, full input 61 x 81 (strided 59 x 79, padding 1 on each
side); the conv2d programs run on 4,800 output rows (150 tiles) with the halo reading
the input's 1,200 sticks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, require
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv import (
    plan_sliding_conv,
)
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import (
    Conv2dAttrs,
    Conv2dConfig,
    SliceType,
    padding_n4,
)
from tileplan.targets.tenstorrent.ops.tt_conv_grid import ConvParallel
from tileplan.targets.tenstorrent.ops.tt_conv_dram import ConvSlice, SlicedOp, auto_shard_layout, plan_sliced
from tileplan.targets.tenstorrent.ops.tt_sliding_window import SlidingWindow
from tileplan.targets.tenstorrent.tiles import TILE, Layout

CONV_TRANSPOSE_SOURCE = "ttnn/cpp/ttnn/operations/conv/conv_transpose2d/conv_transpose2d.cpp"


@dataclass(frozen=True, slots=True)
class ConvTranspose2dAttrs:
    """ttnn.conv_transpose2d arguments (the input is [N, H, W, C] or flattened
    [1, 1, N*H*W, C]; `padding` is (top, left), `padding_end` (bottom, right) when it
    differs, as a DRAM slice's L1 op gets it; `slice_type` None lets tt-metal choose the
    path from the input's placement)."""

    in_channels: int
    out_channels: int
    batch: int
    input_hw: tuple[int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    output_padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = False
    config: Conv2dConfig = Conv2dConfig()
    padding_end: tuple[int, int] | None = None
    slice_type: SliceType | None = SliceType.L1_FULL

    def __post_init__(self) -> None:
        sizes = (self.in_channels, self.out_channels, self.batch, *self.input_hw, *self.kernel, *self.stride,
                 *self.dilation, self.groups)
        require(min(sizes) >= 1 and min((*self.pads, *self.output_padding)) >= 0, OpKind.CONV_TRANSPOSE2D.value,
                f"channels, batch, input size, kernel, stride, dilation and groups must be >= 1 and the paddings "
                f">= 0, found {self}")

    @property
    def pads(self) -> tuple[int, int, int, int]:
        return padding_n4(self.padding, self.padding_end)

    def _output(self, axis: int) -> int:
        i, s, d, k, o = (self.input_hw[axis], self.stride[axis], self.dilation[axis], self.kernel[axis],
                         self.output_padding[axis])
        return (i - 1) * s - self.pads[2 * axis] - self.pads[2 * axis + 1] + d * (k - 1) + o + 1

    @property
    def output_hw(self) -> tuple[int, int]:
        """`compute_conv_transpose2d_dimensions`: (in - 1) s - (p_lo + p_hi) + d (k - 1) + op + 1."""
        return self._output(0), self._output(1)

    @property
    def full_input_hw(self) -> tuple[int, int]:
        """The input the conv2d reads: the output plus d (k - 1) rows and columns."""
        oh, ow = self.output_hw
        return oh + self.dilation[0] * (self.kernel[0] - 1), ow + self.dilation[1] * (self.kernel[1] - 1)

    @property
    def strided_input_hw(self) -> tuple[int, int]:
        """The input with s - 1 zeros between its rows and between its columns."""
        return (self.input_hw[0] - 1) * self.stride[0] + 1, (self.input_hw[1] - 1) * self.stride[1] + 1

    @property
    def real_padding(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """`get_transposed_real_padding`: ((top, bottom), (left, right)) around the strided
        input in the full input."""
        out = []
        for full, strided in zip(self.full_input_hw, self.strided_input_hw):
            first = (full - strided) // 2
            out.append((first, full - strided - first))
        return out[0], out[1]

    def halo_window(self, p: ConvParallel) -> SlidingWindow:
        """The halo's sliding window (conv_transpose2d.cpp `conv_transpose2d_L1`: its own
        input, kernel, stride, padding and output padding, `is_transpose`; the N x H x W
        cores of the conv's parallel config), tt_sliding_window.py's sizes of its config
        tensors; the conv program's reader indices are those of the stride-1 conv over
        the full input (`as_conv2d`), as tt-metal counts them since PR #33465 (2025-12);
        before it they broke at the transposed stride (not modelled)."""
        return SlidingWindow(self.batch, self.input_hw, self.kernel, self.stride, self.pads, self.dilation,
                             p.cores_nhw, p.layout, is_transpose=True, output_padding_hw=self.output_padding)

    def as_conv2d(self) -> Conv2dAttrs:
        """The conv2d tt-metal runs: stride 1, no padding, over the full input."""
        return Conv2dAttrs(self.in_channels, self.out_channels, self.batch, self.full_input_hw, self.kernel, (1, 1),
                           (0, 0), self.dilation, self.groups, self.bias, self.config)


def _div_up(a: int, b: int) -> int:
    """tt::div_up on C++ ints: (a + b - 1) / b, the quotient truncated toward zero."""
    return int((a + b - 1) / b)


def _axis_slice(attrs: ConvTranspose2dAttrs, axis: int, start: int, end: int) -> tuple[int, int, int, int, int]:
    """`get_input_slice_and_padding` along one axis for output [start, end): the input
    rows [lo, hi) and the real padding before and after them, and the output padding."""
    size_in, k, s, d = attrs.input_hw[axis], attrs.kernel[axis], attrs.stride[axis], attrs.dilation[axis]
    full_out = attrs.output_hw[axis]
    base = d * (k - 1)
    real_lo, real_hi = base - attrs.pads[2 * axis], base - attrs.pads[2 * axis + 1]
    lo = _div_up(start - real_lo, s)
    unpadded = max(0, start - real_lo)
    lo_offset = 0 if unpadded % s == 0 else s - unpadded % s
    expanded_end = end - real_lo + (k - 1) * d
    hi_offset = (expanded_end - 1) % s if end < full_out else 0
    hi = (expanded_end - 1) // s + 1
    pad_lo = max(0, real_lo - start, lo_offset)
    pad_hi = max(0, expanded_end - full_out, hi_offset)
    lo, hi = max(0, lo), min(size_in, hi)
    out_pad = 0
    if start == 0:
        pad_lo, lo = real_lo, 0
    if end == full_out:
        pad_hi, hi, out_pad = real_hi, size_in, attrs.output_padding[axis]
    return lo, hi, pad_lo, pad_hi, out_pad


def conv_transpose_slice(attrs: ConvTranspose2dAttrs, slice_type: SliceType, start: int, end: int) -> ConvSlice:
    """conv_transpose2d.cpp `ConvT2DSliceAttr::get_input_slice_and_padding` for output rows
    (DRAM_HEIGHT) or columns (DRAM_WIDTH) [start, end): the input slice and the
    transposed conv `conv_transpose2d_L1` runs on it (its padding base - the real padding
    at each side, its output padding), as the stride-1 conv over the slice's full input."""
    op = OpKind.CONV_TRANSPOSE2D.value
    oh, ow = attrs.output_hw
    rng = ((start, end), (0, ow)) if slice_type is SliceType.DRAM_HEIGHT else ((0, oh), (start, end))
    (h0, h1, pt, pb, oph), (w0, w1, pl, pr, opw) = (_axis_slice(attrs, a, *rng[a]) for a in (0, 1))
    single = (h1 - h0, w1 - w0) == attrs.input_hw
    out_w = rng[1][1] - rng[1][0]
    if attrs.config.output_layout is Layout.TILE and out_w % TILE and not single:
        opw += TILE - out_w % TILE
    base_h, base_w = (d * (k - 1) for d, k in zip(attrs.dilation, attrs.kernel))
    pads = (base_h - pt, base_h - pb, base_w - pl, base_w - pr)
    require(min(pads) >= 0, op, f"output slice [{start}, {end}): a real padding {(pt, pb, pl, pr)} beyond "
            f"dilation x (kernel - 1) {(base_h, base_w)} (tt-metal's unsigned padding would wrap); hint: give a "
            "slice config or an L1 input")
    sl = replace(attrs, input_hw=(h1 - h0, w1 - w0), padding=(pads[0], pads[2]), padding_end=(pads[1], pads[3]),
                 output_padding=(oph, opw))
    want = (rng[0][1] - rng[0][0], out_w + (opw - (attrs.output_padding[1] if rng[1][1] == ow else 0)))
    require(sl.output_hw == want, op, f"output slice [{start}, {end}): the slice's input {sl.input_hw} and padding "
            f"{sl.pads} give {sl.output_hw}, not {want} (conv_transpose2d.cpp's TT_ASSERT)")
    return ConvSlice(start, end, sl.as_conv2d(), attrs.batch * sl.input_hw[0] * sl.input_hw[1], sl.halo_window)


def conv_transpose2d_sliced(attrs: ConvTranspose2dAttrs) -> SlicedOp:
    """`ConvT2DSliceAttr` as op_slicing.cpp reads it."""
    return SlicedOp(attrs.batch, attrs.out_channels, attrs.input_hw, attrs.output_hw, attrs.config.output_layout,
                    attrs.slice_type, lambda st, a, b: conv_transpose_slice(attrs, st, a, b), move_halo=True)


def plan_conv_transpose2d(kind: OpKind, req: OpRequest, attrs: ConvTranspose2dAttrs) -> OpPlan:
    """ttnn.conv_transpose2d (inputs: the activation and the weights): on the L1 path
    (an L1_FULL slice config, or none and an L1 input) conv2d's programs for
    `attrs.as_conv2d()`, the input sharded and haloed from its own N x H x W sticks;
    otherwise `conv_transpose2d_DRAM`'s slices (tt_conv_dram.py `plan_sliced`)."""
    op = kind.value
    require(attrs.groups == 1, op, f"groups {attrs.groups}: grouped transposed convs are not modelled")
    require(attrs.kernel != (1, 1), op, "a 1x1 transposed conv (tt-metal may run it as a matmul, "
            "use_matmul_for_1x1_conv) is not modelled")
    reach = tuple(d * (k - 1) for d, k in zip(attrs.dilation, attrs.kernel))
    require(all(p <= reach[i // 2] for i, p in enumerate(attrs.pads)), op,
            f"padding {attrs.pads} beyond dilation x (kernel - 1) {reach}: the full input's real padding would "
            "be negative")
    rows = attrs.batch * attrs.input_hw[0] * attrs.input_hw[1]
    x = req.inputs[0]
    require(math.prod(x.shape[:-1]) == rows and x.shape[-1] >= attrs.in_channels, op,
            f"input {x.shape} is not [1, 1, {rows}, {attrs.in_channels}] (N x H x W sticks of the input channels, "
            "padded or not)")
    l1_input = x.memory.buffer_type is BufferType.L1
    if attrs.slice_type is SliceType.L1_FULL or (attrs.slice_type is None and l1_input):
        cfg = attrs.config
        return plan_sliding_conv(op, req, attrs.as_conv2d(), rows, move_halo=cfg.reallocate_halo_output,
                                 keep_input=not cfg.deallocate_activation, halo_window=attrs.halo_window)
    return plan_sliced(op, req, conv_transpose2d_sliced(attrs), auto_shard_layout)
