"""The option keys a Tenstorrent frontend may take (the frontend contract's `keys`,
targets/tenstorrent/frontend.py), in a module of their own: the CLI builds its `plan`
flags from them without importing the frontends."""

from __future__ import annotations

#: every option key a frontend may take, with its flag's help (the CLI's `plan --help`)
OPTION_KEYS: dict[str, str] = {
    "batch": "the batch (tt-transformers: max_batch_size, one of 1, 2, 4, 8, 16, 32)",
    "sequence_length": "the tokens of a prefill (tt-mlir: the model input's sequence length)",
    "kv_cache": "plan decoding with a KV cache of L positions (tt-transformers: max_seq_len)",
    "kv_cache_kind": "tt-mlir: the KV cache of --kv-cache, dynamic (transformers' DynamicCache, the default) or "
                     "static (StaticCache, as tt-xla's LLM benchmark: the step writes into it in place)",
    "prefill_chunk": "tt-transformers: the prefill chunk in tokens, a multiple of 32 (MAX_PREFILL_CHUNK_SIZE)",
    "opt_level": "tt-mlir: the optimization level 0, 1 or 2 (tt-xla's optimization_level)",
    "precision": "tt-transformers: the precision preset, performance or accuracy (DecodersPrecision)",
    "weights": "the weights' data type: bf16, f32, bfp8 or bfp4",
    "activations": "the activations' data type: bf16, f32, bfp8 or bfp4",
}
