"""tt-transformers' `ModelArgs` for one model on one device: the sizes it reads from a
Hugging Face config.json and the ones it derives (tt-metal models/tt_transformers/tt/
model_config.py, read at 0039cbf0 whose `MAX_PREFILL_CHUNK_SIZES_DIV1024` equals
17a8a99d's; `_set_hf_params`, `_set_params_from_dict`, `ModelArgs.__init__`).

- The name: `_name_or_path`'s last component (HF_MODEL's when the config has none);
  the base name drops what follows "<n>B-" (common.py `get_base_model_name`:
  Llama-3.1-8B-Instruct -> Llama-3.1-8B; Phi-3-mini-128k-instruct stays whole).
- A config with a `text_config` is read merged: the top-level keys (vision ones aside)
  over the text ones (`merge_text_config`).
- `head_dim` = config's head_dim or dim / heads; qkv_size = head_dim x (heads + 2 kv).
- MLP padding: Qwen2.5-7B(-VL) 16, Qwen2.5-72B(-VL) 32, Qwen2.5-VL-32B and QwQ-32B 16
  cores: hidden_dim rounded up to a multiple of cores x 32 x devices (18,944 -> 19,456
  for Qwen2.5-7B on n300).
- `prefill_len_cutoff` 1024 on Wormhole, 512 on Blackhole; 512 for Llama-3.1-8B,
  Llama-3.2-11B and Mistral-7B on N150 and Qwen2.5-7B on N300.
- `max_prefill_chunk_size` from MAX_PREFILL_CHUNK_SIZES_DIV1024 x 1024; a model or device
  the table does not name gets 4 x 1024 (tt-transformers' warning: "setting
  MAX_PREFILL_CHUNK_SIZE to 4 for compatibility"); a None entry refuses the model.
- The LM head grid: rows from 8 and 8 cores a row down until dim divides 32 x rows x
  cores; at most 668 columns a core (Wormhole) or 128256 / 8 a device (Blackhole).

The families tileplan plans (the decoder stack tt-transformers builds for them):
Llama 3.x, Mistral, Qwen2 / Qwen2.5 (QKV bias), Qwen3 (q / k norms), Phi-3 / Phi-4,
Gemma-3 (q / k norms, pre / post feed-forward norms, scaled embedding, sliding-window
layers with a local rotary table); the text decoder of Qwen2.5-VL and Mistral-Small-3.1;
Llama-3.2-Vision (Mllama: its vision tower and cross-attention blocks, mllama_args.py;
HF's 40 text layers less the 8 cross-attention ones are the 32 decoder layers).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Arch, Device
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_args import VisionArgs, fusion_schedule
from tileplan.targets.tenstorrent.ops.tt_ccl import CclAttrs, Topology
from tileplan.targets.tenstorrent.tiles import TILE

#: the architectures (config.json `architectures[0]`) whose decoder tt-transformers builds,
#: with their family
ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Phi3ForCausalLM": "phi3",
    "Gemma3ForCausalLM": "gemma3",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Qwen2_5_VLForConditionalGeneration": "qwen2",
    "Mistral3ForConditionalGeneration": "mistral",
    "MllamaForConditionalGeneration": "mllama",
}

#: architectures tt-transformers implements whose model tileplan does not plan yet, and what is missing
NOT_MODELLED: dict[str, str] = {
    "MixtralForCausalLM": "Mixtral's mixture-of-experts MLP (tt-transformers' Mixtral path) is not modelled",
}

#: model_config.py `MAX_PREFILL_CHUNK_SIZES_DIV1024` (@0039cbf0 = @17a8a99d); None: unsupported
MAX_PREFILL_CHUNK_SIZES_DIV1024: dict[str, dict[str, int | None]] = {
    "Llama-3.2-1B": {"N150": 128, "N300": 128, "T3K": 128, "TG": 128, "P150x4": 128},
    "Llama-3.2-3B": {"N150": 8, "N300": 128, "T3K": 128, "TG": 128, "P150x4": 128},
    "Llama-3.1-8B": {"N150": 4, "N300": 64, "T3K": 128, "TG": 128, "P150x4": 128},
    "Llama-3.2-11B": {"N150": 4, "N300": 64, "T3K": 128, "TG": 128, "P150x4": 128},
    "Llama-3.1-70B": {"N150": None, "N300": None, "T3K": 32, "TG": 128, "P150x4": 128},
    "Llama-3.2-90B": {"N150": None, "N300": None, "T3K": 32, "TG": 128, "P150x4": 128},
    "DeepSeek-R1-Distill-Llama-70B": {"N150": None, "N300": None, "T3K": 32, "TG": 128, "P150x4": 128},
    "Qwen2.5-7B": {"N150": 4, "N300": 32, "T3K": 128, "TG": 128, "P150x4": 128},
    "Qwen2.5-72B": {"N150": None, "N300": None, "T3K": 16, "TG": 128, "P150x4": 128},
    "Qwen2.5-VL-3B": {"N150": 128, "N300": 128, "T3K": None, "TG": None, "P150x4": None},
    "Qwen2.5-VL-7B": {"N150": 64, "N300": 128, "T3K": None, "TG": None, "P150x4": None},
    "Qwen2.5-VL-32B": {"N150": None, "N300": None, "T3K": 64, "TG": None, "P150x4": None},
    "Qwen2.5-VL-72B": {"N150": None, "N300": None, "T3K": 32, "TG": None, "P150x4": None},
    "DeepSeek-R1-Distill-Qwen-14B": {"N150": 4, "N300": 64, "T3K": 128, "TG": None, "P150x4": None},
    "Phi-3.5-mini-instruct": {"N150": 128, "N300": 128, "T3K": 128, "TG": 128, "P150x4": 128},
    "Phi-3-mini-128k-instruct": {"N150": 32, "N300": 64, "T3K": 128, "TG": 128, "P150x4": 128},
    "QwQ-32B": {"N150": None, "N300": None, "T3K": 64, "TG": 128, "P150x4": 128},
    "Qwen3-32B": {"N150": None, "N300": None, "T3K": 64, "TG": 128, "P150x4": 128},
    "Mistral-Small-3.1-24B": {"N150": 32, "N300": 64, "T3K": 128, "TG": 128, "P150x4": 128},
}
#: the chunk of a model or device the table does not name (model_config.py's KeyError branch)
DEFAULT_CHUNK_DIV1024 = 4
#: `_set_params_from_dict` `default_padded_cores` (PAD_MLP_CORES unset)
PAD_MLP_CORES: dict[str, int] = {"Qwen2.5-VL-72B": 32, "Qwen2.5-VL-32B": 16, "Qwen2.5-72B": 32, "Qwen2.5-7B": 16,
                                 "QwQ-32B": 16}
#: ModelArgs `MAX_QKV_MM_SEQ_LEN`: longer prefills run the QKV matmul in 2,048-row batches
MAX_QKV_MM_SEQ_LEN = 2048
#: a T3K's chips (simple_text_demo.py MESH_DEVICE T3K = (1, 8))
T3K_CHIPS = 8
#: `max_columns_per_device_lm_head` on Wormhole: 668 columns a core ("128256 / 4 / 48 = 668
#: columns per core is close to the L1 limit"); Blackhole: 128256 // 8 a device
LM_HEAD_COLUMNS_PER_CORE = 668
LM_HEAD_COLUMNS_BLACKHOLE = 128256 // 8


def base_model_name(name: str) -> str:
    """common.py `get_base_model_name`: the name up to "<digits>B" when a "-" follows."""
    match = re.search(r"(.*?\d+[bB])-", name)
    return match.group(1) if match else name


def device_name(device: Device) -> str:
    """model_config.py `determine_device_name`: by the mesh's devices, N150 / N300 / N150x4 /
    T3K on Wormhole; P100 (7 DRAM banks) / P150 / P300 / P150x4 / P150x8 on Blackhole."""
    if device.arch is Arch.WORMHOLE_B0:
        names = {1: "N150", 2: "N300", 4: "N150x4", 8: "T3K"}
    else:
        names = {1: "P100" if device.dram_banks == 7 else "P150", 2: "P300", 4: "P150x4", 8: "P150x8"}
    if device.chips not in names:
        raise InputError(f"{device.machine}: {device.chips} {device.arch.value} devices in a mesh; tt-transformers "
                         f"names meshes of {', '.join(map(str, names))} (model_config.py determine_device_name)")
    return names[device.chips]


def _merged(config: Mapping[str, Any]) -> dict[str, Any]:
    """`_set_hf_params` `merge_text_config`: the top-level keys over `text_config`."""
    if "text_config" not in config and "vision_config" not in config:
        return dict(config)
    merged = dict(config.get("text_config") or {})
    merged.update({k: v for k, v in config.items() if k not in ("text_config", "vision_config")})
    return merged


def _int(cfg: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"config.json {key} {value!r}: expected a whole number >= 1")
            return value
    if default is None:
        raise InputError(f"config.json has no {' or '.join(keys)}: expected a decoder's config.json")
    return default


def nearest_multiple(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


@dataclass(frozen=True, slots=True)
class ModelArgs:
    """The sizes tt-transformers derives for one model on one device (see the module
    docstring). Sizes are the whole model's; `*_local` are one chip's."""

    name: str
    base_name: str
    architecture: str
    family: str
    dim: int
    n_heads: int
    n_kv_heads: int
    n_layers: int
    vocab_size: int
    head_dim: int
    hidden_dim: int
    unpadded_hidden_dim: int
    max_context_len: int
    num_devices: int
    device_name: str
    arch: Arch
    dram_banks: int
    qkv_bias: bool
    qk_norm: bool
    ff_norms: bool
    scaled_embedding: bool
    sliding_layers: tuple[bool, ...]
    sliding_window: int | None
    local_rope: bool
    max_prefill_chunk_size: int
    chunk_from_table: bool
    prefill_len_cutoff: int
    #: Llama-3.2-Vision's vision tower (None: a text decoder) and its cross-attention
    #: layers (text_config `cross_attention_layers`: 8 in the 11B)
    vision: VisionArgs | None = None
    cross_attention_layers: int = 0

    @property
    def cross_schedule(self) -> tuple[int, ...]:
        """The text layers a cross-attention block runs before (none without a vision
        tower; mllama_args.fusion_schedule)."""
        if self.vision is None:
            return ()
        return fusion_schedule(self.n_layers, self.cross_attention_layers)

    @property
    def qkv_size(self) -> int:
        return self.head_dim * (2 * self.n_kv_heads + self.n_heads)

    @property
    def n_local_heads(self) -> int:
        return self.n_heads // self.num_devices

    @property
    def n_local_kv_heads(self) -> int:
        return self.n_kv_heads // self.num_devices

    @property
    def ccl_topology(self) -> Topology:
        """model_config.py `ccl_topology`: Ring on a T3K's eight chips, else Linear."""
        return Topology.RING if self.num_devices == T3K_CHIPS else Topology.LINEAR

    @property
    def fused_all_gather_matmul(self) -> bool:
        """model_config.py USE_FUSED_ALL_GATHER_MATMUL: eight chips and (dim / 32 / 8) a
        multiple of 8 (dim a multiple of 2,048): wo split by columns, its input gathered."""
        return self.num_devices == T3K_CHIPS and (self.dim // TILE // self.num_devices) % self.num_devices == 0

    def ccl(self, dim: int = 3, topology: Topology | None = None) -> CclAttrs:
        """A collective over the mesh as tt-transformers calls it (one link, two workers), on
        the model's topology unless the call names one."""
        return CclAttrs(dim, self.num_devices, topology or self.ccl_topology)

    @property
    def min_kv_prefill_shard_seqlen(self) -> float:
        """`(32 x 8 x 8) / (n_kv_heads / devices)`: non-paged prefills at least this long
        shard K and V into L1 before fill_cache."""
        return TILE * 8 * 8 / self.n_local_kv_heads

    @property
    def dram_shard_grid_width(self) -> int:
        """8 on Wormhole, the DRAM banks on Blackhole (the prefill matmuls' per_core_N)."""
        return 8 if self.arch is Arch.WORMHOLE_B0 else self.dram_banks

    @property
    def lm_head_grid(self) -> tuple[int, int]:
        """(x = cores a row, y = rows): dim divisible by 32 x rows x cores a row."""
        rows, per_row = 8, 8
        while self.dim % (TILE * rows * per_row):
            rows -= 1
            if rows == 0:
                per_row -= 1
                if per_row == 0:
                    raise InputError(f"dim {self.dim}: no LM head grid divides it (model_config.py lm_head_num_rows)")
                rows = 8
        return per_row, rows

    @property
    def max_columns_per_device_lm_head(self) -> int:
        if self.arch is Arch.BLACKHOLE:
            return LM_HEAD_COLUMNS_BLACKHOLE
        x, y = self.lm_head_grid
        return LM_HEAD_COLUMNS_PER_CORE * x * y

    @property
    def lm_head_splits(self) -> tuple[int, ...]:
        """lm_head.py: the vocabulary of one device in splits of at most
        max_columns_per_device_lm_head columns, the last the rest."""
        per_device = self.vocab_size // self.num_devices
        width = self.max_columns_per_device_lm_head
        count = -(-per_device // width)
        splits = [min(per_device, width)] * (count - 1)
        return (*splits, per_device - sum(splits))


def model_args(config: Mapping[str, Any], device: Device, name: str | None = None) -> ModelArgs:
    """ModelArgs for `config` (a config.json's contents) on one chip of `device`
    (`device.chips` devices in the mesh). `name`: the model's name when the config has
    no `_name_or_path` (the hub id or the directory holding config.json)."""
    cfg = _merged(config)
    archs = cfg.get("architectures") or []
    arch_name = archs[0] if isinstance(archs, list) and archs else None
    raw_name = cfg.get("_name_or_path") or name
    label = str(raw_name) if raw_name else "the model"
    if arch_name in NOT_MODELLED:
        raise InputError(f"{label}: tt-transformers implements {arch_name}, but tileplan does not plan it yet: "
                         f"{NOT_MODELLED[arch_name]}; planned: {', '.join(sorted(ARCHITECTURES))}")
    if arch_name not in ARCHITECTURES:
        raise InputError(f"{label}: architecture {arch_name or '(none)'} is not one tt-transformers implements; "
                         f"supported: {', '.join(sorted(ARCHITECTURES))}")
    if not raw_name:
        raise InputError("config.json has no _name_or_path and no model name was given: tt-transformers picks its "
                         "tables by name (HF_MODEL); hint: pass the hub id or keep config.json in a directory "
                         "named after the model")
    model_name = str(raw_name).strip("/").split("/")[-1]
    base = base_model_name(model_name)
    family = ARCHITECTURES[arch_name]
    dim = _int(cfg, "dim", "hidden_size")
    n_heads = _int(cfg, "n_heads", "num_attention_heads")
    n_kv = _int(cfg, "n_kv_heads", "num_key_value_heads", default=n_heads)
    cross_layers = len(cfg.get("cross_attention_layers") or ())
    n_layers = _int(cfg, "n_layers", "num_hidden_layers") - cross_layers
    vocab = _int(cfg, "vocab_size")
    head_dim = _int(cfg, "head_dim", default=dim // n_heads)
    hidden = _int(cfg, "intermediate_size")
    ndev = device.chips
    dname = device_name(device)
    if base in ("Qwen2.5-7B", "Qwen2.5-VL-7B") and ndev not in (2, 4):
        raise InputError(f"{model_name}: Qwen2.5-7B and Qwen2.5-VL-7B is only supported on 2 or 4 devices, run on an "
                         "N300 (tt-transformers model_config.py _set_params_from_dict)")
    cores = PAD_MLP_CORES.get(base, 0)
    padded = nearest_multiple(hidden, cores * TILE * ndev) if cores else hidden
    table = MAX_PREFILL_CHUNK_SIZES_DIV1024.get(base, {})
    from_table = dname in table
    div1024 = table.get(dname) if from_table else DEFAULT_CHUNK_DIV1024
    if from_table and div1024 is None:
        raise InputError(f"Unsupported model {model_name} on device {dname} (tt-transformers "
                         "MAX_PREFILL_CHUNK_SIZES_DIV1024 has no chunk for it)")
    assert div1024 is not None
    # ModelArgs asserts the table before the heads
    for what, count in (("heads", n_heads), ("kv heads", n_kv)):
        if count % ndev:
            raise InputError(f"{model_name}: {count} {what} do not split over {ndev} devices (tt-transformers "
                             "asserts n_heads and n_kv_heads divisible by num_devices: model_config.py ModelArgs, "
                             "attention.py)")
    if head_dim % TILE:
        raise InputError(f"{model_name}: head_dim {head_dim} is not a multiple of 32 (nlp_create_qkv_heads)")
    cutoff = 512 if device.arch is Arch.BLACKHOLE else 1024
    if (base in ("Llama-3.1-8B", "Llama-3.2-11B", "Mistral-7B") and dname == "N150") or (
            base == "Qwen2.5-7B" and dname == "N300"):
        cutoff = 512
    layer_types = cfg.get("layer_types")
    sliding = tuple(t == "sliding_attention" for t in layer_types) if isinstance(layer_types, list) else ()
    if not sliding and family == "gemma3":
        pattern = cfg.get("sliding_window_pattern") or 6
        sliding = tuple((i + 1) % pattern != 0 for i in range(n_layers))
    return ModelArgs(
        name=model_name, base_name=base, architecture=arch_name, family=family, dim=dim, n_heads=n_heads,
        n_kv_heads=n_kv, n_layers=n_layers, vocab_size=vocab, head_dim=head_dim, hidden_dim=padded,
        unpadded_hidden_dim=hidden, max_context_len=_int(cfg, "max_position_embeddings", default=131072),
        num_devices=ndev, device_name=dname, arch=device.arch, dram_banks=device.dram_banks,
        qkv_bias=bool(cfg.get("attention_bias", family == "qwen2")), qk_norm=family in ("qwen3", "gemma3"),
        ff_norms=family == "gemma3", scaled_embedding=family == "gemma3", sliding_layers=sliding,
        sliding_window=cfg.get("sliding_window") if any(sliding) else None,
        local_rope=cfg.get("rope_local_base_freq") is not None, max_prefill_chunk_size=div1024 * 1024,
        chunk_from_table=from_table, prefill_len_cutoff=cutoff,
        vision=VisionArgs.from_config(config.get("vision_config")) if family == "mllama" else None,
        cross_attention_layers=cross_layers if family == "mllama" else 0)
