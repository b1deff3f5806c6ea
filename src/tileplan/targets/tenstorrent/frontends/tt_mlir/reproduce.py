"""What reproduces a tt-mlir plan: tt-xla's compile options and tt-mlir's override text.

tt-mlir's overrides (include/ttmlir/Dialect/TTNN/Pipelines/TTNNPipelines.h option comments;
parsed by include/ttmlir/Dialect/TTNN/Utils/PassOverrides.h):

- `override-output-layout=loc=GRID:MEMSPACE:TML:LAYOUT:DTYPE,...`: GRID `RxC` (the shard
  grid's rows and columns; the worker grid for L1 interleaved, 1x1 for DRAM), MEMSPACE
  `dram|l1`, TML `interleaved|height_sharded|width_sharded|block_sharded`, LAYOUT
  `tile|row_major`, DTYPE `f32|bf16|bfp_bf8|bfp_bf4|u32|u16|u8` (any subset, any order);
- `override-conv2d-config=loc=key#value:key#value,...` with the Conv2dConfig keys.

Both need the optimizer (optimization level >= 1) and unique operation locations
(`check-unique-locs`); the locations here are tileplan's operation names, which name the
model operation each TTNN operation lowers. tt-xla's compile options
(pjrt_implementation/inc/api/compile_options.h) carry `optimization_level` and
`experimental_weight_dtype` but no override key: the overrides go to tt-mlir's pipeline
(`ttmlir-opt --ttir-to-ttnn-backend-pipeline="..."`) on the module tt-xla exports with its
`export_path` compile option.

Worked example: a linear placed L1 height-sharded on 64 cores of bf16 tiles prints
`override-output-layout=fc1.linear=8x8:l1:height_sharded:tile:bf16`.
"""

from __future__ import annotations

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.memory import BufferType, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv import Conv2dAttrs
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.program import TtProgram
from tileplan.targets.tenstorrent.tiles import DataType, Layout

#: tt-mlir's data type names (TTCoreOpsTypes `DataTypeEnumToString`)
DTYPE_NAMES = {DataType.FLOAT32: "f32", DataType.BFLOAT16: "bf16", DataType.BFLOAT8_B: "bfp_bf8",
               DataType.BFLOAT4_B: "bfp_bf4", DataType.UINT32: "u32", DataType.UINT16: "u16", DataType.UINT8: "u8"}


def layout_text(spec: TensorSpec, device: Device) -> str:
    """One output layout in the override grammar (`8x8:l1:block_sharded:tile:bf16`)."""
    mem = spec.memory
    if mem.shard is not None:
        box = mem.shard.bounding_box()
        grid = f"{box.height}x{box.width}"
    elif mem.buffer_type is BufferType.L1:
        grid = f"{device.worker_grid.rows}x{device.worker_grid.columns}"
    else:
        grid = "1x1"
    parts = [grid, mem.buffer_type.value.lower(), mem.layout.value,
             "tile" if spec.layout is Layout.TILE else "row_major"]
    if spec.dtype in DTYPE_NAMES:
        parts.append(DTYPE_NAMES[spec.dtype])
    return ":".join(parts)


def conv2d_text(attrs: Conv2dAttrs) -> str:
    """A conv2d's config in the override grammar (the fields tileplan fixed)."""
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


def placement_overrides(program: TtProgram, specs: dict[int, TensorSpec], device: Device) -> tuple[str, ...]:
    """The override lines that pin `program`'s placement: every operation writing an L1
    output (the DRAM-interleaved ones are tt-mlir's default) with its layout, and every
    conv2d's config. `specs`: each output's spec as planned."""
    layouts = []
    convs = []
    for op in program.ops:
        if op.kind is OpKind.TO_MEMORY_CONFIG:
            continue
        spec = specs.get(op.outputs[0])
        if spec is not None and spec.memory.buffer_type is BufferType.L1:
            layouts.append(f"{op.name}={layout_text(spec, device)}")
        if op.kind is OpKind.CONV2D and isinstance(op.attrs, Conv2dAttrs):
            convs.append(f"{op.name}={conv2d_text(op.attrs)}")
    lines = []
    if layouts:
        lines.append("override-output-layout=" + ",".join(layouts))
    if convs:
        lines.append("override-conv2d-config=" + ",".join(convs))
    return tuple(lines)


def compile_options_text(options: TtMlirOptions) -> str:
    """tt-xla's compile options for these options, as Python."""
    items = ", ".join(f'"{k}": "{v}"' for k, v in options.compile_options().items())
    return f"torch_xla.set_custom_compile_options({{{items}}})"


def moved_overrides(options: TtMlirOptions, moved: tuple[str, ...]) -> tuple[str, ...]:
    """The lines reproducing a plan whose named operations' outputs were moved to DRAM
    interleaved: tt-xla's compile options and the override (optimizer needed)."""
    lines = [compile_options_text(options)]
    if moved:
        text = "override-output-layout=" + ",".join(f"{name}=dram:interleaved" for name in moved)
        if options.opt_level == 0:
            text += " (tt-mlir applies overrides with the optimizer only: optimization_level >= 1)"
        lines.append(text)
    return tuple(lines)


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
