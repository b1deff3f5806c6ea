"""A synthetic program of a requested size, to measure the planner at scale, built
directly as a program (`build_synthetic`; the shapes from the operator registry's
rules), equal to the same chain built through the importers' graph builder
(`tests/test_synthetic.py`), which costs a third of a million-value plan.

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
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.lowering.program import lower_program
from tileplan.model.info import ProgramInfo, SyntheticSize
from tileplan.model.ir import Operation, Program, Tensor
from tileplan.model.machine import IPU21
from tileplan.model.precision import F16, Precision
from tileplan.model.role import Role
from tileplan.ops.base import infer_shape
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


@without_gc
def build_synthetic(cfg: SyntheticConfig, weights: Precision = F16) -> Program:
    """The chain of `cfg` (see the module docstring) as a program: exactly `cfg.values`
    graph values, deterministic, the output the last operation's result; the matmuls'
    weights in `weights`, every other tensor F16. Built directly, a million operations'
    objects with the cyclic collector paused; `tests/test_synthetic.py` holds it equal
    to the same chain built through the importers' graph builder."""
    rows, hidden, mlp = cfg.rows, cfg.hidden, cfg.mlp
    shapes = {"norm.scale": (1, 1, hidden), "norm.bias": (1, 1, hidden), "mlp.up.weight": (hidden, mlp),
              "mlp.up.bias": (1, 1, mlp), "mlp.down.weight": (mlp, hidden), "mlp.down.bias": (1, 1, hidden)}
    tensors = [Tensor(0, INPUT, (1, rows, hidden), F16, Role.INPUT)]
    for k in range(cfg.shared):
        for suffix in SET_PARAMETERS:
            tensors.append(Tensor(len(tensors), f"synthetic.shared{k}.{suffix}", shapes[suffix],
                                  weights if suffix in MATMUL_WEIGHTS else F16, Role.WEIGHT))
    block_shapes = _block_shapes(tuple(t.shape for t in tensors[:1 + len(SET_PARAMETERS)]))
    # each set's parameters as each operation of a block reads them (None: the residual)
    sets = [tuple(None if q is None else tuple(f"synthetic.shared{k}.{s}" for s in q) for _, _, q, _ in _BLOCK)
            for k in range(cfg.shared)]
    attrs = [_attrs(a) for _, _, _, a in _BLOCK]
    base = len(tensors)
    ops: list[Operation] = []
    append = ops.append
    blocks, rest = divmod(cfg.operations, BLOCK_OPERATIONS)
    x = INPUT
    for block in range(blocks + (rest > 0)):
        at = f"synthetic.layer{block}."
        h = x  # the block's input, read again by its residual
        steps = BLOCK_OPERATIONS if block < blocks else rest
        for (kind, suffix, _, _), read, shape, items in zip(_BLOCK[:steps], sets[block % cfg.shared], block_shapes,
                                                             attrs):
            name = at + suffix
            index = len(ops)
            output = name + ".out"
            append(Operation(base + index, index, kind, name, (h, x) if read is None else (x, *read), output, shape,
                             F16, items, None, block))
            x = output
    info = ProgramInfo(synthetic=SyntheticSize(cfg.values, cfg.rows, cfg.hidden, cfg.mlp, cfg.shared),
                       weights=weights)
    program = Program("synthetic", tuple(tensors), tuple(ops), (x,), info)
    assert graph_values(program) == cfg.values, (graph_values(program), cfg.values)
    return program


#: the chain's input
INPUT = "synthetic.input"
#: the parameters a matmul reads as its weights: they take the program's weight precision
MATMUL_WEIGHTS = frozenset({"mlp.up.weight", "mlp.down.weight"})


def _attrs(attrs: Mapping[str, object] | None) -> tuple[tuple[str, object], ...]:
    """An operation's attributes as the IR holds them: sorted (key, value) pairs."""
    return tuple(sorted(attrs.items())) if attrs else ()


@lru_cache(maxsize=8)
def _block_shapes(declared: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    """The output shape of each operation of a block, from the operator registry's
    shape rules (`tileplan.ops.infer_shape`), given the input's and one set's shapes
    (`declared`, in declaration order). The same for every block: a block's output has
    its input's shape."""
    shape_of = dict(zip(("x", *SET_PARAMETERS), declared))
    out: list[tuple[int, ...]] = []
    for kind, suffix, read, attrs in _BLOCK:
        ins = [shape_of["h"], shape_of["x"]] if read is None else [shape_of["x"], *(shape_of[r] for r in read)]
        probe = Operation(0, 0, kind, suffix, tuple(f"i{j}" for j in range(len(ins))), suffix, (1,), F16,
                          _attrs(attrs))
        if not out:
            shape_of["h"] = shape_of["x"]
        shape_of["x"] = infer_shape(probe, ins)
        out.append(shape_of["x"])
    assert shape_of["x"] == declared[0], "a block's output has its input's shape"
    return tuple(out)


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
