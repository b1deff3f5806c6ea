"""Tenstorrent frontends: how a model reaches TTNN (tt-mlir's compiler, tt-metal's
hand-written tt-transformers); each makes the `TtProgram` one chip runs (program.py)."""
