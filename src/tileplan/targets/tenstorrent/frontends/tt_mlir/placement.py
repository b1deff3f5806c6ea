"""Tensor placement at each optimization level.

Levels 0 and 1: every tensor stays where TTNNLayout put it, DRAM interleaved in TILE
(tt-mlir lib/Dialect/TTNN/Transforms/TTNNLayout.cpp `g_defaultMemorySpaceDevice =
BufferType::DRAM`, `g_bufferLayoutMap`); at level 1 the optimizer runs with L1 layouts
filtered out (`enableL1ShardingLayouts = false` in TTNNPipelines.cpp
`createTTNNPipelineAnalysisPasses`), so the placement is the same. Level 2: the
optimizer's two passes, `propagate` (layouts.py: GreedyMemoryLayoutPropagation) then
`manage_spills` (spill.py: GreedyL1SpillManagement).
"""

from __future__ import annotations

from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import TtnnGraph
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions


def place(graph: TtnnGraph, options: TtMlirOptions, device: Device) -> TtnnGraph:
    """The graph placed as tt-mlir places it at `options.opt_level`."""
    if not options.l1_layouts:
        return graph
    from tileplan.targets.tenstorrent.frontends.tt_mlir.layouts import propagate
    from tileplan.targets.tenstorrent.frontends.tt_mlir.spill import manage_spills
    return manage_spills(propagate(graph, options, device), options, device)
