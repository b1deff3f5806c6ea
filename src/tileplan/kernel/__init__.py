"""The kernel every operator's plan and lowering stands on, below `tileplan.ops`:
the options (`options.py`), the read-only context (`context.py`: machine, options,
shards and value sizes), layouts (`layouts.py`), the GEMM partitioner (`gemm.py`) and
the typed fragment a lowering returns (`fragment.py`). It imports only `tileplan.model`
and `tileplan.errors`."""
