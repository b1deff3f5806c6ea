"""The model's 2-D convolutions as tt-mlir emits them: `ttnn.conv2d` on the input
flattened to [1, 1, N*H*W, C] (the NCHW model permuted to NHWC and flattened,
TTIRFlattenSlidingWindow; consecutive convolutions and the elementwise operations between
them stay flattened: context.py `flat_tensor`), its output [1, 1, N*OH*OW, O] in TILE.

The `Conv2dConfig` (tt-mlir TTIRToTTNN.cpp `Conv2dOpConversionPattern`:
`Conv2dConfigAttr::get().withConfigTensorsInDram(true)`, every other field unset, from
2025-12-17; before, the config tensors in L1_SMALL, and to 2025-12-01 a config of every
flag set, `reallocate_halo_output` false: devices/software.toml
`conv_config_tensors_in_dram`, `conv_reallocate_halo`): the config tensors in DRAM ("to
prevent OOM"), the weights in the activation's dtype, a TILE output, the halo output
moved up after the input is freed (on the DRAM path always: tt_conv_dram.py), and the
shard layout tt-metal chooses when none is set
(ttnn/cpp/ttnn/operations/conv/conv2d/conv2d_utils.cpp
`determine_conv_config_for_auto_shard`: the layout of least L1 estimate, ported in
`auto_shard_layout`). tt-mlir's optimizer (levels 1 and 2) searches act_block_h and the
slice type when the default fails; tileplan plans the default L1-resident conv (no DRAM
slicing) at every level, which is what tt-mlir's `conv2d_slice_config = l1_full` of levels
1 and 2 runs (ConvRules.cpp `applyConvSliceConfig`).

Weights: at level 0 tt-mlir keeps a conv's weight argument on the host and ttnn.conv2d
prepares it on the device (`prepare_conv_weights`); at levels 1 and 2
`TTNNPrepareConv2dWeightsAndBias` does it in a const-eval function. Either way the device
holds the prepared weight [1, 1, kh x kw x C (32-aligned), O] TILE; tileplan holds it for
the whole program (at level 0 tt-metal frees it after the conv: tileplan's DRAM figure is
then high by the weights of the other convolutions).

A 1x1 stride-1 unpadded convolution runs as a matmul in tt-metal (conv2d_utils.cpp
`use_matmul_for_1x1_conv`; with an interleaved input, out of the interleaved tensor):
here a `ttnn.linear` (or `ttnn.matmul`) of the flattened input by the [C, O] weight.
tileplan's conv rule takes a row-major input; a TILE input is untilized first (tt-metal
untilizes it in the halo: the same pages, one DRAM tensor more here).

A 1-D convolution reaches tt-mlir as torch-xla makes it, a 2-D one of [N, C, 1, L] by
[O, C/g, 1, K] (torch's aten::_convolution: "Expand 1d -> 2d", `view4d` an unsqueeze of
dimension 2), the length on the width: before tt-mlir ff14c6957a (2026-07-14) it is that
`ttnn.conv2d` (the input reshaped to [N, C, 1, L] and flattened, the output held
flattened as a 2-D convolution's); from it a `ttnn.conv1d` (`convert_conv1d`; devices/
software.toml `conv1d_lowering`).

Transposed convolutions (the importers' `conv_grad_input`, with its bias when fusion.py
gave it one) are `ttnn.conv_transpose2d` (TTIRToTTNN.cpp
`ConvTranspose2dOpConversionPattern`, after TTIRFlattenSlidingWindow and the NHWC
decomposition, as for conv2d): the flattened row-major input, a TILE output
[1, 1, N*OH*OW, O], symmetric padding only ("TTNN only supports padding height/width
attributes"), the output padding the model's shapes imply, the `Conv2dConfig` conv2d gets
(config tensors in DRAM since tt-mlir #6445; the shard layout tt-metal's auto shard picks
from the output's height and width and the full input's: `auto_shard_layout` of
`ConvTranspose2dAttrs.as_conv2d()`), no slice config at any level (ConvRules.cpp
`applyConvSliceConfig` sets L1_FULL on conv2d only), so on builds with tt-metal's
conv_transpose2d_DRAM (from 2025-12-08, devices/software.toml) a DRAM input is sliced
(tt_conv_transpose.py) and before them the L1 path runs, and the compute config conv2d gets.
The weight [C_in, O/g, kh, kw] is prepared as a conv2d's of C_in -> O: on the device by
ttnn.conv_transpose2d at level 0, by `PrepareConvTranspose2dWeightsOp` in a const-eval
function at levels 1 and 2 (TTNNPrepareConv2dWeightsAndBias.cpp): [1, 1, kh x kw x C
(32-aligned), O (32-aligned)] TILE, held as conv2d's are.

Worked example: a 3 x 3, padding-1 conv of [1, 64, 480, 640] bf16 to 32 channels on n150
(8 x 9 grid): height sharded over the cores `determine_parallel_config` gives (9,600
output tiles over 64 cores), its halo and conv programs as tt_conv.py prices them.

Upsampling (`convert_resize`) is no `ttnn.upsample` under tt-xla: its decomposition
table turns it into a matmul per spatial dimension.
"""

from __future__ import annotations

import math
from dataclasses import replace

from tileplan.errors import ModelError
from tileplan.model.ir import Operation
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import no_rule, per_dim
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_conv3d import convert_conv3d
from tileplan.targets.tenstorrent.frontends.tt_mlir.fusion import CONV_GRAD_INPUT, CONV_TRANSPOSE
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dAttrs, Conv2dConfig, SliceType
from tileplan.targets.tenstorrent.ops.tt_conv_dram import auto_shard_layout
from tileplan.targets.tenstorrent.ops.tt_conv_transpose import ConvTranspose2dAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_pool import Pool2dAttrs
from tileplan.targets.tenstorrent.ops.tt_data_movement import PermuteAttrs, ReshapeAttrs
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up
from tileplan.targets.tenstorrent.versions import Conv1dLowering, SlidingWindowFormat

def _pairs(op: Operation, key: str, default: int) -> tuple[int, int]:
    first, second = per_dim(op, key, default, 2)
    return first, second


def require_sliding_window_format(lw: Lowering, op: Operation, ttnn_name: str) -> None:
    """Builds whose sliding-window config tensors are the legacy format (devices/
    software.toml `sliding_window_format`: before tt-metal PRs #23025 and #23825, June
    2025), which ops/tt_sliding_window.py does not port: a convolution or pool refused."""
    if lw.device.software.sliding_window_format is SlidingWindowFormat.LEGACY:
        raise ModelError(f"on the {lw.device.version} build {ttnn_name}'s sliding-window config tensors are tt-metal's "
                         "older format (one reader index an output stick, the halo's pad, local and remote configs: "
                         "before PRs #23025 and #23825, June 2025), which is not modelled; builds from 2025-10 are "
                         "(--tt-version)", f"operation {op.index} ({op.name})")


def convert_conv(lw: Lowering, op: Operation) -> None:
    x_name, w_name = op.inputs[0], op.inputs[1]
    bias = op.inputs[2] if len(op.inputs) > 2 else None
    xs, ws = lw.shapes[x_name], lw.shapes[w_name]
    if len(xs) == 5:
        convert_conv3d(lw, op)
        return
    groups = op.int_attr("groups", 1)
    if len(xs) == 3 and len(ws) == 3:
        if lw.device.software.conv1d_lowering is Conv1dLowering.NATIVE:
            convert_conv1d(lw, op)
            return
        # torch-xla's 2-D convolution of [N, C, 1, L] by [O, C/g, 1, K] (see the module docstring)
        (n, c, w), (o, _, kw), h, kh = xs, ws, 1, 1
        stride, dilation = (1, per_dim(op, "strides", 1, 1)[0]), (1, per_dim(op, "dilations", 1, 1)[0])
        padding = (0, _padding_1d(op))
        oh, ow = 1, op.output_shape[2]
    elif len(xs) != 4 or len(ws) != 4:
        raise ModelError(f"a {len(xs) - 2}-D convolution: tt-mlir lowers 1-, 2- and 3-D ones",
                         f"operation {op.index} ({op.name})")
    else:
        n, c, h, w = xs
        o, _, kh, kw = ws
        stride, dilation = _pairs(op, "strides", 1), _pairs(op, "dilations", 1)
        pads = op.attr("pads")
        padding = (int(pads[0]), int(pads[1])) if isinstance(pads, (tuple, list)) and len(pads) >= 2 else (0, 0)
        _, _, oh, ow = op.output_shape
    dtype = lw.float_dtype() if lw.options.activations is None else lw.options.activations
    where = lw.where(op)
    dims = (n, oh, ow, o)
    out_value = Value((1, 1, n * oh * ow, o), lw.dtype(op.output))
    activation = op.attr("activation")
    fused = (str(activation),) if activation else ()
    if (kh, kw) == (1, 1) and stride == (1, 1) and padding == (0, 0) and dilation == (1, 1) and groups == 1:
        x = lw.flat_tensor(x_name, Layout.TILE, at=op)
        weight = lw.constant_form(w_name, Layout.TILE, lw.options.weight_conversion or dtype, shape=(c, o))
        inputs: tuple[int, ...] = (x, weight)
        kind = OpKind.MATMUL
        if bias is not None:
            kind = OpKind.LINEAR
            inputs = (x, weight, lw.constant_form(bias, Layout.TILE, dtype, shape=(1, o)))
        tid = lw.builder.one(kind, op.name, inputs, out_value, out=OutputRequest(dtype=out_value.dtype),
                             attrs=MatmulAttrs(), compute=lw.options.compute(), fused=fused, **where)
        lw.define_flat(op, tid, dims)
        return
    require_sliding_window_format(lw, op, "ttnn.conv2d")
    software = lw.device.software
    grids = Conv2dConfig(block_grids=software.conv_block_grids)
    attrs = Conv2dAttrs(in_channels=c, out_channels=o, batch=n, input_hw=(h, w), kernel=(kh, kw), stride=stride,
                        padding=padding, dilation=dilation, groups=groups, bias=bias is not None, config=grids)
    layout = auto_shard_layout(attrs, lw.target)
    config = replace(grids, shard_layout=layout, weights_dtype=dtype,
                     config_tensors_in_dram=software.conv_config_tensors_in_dram,
                     reallocate_halo_output=software.conv_reallocate_halo,
                     reader_indices_cb=software.reader_indices_cb)
    # level 0 passes no slice config (TTIRToTTNN.cpp), levels 1 and 2 L1_FULL (ConvRules.cpp
    # applyConvSliceConfig): tt-metal slices a DRAM input at level 0 (tt_conv_dram.py)
    slice_type = None if lw.options.opt_level == 0 else SliceType.L1_FULL
    attrs = Conv2dAttrs(c, o, n, (h, w), (kh, kw), stride, padding, dilation, groups, bias is not None, config,
                        slice_type=slice_type)
    x = lw.flat_tensor(x_name, Layout.ROW_MAJOR, at=op)
    # a grouped conv's weights are prepared dense over every input channel (tt-metal
    # prepare_conv2d_weights.cpp `prepare_conv_weights_internal`:
    # convert_conv_weight_tensor_to_grouped_layout places each group's filters among
    # zeros), as the conv rule reads them
    c_pad = round_up(c, TILE)
    weight = lw.constant_form(w_name, Layout.TILE, lw.options.weight_conversion or dtype,
                              shape=(1, 1, kh * kw * c_pad, round_up(o, TILE)))
    conv_inputs: tuple[int, ...] = (x, weight)
    if bias is not None:
        conv_inputs = (x, weight, lw.constant_form(bias, Layout.TILE, dtype, shape=(1, 1, 1, round_up(o, TILE))))
    tid = lw.builder.one(OpKind.CONV2D, op.name, conv_inputs, out_value, out=OutputRequest(dtype=out_value.dtype),
                         attrs=attrs, compute=lw.options.compute(), fused=fused, **where)
    lw.define_flat(op, tid, dims)


def _padding_1d(op: Operation) -> int:
    """A 1-D convolution's padding, the same on both sides (conv2d's padding pairs)."""
    pads = op.attr("pads")
    before, after = (int(pads[0]), int(pads[1])) if isinstance(pads, (tuple, list)) and len(pads) >= 2 else (0, 0)
    if before != after:
        raise ModelError(f"a 1-D convolution padded ({before}, {after}): the conv2d rule takes the same padding on "
                         "both sides", f"operation {op.index} ({op.name})")
    return before


def convert_conv1d(lw: Lowering, op: Operation) -> None:
    """A 1-D convolution on builds with tt-mlir's native `ttnn.conv1d` (devices/
    software.toml `conv1d_lowering`: tt-mlir ff14c6957a, #8957, 2026-07-14).

    StableHLOToTTIRPatterns.cpp `tryEmitDegenerate2dAsConv1d` takes torch-xla's 2-D
    convolution of [N, C, 1, L] back to `ttir.conv1d` of [N, L, C] (a permute to [N, L,
    C, 1] and a reshape), with no bias; TTIRToTTNN.cpp `Conv1dOpConversionPattern` gives
    `ttnn.conv1d` a `Conv2dConfig` of `config_tensors_in_dram = false` alone, no compute
    or slice config, and a result in conv2d's flattened [1, 1, N*L', O], reshaped to
    [N, L', O]; the workarounds make its input row-major and its output TILE
    (TTNNWorkaroundsPass.cpp `createConvOpOperandsWorkarounds<Conv1dOp>`), and no pass
    prepares its weights or fuses its bias or activation. tt-metal's `ttnn::conv1d`
    (ttnn/cpp/ttnn/operations/conv/conv1d/conv1d.cpp, after PR #34957 and #47927) runs
    `ttnn::conv2d` of height 1 and width L, kernel (1, K), stride (1, s), padding
    (0, 0, p, p), dilation (1, d), the slice config unset: a DRAM input takes conv2d's
    DRAM path, config tensors in L1_SMALL. Then the reshapes to [N, L', O, 1], the
    permute to [N, O, 1, L'], the model's bias as a broadcast `ttnn.add` and the squeeze
    to [N, O, L'].

    The weights arrive on the host and ttnn.conv2d prepares them on the device for the
    call; tileplan holds the prepared weight for the whole program, as it does a level-0
    conv2d's (the module docstring)."""
    x_name, w_name = op.inputs[0], op.inputs[1]
    bias = op.inputs[2] if len(op.inputs) > 2 else None
    (n, c, length), (o, _, k) = lw.shapes[x_name], lw.shapes[w_name]
    groups = op.int_attr("groups", 1)
    stride, dilation = per_dim(op, "strides", 1, 1)[0], per_dim(op, "dilations", 1, 1)[0]
    padding = _padding_1d(op)
    out_len = op.output_shape[2]
    dtype = lw.float_dtype() if lw.options.activations is None else lw.options.activations
    where = lw.where(op)
    b = lw.builder
    x = lw.tensor(x_name, at=op)
    v = lw.value(x)
    x = b.one(OpKind.RESHAPE, f"{x_name}.unsqueeze", (x,), v.with_(shape=(n, c, 1, length)),
              attrs=ReshapeAttrs((n, c, 1, length)), **where)
    x = b.one(OpKind.PERMUTE, f"{x_name}.to_nlc", (x,), v.with_(shape=(n, length, c, 1)),
              attrs=PermuteAttrs((0, 3, 1, 2)), **where)
    x = b.one(OpKind.RESHAPE, f"{x_name}.nlc", (x,), v.with_(shape=(n, length, c)),
              attrs=ReshapeAttrs((n, length, c)), **where)
    x = lw.convert(x, Layout.ROW_MAJOR, None, op, x_name)
    require_sliding_window_format(lw, op, "ttnn.conv1d")
    grids = Conv2dConfig(block_grids=lw.device.software.conv_block_grids)
    conv = Conv2dAttrs(c, o, n, (1, length), (1, k), (1, stride), (0, padding), (1, dilation), groups, False, grids)
    config = replace(grids, shard_layout=auto_shard_layout(conv, lw.target), weights_dtype=dtype,
                     config_tensors_in_dram=False, reader_indices_cb=lw.device.software.reader_indices_cb)
    conv = replace(conv, config=config, slice_type=None)
    weight = lw.constant_form(w_name, Layout.TILE, lw.options.weight_conversion or dtype,
                              shape=(1, 1, k * round_up(c, TILE), round_up(o, TILE)))
    out_dtype = lw.dtype(op.output)
    tid = b.one(OpKind.CONV2D, op.name, (x, weight), Value((1, 1, n * out_len, o), out_dtype),
                out=OutputRequest(dtype=out_dtype), attrs=conv, compute=lw.options.compute(), **where)
    v = lw.value(tid)
    for shape, label in (((n, out_len, o), "unflatten"), ((n, out_len, o, 1), "unsqueeze")):
        tid = b.one(OpKind.RESHAPE, f"{op.name}.{label}", (tid,), v.with_(shape=shape), attrs=ReshapeAttrs(shape),
                    **where)
    tid = b.one(OpKind.PERMUTE, f"{op.name}.to_ncl", (tid,), v.with_(shape=(n, o, 1, out_len)),
                attrs=PermuteAttrs((0, 2, 3, 1)), **where)
    if bias is not None:
        tid = b.one(OpKind.ADD, f"{op.name}.bias", (tid, lw.constant_form(bias, Layout.TILE, out_dtype,
                                                                          shape=(1, o, 1, 1))),
                    v.with_(shape=(n, o, 1, out_len)), out=OutputRequest(dtype=out_dtype), **where)
    tid = b.one(OpKind.RESHAPE, f"{op.name}.squeeze", (tid,), v.with_(shape=(n, o, out_len)),
                attrs=ReshapeAttrs((n, o, out_len)), **where)
    lw.define(op, tid)


def convert_conv_transpose(lw: Lowering, op: Operation) -> None:
    """A 2-D transposed convolution: `ttnn.conv_transpose2d` (see the module docstring)."""
    x_name, w_name = op.inputs[0], op.inputs[1]
    bias = op.inputs[2] if len(op.inputs) > 2 else None
    xs, ws = lw.shapes[x_name], lw.shapes[w_name]
    if len(xs) != 4 or len(ws) != 4:
        raise ModelError(f"a {len(xs) - 2}-D transposed convolution: tt-mlir lowers 2-D ones only "
                         "(ttnn.conv_transpose2d)", f"operation {op.index} ({op.name})")
    n, c, h, w = xs
    _, per_group, kh, kw = ws
    groups = op.int_attr("groups", 1)
    o = per_group * groups
    stride, dilation = _pairs(op, "strides", 1), _pairs(op, "dilations", 1)
    pads = op.attr("pads")
    quad = tuple(int(p) for p in pads) if isinstance(pads, (tuple, list)) and len(pads) == 4 else (0, 0, 0, 0)
    if quad[0] != quad[2] or quad[1] != quad[3]:
        raise ModelError(f"transposed convolution with padding {quad} (top, left, bottom, right): TTNN only supports "
                         "padding height/width attributes (TTIRToTTNN.cpp ConvTranspose2dOpConversionPattern)",
                         f"operation {op.index} ({op.name})")
    padding = (quad[0], quad[1])
    _, _, oh, ow = op.output_shape
    output_padding = tuple(out - ((i - 1) * s - 2 * p + d * (k - 1) + 1) for out, i, s, p, d, k in
                           zip((oh, ow), (h, w), stride, padding, dilation, (kh, kw)))
    dtype = lw.float_dtype() if lw.options.activations is None else lw.options.activations
    attrs = ConvTranspose2dAttrs(c, o, n, (h, w), (kh, kw), stride, padding, (output_padding[0], output_padding[1]),
                                 dilation, groups, bias is not None)
    require_sliding_window_format(lw, op, "ttnn.conv_transpose2d")
    grids = Conv2dConfig(block_grids=lw.device.software.conv_block_grids)
    as_conv = attrs.as_conv2d()
    config = replace(grids, shard_layout=auto_shard_layout(replace(as_conv, config=grids), lw.target),
                     weights_dtype=dtype, config_tensors_in_dram=True,
                     reallocate_halo_output=lw.device.software.conv_reallocate_halo,
                     reader_indices_cb=lw.device.software.reader_indices_cb)
    # tt-mlir passes no slice config at any level: tt-metal slices a DRAM input on builds
    # with conv_transpose2d_DRAM (software.toml), before them it always ran the L1 path
    dram_path = lw.device.software.conv_transpose2d_dram_path
    attrs = replace(attrs, config=config, slice_type=None if dram_path else SliceType.L1_FULL)
    x = lw.flat_tensor(x_name, Layout.ROW_MAJOR, at=op)
    weight = lw.constant_form(w_name, Layout.TILE, lw.options.weight_conversion or dtype,
                              shape=(1, 1, kh * kw * round_up(c, TILE), round_up(o, TILE)))
    inputs: tuple[int, ...] = (x, weight)
    if bias is not None:
        inputs = (x, weight, lw.constant_form(bias, Layout.TILE, dtype, shape=(1, 1, 1, round_up(o, TILE))))
    out_value = Value((1, 1, n * oh * ow, o), lw.dtype(op.output))
    tid = lw.builder.one(OpKind.CONV_TRANSPOSE2D, op.name, inputs, out_value, out=OutputRequest(dtype=out_value.dtype),
                         attrs=attrs, compute=lw.options.compute(), **lw.where(op))
    lw.define_flat(op, tid, (n, oh, ow, o))


def convert_pool(lw: Lowering, op: Operation) -> None:
    """A 2-D max or average pool: `ttnn.max_pool2d` / `ttnn.avg_pool2d` on the input
    flattened to [1, 1, N*H*W, C] (TTIRToTTNN.cpp `Pooling2dOpConversionPattern`, after
    TTIRFlattenSlidingWindow), input and output row-major bfloat16 (TTNNWorkaroundsPass
    `createPool2DOpOperandsWorkarounds`), no shard scheme (tt-metal chooses) and the
    config tensors, the halo's and the pool's, in DRAM from tt-mlir #6919 (2026-02-06,
    `config_tensors_in_dram = true`) and in L1_SMALL before it (tt-metal's default; devices/
    software.toml `pool_config_tensors_in_dram`). Padding over half the kernel becomes an
    explicit `ttnn.pad` (no rule here); ceil mode is passed through
    (`adaptor.getCeilMode()`, runtime/lib/ttnn/operations/pool/pool2d.cpp); dilation is not
    modelled by the pool rule."""
    src = op.inputs[0]
    shape = lw.shapes[src]
    if len(shape) != 4:
        raise no_rule(op, "ttnn.max_pool1d" if len(shape) == 3 else "ttnn.max_pool3d")
    n, c, h, w = shape
    kernel = _pairs(op, "kernel", 1)
    stride = _pairs(op, "strides", 1)
    pads = op.attr("pads")
    quad = tuple(int(p) for p in pads) if isinstance(pads, (tuple, list)) and len(pads) == 4 else (0, 0, 0, 0)
    if any(p > k // 2 for p, k in zip(quad, (kernel[0], kernel[1], kernel[0], kernel[1]))):
        raise no_rule(op, "ttnn.pad")
    dilated = _pairs(op, "dilations", 1) != (1, 1)
    if quad[0] != quad[2] or quad[1] != quad[3] or dilated:
        raise ModelError(f"{op.kind} with asymmetric padding {quad} or dilation: the tt-metal pool rule plans "
                         "symmetric, undilated pools only", f"operation {op.index} ({op.name})")
    kind = OpKind.MAX_POOL2D if op.kind == "maxpool" else OpKind.AVG_POOL2D
    require_sliding_window_format(lw, op, kind.value)
    attrs = Pool2dAttrs(n, (h, w), c, kernel, stride, (quad[0], quad[1]),
                        count_include_pad=bool(op.attr("count_include_pad", True)),
                        config_tensors_in_dram=lw.device.software.pool_config_tensors_in_dram,
                        ceil_mode=bool(op.attr("ceil_mode", False)),
                        reader_indices_cb=lw.device.software.reader_indices_cb)
    x = lw.convert(lw.flat_tensor(src, Layout.ROW_MAJOR, at=op), None, DataType.BFLOAT16, op, src)
    _, _, oh, ow = op.output_shape
    out = Value((1, 1, n * oh * ow, c), DataType.BFLOAT16, Layout.ROW_MAJOR)
    tid = lw.builder.one(kind, op.name, (x,), out, out=OutputRequest(dtype=DataType.BFLOAT16), attrs=attrs,
                         **lw.where(op))
    lw.define_flat(op, tid, (n, oh, ow, c))


def convert_resize(lw: Lowering, op: Operation) -> None:
    """`F.interpolate` / `nn.Upsample`, nearest or (bi)linear, as tt-xla runs it: its
    decomposition table maps every `aten.upsample_nearest*` and `upsample_*linear*` to
    python_package/tt_torch/backend/decompositions.py `upsample_nearest` /
    `upsample_linear` (since d444f5770, 2025-09-02, from tt-torch #112 / #137; under
    AOTAutograd, from 2026-07-12, `passes.py::rewrite_interpolate_to_matmul` routes
    `F.interpolate` there too): for each spatial dimension in turn, the dimension swapped
    last, a matmul by a constant [in, out] one-hot (nearest) or interpolation matrix,
    and swapped back; tt-mlir fuses none of it into `ttnn.upsample` (tt-mlir #5246, open:
    YOLO's upsample arrives as "two matmuls, three permutes and four reshapes"). So:
    `ttnn.permute` of the dimension to the last (not for the last), a reshape to [1,
    rows, in], `ttnn.matmul` by the matrix (a const-eval result of the input's type,
    shared by every resize of the same sizes), the reshape back and the permute back.
    Bicubic, nearest-exact and antialiased resizes are not in tt-xla's table (its entries
    are `upsample_nearest{1,2,3}d` and `upsample_{linear1d,bilinear2d,trilinear3d}`, not
    `_upsample_nearest_exact*` or `_upsample_bilinear2d_aa`): torch's own decompositions
    gather (torch/_decomp/decompositions.py `_upsample_nearest(..., exact=True)` indexes
    with `aten._unsafe_index`), which tt-xla's comment says tt-mlir cannot lower; refused."""
    src = op.inputs[0]
    shape = lw.shapes[src]
    mode = str(op.attr("mode", "nearest"))
    at = f"operation {op.index} ({op.name})"
    variant = "a nearest-exact" if op.attr("exact", False) else "an antialiased" if op.attr("antialias", False) else ""
    if mode not in ("nearest", "linear") or variant:
        raise ModelError(f"{variant or 'a ' + mode} resize: tt-xla decomposes only nearest and (bi/tri)linear "
                         "upsampling into matmuls (decompositions.py); torch's own decomposition gathers, which "
                         "tt-mlir does not lower", at)
    size = tuple(int(v) for v in op.ints_attr("size"))
    spatial = len(size)
    if len(shape) != spatial + 2:
        raise ModelError(f"a resize of {list(shape)} to spatial size {list(size)}: expected [N, C, *spatial]", at)
    where = lw.where(op)
    b = lw.builder
    t = lw.tensor(src, at=op)
    dtype = lw.value(t).dtype
    rank = len(shape)
    for i in range(spatial):
        cur = lw.value(t).shape
        axis = rank - spatial + i
        size_in, size_out = cur[axis], size[i]
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        swapped = axis != rank - 1
        if swapped:
            t = b.one(OpKind.PERMUTE, f"{op.name}.swap{i}", (t,), Value(tuple(cur[d] for d in perm), dtype),
                      attrs=PermuteAttrs(tuple(perm)), **where)
        moved = lw.value(t).shape
        rows = math.prod(moved[:-1])
        t = b.one(OpKind.RESHAPE, f"{op.name}.rows{i}", (t,), Value((1, rows, size_in), dtype),
                  attrs=ReshapeAttrs((1, rows, size_in)), **where)
        weight = lw.constant_form(f"upsample.{mode}.{size_in}x{size_out}", Layout.TILE, dtype,
                                  shape=(size_in, size_out))
        t = b.one(OpKind.MATMUL, f"{op.name}.matmul{i}", (t, weight), Value((1, rows, size_out), dtype),
                  attrs=MatmulAttrs(), compute=lw.options.compute(), **where)
        back = moved[:-1] + (size_out,)
        t = b.one(OpKind.RESHAPE, f"{op.name}.unrows{i}", (t,), Value(back, dtype), attrs=ReshapeAttrs(back),
                  **where)
        if swapped:
            t = b.one(OpKind.PERMUTE, f"{op.name}.unswap{i}", (t,), Value(tuple(back[d] for d in perm), dtype),
                      attrs=PermuteAttrs(tuple(perm)), **where)
    lw.define(op, lw.convert(t, None, lw.dtype(op.output), op, op.name))


CONVERTERS = {"conv": convert_conv, "resize": convert_resize, "maxpool": convert_pool, "avgpool": convert_pool,
              CONV_GRAD_INPUT: convert_conv_transpose, CONV_TRANSPOSE: convert_conv_transpose}
