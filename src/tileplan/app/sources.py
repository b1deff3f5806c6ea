"""Where a model comes from, by how it is named: a built-in name, a Hugging Face
`config.json` (SigLIP towers by the built-in builder, any other architecture built by
`tileplan.importers.hf_models`), an ONNX file (`.onnx`), a saved
ExportedProgram (`.pt2`), `synthetic:N` (a chain of about N timeline values, built
in; `tileplan.builtins.synthetic`) or a Hugging Face hub id (its config.json from the
local cache or the hub: `locate`). `import_graph` imports one once per process
(cached on the path, its modification time and the shape knobs), so what-if rows
re-plan without re-exporting; `object_graph` imports a model given as a Python object
(a module on its example inputs, an ExportedProgram, a Graph) for the Python API. The
built-in names come from `tileplan.builtins.siglip` (read when asked, not at import).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from tileplan.errors import InputError, option
from tileplan.model.cache import CacheKind
from tileplan.importers.graph import Graph
from tileplan.importers.hf_models import first_line, from_hf_config
from tileplan.ioutil import MAX_CONFIG_BYTES, display_name, read_json
from tileplan.runtime import library_output_captured

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
    configuration is fetched, never weights. A directory names the config.json in it
    (a downloaded model's folder, a hub snapshot)."""
    if os.path.isdir(model):
        inside = os.path.join(model, "config.json")
        if not os.path.isfile(inside):
            raise InputError("a directory without a config.json: expected a model file (config.json, .onnx, .pt2), "
                             "a folder holding a config.json, a hub id or a built-in model", model)
        return inside
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
                                 f"({type(e).__name__}: {first_line(e, 160)}); {hint}") from None
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
    if is_hub_id(model) or os.path.isdir(model):
        return kind_of(locate(model))
    if lower.endswith(".json"):
        doc = read_json(model, MAX_CONFIG_BYTES)
        kind = doc.get("model_type") if isinstance(doc, dict) else None
        return "siglip-config" if kind in SIGLIP_TYPES or not isinstance(doc, dict) else "hf-config"
    return "builtin"


def import_graph(model: str, batch: int | None = None, sequence_length: int | None = None,
                 image_size: int | None = None, layers: int | None = None, kv_cache: int | None = None,
                 kv_cache_kind: CacheKind = CacheKind.DYNAMIC) -> Graph:
    """The model's graph (`kv_cache`: one decoding step with a cache of that many
    positions, of `kv_cache_kind`; importers/decode.py)."""
    path = locate(model)
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", model) from None
    except ValueError:  # a NUL in the path
        raise InputError("a path must not contain a NUL character", repr(model)) from None
    with library_output_captured():
        graph = _import(path, (os.path.abspath(path), stamp), batch, sequence_length, image_size, layers, kv_cache,
                        kv_cache_kind)
    return graph if path == model else replace(graph, name=display_name(model))


@lru_cache(maxsize=8)
def _import(model: str, key: tuple[str, int], batch: int | None, sequence_length: int | None, image_size: int | None,
            layers: int | None, kv_cache: int | None = None, kv_cache_kind: CacheKind = CacheKind.DYNAMIC) -> Graph:
    kind = kind_of(model)
    if kv_cache is None and kv_cache_kind is not CacheKind.DYNAMIC:
        raise InputError(f"{option('kv_cache_kind', kv_cache_kind.value)} needs {option('kv_cache')} (the cache's "
                         "positions)", model)
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
        return from_hf_config(model, batch, sequence_length, image_size, layers, kv_cache, kv_cache_kind)
    raise AssertionError(kind)


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


def object_graph(model: Any, example_inputs: Sequence[Any] | None, kv_cache: int | None = None,
                 kv_cache_kind: CacheKind = CacheKind.DYNAMIC) -> Graph:
    """The graph of a model given as a Python object (the Python API): an imported
    `Graph` as it is, a `torch.export.ExportedProgram`, or a `torch.nn.Module` exported on
    `example_inputs`; `kv_cache`: one decoding step of a transformers decoder module with
    a cache of that many positions (importers/decode.py), reading `input_ids` of
    `example_inputs[0]`'s shape when it is a [batch, tokens] tensor, else [1, 1]."""
    if isinstance(model, Graph):
        if kv_cache is not None:
            raise InputError("kv_cache= needs a torch.nn.Module (a transformers decoder) or a config.json's path")
        return model
    with library_output_captured():
        return _import_object(model, example_inputs, kv_cache, kv_cache_kind)


def _import_object(model: Any, example_inputs: Sequence[Any] | None, kv_cache: int | None,
                   kv_cache_kind: CacheKind) -> Graph:
    from tileplan.importers.torch_export import _torch, from_exported, from_torch
    torch = _torch()
    if kv_cache is not None:
        if not isinstance(model, torch.nn.Module):
            raise InputError("kv_cache= needs a torch.nn.Module (a transformers decoder) or a config.json's path")
        from tileplan.importers.decode import decode_step
        first = example_inputs[0] if example_inputs else None
        batch, tokens = tuple(first.shape) if isinstance(first, torch.Tensor) and first.dim() == 2 else (1, 1)
        return decode_step(model, kv_cache, batch, tokens, kind=kv_cache_kind)
    if kv_cache_kind is not CacheKind.DYNAMIC:
        raise InputError(f"{option('kv_cache_kind', kv_cache_kind.value)} needs {option('kv_cache')} (the cache's "
                         "positions)", type(model).__name__)
    if isinstance(model, torch.export.ExportedProgram):
        return from_exported(model)
    if isinstance(model, torch.nn.Module):
        if example_inputs is None:
            raise InputError("a torch.nn.Module needs example_inputs=(x, ...) to be exported")
        return from_torch(model, tuple(example_inputs))
    raise InputError(f"cannot plan a {type(model).__name__}: expected a torch.nn.Module, an ExportedProgram, a "
                     "Graph, or a path or name")
