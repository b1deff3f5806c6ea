"""Read a vision tower's dimensions from a Hugging Face `config.json`.

Memory planning needs the architecture, not the weights: a SigLIP checkpoint's
`config.json` (a full `siglip` config with a `vision_config`, or a
`siglip_vision_model` config itself) gives hidden_size, intermediate_size,
num_hidden_layers, num_attention_heads, num_channels, image_size, patch_size and
`vision_use_head` (the MAP head; on when absent, as in transformers). Nothing is
downloaded: the file is read from disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tileplan.errors import InputError
from tileplan.ioutil import MAX_CONFIG_BYTES, display_name, read_json

FIELDS = {  # ViTConfig field <- config.json key
    "hidden": "hidden_size", "mlp": "intermediate_size", "layers": "num_hidden_layers",
    "heads": "num_attention_heads", "image": "image_size", "patch": "patch_size",
}
MODEL_TYPES = ("siglip", "siglip_vision_model", "siglip2", "siglip2_vision_model")


def read_vision_config(path: str) -> tuple[str, dict[str, Any]]:
    """(name, the ViTConfig fields) from a config.json; one-line errors naming the key."""
    doc = read_json(path, MAX_CONFIG_BYTES)
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object (a Hugging Face config.json)", path)
    kind = doc.get("model_type")
    if kind not in MODEL_TYPES:
        raise InputError(f"model_type {kind!r} is not a SigLIP vision tower; expected one of "
                         f"{', '.join(MODEL_TYPES)}", path)
    vision = doc.get("vision_config", doc) if kind in ("siglip", "siglip2") else doc
    place = f"{path}: vision_config" if vision is not doc else path
    if not isinstance(vision, dict):
        raise InputError("vision_config must be an object", path)
    fields: dict[str, Any] = {}
    for field, key in FIELDS.items():
        value = vision.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{key} must be a positive integer, found {json.dumps(value)}", place)
        fields[field] = value
    channels = vision.get("num_channels", 3)
    if isinstance(channels, bool) or not isinstance(channels, int) or channels < 1:
        raise InputError(f"num_channels must be a positive integer, found {json.dumps(channels)}", place)
    fields["channels"] = channels
    head = vision.get("vision_use_head", True)
    if not isinstance(head, bool):
        raise InputError(f"vision_use_head must be true or false, found {json.dumps(head)}", place)
    fields["map_head"] = head
    name = doc.get("_name_or_path") or Path(path).resolve().parent.name or Path(path).stem
    if not isinstance(name, str):
        raise InputError(f"_name_or_path must be a string, found {json.dumps(name)[:80]}", path)
    return display_name(name), fields
