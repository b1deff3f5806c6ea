"""ttnn.conv2d's DRAM path: a DRAM input with no slice config is convolved in slices
of its output, each slice's input brought to L1, convolved on conv2d's L1 path and
written back into one DRAM output.

Sources (tenstorrent/tt-metal, 2026 versions near tt-mlir's pin):
- conv2d_utils.cpp `determine_conv2d_execution_path`: L1 when the slice config is
  L1_FULL, or when there is none and the input is in L1; otherwise DRAM. tt-mlir leaves
  the slice config unset at level 0 (TTIRToTTNN.cpp: `conv2d_slice_config = nullptr`);
  levels 1 and 2 set L1_FULL on conv2d (ConvRules.cpp `applyConvSliceConfig`).
- conv2d.cpp `conv2d_DRAM`: the output [N, OH, OW, C] allocated DRAM interleaved first
  (the conv's output layout), then op_slicing.cpp `run_sliced_op`.
- op_slicing.cpp `determine_slice_config`: the slice dimension `best_guess_slice_type`
  (ROW_MAJOR output: height when H > 3 W; TILE: height when W < 200 or H > W, else
  width), then the fewest slices, from 1 up to `compute_max_num_slices` (a width slice
  is a multiple of 32 columns for a TILE output), whose largest slice's L1 estimate is
  at most the allocator's free L1; if none, the other dimension; if none, TT_FATAL.
  Slices: ceil(dim / rounding) units split evenly, the first `rem` slices one unit more.
- `run_sliced_op`, one slice: the output deallocated, conv2d_L1 on the whole DRAM input,
  the result moved to DRAM interleaved (`to_memory_config`). Each slice's L1 op
  (`Conv2dSliceAttr::run_L1_op`) forces `deallocate_activation` and
  `reallocate_halo_output`: its sharded input is freed after the halo and the halo output
  moved up into the space (tt_conv.py `plan_sliding_conv`, `move_halo`). Several: per slice
  `padded_slice` (DRAM rows to the slice's sharded L1 input), conv2d_L1 (halo, conv;
  the output TILE, sharded), `slice_write` into the DRAM output.
- conv2d.cpp `Conv2dSliceAttr::get_input_slice_and_padding`: the input rows / columns a
  slice reads, clamped to the input, the padding it needs at each side (the full
  padding at the tensor's edges), and for a TILE output a slice of width not a multiple
  of 32 padded on the right by the missing columns x stride; `get_L1_usage`:
  max(halo input + halo output, CBs + conv output + halo output) per core from
  conv2d_utils.cpp `calculate_L1_usage_for_conv_op` (tileplan takes each figure from the
  slice's own programs: the conv's non-global CBs, its output CB, the halo's output and
  input CBs); `get_input_memory_config`: the slice's shard layout chosen anew unless
  Conv2dConfig sets one.
- padded_slice_rm_program_factory.cpp (`PaddedSliceRMProgramFactory`): the output CB
  bound to the shard; an alignment scratch of 2 x align(C x elem + 32, 32) when a row is
  not 32-B aligned; a padding scratch of one output row when the shard row is wider than
  the input's.
- slice_write_tiled_sharded_input_program_factory.cpp: one CB bound to the input shard.

A grouped conv (groups > 1: depthwise too) is sliced as any other: conv2d_DRAM passes
`groups` to each slice's conv2d_L1 and to its L1 estimate (conv2d.cpp @645aa768
`conv2d_DRAM`, `Conv2dSliceAttr`), whose weights are the dense grouped layout
(prepare_conv2d_weights.cpp `convert_conv_weight_tensor_to_grouped_layout`). Versions
that split a grouped conv's channels into chunks when no spatial slicing fits
(`channel_chunk_count_if_needed`) do so only then: tileplan's "no valid slice
configuration" says so for a grouped conv.

Not modelled (refused by name): a conv the L1 path runs
as a matmul (1x1 stride 1: conv2d_DRAM hands it to conv2d_L1, tt_matmul plans it), a
ROW_MAJOR output, kernel folding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED,
    BufferType,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    DeviceBuffer,
    OpPlan,
    OpRequest,
    OpTarget,
    OutputRequest,
    Program,
    cbuf,
    ceil_div,
    require,
    tensor_buffer,
)
from tileplan.errors import InputError
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv import (
    HaloWindow,
    padded_in_channels,
    plan_conv2d,
    plan_sliding_conv,
)
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import (
    Conv2dAttrs,
    SliceType,
)
from tileplan.targets.tenstorrent.ops.tt_conv_grid import input_channels_alignment, parallel_config
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up

PADDED_SLICE_SOURCE = "ttnn/cpp/ttnn/operations/experimental/padded_slice/device/padded_slice_rm_program_factory.cpp"
SLICE_WRITE_SOURCE = ("ttnn/cpp/ttnn/operations/experimental/slice_write/device/"
                      "slice_write_tiled_sharded_input_program_factory.cpp")
#: op_slicing.cpp `best_guess_slice_type`: a TILE output is sliced by height below this width
WIDTH_SLICE_MIN = 200


@dataclass(frozen=True, slots=True)
class ShardEstimate:
    """`calculate_L1_usage_for_conv_op`'s answer for one shard layout: the cores the conv
    runs on and its L1 a core (the conv program's own circular buffers, its output and
    the halo's output)."""

    cores: int
    total: int


def shard_estimate(attrs: Conv2dAttrs, layout: MemoryLayout, target: OpTarget) -> ShardEstimate | None:
    """The conv planned with `layout` on its interleaved row-major input (None when the
    layout cannot run it)."""
    dtype = attrs.config.weights_dtype or DataType.BFLOAT16
    act = DataType.BFLOAT16 if dtype.block_float else dtype
    rows = attrs.batch * attrs.input_hw[0] * attrs.input_hw[1]
    kh, kw = attrs.kernel
    x = TensorSpec((1, 1, rows, attrs.in_channels), act, Layout.ROW_MAJOR, DRAM_INTERLEAVED)
    w = TensorSpec((1, 1, kh * kw * round_up(attrs.in_channels, TILE), round_up(attrs.out_channels, TILE)), dtype,
                   Layout.TILE, DRAM_INTERLEAVED)
    conv = replace(attrs, config=replace(attrs.config, shard_layout=layout), slice_type=SliceType.L1_FULL)
    try:
        plan = plan_sliding_conv("ttnn.conv2d", OpRequest((x, w), OutputRequest(dtype=act), target), conv, rows)
    except InputError:
        return None
    return ShardEstimate(_program(plan, "Conv2dShardedProgramFactory").cores.cores, conv_l1_usage(plan))


@lru_cache(maxsize=4096)
def auto_shard_layout(attrs: Conv2dAttrs, target: OpTarget, matmul_conv: bool = False) -> MemoryLayout:
    """conv2d_utils.cpp `determine_conv_config_for_auto_shard` (tt-metal #17485, 2025-02:
    by L1 estimate, not by core count): each layout priced by `calculate_L1_usage_for_conv_op`
    (the conv program's circular buffers and output a core, the halo's output), height
    sharding unless block sharding costs less on at least a grid row of cores, width
    sharding (not for a matmul conv) when it costs less than the winner."""
    height = shard_estimate(attrs, MemoryLayout.HEIGHT_SHARDED, target)
    block = shard_estimate(attrs, MemoryLayout.BLOCK_SHARDED, target)
    width = None if matmul_conv else shard_estimate(attrs, MemoryLayout.WIDTH_SHARDED, target)
    layout, best = MemoryLayout.HEIGHT_SHARDED, height.total if height is not None else None
    if block is not None and (best is None or block.total < best) and block.cores >= target.grid[0]:
        layout, best = MemoryLayout.BLOCK_SHARDED, block.total
    if width is not None and (best is None or width.total < best):
        layout = MemoryLayout.WIDTH_SHARDED
    return layout


@dataclass(frozen=True, slots=True)
class ConvSlice:
    """One slice: its output rows [out_start, out_end) of the sliced dimension, the
    conv2d the L1 path runs on it (input slice size, its padding; for a transposed conv
    the stride-1 conv over the slice's full input) and the input sticks it reads
    (`rows`: N x the input slice's H x W). Invariant: a non-empty range, rows >= 1."""

    out_start: int
    out_end: int
    conv: Conv2dAttrs
    rows: int
    #: the halo's window when it is not the conv's (a transposed conv's slice)
    halo_window: HaloWindow | None = None

    def __post_init__(self) -> None:
        assert 0 <= self.out_start < self.out_end and self.rows >= 1, self


@dataclass(frozen=True, slots=True)
class SlicedOp:
    """What op_slicing.cpp `run_sliced_op` asks of the op it slices (its `OpSliceAttr`):
    the op's input and output image sizes, its output layout and slice config, and
    `cut`, the slice for an output range of a dimension (`get_input_slice_and_padding`
    with the conv the L1 op runs on it)."""

    batch: int
    out_channels: int
    input_hw: tuple[int, int]
    output_hw: tuple[int, int]
    output_layout: Layout
    slice_type: SliceType | None
    cut: Callable[[SliceType, int, int], ConvSlice]
    groups: int = 1
    #: the L1 op moves its halo output up after freeing its input (conv2d's
    #: `Conv2dSliceAttr::run_L1_op` and conv_transpose2d's `ConvT2DSliceAttr::run_L1_op`
    #: force `deallocate_activation` and `reallocate_halo_output`)
    move_halo: bool = False
    #: the L1 op skips the halo of a width-sharded slice without padding (conv2d's
    #: conv2d_L1, tt_conv.py `bypasses_halo`; conv_transpose2d's halo always runs).
    #: The slices' L1 estimate counts the halo all the same (conv2d_utils.cpp
    #: `calculate_L1_usage_for_conv_op` has no such case)
    bypass_halo: bool = False


def best_guess_slice_type(input_hw: tuple[int, int], output_layout: Layout) -> SliceType:
    """op_slicing.cpp `best_guess_slice_type`."""
    h, w = input_hw
    if output_layout is Layout.ROW_MAJOR:
        return SliceType.DRAM_HEIGHT if h > w * 3 else SliceType.DRAM_WIDTH
    return SliceType.DRAM_HEIGHT if w < WIDTH_SLICE_MIN or h > w else SliceType.DRAM_WIDTH


def _rounding(slice_type: SliceType, output_layout: Layout) -> int:
    return TILE if output_layout is Layout.TILE and slice_type is SliceType.DRAM_WIDTH else 1


def max_slices(output_hw: tuple[int, int], slice_type: SliceType, output_layout: Layout) -> int:
    """`compute_max_num_slices`: every output row (column) a slice, or for a TILE output
    every 32 columns of a width slice."""
    dim = output_hw[0 if slice_type is SliceType.DRAM_HEIGHT else 1]
    return ceil_div(dim, _rounding(slice_type, output_layout)) if output_layout is Layout.TILE else dim


def slice_ranges(dim: int, rounding: int, num_slices: int) -> list[tuple[int, int]]:
    """The output ranges `run_sliced_op` walks (empty slices skipped)."""
    units = ceil_div(dim, rounding)
    least, rem = divmod(units, num_slices)
    out, start = [], 0
    for i in range(num_slices):
        if start >= dim:
            break
        size = rounding * (least + (1 if i < rem else 0))
        end = min(dim, start + size)
        if end > start:
            out.append((start, end))
        start += size
    return out


def conv_slice(attrs: Conv2dAttrs, slice_type: SliceType, start: int, end: int, output_layout: Layout) -> ConvSlice:
    """`get_input_slice_and_padding` for output rows (or columns) [start, end)."""
    axis = 0 if slice_type is SliceType.DRAM_HEIGHT else 1
    size_in, k, s, d = attrs.input_hw[axis], attrs.kernel[axis], attrs.stride[axis], attrs.dilation[axis]
    pt, pb, pl, pr = attrs.pads
    lo_pad, hi_pad = (pt, pb) if axis == 0 else (pl, pr)
    full_out = attrs.output_hw[axis]
    lo = start * s - lo_pad
    hi = (end - 1) * s - lo_pad + (k - 1) * (d - 1) + k
    pad_lo, pad_hi = max(0, -lo), max(0, hi - size_in)
    lo, hi = max(0, lo), min(size_in, hi)
    if start == 0:
        pad_lo, lo = lo_pad, 0
    if end == full_out:
        pad_hi, hi = hi_pad, size_in
    span = hi - lo
    hw = (span, attrs.input_hw[1]) if axis == 0 else (attrs.input_hw[0], span)
    pads = [pt, pb, pl, pr]
    pads[2 * axis], pads[2 * axis + 1] = pad_lo, pad_hi
    single = hw == attrs.input_hw
    width = end - start if axis == 1 else attrs.output_hw[1]
    if output_layout is Layout.TILE and width % TILE and not single:
        pads[3] += (TILE - width % TILE) * attrs.stride[1]
    conv = replace(attrs, input_hw=hw, padding=(pads[0], pads[2]), padding_end=(pads[1], pads[3]))
    return ConvSlice(start, end, conv, attrs.batch * hw[0] * hw[1])


def _slice_conv(op: str, req: OpRequest, sl: ConvSlice, layout_of: Callable[[Conv2dAttrs, OpTarget], MemoryLayout],
                single: bool, move_halo: bool = False,
                bypass_halo: bool = False) -> tuple[Conv2dAttrs, OpPlan, TensorSpec | None]:
    """The slice's conv2d_L1 programs: its shard layout chosen for the slice (unless set),
    its input already sharded in L1 by padded_slice (several slices) or read from the
    DRAM input (one slice), its output TILE and sharded (several) or DRAM (one);
    `bypass_halo`: the L1 op may skip the halo (`bypasses_halo`, the slice's own
    padding and layout decide). Returns the slice's conv, its programs and (several
    slices) its sharded input, padded_slice's output."""
    x = req.inputs[0]
    conv = sl.conv
    if conv.config.shard_layout is None:
        conv = replace(conv, config=replace(conv.config, shard_layout=layout_of(conv, req.target)))
    conv = replace(conv, config=replace(conv.config, output_layout=Layout.TILE))
    rows = sl.rows
    if single:
        return conv, plan_sliding_conv(op, replace(req, out=OutputRequest(dtype=req.out.dtype)), conv, rows,
                                       move_halo=move_halo, bypass_halo=bypass_halo, halo_window=sl.halo_window), None
    layout = conv.config.shard_layout
    assert layout is not None
    # padded_slice shards the DRAM input as `get_input_memory_config` gives it
    # (determine_input_memory_config: the alignment of an input not sharded, the rows a
    # whole tile a core, a row for width sharding), which the conv keeps (its grid)
    align = input_channels_alignment(layout, x, req.target, sliced=True)
    p = parallel_config(conv, layout, req.target, align)
    c_pad = padded_in_channels(conv, p, align)
    unit = 1 if layout is MemoryLayout.WIDTH_SHARDED else TILE
    shard = ShardSpec(p.grid, (round_up(rows, p.cores_nhw * unit) // p.cores_nhw, c_pad // p.cores_c),
                      p.orientation)
    sliced = TensorSpec((1, 1, rows, c_pad), x.dtype, Layout.ROW_MAJOR, MemoryConfig(BufferType.L1, layout, shard))
    out = OutputRequest(BufferType.L1, layout, None, req.out.dtype)
    return conv, plan_sliding_conv(op, replace(req, inputs=(sliced, *req.inputs[1:]), out=out), conv, rows,
                                   move_halo=move_halo, bypass_halo=bypass_halo, halo_window=sl.halo_window), sliced


def _program(plan: OpPlan, name: str) -> Program:
    return next(p for p in plan.programs if p.name == name)


def _cb_bytes(prog: Program, name: str) -> int:
    return next((cb.total_bytes for cb in prog.circular_buffers if cb.name == name), 0)


def conv_l1_usage(plan: OpPlan) -> int:
    """`calculate_L1_usage_for_conv_op`'s total, per core, read off a conv's programs:
    the conv's own circular buffers, its output and the halo's output."""
    halo, conv = _program(plan, "UntilizeWithHaloProgramFactory"), _program(plan, "Conv2dShardedProgramFactory")
    return conv.cb_bytes + _cb_bytes(conv, "out") + _cb_bytes(halo, "out")


def slice_l1_usage(plan: OpPlan) -> int:
    """`Conv2dSliceAttr::get_L1_usage`: max(halo input + halo output, `conv_l1_usage`),
    per core, read off the slice's programs."""
    halo = _program(plan, "UntilizeWithHaloProgramFactory")
    return max(_cb_bytes(halo, "src") + _cb_bytes(halo, "out"), conv_l1_usage(plan))


@dataclass(frozen=True, slots=True)
class SliceDecision:
    """`determine_slice_config`'s answer: the dimension, the slices and their L1 estimate."""

    slice_type: SliceType
    slices: tuple[ConvSlice, ...]
    l1_usage: int


def determine_slices(op: str, req: OpRequest, sliced: SlicedOp,
                     layout_of: Callable[[Conv2dAttrs, OpTarget], MemoryLayout]) -> SliceDecision:
    """The fewest slices whose largest L1 estimate fits the free L1 (op_slicing.cpp
    `determine_slice_config_internal`: `L1_stats.total_free_bytes`, the L1 allocator's
    free bytes, L1_SMALL excluded: `OpTarget.free_l1`; BEVDepth's published refusal
    prints "Available L1: 1329888 bytes", n150's bank beside a 64 KiB L1_SMALL), along
    the slice config's dimension, or (none given) first along the guessed dimension,
    then the other."""
    layout = sliced.output_layout
    free = req.target.free_l1
    order: list[SliceType]
    if sliced.slice_type is SliceType.DRAM_HEIGHT or sliced.slice_type is SliceType.DRAM_WIDTH:
        order = [sliced.slice_type]
    else:
        first = best_guess_slice_type(sliced.input_hw, layout)
        order = [first, SliceType.DRAM_WIDTH if first is SliceType.DRAM_HEIGHT else SliceType.DRAM_HEIGHT]
    tried = []
    for st in order:
        dim = sliced.output_hw[0 if st is SliceType.DRAM_HEIGHT else 1]
        top = max_slices(sliced.output_hw, st, layout)
        for n in range(1, top + 1):
            slices = tuple(sliced.cut(st, a, b) for a, b in slice_ranges(dim, _rounding(st, layout), n))
            usage = max(slice_l1_usage(_slice_conv(op, req, sl, layout_of, True, sliced.move_halo)[1])
                        for sl in slices)
            if usage <= free:
                return SliceDecision(st if n > 1 else SliceType.L1_FULL, slices, usage)
        tried.append(f"{top} {st.value} slices")
    chunks = (f"; a build that splits a grouped conv's channels when no spatial slicing fits "
              f"(channel_chunk_count_if_needed, groups {sliced.groups}) is not modelled") if sliced.groups > 1 else ""
    require(False, op, f"DRAM Auto slice could not find valid slice configuration (tried up to {' and '.join(tried)}; "
            f"available L1 {free} B): the conv needs more L1 than the device has even at maximum slicing; "
            f"hint: shard the input in L1 or use smaller inputs{chunks}")
    raise AssertionError("unreachable")


def plan_conv2d_dram(op: str, req: OpRequest, attrs: Conv2dAttrs,
                     layout_of: Callable[[Conv2dAttrs, OpTarget], MemoryLayout]) -> OpPlan:
    """conv2d_DRAM for a DRAM interleaved row-major input [1, 1, N*H*W, C]."""
    return plan_sliced(op, req, conv2d_sliced(attrs), layout_of)


def conv2d_sliced(attrs: Conv2dAttrs) -> SlicedOp:
    """conv2d.cpp `Conv2dSliceAttr`: its slices cut by `conv_slice`."""
    layout = attrs.config.output_layout
    return SlicedOp(attrs.batch, attrs.out_channels, attrs.input_hw, attrs.output_hw, layout, attrs.slice_type,
                    lambda st, a, b: conv_slice(attrs, st, a, b, layout), attrs.groups, move_halo=True,
                    bypass_halo=True)


def plan_sliced(op: str, req: OpRequest, sliced: SlicedOp,
                layout_of: Callable[[Conv2dAttrs, OpTarget], MemoryLayout]) -> OpPlan:
    """op_slicing.cpp `run_sliced_op` for a conv (conv2d_DRAM, conv_transpose2d_DRAM):
    the DRAM output first, then one slice on the L1 path, or per slice padded_slice ->
    the L1 op's programs -> slice_write."""
    x, target = req.inputs[0], req.target
    require(sliced.output_layout is Layout.TILE, op, "a ROW_MAJOR output on the DRAM path is not modelled")
    require(x.memory.buffer_type is BufferType.DRAM and not x.memory.layout.sharded, op,
            "the DRAM path takes a DRAM interleaved input")
    decision = determine_slices(op, req, sliced, layout_of)
    oh, ow = sliced.output_hw
    out_dtype = req.out.dtype or x.dtype
    out = TensorSpec((1, 1, sliced.batch * oh * ow, sliced.out_channels), out_dtype, Layout.TILE,
                     MemoryConfig(BufferType.DRAM, MemoryLayout.INTERLEAVED, None))
    if decision.slice_type is SliceType.L1_FULL:
        # one slice: the L1 op on the DRAM input, its result moved to DRAM interleaved
        plan = _slice_conv(op, req, decision.slices[0], layout_of, True, sliced.move_halo, sliced.bypass_halo)[1]
        return replace(plan, outputs=(out,), buffers=tuple(
            replace(b, spec=out) if b.role is BufferRole.OUTPUT else b for b in plan.buffers))
    programs: list[Program] = []
    buffers: list[DeviceBuffer] = []
    elem = x.dtype.element_bytes
    for i, sl in enumerate(decision.slices):
        _, plan, slice_input = _slice_conv(op, req, sl, layout_of, False, sliced.move_halo, sliced.bypass_halo)
        base = len(programs)
        assert slice_input is not None and slice_input.memory.shard is not None
        layout, grid = slice_input.memory.layout, slice_input.memory.shard.grid
        shard_rows, width = slice_input.memory.shard.shape
        row_bytes = width * elem
        cbs = [cbuf(0, "output", shard_rows, row_bytes, grid, globally_allocated=True)]
        if row_bytes % target.dram_alignment:
            scratch = round_up(x.shape[-1] * elem + target.dram_alignment, target.dram_alignment)
            cbs.append(cbuf(1, "alignment_scratch", 2, scratch, grid))
        if row_bytes > x.shape[-1] * elem:
            cbs.append(cbuf(len(cbs), "padding_scratch", 1, row_bytes, grid))
        programs.append(Program("PaddedSliceRMProgramFactory", PADDED_SLICE_SOURCE, grid, tuple(cbs)))
        sliced_spec = TensorSpec((1, 1, sl.rows, row_bytes // elem), x.dtype, Layout.ROW_MAJOR,
                                 MemoryConfig(BufferType.L1, layout, ShardSpec(grid, (shard_rows, row_bytes // elem))))
        # run_sliced_op's `sliced_input_tensor` is in scope to the end of the slice:
        # conv2d_L1 frees it after the halo (the forced `deallocate_activation`), but with
        # no halo it is the conv's own input, held through the conv and slice_write
        haloed = any(prog.name == "UntilizeWithHaloProgramFactory" for prog in plan.programs)
        held = base + 1 if haloed else base + len(plan.programs) + 1
        buffers.append(tensor_buffer(f"slice{i}_input", BufferRole.INTERMEDIATE, sliced_spec, target,
                                     (base, held)))
        for b in plan.buffers:
            role = BufferRole.INTERMEDIATE if b.role is BufferRole.OUTPUT else b.role
            name = "conv_output_sharded" if b.role is BufferRole.OUTPUT else b.name
            extra = 1 if b.role is BufferRole.OUTPUT else 0  # the conv's output lives into slice_write
            buffers.append(replace(b, name=f"slice{i}_{name}", role=role,
                                   live=(base + 1 + b.live[0], base + 1 + b.live[1] + extra)))
        programs.extend(plan.programs)
        conv_prog = plan.programs[-1]
        out_cb = next(cb for cb in conv_prog.circular_buffers if cb.name == "out")
        programs.append(Program("SliceWriteTiledShardedInputProgramFactory", SLICE_WRITE_SOURCE, conv_prog.cores,
                                (cbuf(0, "input", out_cb.pages, out_cb.page_bytes, conv_prog.cores,
                                      globally_allocated=True),)))
    last = len(programs) - 1
    buffers.insert(0, tensor_buffer("output0", BufferRole.OUTPUT, out, target, (0, last)))
    return OpPlan(op, tuple(programs), (out,), tuple(buffers))


def plan_conv2d_routed(kind: OpKind, req: OpRequest, attrs: Conv2dAttrs) -> OpPlan:
    """ttnn.conv2d: `determine_conv2d_execution_path` (L1 with an L1_FULL slice config,
    or with none and an L1 input; otherwise the DRAM path), then conv2d_L1 (tt_conv.py
    `plan_conv2d`) or conv2d_DRAM; a 1x1 stride-1 conv the DRAM path hands to conv2d_L1
    (its matmul, refused there), the slices' shard layouts by `auto_shard_layout`."""
    x = req.inputs[0]
    l1_input = x.memory.buffer_type is BufferType.L1
    if attrs.slice_type is SliceType.L1_FULL or (attrs.slice_type is None and l1_input):
        return plan_conv2d(kind, req, attrs)
    if attrs.kernel == (1, 1) and attrs.stride == (1, 1) and attrs.pads == (0, 0, 0, 0):
        return plan_conv2d(kind, req, attrs)
    return plan_conv2d_dram(kind.value, req, attrs, auto_shard_layout)
