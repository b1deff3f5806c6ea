"""Published tt-xla / tt-mlir outcomes, rebuilt for tileplan's `--frontend tt-mlir`.

The cases were chosen from /work/notes/tt-outcomes.md (sections 3-5) and split into
the two sets below BEFORE the frontend was modelled; the split is not changed after.

Calibration (looked at while modelling; the notes derive their arithmetic):
  cal-falcon3-7b-bench   tt-mlir #8044: Falcon3-7B, tt-xla LLM benchmark on n150
                         (optimization_level 2, batch 32 decode, bfp_bf8 weights):
                         "Out of Memory: Not enough space to allocate 26542080 B L1 buffer
                         across 48 banks, ... largest free block: 522240 B" (outcomes X1)
  cal-gemma-1.1-2b-bench tt-xla #4214: gemma-1.1-2b-it, the same benchmark on n150:
                         "Statically allocated circular buffers ... clash with L1 buffers
                         ... L1 buffer allocated at 665600 and static circular buffer
                         region ends at 890144" (outcomes X10)

Held out (not looked at while modelling; each published outcome quoted as published):
  llama-3.2-1b-prefill-128x4-n150    tt-xla torch_llm single-device YAML: passes (L1)
  llama-3.2-1b-prefill-2048x1-n150   passes (L1)
  llama-3.2-1b-prefill-2048x4-n150   "DRAM OOM" on n150 (L2)
  llama-3.2-1b-prefill-4096x1-n150   "DRAM OOM" on n150 (L3)
  llama-3.2-1b-prefill-8192x1-n150   "DRAM OOM" on n150 (L4)
  llama-3.2-1b-prefill-2048x4-p150   passes on p150 (L2)
  llama-3.2-1b-prefill-8192x1-p150   passes on p150 (L4)
  llama-3.2-1b-prefill-4096x4-p150   "DRAM OOM" on both (L5)
  llama-3.2-3b-decode-n150           decode 1 x 1 passes (L6)
  qwen2.5-0.5b-decode-n150           decode 1 x 1 passes (L6)
  qwen2.5-7b-decode-n150             p150 only, "Runs as tensor_parallel for wormhole" (L7)
  qwen2.5-7b-decode-p150             passes (L7)
  llama-3.1-8b-decode-p150           passes (L8)
  qwen2-7b-n150                      tt-xla #1722 / YAML (Qwen2 token classification):
                                     "Out of Memory: Not enough space to allocate
                                     135790592 B DRAM buffer across 12 banks, ..." (D38)
  deepseek-r1-distill-qwen-32b-n150  tt-xla YAML #1722: "... 283115520 B DRAM buffer
                                     across 12 banks ..." (D10)
  vanilla-unet-480x640-n150          tt-mlir #5771: optimizer disabled, "Out of Memory:
                                     Not enough space to allocate 49971200 B L1 buffer
                                     across 64 banks, where each bank needs to store
                                     780800 B, but bank size is only 1331936 B" (X35)

Configuration read from each source, as tt-xla runs it: tt-xla's test runner compiles at
optimization_level 0 (tests/infra/testers/compiler_config.py) with the weights in the
loader's dtype (bfloat16 for these torch loaders); the LLM benchmark
(tests/benchmark/test_llms.py) at optimization_level 2, batch 32, bfp_bf8 weights. The
models are built offline from their published config.json (tests/data/tt_configs/, the
configuration only, no weights; transformers builds them on the meta device) or, for
the UNet, a small torch definition of the published architecture (tests/tt_models.py).
"""
