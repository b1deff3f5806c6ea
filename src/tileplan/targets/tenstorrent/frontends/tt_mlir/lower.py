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
6. `retain_const_eval_inputs`: on builds before tt-mlir #6198 the parameters each
   const-eval result is computed from go up too, before it, and stay;
7. `stage_uploads`: the arguments tt-mlir's runtime tilizes on the device get their
   row-major form, placed before their TILE one and freed after it;
8. `to_program`: each computed tensor deallocated after its last reader (graph.py).

Worked example: `lower(mlp, TtMlirOptions(), load_device("n150"))` for Linear(64, 128) ->
GELU -> Linear(128, 64) on a [1, 32, 64] bf16 input is: uploads x (row-major), then
fc1.weight, fc1.bias, fc2.weight, fc2.bias, each staged row-major (the weights as torch's
[out, in]); to_layout x; ttnn.linear (GELU fused); ttnn.linear; all outputs DRAM
interleaved; the tilized x freed after the first linear.
"""

from __future__ import annotations

from dataclasses import replace

from tileplan.errors import ModelError
from tileplan.model.ir import Operation, Program
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering, module_of, unroll
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_basic import CONVERTERS as BASIC
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_cache import CONVERTERS as CACHE
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_conv import CONVERTERS as CONV
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_group_norm import CONVERTERS as GROUP_NORM
from tileplan.targets.tenstorrent.frontends.tt_mlir.convert_nn import CONVERTERS as NN
from tileplan.targets.tenstorrent.frontends.tt_mlir.fusion import fuse
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import GraphBuilder, TtnnGraph, Value, to_program
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.placement import place
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.program import Tensor, TtProgram
from tileplan.targets.tenstorrent.tiles import Layout

CONVERTERS = {**BASIC, **NN, **CONV, **GROUP_NORM, **CACHE}


def convert_one(lw: Lowering, op: Operation) -> None:
    """One computed operation by its converter."""
    rule = CONVERTERS.get(op.kind)
    if rule is None:
        raise ModelError(f"the tt-mlir frontend has no lowering for the model's {op.kind} operation; it lowers "
                         f"{', '.join(sorted(CONVERTERS))}", f"operation {op.index} ({op.name})")
    rule(lw, op)


def convert(lw: Lowering) -> TtnnGraph:
    """Every computed operation converted (constants are uploaded where read)."""
    lw.dispatch = convert_one
    for op in lw.operations:
        if op.output not in lw.constant:
            convert_one(lw, op)
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
        if t.role is Role.INPUT or lw.is_argument(t):
            return 0, declared.get(t.name, 0)
        return 1, tid

    return TtnnGraph(graph.name, graph.tensors, graph.values, tuple(sorted(graph.uploads, key=key)), graph.nodes,
                     graph.outputs)


def retain_const_eval_inputs(lw: Lowering, graph: TtnnGraph) -> TtnnGraph:
    """On builds whose const-eval inputs live in device DRAM (devices/software.toml
    `const_eval_inputs_on_host` false: before tt-mlir #6198, 2025-12-11): the declared
    parameters and buffers each const-eval result is computed from (`const_eval_inputs`)
    go up as tt-mlir lays out an argument (TILE, DRAM interleaved, the declared shape and
    data type), each before the first result that reads it, and stay: the frontend
    retains its arguments, so they are never freed ("memory footprint is twice the
    actually required size", #6198). One already uploaded as an argument is not again.
    They are named `NAME (const-eval input)` and not staged row-major (how the runtime
    moves them is not modelled).

    Worked example: on a 2025-10 build with bfp8 weights, a Linear weight's bfloat8_b
    form is a const-eval typecast: the bf16 weight goes up just before it and both stay."""
    if lw.device.software.const_eval_inputs_on_host:
        return graph
    name_of = {tid: key[0] for key, tid in lw.forms.items()}
    tensors, values = list(graph.tensors), list(graph.values)
    present = {t.name for t in (graph.tensors[tid] for tid in graph.uploads) if lw.is_argument(t)}
    uploads: list[int] = []
    for tid in graph.uploads:
        t = graph.tensors[tid]
        if t.role is not Role.INPUT and not lw.is_argument(t) and tid in name_of:
            for leaf in lw.const_eval_inputs(name_of[tid]):
                if leaf in present:
                    continue
                present.add(leaf)
                spec = TensorSpec(lw.shapes[leaf], lw.dtype(leaf), Layout.TILE, DRAM_INTERLEAVED)
                uploads.append(len(tensors))
                tensors.append(Tensor(len(tensors), f"{leaf} (const-eval input)", lw.roles[leaf], spec,
                                      module_of(leaf)))
                values.append(Value(spec.shape, spec.dtype, spec.layout))
        uploads.append(tid)
    return replace(graph, tensors=tuple(tensors), values=tuple(values), uploads=tuple(uploads))


def stage_uploads(lw: Lowering, graph: TtnnGraph) -> TtnnGraph:
    """Each parameter argument the runtime tilizes on the device, with its row-major form.

    tt-xla hands a parameter to tt-mlir's runtime as a row-major host tensor, and the
    runtime converts it to the layout the program's argument asks for (tt-mlir
    runtime/lib/ttnn/types/layout_converter.cpp `LayoutConverter::handleHostInputLayoutNoTypecast`):
    for a TILE argument whose data type can be tilized on the device (the build's
    `device_tilize`, runtime/lib/ttnn/utils/utils.cpp `canTilizeOnDevice`; every upload
    is DRAM interleaved, which its memory-layout condition allows) it first moves the
    row-major tensor to the device in the argument's memory config (`toDeviceIfNeeded`),
    then tilizes it there (`toLayoutIfNeeded`), so both buffers are live until the
    row-major one is released.
    Other arguments are tilized on the host and uploaded once; const-eval results are
    computed once (where: context.py) and uploaded once.

    A Linear weight reaches tt-mlir in the framework's orientation [out, in] and stays
    an argument: tt-xla compiles with `experimental_enable_permute_matmul_fusion` (tt-xla
    pjrt_implementation/inc/api/compile_options.h, true since 2025-12-12, #2482; before,
    tt-mlir's matmul canonicalisation folded the permute unconditionally, 1fcf4219c1),
    and TTIRFusing.cpp `PermuteMatmulFusionPattern` folds the permute of the weight into
    the matmul's `transpose_b`. So its row-major form has the framework's shape (the
    importer's `source_shape`). Its TILE form is planned in the declared orientation: the
    same tiles whenever both dimensions are whole tiles (every LLM projection).

    Not placed: the tilize program's own circular buffers (it runs before the first
    operation, beside no L1 buffer unless the placement put an argument in L1).

    Worked example: Llama-3.2-1B's `model.layers.0.mlp.down_proj.weight` (torch's [2048,
    8192], declared [8192, 2048]) in bf16 on n150 first takes 2,048 row-major pages of
    16,384 B (171 a bank), then 16,384 tiles of 2,048 B (1,366 a bank)."""
    kinds = lw.device.software.device_tilize
    tensors = list(graph.tensors)
    for tid in graph.uploads:
        t = tensors[tid]
        spec = t.spec
        if spec is not None and lw.is_argument(t) and spec.dtype in kinds:
            shape = lw.source_shapes.get(t.name, spec.shape)
            tensors[tid] = replace(t, staged=replace(spec, shape=shape, layout=Layout.ROW_MAJOR))
    return replace(graph, tensors=tuple(tensors))


def lower_graph(program: Program, options: TtMlirOptions, device: Device) -> TtnnGraph:
    """Passes 1-7 (see the module docstring): the placed TTNN graph."""
    target = op_target(device)
    operations = unroll(program)
    probe = Lowering(program, options, device, target, GraphBuilder(program.name), operations)
    fused, weights = fuse(operations, program.outputs, probe.constant, probe.shapes, device.software,
                          options.optimizer)
    lw = Lowering(program, options, device, target, GraphBuilder(program.name), fused, weights)
    return stage_uploads(lw, retain_const_eval_inputs(lw, place(convert(lw), options, device)))


def lower(program: Program, options: TtMlirOptions, device: Device) -> TtProgram:
    """The model as tt-xla and tt-mlir compile it for one chip of `device`."""
    return to_program(lower_graph(program, options, device))
