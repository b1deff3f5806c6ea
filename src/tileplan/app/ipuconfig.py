"""`--ipu-config FILE.json`: optimum-graphcore's IPUConfig as the defaults of the flags.

The file is read like every input (bounded, `tileplan.ioutil.read_json`; one located
line for an error). Each field tileplan models becomes the default of its flag (a
flag given on the command line wins); a field the file leaves out takes
IPUConfig's own default where tileplan models it (`matmul_proportion` 0.2,
`enable_half_partials` true). In training the fields are the training ones; in
inference their `inference_` variants, each falling back to the training field as
IPUConfig does. Every other field is listed back (`IpuConfig.unmodelled`, printed by
`tileplan plan`), never dropped silently.

| IPUConfig field | flag |
|---|---|
| `layers_per_ipu` | `--layers-per-ipu` |
| `ipus_per_replica` | `--ipus` |
| `matmul_proportion` (one value, or one per IPU) | `--available-memory-proportion` |
| `enable_half_partials` | `--partials f16` (true) or `f32` |
| `recompute_checkpoint_every_layer` | `--recompute every-layer` (true) |
| `embedding_serialization_factor` | `--embedding-serialization-factor` |
| `serialized_embedding_splits_per_ipu` | `--serialized-embedding-splits-per-ipu` |
| `projection_serialization_factor` | `--projection-serialization-factor` |
| `optimizer_state_offchip` | `--optimizer-state-offchip` |
| `replicated_tensor_sharding` | `--replicated-tensor-sharding` |
| `replication_factor` | `--replication-factor` |
| `gradient_accumulation_steps` | `--gradient-accumulation` |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tileplan.errors import InputError
from tileplan.ioutil import MAX_CONFIG_BYTES, display_name, read_json

#: the fields that set a flag, each with the flag's option name and, where tileplan
#: models it, IPUConfig's default for a file that leaves it out
MODELLED = {
    "layers_per_ipu": "layers_per_ipu", "ipus_per_replica": "ipus", "matmul_proportion": "available_memory_proportion",
    "enable_half_partials": "partials", "recompute_checkpoint_every_layer": "recompute",
    "embedding_serialization_factor": "embedding_serialization_factor",
    "serialized_embedding_splits_per_ipu": "serialized_embedding_splits_per_ipu",
    "projection_serialization_factor": "projection_serialization_factor",
    "optimizer_state_offchip": "optimizer_state_offchip", "replicated_tensor_sharding": "replicated_tensor_sharding",
    "replication_factor": "replication_factor", "gradient_accumulation_steps": "gradient_accumulation",
}
#: fields used only in training (inference plans one replica, no optimizer)
TRAINING_ONLY = ("recompute_checkpoint_every_layer", "optimizer_state_offchip", "replicated_tensor_sharding",
                 "replication_factor", "gradient_accumulation_steps", "embedding_serialization_factor",
                 "serialized_embedding_splits_per_ipu", "projection_serialization_factor")
#: what IPUConfig defaults the modelled fields to when a file leaves them out
DEFAULTS: dict[str, object] = {"matmul_proportion": 0.2, "enable_half_partials": True}
#: fields of an IPUConfig that hold no per-tile memory tileplan could model, and why
HOST_SIDE = {
    "device_iterations": "host-side stream buffers, no on-tile memory",
    "inference_device_iterations": "host-side stream buffers, no on-tile memory",
    "output_mode": "what the host receives", "seed": "random numbers", "executable_cache_dir": "a cache folder",
}


@dataclass(frozen=True, slots=True)
class IpuConfig:
    """The flags' defaults a file gives (`defaults`: option name -> value in the flag's
    own form) and the fields tileplan does not model (`unmodelled`: field -> why)."""

    path: str
    defaults: dict[str, Any] = field(default_factory=dict)
    unmodelled: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """What `tileplan plan` prints of the fields it does not model: one line each,
        names escaped (a field's name is the file's text), at most `LISTED`, then how
        many more."""
        path = display_name(self.path)
        fields = sorted(self.unmodelled.items())
        out = [f"{path}: {display_name(key)} not modelled ({why})" for key, why in fields[:LISTED]]
        if len(fields) > LISTED:
            out.append(f"{path}: {len(fields) - LISTED} more fields not modelled")
        return out


#: the most unmodelled fields `IpuConfig.lines` names
LISTED = 20


def _ints(value: object, key: str, path: str, least: int = 0) -> list[int]:
    if not isinstance(value, list) or not value or not all(isinstance(v, int) and not isinstance(v, bool)
                                                           and v >= least for v in value):
        raise InputError(f"{key} must be a non-empty list of integers >= {least}, found {str(value)[:60]}", path)
    return list(value)


def _int(value: object, key: str, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{key} must be an integer >= 1, found {str(value)[:60]}", path)
    return value


def _bool(value: object, key: str, path: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"{key} must be true or false, found {str(value)[:60]}", path)
    return value


def _proportion(value: object, key: str, path: str) -> str:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1
                             for v in values):
        raise InputError(f"{key} must be a proportion in (0, 1] or a list of them, found {str(value)[:60]}", path)
    return ",".join(str(float(v)) for v in values if isinstance(v, (int, float)))


def read_ipu_config(path: str, training: bool) -> IpuConfig:
    """The flags' defaults from an IPUConfig file (see the module docstring)."""
    doc = read_json(path, MAX_CONFIG_BYTES)
    if not isinstance(doc, dict):
        raise InputError(f"expected a JSON object (optimum-graphcore's IPUConfig), found a {type(doc).__name__}", path)
    fields = dict(doc)
    used: dict[str, object] = {}
    unmodelled: dict[str, str] = {}
    for key, value in fields.items():
        inference = key.startswith("inference_")
        base = key[len("inference_"):] if inference else key
        if base not in MODELLED:
            unmodelled[key] = HOST_SIDE.get(key) or "not an option tileplan models"
        elif training and inference:
            unmodelled[key] = "an inference field"
        elif training:
            used[base] = value
        elif base in TRAINING_ONLY:
            unmodelled[key] = "training only"
        elif inference:
            used[base] = value
    if not training:  # an inference_ field falls back to its training field, as IPUConfig's do
        for key, value in fields.items():
            if key in MODELLED and key not in TRAINING_ONLY:
                if key in used:
                    unmodelled[key] = f"a training field (inference_{key} is used)"
                else:
                    used[key] = value
    for base, default in DEFAULTS.items():
        used.setdefault(base, default)
    defaults: dict[str, Any] = {}
    for base, value in used.items():
        if value is None:
            continue
        option = MODELLED[base]
        if base == "layers_per_ipu":
            defaults[option] = ",".join(map(str, _ints(value, base, path, least=-1)))
        elif base == "serialized_embedding_splits_per_ipu":
            defaults[option] = ",".join(map(str, _ints(value, base, path)))
        elif base in ("ipus_per_replica",):
            defaults[option] = str(_int(value, base, path))
        elif base in ("replication_factor", "gradient_accumulation_steps", "embedding_serialization_factor",
                      "projection_serialization_factor"):
            defaults[option] = _int(value, base, path)
        elif base == "matmul_proportion":
            defaults[option] = _proportion(value, base, path)
        elif base == "enable_half_partials":
            defaults[option] = "f16" if _bool(value, base, path) else "f32"
        elif base == "recompute_checkpoint_every_layer":
            if _bool(value, base, path):
                defaults[option] = "every-layer"
        else:
            defaults[option] = _bool(value, base, path)
    return IpuConfig(path, defaults, unmodelled)
