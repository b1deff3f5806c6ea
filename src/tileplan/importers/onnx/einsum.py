"""ONNX's Einsum as the registry's operators, lowered as PyTorch lowers `torch.einsum`.

PyTorch's einsum (`aten/src/ATen/native/Linear.cpp`, `einsum` and `sumproduct_pair`)
and torch.export's decomposition of it reduce one or two operands to permutes,
reshapes and one batched matrix product; tileplan does the same with an ONNX Einsum,
so the product is planned as poplin plans a matmul (`kernel/convplan.py`):

1. each operand's labels that neither the other operand nor the output holds are
   summed out first (`reduce_sum`);
2. the labels both operands and the output hold are the batch, those both operands
   hold and the output does not are contracted, the rest are each operand's own;
3. the left operand is permuted to [batch, own, contracted] and reshaped to
   [batch..., M, K], the right to [batch, contracted, own] and [batch..., K, N];
   `matmul` makes [batch..., M, N] (batch sizes broadcast as ONNX's ellipsis does);
4. the result is reshaped to [batch..., own left..., own right...] and permuted to the
   output's labels.

One operand: its summed labels out, then permuted to the output's order. Three or
more operands, and a label repeated within one operand (a diagonal), are one-line
errors naming the equation.
"""

from __future__ import annotations

import math
import string
from typing import Any

from tileplan.errors import ModelError
from tileplan.importers.onnx.common import OnnxImporter, Shape, broadcast, fallback


def parse(equation: str, shapes: list[Shape]) -> tuple[list[str], str]:
    """Each operand's labels and the output's, one letter per dimension: an ellipsis
    expanded to letters no operand uses, an implicit output (no `->`) as NumPy forms
    it (the ellipsis first, then the labels used once, in alphabetical order)."""
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ModelError(f"Einsum {equation!r}: {len(terms)} operand terms for {len(shapes)} inputs")
    letters = set(text) - set(".,->")
    if not all(c in string.ascii_letters for c in letters):
        raise ModelError(f"Einsum {equation!r}: expected letters, commas, '->' and '...'")
    spare = [c for c in string.ascii_letters if c not in letters]
    ellipsis_rank = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    dots = "".join(spare[:ellipsis_rank])
    labels = []
    for written, shape in zip(terms, shapes):
        term = written
        if "..." in written:
            own = len(shape) - len(written.replace("...", ""))
            term = written.replace("...", dots[ellipsis_rank - own:] if own else "")
        if len(term) != len(shape):
            raise ModelError(f"Einsum {equation!r}: term {term!r} for an operand of rank {len(shape)}")
        if len(set(term)) != len(term):
            raise ModelError(f"Einsum {equation!r}: a label repeated within one operand (a diagonal) is not "
                             "supported")
        labels.append(term)
    if arrow:
        out = rhs.replace("...", dots)
    else:
        counts = {c: sum(t.count(c) for t in labels) for c in set("".join(labels))}
        out = dots + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in dots))
    if len(set(out)) != len(out) or not set(out) <= set("".join(labels)):
        raise ModelError(f"Einsum {equation!r}: the output's labels must be distinct and come from the operands")
    return labels, out


def map_einsum(imp: OnnxImporter, node: Any, ins: list[str], attrs: dict[str, Any],
               module: str | None) -> list[str | None]:
    equation = str(attrs["equation"])
    if len(ins) not in (1, 2):
        raise ModelError(f"Einsum {equation!r} of {len(ins)} operands: one or two are supported")
    shapes = [imp.shape(i) for i in ins]
    labels, out = parse(equation, shapes)
    fb = fallback(node)
    xs = [imp.read(i, module, "weight") for i in ins]
    sizes: dict[str, int] = {}
    for term, shape in zip(labels, shapes):
        for c, n in zip(term, shape):
            if sizes.get(c, 1) != 1 and n not in (1, sizes[c]):
                raise ModelError(f"Einsum {equation!r}: label {c!r} is {sizes[c]} in one operand and {n} in another")
            sizes[c] = max(sizes.get(c, 1), n)
    # 1. the labels only one operand holds and the output does not: summed out
    for k, term in enumerate(labels):
        others = set(out) | {c for j, t in enumerate(labels) if j != k for c in t}
        lone = [d for d, c in enumerate(term) if c not in others]
        if lone:
            xs[k] = imp.emit("reduce_sum", [xs[k]], {"axes": tuple(lone), "keepdims": False}, module, fb)
            labels[k] = "".join(c for c in term if c in others)
            if not labels[k]:
                xs[k] = imp.reshape(xs[k], (1,), module, fb)
    if len(xs) == 1:
        imp.set_shape(node.output[0], tuple(sizes[c] for c in out))
        return [_permuted(imp, xs[0], labels[0], out, module, fb)]
    (a, la), (b, lb) = zip(xs, labels)
    batch = [c for c in out if c in la and c in lb]
    contracted = [c for c in la if c in lb and c not in out]
    own_a = [c for c in la if c not in lb]
    own_b = [c for c in lb if c not in la]
    a = _permuted(imp, a, la, "".join(batch + own_a + contracted), module, fb)
    b = _permuted(imp, b, lb, "".join(batch + contracted + own_b), module, fb)
    sa, sb = imp.b.shapes[a], imp.b.shapes[b]
    nb = len(batch)
    m = math.prod(sizes[c] for c in own_a)
    k_ = math.prod(sizes[c] for c in contracted)
    n = math.prod(sizes[c] for c in own_b)
    a = imp.reshape(a, (*sa[:nb], m, k_), module, fb)
    b = imp.reshape(b, (*sb[:nb], k_, n), module, fb)
    product = imp.emit("matmul", [a, b], None, module, fb)
    dims = (*broadcast(sa[:nb], sb[:nb]), *(sizes[c] for c in own_a), *(sizes[c] for c in own_b))
    result = imp.reshape(product, dims, module, fb)
    imp.set_shape(node.output[0], tuple(sizes[c] for c in out))
    return [_permuted(imp, result, "".join(batch + own_a + own_b), out, module, fb)]


def _permuted(imp: OnnxImporter, x: str, have: str, want: str, module: str | None, fb: str) -> str:
    """`x`, whose dimensions are labelled `have`, with them in the order `want`."""
    if have == want:
        return x
    return imp.emit("transpose", [x], {"perm": tuple(have.index(c) for c in want)}, module, fb)
