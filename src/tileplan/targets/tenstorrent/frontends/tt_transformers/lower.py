"""`build(config, options, device) -> TtProgram`: a decoder as tt-metal's tt-transformers
runs it on one chip of `device` (n300: each chip's half of the 2-way tensor-parallel
model, t3k: each chip's eighth; tt-frontends A12), one prefill or one decode step
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
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import ModelArgs, model_args
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import Mode, TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import decoders_precision
from tileplan.targets.tenstorrent.frontends.tt_transformers.prefill import Prefill, padded_prefill_len
from tileplan.targets.tenstorrent.frontends.tt_transformers.weights import upload_weights
from tileplan.targets.tenstorrent.program import TtProgram


#: tt-metal PR #25222 merged: all-gather and reduce-scatter with the fabric mux
FABRIC_MUX_SINCE = "2025-07-17"


def prefill_length(args: ModelArgs, options: TtTransformersOptions) -> int:
    """The tokens of the planned prefill: the chunk asked for (tt-transformers' own
    largest chunk by default), padded as generator.py pads a prompt
    (`get_padded_prefill_len`)."""
    chunk = options.prefill_chunk if options.prefill_chunk is not None else min(args.max_prefill_chunk_size,
                                                                                  options.kv_cache)
    return padded_prefill_len(chunk)


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
    if options.mode is Mode.PREFILL:
        seq = prefill_length(args, options)
        if seq > options.kv_cache:
            raise InputError(f"a {seq}-token prefill (padded) does not fit a {options.kv_cache}-position KV cache; "
                             f"hint: kv_cache >= {seq}")
        e = Emit(f"{args.name} prefill {seq} on {args.device_name}")
        weights = upload_weights(e, args, options, precision, grid, device.dram_banks)
        outputs = Prefill(e, args, options, precision, weights, seq).run()
        return e.build(outputs)
    from tileplan.targets.tenstorrent.frontends.tt_transformers.decode import Decode
    e = Emit(f"{args.name} decode batch {options.batch} kv {options.kv_cache} on {args.device_name}")
    weights = upload_weights(e, args, options, precision, grid, device.dram_banks)
    outputs = Decode(e, args, options, precision, weights, grid).run()
    return e.build(outputs)
