"""Tenstorrent frontends: how a model reaches TTNN (`tt_mlir`: tt-xla and tt-mlir
compiling an imported model; `tt_transformers`: tt-metal's hand-written decoders). Each
defines `FRONTEND` (targets/tenstorrent/frontend.py says what it provides)."""
