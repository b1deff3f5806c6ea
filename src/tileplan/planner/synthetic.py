"""The named model `synthetic:N`: the synthetic chain (`tileplan.model.synthetic`) of
about N timeline values.

`synthetic:N` (`tileplan plan synthetic:100000`) is the chain of about N TIMELINE
values (the report's `values`, what the scale figures count), default shapes and four
sets. `config_for_timeline` converts N to graph values: it lowers a
sample chain of five blocks once per weight precision (IPU21, the default policy; a
few milliseconds) and counts the timeline values each operation of a block makes (with
F16 weights 1, 4, 2, 1, 4, 2, 2: the layernorm's result; a Gemm's result, its weight's
re-laid-out copy, its partials and one more; a bias add's copy of the bias and its
result; ...: 16 per block of 7 graph values, a ratio of 16/7 = 2.286; with F8 or F32
weights 18, the norm's and the gelu's results converted for the AMP), then takes the
whole blocks and the prefix of one more whose count is nearest N. The planned count is
then N to within 2 values (half the most one operation makes; 1 % of N from N = 200
up) whatever the machine, as the values an operation makes do not depend on the tile
count; N is at least the smallest chain's 89 values (97 with F8 weights).

Counting needs the lowering, which is why this sits above it (in the planner) and not
beside the chain's builder in `tileplan.model`.
"""

from __future__ import annotations

from functools import lru_cache

from tileplan.errors import InputError
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.lowering.program import lower_program
from tileplan.model.machine import IPU21
from tileplan.model.precision import F16, Precision
from tileplan.model.synthetic import BLOCK_OPERATIONS, DEFAULTS, SyntheticConfig, build_synthetic

#: how a synthetic chain is named as a model: `synthetic:N`, N timeline values
MODEL_PREFIX = "synthetic:"
#: the most timeline values `synthetic:N` accepts (about 8.75 M graph values; planning
#: it takes minutes and gigabytes: more is surely a typo)
MAX_TIMELINE_VALUES = 20_000_000


def is_synthetic(model: str) -> bool:
    return model.lower().startswith(MODEL_PREFIX)


def timeline_count(model: str) -> int:
    """N of `synthetic:N`; `InputError` in one line unless N is an integer in
    [the smallest chain's count, `MAX_TIMELINE_VALUES`] (digits, `_` or `,` between
    groups allowed: `synthetic:1_000_000`)."""
    text = model[len(MODEL_PREFIX):]
    digits = text.replace("_", "").replace(",", "")
    if not digits.isascii() or not digits.isdigit() or len(digits) > 12:
        raise InputError(f"synthetic:N needs N, the timeline values, as a whole number (e.g. synthetic:100000), "
                         f"found {text!r}", model)
    n = int(digits)
    least = smallest_timeline()
    if not least <= n <= MAX_TIMELINE_VALUES:
        raise InputError(f"synthetic:N: N must be in [{least}, {MAX_TIMELINE_VALUES}] timeline values, found {n}",
                         model)
    return n


def smallest_timeline() -> int:
    """Timeline values of the smallest chain (one block per parameter set), of the
    weight precision that makes the fewest (F16)."""
    declared, per_operation = timeline_per_operation(F16)
    return declared + DEFAULTS.shared * sum(per_operation)


@lru_cache(maxsize=8)
def timeline_per_operation(weights: Precision) -> tuple[int, tuple[int, ...]]:
    """(timeline values of the declared tensors, timeline values made by each operation
    of a block), counted on a lowered sample chain of `shared` + 1 blocks (the last
    block's, past every set's first use)."""
    base = DEFAULTS
    blocks = base.shared + 1
    program = build_synthetic(SyntheticConfig(1 + base.parameters + blocks * BLOCK_OPERATIONS), weights)
    lowering = lower_program(program, IPU21, policy("default"), Options())
    position = {op.origin: op.index for op in program.operations()}
    counts = [0] * len(position)
    declared = 0
    for v in lowering.values:
        if v.origin in position:
            counts[position[v.origin]] += 1
        else:
            declared += 1
    return declared, tuple(counts[-BLOCK_OPERATIONS:])


def config_for_timeline(n: int, weights: Precision = F16) -> SyntheticConfig:
    """The default chain whose plan has the number of timeline values nearest `n` (at
    least the smallest chain: one block per parameter set)."""
    declared, per_operation = timeline_per_operation(weights)
    base = DEFAULTS
    per_block = sum(per_operation)
    blocks, rest = divmod(max(0, n - declared), per_block)
    extra, made = 0, 0
    while extra < BLOCK_OPERATIONS - 1 and abs(made + per_operation[extra] - rest) < abs(made - rest):
        made += per_operation[extra]
        extra += 1
    if blocks < base.shared:
        blocks, extra = base.shared, 0
    return SyntheticConfig(1 + base.parameters + blocks * BLOCK_OPERATIONS + extra)
