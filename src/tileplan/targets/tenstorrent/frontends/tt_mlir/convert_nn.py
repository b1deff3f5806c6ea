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
- sdpa where tt-xla's composite takes it (torch_sdpa.py; otherwise torch's own
  decomposition, in float32 for a bf16 model, `lower_torch_sdpa`):
  `ttnn.transformer.scaled_dot_product_attention` (S_q > 1) or its `_decode` form
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
from tileplan.targets.tenstorrent.frontends.tt_mlir.torch_sdpa import lower_torch_sdpa, takes_composite
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
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import GatherLowering, SdpaFusing

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


def convert_norm(lw: Lowering, op: Operation) -> None:
    x = lw.tensor(op.inputs[0], at=op)
    params = [lw.builder.tensors[lw.constant_form(n, Layout.TILE)].spec for n in op.inputs[1:]]
    gamma = params[0] if params else None
    beta = params[1] if len(params) > 1 else None
    kind = OpKind.RMS_NORM if op.kind == "rmsnorm" else OpKind.LAYER_NORM
    out = Value(op.output_shape, lw.dtype(op.output))
    compute = lw.options.compute() if kind is OpKind.RMS_NORM else None
    lw.define(op, lw.builder.one(kind, op.name, (x,), out, out=OutputRequest(dtype=out.dtype),
                                 attrs=NormAttrs(gamma=gamma, beta=beta,
                                                 large_tensor=lw.device.software.norm_large_tensor),
                                 compute=compute, **lw.where(op)))


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
    """An attention as the build hands it to tt-mlir (torch_sdpa.py): tt-xla's composite,
    fused where the op model validates it at levels 1 and 2 and else decomposed by
    tt-mlir (`decompose_sdpa`); or torch's decomposition, fused back at levels 1 and 2
    on the builds whose TTNN fusing does (`sdpa_fusing`) where the op model validates it,
    else run as it is (`lower_torch_sdpa`)."""
    software = lw.device.software
    composite = takes_composite(lw, op)
    fuses = lw.options.optimizer and (composite or software.sdpa_fusing is SdpaFusing.OPTIMIZER)
    if not (fuses or composite):
        lower_torch_sdpa(lw, op)
        return
    q = lw.tensor(op.inputs[0], at=op)
    dtype = lw.value(q).dtype
    k = lw.tensor(op.inputs[1], dtype=dtype, at=op)
    v = lw.tensor(op.inputs[2], dtype=dtype, at=op)
    causal = bool(op.attr("causal", False))
    qv = lw.value(q)
    if fuses and len(qv.shape) == 4:
        mask = _mask(lw, op, dtype)
        if qv.shape[2] > 1 and _fused_prefill(lw, op, q, k, v, mask, causal):
            return
        if qv.shape[2] == 1 and _fused_decode(lw, op, q, k, v, mask, causal):
            return
    if composite:
        decompose_sdpa(lw, op, q, k, v, causal)
    else:
        lower_torch_sdpa(lw, op)


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


CONVERTERS = {"matmul": convert_matmul, "linear": convert_matmul, "rmsnorm": convert_norm,
              "layernorm": convert_norm, "softmax": convert_softmax, "sdpa": convert_sdpa,
              "gather": convert_gather, "gather_elements": convert_gather_elements, "index": convert_index,
              "batchnorm": convert_batchnorm}
