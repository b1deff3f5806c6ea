"""The fusions tt-xla and tt-mlir apply before TTNN operations are chosen, as rewrites of
the model's operations (each takes operations and returns operations).

- `fuse_rms_norm`: tt-xla's FX fusion (python_package/tt_torch/fusion_providers.py
  `RMSNormFusionProvider`) rewrites the decomposed RMSNorm of Hugging Face models
  (`x * rsqrt(mean(x^2, -1) + eps)`, then the weight) into `torch.nn.functional.rms_norm`,
  which tt-xla's composite lowers to `ttnn.rms_norm`: here one `rmsnorm` operation. By
  build (devices/software.toml `rms_norm_fusion`): no such pass before 2026-01-15, and
  from 2026-01-26 to 03-25 weights wider than 3,968 are skipped. A norm not fused is
  torch's decomposition as the model computes it, in float32 (Hugging Face's
  `hidden_states.to(torch.float32)`; aten's rms_norm likewise): the input cast to
  float32, the square, mean, epsilon, rsqrt and product in float32, cast back, then the
  weight (the importers drop the casts; this puts them back). A norm with no weight, which
  tt-xla's pattern does not match, follows the same rule (a weightless torch `nn.RMSNorm`
  reaches tt-mlir through the `F.rms_norm` composite instead; the importers cannot tell
  the two apart).
- `fuse_linear`: a matmul by a constant 2-D weight whose only reader adds a constant bias
  of one row is one `ttnn.linear` with its bias (tt-mlir TTIRToTTNN.cpp
  `LinearOpConversionPattern`; a bias with a non-unit dimension besides the features keeps
  matmul + add, LinearOpRewritePattern.cpp).
- `cse_views`: reshapes of one value to one shape are one (MLIR's CSE), so the Q, K and V
  projections of a layer read the same tensor; so are constants made from nothing of one
  value, shape and type (the importers' `fill` of a known value: every layer's
  `masked_fill` scalar, torch's `scalar_tensor`, is one constant in tt-mlir, as its
  `stablehlo.constant`s are after CSE).
- `fuse_repeat_interleave`: reshape (a unit dimension inserted) -> expand (that dimension)
  -> reshape (merged into the dimension before) is one `ttnn.repeat_interleave`, as
  Hugging Face's `repeat_kv` of grouped-query attention becomes in tt-mlir
  (TTIRFusing.cpp `ReshapeBroadcastReshapeToRepeatPattern`).
- `fuse_silu`: `x * sigmoid(x)` is one SiLU (TTIRFusing.cpp `SiluFusionPattern`).
- `fuse_shared_lhs`: matmuls (or linears) of one input by constant 2-D weights of one
  inner dimension are one matmul by the weights concatenated along the output features
  (a const-eval result), each original a slice of its output. Which ones depends on the
  build (devices/software.toml `matmul_fusion`): none before tt-mlir ca6e330be3
  (2025-11-14); from it to efcfa6c6c4 (2026-04-01) the attention's Q, K and V only
  (TTIRFusing.cpp `SplitQueryKeyValueAndSplitHeadsUpdatePattern`: three projections of
  one input, each reshaped then permuted to heads; that pattern's
  `split_query_key_value_and_split_heads` is here the three slices and their reshapes:
  the same bytes, split in two steps); since, any such group of three or more
  (`SharedLHSMatmulFusion`, `FusionCandidates::isValid`: `ops.size() >= 3`, so Q, K and
  V fuse and an MLP's gate and up projections do not), from tt-mlir 688a8a811a
  (2026-06-30) of at most 262,144 output features (`kMaxFusedOutputDim`; the build's
  `shared_lhs_max_width`).
- `fuse_conv_transpose_bias`: a transposed convolution (the importers' `conv_grad_input`)
  whose only reader adds a constant bias of one value a channel ([1, O, 1, 1]) takes the
  bias (TTIRFusing.cpp `ConvAddBias<ConvTranspose2dOp>`, every level): one
  `conv_transpose` operation of three inputs. (A conv2d's bias is the importers'
  already.)
- `fold_batch_norms` (levels 1 and 2: `enable-fusing-conv2d-with-multiply-pattern` follows
  the optimizer, TTNNPipelines.h): a batch norm whose input is a convolution or a
  transposed one read by nothing else is folded into it (TTIRFusing.cpp
  `BatchNormDecomposition` then `ConvWithMultiply<Conv2dOp>` / `<ConvTranspose2dOp>`: the
  scale into the weights, the shift into the bias, both const-evaluated); at level 0 it
  stays `ttnn.batch_norm`.
- `fuse_activations`: a matmul or linear whose only reader is a sigmoid, SiLU or GELU
  takes it as its fused activation; a conv2d likewise a ReLU, ReLU6, SiLU or sigmoid
  (lib/Dialect/TTNN/Transforms/TTNNFusing.cpp `TTNNMatmulAndLinearWithActivation`,
  `TTNNConv2dWithActivation`; applied at every optimization level).

A view (a reshape the importer put between a matmul and its bias or activation, where
tt-mlir's matmul is N-D) may sit between the two: the fused operation is followed by it.

Worked example: `reshape -> matmul(x, fc.weight) -> reshape -> add(fc.bias) -> gelu`
becomes `reshape -> linear(x, fc.weight, fc.bias, activation=gelu) -> reshape`.
"""

from __future__ import annotations

from dataclasses import replace

from tileplan.model.ir import Operation
from tileplan.model.precision import F32
from tileplan.targets.tenstorrent.frontends.tt_mlir.inverse_ops import erase_inverse_reshapes
from tileplan.targets.tenstorrent.frontends.tt_mlir.inverse_ops import readers as _readers
from tileplan.targets.tenstorrent.versions import EraseInverseOps, MatmulFusion, RmsNormFusion, Software

#: the activations a matmul or linear fuses (TTNNFusing.cpp)
MATMUL_ACTIVATIONS = frozenset({"sigmoid", "silu", "gelu"})
#: the activations a conv2d fuses (TTNNFusing.cpp `TTNNConv2dWithActivation`)
CONV_ACTIVATIONS = frozenset({"relu", "silu", "sigmoid"})
#: kinds of the fused operations this module makes (not registry operators)
LINEAR = "linear"
CONV_TRANSPOSE = "conv_transpose"
#: the importers' transposed convolution (the data gradient of the one it transposes)
CONV_GRAD_INPUT = "conv_grad_input"


def _sole(readers: dict[str, list[int]], name: str) -> int | None:
    r = readers.get(name, [])
    return r[0] if len(r) == 1 and r[0] >= 0 else None


def _scalar(op: Operation) -> float | None:
    value = op.attr("scalar")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def fuse_rms_norm(ops: tuple[Operation, ...], outputs: tuple[str, ...], constant: set[str],
                  shapes: dict[str, tuple[int, ...]], rule: RmsNormFusion = RmsNormFusion.ALL
                  ) -> tuple[Operation, ...]:
    """See the module docstring: pow(x, 2) | mul(x, x) -> reduce_mean(-1, keepdims) ->
    add(eps) -> rsqrt -> mul(x, r) -> mul(weight, .) becomes rmsnorm(x, weight) where
    the build's `rule` fuses a weight of that width, else the same chain in float32
    between two casts (`_in_float32`)."""
    work = list(ops)
    readers = _readers(work, outputs)
    drop: set[int] = set()
    decomposed: dict[int, tuple[int, ...]] = {}
    for k, sq in enumerate(work):
        if not ((sq.kind == "pow" and _scalar(sq) == 2.0 and len(sq.inputs) == 1)
                or (sq.kind == "mul" and len(sq.inputs) == 2 and sq.inputs[0] == sq.inputs[1])):
            continue
        x = sq.inputs[0]
        chain = [k]
        mean = _sole(readers, sq.output)
        last_axis = ((-1,), (len(sq.output_shape) - 1,))
        axes = work[mean].attr("axes") if mean is not None else None
        if mean is None or work[mean].kind != "reduce_mean" or not isinstance(axes, (tuple, list)) \
                or tuple(axes) not in last_axis:
            continue
        chain.append(mean)
        add = _sole(readers, work[mean].output)
        if add is None or work[add].kind != "add" or _scalar(work[add]) is None:
            continue
        chain.append(add)
        rs = _sole(readers, work[add].output)
        if rs is None or work[rs].kind != "rsqrt":
            continue
        chain.append(rs)
        norm = _sole(readers, work[rs].output)
        if norm is None or work[norm].kind != "mul" or set(work[norm].inputs) != {x, work[rs].output}:
            continue
        chain.append(norm)
        scale = _sole(readers, work[norm].output)
        weight: str | None = None
        last = norm
        if scale is not None and work[scale].kind == "mul" and len(work[scale].inputs) == 2:
            other = [i for i in work[scale].inputs if i != work[norm].output]
            if len(other) == 1 and other[0] in constant and len(shapes.get(other[0], ())) <= 1:
                weight = other[0]
                last = scale
        if not rule.fuses(shapes.get(x, (0,))[-1]):
            decomposed[k] = tuple(chain)
            continue
        eps = _scalar(work[add]) or 0.0
        inputs = (x,) if weight is None else (x, weight)
        fused = Operation(work[last].origin, work[last].index, "rmsnorm", work[last].name.rsplit(".", 1)[0]
                          + ".rms_norm", inputs, work[last].output, work[last].output_shape,
                          work[last].output_precision, (("eps", eps),), work[last].module, work[last].layer,
                          work[last].role)
        work[last] = fused
        drop.update(c for c in chain if c != last)
    kept = tuple(op for k, op in enumerate(work) if k not in drop)
    if not decomposed:
        return kept
    return _in_float32(kept, tuple(tuple(work[c].output for c in chain) for chain in decomposed.values()))


def _in_float32(ops: tuple[Operation, ...], chains: tuple[tuple[str, ...], ...]) -> tuple[Operation, ...]:
    """The unfused norms in float32. Each chain names its operations' outputs in order:
    the square, mean, add, rsqrt and the product by x. Before the square, where x is not
    float32, x cast to float32 (`NAME.float32`); the chain's operations read that cast and
    make float32; the product makes `NAME.float32` and a cast back to x's type takes the
    product's own name, so its readers (the weight's product) read what they read before."""
    made = {op.output: op for op in ops}
    chain_of = {out: chain for chain in chains for out in chain}
    out: list[Operation] = []
    for op in ops:
        chain = chain_of.get(op.output)
        if chain is None:
            out.append(op)
            continue
        square = made[chain[0]]
        x = square.inputs[0]
        have = made[x].output_precision if x in made else square.output_precision  # a program input: the chain's
        x32 = x if have == F32 else f"{x}.float32"
        prefix = square.name.rsplit(".", 1)[0]
        if op is square and x32 != x:  # the square is elementwise: x's shape is its own
            out.append(replace(op, kind="cast", name=prefix + ".to_float32", inputs=(x,), output=x32,
                               output_precision=F32, attrs=()))
        wide = replace(op, inputs=tuple(x32 if i == x else i for i in op.inputs), output_precision=F32)
        if op.output != chain[-1] or x32 == x:
            out.append(wide)
            continue
        out.append(replace(wide, output=op.output + ".float32"))
        out.append(replace(op, kind="cast", name=prefix + ".to_" + have.name.lower(), inputs=(op.output + ".float32",),
                           output_precision=have, attrs=()))
    return tuple(out)


def _through_view(work: list[Operation], readers: dict[str, list[int]], name: str) -> tuple[int | None, int | None]:
    """The sole reader of `name`, looking through one single-reader reshape: (the view's
    index or None, the reader's index or None)."""
    r = _sole(readers, name)
    if r is not None and work[r].kind == "reshape":
        return r, _sole(readers, work[r].output)
    return None, r


def fuse_linear(ops: tuple[Operation, ...], outputs: tuple[str, ...], constant: set[str],
                shapes: dict[str, tuple[int, ...]]) -> tuple[Operation, ...]:
    """See the module docstring."""
    work = list(ops)
    readers = _readers(work, outputs)
    drop: set[int] = set()
    for k, mm in enumerate(work):
        if mm.kind != "matmul" or len(mm.inputs) != 2 or mm.inputs[1] not in constant:
            continue
        if len(shapes.get(mm.inputs[1], ())) != 2 or k in drop:
            continue
        view, add = _through_view(work, readers, mm.output)
        if add is None or work[add].kind != "add" or len(work[add].inputs) != 2:
            continue
        src = mm.output if view is None else work[view].output
        bias = [i for i in work[add].inputs if i != src]
        features = mm.output_shape[-1]
        if len(bias) != 1 or bias[0] not in constant:
            continue
        bshape = shapes.get(bias[0], ())
        if not bshape or bshape[-1] != features or any(d != 1 for d in bshape[:-1]):
            continue
        linear = replace(mm, kind=LINEAR, inputs=(*mm.inputs, bias[0]), name=mm.name.rsplit(".", 1)[0] + ".linear")
        work[k] = linear
        if view is None:
            work[k] = replace(linear, output=work[add].output)
        else:
            work[view] = replace(work[view], output=work[add].output)
        drop.add(add)
    return tuple(op for k, op in enumerate(work) if k not in drop)


def fuse_activations(ops: tuple[Operation, ...], outputs: tuple[str, ...]) -> tuple[Operation, ...]:
    """See the module docstring."""
    work = list(ops)
    readers = _readers(work, outputs)
    drop: set[int] = set()
    for k, op in enumerate(work):
        if op.kind in ("matmul", LINEAR):
            allowed = MATMUL_ACTIVATIONS
        elif op.kind == "conv":
            allowed = CONV_ACTIVATIONS
        else:
            continue
        if op.attr("activation") is not None:
            continue
        view, act = _through_view(work, readers, op.output)
        if act is None or work[act].kind not in allowed or act in drop:
            continue
        if op.kind == "conv" and view is not None:
            continue
        a = work[act]
        if a.kind == "gelu" and a.attr("approximate", "none") not in ("none", None):
            continue
        fused = replace(op, attrs=tuple(sorted((*op.attrs, ("activation", a.kind)))))
        if view is None:
            work[k] = replace(fused, output=a.output, output_shape=a.output_shape)
        else:
            work[k] = fused
            work[view] = replace(work[view], output=a.output)
        drop.add(act)
    return tuple(op for k, op in enumerate(work) if k not in drop)


def _cse_key(op: Operation) -> tuple[object, ...] | None:
    """What makes two operations one under MLIR's CSE, for the kinds merged here."""
    if op.kind == "reshape" and len(op.inputs) == 1:
        return ("reshape", op.inputs[0], op.output_shape)
    if op.kind == "fill" and not op.inputs and op.attr("value") is not None:
        return ("fill", op.output_shape, op.attr("value"), op.output_precision)
    return None


def cse_views(ops: tuple[Operation, ...], outputs: tuple[str, ...]) -> tuple[Operation, ...]:
    """See the module docstring (a program output keeps its own name)."""
    seen: dict[tuple[object, ...], str] = {}
    renamed: dict[str, str] = {}
    out: list[Operation] = []
    for original in ops:
        op = replace(original, inputs=tuple(renamed.get(i, i) for i in original.inputs)) if renamed else original
        key = _cse_key(op) if op.output not in outputs else None
        if key is not None:
            if key in seen:
                renamed[op.output] = seen[key]
                continue
            seen[key] = op.output
        out.append(op)
    return tuple(out)


def fuse_repeat_interleave(ops: tuple[Operation, ...], outputs: tuple[str, ...],
                           shapes: dict[str, tuple[int, ...]]) -> tuple[Operation, ...]:
    """See the module docstring."""
    work = list(ops)
    readers = _readers(work, outputs)
    by_output = {op.output: k for k, op in enumerate(work)}
    drop: set[int] = set()
    for k, last in enumerate(work):
        if last.kind != "reshape" or len(last.inputs) != 1 or last.inputs[0] not in by_output:
            continue
        e = by_output[last.inputs[0]]
        expand = work[e]
        if expand.kind != "expand" or _sole(readers, expand.output) != k or expand.inputs[0] not in by_output:
            continue
        f = by_output[expand.inputs[0]]
        first = work[f]
        if first.kind != "reshape" or _sole(readers, first.output) != e:
            continue
        src_shape, mid, out = shapes.get(first.inputs[0]), first.output_shape, last.output_shape
        if src_shape is None or len(mid) != len(src_shape) + 1 or len(out) != len(src_shape):
            continue
        grown = [i for i, (a, b) in enumerate(zip(mid, expand.output_shape)) if a != b]
        if len(grown) != 1 or mid[grown[0]] != 1 or grown[0] == 0:
            continue
        at, reps = grown[0], expand.output_shape[grown[0]]
        if tuple(mid[:at] + mid[at + 1:]) != src_shape:
            continue
        changed = [i for i, (a, b) in enumerate(zip(src_shape, out)) if a != b]
        if changed != [at - 1] or out[at - 1] != src_shape[at - 1] * reps:
            continue
        work[k] = replace(last, kind="repeat_interleave", inputs=first.inputs,
                          attrs=(("dim", at - 1), ("repeats", reps)))
        drop.update((e, f))
    return tuple(op for k, op in enumerate(work) if k not in drop)


def fuse_silu(ops: tuple[Operation, ...], outputs: tuple[str, ...]) -> tuple[Operation, ...]:
    """See the module docstring."""
    work = list(ops)
    readers = _readers(work, outputs)
    drop: set[int] = set()
    for k, op in enumerate(work):
        if op.kind != "sigmoid" or len(op.inputs) != 1:
            continue
        mul = _sole(readers, op.output)
        if mul is None or work[mul].kind != "mul" or set(work[mul].inputs) != {op.inputs[0], op.output}:
            continue
        work[mul] = replace(work[mul], kind="silu", inputs=(op.inputs[0],), attrs=())
        drop.add(k)
    return tuple(op for k, op in enumerate(work) if k not in drop)


#: a fused weight: the names concatenated and its shape (context.py declares it)
FusedWeight = tuple[tuple[str, ...], tuple[int, ...]]


#: what a projection the attention fusion takes is read by: a reshape to heads, then a
#: permute (TTIRFusing.cpp `SplitQueryKeyValueAndSplitHeadsUpdatePattern`)
HEADS_RESHAPE, HEADS_PERMUTE = "reshape", frozenset({"permute", "transpose"})


def _to_heads(ops: tuple[Operation, ...], readers: dict[str, list[int]], k: int) -> bool:
    """Whether operation `k`'s output is reshaped (once, or in a chain of reshapes that
    MLIR's canonicalizer folds into one), then permuted, each read by nothing else."""
    r = _sole(readers, ops[k].output)
    if r is None or ops[r].kind != HEADS_RESHAPE:
        return False
    while r is not None and ops[r].kind == HEADS_RESHAPE:
        r = _sole(readers, ops[r].output)
    return r is not None and ops[r].kind in HEADS_PERMUTE


def fuse_shared_lhs(ops: tuple[Operation, ...], constant: set[str], shapes: dict[str, tuple[int, ...]],
                    fusion: MatmulFusion = MatmulFusion.SHARED_LHS, outputs: tuple[str, ...] = (),
                    max_width: int = 0) -> tuple[tuple[Operation, ...], dict[str, FusedWeight]]:
    """See the module docstring. Returns the operations and the fused weights (and
    biases) made, by name. `fusion`: which groups the build fuses; `outputs`: the
    program's (read by the attention rule); `max_width`: the widest fused output (0: no
    cap)."""
    if fusion is MatmulFusion.NONE:
        return ops, {}
    # only the attention rule reads the readers: no walk over the operations otherwise
    readers = _readers(list(ops), outputs) if fusion is MatmulFusion.ATTENTION else {}
    groups: dict[tuple[str, str, int], list[int]] = {}
    for k, op in enumerate(ops):
        if op.kind not in ("matmul", LINEAR) or op.inputs[1] not in constant:
            continue
        w = shapes.get(op.inputs[1], ())
        if len(w) != 2:
            continue
        groups.setdefault((op.kind, op.inputs[0], w[0]), []).append(k)
    fused: dict[str, FusedWeight] = {}
    replaced: dict[int, list[Operation]] = {}
    drop: set[int] = set()
    for (kind, lhs, inner), members in groups.items():
        if len(members) < 3:
            continue
        if fusion is MatmulFusion.ATTENTION and (len(members) != 3 or
                                                 not all(_to_heads(ops, readers, k) for k in members)):
            continue
        first = ops[members[0]]
        widths = [shapes[ops[k].inputs[1]][1] for k in members]
        total = sum(widths)
        if max_width and total > max_width:
            continue
        weights = tuple(ops[k].inputs[1] for k in members)
        wname = "+".join(weights)
        fused[wname] = (weights, (inner, total))
        inputs: tuple[str, ...] = (lhs, wname)
        if kind == LINEAR:
            biases = tuple(ops[k].inputs[2] for k in members)
            bname = "+".join(biases)
            fused[bname] = (biases, (total,))
            inputs = (lhs, wname, bname)
        out_name = f"{first.output}+fused"
        shape = first.output_shape[:-1] + (total,)
        head = replace(first, kind=kind, name=first.name.rsplit(".", 2)[0] + ".fused_" + kind, inputs=inputs,
                       output=out_name, output_shape=shape, attrs=tuple(a for a in first.attrs if a[0] != "activation"))
        slices = []
        start = 0
        for k, width in zip(members, widths):
            op = ops[k]
            slices.append(Operation(op.origin, op.index, "slice", op.name.rsplit(".", 1)[0] + ".slice", (out_name,),
                                    op.output, op.output_shape, op.output_precision,
                                    (("axis", -1), ("end", start + width), ("start", start), ("step", 1)), op.module,
                                    op.layer, op.role))
            start += width
        at = min(members)
        replaced[at] = [head, *slices]
        drop.update(m for m in members if m != at)
    out: list[Operation] = []
    for k, op in enumerate(ops):
        if k in replaced:
            out.extend(replaced[k])
        elif k not in drop:
            out.append(op)
    return tuple(out), fused


def fuse_conv_transpose_bias(ops: tuple[Operation, ...], outputs: tuple[str, ...], constant: set[str],
                             shapes: dict[str, tuple[int, ...]]) -> tuple[Operation, ...]:
    """See the module docstring."""
    work = list(ops)
    readers = _readers(work, outputs)
    drop: set[int] = set()
    for k, conv in enumerate(work):
        if conv.kind != CONV_GRAD_INPUT:
            continue
        add = _sole(readers, conv.output)
        if add is None or work[add].kind != "add" or len(work[add].inputs) != 2:
            continue
        bias = [i for i in work[add].inputs if i != conv.output]
        channels = conv.output_shape[1]
        if len(bias) != 1 or bias[0] not in constant or \
                shapes.get(bias[0], ()) != (1, channels, *(1 for _ in conv.output_shape[2:])):
            continue
        work[k] = replace(conv, kind=CONV_TRANSPOSE, inputs=(*conv.inputs, bias[0]), output=work[add].output)
        drop.add(add)
    return tuple(op for k, op in enumerate(work) if k not in drop)


def fold_batch_norms(ops: tuple[Operation, ...], outputs: tuple[str, ...], shapes: dict[str, tuple[int, ...]]
                     ) -> tuple[tuple[Operation, ...], dict[str, FusedWeight]]:
    """See the module docstring. Returns the operations and the folded weights and biases
    made, by name (a transposed convolution's output channels are its weight's second
    dimension times the groups)."""
    work = list(ops)
    readers = _readers(work, outputs)
    drop: set[int] = set()
    made: dict[str, FusedWeight] = {}
    for k, conv in enumerate(work):
        if conv.kind not in ("conv", CONV_GRAD_INPUT, CONV_TRANSPOSE):
            continue
        bn = _sole(readers, conv.output)
        if bn is None or work[bn].kind != "batchnorm":
            continue
        norm = work[bn]
        w = shapes[conv.inputs[1]]
        channels = w[0] if conv.kind == "conv" else w[1] * conv.int_attr("groups", 1)
        weight = f"{conv.inputs[1]}*{norm.name}"
        made[weight] = ((conv.inputs[1], *norm.inputs[1:]), w)
        bias = f"{conv.inputs[2] if len(conv.inputs) > 2 else conv.name + '.bias'}+{norm.name}"
        made[bias] = (tuple(norm.inputs[1:]), (channels,))
        kind = "conv" if conv.kind == "conv" else CONV_TRANSPOSE
        work[k] = replace(conv, kind=kind, inputs=(conv.inputs[0], weight, bias), output=norm.output)
        drop.add(bn)
    return tuple(op for k, op in enumerate(work) if k not in drop), made


def fuse(ops: tuple[Operation, ...], outputs: tuple[str, ...], constant: set[str],
         shapes: dict[str, tuple[int, ...]], software: Software, optimizer: bool = False
         ) -> tuple[tuple[Operation, ...], dict[str, FusedWeight]]:
    """Every fusion, in the order tt-xla then tt-mlir applies them; also the constants
    the fusions made (concatenated weights, folded batch norms). `software`: the build's
    knobs (`matmul_fusion` and `shared_lhs_max_width` for `fuse_shared_lhs`,
    `rms_norm_fusion` for `fuse_rms_norm`, `erase_inverse_ops` for inverse_ops.py
    `erase_inverse_reshapes`, after TTIRFusing and before the TTNN activation fusion);
    `optimizer`: levels 1 and 2."""
    ops = fuse_rms_norm(ops, outputs, constant, shapes, software.rms_norm_fusion)
    ops = cse_views(ops, outputs)
    ops = fuse_linear(ops, outputs, constant, shapes)
    ops = fuse_conv_transpose_bias(ops, outputs, constant, shapes)
    ops = fuse_silu(ops, outputs)
    ops = fuse_repeat_interleave(ops, outputs, shapes)
    ops, weights = fuse_shared_lhs(ops, constant, shapes, software.matmul_fusion, outputs,
                                   software.shared_lhs_max_width)
    if optimizer:
        ops, folded = fold_batch_norms(ops, outputs, shapes)
        weights = {**weights, **folded}
    if software.erase_inverse_ops is EraseInverseOps.ALL:
        ops = erase_inverse_reshapes(ops, outputs, constant, shapes)
    return fuse_activations(ops, outputs), weights
