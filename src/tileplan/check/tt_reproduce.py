"""`tileplan check` on a Tenstorrent report's `reproduce` section: what it says is
compared with the rest of the report and the documented rules, never with the planner.

- It is there only for a plan that fits; its device parameters are the device section's
  (`l1_small_size`, `trace_region_size`) and its settings name the dispatch cores.
- Each output layout names an operation of the report by index and name; the buffer it
  writes was made by that operation and agrees with the layout: its buffer type, sharded
  or not, its banks (a shard per core of the grid; every L1 bank for L1 interleaved,
  every DRAM bank for DRAM) and, for tiles, its page (one 32 x 32 tile of the data type:
  bf16 2,048 B, f32 4,096 B, bfp8 1,088 B, bfp4 576 B). Its grid follows tt-mlir's
  `TTNNLayoutAttr` (LegalTensorLayoutAnalysis.cpp): N x 1 for N height shards, 1 x N for
  width shards, the worker grid (rows x columns) for L1 interleaved, 1 x 1 for DRAM.
- For the tt-mlir frontend: the `override-output-layout=` line is the layouts written in
  tt-mlir's grammar (lib/Dialect/TTNN/Utils/PassOverrides.cpp: `NAME=RxC:l1|dram:TML:
  tile|row_major:DTYPE`, comma-separated, in order); tt-xla's compile options line
  carries the report's `opt_level` (and `experimental_weight_dtype` for bfp8 / bfp4
  weights); at level 0 no layout is named (the optimizer is off), at level 1 only DRAM
  ones (no L1 layouts there), and at level 2 every L1 output an operation other than a
  `ttnn.to_memory_config` makes is named (the optimizer chose it).

Worked example: a level-2 MLP whose fc1.linear writes buffer 6, L1, 64 shards of bf16
tiles (page 2,048 B) with a layout row `64 x 1, height_sharded` agrees, and its override
line must read `override-output-layout=fc1.linear=64x1:l1:height_sharded:tile:bf16,...`.
"""

from __future__ import annotations

from tileplan.check.tt_result import TtCheckResult
from tileplan.report.tt_report import TtReport
from tileplan.report.tt_sections import TtOutputLayout

#: one 32 x 32 tile's bytes by data type (tt-metal tile.cpp `Tile::get_tile_size`)
TILE_BYTES = {"bfloat16": 2048, "float32": 4096, "bfloat8_b": 1088, "bfloat4_b": 576, "uint32": 4096,
              "int32": 4096, "uint16": 2048, "uint8": 1024}
#: tt-mlir's names of the data types (TTCoreOpsEnums.td `DataTypeEnumToString`)
MLIR_DTYPES = {"float32": "f32", "bfloat16": "bf16", "bfloat8_b": "bfp_bf8", "bfloat4_b": "bfp_bf4", "uint32": "u32",
               "uint16": "u16", "uint8": "u8", "int32": "si32"}
#: the weights options tt-xla converts with `experimental_weight_dtype`
WEIGHT_CONVERSION = {"bfp8": "bfp_bf8", "bfp4": "bfp_bf4"}
OVERRIDE = "override-output-layout="


def layout_words(o: TtOutputLayout) -> str:
    """A layout in tt-mlir's override grammar."""
    parts = [f"{o.grid[0]}x{o.grid[1]}", o.buffer_type.lower(), o.memory_layout, o.layout]
    if o.dtype in MLIR_DTYPES:
        parts.append(MLIR_DTYPES[o.dtype])
    return ":".join(parts)


def check_layout(report: TtReport, k: int, o: TtOutputLayout, out: TtCheckResult) -> bool:
    place = f"reproduce.output_layouts[{k}] ({o.name})"
    d = report.device
    ops = report.operations
    if o.operation >= ops.count or ops.row(o.operation).name != o.name:
        out.add(place, f"operation {o.operation} is not an operation named {o.name!r} of the report")
        return False
    sharded = o.memory_layout != "interleaved"
    rows, columns = d.worker_grid[1], d.worker_grid[0]
    grid = {"height_sharded": None, "width_sharded": None, "block_sharded": None,
            "interleaved": (rows, columns) if o.buffer_type == "L1" else (1, 1)}[o.memory_layout]
    ok = True
    across = {"height_sharded": o.grid[1], "width_sharded": o.grid[0]}.get(o.memory_layout, 1)
    if across != 1:
        out.add(f"{place}.grid", f"expected N x 1 for height shards and 1 x N for width shards (tt-mlir's grid "
                                 f"shape), found {o.grid[0]} x {o.grid[1]} {o.memory_layout}")
        ok = False
    if grid is not None:
        ok = out.compare(f"{place}.grid", o.grid, grid) and ok
    if o.buffer_type == "DRAM" and sharded:
        ok = out.compare(f"{place}.memory_layout", o.memory_layout, "interleaved (DRAM)") and ok
    if o.buffer is None:
        return ok
    if o.buffer >= report.buffers.count:
        out.add(place, f"buffer {o.buffer} is past the report's {report.buffers.count} buffers")
        return False
    b = report.buffers.row(o.buffer)
    banks = o.grid[0] * o.grid[1] if sharded else d.l1_banks if o.buffer_type == "L1" else d.dram_banks
    return all([ok,
                out.compare(f"{place}: buffers[{b.id}].first_op", b.first_op, o.operation),
                out.compare(f"{place}: buffers[{b.id}].buffer_type", b.buffer_type, o.buffer_type),
                out.compare(f"{place}: buffers[{b.id}].sharded", b.sharded, sharded),
                out.compare(f"{place}: buffers[{b.id}].banks", b.banks, banks),
                o.layout != "tile" or o.dtype not in TILE_BYTES
                or out.compare(f"{place}: buffers[{b.id}].page_bytes", b.page_bytes, TILE_BYTES[o.dtype])])


def check_tt_mlir(report: TtReport, out: TtCheckResult) -> None:
    """The tt-mlir frontend's lines: the compile options, the override, which outputs
    the level names (see the module docstring)."""
    r = report.reproduce
    assert r is not None
    options = dict(report.frontend.options)
    level = options.get("opt_level")
    items = [f'"optimization_level": "{level}"']
    if options.get("weights") in WEIGHT_CONVERSION:
        items.append(f'"experimental_weight_dtype": "{WEIGHT_CONVERSION[str(options["weights"])]}"')
    compile_line = f"torch_xla.set_custom_compile_options({{{', '.join(items)}}})"
    if compile_line not in r.settings:
        out.add("reproduce.settings", f"expected tt-xla's compile options {compile_line!r} for opt_level {level}, "
                                      f"found {list(r.settings)}")
    found = [s for s in r.settings if s.startswith(OVERRIDE)]
    if r.output_layouts:
        expected = OVERRIDE + ",".join(f"{o.name}={layout_words(o)}" for o in r.output_layouts)
        if found != [expected]:
            out.add("reproduce.settings", f"expected the override line {expected!r} from the output layouts, "
                                          f"found {found}")
    named = {o.operation for o in r.output_layouts}
    if level == 0 and named:
        out.add("reproduce.output_layouts", "at opt_level 0 the optimizer is off: no output layout applies, the "
                                            f"report names {len(named)}")
    if level == 1 and any(o.buffer_type != "DRAM" for o in r.output_layouts):
        out.add("reproduce.output_layouts", "at opt_level 1 tt-mlir places no output in L1")
    if level == 2:
        for b in report.buffers.rows():
            if (b.buffer_type == "L1" and b.use == "intermediate" and b.first_op >= 0 and b.first_op not in named
                    and report.operations.row(b.first_op).kind != "ttnn.to_memory_config"):
                out.add("reproduce.output_layouts", f"buffers[{b.id}] ({b.name}) is an L1 output of operation "
                                                    f"{b.first_op}, which no output layout names")


def check_reproduce(report: TtReport, out: TtCheckResult) -> None:
    """The `reproduce` section against the report (see the module docstring)."""
    r = report.reproduce
    if r is None:
        return
    if not report.fits:
        out.add("reproduce", "the plan does not fit, yet the report says how to reproduce it")
    d = report.device
    out.compare("reproduce.device_parameters", dict(r.device_parameters),
                {"l1_small_size": d.l1_small_size, "trace_region_size": d.trace_region_size})
    if f"dispatch_core_type={d.dispatch_core_type}" not in r.settings:
        out.add("reproduce.settings", f"expected dispatch_core_type={d.dispatch_core_type} (the device's dispatch "
                                      "cores)")
    out.layouts_agreeing += sum(check_layout(report, k, o, out) for k, o in enumerate(r.output_layouts))
    if report.frontend.name == "tt-mlir":
        check_tt_mlir(report, out)
