"""The tt-mlir frontend's options: what tt-xla's compile options and the model's own
shapes decide, as one immutable value.

- `opt_level`: tt-xla's `optimization_level` (tt-mlir `TTIRToTTNNCommonPipelineOptions::
  optimizationLevel`, resolved by `resolveOptimizationLevelOptions` in
  include/ttmlir/Dialect/TTNN/Pipelines/TTNNPipelines.h): 0 the optimizer off, every
  compute config HiFi4 with fp32 destination accumulation; 1 the optimizer on with DRAM
  layouts only (op configs validated, compute configs left to TTNN); 2 the optimizer's L1
  layouts (memory-layout analysis) and its L1 spill management.
- `weights`: None keeps the model's dtype; bf16 or f32 are the model's weights in that
  dtype (a loader's `.to(torch.bfloat16)`); bfp8 or bfp4 are tt-xla's
  `experimental_weight_dtype` (`bfp_bf8`, `bfp_bf4`): tt-mlir's TTNNWeightDtypeConversion
  typecasts the weights of matmuls and linears only, and the typecast is const-evaluated.
- `activations`: None keeps the model's dtype; bf16 or f32 cast the model (tt-mlir keeps
  activations in the model's dtype: block floats are weights only).
- `batch`, `sequence_length`: the shapes the model is imported at (None: the model's
  own; a model given as a program has fixed shapes).
- `kv_cache`, `kv_cache_kind`: a decoder's decoding step with a key/value cache of
  `kv_cache` positions a layer (None: the model's forward, no cache), of that kind
  (model/cache.py): `dynamic` (transformers' DynamicCache, the default) or `static`
  (StaticCache, as tt-xla's LLM benchmark runs: the step writes its `sequence_length`
  tokens into the cache in place, a prefill of P tokens or a decode step of 1).
- `tensor_l1_usage_cap`: tt-mlir's `tensor-l1-usage-cap` (default 0.95,
  DevicePassesWrapper.h), the share of usable L1 the optimizer may fill.

Worked example: TtMlirOptions(opt_level=2, weights=DataType.BFLOAT8_B) is tt-xla's
`{"optimization_level": "2", "experimental_weight_dtype": "bfp_bf8"}`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.errors import InputError, option
from tileplan.model.cache import CacheKind
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, MathFidelity
from tileplan.targets.tenstorrent.tiles import DataType

OPT_LEVELS = (0, 1, 2)
#: the weight dtypes the frontend takes: the model's (bf16, f32) or a block float
#: (tt-mlir `experimental-weight-dtype`: bfp_bf8, bfp_bf4)
WEIGHT_DTYPES = (DataType.BFLOAT16, DataType.FLOAT32, DataType.BFLOAT8_B, DataType.BFLOAT4_B)
ACTIVATION_DTYPES = (DataType.BFLOAT16, DataType.FLOAT32)
#: tt-mlir's name of a block-float weight dtype (TTNNPipelines.h `experimental-weight-dtype`)
BFP_NAMES = {DataType.BFLOAT8_B: "bfp_bf8", DataType.BFLOAT4_B: "bfp_bf4"}
#: the short names tileplan's flags print
SHORT_NAMES = {DataType.BFLOAT16: "bf16", DataType.FLOAT32: "f32", DataType.BFLOAT8_B: "bfp8",
               DataType.BFLOAT4_B: "bfp4"}
#: tt-mlir's default `tensor-l1-usage-cap` (include/ttmlir/Dialect/TTNN/Transforms/DevicePassesWrapper.h)
DEFAULT_L1_USAGE_CAP = 0.95
#: the compute config tt-mlir sets on every operation exposing one at optimization level 0
#: (TTNNPipelines.h: compute-cfg-math-fidelity init HiFi4, compute-cfg-fp32-dest-acc-en
#: init true; TTNNSetComputeKernelConfig); math_approx_mode, packer_l1_acc and
#: dst_full_sync_en stay unset, i.e. the operation's own default
LEVEL0_COMPUTE = (MathFidelity.HIFI4, True)


def parse_dtype(text: str | DataType | None, what: str, allowed: tuple[DataType, ...]) -> DataType | None:
    """A dtype option (`bf16`, `f32`, `bfp8`, `bfp4`, or tt-mlir's `bfp_bf8`)."""
    if text is None or isinstance(text, DataType):
        found = text
    else:
        found = DataType.parse(text)
    if found is not None and found not in allowed:
        raise InputError(f"{option(what, SHORT_NAMES.get(found, found.value))}: the tt-mlir frontend takes "
                         f"{', '.join(SHORT_NAMES[d] for d in allowed)} for {what}"
                         + ("; block floats (bfp8, bfp4) are weights only (tt-xla's experimental_weight_dtype)"
                            if what == "activations" else ""))
    return found


@dataclass(frozen=True, slots=True)
class TtMlirOptions:
    """See the module docstring. Invariants (checked): opt_level 0, 1 or 2; a weight
    dtype of WEIGHT_DTYPES and an activation dtype of ACTIVATION_DTYPES (or None);
    batch, sequence_length and kv_cache >= 1 (or None); a static cache has a length;
    0 < tensor_l1_usage_cap <= 1."""

    opt_level: int = 0
    weights: DataType | None = None
    activations: DataType | None = None
    batch: int | None = None
    sequence_length: int | None = None
    tensor_l1_usage_cap: float = DEFAULT_L1_USAGE_CAP
    kv_cache: int | None = None
    kv_cache_kind: CacheKind = CacheKind.DYNAMIC

    def __post_init__(self) -> None:
        if isinstance(self.opt_level, bool) or self.opt_level not in OPT_LEVELS:
            raise InputError(f"{option('opt_level', str(self.opt_level))}: expected 0, 1 or 2 (tt-xla's "
                             "optimization_level)")
        parse_dtype(self.weights, "weights", WEIGHT_DTYPES)
        parse_dtype(self.activations, "activations", ACTIVATION_DTYPES)
        for key in ("batch", "sequence_length", "kv_cache"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"{option(key, str(value))}: expected a whole number >= 1")
        if not isinstance(self.kv_cache_kind, CacheKind):
            raise InputError(f"{option('kv_cache_kind', str(self.kv_cache_kind))}: expected a CacheKind (parse it "
                             "with CacheKind.parse)")
        if self.kv_cache is None and self.kv_cache_kind is not CacheKind.DYNAMIC:
            raise InputError(f"{option('kv_cache_kind', self.kv_cache_kind.value)} needs {option('kv_cache')} "
                             "(the cache's positions a layer), e.g. --kv-cache 128")
        if not 0 < self.tensor_l1_usage_cap <= 1:
            raise InputError(f"tensor_l1_usage_cap {self.tensor_l1_usage_cap}: expected a share in (0, 1]")

    @classmethod
    def of(cls, opt_level: int = 0, weights: str | DataType | None = None, activations: str | DataType | None = None,
           batch: int | None = None, sequence_length: int | None = None) -> "TtMlirOptions":
        """The options from their command-line spellings (`weights="bfp8"`)."""
        return cls(opt_level, parse_dtype(weights, "weights", WEIGHT_DTYPES),
                   parse_dtype(activations, "activations", ACTIVATION_DTYPES), batch, sequence_length)

    @property
    def optimizer(self) -> bool:
        """tt-mlir's `enable-optimizer` (`optimizerPassEnabled`): level >= 1."""
        return self.opt_level >= 1

    @property
    def l1_layouts(self) -> bool:
        """tt-mlir's `memory-layout-analysis-enabled`: level 2."""
        return self.opt_level >= 2

    @property
    def weight_conversion(self) -> DataType | None:
        """The `experimental_weight_dtype` typecast of matmul and linear weights."""
        return self.weights if self.weights in BFP_NAMES else None

    @property
    def model_weights(self) -> DataType | None:
        """The dtype every weight is held in, when the option casts the model."""
        return self.weights if self.weights is not None and self.weights not in BFP_NAMES else None

    def compute(self) -> ComputeConfig | None:
        """The compute config tt-mlir gives an operation exposing one: at level 0 HiFi4 and
        fp32 destination accumulation (TTNNSetComputeKernelConfig), the other fields the
        runtime's `WormholeComputeKernelConfig` defaults (runtime/lib/ttnn/operations/
        utils/utils.cpp `createDeviceComputeKernelConfig`: approximate math, no packer L1
        accumulation); above level 0 none (None: the operation's own default)."""
        if self.opt_level > 0:
            return None
        fidelity, fp32 = LEVEL0_COMPUTE
        return ComputeConfig(fidelity, True, fp32, False, False)

    def compile_options(self) -> dict[str, str]:
        """tt-xla's compile options for these options
        (`torch_xla.set_custom_compile_options`, pjrt_implementation/inc/api/compile_options.h)."""
        out = {"optimization_level": str(self.opt_level)}
        if self.weight_conversion is not None:
            out["experimental_weight_dtype"] = BFP_NAMES[self.weight_conversion]
        return out
