"""tt-transformers' precisions: `DecodersPrecision` and `ModelOptimizations` (tt-metal
models/tt_transformers/tt/model_config.py @0039cbf0).

Each decoder layer has a data type per tensor group (FF1_FF3 = w1 / w3, FF2 = w2, WQKV,
WO, KV_CACHE, ACTIVATION) and a math fidelity per operation group; a fidelity is a
compute-kernel config (`ModelArgs.__init__`):

| setting    | fidelity | approx | fp32_dest_acc_en | packer_l1_acc |
| LOFI       | LoFi     | no     | no               | yes           |
| HIFI2      | HiFi2    | yes    | yes              | yes           |
| HIFI2_FP16 | HiFi2    | no     | no               | yes           |
| HIFI2_NA   | HiFi2    | no     | no               | no            |
| HIFI4      | HiFi4    | no     | yes              | yes           |
| HIFI4_FP32 | HiFi4    | no     | yes              | yes           |

Defaults (`_default_settings`): every weight and the KV cache bfp8, activations as they
come (bf16); MLP matmuls HIFI2_FP16, attention matmuls and decode SDPA HIFI2, prefill SDPA
HIFI4. `performance(model)`: Qwen2.5-7B(-VL) -> WQKV, KV cache and WO bf16 and HIFI4 for
the six attention groups; every other model -> FF1_FF3 bfp4 with LOFI (Phi-3-mini: QKV
prefill HIFI2_FP16, "running out of L1 memory"). `accuracy(model)`: the 70B-and-larger
models -> FF1_FF3 bfp4 + LOFI; Llama-3*, Mistral-7B*, Phi-3-mini*, phi-4* -> WQKV, KV cache
and WO bfp8 with HIFI2_FP16 MLPs (Phi-3-mini: QKV prefill HIFI2_FP16); the rest -> WQKV,
KV cache and WO bf16 with HIFI4 attention.

A model with a `model_params/<name>/{performance,accuracy}_decoder_config.json` takes
per-decoder settings from it (`_precision_factory`, `parse_decoder_json`): every decoder
below the largest id named gets the preset of the placeholder model "model", a named one
the defaults with its file's entries (both files give precision_cfg and fidelity_cfg).
The files tileplan knows: Llama-3.1-8B-Instruct performance
(decoder 31: FF1_FF3 bfp8, LOFI) and Qwen3-8B performance (decoder 36: FF1_FF3 bfp8,
HIFI2_FP16; 36 decoders, so only the placeholder preset applies).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from tileplan.targets.tenstorrent.frontends.tt_transformers.options import Preset
from tileplan.targets.tenstorrent.ops.base import ComputeConfig, MathFidelity
from tileplan.targets.tenstorrent.tiles import DataType


class Fidelity(Enum):
    """model_config.py `MathFidelitySetting`."""

    LOFI = "lofi"
    HIFI2 = "hifi2"
    HIFI2_NA = "hifi2na"
    HIFI2_FP16 = "hifi2fp16"
    HIFI4 = "hifi4"
    HIFI4_FP32 = "hifi4fp32"

    @property
    def compute(self) -> ComputeConfig:
        """The WormholeComputeKernelConfig ModelArgs builds for it."""
        return _COMPUTE[self]


_COMPUTE = {
    Fidelity.LOFI: ComputeConfig(MathFidelity.LOFI, False, False, True),
    Fidelity.HIFI2: ComputeConfig(MathFidelity.HIFI2, True, True, True),
    Fidelity.HIFI2_FP16: ComputeConfig(MathFidelity.HIFI2, False, False, True),
    Fidelity.HIFI2_NA: ComputeConfig(MathFidelity.HIFI2, False, False, False),
    Fidelity.HIFI4: ComputeConfig(MathFidelity.HIFI4, False, True, True),
    Fidelity.HIFI4_FP32: ComputeConfig(MathFidelity.HIFI4, False, True, True),
}

#: `compute_kernel_config_sdpa`: HiFi4, fp32 accumulation, no packer L1 accumulation
SDPA_COMPUTE = ComputeConfig(MathFidelity.HIFI4, False, True, False)
#: models/common/rmsnorm.py: HiFi2, fp32 accumulation, packer L1 accumulation
NORM_COMPUTE = ComputeConfig(MathFidelity.HIFI2, True, True, True)
#: lm_head.py: HiFi2, no fp32 accumulation, packer L1 accumulation
LM_HEAD_COMPUTE = ComputeConfig(MathFidelity.HIFI2, False, False, True)
#: `SDPA_DECODE_COMPUTE_PROGCFG`: HiFi2, no fp32 accumulation, no packer L1 accumulation
SDPA_DECODE_DEFAULT = ComputeConfig(MathFidelity.HIFI2, False, False, False)

BF16, BFP8, BFP4 = DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B


@dataclass(frozen=True, slots=True)
class DecoderPrecision:
    """One decoder layer's settings (`ModelOptimizations`): data types per tensor group
    (None: the tensor's own, bf16) and fidelities per operation group."""

    ff1_ff3: DataType | None = BFP8
    ff2: DataType | None = BFP8
    wqkv: DataType | None = BFP8
    wo: DataType | None = BFP8
    kv_cache: DataType | None = BFP8
    activation: DataType | None = None
    li_ff1_ff3: Fidelity = Fidelity.HIFI2_FP16
    li_ff2: Fidelity = Fidelity.HIFI2_FP16
    li_qkv_decode: Fidelity = Fidelity.HIFI2
    sdpa_decode: Fidelity = Fidelity.HIFI2
    li_o_decode: Fidelity = Fidelity.HIFI2
    li_qkv_prefill: Fidelity = Fidelity.HIFI2
    sdpa_prefill: Fidelity = Fidelity.HIFI4
    li_o_prefill: Fidelity = Fidelity.HIFI2

    def dtype(self, group: str) -> DataType:
        """A tensor group's data type, bf16 when the preset leaves it to the tensor."""
        value: DataType | None = getattr(self, group)
        return value if value is not None else BF16


_HIFI4_ATTENTION = dict(li_qkv_decode=Fidelity.HIFI4, li_qkv_prefill=Fidelity.HIFI4, sdpa_decode=Fidelity.HIFI4,
                        sdpa_prefill=Fidelity.HIFI4, li_o_decode=Fidelity.HIFI4, li_o_prefill=Fidelity.HIFI4)


def performance(base_name: str, model_name: str) -> DecoderPrecision:
    """ModelOptimizations.performance."""
    if base_name in ("Qwen2.5-7B", "Qwen2.5-VL-7B"):
        return DecoderPrecision(wqkv=BF16, kv_cache=BF16, wo=BF16, **_HIFI4_ATTENTION)  # type: ignore[arg-type]
    p = DecoderPrecision(ff1_ff3=BFP4, li_ff1_ff3=Fidelity.LOFI)
    if model_name.startswith("Phi-3-mini"):
        p = replace(p, li_qkv_prefill=Fidelity.HIFI2_FP16)
    return p


def accuracy(base_name: str, model_name: str) -> DecoderPrecision:
    """ModelOptimizations.accuracy."""
    if base_name in ("Llama-3.1-70B", "Llama-3.2-90B", "DeepSeek-R1-Distill-Llama-70B", "Qwen2.5-72B"):
        return DecoderPrecision(ff1_ff3=BFP4, li_ff1_ff3=Fidelity.LOFI)
    if base_name.startswith(("Llama-3", "Mistral-7B", "Phi-3-mini", "phi-4")):
        p = DecoderPrecision(wqkv=BFP8, kv_cache=BFP8, wo=BFP8, li_ff1_ff3=Fidelity.HIFI2_FP16,
                             li_ff2=Fidelity.HIFI2_FP16)
        if model_name.startswith("Phi-3-mini"):
            p = replace(p, li_qkv_prefill=Fidelity.HIFI2_FP16)
        return p
    return DecoderPrecision(wqkv=BF16, kv_cache=BF16, wo=BF16, **_HIFI4_ATTENTION)  # type: ignore[arg-type]


#: model_params/<model>/<preset>_decoder_config.json: decoder id -> overrides (DecoderPrecision
#: fields); read at tt-metal 3d60a88f (Llama-3.1-8B-Instruct) and 0025c53f (Qwen3-8B). Later files
#: are not applied: Qwen3-32B's all-BFP4 performance file (read at 49da26bc, whose model_config.py
#: is of the getter era after PR #36176) and phi-4's accuracy file (PR #35262, 2026) postdate the
#: modelled model_config.py (0039cbf0, the dictionary-style model_config of late 2025)
DECODER_FILES: dict[tuple[str, Preset], dict[int, dict[str, object]]] = {
    ("Llama-3.1-8B-Instruct", Preset.PERFORMANCE): {31: {"ff1_ff3": BFP8, "li_ff1_ff3": Fidelity.LOFI}},
    ("Qwen3-8B", Preset.PERFORMANCE): {36: {"ff1_ff3": BFP8, "li_ff1_ff3": Fidelity.HIFI2_FP16}},
}


@dataclass(frozen=True, slots=True)
class DecodersPrecision:
    """Every decoder layer's settings. `per_layer[i]` is layer i's; a layer past the end
    (a decoder file naming fewer decoders than the model has) takes bf16 tensors and
    the preset's fidelities (model_config.py `get_tensor_dtype` returns None there)."""

    preset: Preset
    per_layer: tuple[DecoderPrecision, ...]
    source: str

    def layer(self, i: int) -> DecoderPrecision:
        if i < len(self.per_layer):
            return self.per_layer[i]
        last = self.per_layer[-1]
        return replace(last, ff1_ff3=None, ff2=None, wqkv=None, wo=None, kv_cache=None)


def decoders_precision(model_name: str, base_name: str, n_layers: int, preset: Preset) -> DecodersPrecision:
    """DecodersPrecision.performance / .accuracy for a model of `n_layers` decoders."""
    factory = performance if preset is Preset.PERFORMANCE else accuracy
    overrides = DECODER_FILES.get((model_name, preset))
    if overrides is None:
        one = factory(base_name, model_name)
        return DecodersPrecision(preset, (one,) * n_layers, f"ModelOptimizations.{preset.value}({model_name})")
    base = factory("model", "model")
    count = max(overrides) + 1
    # a named decoder with both precision_cfg and fidelity_cfg: `_default_settings` plus
    # its entries (parse_decoder_json builds a fresh ModelOptimizations from them)
    layers = tuple(replace(DecoderPrecision(), **overrides[i]) if i in overrides else base  # type: ignore[arg-type]
                   for i in range(count))
    return DecodersPrecision(preset, layers,
                             f"model_params/{model_name}/{preset.value}_decoder_config.json over "
                             f"ModelOptimizations.{preset.value}('model')")
