"""The tt-transformers frontend as the planner and the CLI call it (`FRONTEND`: the
contract of targets/tenstorrent/frontend.py).

- The model: a config.json's contents (a mapping), a path to a config.json or to the
  folder holding one, or a Hugging Face hub id (its config.json from the local cache or
  the hub, never weights); the model's name is config.json's `_name_or_path`, else the
  folder's or the id's last part (tt-transformers picks its tables by that name).
- Options (`OPTION_KEYS`): `prefill_chunk` (plan one prefill chunk of N tokens),
  `kv_cache` (the cache's positions a user, ModelArgs `max_seq_len`; given without a
  chunk: plan one decode step), `batch` (`max_batch_size`), `precision` (the
  DecodersPrecision preset). Absent: a prefill of tt-transformers' own chunk for the
  model and device on its default 128k-position cache, batch 1, performance.
  Llama-3.2-Vision (Mllama): the vision demo's way, accuracy (ModelArgs' default: no
  optimizations are passed) and unpaged caches; its chunk is the whole prompt (its
  prefill is not chunked), one image of 4 tiles; no other preset is tried.
- Device defaults: the demo's `trace_region_size` for the model and device
  (models/tt_transformers/demo/trace_region_config.py @075e2b4e, else
  simple_text_demo.py's 23,887,872) and, on n300 and t3k, ETH dispatch (tt-transformers'
  grids are 8 x 8: tt-metal's N300 runs set WH_ARCH_YAML=wormhole_b0_80_arch_eth_dispatch.yaml,
  "prefill required 8x8 core grids").
- Knobs: a prefill's chunk (largest), the cache (largest), a decode's batch (largest),
  the other preset.

Worked example: FRONTEND.options("meta-llama/Llama-3.1-8B", {"prefill_chunk": 4096},
n150) -> TtTransformersOptions(PREFILL, prefill_chunk=4096, kv_cache=131072); its words
(("batch", 1), ("kv_cache", 131072), ("prefill_chunk", 4096), ("precision",
"performance")); `reproduce` -> MAX_PREFILL_CHUNK_SIZE=4 and the ModelArgs call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from tileplan.errors import InputError
from tileplan.ioutil import MAX_CONFIG_BYTES, read_json
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontend import Knob, Reproduction, Search
from tileplan.targets.tenstorrent.frontends.tt_transformers.lower import build
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import (
    MAX_PREFILL_CHUNK_SIZES_DIV1024,
    base_model_name,
    model_args,
)
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import (
    MAX_CONTEXT,
    SUPPORTED_BATCHES,
    Mode,
    Preset,
    TtTransformersOptions,
)
from tileplan.targets.tenstorrent.program import Frontend, TtProgram
from tileplan.targets.tenstorrent.tiles import TILE
from tileplan.targets.tenstorrent.versions import DispatchCoreType, Stack

#: simple_text_demo.py's `device_params` trace region (bytes)
DEMO_TRACE_REGION = 23_887_872
#: demo/trace_region_config.py @075e2b4e: (base model, device) -> trace region (bytes)
TRACE_REGIONS: dict[tuple[str, str], int] = {
    ("Llama-3.1-8B", "N150"): 25_000_000,
    ("Llama-3.1-8B", "N300"): 38_000_000,
    ("Llama-3.1-8B", "T3K"): 50_000_000,
    ("Llama-3.3-70B", "T3K"): 90_000_000,
    ("Llama-3.3-70B", "P150"): 80_000_000,
    ("Llama-3.3-70B", "P150x4"): 95_000_000,
    ("Llama-3.1-70B", "T3K"): 90_000_000,
    ("Llama-3.1-70B", "P150"): 90_000_000,
    ("Llama-3.1-70B", "P150x4"): 90_000_000,
    ("Llama-3.2-90B", "T3K"): 20_000_000,
    ("Qwen3-32B", "T3K"): 90_000_000,
    ("Qwen3-32B", "P150"): 90_000_000,
    ("Qwen3-32B", "P150x4"): 90_000_000,
    ("DeepSeek-R1-Distill-Llama-70B", "P150x4"): 90_000_000,
    ("Qwen2.5-72B", "T3K"): 70_000_000,
    ("gemma-3-27b", "T3K"): 70_000_000,
    ("Llama-3.2-3B", "N150"): 10_000_000,
    ("Qwen2.5-VL-7B", "N300"): 10_000_000,
}
#: machine -> tt-transformers' device name (model_config.py determine_device_name)
DEVICE_NAMES = {"n150": "N150", "n300": "N300", "t3k": "T3K", "p100": "P100", "p150": "P150", "p150x4": "P150x4"}
#: the smallest chunk a knob tries (generator.py pads shorter prompts to 128)
SMALLEST_CHUNK = 128


#: the application's hub-id lookup (tileplan.app.tenstorrent registers it): a MODEL
#: string's config.json from the Hugging Face cache or hub, or None when it is no hub id
_HUB: list[Callable[[str], str | None]] = []


def register_hub(lookup: Callable[[str], str | None]) -> None:
    """Make `lookup` the way a hub id becomes its config.json's path."""
    _HUB[:] = [lookup]


def read_config(model: Any) -> tuple[dict[str, Any], str | None]:
    """(config.json's contents, the model's name when config.json lacks `_name_or_path`)."""
    if isinstance(model, Mapping):
        return dict(model), None
    if not isinstance(model, (str, os.PathLike)):
        raise InputError(f"the tt-transformers frontend takes a config.json (a path, its folder or a Hugging Face "
                         f"hub id), not a {type(model).__name__}")
    text = os.fspath(model)
    path = text
    name: str | None
    if os.path.isdir(text):
        path = os.path.join(text, "config.json")
        name = os.path.basename(os.path.normpath(text))
    else:
        located = _HUB[0](text) if _HUB else None
        if located is not None:
            path, name = located, text
        else:
            name = os.path.basename(os.path.dirname(os.path.abspath(text))) or None
    doc = read_json(path, MAX_CONFIG_BYTES)
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object (a Hugging Face config.json)", path)
    return doc, name


def _name(config: Mapping[str, Any], fallback: str | None) -> str:
    raw = config.get("_name_or_path") or fallback or ""
    return str(raw).strip("/").split("/")[-1]


class TtTransformersFrontend:
    """`FRONTEND` (see the module docstring)."""

    frontend = Frontend.TT_TRANSFORMERS
    keys = frozenset({"prefill_chunk", "kv_cache", "batch", "precision"})
    stack = Stack.TT_METAL

    def device_defaults(self, model: Any, options: Any, machine: str) -> Mapping[str, Any]:
        config, fallback = read_config(model)
        dname = DEVICE_NAMES.get(machine, machine.upper())
        base = base_model_name(_name(config, fallback))
        out: dict[str, Any] = {"trace_region_size": TRACE_REGIONS.get((base, dname), DEMO_TRACE_REGION)}
        if machine in ("n300", "t3k"):
            out["dispatch_core_type"] = DispatchCoreType.ETH
        return out

    def options(self, model: Any, given: Mapping[str, Any], device: Device) -> TtTransformersOptions:
        config, fallback = read_config(model)
        args = model_args(config, device, fallback)
        chunk = given.get("prefill_chunk")
        kv = given.get("kv_cache")
        vision = args.vision is not None
        preset = given.get("precision", Preset.ACCURACY if vision else Preset.PERFORMANCE)
        preset = preset if isinstance(preset, Preset) else Preset.parse(str(preset))
        batch = given.get("batch", 1)
        mode = Mode.DECODE if kv is not None and chunk is None else Mode.PREFILL
        if kv is None:
            kv = max(MAX_CONTEXT, -(-(chunk or 0) // TILE) * TILE)
        if mode is Mode.PREFILL and chunk is None:
            chunk = min(args.max_prefill_chunk_size, kv)
        return TtTransformersOptions(mode=mode, prefill_chunk=chunk, kv_cache=kv, batch=batch, preset=preset,
                                     paged=not vision, vision=vision)

    def lower(self, model: Any, options: TtTransformersOptions, device: Device) -> TtProgram:
        config, fallback = read_config(model)
        return build(config, options, device, fallback)

    def words(self, options: TtTransformersOptions) -> tuple[tuple[str, Any], ...]:
        chunk = options.prefill_chunk if options.mode is Mode.PREFILL else None
        return (("batch", options.batch), ("kv_cache", options.kv_cache), ("prefill_chunk", chunk),
                ("precision", options.preset.value))

    def knobs(self, options: TtTransformersOptions, device: Device) -> tuple[Knob, ...]:
        other = tuple(p.value for p in Preset)
        knobs = []
        if options.mode is Mode.PREFILL:
            chunk = options.prefill_chunk or SMALLEST_CHUNK
            chunks = _powers(SMALLEST_CHUNK, options.kv_cache, chunk)
            knobs.append(Knob("prefill_chunk", Search.LARGEST, chunks, chunk))
            knobs.append(Knob("kv_cache", Search.LARGEST, _powers(max(chunk, 1024), MAX_CONTEXT, options.kv_cache),
                              options.kv_cache))
        else:
            knobs.append(Knob("kv_cache", Search.LARGEST, _powers(1024, MAX_CONTEXT, options.kv_cache),
                              options.kv_cache))
            knobs.append(Knob("batch", Search.LARGEST, SUPPORTED_BATCHES, options.batch))
        if not options.vision:  # Llama-3.2-Vision runs one preset (lower.py)
            knobs.append(Knob("precision", Search.EACH, other, options.preset.value))
        return tuple(knobs)

    def turn(self, options: TtTransformersOptions, key: str, value: Any) -> TtTransformersOptions:
        if key == "precision":
            return replace(options, preset=Preset.parse(str(value)))
        if key not in self.keys:
            raise InputError(f"{key} is not an option of the tt-transformers frontend")
        return replace(options, **{key: value})

    def reproduce(self, options: TtTransformersOptions, program: TtProgram, device: Device, moved: tuple[str, ...]
                  ) -> Reproduction:
        lines = []
        chunk = options.prefill_chunk
        if options.vision:
            lines.append(f"create_multimodal_model(mesh_device, max_batch_size={options.batch}, "
                         f"max_seq_len={options.kv_cache})")
            if chunk is not None:
                lines.append(f"a prompt of {chunk} tokens with one image (prefilled whole: "
                             "generator.py prefill_forward_llama_vision)")
            lines += [f"{name}: memory_config=ttnn.DRAM_MEMORY_CONFIG" for name in moved]
            return Reproduction(tuple(lines))
        if options.mode is Mode.PREFILL and chunk is not None:
            if chunk % 1024 == 0:
                lines.append(f"MAX_PREFILL_CHUNK_SIZE={chunk // 1024} (environment, in units of 1024 tokens)")
            else:
                lines.append(f"model_args.max_prefill_chunk_size = {chunk}")
        lines.append(f"ModelArgs(mesh_device, max_batch_size={options.batch}, max_seq_len={options.kv_cache}, "
                     f"optimizations=DecodersPrecision.{options.preset.value})")
        if options.paged:
            lines.append(f"PagedAttentionConfig(block_size={options.page_block_size}, "
                         f"max_num_blocks={options.max_num_blocks})")
        lines += [f"{name}: memory_config=ttnn.DRAM_MEMORY_CONFIG" for name in moved]
        return Reproduction(tuple(lines))


def _powers(low: int, high: int, current: int) -> tuple[int, ...]:
    """Powers of two from `low` to `high`, with `current` among them (ascending)."""
    values = set()
    v = low
    while v <= high:
        values.add(v)
        v *= 2
    values.add(current)
    return tuple(sorted(values))


FRONTEND = TtTransformersFrontend()

__all__ = ["FRONTEND", "MAX_PREFILL_CHUNK_SIZES_DIV1024", "TtTransformersFrontend", "read_config"]
