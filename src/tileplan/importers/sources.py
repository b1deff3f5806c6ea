"""Where a model comes from, by how it is named: a built-in name, a Hugging Face
`config.json` (SigLIP towers by the built-in builder, any other architecture through
transformers on the meta device and torch.export), an ONNX file (`.onnx`), a saved
ExportedProgram (`.pt2`) or `synthetic:N` (a chain of about N timeline values, built
in; `tileplan.model.synthetic`). `import_graph` imports one once per process (cached on the
path, its modification time and the shape knobs), so what-if rows re-plan without
re-exporting.
"""

from __future__ import annotations

import os
from functools import lru_cache

from tileplan.errors import InputError, ModelError
from tileplan.importers.graph import Graph
from tileplan.ioutil import read_json

#: the sequence length a text model is planned at unless told
DEFAULT_SEQUENCE = 128
#: model_type values the built-in SigLIP builder plans from a config.json
SIGLIP_TYPES = ("siglip", "siglip_vision_model", "siglip2", "siglip2_vision_model")


@lru_cache(maxsize=64)
def kind_of(model: str) -> str:
    """"builtin", "siglip-config", "hf-config", "onnx", "exported" or "synthetic"
    (`synthetic:N`, the chain of about N timeline values of `tileplan.model.synthetic`)."""
    lower = model.lower()
    if lower.startswith("synthetic:"):
        return "synthetic"
    if lower.endswith(".onnx"):
        return "onnx"
    if lower.endswith(".pt2"):
        return "exported"
    if lower.endswith(".json"):
        doc = read_json(model)
        kind = doc.get("model_type") if isinstance(doc, dict) else None
        return "siglip-config" if kind in SIGLIP_TYPES or not isinstance(doc, dict) else "hf-config"
    return "builtin"


def import_graph(model: str, batch: int | None = None, sequence_length: int | None = None,
                 image_size: int | None = None, layers: int | None = None) -> Graph:
    try:
        stamp = os.stat(model).st_mtime_ns
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", model) from None
    return _import(model, stamp, batch, sequence_length, image_size, layers)


@lru_cache(maxsize=8)
def _import(model: str, stamp: int, batch: int | None, sequence_length: int | None, image_size: int | None,
            layers: int | None) -> Graph:
    kind = kind_of(model)
    if kind == "onnx":
        if image_size is not None or layers is not None:
            raise InputError("an ONNX file has fixed image size and layers; only --batch and --sequence-length "
                             "set its symbolic dimensions", model)
        from tileplan.importers.onnx import from_onnx
        return from_onnx(model, batch=batch, sequence_length=sequence_length)
    if kind == "exported":
        if any(x is not None for x in (batch, sequence_length, image_size, layers)):
            raise InputError("a saved ExportedProgram has fixed shapes and layers: export again to change them",
                             model)
        from tileplan.importers.torch_export import load_exported
        return load_exported(model)
    if kind == "hf-config":
        return from_hf_config(model, batch, sequence_length, image_size, layers)
    raise AssertionError(kind)


def from_hf_config(path: str, batch: int | None, sequence_length: int | None, image_size: int | None,
                   layers: int | None) -> Graph:
    """Any architecture transformers builds from its config: random weights on the meta
    device (nothing downloaded, nothing in memory), exported with example inputs of
    the model's main input (`input_ids` [batch, sequence], `pixel_values` [batch,
    channels, image, image])."""
    try:
        import torch
        from transformers import AutoConfig, AutoModel
    except ImportError:  # pragma: no cover - the import extra is installed by make test
        raise InputError("planning a Hugging Face config.json needs the `import` extra: "
                         "pip install 'tileplan[import]'", path) from None
    from tileplan.importers.torch_export import from_torch
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise InputError(f"expected a JSON object (a Hugging Face config.json), found a {type(doc).__name__}", path)
    kind = doc.get("model_type")
    if not isinstance(kind, str):
        raise InputError("no model_type: expected a Hugging Face config.json", path)
    fields = {k: v for k, v in doc.items() if k != "model_type"}
    try:
        cfg = AutoConfig.for_model(kind, **fields)
    except (ValueError, KeyError, TypeError) as e:
        raise InputError(f"transformers cannot build a {kind!r} configuration: {str(e).splitlines()[0]}",
                         path) from None
    cfg.use_cache = False
    if layers is not None:
        if not hasattr(cfg, "num_hidden_layers"):
            raise InputError("--layers: this configuration has no num_hidden_layers", path)
        cfg.num_hidden_layers = layers
    for key in ("num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size", "num_attention_heads"):
        value = getattr(cfg, key, None)
        limit = 1000 if key == "num_hidden_layers" else 1 << 24
        if isinstance(value, int) and not 0 < value <= limit:
            raise InputError(f"{key} must be in [1, {limit}], found {value}", path)
    try:
        with torch.device("meta"):
            model = AutoModel.from_config(cfg)
    except Exception as e:
        raise ModelError(f"transformers cannot build the model: {type(e).__name__}: {str(e).splitlines()[0]}",
                         path) from None
    batch = batch or 1
    main = getattr(model, "main_input_name", "input_ids")
    if main == "input_ids":
        limit = getattr(cfg, "max_position_embeddings", None) or DEFAULT_SEQUENCE
        seq = sequence_length or min(DEFAULT_SEQUENCE, limit)
        example = torch.zeros(batch, seq, dtype=torch.long, device="meta")
    elif main == "pixel_values":
        vision = getattr(cfg, "vision_config", cfg)
        found = image_size or getattr(vision, "image_size", None) or 224
        size = int(found[0] if isinstance(found, (list, tuple)) else found)
        channels = int(getattr(vision, "num_channels", 3))
        example = torch.zeros(batch, channels, size, size, device="meta")
    else:
        raise InputError(f"the model's main input is {main!r}; tileplan builds input_ids or pixel_values from a "
                         "config (export the model yourself and plan the .pt2 or .onnx)", path)
    name = doc.get("_name_or_path") or kind
    return from_torch(model, (example,), str(name))
