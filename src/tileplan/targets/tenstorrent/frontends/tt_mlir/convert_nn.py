"""The model's matmuls, normalisations, softmax, attention and embeddings as the TTNN
operations tt-mlir emits (lib/Conversion/TTIRToTTNN/TTIRToTTNN.cpp; the decompositions
and workarounds named per function).

- matmul -> `ttnn.matmul`; linear (fusion.py) -> `ttnn.linear` with its bias; no program
  config (tt-metal's automatic one: tt-mlir sets none at level 0, and validates the
  automatic one at levels 1 and 2); a constant weight typecast to the
  `experimental_weight_dtype` (TTNNWeightDtypeConversion: the B operand of matmul and
  linear when it traces to constant arguments); a bf16 matmul whose inner dimension
  passes 50,000 gets fp32 accumulation and packer L1 accumulation at every level
  (TTNNSetComputeKernelConfig.cpp `applyLargeInnerDimBf16MatmulConfig`).
- rmsnorm / layernorm -> `ttnn.rms_norm` / `ttnn.layer_norm`, gamma and beta as
  uploaded constants; softmax -> `ttnn.softmax`.
- sdpa: `ttnn.transformer.scaled_dot_product_attention` (S_q > 1) or its `_decode` form
  (S_q = 1: q permuted [B, H, 1, D] -> [1, B, H, D], the mask's heads materialised,
  TTIRToTTNN.cpp `ScaledDotProductAttentionOpConversionPattern::lowerToDecodeOp`).
  tt-mlir's TTNN decomposition pass (lib/Dialect/TTNN/Transforms/Decomposition/
  SDPADecompositionPattern.cpp) decomposes it unconditionally at level 0 (no op-model
  validation) and at levels 1 and 2 when validation fails (here: the rule refuses it, or
  its circular buffers pass the usable L1): repeated K/V heads for grouped queries,
  K transposed, Q K^T, times the scale, plus the mask (heads repeated) or a causal mask
  made on the device, a numerically stable softmax, times V.
- gather of rows of a constant table (an embedding) -> `ttnn.embedding` with the indices
  row-major uint32 and the table row-major bfloat16 (`createEmbeddingOpOperandsWorkarounds`),
  its [B, 1, S, D] output reshaped to [B, S, D].
- batchnorm (inference) -> `ttnn.batch_norm` at level 0 (its statistics and affine
  parameters uploaded as [1, C, 1, 1] constants); at levels 1 and 2 the decomposition
  TTIR applies (the scale and shift are constants, so const-evaluated): `ttnn.multiply`
  then `ttnn.add`, per channel.
"""

from __future__ import annotations

import math

from tileplan.errors import InputError, ModelError
from tileplan.model.ir import Operation
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, MathFidelity, OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_batch_norm import BatchNormAttrs
from tileplan.targets.tenstorrent.ops.tt_data_movement import ConcatAttrs, PermuteAttrs, ReshapeAttrs, TransposeAttrs
from tileplan.targets.tenstorrent.ops.tt_embedding import EmbeddingAttrs
from tileplan.targets.tenstorrent.ops.tt_gather import GatherAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_norm import NormAttrs
from tileplan.targets.tenstorrent.ops.tt_sdpa import SdpaAttrs
from tileplan.targets.tenstorrent.ops.tt_softmax import SoftmaxAttrs
from tileplan.targets.tenstorrent.ops.tt_tm import RepeatAttrs, RepeatInterleaveAttrs, SliceAttrs
from tileplan.targets.tenstorrent.frontends.tt_mlir.budget import usable_l1
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import reduce_attrs
from tileplan.targets.tenstorrent.tiles import TILE as TILE_SIDE
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import GatherLowering, GroupNormLowering

#: TTNNSetComputeKernelConfig.cpp `kLargeInnerDimThreshold`
LARGE_INNER_DIM = 50000


def _spec(lw: Lowering, tid: int) -> TensorSpec:
    """A tensor's spec as the lowering knows it (DRAM interleaved until placed)."""
    t = lw.builder.tensors[tid]
    if t.spec is not None:
        return t.spec
    v = lw.value(tid)
    return TensorSpec(v.shape, v.dtype, v.layout, DRAM_INTERLEAVED)


def _weight(lw: Lowering, name: str, op: Operation) -> int:
    """A matmul's B operand: a constant in the weight conversion's dtype, else as is."""
    conv = lw.options.weight_conversion
    if lw.is_constant(name) and name not in lw.tensor_of:
        return lw.constant_form(name, Layout.TILE, conv or lw.dtype(name))
    return lw.tensor(name, at=op)


def _matmul_compute(lw: Lowering, a: int, b: int, out: DataType) -> ComputeConfig | None:
    base = lw.options.compute()
    inner = lw.value(a).shape[-1]
    if inner > LARGE_INNER_DIM and out is DataType.BFLOAT16:
        cfg = base or ComputeConfig(MathFidelity.LOFI, True, False, False)
        return ComputeConfig(cfg.math_fidelity, cfg.math_approx_mode, True, True, cfg.dst_full_sync_en)
    return base


def convert_matmul(lw: Lowering, op: Operation) -> None:
    a = lw.tensor(op.inputs[0], at=op)
    b = _weight(lw, op.inputs[1], op)
    inputs: tuple[int, ...] = (a, b)
    kind = OpKind.MATMUL
    if op.kind == "linear":
        kind = OpKind.LINEAR
        inputs = (a, b, lw.constant_form(op.inputs[2], Layout.TILE))
    out = Value(op.output_shape, lw.dtype(op.output))
    activation = op.attr("activation")
    batched = len(lw.value(b).shape) > 2 and math.prod(lw.value(b).shape[:-2]) > 1
    tid = lw.builder.one(kind, op.name, inputs, out, out=OutputRequest(dtype=out.dtype),
                         attrs=MatmulAttrs(batched=batched), compute=_matmul_compute(lw, a, b, out.dtype),
                         fused=(str(activation),) if activation else (), **lw.where(op))
    lw.define(op, tid)


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
    Bicubic and antialiased modes (torch's gather-based decompositions) are refused."""
    src = op.inputs[0]
    shape = lw.shapes[src]
    mode = str(op.attr("mode", "nearest"))
    at = f"operation {op.index} ({op.name})"
    if mode not in ("nearest", "linear"):
        raise ModelError(f"a {mode} resize: tt-xla decomposes only nearest and (bi/tri)linear upsampling into "
                         "matmuls (decompositions.py); torch's own decomposition gathers, which tt-mlir does not "
                         "lower", at)
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


def convert_norm(lw: Lowering, op: Operation) -> None:
    x = lw.tensor(op.inputs[0], at=op)
    params = [lw.builder.tensors[lw.constant_form(n, Layout.TILE)].spec for n in op.inputs[1:]]
    gamma = params[0] if params else None
    beta = params[1] if len(params) > 1 else None
    kind = OpKind.RMS_NORM if op.kind == "rmsnorm" else OpKind.LAYER_NORM
    out = Value(op.output_shape, lw.dtype(op.output))
    compute = lw.options.compute() if kind is OpKind.RMS_NORM else None
    lw.define(op, lw.builder.one(kind, op.name, (x,), out, out=OutputRequest(dtype=out.dtype),
                                 attrs=NormAttrs(gamma=gamma, beta=beta), compute=compute, **lw.where(op)))


def convert_softmax(lw: Lowering, op: Operation) -> None:
    x = lw.tensor(op.inputs[0], at=op)
    out = Value(op.output_shape, lw.value(x).dtype)
    lw.define(op, lw.builder.one(OpKind.SOFTMAX, op.name, (x,), out, attrs=SoftmaxAttrs(dim=op.int_attr("axis", -1)),
                                 compute=lw.options.compute(), **lw.where(op)))


def _mask(lw: Lowering, op: Operation, dtype: DataType) -> int | None:
    """The attention mask as the fused operation reads it (as given)."""
    if len(op.inputs) < 4:
        return None
    return lw.tensor(op.inputs[3], dtype=dtype, at=op)


def _valid(lw: Lowering, kind: OpKind, inputs: tuple[int, ...], attrs: object) -> bool:
    """tt-mlir's op-model validation (lib/Dialect/TTNN/Validation/OpConstraintValidation.cpp):
    the rule accepts the inputs and its peak L1 fits the usable L1 per core."""
    specs = tuple(_spec(lw, t) for t in inputs)
    try:
        plan = plan_op(kind, OpRequest(specs, OutputRequest(), lw.target, None), attrs)
    except InputError:
        return False
    return plan.cb_peak <= usable_l1(lw.device, lw.options)


def convert_sdpa(lw: Lowering, op: Operation) -> None:
    q = lw.tensor(op.inputs[0], at=op)
    dtype = lw.value(q).dtype
    k = lw.tensor(op.inputs[1], dtype=dtype, at=op)
    v = lw.tensor(op.inputs[2], dtype=dtype, at=op)
    causal = bool(op.attr("causal", False))
    qv = lw.value(q)
    if lw.options.optimizer and len(qv.shape) == 4:
        mask = _mask(lw, op, dtype)
        if qv.shape[2] > 1 and _fused_prefill(lw, op, q, k, v, mask, causal):
            return
        if qv.shape[2] == 1 and _fused_decode(lw, op, q, k, v, mask, causal):
            return
    decompose_sdpa(lw, op, q, k, v, causal)


def _fused_prefill(lw: Lowering, op: Operation, q: int, k: int, v: int, mask: int | None, causal: bool) -> bool:
    inputs: tuple[int, ...] = (q, k, v) if mask is None else (q, k, v, mask)
    attrs = SdpaAttrs(is_causal=causal and mask is None, mask=_spec(lw, mask) if mask is not None else None)
    if not _valid(lw, OpKind.SDPA, inputs, attrs):
        return False
    out = Value(op.output_shape, lw.value(q).dtype)
    lw.define(op, lw.builder.one(OpKind.SDPA, op.name, inputs, out, attrs=attrs, **lw.where(op)))
    return True


def _fused_decode(lw: Lowering, op: Operation, q: int, k: int, v: int, mask: int | None, causal: bool) -> bool:
    b, heads, _, d = lw.value(q).shape
    attrs = SdpaAttrs(is_causal=causal and mask is None)
    qd_value = Value((1, b, heads, d), lw.value(q).dtype)
    probe = TensorSpec(qd_value.shape, qd_value.dtype, Layout.TILE, DRAM_INTERLEAVED)
    specs = (probe, _spec(lw, k), _spec(lw, v))
    try:
        plan = plan_op(OpKind.SDPA_DECODE, OpRequest(specs, OutputRequest(), lw.target, None), attrs)
    except InputError:
        return False
    if plan.cb_peak > usable_l1(lw.device, lw.options):
        return False
    where = lw.where(op)
    qd = lw.builder.one(OpKind.PERMUTE, f"{op.name}.q_permute", (q,), qd_value, attrs=PermuteAttrs((2, 0, 1, 3)),
                        **where)
    inputs: tuple[int, ...] = (qd, k, v)
    if mask is not None:
        mv = lw.value(mask)
        mshape = (mv.shape[0], mv.shape[2], mv.shape[1], mv.shape[3])
        m = lw.builder.one(OpKind.PERMUTE, f"{op.name}.mask_permute", (mask,), mv.with_(shape=mshape),
                           attrs=PermuteAttrs((0, 2, 1, 3)), **where)
        if mshape[2] == 1 and heads > 1:
            m = lw.builder.one(OpKind.REPEAT, f"{op.name}.mask_repeat", (m,),
                               mv.with_(shape=(mshape[0], 1, heads, mshape[3])), attrs=RepeatAttrs((1, 1, heads, 1)),
                               **where)
        inputs = (qd, k, v, m)
        attrs = SdpaAttrs(is_causal=False, mask=_spec(lw, m))
    out = lw.builder.one(OpKind.SDPA_DECODE, op.name, inputs, qd_value, attrs=attrs, **where)
    lw.define(op, lw.builder.one(OpKind.PERMUTE, f"{op.name}.out_permute", (out,),
                                 Value(op.output_shape, qd_value.dtype), attrs=PermuteAttrs((1, 2, 0, 3)), **where))
    return True


def decompose_sdpa(lw: Lowering, op: Operation, q: int, k: int, v: int, causal: bool) -> None:
    """SDPADecompositionPattern.cpp, step by step (see the module docstring)."""
    where = lw.where(op)
    b = lw.builder
    qv, kv = lw.value(q), lw.value(k)
    # [batch, heads, S, D], or 3-D [batch, S, D] (torch.nn.MultiheadAttention's): one head
    lead, (sq, d), sk = qv.shape[:-2], qv.shape[-2:], kv.shape[-2]
    batch, heads = qv.shape[0], (qv.shape[1] if len(qv.shape) == 4 else 1)
    kv_heads = kv.shape[1] if len(kv.shape) == 4 else 1
    dtype = qv.dtype
    if heads != kv_heads:
        rep = RepeatInterleaveAttrs(heads // kv_heads, 1)
        k = b.one(OpKind.REPEAT_INTERLEAVE, f"{op.name}.k_repeat", (k,), kv.with_(shape=(batch, heads, sk, d)),
                  attrs=rep, **where)
        v = b.one(OpKind.REPEAT_INTERLEAVE, f"{op.name}.v_repeat", (v,),
                  lw.value(v).with_(shape=(batch, heads, sk, lw.value(v).shape[3])), attrs=rep, **where)
    kt = b.one(OpKind.TRANSPOSE, f"{op.name}.k_transpose", (k,), Value((*lead, d, sk), dtype),
               attrs=TransposeAttrs(-2, -1), **where)
    scores_value = Value((*lead, sq, sk), dtype)
    compute = lw.options.compute()
    scores = b.one(OpKind.MATMUL, f"{op.name}.qk", (q, kt), scores_value, attrs=MatmulAttrs(batched=True),
                   compute=compute, **where)
    value = op.attr("scale")
    factor = float(value) if isinstance(value, (int, float)) else 1.0 / math.sqrt(d)
    # constants made on the device (FullOp, the causal mask's arange / where) are
    # const-evaluated and shared by every layer that makes the same one (CSE)
    rank = len(scores_value.shape)  # a constant of the scores' rank (shared by the layers of that rank)
    scale = lw.constant_form(f"sdpa.scale={factor:.6g}" + ("" if rank == 4 else f".rank{rank}"), Layout.TILE, dtype,
                             shape=(1,) * rank)
    scores = b.one(OpKind.MULTIPLY, f"{op.name}.scale_mul", (scores, scale), scores_value, **where)
    if len(op.inputs) > 3:
        name = op.inputs[3]
        mshape = lw.shapes[name]
        if len(mshape) == 4 and mshape[1] == 1 and heads > 1 and lw.is_constant(name) and name not in lw.tensor_of:
            # the repeat of a constant mask is const-evaluated (and shared by the layers)
            mask = lw.constant_form(f"{name}.repeat{heads}", Layout.TILE, dtype,
                                    shape=(mshape[0], heads, mshape[2], mshape[3]))
        else:
            mask = lw.tensor(name, dtype=dtype, at=op)
            mv = lw.value(mask)
            if len(mv.shape) == 4 and mv.shape[1] == 1 and heads > 1:
                mask = b.one(OpKind.REPEAT, f"{op.name}.mask_repeat", (mask,),
                             mv.with_(shape=(mv.shape[0], heads, mv.shape[2], mv.shape[3])),
                             attrs=RepeatAttrs((1, heads, 1, 1)), **where)
        scores = b.one(OpKind.ADD, f"{op.name}.mask_add", (scores, mask), scores_value, **where)
    elif causal:
        causal_mask = lw.constant_form(f"sdpa.causal_mask.{sq}x{sk}", Layout.TILE, dtype,
                                       shape=(1,) * len(lead) + (sq, sk))
        scores = b.one(OpKind.ADD, f"{op.name}.causal_add", (scores, causal_mask), scores_value, **where)
    probs = b.one(OpKind.SOFTMAX, f"{op.name}.softmax", (scores,), scores_value,
                  attrs=SoftmaxAttrs(dim=-1, numeric_stable=True), compute=compute, **where)
    out = Value(op.output_shape, dtype)
    lw.define(op, b.one(OpKind.MATMUL, f"{op.name}.pv", (probs, v), out, attrs=MatmulAttrs(batched=True),
                        compute=compute, **where))


def convert_gather(lw: Lowering, op: Operation) -> None:
    """An embedding lookup (rows of a constant 2-D table by integer indices)."""
    from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import no_rule
    table, idx = op.inputs
    tshape = lw.shapes[table]
    if op.int_attr("axis", 0) != 0 or len(tshape) != 2 or not lw.is_constant(table):
        raise no_rule(op, "ttnn.gather")
    ishape = lw.shapes[idx]
    indices = lw.tensor(idx, layout=Layout.ROW_MAJOR, dtype=DataType.UINT32, at=op)
    if len(ishape) != 2:
        flat = (1, math.prod(ishape))
        indices = lw.builder.one(OpKind.RESHAPE, f"{op.name}.indices_reshape", (indices,),
                                 lw.value(indices).with_(shape=flat), attrs=ReshapeAttrs(flat), **lw.where(op))
    embed(lw, op, indices, lw.constant_form(table, Layout.ROW_MAJOR, DataType.BFLOAT16))


def embed(lw: Lowering, op: Operation, ids: int, table: int) -> None:
    """`ttnn.embedding` of row-major uint32 `ids` [a, b] in the row-major bfloat16
    `table` [rows, d] (the embedding workarounds' types: TTNNWorkaroundsPass.cpp
    `createEmbeddingOpOperandsWorkarounds`), [a, 1, b, d] in TILE, reshaped to the model's
    result and converted to its type."""
    a, b = lw.value(ids).shape
    out4 = Value((a, 1, b, lw.value(table).shape[1]), DataType.BFLOAT16)
    emb = lw.builder.one(OpKind.EMBEDDING, op.name, (ids, table), out4, out=OutputRequest(dtype=DataType.BFLOAT16),
                         attrs=EmbeddingAttrs(Layout.TILE), **lw.where(op))
    shaped = lw.builder.one(OpKind.RESHAPE, f"{op.name}.reshape", (emb,), out4.with_(shape=op.output_shape),
                            attrs=ReshapeAttrs(op.output_shape), **lw.where(op))
    lw.define(op, lw.convert(shaped, Layout.TILE, lw.dtype(op.output), op, op.output))


def convert_gather_elements(lw: Lowering, op: Operation) -> None:
    """`torch.gather(input, dim, index)` by the build's `gather_lowering` (devices/
    software.toml):

    * `gather` (2026-04-29 on): tt-xla's `tenstorrent.gather` composite, lowered by
      tt-mlir (StableHLOLegalizeCompositePass.cpp `convertToTTIRGather`) to a typecast of
      the index to uint32 and `ttnn.gather(input, index, dim)`, both TILE (ops/tt_gather.py);
    * `embedding` (before): torch-xla's `stablehlo.gather` decomposed to `ttnn.embedding`
      (TTIRToTTIRDecomposition.cpp `GatherToEmbeddingConversionPattern`). Where the
      input's other dimensions are 1 (RoBERTa's token-type buffer at batch 1) the table is
      the input's gathered dimension as rows of one element (a const-eval permute and
      reshape of the constant input), the indices the index flattened to [1, S]
      (row-major uint32), the output bfloat16 cast back (the embedding workarounds).
      Other shapes flatten the indices through a float32 matmul ("End results might be
      incorrect"), not modelled."""
    x_name, idx = op.inputs
    xs = lw.shapes[x_name]
    rank = len(xs)
    dim = op.int_attr("axis") % rank
    where = lw.where(op)
    if lw.device.software.gather_lowering is GatherLowering.GATHER:
        x = lw.tensor(x_name, at=op)
        index = lw.tensor(idx, dtype=DataType.UINT32, at=op)
        out = Value(op.output_shape, lw.value(x).dtype)
        tid = lw.builder.one(OpKind.GATHER, op.name, (x, index), out, attrs=GatherAttrs(dim), **where)
        lw.define(op, lw.convert(tid, None, lw.dtype(op.output), op, op.output))
        return
    if any(d != 1 for i, d in enumerate(xs) if i != dim) or not lw.is_constant(x_name):
        raise ModelError(f"a gather of {list(xs)} along dimension {dim}: on builds before 2026-04-29 tt-mlir makes it "
                         "an embedding through a float32 matmul of the indices, which is not modelled (--tt-version)",
                         f"operation {op.index} ({op.name})")
    count = math.prod(lw.shapes[idx])
    indices = lw.tensor(idx, layout=Layout.ROW_MAJOR, dtype=DataType.UINT32, at=op)
    if lw.value(indices).shape != (1, count):
        indices = lw.builder.one(OpKind.RESHAPE, f"{op.name}.indices_reshape", (indices,),
                                 lw.value(indices).with_(shape=(1, count)), attrs=ReshapeAttrs((1, count)), **where)
    embed(lw, op, indices, lw.constant_form(x_name, Layout.ROW_MAJOR, DataType.BFLOAT16, shape=(xs[dim], 1)))


def convert_index(lw: Lowering, op: Operation) -> None:
    """Advanced indexing of leading dimensions (`x[torch.arange(b), ids]`, CLIP's pooled
    output) as tt-mlir decomposes torch-xla's `stablehlo.gather` to `ttnn.embedding`
    (TTIRToTTIRDecomposition.cpp `GatherToEmbeddingConversionPattern` at 78b9ce3d03;
    StableHLOGatherToEmbeddingPattern from 2026-04-03, the same for a float operand):

    * the start indices: each index tensor unsqueezed to [n, 1] and concatenated, [n, k]
      (int32; a constant one const-evaluated);
    * an indexed dimension of size 1 drops out; with one left, `sliceStartIndices` keeps
      its column ([n, 1]); with several, `flattenStartIndices` ("End results might be
      incorrect") casts them to float32 and multiplies them by the constant strides [k, 1]
      (`ttnn.matmul`, [n, 1]);
    * the table: x's indexed dimensions flattened to rows, the rest to a row's elements
      (a permute when they are not leading: refused), row-major bfloat16 as the
      embedding workarounds make the weight; the indices uint32 row-major;
    * `ttnn.embedding`, reshaped to the result, converted back."""
    x_name, *indices = op.inputs
    xs = lw.shapes[x_name]
    axes = tuple(int(a) for a in op.ints_attr("axes"))
    where = lw.where(op)
    if axes != tuple(range(len(axes))):
        raise ModelError(f"indexing dimensions {list(axes)} of {list(xs)}: leading dimensions are modelled (tt-mlir "
                         "permutes others to the front first)", f"operation {op.index} ({op.name})")
    counts = {math.prod(lw.shapes[i]) for i in indices}
    if len(counts) != 1:
        raise ModelError(f"index tensors of {sorted(counts)} elements: indices that broadcast against each other are "
                         "not modelled", f"operation {op.index} ({op.name})")
    (count,) = counts
    kept = [k for k, a in enumerate(axes) if xs[a] != 1] or [len(axes) - 1]
    b = lw.builder
    columns = []
    for k, name in enumerate(indices):
        if lw.is_constant(name) and name not in lw.tensor_of:
            columns.append(lw.constant_form(name, Layout.TILE, DataType.INT32, shape=(count, 1)))
            continue
        t = lw.tensor(name, dtype=DataType.INT32, at=op)
        columns.append(b.one(OpKind.RESHAPE, f"{op.name}.index{k}", (t,), lw.value(t).with_(shape=(count, 1)),
                             attrs=ReshapeAttrs((count, 1)), **where))
    ids = columns[0]
    if len(columns) > 1:
        ids = b.one(OpKind.CONCAT, f"{op.name}.indices", tuple(columns),
                    Value((count, len(columns)), DataType.INT32), attrs=ConcatAttrs(1), **where)
    if len(kept) == 1 and len(columns) > 1:
        (k,) = kept
        ids = b.one(OpKind.SLICE, f"{op.name}.slice_indices", (ids,), Value((count, 1), DataType.INT32),
                    attrs=SliceAttrs((0, k), (count, k + 1), (1, 1)), **where)
    elif len(kept) > 1:
        ids = lw.convert(ids, None, DataType.FLOAT32, op, f"{op.name}.indices")
        strides = lw.constant_form(f"{op.name}.strides", Layout.TILE, DataType.FLOAT32, shape=(len(columns), 1))
        ids = b.one(OpKind.MATMUL, f"{op.name}.flatten_indices", (ids, strides), Value((count, 1), DataType.FLOAT32),
                    attrs=MatmulAttrs(), **where)
    rows = math.prod(xs[a] for a in axes if xs[a] != 1) if len(kept) > 1 else xs[axes[kept[0]]]
    rest = math.prod(xs[len(axes):])
    table = lw.tensor(x_name, at=op)
    table = b.one(OpKind.RESHAPE, f"{op.name}.table", (table,), lw.value(table).with_(shape=(rows, rest)),
                  attrs=ReshapeAttrs((rows, rest)), **where)
    table = lw.convert(table, Layout.ROW_MAJOR, DataType.BFLOAT16, op, x_name)
    embed(lw, op, lw.convert(ids, Layout.ROW_MAJOR, DataType.UINT32, op, f"{op.name}.indices"), table)


def convert_batchnorm(lw: Lowering, op: Operation) -> None:
    """Level 0: `ttnn.batch_norm` on the model's [N, C, H, W] value (TTIRToTTNN.cpp
    `BatchNormInferenceOpConversionPattern`; TTIRToTTIRDecomposition.cpp
    `BatchNormInferencePattern` first reshapes the weight, bias, mean and variance to
    [1, C, 1, 1], constants const-evaluated: each one TILE tensor of C tiles). Levels 1
    and 2 (where no convolution took it, fusion.py): x * scale + shift per channel, the
    scale and shift const-evaluated ([1, C, 1, 1], or [1, 1, 1, C] on a flattened
    convolution output)."""
    if not lw.options.optimizer:
        x_name, weight, bias, mean, var = op.inputs
        if len(lw.shapes[x_name]) != 4:
            raise ModelError(f"a rank-{len(lw.shapes[x_name])} batch norm: tt-mlir reshapes it to rank 4 "
                             "(normalizeToNCHW), which tileplan does not model", f"operation {op.index} ({op.name})")
        x = lw.tensor(x_name, at=op)
        channels = lw.shapes[x_name][1]
        dtype = lw.value(x).dtype

        def stat(name: str) -> TensorSpec:
            tid = lw.constant_form(name, Layout.TILE, dtype, shape=(1, channels, 1, 1))
            spec = lw.builder.tensors[tid].spec
            assert spec is not None
            return spec

        attrs = BatchNormAttrs(stat(mean), stat(var), stat(weight), stat(bias))
        out = Value(op.output_shape, dtype)
        lw.define(op, lw.builder.one(OpKind.BATCH_NORM, op.name, (x,), out, out=OutputRequest(dtype=dtype),
                                     attrs=attrs, **lw.where(op)))
        return
    src = op.inputs[0]
    shape = lw.shapes[src]
    if src in lw.flat:
        x = lw.flat_tensor(src, at=op)
        per_channel: tuple[int, ...] = (1, 1, 1, shape[1])
    else:
        x = lw.tensor(src, at=op)
        per_channel = (1, shape[1]) + (1,) * (len(shape) - 2)
    dtype = lw.value(x).dtype
    scale = lw.constant_form(f"{op.name}.scale", Layout.TILE, dtype, shape=per_channel)
    shift = lw.constant_form(f"{op.name}.shift", Layout.TILE, dtype, shape=per_channel)
    out = lw.value(x)
    y = lw.builder.one(OpKind.MULTIPLY, f"{op.name}.scale_mul", (x, scale), out, **lw.where(op))
    tid = lw.builder.one(OpKind.ADD, f"{op.name}.shift_add", (y, shift), out, **lw.where(op))
    if src in lw.flat:
        lw.define_flat(op, tid, lw.flat[src])
    else:
        lw.define(op, tid)


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


def _group_norm_by_torch(lw: Lowering, op: Operation, groups: int) -> None:
    """tt-xla's decomposition of `aten.native_group_norm` (builds from 2025-09-02, and
    from 2026-03-30 to 05-25 while the composite was off): torch/_refs/__init__.py
    `native_group_norm` off the CPU computes in float32 (`_maybe_convert_to_dtype` of
    the input), views it as [N, G, C/G, H*W] (a ttnn.reshape: the last two dimensions
    change), takes `var_mean` over [2, 3] (torch-xla's `BuildVar` / `BuildMean`: a
    scaled reduce-add each, `ttnn.mean`, the duplicate mean and centring merged by tt-mlir's
    CSE), subtracts, squares, means, adds epsilon (a const-evaluated scalar), `ttnn.rsqrt`,
    multiplies, views back, times the weight and plus the bias ([1, C, 1, 1] float32
    constants) and casts to the model's type. The centred [N, G, C/G, H*W] tensors pad C/G
    to a tile: tt-xla #4755's 3,774,873,600 B float32 subtract of a Z-Image VAE norm over
    1280 x 720 is [1, 32, 4 -> 32, 921,600]."""
    src = op.inputs[0]
    shape = lw.shapes[src]
    n, c = shape[0], shape[1]
    spatial = math.prod(shape[2:])
    where = lw.where(op)
    b = lw.builder
    x = lw.tensor(src, dtype=DataType.FLOAT32, at=op)
    grouped = Value((n, groups, c // groups, spatial), DataType.FLOAT32)
    stats = Value((n, groups, 1, 1), DataType.FLOAT32)
    mean_attrs = reduce_attrs(lw, (2, 3), True)
    compute = lw.options.compute()
    t = b.one(OpKind.RESHAPE, f"{op.name}.group_view", (x,), grouped, attrs=ReshapeAttrs(grouped.shape), **where)
    mean = b.one(OpKind.MEAN, f"{op.name}.mean", (t,), stats, attrs=mean_attrs, compute=compute, **where)
    centered = b.one(OpKind.SUBTRACT, f"{op.name}.center", (t, mean), grouped, **where)
    squared = b.one(OpKind.MULTIPLY, f"{op.name}.square", (centered, centered), grouped, **where)
    var = b.one(OpKind.MEAN, f"{op.name}.variance", (squared,), stats, attrs=mean_attrs, compute=compute, **where)
    epsilon = op.attr("eps", 1e-5)
    assert isinstance(epsilon, float), epsilon
    eps = lw.constant_form(f"group_norm.eps={epsilon:g}", Layout.TILE, DataType.FLOAT32, shape=(1, 1, 1, 1))
    t = b.one(OpKind.ADD, f"{op.name}.add_eps", (var, eps), stats, **where)
    t = b.one(OpKind.RSQRT, f"{op.name}.rsqrt", (t,), stats, **where)
    t = b.one(OpKind.MULTIPLY, f"{op.name}.normalize", (centered, t), grouped, **where)
    result = Value(shape, DataType.FLOAT32)
    t = b.one(OpKind.RESHAPE, f"{op.name}.view", (t,), result, attrs=ReshapeAttrs(shape), **where)
    per_channel = (1, c) + (1,) * (len(shape) - 2)
    for param, kind in zip(op.inputs[1:], (OpKind.MULTIPLY, OpKind.ADD)):
        affine = lw.constant_form(param, Layout.TILE, DataType.FLOAT32, shape=per_channel)
        t = b.one(kind, f"{op.name}.{'weight_mul' if kind is OpKind.MULTIPLY else 'bias_add'}", (t, affine),
                  result, **where)
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
    mean_attrs = reduce_attrs(lw, (1, 3), True)
    compute = lw.options.compute()
    t = b.one(OpKind.RESHAPE, f"{op.name}.group_reshape", (x,), grouped, attrs=ReshapeAttrs(grouped.shape), **where)
    mean = b.one(OpKind.MEAN, f"{op.name}.mean", (t,), stats, attrs=mean_attrs, compute=compute, **where)
    centered = b.one(OpKind.SUBTRACT, f"{op.name}.center", (t, mean), grouped, **where)
    squared = b.one(OpKind.MULTIPLY, f"{op.name}.square", (centered, centered), grouped, **where)
    var = b.one(OpKind.MEAN, f"{op.name}.variance", (squared,), stats, attrs=mean_attrs, compute=compute, **where)
    epsilon = op.attr("eps", 1e-5)
    assert isinstance(epsilon, float), epsilon
    eps = lw.constant_form(f"group_norm.eps={epsilon:g}.{n}x{groups}", Layout.TILE, dtype,
                           shape=stats.shape)
    t = b.one(OpKind.ADD, f"{op.name}.add_eps", (var, eps), stats, **where)
    t = b.one(OpKind.RSQRT, f"{op.name}.rsqrt", (t,), stats, **where)
    t = b.one(OpKind.MULTIPLY, f"{op.name}.normalize", (centered, t), grouped, **where)
    result = Value((n, 1, spatial, c), dtype)
    t = b.one(OpKind.RESHAPE, f"{op.name}.unreshape", (t,), result, attrs=ReshapeAttrs(result.shape), **where)
    for param, kind in zip(params, (OpKind.MULTIPLY, OpKind.ADD)):
        affine = lw.constant_form(param, Layout.TILE, None, shape=(1, 1, 1, c))
        t = b.one(kind, f"{op.name}.{'weight_mul' if kind is OpKind.MULTIPLY else 'bias_add'}", (t, affine),
                  result, **where)
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


CONVERTERS = {"matmul": convert_matmul, "linear": convert_matmul, "rmsnorm": convert_norm,
              "layernorm": convert_norm, "softmax": convert_softmax, "sdpa": convert_sdpa,
              "gather": convert_gather, "gather_elements": convert_gather_elements, "index": convert_index,
              "batchnorm": convert_batchnorm, "groupnorm": convert_group_norm, "resize": convert_resize}
