"""tileplan: will a tensor program fit in the per-tile SRAM of a tiled accelerator?

Layers import one way: model -> lowering -> planner -> report -> cli.
"""

__version__ = "0.1.0"
