"""`build(config, options, device) -> TtProgram`: a decoder as tt-metal's tt-transformers
runs it on one chip of `device` (n300: each chip's half of the 2-way tensor-parallel
model, p150x4: each chip's quarter, t3k: each chip's eighth; tt-frontends A12), one prefill or one decode step
(options.py). On a mesh, builds before tt-metal PR #25222 (2025-07-17: the collectives'
fabric mux and workers) are refused: their collectives are not modelled (ops/tt_ccl.py).

The steps: ModelArgs from the config.json (model_args.py; an architecture tt-transformers
does not implement is refused in one line naming it and the supported ones), the
precisions of every layer (precision.py), the persistent tensors (weights.py), then the
operations (prefill.py / decode.py) as tt-transformers calls them.

Worked example: `build(llama_3_1_8b_config, TtTransformersOptions(prefill_chunk=4096,
kv_cache=65536), load_device("n150", stack=Stack.TT_METAL))` -> the 32 layers' weights in
DRAM (bfp4 w1 / w3, bfp8 elsewhere; decoder 31's w1 / w3 bfp8 from
performance_decoder_config.json), 64k positions of bfp8 paged K and V per layer, and the
~700 operations of a 4,096-token prefill.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_transformers.emit import Emit
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_decode import MllamaDecode
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_prefill import MllamaPrefill
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_weights import upload_mllama_weights
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs, model_args
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import Mode, Preset, TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import DecodersPrecision, decoders_precision
from tileplan.targets.tenstorrent.frontends.tt_transformers.prefill import Prefill, padded_prefill_len
from tileplan.targets.tenstorrent.frontends.tt_transformers.weights import upload_weights
from tileplan.targets.tenstorrent.ops.tt_all_gather import ASYNC_MINIMAL_SINCE, factory_for
from tileplan.targets.tenstorrent.program import TtProgram


#: tt-metal PR #25222 merged: all-gather and reduce-scatter with the fabric mux
FABRIC_MUX_SINCE = "2025-07-17"
#: generator_vllm.py: the longest prompt vLLM takes for Llama-3.2-11B-Vision on an N300
VLLM_N300_MAX_PROMPT = 8192
#: the Llama-3.2-Vision whose vision tower tt-transformers converts to bfloat8_b (not modelled)
MLLAMA_90B = "Llama-3.2-90B"
#: the users one decode step of Llama-3.2-Vision is modelled for (its masks: one tile of rows)
MLLAMA_MAX_DECODE_BATCH = 32


def prefill_length(args: ModelArgs, options: TtTransformersOptions) -> int:
    """The tokens of the planned prefill: the chunk asked for (tt-transformers' own
    largest chunk by default), padded as generator.py pads a prompt
    (`get_padded_prefill_len`)."""
    chunk = options.prefill_chunk if options.prefill_chunk is not None else min(args.max_prefill_chunk_size,
                                                                                  options.kv_cache)
    return padded_prefill_len(chunk)


def _require_cache_holds(seq: int, options: TtTransformersOptions) -> None:
    """A prefill's keys and values go into the cache: its positions hold the padded prefill."""
    if seq > options.kv_cache:
        raise InputError(f"a {seq}-token prefill (padded) does not fit a {options.kv_cache}-position KV cache; "
                         f"hint: kv_cache >= {seq}")


def build(config: Mapping[str, Any], options: TtTransformersOptions, device: Device,
          name: str | None = None) -> TtProgram:
    """The program one chip of `device` runs (see the module docstring). `name`: the
    model's name when config.json has no `_name_or_path`."""
    args = model_args(config, device, name)
    if device.chips > 1 and device.version < FABRIC_MUX_SINCE:
        raise InputError(f"tt-metal build {device.version} on {device.machine}: the collectives before PR #25222 "
                         f"({FABRIC_MUX_SINCE}) are not modelled; hint: a later --tt-version")
    precision = decoders_precision(args.name, args.base_name, args.n_layers, options.preset)
    grid = (device.worker_grid.columns, device.worker_grid.rows)
    if args.vision is not None:
        return _mllama(args, options, device, precision, grid)
    if options.mode is Mode.PREFILL:
        seq = prefill_length(args, options)
        _require_cache_holds(seq, options)
        e = Emit(f"{args.name} prefill {seq} on {args.device_name}")
        weights = upload_weights(e, args, options, precision, grid, device.dram_banks)
        outputs = Prefill(e, args, options, precision, weights, seq).run()
        return e.build(outputs)
    from tileplan.targets.tenstorrent.frontends.tt_transformers.decode import Decode
    e = Emit(f"{args.name} decode batch {options.batch} kv {options.kv_cache} on {args.device_name}")
    weights = upload_weights(e, args, options, precision, grid, device.dram_banks)
    outputs = Decode(e, args, options, precision, weights, grid).run()
    return e.build(outputs)


def _mllama(args: ModelArgs, options: TtTransformersOptions, device: Device, precision: DecodersPrecision,
            grid: tuple[int, int]) -> TtProgram:
    """Llama-3.2-Vision: its weights (mllama_weights.py) and one prefill of the whole
    padded prompt with one image (mllama_prefill.py) or one decode step (mllama_decode.py).
    Refused in one line: the 90B (its bfloat8_b vision tower is not modelled); another
    precision preset than tt-transformers' (ModelArgs' default, accuracy: the vision demo
    passes no optimizations and vLLM asserts 'Custom optimizations are not supported for
    this model'); paged caches without vLLM (the text model's paged caches come from
    vLLM); on a mesh, a build without ttnn.all_gather
    (before tt-metal PR #30414); on an N300 under vLLM, a prompt over 8,192 tokens
    (generator_vllm.py MllamaMultiModalProcessor: 'TT-LLama11B-Vision does not support
    prompts longer than 8192 tokens on N300')."""
    if args.base_name == MLLAMA_90B:
        raise InputError(f"{args.name}: tt-transformers runs Llama-3.2-90B-Vision on a T3K only, its vision tower "
                         "converted to bfloat8_b (simple_vision_demo.py create_multimodal_model: 'use bfp8 ... or the "
                         "model won't fit in memory'); that conversion is not modelled yet; planned: "
                         "Llama-3.2-11B-Vision")
    if options.preset is not Preset.ACCURACY:
        raise InputError(f"{args.name}: tt-transformers runs Llama-3.2-Vision with ModelArgs' default precisions "
                         "(DecodersPrecision.accuracy): create_multimodal_model passes no optimizations and vLLM "
                         "asserts 'Custom optimizations are not supported for this model'; hint: precision accuracy")
    if options.paged != options.vllm:
        raise InputError(f"{args.name}: the vision demo's caches are not paged (create_multimodal_model "
                         "use_paged_kv_cache=False) and vLLM's are (its page tables); hint: vllm with paged, or "
                         "neither")
    factory = factory_for(device.version)
    if device.chips > 1 and factory is None:
        raise InputError(f"tt-metal build {device.version} on {device.machine}: Llama-3.2-Vision's ttnn.all_gather "
                         f"before PR #30414 ({ASYNC_MINIMAL_SINCE}) is not modelled; hint: a later --tt-version")
    if options.mode is Mode.DECODE:
        if options.batch > MLLAMA_MAX_DECODE_BATCH:
            raise InputError(f"batch {options.batch}: Llama-3.2-Vision's decode is modelled for at most "
                             f"{MLLAMA_MAX_DECODE_BATCH} users (one tile of rows)")
        e = Emit(f"{args.name} decode batch {options.batch} kv {options.kv_cache} on {args.device_name}")
        weights = upload_mllama_weights(e, args, options, precision, grid, device.dram_banks)
        outputs = MllamaDecode(e, args, options, precision, weights, grid, factory).run()
        return e.build(outputs)
    seq = prefill_length(args, options)
    if options.vllm and args.device_name == "N300" and seq > VLLM_N300_MAX_PROMPT:
        raise InputError(f"TT-LLama11B-Vision does not support prompts longer than {VLLM_N300_MAX_PROMPT} tokens on "
                         f"N300 (a {seq}-token prompt; tt-transformers generator_vllm.py MAX_PROMPT_LEN)")
    _require_cache_holds(seq, options)
    e = Emit(f"{args.name} prefill {seq} on {args.device_name}")
    weights = upload_mllama_weights(e, args, options, precision, grid, device.dram_banks)
    outputs = MllamaPrefill(e, args, options, precision, weights, seq, factory, grid).run()
    return e.build(outputs)
