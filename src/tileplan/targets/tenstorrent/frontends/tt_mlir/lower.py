"""`lower(program, options, device) -> TtProgram`: an imported model as tt-xla and tt-mlir
compile it for one chip, in named passes:

1. `unroll`: the model's operations in execution order (repeat blocks written out);
2. `fuse`: tt-xla's RMSNorm fusion and tt-mlir's linear-with-bias and activation fusions
   (fusion.py);
3. `convert`: each computed operation onto the TTNN operations tt-mlir emits
   (convert_basic.py, convert_nn.py, convert_conv.py, convert_cache.py: a static KV
   cache's writes in place); constants become uploads in the
   form their readers take (context.py); an operator with no TTNN rule is an error naming
   it;
4. `order_uploads`: the arguments tt-xla passes, in the model's declaration order, then
   the const-eval results, in the order the program first reads them (each const-eval
   function's `ttcore.load_cached` runs at the top of the forward function);
5. `place`: tensor placement at the optimization level (placement.py: every tensor DRAM
   interleaved at levels 0 and 1; the greedy layout propagation and L1 spill management
   at level 2);
6. `to_program`: each computed tensor deallocated after its last reader (graph.py).

Worked example: `lower(mlp, TtMlirOptions(), load_device("n150"))` for Linear(64, 128) ->
GELU -> Linear(128, 64) on a [1, 32, 64] bf16 input is: uploads fc1.weight, fc1.bias,
fc2.weight, fc2.bias, x (row-major); to_layout x; ttnn.linear (GELU fused); ttnn.linear;
all outputs DRAM interleaved; the tilized x freed after the first linear.
"""

from __future__ import annotations

from tileplan.errors import ModelError
from tileplan.model.ir import Program
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering, unroll
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import CONVERTERS as BASIC
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_cache import CONVERTERS as CACHE
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_conv import CONVERTERS as CONV
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_nn import CONVERTERS as NN
from tileplan.targets.tenstorrent.frontends.tt_mlir.fusion import fuse
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import GraphBuilder, TtnnGraph, to_program
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.placement import place
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.program import TtProgram
from tileplan.targets.tenstorrent.tiles import Layout

CONVERTERS = {**BASIC, **NN, **CONV, **CACHE}


def convert(lw: Lowering) -> TtnnGraph:
    """Every computed operation converted (constants are uploaded where read)."""
    for op in lw.operations:
        if op.output in lw.constant:
            continue
        rule = CONVERTERS.get(op.kind)
        if rule is None:
            raise ModelError(f"the tt-mlir frontend has no lowering for the model's {op.kind} operation; it lowers "
                             f"{', '.join(sorted(CONVERTERS))}", f"operation {op.index} ({op.name})")
        rule(lw, op)
    outputs = []
    for name in lw.program.outputs:
        if name in lw.tensor_of:
            tid = lw.tensor_of[name]
            # tt-mlir returns every result DRAM interleaved in TILE (TTNNLayout.cpp
            # `TTNNLayoutFuncReturnRewriter`)
            outputs.append(lw.convert(tid, Layout.TILE, None, None, name))
        elif name in lw.constant:
            outputs.append(lw.constant_form(name))
        else:
            outputs.append(lw.tensor(name))
    return order_uploads(lw, lw.builder.finish(tuple(outputs)))


def order_uploads(lw: Lowering, graph: TtnnGraph) -> TtnnGraph:
    """The arguments first, in declaration order (the model's inputs and the parameters
    read as they are declared), then the const-eval results in first-read order."""
    declared = {t.name: k for k, t in enumerate(lw.program.tensors)}

    def key(tid: int) -> tuple[int, int]:
        t = graph.tensors[tid]
        if t.role is Role.INPUT or (t.name in declared and t.spec is not None and t.spec.layout is Layout.TILE
                                    and t.spec.dtype is lw.dtype(t.name)):
            return 0, declared.get(t.name, 0)
        return 1, tid

    return TtnnGraph(graph.name, graph.tensors, graph.values, tuple(sorted(graph.uploads, key=key)), graph.nodes,
                     graph.outputs)


def lower_graph(program: Program, options: TtMlirOptions, device: Device) -> TtnnGraph:
    """Passes 1-5 (see the module docstring): the placed TTNN graph."""
    target = op_target(device)
    operations = unroll(program)
    probe = Lowering(program, options, device, target, GraphBuilder(program.name), operations)
    fused, weights = fuse(operations, program.outputs, probe.constant, probe.shapes, options.optimizer,
                          device.software.matmul_fusion)
    lw = Lowering(program, options, device, target, GraphBuilder(program.name), fused, weights)
    return place(convert(lw), options, device)


def lower(program: Program, options: TtMlirOptions, device: Device) -> TtProgram:
    """The model as tt-xla and tt-mlir compile it for one chip of `device`."""
    return to_program(lower_graph(program, options, device))
