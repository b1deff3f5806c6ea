"""The planning options an operator's plan and lowering may read."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.errors import InputError


class GemmOutputPacking(Enum):
    """`Native`: AMP partials as the AMP lays them out, each on whole 32 KiB interleaved
    element pairs. `Packed`: partials packed densely, no element rounding."""

    NATIVE = "Native"
    PACKED = "Packed"


class AttentionProducts(Enum):
    """`Materialized`: the whole score matrix of a head at once. `Streamed`: scores in
    chunks of keys with an online softmax (bounded scratch). `Automatic`: whichever
    needs less memory at that step."""

    AUTOMATIC = "Automatic"
    MATERIALIZED = "Materialized"
    STREAMED = "Streamed"


class Kernels(Enum):
    """Whose rules plan and lower the matmuls and convolutions (a policy's choice:
    `tileplan.lowering.policy`). `POPLIBS`: as poplin does (`tileplan.kernel.convplan`:
    operands read where they rest and received per tile, created layouts for weights).
    `REFERENCE`: the reference planner's GEMM partitioner and copies
    (`tileplan.kernel.gemm`)."""

    POPLIBS = "poplibs"
    REFERENCE = "reference"


class Outlining(Enum):
    """Which programs and vertices a compile shares between repeats of the same
    operations (`tileplan.planner.nontensor` counts the memory that is not tensors by
    it). `SHARED`: PopART's outliner, the default: a repeat block's or a training
    program's identical operations share one program and its vertices. `PER_LAYER`: each
    layer keeps its own programs, as PopART does across IPUs and with
    `POPART_POPLINER_OUTLINER_REGEX` on one (graphcore/popart
    docs/user_guide/env_vars.rst, "Manipulating outliner behaviour for PopLiner"), the
    setting PopLiner's profiles were compiled with."""

    SHARED = "shared"
    PER_LAYER = "per-layer"


@dataclass(frozen=True, slots=True)
class Options:
    """`available_memory_proportion`: Poplar's cap on one matmul's or convolution's
    temporary bytes per tile, as a proportion of the tile's bytes (None: no cap)."""

    gemm_output_packing: GemmOutputPacking = GemmOutputPacking.NATIVE
    attention_products: AttentionProducts = AttentionProducts.AUTOMATIC
    available_memory_proportion: float | None = None
    #: the matmuls' and convolutions' partials: "F16" (half partials), "F32", or None
    #: for the AMP geometry's own (float on Mk2 for F16 inputs, as poplin's default)
    partials: str | None = None
    outlining: Outlining = Outlining.SHARED

    def __post_init__(self) -> None:
        p = self.available_memory_proportion
        if p is not None and not 0 < p <= 1:
            raise InputError(f"available memory proportion must be in (0, 1], found {p}")
        if self.partials not in (None, "F16", "F32"):
            raise InputError(f"partials must be f16 or f32, found {self.partials!r}")
