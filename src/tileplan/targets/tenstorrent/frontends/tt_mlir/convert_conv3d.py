"""The model's 3-D convolutions as tt-mlir emits them: `ttnn.experimental.conv3d` on the
input permuted to [N, D, H, W, C] (a vision tower's patch embedding: Qwen2-VL, Qwen2.5-VL,
Qwen3-VL; video models).

tt-mlir's steps (each cited where it is planned below):

1. TTIRToTTIRDecomposition.cpp `Conv3dChannelLastDecompositionPattern`: permute the
   NCDHW input to NDHWC, convolve, permute the NDHWC output back.
2. TTIRToTTNN.cpp `Conv3dOpConversionPattern`: input channels not a multiple of 32 are
   padded with a `ttnn.pad` ("_pad_cin", tt-mlir #7140), the bias reshaped to [1, O];
   the op gets the Conv3dConfig of the build (devices/software.toml `conv3d_config`,
   `conv3d_config` below).
3. TTNNWorkaroundsPass.cpp `createConv3dOpOperandsWorkarounds`: the input row-major
   bfloat16 (a `ttnn.to_layout` after the TILE pad), the weight and bias bfloat16, the
   bias TILE; the output bfloat16, row-major as tt-metal makes it (conv3d_device_operation
   `compute_output_specs`), so the permute back reads it after a `ttnn.to_layout` to TILE
   (and the model's dtype, when that is not bfloat16).
4. The weight, prepared (TTNNPrepareConv3dWeights / tt-metal prepare_conv3d_weights.cpp:
   [C_in blocks x kd x kh x kw x C_in_block, O], TILE bfloat16), is a const-eval result
   held in DRAM like every other prepared weight.

What tileplan refuses, in one line each: a build whose config it does not model
(`Conv3dRule.NONE`, `UNMODELLED`), groups other than 1 ("ttnn.conv3d only supports groups
== 1"), dilation, asymmetric or temporal padding (tt-metal's validate: "Padding must be
(0,x,x)"), output channels not a multiple of 32 before tt-mlir #7640, and a 1 x 1 x 1
unit-stride unpadded convolution on builds from tt-mlir #8987 (2026-07-10), which tt-mlir's
canonicalizer turns into a matmul (TTIROps.cpp `isConv3dPointwiseLinearEligible`), not
modelled here.

Worked example: Qwen2.5-VL's patch embedding (3 -> 1280 channels, kernel = stride =
[2, 14, 14], no bias) on a 2026-03-20 n150 build: channels padded to 32, C_in_block 32
and C_out_block 32 (`Conv3dRule.BLOCKING`), so the conv program's circular buffers are a
row of 12,544 patch elements (25,088 B), 392 tiles of tilized patches, 392 weight tiles,
and two result tiles: 1,634,816 B from L1's unreserved base 103,712, ending at 1,738,528 B,
tt-mlir #7351's "grow to 1738528 B which is beyond max L1 size of 1499136 B".
"""

from __future__ import annotations

import math

from tileplan.errors import ModelError
from tileplan.model.ir import Operation
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import per_dim
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv3d import Conv3dAttrs, Conv3dConfig
from tileplan.targets.tenstorrent.ops.tt_data_movement import PadAttrs, PermuteAttrs
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up
from tileplan.targets.tenstorrent.versions import Conv3dRule

#: tt-metal's NoC L1 address alignment on Wormhole and Blackhole (the system descriptor's
#: noc_l1_address_align_bytes, which TTIRToTTNN.cpp reads for the minimal C_in_block)
L1_ALIGNMENT = 16
#: the blocks calculateOptimalCInBlock tries, largest first (tt-mlir
#: include/ttmlir/Dialect/TTNN/Utils/Utils.h, before #7640)
_BLOCKING_CANDIDATES = (128, 96, 64, 32)
#: tt-mlir #8987 (1199668571): a pointwise conv3d becomes a matmul from this build date
POINTWISE_AS_MATMUL_SINCE = "2026-07-10"


def conv3d_config(rule: Conv3dRule, channels: int, kernel: tuple[int, int, int], where: str) -> Conv3dConfig:
    """The Conv3dConfig tt-mlir attaches for `channels` (already padded to 32) input
    channels and `kernel` under `rule` (see devices/software.toml `conv3d_config`)."""
    if rule is Conv3dRule.BLOCKING:
        c_in = next((c for c in _BLOCKING_CANDIDATES if channels % c == 0), 0)
    elif rule is Conv3dRule.TILE:
        c_in = TILE
    elif rule is Conv3dRule.MINIMAL:
        factor = TILE // math.gcd(math.prod(kernel), TILE)
        c_in = min(math.lcm(L1_ALIGNMENT, factor), channels)
    else:
        raise ModelError(f"a 3-D convolution on a build whose tt-mlir conv3d config tileplan does not model "
                         f"({rule.value}: devices/software.toml conv3d_config); plan with a build from 2026-06-18 "
                         "(tt-mlir #8791) or 2026-02-23 to 2026-03-25", where)
    return Conv3dConfig(c_out_block=TILE, c_in_block=c_in)


def _triple(op: Operation, key: str, default: int) -> tuple[int, int, int]:
    first, second, third = per_dim(op, key, default, 3)
    return first, second, third


def convert_conv3d(lw: Lowering, op: Operation) -> None:
    """A 3-D convolution (see the module docstring)."""
    where = f"operation {op.index} ({op.name})"
    software = lw.device.software
    x_name, w_name = op.inputs[0], op.inputs[1]
    bias = op.inputs[2] if len(op.inputs) > 2 else None
    n, c, d, h, w = lw.shapes[x_name]
    o, _, kd, kh, kw = lw.shapes[w_name]
    rule = software.conv3d_config
    if rule is Conv3dRule.NONE:
        raise ModelError(f"tt-mlir of this build ({software.date}) has no conv3d lowering: a 3-D convolution fails to "
                         "legalize (tt-mlir #5397); tt-mlir lowers it from #5940 (2025-12-01)", where)
    if op.int_attr("groups", 1) != 1:
        raise ModelError("a grouped 3-D convolution: ttnn.conv3d only supports groups == 1 (TTIRToTTNN.cpp "
                         "Conv3dOpConversionPattern)", where)
    kernel, stride, dilation = (kd, kh, kw), _triple(op, "strides", 1), _triple(op, "dilations", 1)
    pads = op.attr("pads")
    six = tuple(int(p) for p in pads) if isinstance(pads, (tuple, list)) and len(pads) == 6 else (0,) * 6
    if dilation != (1, 1, 1) or six[:3] != six[3:] or six[0] != 0:
        raise ModelError(f"a 3-D convolution with dilation {list(dilation)} or padding {list(six)} (begins, then "
                         "ends): ttnn.conv3d takes no dilation and symmetric padding with none in depth (tt-metal "
                         "conv3d validate: 'Padding must be (0,x,x)')", where)
    if kernel == (1, 1, 1) and stride == (1, 1, 1) and software.date >= POINTWISE_AS_MATMUL_SINCE:
        raise ModelError("a 1 x 1 x 1 convolution: tt-mlir's canonicalizer turns it into a matmul on builds from "
                         f"{POINTWISE_AS_MATMUL_SINCE} (tt-mlir #8987), which tileplan does not model", where)
    if rule is Conv3dRule.BLOCKING and o % TILE:
        raise ModelError(f"{o} output channels: before tt-mlir #7640 (2026-03-26) tt-mlir pads them to a multiple "
                         "of 32 and slices the result (Conv3dPadOutputChannelsRewritePattern), not modelled", where)
    channels = round_up(c, TILE)
    config = conv3d_config(rule, channels, kernel, where)
    bf16 = DataType.BFLOAT16
    b = lw.builder
    at = lw.where(op)
    x = lw.tensor(x_name, at=op)
    xv = lw.value(x)
    x = b.one(OpKind.PERMUTE, f"{op.name}.input_permute", (x,), xv.with_(shape=(n, d, h, w, c)),
              attrs=PermuteAttrs((0, 2, 3, 4, 1)), **at)
    if channels != c:
        x = b.one(OpKind.PAD, f"{op.name}_pad_cin", (x,), xv.with_(shape=(n, d, h, w, channels)),
                  attrs=PadAttrs(((0, 0),) * 4 + ((0, channels - c),)), **at)
    x = lw.convert(x, Layout.ROW_MAJOR, bf16, op, f"{op.name}_input")
    weight = lw.constant_form(w_name, Layout.TILE, bf16, shape=(math.prod(kernel) * channels, o))
    inputs: tuple[int, ...] = (x, weight)
    if bias is not None:
        inputs = (x, weight, lw.constant_form(bias, Layout.TILE, bf16, shape=(1, o)))
    _, _, do, ho, wo = op.output_shape
    attrs = Conv3dAttrs(out_channels=o, kernel=kernel, stride=stride, padding=(0, six[1], six[2]),
                        bias=bias is not None, config=config)
    out = b.one(OpKind.CONV3D, op.name, inputs, Value((n, do, ho, wo, o), bf16, Layout.ROW_MAJOR),
                out=OutputRequest(dtype=bf16), attrs=attrs, **at)
    # the workaround's bfloat16 output goes back to the model's dtype (a float to_layout)
    dtype = lw.dtype(op.output)
    out = lw.convert(out, Layout.TILE, dtype, op, f"{op.name}_output")
    lw.define(op, b.one(OpKind.PERMUTE, f"{op.name}.output_permute", (out,), Value(op.output_shape, dtype),
                        attrs=PermuteAttrs((0, 4, 1, 2, 3)), **at))
