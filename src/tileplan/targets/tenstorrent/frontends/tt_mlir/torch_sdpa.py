"""Attention as torch decomposes it, where tt-xla's SDPA composite does not take it.

By build (devices/software.toml `sdpa_lowering`) tt-xla hands a torch
`F.scaled_dot_product_attention` to tt-mlir either as its composite
`tenstorrent.scaled_dot_product_attention` (python_package/tt_torch/composite_ops.py,
from 45c00581f, 2026-04-15), which the frontend lowers to ttnn's SDPA (convert_nn.py
`convert_sdpa`), or as torch.export's decomposition. The composite takes an attention
only when `_check_sdpa_constraints` holds: query, key and value bfloat16, the mask absent
or bfloat16 (a boolean one too from 2026-06-29 to 06-30), no dropout. Hugging Face's
mask is boolean whenever the model is traced (transformers masking_utils.py
`_ignore_causal_mask_sdpa` keeps it under dynamo; `sdpa_mask` builds it boolean), so
its decoders' attention is torch's decomposition on every build tileplan models.

That decomposition (tt-xla backend.py: `torch.export` then `run_decompositions`;
torch/_decomp/decompositions.py `scaled_dot_product_flash_attention_for_cpu` calls
aten's math kernel, aten/src/ATen/native/transformers/attention.cpp
`_scaled_dot_product_attention_math`; traced with torch 2.13):

1. a boolean mask becomes additive in the query's type, `where(mask, 0, -inf)`
   (`convert_boolean_attn_mask`); `is_causal` without a mask makes that mask of a
   lower-triangular [Sq, Sk] of ones;
2. a bfloat16 or float16 query, key and value are cast to float32;
3. the query times sqrt(scale); with fewer key and value heads than query heads
   (`enable_gqa`) both repeated to the query's (unsqueeze, expand, clone, view: tt-mlir's
   `ttnn.repeat_interleave`, fusion.py); the key transposed, times sqrt(scale);
4. the scores (a batched matmul), plus the mask;
5. `_safe_softmax`: the softmax over the keys, and each row that is all -inf zeroed:
   `eq(scores, -inf)`, `logical_not`, `any` over the keys (keepdim), `logical_not`,
   `full_like(0)`, `where`;
6. times the value (a batched matmul), cast back to the query's type (then a permute,
   a clone and the inverse permute, which tt-mlir's permute folding cancels).

`lower_torch_sdpa` writes such an attention as those operations of the model's own
vocabulary and lowers them as the frontend lowers any model operation (convert_basic.py:
booleans held bfloat16, `any` a `ttnn.sum`, `where`'s scalar by the build's
`where_broadcast`). An additive mask made from one boolean mask is made once and read
by every layer (MLIR's CSE). One liberty: `where(not any, 0, p)` is written
`where(any, p, 0)`, the second logical_not folded (its operand is [B, H, Sq, 1]).

At levels 1 and 2 tt-mlir re-fuses the decomposition where the op model validates the
fused operation (devices/software.toml `sdpa_fusing`: TTNNFusing.cpp `SDPAFusing`, from
48cc5bd7b0, 2025-12-22, under `enableOpConstraints`; it looks through the typecasts and
the NaN select): convert_nn.py `convert_sdpa` tries that first. tt-mlir's TTIR-level
re-fusion at every level (TTIRFusing.cpp `SDPAFusingPattern`, a42f5bfe01, 2026-07-17)
is after the latest build tileplan models; the TTIR pattern of cccd1a388f (2025-12-02
to 12-21) is not modelled (what it matched of torch 2.7's form is not established).

Worked example: Llama-3.2-1B's layer-0 attention at 4,096 tokens (32 query heads, 8
key / value heads repeated by the model before the attention) holds float32 scores of
[1, 32, 4096, 4096], 2,147,483,648 B, where the composite's bfloat16 ones are half that.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tileplan.errors import ModelError
from tileplan.model.ir import Operation
from tileplan.model.precision import BOOL, F16, F32, Precision
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering
from tileplan.targets.tenstorrent.tiles import DataType
from tileplan.targets.tenstorrent.versions import AttentionMask, SdpaLowering

#: the precisions aten's math kernel computes in float32
_UPCAST = frozenset({Precision("BF16"), F16})


@dataclass
class _Emitter:
    """The operations one attention becomes (mutable while they are made)."""

    sdpa: Operation
    made: list[Operation] = field(default_factory=list)

    def emit(self, name: str, kind: str, inputs: tuple[str, ...], shape: tuple[int, ...], precision: Precision,
             attrs: Mapping[str, object] | None = None) -> str:
        self.made.append(replace(self.sdpa, kind=kind, name=name, inputs=inputs, output=name, output_shape=shape,
                                 output_precision=precision, attrs=tuple(sorted((attrs or {}).items()))))
        return name

    def step(self, tag: str, kind: str, inputs: tuple[str, ...], shape: tuple[int, ...], precision: Precision,
             attrs: Mapping[str, object] | None = None) -> str:
        return self.emit(f"{self.sdpa.name}.{tag}", kind, inputs, shape, precision, attrs)


def _additive(e: _Emitter, mask: str | None, shape: tuple[int, ...], precision: Precision,
              known: Mapping[str, object]) -> str:
    """`where(mask, 0, -inf)` in `precision`, made unless `known` (step 1); for
    `is_causal` (mask None) the mask is the constant lower triangle of `shape`."""
    if mask is None:
        mask = f"sdpa.causal_mask.{shape[0]}x{shape[1]}"
        if mask not in known:
            e.emit(mask, "fill", (), shape, BOOL, {"shape": shape, "value": 1.0})
    additive = f"{mask}.additive"
    if additive not in known:
        zero = e.emit(f"{mask}.zero", "fill", (), shape, precision, {"shape": shape, "value": 0.0})
        e.emit(additive, "where", (mask, zero), shape, precision, {"scalar": -math.inf})
    return additive


def torch_decomposition(op: Operation, shapes: Mapping[str, tuple[int, ...]], precisions: Mapping[str, Precision]
                        ) -> tuple[Operation, ...]:
    """Attention `op` as aten's math kernel computes it, in the model's operations (see
    the module docstring); an additive mask already in `shapes` is read, not made again.
    The last operation makes `op`'s own output."""
    e = _Emitter(op)
    q, k, v = op.inputs[:3]
    qs, ks, vs = shapes[q], shapes[k], shapes[v]
    origin = precisions[q]
    work = F32 if origin in _UPCAST else origin
    mask = op.inputs[3] if len(op.inputs) > 3 else None
    additive = None
    if mask is not None:
        additive = _additive(e, mask, shapes[mask], origin, shapes) if precisions[mask] == BOOL else mask
    elif op.attr("causal", False):
        additive = _additive(e, None, (qs[-2], ks[-2]), origin, shapes)
    if work is not origin:
        q = e.step("q_cast", "cast", (q,), qs, work)
        k = e.step("k_cast", "cast", (k,), ks, work)
        v = e.step("v_cast", "cast", (v,), vs, work)
    scale = op.attr("scale")
    root = math.sqrt(float(scale) if isinstance(scale, (int, float)) else 1.0 / math.sqrt(qs[-1]))
    q = e.step("q_scale", "mul", (q,), qs, work, {"scalar": root})
    if len(qs) == 4 and len(ks) == 4 and qs[1] != ks[1]:
        reps = {"dim": 1, "repeats": qs[1] // ks[1]}
        ks, vs = (ks[0], qs[1], *ks[2:]), (vs[0], qs[1], *vs[2:])
        k = e.step("k_repeat", "repeat_interleave", (k,), ks, work, reps)
        v = e.step("v_repeat", "repeat_interleave", (v,), vs, work, reps)
    kt_shape = ks[:-2] + (ks[-1], ks[-2])
    perm = tuple(range(len(ks) - 2)) + (len(ks) - 1, len(ks) - 2)
    k = e.step("k_transpose", "transpose", (k,), kt_shape, work, {"perm": perm})
    k = e.step("k_scale", "mul", (k,), kt_shape, work, {"scalar": root})
    scores = qs[:-1] + (ks[-2],)
    s = e.step("qk", "matmul", (q, k), scores, work)
    if additive is not None:
        s = e.step("mask_add", "add", (s, additive), scores, work)
    p = e.step("softmax", "softmax", (s,), scores, work, {"axis": len(scores) - 1})
    ninf = e.step("eq_ninf", "eq", (s,), scores, BOOL, {"scalar": -math.inf})
    finite = e.step("not_ninf", "not", (ninf,), scores, BOOL)
    rows = scores[:-1] + (1,)
    found = e.step("any_finite", "reduce_any", (finite,), rows, BOOL, {"axes": (len(rows) - 1,), "keepdims": True})
    p = e.step("safe_softmax", "where", (found, p), scores, work, {"scalar": 0.0})
    o = e.step("pv", "matmul", (p, v), op.output_shape, work)
    e.made.append(replace(op, kind="cast" if work is not origin else "identity", inputs=(o,), attrs=()))
    return tuple(e.made)


def takes_composite(lw: Lowering, op: Operation) -> bool:
    """Whether tt-xla's composite takes attention `op` on the build (see the module
    docstring): its query, key and value bfloat16 as the model runs (`--activations`
    included), its mask none, bfloat16 or, on the builds that catch it, boolean. An
    unknown build is refused."""
    rule = lw.device.software.sdpa_lowering
    if rule is SdpaLowering.UNKNOWN:
        raise ModelError(f"on the {lw.device.version} build tileplan knows no tt-xla torch backend (it arrived on "
                         "2025-09-02, tt-xla d444f5770), so how attention reaches tt-mlir is not known; pick a "
                         "later --tt-version", f"operation {op.index} ({op.name})")
    qkv_bf16 = all(lw.dtype(i) is DataType.BFLOAT16 for i in op.inputs[:3])
    mask = AttentionMask.NONE
    if len(op.inputs) > 3:
        name = op.inputs[3]
        mask = (AttentionMask.BOOLEAN if lw.precisions[name] == BOOL else
                AttentionMask.BFLOAT16 if lw.dtype(name) is DataType.BFLOAT16 else AttentionMask.OTHER)
    return rule.composite(qkv_bf16, mask)


def lower_torch_sdpa(lw: Lowering, op: Operation) -> None:
    """Attention `op` lowered as torch's decomposition reaches tt-mlir."""
    lw.lower_too(torch_decomposition(op, lw.shapes, lw.precisions))
