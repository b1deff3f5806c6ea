"""A synthetic program of a requested size, to measure the planner at scale, built
through the importers' graph builder (`tileplan.importers.graph`).

The program is a long chain of MLP blocks over a modest activation [1, rows, hidden]:

    n = layernorm(h, scale, bias)          [1, rows, hidden]
    u = matmul(n, up) + up_bias            [1, rows, mlp]
    g = gelu(u)
    d = matmul(g, down) + down_bias        [1, rows, hidden]
    h = h + d                              (the residual)

seven operations per block. Its size is counted in graph values: the input, the
parameters and one result per operation (`graph_values`); with the default policy the
planner's timeline has one value per graph value with F16 weights (a matmul is one
step reading its operands where they rest, its partials scratch), a few more with F8
or F32 weights (the norm's and the gelu's results converted for the AMP)
(benchmarks/plan_time.py prints both counts).

Why the live sets stay bounded: parameters are live for the whole program, so
parameters of their own per block would all be live at every step and the live sets
(and the report, which lists them per step) would grow with the program. The blocks
therefore share `shared` parameter sets, block j reading set j mod `shared`: every
step holds those 6 x `shared` parameters, the block's input, and the few activations
of the current operation. Every other
result dies within its block, a block's output within the next. So the peaks do not
grow with the program; only the exchange code does (one row per exchanging step, see
`tileplan.planner.exchange`), and a long enough chain no longer fits for that alone.

Sizing: with `values` graph values and `shared` sets, the chain has `values` - 1 -
6 x `shared` operations: whole blocks, then the first operations of one more block
(any prefix of a block is a valid chain). `values` must leave at least one whole
block per set, so that every parameter is read.

As a named model, `synthetic:N` (`tileplan plan synthetic:100000`) is the chain of
about N TIMELINE values (the report's `values`, what the scale figures count), default
shapes and four sets. `config_for_timeline` converts N to graph values: it lowers a
sample chain of five blocks once per weight precision (IPU21, the default policy; a
few milliseconds) and counts the timeline values each operation of a block makes (one
each with F16 weights; two for the norm and the gelu with F8 or F32 weights), then
takes the whole blocks and the prefix of one more whose count is nearest N. The
planned count is then N to within half the most one operation makes, whatever the
machine, as the values an operation makes do not depend on the tile count; N is at
least the smallest chain's (`smallest_timeline`, 53 values with F16 weights).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from tileplan.errors import InputError
from tileplan.importers.graph import Graph, GraphBuilder
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.lowering.program import lower_program
from tileplan.model.info import ProgramInfo, SyntheticSize
from tileplan.model.ir import Program
from tileplan.model.machine import IPU21
from tileplan.model.precision import F16, Precision
from tileplan.runtime import without_gc

#: parameters of one set, in declaration order
SET_PARAMETERS = ("norm.scale", "norm.bias", "mlp.up.weight", "mlp.up.bias", "mlp.down.weight", "mlp.down.bias")
BLOCK_OPERATIONS = 7
#: how a synthetic chain is named as a model: `synthetic:N`, N timeline values
MODEL_PREFIX = "synthetic:"
#: the most timeline values `synthetic:N` accepts (about 8.75 M graph values; planning
#: it takes minutes and gigabytes: more is surely a typo)
MAX_TIMELINE_VALUES = 20_000_000


@dataclass(frozen=True, slots=True)
class SyntheticConfig:
    """The chain's size and shapes. Invariants: every size >= 1; `values` >= 1 +
    `shared` x (6 + 7), one whole block per parameter set."""

    values: int
    rows: int = 64
    hidden: int = 128
    mlp: int = 256
    shared: int = 4

    def __post_init__(self) -> None:
        for key in ("values", "rows", "hidden", "mlp", "shared"):
            if getattr(self, key) < 1:
                raise InputError(f"synthetic program: {key} must be >= 1, found {getattr(self, key)}")
        if self.values < self.minimum_values:
            raise InputError(f"synthetic program: {self.values} values cannot hold one block per parameter set; "
                             f"{self.shared} sets need at least {self.minimum_values}")

    @property
    def parameters(self) -> int:
        return len(SET_PARAMETERS) * self.shared

    @property
    def operations(self) -> int:
        """Operations of the chain: every graph value but the input and the parameters."""
        return self.values - 1 - self.parameters

    @property
    def minimum_values(self) -> int:
        return 1 + self.shared * (len(SET_PARAMETERS) + BLOCK_OPERATIONS)


#: the default sizes (the named model's); `values` is a placeholder
DEFAULTS = SyntheticConfig(1000)


def graph_values(program: Program) -> int:
    """The input, the parameters and one result per operation."""
    return len(program.tensors) + len(program.operations())


def synthetic_graph(cfg: SyntheticConfig) -> Graph:
    """The chain of `cfg` (see the module docstring) as a graph: exactly `cfg.values`
    graph values, deterministic, the output the last operation's result."""
    b = GraphBuilder("synthetic")  # every tensor is declared first: origins as declared
    rows, hidden, mlp = cfg.rows, cfg.hidden, cfg.mlp
    h = b.input("synthetic.input", (1, rows, hidden), "float")
    for k in range(cfg.shared):
        _declare_set(b, f"synthetic.shared{k}", hidden, mlp)
    x = h
    blocks, rest = divmod(cfg.operations, BLOCK_OPERATIONS)
    # each set's parameters as each operation of a block reads them (None: the residual)
    sets = [tuple(None if q is None else tuple(f"synthetic.shared{k}.{s}" for s in q) for _, _, q, _ in _BLOCK)
            for k in range(cfg.shared)]
    for block in range(blocks + (rest > 0)):
        x = _block(b, block, x, sets[block % cfg.shared], BLOCK_OPERATIONS if block < blocks else rest)
    b.output(x)
    return b.build()


@without_gc
def build_synthetic(cfg: SyntheticConfig, weights: Precision = F16) -> Program:
    """The chain of `cfg` as a program, its weights in `weights` (vectors F16); a
    million operations' objects built with the cyclic collector paused."""
    program = synthetic_graph(cfg).to_program(
        weights, info=ProgramInfo(synthetic=SyntheticSize(cfg.values, cfg.rows, cfg.hidden, cfg.mlp, cfg.shared)),
        repeat=False)
    assert graph_values(program) == cfg.values, (graph_values(program), cfg.values)
    return program


def _declare_set(b: GraphBuilder, prefix: str, hidden: int, mlp: int) -> None:
    """One parameter set: the norm's vectors, then each projection's weight and bias
    (the weights take the program's weight precision: `Graph.to_program`)."""
    shapes = {"norm.scale": (1, 1, hidden), "norm.bias": (1, 1, hidden), "mlp.up.weight": (hidden, mlp),
              "mlp.up.bias": (1, 1, mlp), "mlp.down.weight": (mlp, hidden), "mlp.down.bias": (1, 1, hidden)}
    for suffix in SET_PARAMETERS:
        b.parameter(f"{prefix}.{suffix}", shapes[suffix], "float")


def _block(b: GraphBuilder, block: int, x: str, parameters: tuple[tuple[str, ...] | None, ...], steps: int) -> str:
    """The first `steps` operations of block `block` on the previous block's output `x`
    (see the module docstring), each named under `synthetic.layer<block>` and reading
    `parameters` (those of set `block` mod `shared`, by operation); the residual adds
    the block's input. Returns the last operation's result (`name.out`)."""
    at = f"synthetic.layer{block}."
    h = x  # the block's input, read again by its residual
    op = b.op
    for (kind, suffix, _, attrs), read in zip(_BLOCK[:steps], parameters):
        name = at + suffix
        x = op(kind, (h, x) if read is None else (x, *read), attrs, name=name, output=name + ".out", layer=block)
    return x


_NORM = {"eps": 1e-6}
_GELU = {"approximate": "tanh"}
#: a block's operations: (kind, name under the block, parameters of the set it reads
#: after the running value, or None for the residual (the block's input and the
#: running value), attributes)
_BLOCK: tuple[tuple[str, str, tuple[str, ...] | None, Mapping[str, object] | None], ...] = (
    ("layernorm", "norm", ("norm.scale", "norm.bias"), _NORM),
    ("matmul", "mlp.up", ("mlp.up.weight",), None),
    ("add", "mlp.up.bias_add", ("mlp.up.bias",), None),
    ("gelu", "mlp.gelu", (), _GELU),
    ("matmul", "mlp.down", ("mlp.down.weight",), None),
    ("add", "mlp.down.bias_add", ("mlp.down.bias",), None),
    ("add", "residual", None, None),
)
assert len(_BLOCK) == BLOCK_OPERATIONS


# The named model: `synthetic:N`, about N timeline values ------------------------------

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
