"""What reproduces a tt-mlir plan: tt-xla's compile options and tt-mlir's override text.

tt-mlir's overrides (include/ttmlir/Dialect/TTNN/Pipelines/TTNNPipelines.h option comments;
parsed by include/ttmlir/Dialect/TTNN/Utils/PassOverrides.h):

- `override-output-layout=loc=GRID:MEMSPACE:TML:LAYOUT:DTYPE,...` (lib/Dialect/TTNN/Utils/
  PassOverrides.cpp `OutputLayoutOverrideParser::parse`): GRID `RxC`, the output's
  `TTNNLayoutAttr` grid shape, which `incompatibleWithOverride` compares
  (LegalOpLayoutAnalysis.cpp; LegalTensorLayoutAnalysis.cpp builds them: a block shard's
  rows x columns, `Nx1` for N height shards, `1xN` for N width shards, the worker grid
  for L1 interleaved, `1x1` for DRAM), MEMSPACE `dram|l1`, TML
  `interleaved|height_sharded|width_sharded|block_sharded`, LAYOUT `tile|row_major`,
  DTYPE `f32|bf16|bfp_bf8|bfp_bf4|u32|u16|u8|si32` (any subset, any order; with the
  first four all given tt-mlir builds the layout without analysis);
- `override-conv2d-config=loc=key#value:key#value,...` with the Conv2dConfig keys.

Both need the optimizer (optimization level >= 1) and unique operation locations
(`check-unique-locs`); the locations here are tileplan's operation names, which name the
model operation each TTNN operation lowers. tt-xla's compile options
(pjrt_implementation/inc/api/compile_options.h) carry `optimization_level` and
`experimental_weight_dtype` but no override key: the overrides go to tt-mlir's pipeline
(`ttmlir-opt --ttir-to-ttnn-backend-pipeline="..."`) on the module tt-xla exports with its
`export_path` compile option.

Worked example: a linear placed L1 height-sharded on 64 cores of bf16 tiles at level 2
prints `override-output-layout=fc1.linear=64x1:l1:height_sharded:tile:bf16`, after
`torch_xla.set_custom_compile_options({"optimization_level": "2"})`.
"""

from __future__ import annotations

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontend import OutputLayout, Reproduction
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dAttrs
from tileplan.targets.tenstorrent.ops.tt_conv_transpose import ConvTranspose2dAttrs
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.program import TtProgram
from tileplan.targets.tenstorrent.tiles import DataType

#: tt-mlir's data type names (include/ttmlir/Dialect/TTCore/IR/TTCoreOpsEnums.td, `DataTypeEnumToString`)
DTYPE_NAMES = {DataType.FLOAT32: "f32", DataType.BFLOAT16: "bf16", DataType.BFLOAT8_B: "bfp_bf8",
               DataType.BFLOAT4_B: "bfp_bf4", DataType.UINT32: "u32", DataType.UINT16: "u16", DataType.UINT8: "u8",
               DataType.INT32: "si32"}
#: what stands for the override line at level 0 (the optimizer off: no override applies)
LEVEL_0_NOTE = ("no override-output-layout: at optimization_level 0 tt-mlir's optimizer is off and every output "
                "stays DRAM interleaved")
#: appended to an override given at level 0
OPTIMIZER_ONLY = " (tt-mlir applies overrides with the optimizer only: optimization_level >= 1)"


def grid_of(spec: TensorSpec, device: Device) -> tuple[int, int]:
    """The output's grid as tt-mlir's `TTNNLayoutAttr` has it (rows x columns,
    LegalTensorLayoutAnalysis.cpp): block shards their bounding box, height shards N x 1
    and width shards 1 x N on N cores, L1 interleaved the worker grid, DRAM 1 x 1."""
    mem = spec.memory
    if mem.shard is not None:
        if mem.layout is MemoryLayout.HEIGHT_SHARDED:
            return mem.shard.num_cores, 1
        if mem.layout is MemoryLayout.WIDTH_SHARDED:
            return 1, mem.shard.num_cores
        box = mem.shard.bounding_box()
        return box.height, box.width
    if mem.buffer_type is BufferType.L1:
        return device.worker_grid.rows, device.worker_grid.columns
    return 1, 1


def output_layout(index: int, name: str, spec: TensorSpec, device: Device) -> OutputLayout:
    return OutputLayout(index, name, spec.memory.buffer_type, spec.memory.layout, grid_of(spec, device), spec.layout,
                        spec.dtype)


def entry_text(out: OutputLayout) -> str:
    """One output layout in the override grammar (`8x8:l1:block_sharded:tile:bf16`:
    GRID:MEMSPACE:TML:LAYOUT:DTYPE, all five given: tt-mlir then builds the layout
    without analysis, LegalOpLayoutAnalysis.cpp `applyFullLayoutOverride`)."""
    parts = [f"{out.grid[0]}x{out.grid[1]}", out.buffer_type.value.lower(), out.memory_layout.value, out.layout.value]
    if out.dtype in DTYPE_NAMES:
        parts.append(DTYPE_NAMES[out.dtype])
    return ":".join(parts)


def layout_text(spec: TensorSpec, device: Device) -> str:
    """One output's layout in the override grammar."""
    return entry_text(output_layout(0, "", spec, device))


def conv2d_text(attrs: Conv2dAttrs | ConvTranspose2dAttrs) -> str:
    """A conv2d's or conv_transpose2d's config in the override grammar (the fields
    tileplan fixed)."""
    cfg = attrs.config
    pairs = [("act_block_h_override", str(cfg.act_block_h_override)),
             ("act_block_w_div", str(cfg.act_block_w_div)),
             ("enable_act_double_buffer", str(cfg.enable_act_double_buffer).lower()),
             ("enable_weights_double_buffer", str(cfg.enable_weights_double_buffer).lower()),
             ("output_layout", cfg.output_layout.value)]
    if cfg.shard_layout is not None:
        pairs.insert(0, ("shard_layout", cfg.shard_layout.value))
    if cfg.weights_dtype is not None and cfg.weights_dtype in DTYPE_NAMES:
        pairs.insert(0, ("weights_dtype", DTYPE_NAMES[cfg.weights_dtype]))
    return ":".join(f"{k}#{v}" for k, v in pairs)


def chosen_layouts(program: TtProgram, specs: dict[int, TensorSpec], device: Device,
                   moved: tuple[str, ...] = ()) -> tuple[OutputLayout, ...]:
    """The output layouts that pin `program`'s placement: every operation writing an L1
    output (DRAM interleaved is tt-mlir's default) and every operation named in `moved`
    (moved to DRAM by the user), in program order; the `ttnn.to_memory_config` operations
    are the optimizer's own (reshards, spills) and are not named. `specs`: each output's
    spec as planned."""
    out = []
    seen = set()
    for op in program.ops:
        if op.kind is OpKind.TO_MEMORY_CONFIG or not op.outputs or op.name in seen:
            continue
        spec = specs.get(op.outputs[0])
        if spec is not None and (spec.memory.buffer_type is BufferType.L1 or op.name in moved):
            seen.add(op.name)
            out.append(output_layout(op.index, op.name, spec, device))
    return tuple(out)


def placement_overrides(program: TtProgram, specs: dict[int, TensorSpec], device: Device,
                        moved: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The override lines that pin `program`'s placement: `override-output-layout` with
    `chosen_layouts`, and `override-conv2d-config` with every conv2d's and
    conv_transpose2d's config (LegalOpConfigAnalysis.cpp applies the override to both)."""
    layouts = chosen_layouts(program, specs, device, moved)
    convs = [f"{op.name}={conv2d_text(op.attrs)}" for op in program.ops
             if (op.kind is OpKind.CONV2D and isinstance(op.attrs, Conv2dAttrs))
             or (op.kind is OpKind.CONV_TRANSPOSE2D and isinstance(op.attrs, ConvTranspose2dAttrs))]
    lines = []
    if layouts:
        lines.append("override-output-layout=" + ",".join(f"{o.name}={entry_text(o)}" for o in layouts))
    if convs:
        lines.append("override-conv2d-config=" + ",".join(convs))
    return tuple(lines)


def compile_options_text(options: TtMlirOptions) -> str:
    """tt-xla's compile options for these options, as Python."""
    items = ", ".join(f'"{k}": "{v}"' for k, v in options.compile_options().items())
    return f"torch_xla.set_custom_compile_options({{{items}}})"


def reproduction(options: TtMlirOptions, program: TtProgram, device: Device, moved: tuple[str, ...]) -> Reproduction:
    """What reproduces the plan of `program` (as planned, `moved` already in DRAM): tt-xla's
    compile options (their `optimization_level` turns the optimizer on), then at levels 1
    and 2 the override lines pinning every output layout the plan chose (level 1: the
    moved outputs only, every other output is DRAM interleaved there too); at level 0
    the moved outputs' override, marked as needing the optimizer, or a line saying none
    applies."""
    head = compile_options_text(options)
    if not options.optimizer:
        if not moved:
            return Reproduction((head, LEVEL_0_NOTE))
        text = "override-output-layout=" + ",".join(f"{name}=dram:interleaved" for name in moved)
        return Reproduction((head, text + OPTIMIZER_ONLY))
    specs = output_specs(program, device)
    layouts = chosen_layouts(program, specs, device, moved)
    return Reproduction((head, *placement_overrides(program, specs, device, moved)), layouts)


def output_specs(program: TtProgram, device: Device) -> dict[int, TensorSpec]:
    """Every tensor's spec as the operations' rules decide them (uploads as declared): what
    `placement_overrides` reads."""
    target = op_target(device)
    specs = {t: program.tensors[t].spec for t in program.uploads}
    out: dict[int, TensorSpec] = {t: s for t, s in specs.items() if s is not None}
    for op in program.ops:
        try:
            plan = plan_op(op.kind, OpRequest(tuple(out[t] for t in op.inputs), op.out, target, op.compute),
                           op.attrs)
        except InputError:  # the planner says why the operation cannot run; nothing after it runs either
            break
        out.update(zip(op.outputs, plan.outputs))
    return out
