"""A synthetic program of a requested size, to measure the planner at scale.

The program is a long chain of MLP blocks over a modest activation [1, rows, hidden]:

    n = layernorm(h, scale, bias)          [1, rows, hidden]
    u = matmul(n, up) + up_bias            [1, rows, mlp]
    g = gelu(u)
    d = matmul(g, down) + down_bias        [1, rows, hidden]
    h = h + d                              (the residual)

seven operations per block. Its size is counted in graph values: the input, the
parameters and one result per operation (`graph_values`); the planner's timeline has
more (each parameter read is re-laid out by a `Copy`, a Gemm adds its partials), about
2.5 per graph value with the default sizes (benchmarks/plan_time.py prints both).

Why the live sets stay bounded: a declared tensor is live from the first step until
its last read, so parameters of their own per block would all be live at step 0 and
the live sets (and the report, which lists them per step) would grow with the
program. The blocks therefore share `shared` parameter sets, block j reading set
j mod `shared`: every step holds at most those 6 x `shared` parameters, the block's
input, and the few activations and copies of the current operation. Every other
result dies within its block, a block's output within the next. So the peaks do not
grow with the program; only the exchange code does (one row per exchanging step, see
`tileplan.planner.exchange`), and a long enough chain no longer fits for that alone.

Sizing: with `values` graph values and `shared` sets, the chain has `values` - 1 -
6 x `shared` operations: whole blocks, then the first operations of one more block
(any prefix of a block is a valid chain). `values` must leave at least one whole
block per set, so that every parameter is read.

As a named model, `synthetic:N` (`tileplan plan synthetic:100000`) is the chain of
about N TIMELINE values, sized by `tileplan.planner.synthetic` (which lowers a sample
chain, so it sits above the lowering).
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.errors import InputError
from tileplan.model.ir import Program
from tileplan.model.precision import F16, Precision
from tileplan.model.siglip import GraphBuilder

#: parameters of one set, in declaration order
SET_PARAMETERS = ("norm.scale", "norm.bias", "mlp.up.weight", "mlp.up.bias", "mlp.down.weight", "mlp.down.bias")
BLOCK_OPERATIONS = 7


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


def build_synthetic(cfg: SyntheticConfig, weights: Precision = F16) -> Program:
    """The chain of `cfg` (see the module docstring): exactly `cfg.values` graph values,
    deterministic, the output the last operation's result."""
    b = GraphBuilder(weights)
    rows, hidden, mlp = cfg.rows, cfg.hidden, cfg.mlp
    h = b.declare("synthetic.input", (1, rows, hidden), role="input")
    for k in range(cfg.shared):
        _declare_set(b, f"synthetic.shared{k}", hidden, mlp)
    x = h
    for j in range(cfg.operations):
        if j % BLOCK_OPERATIONS == 0:
            h = x  # the block's input, read again by its residual
        x = _block_operation(b, j, x, h, cfg)
    program = Program("synthetic", tuple(b.tensors), tuple(b.items), (x,),
                      {"values": cfg.values, "rows": rows, "hidden": hidden, "mlp": mlp, "shared": cfg.shared,
                       "weights": weights.to_text()})
    assert graph_values(program) == cfg.values, (graph_values(program), cfg.values)
    return program


def _declare_set(b: GraphBuilder, prefix: str, hidden: int, mlp: int) -> None:
    """One parameter set: the norm's vectors, then each projection's weight and bias.
    Weights take the program's weight precision, vectors stay F16."""
    shapes = {"norm.scale": (1, 1, hidden), "norm.bias": (1, 1, hidden), "mlp.up.weight": (hidden, mlp),
              "mlp.up.bias": (1, 1, mlp), "mlp.down.weight": (mlp, hidden), "mlp.down.bias": (1, 1, hidden)}
    for suffix in SET_PARAMETERS:
        name = f"{prefix}.{suffix}"
        if suffix.endswith(".weight"):
            b.weight(name, shapes[suffix])
        else:
            b.declare(name, shapes[suffix])


def _block_operation(b: GraphBuilder, j: int, x: str, h: str, cfg: SyntheticConfig) -> str:
    """Operation j of the chain, step j mod 7 of block j // 7, on the previous result
    `x`; the residual adds the block's input `h`. Returns the operation's result."""
    block, step = divmod(j, BLOCK_OPERATIONS)
    p = f"synthetic.shared{block % cfg.shared}"
    at = f"synthetic.layer{block}"
    row, wide = (1, cfg.rows, cfg.hidden), (1, cfg.rows, cfg.mlp)
    if step == 0:
        return b.op("layernorm", f"{at}.norm", (x, f"{p}.norm.scale", f"{p}.norm.bias"), row, eps=1e-6)
    if step == 1:
        return b.op("matmul", f"{at}.mlp.up", (x, f"{p}.mlp.up.weight"), wide)
    if step == 2:
        return b.op("add", f"{at}.mlp.up.bias_add", (x, f"{p}.mlp.up.bias"), wide)
    if step == 3:
        return b.op("gelu", f"{at}.mlp.gelu", (x,), wide, approximate="tanh")
    if step == 4:
        return b.op("matmul", f"{at}.mlp.down", (x, f"{p}.mlp.down.weight"), row)
    if step == 5:
        return b.op("add", f"{at}.mlp.down.bias_add", (x, f"{p}.mlp.down.bias"), row)
    return b.op("add", f"{at}.residual", (h, x), row)
