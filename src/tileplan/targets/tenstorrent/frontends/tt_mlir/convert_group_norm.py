"""torch.nn.GroupNorm as tt-xla and tt-mlir run it on the device, by build
(`group_norm_lowering`, devices/software.toml): tt-xla's torch decomposition
(`_group_norm_by_torch`) or its `tenstorrent.group_norm` composite through tt-mlir's
TTNN decomposition (`convert_group_norm`), and each build's refusals in tt-mlir's words
(`_group_norm_refusal`).
"""

from __future__ import annotations

import math

from tileplan.errors import ModelError
from tileplan.model.ir import Operation
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import reduce_attrs
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import PermuteAttrs, ReshapeAttrs
from tileplan.targets.tenstorrent.tiles import TILE as TILE_SIDE
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import GroupNormLowering


def _group_norm_refusal(lw: Lowering, op: Operation, rank: int, n: int, c: int, s: int) -> str | None:
    """Why the build cannot run this GroupNorm as tileplan models it (None: it can)."""
    rule = lw.device.software.group_norm_lowering
    version = lw.device.version
    if rule is GroupNormLowering.UNKNOWN:
        return (f"tileplan knows no tt-xla lowering of GroupNorm on the {version} build (tt-xla's torch backend "
                "is from 2025-09-02)")
    if rank == 3 and not rule.takes_rank3:
        return (f"tt-mlir on the {version} build rejects it: 'ttir.group_norm' op input must be a 4D tensor, got "
                "rank 3 (rank-3 inputs are reshaped from tt-mlir d7345b6def, builds from 2026-05-26)")
    if rule.checks_height and (n * s) % TILE_SIDE:
        return (f"tt-mlir on the {version} build rejects it: 'ttnn.group_norm' op flattened height must be "
                f"tile-aligned, got {n * s} (TTNNOps.cpp GroupNormOp::verify; dropped by tt-mlir bb71bc74a0, in "
                "tt-xla from 2026-07-23)")
    if rule.checks_channels and c % TILE_SIDE:
        return (f"tt-mlir on the {version} build rejects it: 'ttnn.group_norm' op channel dimension (last dim) must "
                f"be divisible by 32, got C={c} (dropped by tt-mlir 67b4364aff, in tt-xla from 2026-06-10)")
    if rule is GroupNormLowering.FUSED or (lw.options.optimizer and s % TILE_SIDE == 0):
        when = ("on this build" if rule is GroupNormLowering.FUSED
                else "at --opt-level 1 and 2 when H*W is a multiple of 32 and its op model validates it")
        return (f"tt-mlir keeps ttnn.group_norm fused {when}, and tileplan has no rule for ttnn.group_norm; "
                "--opt-level 0 on builds from 2026-05-26 decomposes it")
    return None


def _normalized(lw: Lowering, op: Operation, t: int, grouped: Value, stats: Value, dims: tuple[int, int],
                eps_name: str, eps_shape: tuple[int, ...], own_centring: bool) -> int:
    """The grouped tensor `t` normalised: `ttnn.mean` over `dims` (keepdim), the
    centring, (`own_centring`: the variance's own centring, a second subtract), the
    square, its mean, plus epsilon (const-evaluated constant `eps_name`), `ttnn.rsqrt`,
    times the centred tensor."""
    where = lw.where(op)
    b = lw.builder
    mean_attrs = reduce_attrs(lw, dims, True)
    compute = lw.options.compute()
    mean = b.one(OpKind.MEAN, f"{op.name}.mean", (t,), stats, attrs=mean_attrs, compute=compute, **where)
    centered = b.one(OpKind.SUBTRACT, f"{op.name}.center", (t, mean), grouped, **where)
    diff = (b.one(OpKind.SUBTRACT, f"{op.name}.var_center", (t, mean), grouped, **where) if own_centring
            else centered)
    squared = b.one(OpKind.MULTIPLY, f"{op.name}.square", (diff, diff), grouped, **where)
    var = b.one(OpKind.MEAN, f"{op.name}.variance", (squared,), stats, attrs=mean_attrs, compute=compute, **where)
    eps = lw.constant_form(eps_name, Layout.TILE, stats.dtype, shape=eps_shape)
    t = b.one(OpKind.ADD, f"{op.name}.add_eps", (var, eps), stats, **where)
    t = b.one(OpKind.RSQRT, f"{op.name}.rsqrt", (t,), stats, **where)
    return b.one(OpKind.MULTIPLY, f"{op.name}.normalize", (centered, t), grouped, **where)


def _epsilon(op: Operation) -> float:
    epsilon = op.attr("eps", 1e-5)
    assert isinstance(epsilon, float), epsilon
    return epsilon


def _affine(lw: Lowering, op: Operation, t: int, result: Value, shape: tuple[int, ...],
            dtype: DataType | None) -> int:
    """`t` times the weight and plus the bias (those present), each the const-evaluated
    constant in `shape` and `dtype` (None: its own)."""
    for param, kind in zip(op.inputs[1:], (OpKind.MULTIPLY, OpKind.ADD)):
        affine = lw.constant_form(param, Layout.TILE, dtype, shape=shape)
        t = lw.builder.one(kind, f"{op.name}.{'weight_mul' if kind is OpKind.MULTIPLY else 'bias_add'}",
                           (t, affine), result, **lw.where(op))
    return t


def _group_norm_by_torch(lw: Lowering, op: Operation, groups: int) -> None:
    """tt-xla's decomposition of `aten.native_group_norm` (builds from 2025-09-02, and
    from 2026-03-30 to 05-25 while the composite was off): torch/_refs/__init__.py
    `native_group_norm` off the CPU computes in float32 (`_maybe_convert_to_dtype` of
    the input), views it as [N, G, C/G, H*W] (a ttnn.reshape: the last two dimensions
    change), takes `var_mean` over [2, 3] (torch-xla's `BuildVar` / `BuildMean`: a
    scaled reduce-add each, `ttnn.mean`, the two means one after tt-mlir's CSE), and
    returns (x - mean) * rsqrt(var + eps), viewed back, times the weight and plus the
    bias ([1, C, 1, 1] float32 constants), cast to the model's type. The output's
    centring comes first and the variance's own centring after it, two subtracts: the
    lazy tensor graph is lowered from the output down, its multiply's first operand
    first. That order is read off tt-xla #4755's published failure (a Z-Image VAE norm
    over 1280 x 720 in bfloat16): a 3,774,873,600 B float32 subtract ([1, 32, 4 -> 32,
    921,600], C/G padded to a tile) refused with 692,396,736 B a bank allocated, two
    such tensors (314,572,800 B each) and 63 MB besides; no IR was generated here."""
    src = op.inputs[0]
    shape = lw.shapes[src]
    n, c = shape[0], shape[1]
    spatial = math.prod(shape[2:])
    where = lw.where(op)
    b = lw.builder
    x = lw.tensor(src, dtype=DataType.FLOAT32, at=op)
    grouped = Value((n, groups, c // groups, spatial), DataType.FLOAT32)
    stats = Value((n, groups, 1, 1), DataType.FLOAT32)
    t = b.one(OpKind.RESHAPE, f"{op.name}.group_view", (x,), grouped, attrs=ReshapeAttrs(grouped.shape), **where)
    t = _normalized(lw, op, t, grouped, stats, (2, 3), f"group_norm.eps={_epsilon(op):g}", (1, 1, 1, 1), True)
    result = Value(shape, DataType.FLOAT32)
    t = b.one(OpKind.RESHAPE, f"{op.name}.view", (t,), result, attrs=ReshapeAttrs(shape), **where)
    t = _affine(lw, op, t, result, (1, c) + (1,) * (len(shape) - 2), DataType.FLOAT32)
    lw.define(op, lw.convert(t, None, lw.dtype(op.output), op, op.name))


def convert_group_norm(lw: Lowering, op: Operation) -> None:
    """`torch.nn.GroupNorm` on [N, C, *spatial] as tt-xla and tt-mlir run it, by build
    (`group_norm_lowering`, devices/software.toml): torch's decomposition
    (`_group_norm_by_torch`, from 2025-09-02 and again from 2026-03-30 to 05-25), or
    tt-xla's composite `tenstorrent.group_norm` (python_package/tt_torch/composite_ops.py;
    2026-03-26 to 03-29, and from 2026-05-26). For the composite tt-mlir's TTIRToTTNN.cpp
    `GroupNormOpConversionPattern` permutes the channels last and reshapes to [N, 1,
    H*W, C] for `ttnn.group_norm`, and from 2026-05-26 (tt-mlir 20bb3e3cfe) its TTNN
    decomposition pass (lib/Dialect/TTNN/Transforms/Decomposition/
    GroupNormDecompositionRewritePattern.cpp) splits that at level 0, and at every level
    when H*W is not whole tiles (from 2026-07-23): a reshape to [N, S, G, C/G] (folded
    into the previous one: `ReshapeOp::fold`), `ttnn.mean` over [1, 3] (keepdim),
    subtract, square, `ttnn.mean` again, plus epsilon (a `ttnn.full` [N, 1, G, 1],
    const-evaluated and shared), `ttnn.rsqrt`, multiply, a reshape to [N, 1, S, C], then
    times the weight and plus the bias (each reshaped to [1, 1, 1, C], const-evaluated),
    and back to the model's shape. A rank-3 [N, C, L] input is first reshaped to [N, C,
    L, 1] (tt-mlir d7345b6def). A convolution's flattened NHWC output is read as it is
    and the result stays flattened. The fused `ttnn.group_norm` (levels 1 and 2 on
    whole tiles; every level from 2026-03-26 to 03-29) has no rule, and the verifier's
    refusals of a build are its errors (`_group_norm_refusal`)."""
    src = op.inputs[0]
    shape = lw.shapes[src]
    rank = len(shape)
    at = f"operation {op.index} ({op.name})"
    if rank not in (3, 4):
        raise ModelError(f"a rank-{rank} GroupNorm: tileplan models rank 3 and 4 ([N, C, L], [N, C, H, W])", at)
    n, c = shape[0], shape[1]
    spatial = math.prod(shape[2:])
    groups = op.int_attr("groups")
    if groups < 1 or c % groups:
        raise ModelError(f"GroupNorm of {c} channels in {groups} groups: the groups must divide the channels", at)
    params = op.inputs[1:]
    if any(lw.shapes[p] != (c,) for p in params):
        raise ModelError(f"GroupNorm parameters of shapes {[list(lw.shapes[p]) for p in params]}: tt-mlir takes "
                         f"one weight and one bias of [{c}]", at)
    if lw.device.software.group_norm_lowering is GroupNormLowering.TORCH:
        _group_norm_by_torch(lw, op, groups)
        return
    refusal = _group_norm_refusal(lw, op, rank, n, c, spatial)
    if refusal is not None:
        raise ModelError(refusal, at)
    where = lw.where(op)
    b = lw.builder
    flat = lw.flat.get(src)
    if flat is not None:
        x = lw.flat_tensor(src, at=op)
    else:
        x = lw.tensor(src, at=op)
        if rank == 3:
            x = b.one(OpKind.RESHAPE, f"{op.name}.unsqueeze", (x,), lw.value(x).with_(shape=(n, c, spatial, 1)),
                      attrs=ReshapeAttrs((n, c, spatial, 1)), **where)
        x = b.one(OpKind.PERMUTE, f"{op.name}.to_channels_last", (x,),
                  lw.value(x).with_(shape=(n, *lw.value(x).shape[2:], c)), attrs=PermuteAttrs((0, 2, 3, 1)), **where)
    dtype = lw.value(x).dtype
    cpg = c // groups
    grouped = Value((n, spatial, groups, cpg), dtype)
    stats = Value((n, 1, groups, 1), dtype)
    t = b.one(OpKind.RESHAPE, f"{op.name}.group_reshape", (x,), grouped, attrs=ReshapeAttrs(grouped.shape), **where)
    t = _normalized(lw, op, t, grouped, stats, (1, 3), f"group_norm.eps={_epsilon(op):g}.{n}x{groups}", stats.shape,
                    False)
    result = Value((n, 1, spatial, c), dtype)
    t = b.one(OpKind.RESHAPE, f"{op.name}.unreshape", (t,), result, attrs=ReshapeAttrs(result.shape), **where)
    t = _affine(lw, op, t, result, (1, 1, 1, c), None)
    if flat is not None:
        if n > 1:
            t = b.one(OpKind.RESHAPE, f"{op.name}.flatten", (t,), result.with_(shape=(1, 1, n * spatial, c)),
                      attrs=ReshapeAttrs((1, 1, n * spatial, c)), **where)
        lw.define_flat(op, t, flat)
        return
    nhwc = (n, *shape[2:], c) if rank == 4 else (n, spatial, 1, c)
    t = b.one(OpKind.RESHAPE, f"{op.name}.unflatten", (t,), result.with_(shape=nhwc), attrs=ReshapeAttrs(nhwc),
              **where)
    t = b.one(OpKind.PERMUTE, f"{op.name}.to_channels_first", (t,),
              result.with_(shape=(n, c, *nhwc[1:3])), attrs=PermuteAttrs((0, 3, 1, 2)), **where)
    if rank == 3:
        t = b.one(OpKind.RESHAPE, f"{op.name}.squeeze", (t,), result.with_(shape=shape), attrs=ReshapeAttrs(shape),
                  **where)
    lw.define(op, lw.convert(t, None, lw.dtype(op.output), op, op.name))


CONVERTERS = {"groupnorm": convert_group_norm}
