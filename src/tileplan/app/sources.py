"""Where a model comes from, by how it is named: a built-in name, a Hugging Face
`config.json` (SigLIP towers by the built-in builder, any other architecture through
transformers on the meta device and torch.export), an ONNX file (`.onnx`), a saved
ExportedProgram (`.pt2`), `synthetic:N` (a chain of about N timeline values, built
in; `tileplan.builtins.synthetic`) or a Hugging Face hub id (its config.json from the
local cache or the hub: `locate`). `import_graph` imports one once per process
(cached on the path, its modification time and the shape knobs), so what-if rows
re-plan without re-exporting. The built-in names come from `tileplan.builtins.siglip`
(read when asked, not at import).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from functools import lru_cache
from typing import Any

from tileplan.errors import InputError, ModelError, option
from tileplan.importers.graph import Graph
from tileplan.ioutil import MAX_CONFIG_BYTES, display_name, read_json
from tileplan.runtime import library_output_captured

#: the sequence length a text model is planned at unless told
DEFAULT_SEQUENCE = 128
#: model_type values the built-in SigLIP builder plans from a config.json
SIGLIP_TYPES = ("siglip", "siglip_vision_model", "siglip2", "siglip2_vision_model")


#: a Hugging Face hub id: `name` or `org/name` of letters, digits, `-`, `_` and `.`
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95})?")


def is_hub_id(model: str) -> bool:
    """Whether `model` is tried as a Hugging Face hub id: not a built-in name, not
    `synthetic:N`, no file at that path, and shaped like `org/name` or `name`."""
    from tileplan.builtins.siglip import CONFIGS
    return (model not in CONFIGS and not model.lower().startswith("synthetic:") and _HUB_ID.fullmatch(model) is not None
            and not model.lower().endswith((".json", ".onnx", ".pt2")) and not os.path.lexists(model))


@lru_cache(maxsize=64)
def locate(model: str) -> str:
    """The file a MODEL argument names: itself, or for a hub id its `config.json` from
    the local Hugging Face cache (`HF_HOME`, `HF_HUB_CACHE`), else downloaded from the
    hub when the machine is online (not with `HF_HUB_OFFLINE=1`). Only the
    configuration is fetched, never weights."""
    if not is_hub_id(model):
        return model
    try:
        from transformers.utils import cached_file
    except ImportError:  # pragma: no cover - the import extra is installed by make test
        raise InputError("a Hugging Face hub id needs the `import` extra: pip install 'tileplan[import]'",
                         model) from None
    hint = (f"download it (`hf download {model} config.json`, or from the model's page) and pass the "
            "config.json's path")
    cache = os.environ.get("HF_HUB_CACHE") or (os.path.join(os.environ["HF_HOME"], "hub")
                                               if os.environ.get("HF_HOME") else None)
    with library_output_captured():
        for local_only in (True, False):
            if not local_only and not _hub_reachable():
                raise InputError(f"unknown model {model!r}: not a built-in model ({_builtins()}), a file or a Hugging "
                                 f"Face model whose config.json is in the local cache, and the hub is not reachable "
                                 f"(offline); {hint}")
            try:
                path = cached_file(model, "config.json", cache_dir=cache, local_files_only=local_only,
                                   _raise_exceptions_for_missing_entries=False)
            except Exception as e:  # not cached, gated, unknown: transformers raises OSError and others
                if local_only:
                    continue
                raise InputError(f"unknown model {model!r}: not a built-in model ({_builtins()}), a file or a Hugging "
                                 f"Face model in the local cache, and the hub did not give its config.json "
                                 f"({type(e).__name__}: {_first_line(e, 160)}); {hint}") from None
            if path:
                return str(path)
    raise InputError(f"the Hugging Face hub has no config.json for this model; {hint}", model)


def _builtins() -> str:
    from tileplan.builtins.siglip import CONFIGS
    return ", ".join(sorted(CONFIGS))


def _hub_reachable() -> bool:
    """False when offline (`HF_HUB_OFFLINE`) or when the hub's host name does not
    resolve: then the hub client would retry for about 25 s before saying so."""
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    try:
        from huggingface_hub import constants
        host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
        socket.getaddrinfo(host, 443)
    except (OSError, ImportError, UnicodeError):
        return False
    return True


def kind_of(model: str) -> str:
    """See `_kind_of`; cached on the file's absolute path and modification time, so a
    relative path read from another folder, or a file changed since, is read again."""
    try:
        st = os.stat(model)
        key: tuple[str, int] = (os.path.abspath(model), st.st_mtime_ns)
    except (OSError, ValueError):
        key = ("", 0)
    return _kind_of(model, key)


@lru_cache(maxsize=64)
def _kind_of(model: str, key: tuple[str, int]) -> str:
    """"builtin", "siglip-config", "hf-config", "onnx", "exported" or "synthetic"
    (`synthetic:N`, the chain of about N timeline values of `tileplan.builtins.synthetic`).
    A hub id is the kind of the config.json `locate` finds for it."""
    lower = model.lower()
    if lower.startswith("synthetic:"):
        return "synthetic"
    if lower.endswith(".onnx"):
        return "onnx"
    if lower.endswith(".pt2"):
        return "exported"
    if is_hub_id(model):
        return kind_of(locate(model))
    if lower.endswith(".json"):
        doc = read_json(model, MAX_CONFIG_BYTES)
        kind = doc.get("model_type") if isinstance(doc, dict) else None
        return "siglip-config" if kind in SIGLIP_TYPES or not isinstance(doc, dict) else "hf-config"
    return "builtin"


def import_graph(model: str, batch: int | None = None, sequence_length: int | None = None,
                 image_size: int | None = None, layers: int | None = None, kv_cache: int | None = None) -> Graph:
    path = locate(model)
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", model) from None
    except ValueError:  # a NUL in the path
        raise InputError("a path must not contain a NUL character", repr(model)) from None
    with library_output_captured():
        graph = _import(path, (os.path.abspath(path), stamp), batch, sequence_length, image_size, layers, kv_cache)
    return graph if path == model else replace(graph, name=display_name(model))


@lru_cache(maxsize=8)
def _import(model: str, key: tuple[str, int], batch: int | None, sequence_length: int | None, image_size: int | None,
            layers: int | None, kv_cache: int | None = None) -> Graph:
    kind = kind_of(model)
    if kv_cache is not None and kind != "hf-config":
        raise InputError(f"{option('kv_cache')} plans a decoding step of a decoder built from its config.json (or of a "
                         "module, from Python); this model's file has its own inputs", model)
    if kind == "onnx":
        if image_size is not None or layers is not None:
            raise InputError(f"an ONNX file has fixed image size and layers; only {option('batch')} and "
                             f"{option('sequence_length')} set its symbolic dimensions", model)
        from tileplan.importers.onnx import from_onnx
        return from_onnx(model, batch=batch, sequence_length=sequence_length)
    if kind == "exported":
        if any(x is not None for x in (batch, sequence_length, image_size, layers)):
            raise InputError("a saved ExportedProgram has fixed shapes and layers: export again to change them",
                             model)
        from tileplan.importers.torch_export import load_exported
        return load_exported(model)
    if kind == "hf-config":
        return from_hf_config(model, batch, sequence_length, image_size, layers, kv_cache)
    raise AssertionError(kind)


def from_hf_config(path: str, batch: int | None, sequence_length: int | None, image_size: int | None,
                   layers: int | None, kv_cache: int | None = None) -> Graph:
    """Any architecture transformers builds from its config: random weights on the meta
    device (nothing downloaded, nothing in memory), exported with example inputs of
    the model's main input (`input_ids` [batch, sequence], `pixel_values` [batch,
    channels, image, image])."""
    try:
        import torch
        from transformers import AutoConfig
    except ImportError:  # pragma: no cover - the import extra is installed by make test
        raise InputError("planning a Hugging Face config.json needs the `import` extra: "
                         "pip install 'tileplan[import]'", path) from None
    from tileplan.importers.torch_export import from_torch
    doc = read_json(path, MAX_CONFIG_BYTES)
    if not isinstance(doc, dict):
        raise InputError(f"expected a JSON object (a Hugging Face config.json), found a {type(doc).__name__}", path)
    kind = doc.get("model_type")
    if not isinstance(kind, str):
        raise InputError("no model_type: expected a Hugging Face config.json", path)
    fields = {k: v for k, v in doc.items() if k != "model_type"}
    try:
        cfg = AutoConfig.for_model(kind, **fields)
    except Exception as e:  # transformers and huggingface_hub validate with many exception types
        raise InputError(f"transformers cannot build a {display_name(kind)!r} configuration: {type(e).__name__}: "
                         f"{_first_line(e)}", path) from None
    cfg.use_cache = False
    if layers is not None:
        if not hasattr(cfg, "num_hidden_layers"):
            raise InputError(f"{option('layers')}: this configuration has no num_hidden_layers", path)
        cfg.num_hidden_layers = layers
    for key in ("num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size", "num_attention_heads"):
        value = getattr(cfg, key, None)
        limit = MAX_CONFIG_LAYERS if key == "num_hidden_layers" else MAX_CONFIG_SIZE
        if isinstance(value, int) and not 0 < value <= limit:
            raise InputError(f"{key} must be in [1, {limit}], found {value}", path)
    check_sizes(cfg.to_dict(), path)
    model_class, architecture = model_class_for(cfg, doc.get("architectures"))
    try:
        with torch.device("meta"):
            model = model_class.from_config(cfg) if hasattr(model_class, "from_config") else \
                model_class._from_config(cfg)
    except Exception as e:
        raise ModelError(f"transformers cannot build the model: {type(e).__name__}: {_first_line(e)}",
                         path) from None
    batch = batch or 1
    name = doc.get("_name_or_path")
    label = display_name(name) if isinstance(name, str) and name else config_name(path, kind)
    if kv_cache is not None:  # one decoding step of sequence_length tokens (default 1) after kv_cache positions
        from tileplan.importers.decode import decode_step
        graph = decode_step(model, kv_cache, batch, sequence_length or 1, label)
        return replace(graph, architecture=architecture)
    example = _example_input(model, cfg, batch, sequence_length, image_size, path)
    graph = from_torch(model, (example,), label)
    return replace(graph, architecture=architecture)


def max_positions(model: str) -> int | None:
    """The most positions a config.json's model takes (`max_position_embeddings`,
    `n_positions`, ...; its text configuration's for a composite model), if it says."""
    try:
        doc = read_json(locate(model), MAX_CONFIG_BYTES)
    except InputError:
        return None
    for section in (doc, doc.get("text_config") if isinstance(doc, dict) else None):
        if isinstance(section, dict):
            for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx"):
                value = section.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
    return None


#: keys of a configuration (at any depth: a composite model's text_config, vision_config...)
#: that count layers, and their most; and the most of any other size
_LAYER_KEYS = re.compile(r"(^|_)(layers|n_layer|depths?)$")
MAX_CONFIG_LAYERS = 1000
#: a list of layer counts (a Swin's depths per stage); other lists under layer keys index layers
_DEPTHS = re.compile(r"(^|_)depths$")
_SIZE_KEYS = re.compile(r"(size|dim|heads|channels|vocab|positions|embd|d_model|d_ff|d_kv|n_inner|ctx)$")
MAX_CONFIG_SIZE = 1 << 24


def check_sizes(config: object, path: str, place: str = "") -> None:
    """Every layer count at most MAX_CONFIG_LAYERS and every size at most
    MAX_CONFIG_SIZE, in the configuration and each of its sub-configurations: a
    composite model's text_config with a million layers would otherwise take minutes and
    gigabytes to build before anything could say so."""
    stack: list[tuple[object, str]] = [(config, place)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{where}.{key}" if where else str(key)
                if isinstance(value, (dict, list)):
                    stack.append((value, here))
                elif isinstance(value, bool) or not isinstance(value, int):
                    continue
                elif _LAYER_KEYS.search(str(key)) and value > MAX_CONFIG_LAYERS:
                    raise InputError(f"{here} is {value}, more than the {MAX_CONFIG_LAYERS} layers tileplan plans",
                                     path)
                elif _SIZE_KEYS.search(str(key)) and value > MAX_CONFIG_SIZE:
                    raise InputError(f"{here} is {value}, more than the {MAX_CONFIG_SIZE} tileplan plans", path)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                here = f"{where}[{i}]"
                if isinstance(value, (dict, list)):
                    stack.append((value, here))
                elif (isinstance(value, int) and not isinstance(value, bool) and _DEPTHS.search(where)
                      and value > MAX_CONFIG_LAYERS):
                    raise InputError(f"{here} is {value}, more than the {MAX_CONFIG_LAYERS} layers tileplan plans",
                                     path)


def _example_input(model: Any, cfg: Any, batch: int, sequence_length: int | None, image_size: int | None,
                   path: str) -> Any:
    """The model's main input on the meta device: `input_ids` [batch, sequence] or
    `pixel_values` [batch, channels, image, image]."""
    import torch

    main = getattr(model, "main_input_name", "input_ids")
    if main == "input_ids":
        limit = getattr(cfg, "max_position_embeddings", None)
        limit = limit if isinstance(limit, int) and limit > 0 else DEFAULT_SEQUENCE
        seq = sequence_length or min(DEFAULT_SEQUENCE, limit)
        return torch.zeros(batch, seq, dtype=torch.long, device="meta")
    if main == "pixel_values":
        vision = getattr(cfg, "vision_config", cfg)
        found = image_size or getattr(vision, "image_size", None) or 224
        first: object = found[0] if isinstance(found, (list, tuple)) and found else found
        checked = []
        for key, value in (("image_size", first), ("num_channels", getattr(vision, "num_channels", 3))):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
                raise InputError(f"{key} must be an integer in [1, 65536], found {str(value)[:40]}", path)
            checked.append(value)
        size, channels = checked
        return torch.zeros(batch, channels, size, size, device="meta")
    raise InputError(f"the model's main input is {str(main)[:40]!r}; tileplan builds input_ids or pixel_values from "
                     "a config (export the model yourself and plan the .pt2 or .onnx)", path)


def model_class_for(config: Any, architectures: object) -> tuple[Any, str]:
    """The transformers class a config.json names in `architectures` (its first entry:
    `BertForQuestionAnswering` plans the QA head, `LlamaForCausalLM` the LM head), when
    transformers has it and it takes this configuration; else the base model
    (`AutoModel`; build either with `from_config`, or `_from_config` for a model
    class). Returns the class and what was chosen, in words (the report's
    `program.architecture`)."""
    import transformers
    from transformers import AutoModel

    names = architectures if isinstance(architectures, list) else []
    first = names[0] if names and isinstance(names[0], str) and names[0].isidentifier() else None
    if first is not None:
        cls = getattr(transformers, first, None)
        config_class = getattr(cls, "config_class", None)
        if cls is not None and hasattr(cls, "_from_config") and isinstance(config, config_class or ()):
            return cls, first
        base = AutoModel._model_mapping.get(type(config), None) if hasattr(AutoModel, "_model_mapping") else None
        fallback = getattr(base, "__name__", "the base model")
        return AutoModel, f"{fallback} (architectures names {display_name(first, 60)!r}, which transformers does not " \
                          f"build for this configuration)"
    base = AutoModel._model_mapping.get(type(config), None) if hasattr(AutoModel, "_model_mapping") else None
    return AutoModel, getattr(base, "__name__", "the base model")


def _first_line(e: BaseException, limit: int = 300) -> str:
    """An exception's text on one line (whitespace runs folded), at most `limit`
    characters."""
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def config_name(path: str, fallback: str) -> str:
    """A configuration's model name when it names none itself: a `config.json`'s
    folder name (the same from inside the folder as from outside it), any other
    file's stem."""
    absolute = os.path.abspath(path)
    if os.path.basename(absolute) != "config.json":
        return display_name(os.path.splitext(os.path.basename(absolute))[0] or fallback)
    return display_name(os.path.basename(os.path.dirname(absolute)) or fallback)
