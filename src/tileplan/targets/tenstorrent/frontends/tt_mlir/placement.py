"""Tensor placement at each optimization level.

Levels 0 and 1: every tensor stays where TTNNLayout put it, DRAM interleaved in TILE
(tt-mlir lib/Dialect/TTNN/Transforms/TTNNLayout.cpp `g_defaultMemorySpaceDevice =
BufferType::DRAM`, `g_bufferLayoutMap`); at level 1 the optimizer runs with L1 layouts
filtered out (`enableL1ShardingLayouts = false` in TTNNPipelines.cpp
`createTTNNPipelineAnalysisPasses`), so the placement is the same, and the matmuls'
program configs are fixed (configs.py). Level 2: the
optimizer's two passes, `propagate` (layouts.py: GreedyMemoryLayoutPropagation) then
`manage_spills` (spill.py: GreedyL1SpillManagement).
"""

from __future__ import annotations

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.configs import pin_matmul_config
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import TtnnGraph
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest
from tileplan.targets.tenstorrent.plan import op_target


def place(graph: TtnnGraph, options: TtMlirOptions, device: Device) -> TtnnGraph:
    """The graph placed as tt-mlir places it at `options.opt_level`."""
    if not options.optimizer:
        return graph
    if not options.l1_layouts:
        return pin_configs(graph, device)
    from tileplan.targets.tenstorrent.frontends.tt_mlir.layouts import propagate
    from tileplan.targets.tenstorrent.frontends.tt_mlir.spill import manage_spills
    return manage_spills(propagate(graph, options, device), options, device)


def pin_configs(graph: TtnnGraph, device: Device) -> TtnnGraph:
    """Level 1: every tensor where TTNNLayout put it, the matmul configs fixed."""
    target = op_target(device)
    specs: dict[int, TensorSpec] = {t: graph.tensors[t].spec for t in graph.uploads}  # type: ignore[misc]
    nodes = []
    for original in graph.nodes:
        inputs = tuple(specs[t] for t in original.inputs)
        node = pin_matmul_config(original, inputs, original.out, target)
        try:
            plan = plan_op(node.kind, OpRequest(inputs, node.out, target, node.compute), node.attrs)
            specs.update(zip(node.outputs, plan.outputs))
        except InputError:  # the planner says why the operation cannot run
            for t in node.outputs:
                v = graph.values[t]
                specs[t] = TensorSpec(v.shape, v.dtype, v.layout, node.out.memory())
        nodes.append(node)
    return graph.with_nodes(tuple(nodes))
