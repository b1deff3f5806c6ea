"""The Tenstorrent target's application layer: its request, its report's builder, its
what-if rows and its planning entry (the seam's `TARGET`, app/targets.py)."""

# the tt-mlir frontend imports model names through the application's importers
from tileplan.app.tenstorrent import tt_mlir_models  # noqa: E402,F401
# the tt-transformers frontend finds a hub id's config.json through the application
from tileplan.app.tenstorrent import tt_transformers_hub  # noqa: E402,F401
