"""conv2d as ttnn runs it: (interleaved-to-sharded) -> halo -> conv -> (sharded-to-
interleaved), each a program of its own.

Sources (tt-metal, read at the 2025 versions near the tt-mlir pin):
- the shard grid: conv2d_utils.cpp `determine_parallel_config` (height sharding: the
  output's N*H*W tiles over `find_closest_largest_divisor_with_num_padding_and_mult`
  cores; block sharding: that along the grid's rows, the output channel tiles over its
  columns; width sharding: the input channel tiles over the grid; tt_conv_grid.py, with a
  sharded input's own grid) and `determine_per_core_conv_block_config` (act_block_h = the per-core output height, or the
  override's largest divisor of it; act_block_w = C x kernel_w rounded to a tile for
  height sharding, C / cores_c x kernel_w for block sharding, C x kh x kw / (cores_c x
  act_block_w_div) for width sharding).
- the input channels a stick holds: conv2d_utils.cpp `get_input_channels_alignment` (8
  for a row-major input not sharded, the shard width's 32 / 16 / 8 for a sharded one, 32
  for width sharding), padded to the channel cores (`determine_input_memory_config`,
  which also pads the input's N*H*W rows to a whole tile a core, a row a core for a
  width-sharded row-major input).
- the conv CBs: conv2d_op_program_factory_common.cpp `get_cb_info` (ported CB by CB: the
  weights, partials, activation with the split reader's two halves
  (`is_split_reader_viable`'s transfer-cost comparison, ported with its NOC rate tables),
  tilized activation, bias, row-major activation, output, reader indices, the 64-B L1
  scratch and the sharded activation), `determine_packer_l1_acc` for the partials' format.
- the halo: sliding_window/halo/device/untilize_with_halo_program_factory.cpp (row-major
  input: the input and output CBs bound to their shards, a one-stick padding CB per
  reader; the output shard holds `max_out_nsticks_per_core` sticks: over the cores, the
  longest run of padded-input sticks one core's outputs read, tt_sliding_window.py).
- interleaved_to_sharded_program_factory.cpp: the output CB bound to the shard, a
  one-page scratch CB when a DRAM row is not DRAM-aligned.
conv3d: tt_conv3d.py.
Not modelled (the rule refuses them by name): 1x1 stride-1 convs (tt-metal runs them as a
matmul), 1-D depthwise convs, activation reuse, TILE inputs (the halo's untilize path),
and the automatic choice of a shard layout (this rule takes one: tt_conv_dram.py
`auto_shard_layout` makes tt-metal's choice).
The sliding-window config tensors (the halo's padding and gather configs, the conv's
reader indices) in L1_SMALL or DRAM, their CBs and tt-metal's check of the reader
indices' page: tt_conv_config.py, their sizes tt_sliding_window.py.

Worked example (H3, p150b 11 x 10): 1 x 128 x 128 x 32 bf16, 64 3x3 filters, padding 1,
height sharded: 512 output tiles over 103 cores, 5 x 2 tiles a core; act block 5 x 3
tiles split 3 + 2 rows; CBs weights 6, act 9 + 6, tilized 15, bias 2 tiles and the 64-B
scratch: 77,888 B; the output 10 tiles = 20,480 B a core; the halo 424 sticks x 64 B; in
L1_SMALL the halo's configs 12, 12, 40, 40 B a core and the reader indices 20 B.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tileplan.targets.tenstorrent.memory import (
    BufferType,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import (
    L1_ARRAY_BYTES,
    BufferRole,
    CircularBuffer,
    ComputeConfig,
    DeviceBuffer,
    MathFidelity,
    OpPlan,
    OpRequest,
    OpTarget,
    OutputRequest,
    Program,
    cbuf,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import (
    Conv2dAttrs,
    is_1d_depthwise,
)
from tileplan.targets.tenstorrent.ops.tt_conv_config import ConfigPlacement, halo_configs, reader_indices
from tileplan.targets.tenstorrent.ops.tt_conv_grid import (
    ConvParallel,
    input_channels_alignment,
    input_parallel,
    parallel_config,
)
from tileplan.targets.tenstorrent.ops.tt_conv_reader import split_reader_viable
from tileplan.targets.tenstorrent.ops.tt_sharding import plan_to_memory_config
from tileplan.targets.tenstorrent.ops.tt_sliding_window import SlidingWindow, max_out_nsticks_per_core
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up

CONV_DIR = "ttnn/cpp/ttnn/operations/conv/conv2d/"
HALO_SOURCE = "ttnn/cpp/ttnn/operations/sliding_window/halo/device/untilize_with_halo_program_factory.cpp"
I2S_SOURCE = "ttnn/cpp/ttnn/operations/data_movement/sharded/device/interleaved_to_sharded_program_factory.cpp"
S2I_SOURCE = "ttnn/cpp/ttnn/operations/data_movement/sharded/device/sharded_to_interleaved_program_factory.cpp"
MOVE_SOURCE = "ttnn/cpp/ttnn/operations/data_movement/move/device/move_sharded_program_factory.cpp"
#: conv2d's default compute config (`init_device_compute_kernel_config(..., HiFi4, true, false, false)`)
CONV_DEFAULT_COMPUTE = ComputeConfig(MathFidelity.HIFI4, True, False, False)


def padded_in_channels(attrs: Conv2dAttrs, p: ConvParallel, align: int) -> int:
    """The input channels the conv reads a stick of: aligned (`input_channels_alignment`),
    and (block / width sharded) a multiple of the channel cores."""
    if p.layout is MemoryLayout.HEIGHT_SHARDED:
        return round_up(attrs.in_channels, align)
    return round_up(attrs.in_channels, p.cores_c * align)


def block_config(attrs: Conv2dAttrs, p: ConvParallel, c_pad: int) -> tuple[int, int]:
    """`determine_per_core_conv_block_config`: (act_block_h, act_block_w) in tiles."""
    kh, kw = attrs.kernel
    h = p.per_core_h
    override_t = attrs.config.act_block_h_override // TILE
    if override_t > 0:
        h = next(d for d in range(min(override_t, p.per_core_h), 0, -1) if p.per_core_h % d == 0)
    if p.layout is MemoryLayout.HEIGHT_SHARDED:
        w = round_up(c_pad * kw, TILE) // TILE
    elif p.layout is MemoryLayout.BLOCK_SHARDED:
        w = round_up(c_pad // p.cores_c * kw, TILE) // TILE
    else:
        w = max((c_pad * kh * kw) // (p.cores_c * attrs.config.act_block_w_div) // TILE, 1)
    return h, w


def uses_split_reader(attrs: Conv2dAttrs, p: ConvParallel, blocks: tuple[int, int], c_pad: int,
                      in_dtype: DataType, out_dtype: DataType, compute: ComputeConfig, target: OpTarget,
                      weights_dtype: DataType) -> bool:
    """`get_cb_info`'s `split_reader_enabled`: height sharding with an act block over one
    tile, `force_split_reader` or else `is_split_reader_viable` (tt_conv_reader.py)."""
    cfg = attrs.config
    act_h, act_w = blocks
    if p.layout is not MemoryLayout.HEIGHT_SHARDED or act_h < 2:
        return False
    if cfg.force_split_reader is not None:
        return cfg.force_split_reader
    return split_reader_viable(target.arch, act_h, c_pad, attrs.kernel[1], in_dtype, p.per_core_w * act_w,
                               weights_dtype.tile_bytes, attrs.dilation[1], act_w, compute.fp32_dest_acc_en,
                               out_dtype, target.l1_alignment)


def conv_cbs(attrs: Conv2dAttrs, p: ConvParallel, blocks: tuple[int, int], weights_height: int,
             in_dtype: DataType, out_dtype: DataType, compute: ComputeConfig, act_shard: tuple[int, int],
             split: bool, reader_page: int, weights_dtype: DataType) -> list[CircularBuffer]:
    """`get_cb_info` for a 2-D conv (in its order; CBs of zero pages are not created);
    `weights_dtype`: the prepared weights' type (conv2d.cpp: Conv2dConfig.weights_dtype,
    else the weight tensor's own); `split`: `uses_split_reader`; `reader_page`: the
    READER_INDICES CB's page (tt_conv_config.py `reader_indices`: the config tensor's row
    in L1_SMALL; `get_cb_info`'s 2 B an output row with the tensors in DRAM)."""
    cfg, grid = attrs.config, p.program_grid
    act_h, act_w = blocks
    conv_in = DataType.FLOAT32 if in_dtype is DataType.FLOAT32 else DataType.BFLOAT16
    hs = p.layout is MemoryLayout.HEIGHT_SHARDED
    blocks_h = p.per_core_h // act_h
    act_tiles = (act_h - act_h // 2) * act_w if split else act_h * act_w
    act_split = (act_h // 2) * act_w if split else 0
    weights = p.per_core_w * act_w
    if hs and blocks_h > 1:
        weights *= attrs.kernel[0]
    elif cfg.enable_weights_double_buffer:
        weights *= 2
    blocks_w = (weights_height // TILE) // act_w
    # get_cb_info: `conv_act_c_blocks = weight_matrix_width_ntiles / per_core_out_matrix_
    # width_ntile`, the weights' columns padded to the output's channel cores: those cores
    in0_blocks_w = blocks_w * (p.out_cores_c if p.layout is MemoryLayout.BLOCK_SHARDED else 1)
    packer = compute.packer_l1_acc and ((attrs.bias and in0_blocks_w > 1) or in0_blocks_w > 2)
    partial = (DataType.FLOAT32 if compute.fp32_dest_acc_en else DataType.BFLOAT16) if packer else out_dtype
    out_tiles = p.per_core_h * p.per_core_w
    untilize_out = cfg.output_layout is Layout.ROW_MAJOR
    if cfg.enable_act_double_buffer:
        act_tiles, act_split = act_tiles * 2, act_split * 2
    act_tile = conv_in.tile_bytes if hs else out_dtype.tile_bytes
    row_major = act_w * 2 if p.layout is MemoryLayout.WIDTH_SHARDED else 0
    if p.layout is MemoryLayout.BLOCK_SHARDED and conv_in is not out_dtype:
        row_major = act_tiles
    specs = [(0, "weights", weights, weights_dtype.tile_bytes, False),
             (1, "matmul_partials", out_tiles, partial.tile_bytes, not untilize_out and partial is out_dtype),
             (2, "act", act_tiles, act_tile, False), (3, "act_second_reader", act_split, act_tile, False),
             (4, "act_tilized", act_h * act_w, out_dtype.tile_bytes, False),
             (5, "bias", p.per_core_w if attrs.bias else 0, weights_dtype.tile_bytes, False),
             (6, "act_row_major", row_major, conv_in.tile_bytes, False),
             (7, "out", out_tiles, out_dtype.tile_bytes, True),
             (8, "reader_indices", 1, reader_page, not cfg.config_tensors_in_dram),
             (9, "l1_array", 1, L1_ARRAY_BYTES, False),
             (10, "act_sharded", act_shard[0], act_shard[1] * conv_in.element_bytes, True)]
    out: list[CircularBuffer] = []
    for _, name, pages, page, bound in specs:
        if pages > 0:
            out.append(cbuf(len(out), name, pages, page, grid, globally_allocated=bound))
    return out


def conv_window(attrs: Conv2dAttrs, p: ConvParallel) -> SlidingWindow:
    """The conv's `SlidingWindowConfig` (conv2d.cpp `conv2d_L1`: the image, kernel,
    stride, four paddings and dilation, the N x H x W cores, outputs snapped to tiles)."""
    return SlidingWindow(attrs.batch, attrs.input_hw, attrs.kernel, attrs.stride, attrs.pads, attrs.dilation,
                         p.cores_nhw, p.layout)


def config_placement(attrs: Conv2dAttrs, p: ConvParallel) -> ConfigPlacement:
    """Where the conv's and its halo's config tensors go (tt_conv_config.py): L1_SMALL on
    the conv's input grid, or DRAM with `config_tensors_in_dram`."""
    return ConfigPlacement(p.grid, p.cores_nhw, attrs.config.config_tensors_in_dram)


def bypasses_halo(attrs: Conv2dAttrs, layout: MemoryLayout | None) -> bool:
    """conv2d.cpp `conv2d_L1`: `bypass_halo = (shard_scheme == WIDTH_SHARDED && pad_h == 0
    && pad_w == 0)` (every version read, 2024 to 2026): a width-sharded conv without
    padding reads its sharded input directly, with no halo (each core holds every row of
    its channels). conv_transpose2d's halo always runs (conv_transpose2d.cpp)."""
    return layout is MemoryLayout.WIDTH_SHARDED and attrs.pads == (0, 0, 0, 0)


def plan_conv2d(kind: OpKind, req: OpRequest, attrs: Conv2dAttrs) -> OpPlan:
    """ttnn.conv2d (inputs: the activation and the weights)."""
    kh, kw = attrs.kernel
    require((kh, kw) != (1, 1) or attrs.stride != (1, 1) or attrs.pads != (0, 0, 0, 0), kind.value,
            "a 1x1 stride-1 unpadded conv runs as a matmul: plan it with tt_matmul")
    return plan_sliding_conv(kind.value, req, attrs, attrs.batch * attrs.input_hw[0] * attrs.input_hw[1],
                             move_halo=attrs.config.reallocate_halo_output, bypass_halo=True)


#: the sliding window a halo runs, given the conv's parallel config
HaloWindow = Callable[[ConvParallel], SlidingWindow]


def plan_sliding_conv(op: str, req: OpRequest, attrs: Conv2dAttrs, input_rows: int,
                      move_halo: bool = False, keep_input: bool = False, bypass_halo: bool = False,
                      halo_window: HaloWindow | None = None) -> OpPlan:
    """The programs of a conv2d whose halo reads `input_rows` sticks of input: conv2d's
    own (its input, N x H x W sticks) and conv_transpose2d's (tt_conv_transpose.py: its
    stride-1 unpadded conv over the zero-interleaved, padded input the halo builds from
    the N x H x W sticks of the input it was given).

    `move_halo` (conv2d.cpp `conv2d_L1` with `reallocate_halo_output`): after the halo,
    with the op's own sharded input freed, `ttnn::move` of the halo output, which frees
    the buffer first and allocates it anew, top-down, so it rises into the input's space
    (data_movement/move/move.cpp; `MoveShardedProgramFactory` copies it, both its CBs
    bound to the buffers; it dispatches nothing when the address does not change).
    `keep_input`: the op's own sharded input stays to the end (conv_transpose2d.cpp
    `conv_transpose2d_L1` without `deallocate_activation`: `input_tensor_post_tm` is held
    through the conv and the output's move to its memory config).
    `bypass_halo`: conv2d's L1 path, which skips the halo when `bypasses_halo` (the
    conv's sharded-activation CB then bound to its sharded input, which stays in scope to
    the end as the halo output would); conv_transpose2d's halo always runs.
    A sharded input keeps its grid when tt-metal keeps it (`input_parallel`), else it is
    sharded (interleaved) or resharded (`ttnn.to_memory_config`) to the conv's own.
    `halo_window`: the halo's sliding window when it is not the conv's own
    (`conv_window`): conv_transpose2d's transposed window over its own input."""
    x, w = req.inputs[0], req.inputs[1]
    cfg, target = attrs.config, req.target
    kh, kw = attrs.kernel
    require(cfg.shard_layout is not None, op, "the automatic shard layout choice is not modelled; set "
            "Conv2dConfig.shard_layout")
    assert cfg.shard_layout is not None
    require(not is_1d_depthwise(attrs), op, "1-D depthwise convs are not modelled")
    require(x.layout is Layout.ROW_MAJOR, op, "a TILE conv input (the halo's untilize path) is not modelled")
    compute = req.compute or CONV_DEFAULT_COMPUTE
    out_dtype = req.out.dtype or x.dtype
    own_grid = input_parallel(attrs, x, target)
    # get_conv_padded_input_shape_and_mem_config: a sharded input's channels aligned by its
    # own layout (kept or resharded), an interleaved one's by the conv's
    align = input_channels_alignment(x.memory.layout if x.memory.layout.sharded else cfg.shard_layout, x, target)
    p = own_grid if own_grid is not None else parallel_config(attrs, cfg.shard_layout, target, align)
    c_pad = padded_in_channels(attrs, p, align)
    blocks = block_config(attrs, p, c_pad)
    # height sharded: one act block per kernel row, the weights padded alike
    weights_height = (kh * blocks[1] * TILE if p.layout is MemoryLayout.HEIGHT_SHARDED
                      else round_up(c_pad * kh * kw, TILE))
    conv_in = DataType.FLOAT32 if x.dtype is DataType.FLOAT32 else DataType.BFLOAT16
    # the shards' orientation (ConvParallel.orientation: a kept input's own)
    orientation = p.orientation
    c_core = c_pad // p.cores_c
    # conv2d_utils.cpp determine_input_memory_config: the input's rows padded to a whole
    # tile a core (a row a core for a width-sharded row-major input), its shards that
    # height over the N*H*W cores
    unit = 1 if p.layout is MemoryLayout.WIDTH_SHARDED else TILE
    nhw_in = round_up(input_rows, p.cores_nhw * unit)
    in_shard = ShardSpec(p.grid, (nhw_in // p.cores_nhw, c_core), orientation)
    if own_grid is not None and x.memory.shard is not None:
        in_shard = x.memory.shard
    conv_input = TensorSpec((1, 1, nhw_in, c_pad), conv_in, Layout.ROW_MAJOR,
                            MemoryConfig(BufferType.L1, p.layout, in_shard))
    programs: list[Program] = []
    buffers: list[DeviceBuffer] = []
    if own_grid is None and x.memory.layout.sharded:
        # shard_or_reshard_tensor_if_required: `ttnn::to_memory_config` into the conv's
        # own config (a reshard, tt_sharding.py), the new tensor freed after the halo
        reshard = plan_to_memory_config(OpKind.TO_MEMORY_CONFIG,
                                        OpRequest((x,), OutputRequest.of(conv_input.memory, x.dtype), target))
        programs.extend(reshard.programs)
        buffers.append(tensor_buffer("conv_input_sharded", BufferRole.INTERMEDIATE, conv_input, target,
                                     (0, len(programs))))
    elif not x.memory.layout.sharded:
        stick = c_pad * x.dtype.element_bytes
        cbs = [cbuf(0, "output", in_shard.shape[0], round_up(stick, target.l1_alignment), p.grid,
                    globally_allocated=True)]
        if x.memory.buffer_type is BufferType.DRAM and stick % target.dram_alignment:
            cbs.append(cbuf(1, "scratch", 1, round_up(stick, target.dram_alignment), p.grid))
        programs.append(Program("InterleavedToShardedProgramFactory", I2S_SOURCE, p.grid, tuple(cbs)))
        buffers.append(tensor_buffer("conv_input_sharded", BufferRole.INTERMEDIATE, conv_input, target, (0, 1)))
    if bypass_halo and bypasses_halo(attrs, p.layout):
        # conv2d.cpp conv2d_L1: the conv reads its sharded input; it is the conv's
        # `input_tensor_post_tm`, in scope to the end
        act_shard = in_shard.shape
        held = "conv_input_sharded"
    else:
        window = halo_window(p) if halo_window is not None else conv_window(attrs, p)
        act_shard = _plan_halo(attrs, p, window, in_shard, c_pad, conv_in, move_halo, programs, buffers, target)
        held = "halo_output (moved)" if move_halo else "halo_output"
    oh, ow = attrs.output_hw
    out_c = round_up(attrs.out_channels, TILE * p.out_cores_c)
    out_shard = ShardSpec(p.out_grid, (p.per_core_h * TILE, p.per_core_w * TILE), orientation)
    # the output's logical channels are the conv's (conv2d_op.cpp compute_output_specs);
    # its shards hold the channels padded to the channel cores, which the allocator
    # reserves whole on every core (base.py tensor_buffer)
    conv_out = TensorSpec((1, 1, attrs.batch * oh * ow, attrs.out_channels), out_dtype, cfg.output_layout,
                          MemoryConfig(BufferType.L1, p.layout, out_shard))
    weights_dtype = cfg.weights_dtype or req.inputs[1].dtype
    split = uses_split_reader(attrs, p, blocks, c_pad, x.dtype, out_dtype, compute, target, weights_dtype)
    where = config_placement(attrs, p)
    reader_row, reader_page = reader_indices(conv_window(attrs, p), blocks[0], split, where, cfg.reader_indices_cb, op)
    cbs = conv_cbs(attrs, p, blocks, weights_height, x.dtype, out_dtype, compute, act_shard, split, reader_page,
                   weights_dtype)
    programs.append(Program("Conv2dShardedProgramFactory", CONV_DIR + "device/conv2d_op_sharded_program_factory.cpp",
                            p.program_grid, tuple(cbs)))
    conv = len(programs) - 1
    # the conv program's cache key: its attributes and its input (tt-metal hashes the
    # operation's attributes and input tensors)
    buffers.append(where.buffer("conv_reader_indices", reader_row, target, (conv, conv),
                                f"conv {attrs!r} {conv_input!r} {out_dtype.value} {weights_dtype.value}"))
    out = conv_out
    if not req.out.sharded:
        out = TensorSpec(conv_out.shape, out_dtype, cfg.output_layout, req.out.memory())
        page = out_dtype.tile_bytes if cfg.output_layout is Layout.TILE else out_c * out_dtype.element_bytes
        pages = p.per_core_h * p.per_core_w if cfg.output_layout is Layout.TILE else p.per_core_h * TILE
        programs.append(Program("ShardedToInterleavedProgramFactory", S2I_SOURCE, p.out_grid,
                                (cbuf(0, "input", pages, page, p.out_grid, globally_allocated=True),)))
        buffers.append(tensor_buffer("conv_output_sharded", BufferRole.INTERMEDIATE, conv_out, target,
                                     (conv, conv + 1)))
    last = len(programs) - 1
    # conv2d.cpp conv2d_L1: the output's `ttnn::to_memory_config` runs while the conv's
    # input (`input_tensor_post_tm`: the halo output, moved or not, or with no halo the
    # sharded input) is still in scope; it is freed when the function returns.
    # conv_transpose2d keeps its own sharded input too (`keep_input`)
    kept = {held, "conv_input_sharded"} if keep_input else {held}
    buffers = [replace(b, live=(b.live[0], last)) if b.name in kept else b for b in buffers]
    buffers.append(tensor_buffer("output0", BufferRole.OUTPUT, out, target, (last, last)))
    require(w.layout in (Layout.TILE, Layout.ROW_MAJOR), op, "weights expected")
    return OpPlan(op, tuple(programs), (out,), tuple(buffers))


def _plan_halo(attrs: Conv2dAttrs, p: ConvParallel, window: SlidingWindow, in_shard: ShardSpec, c_pad: int,
               conv_in: DataType, move_halo: bool, programs: list[Program], buffers: list[DeviceBuffer],
               target: OpTarget) -> tuple[int, int]:
    """The halo's program (and `ttnn::move`'s) and buffers, appended; returns the shard of
    the conv's input (the halo output: sticks, channels a core)."""
    c_core = c_pad // p.cores_c
    orientation = in_shard.orientation
    sticks = max_out_nsticks_per_core(window)
    halo_out = TensorSpec((1, 1, sticks * p.cores_nhw, c_pad), conv_in, Layout.ROW_MAJOR,
                          MemoryConfig(BufferType.L1, p.layout, ShardSpec(p.grid, (sticks, c_core), orientation)))
    stick_bytes = c_core * conv_in.element_bytes
    halo = len(programs)
    configs, config_buffers = halo_configs(window, in_shard, conv_in, config_placement(attrs, p), 4, target, halo)
    programs.append(Program("UntilizeWithHaloProgramFactory", HALO_SOURCE, p.grid, (
        cbuf(0, "src", in_shard.shape[0], stick_bytes, p.grid, globally_allocated=True),
        cbuf(1, "out", sticks, stick_bytes, p.grid, globally_allocated=True),
        cbuf(2, "pad0", 1, stick_bytes, p.grid), cbuf(3, "pad1", 1, stick_bytes, p.grid), *configs)))
    if move_halo:
        buffers.append(tensor_buffer("halo_output", BufferRole.INTERMEDIATE, halo_out, target, (halo, halo)))
        buffers.extend(config_buffers)
        halo_pages = halo_out.shard_pages()
        programs.append(Program("MoveShardedProgramFactory", MOVE_SOURCE, p.grid, (
            cbuf(0, "src", halo_pages, stick_bytes, p.grid, globally_allocated=True),
            cbuf(1, "dst", halo_pages, stick_bytes, p.grid, globally_allocated=True))))
        moved = len(programs) - 1
        buffers.append(tensor_buffer("halo_output (moved)", BufferRole.INTERMEDIATE, halo_out, target,
                                     (moved, moved + 1)))
    else:
        buffers.append(tensor_buffer("halo_output", BufferRole.INTERMEDIATE, halo_out, target, (halo, halo + 1)))
        buffers.extend(config_buffers)
    return sticks, c_core


def plan_halo(kind: OpKind, req: OpRequest, attrs: Conv2dAttrs) -> OpPlan:
    """The halo alone (ttnn.halo): the conv's halo program for a row-major input already
    sharded on the conv's grid."""
    cfg = attrs.config
    require(cfg.shard_layout is not None, kind.value, "set Conv2dConfig.shard_layout")
    assert cfg.shard_layout is not None
    # the halo op runs whatever the conv after it would do (no `bypasses_halo` here)
    plan = plan_sliding_conv(kind.value, req, attrs, attrs.batch * attrs.input_hw[0] * attrs.input_hw[1],
                             move_halo=cfg.reallocate_halo_output)
    halo = next(i for i, prog in enumerate(plan.programs) if prog.name == "UntilizeWithHaloProgramFactory")
    halo_buf = next(b for b in plan.buffers if b.name == "halo_output")
    assert halo_buf.spec is not None
    out = DeviceBuffer("output0", BufferRole.OUTPUT, halo_buf.buffer_type, halo_buf.pages, halo_buf.page_bytes,
                       halo_buf.banks, halo_buf.alignment, (0, 0), halo_buf.spec)
    return OpPlan(kind.value, (plan.programs[halo],), (halo_buf.spec,), (out,))
