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
  asked for another output memory config.
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
  (k_h - 1) x W_full + k_w - 1 (dilated): tt_conv.py `halo_sticks` of the equivalent
  stride-1 unpadded conv over the full input.
- the weights: `transform_weights_for_conv_transpose2d` turns the IOHW weight into OIHW
  with the kernel mirrored on the host, then conv2d's `prepare_conv_weights` as for a
  stride-1 conv over the full input: [1, 1, k_h x k_w x C_in (aligned), C_out (padded)]
  TILE, the same prepared weight a conv2d of C_in -> C_out has.
- the path: without a slice config, conv_transpose2d runs this L1 path
  (`determine_conv_transpose2d_execution_path`, late-2025 versions: "Auto slicing is not
  currently supported for conv_transpose2d. So keep existing default behaviour"; the
  2026 versions slice a DRAM input instead). tt-mlir passes no slice config to a
  conv_transpose2d at any optimization level (TTIRToTTNN.cpp
  `ConvTranspose2dOpConversionPattern`: `conv2d_slice_config = nullptr`; ConvRules.cpp
  `applyConvSliceConfig` sets L1_FULL on conv2d only).

Not modelled (the rule refuses them by name): grouped transposed convs (tt-metal expands
the weights to groups = 1 first, 2026 versions), 1x1 kernels (`use_matmul_for_1x1_conv`
may run them as a matmul), padding beyond d (k - 1) (a negative real padding), and what
conv2d's rule refuses (a TILE input, no shard layout).

Worked example (UNet's upconv4 on n150): [1, 512, 30, 40] by a 2 x 2 stride-2 kernel to
256 channels: output 60 x 80, full input 61 x 81 (strided 59 x 79, padding 1 on each
side); the conv2d programs run on 4,800 output rows (150 tiles) with the halo reading
the input's 1,200 sticks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, require
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv import Conv2dAttrs, Conv2dConfig, plan_sliding_conv

CONV_TRANSPOSE_SOURCE = "ttnn/cpp/ttnn/operations/conv/conv_transpose2d/conv_transpose2d.cpp"


@dataclass(frozen=True, slots=True)
class ConvTranspose2dAttrs:
    """ttnn.conv_transpose2d arguments (the input is [N, H, W, C] or flattened
    [1, 1, N*H*W, C]; the padding symmetric, as ttnn takes it)."""

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

    def __post_init__(self) -> None:
        sizes = (self.in_channels, self.out_channels, self.batch, *self.input_hw, *self.kernel, *self.stride,
                 *self.dilation, self.groups)
        require(min(sizes) >= 1 and min((*self.padding, *self.output_padding)) >= 0, OpKind.CONV_TRANSPOSE2D.value,
                f"channels, batch, input size, kernel, stride, dilation and groups must be >= 1 and the paddings "
                f">= 0, found {self}")

    def _output(self, axis: int) -> int:
        i, s, p, d, k, o = (self.input_hw[axis], self.stride[axis], self.padding[axis], self.dilation[axis],
                            self.kernel[axis], self.output_padding[axis])
        return (i - 1) * s - 2 * p + d * (k - 1) + o + 1

    @property
    def output_hw(self) -> tuple[int, int]:
        """`compute_conv_transpose2d_dimensions`: (in - 1) s - 2 p + d (k - 1) + op + 1."""
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

    def as_conv2d(self) -> Conv2dAttrs:
        """The conv2d tt-metal runs: stride 1, no padding, over the full input."""
        return Conv2dAttrs(self.in_channels, self.out_channels, self.batch, self.full_input_hw, self.kernel, (1, 1),
                           (0, 0), self.dilation, self.groups, self.bias, self.config)


def plan_conv_transpose2d(kind: OpKind, req: OpRequest, attrs: ConvTranspose2dAttrs) -> OpPlan:
    """ttnn.conv_transpose2d (inputs: the activation and the weights): conv2d's programs
    for `attrs.as_conv2d()`, the input sharded and haloed from its own N x H x W sticks."""
    op = kind.value
    require(attrs.groups == 1, op, f"groups {attrs.groups}: grouped transposed convs are not modelled")
    require(attrs.kernel != (1, 1), op, "a 1x1 transposed conv (tt-metal may run it as a matmul, "
            "use_matmul_for_1x1_conv) is not modelled")
    reach = tuple(d * (k - 1) for d, k in zip(attrs.dilation, attrs.kernel))
    require(all(p <= r for p, r in zip(attrs.padding, reach)), op,
            f"padding {attrs.padding} beyond dilation x (kernel - 1) {reach}: the full input's real padding would "
            "be negative")
    rows = attrs.batch * attrs.input_hw[0] * attrs.input_hw[1]
    x = req.inputs[0]
    require(math.prod(x.shape[:-1]) == rows and x.shape[-1] >= attrs.in_channels, op,
            f"input {x.shape} is not [1, 1, {rows}, {attrs.in_channels}] (N x H x W sticks of the input channels, "
            "padded or not)")
    return plan_sliding_conv(op, req, attrs.as_conv2d(), rows)
