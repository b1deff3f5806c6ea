"""Data movement: ttnn.reshape, ttnn.transpose, ttnn.permute, ttnn.pad and ttnn.concat on
interleaved tensors (ttnn/cpp/ttnn/operations/data_movement/; read at tt-metal's 2025-26
versions, the factories' CBs unchanged since the November 2025 uplift tt-mlir pins).

- reshape (reshape_view/device/reshape_tiled_program_factory.cpp
  `ReshapeTiledProgramFactory::create`): a view when the last dimension stays and (TILE)
  both second-to-last dimensions are whole tiles: no program, no buffer. Otherwise, on a
  TILE tensor: c_0 one page of the host-computed mapping (`SegmentMapData` of 4 uint32
  per segment, `max_input_segments` per output page, raised by its remainder mod the L1
  alignment), c_1 one input tile, c_2 one output tile. The mapping itself is a DRAM
  tensor. Check (tt-mlir OpModel Reshape): {64, 1024} to {256, 256}: 64 segments, 1,024 B
  + 2 x 2,048 = 5,120 B.
- transpose (transpose/device/): dims normalised to 4-D; (H, W) runs
  transpose_wh_program_factory.cpp (TILE: c_0 and c_16 of 2 tiles; ROW_MAJOR: c_0 2 Wt,
  c_16 2 Ht, c_24 Ht x Wt, c_25 Ht tiles), (C, H) transpose_hc_tiled_interleaved (c_0 2
  tiles, a 16 x 16-element padding page when C is not whole tiles), (N, C)
  transpose_cn_program_factory.cpp (c_0 2 pages); any other pair is a permute, and so
  is (C, H) of an interleaved row-major tensor (transpose.cpp `transpose_`:
  `prim_permute(a, {0, 2, 1, 3})` when `interleaved_rm`).
- permute of a row-major tensor keeping its last dimension (permute/device/
  permute_rm_program_factory.cpp `MultiCoreRowInvariant::create`): the rows split over the
  grid (`split_work_to_cores`), c_0 of 2 pages of one row rounded up to the buffer's
  alignment (`detail::page_size`); other row-major permutes are not modelled.
- permute (permute/device/permute_tiled_program_factory.cpp, selected by
  `PermuteDeviceOperation::select_program_factory`): both tile dimensions kept (or
  swapped) `MultiCoreTileInvariant` c_0 2 tiles (+ c_16 2 when swapped); one kept
  `MultiCoreTileRowInvariant` c_0 2 tiles, a face-row padding page when the new height
  is not whole tiles, c_16 2 when swapped; both moved `MultiCoreTiledGeneric` c_0..c_2
  of 2 tiles each (+ read misalignment) and a face-row padding page when Y is not whole
  tiles.
- pad (pad/pad.cpp) of a TILE tensor (`invoke_tile`, no front padding):
  `fill_implicit_tile_padding` (fill_pad/fill_pad.cpp; a rank above 3 viewed as rank 3)
  writes the pad value into the tensor's own padding in place
  (fill_pad_device_operation.cpp `create_output_tensors` returns the input; its program
  `FillPadProgramFactory`: c_0 of 2 pages of a face row plus a uint16, element bytes x 16
  + 2; nothing runs when the input has no implicit padding); within the tile padding (the
  last two dimensions' padded sizes kept, no other dimension grown) a view relabels the
  logical shape: no buffer; otherwise the Pad device operation's
  `PadTileMulticoreProgramFactory` (tt-mlir passes `use_multicore = true`) writes a new
  buffer. A row-major pad: `PadRmReaderWriterMultiCoreV2` (`_pad_rm`). A block-float pad
  is refused.
- concat (concat/device/concat_program_factory.cpp `concat_multi_core`): c_0 of 2 output
  pages (a tile, or an aligned output row), 1 when 2 would pass half of L1.
Sharded inputs (their own factories) and row-major reshape / permute are not modelled:
the rules refuse them by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from tileplan.targets.tenstorrent.memory import CoreRangeSet, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    OpPlan,
    OpRequest,
    OpTarget,
    Program,
    cbuf,
    output_buffers,
    require,
    split_work,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import TILE, Layout, padded_height_width, round_up

SOURCE_DIR = "ttnn/cpp/ttnn/operations/data_movement/"
#: a tile's face edge (16 x 16 faces)
FACE = 16
#: bytes of one `SegmentMapData` (input page, input offset, output offset, elements)
SEGMENT_BYTES = 4 * 4


@dataclass(frozen=True, slots=True)
class ReshapeAttrs:
    """The new logical shape; `padded`: ttnn.reshape(x, shape, padded_shape) with the
    input's padded shape kept (a view that only relabels the logical size, as
    tt-transformers' decode marks the true batch of a 32-row tensor)."""

    shape: tuple[int, ...]
    padded: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class TransposeAttrs:
    dim0: int
    dim1: int


@dataclass(frozen=True, slots=True)
class PermuteAttrs:
    dims: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PadAttrs:
    """ttnn.pad: (before, after) per dimension, the pad value 0."""

    padding: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if any(a < 0 or b < 0 for a, b in self.padding):
            raise ValueError(f"pad amounts must be >= 0, found {self.padding}")


@dataclass(frozen=True, slots=True)
class ConcatAttrs:
    dim: int


def _interleaved(op: str, *specs: TensorSpec) -> None:
    for s in specs:
        require(not s.memory.layout.sharded, op, f"sharded inputs ({s.memory.text()}) are not modelled")


def _rank3(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """The reshape factory's rank-3 view: [product of the leading dims, H, W]."""
    dims = (1, 1, *shape)[-3:] if len(shape) < 3 else (math.prod(shape[:-2]), shape[-2], shape[-1])
    return dims[0], dims[1], dims[2]


def _face_offset(h: int, w: int) -> int:
    """`tensor_idxs_to_faced_tile_offset` for 32 x 32 tiles of 16 x 16 faces."""
    ih, iw = h % TILE, w % TILE
    return ((ih // FACE) * 2 + iw // FACE) * FACE * FACE + (ih % FACE) * FACE + iw % FACE


def _page_map_entries(co: int, ho0: int, wo0: int, src: tuple[int, int, int], dst: tuple[int, int, int]) -> int:
    """`reshape_map_output_page` flattened: (segments of the busiest input page) x (input
    pages) for the output tile at (co, ho0, wo0). Runs of elements contiguous in both
    tiles are walked whole; a run's first element joins the previous segment exactly when
    the C++ would (same input page, both offsets next to the previous element's)."""
    _, hi_n, wi_n = src
    _, ho_n, wo_n = dst
    wti = -(-wi_n // TILE)
    hti = -(-hi_n // TILE)
    counts: dict[int, int] = {}
    prev: tuple[int, int, int] | None = None
    for ho in range(ho0, ho0 + min(ho_n - ho0, TILE)):
        w, w_end = wo0, wo0 + min(wo_n - wo0, TILE)
        while w < w_end:
            flat = (co * ho_n + ho) * wo_n + w
            ci, rem = divmod(flat, hi_n * wi_n)
            hi, wi = divmod(rem, wi_n)
            n = min(w_end, (w // FACE + 1) * FACE) - w
            n = min(n, FACE - wi % FACE, wi_n - wi)
            page = ci * hti * wti + (hi // TILE) * wti + wi // TILE
            off_i, off_o = _face_offset(hi, wi), _face_offset(ho, w)
            if not (prev is not None and prev[0] == page and off_i == prev[1] + 1 and off_o == prev[2] + 1):
                counts[page] = counts.get(page, 0) + 1
            prev = (page, off_i + n - 1, off_o + n - 1)
            w += n
    return max(counts.values()) * len(counts)


@lru_cache(maxsize=256)
def reshape_mapping_page_bytes(src_shape: tuple[int, ...], dst_shape: tuple[int, ...], l1_alignment: int) -> int:
    """Bytes of one page of the tiled reshape's mapping tensor
    (`compute_reshape_mapping_host_tensor`): the most map entries any output page needs,
    plus that count mod the L1 alignment, times 16 B. Output pages whose first element
    sits at the same place of the input's tile rows map alike, so each such class is
    walked once. When the reshape keeps a last dimension of whole tiles (it only regroups
    rows: a prefill's [B x S, D] <-> [B, S, D] with S not whole tiles), every output
    element's input column is its own, so the output tiles of one tile row map alike up
    to a shift of the input page by the tile column: one class per tile row (the column
    taken as 0). A pure function of the shapes, computed once per shape pair (a layer's
    reshapes repeat in every layer and are asked again by each pass)."""
    src, dst = _rank3(src_shape), _rank3(dst_shape)
    _, hi_n, wi_n = src
    _, ho_n, wo_n = dst
    period = TILE * wi_n if hi_n % TILE == 0 else hi_n * wi_n
    rows_only = wi_n == wo_n and wo_n % TILE == 0
    seen: dict[tuple[int, int, int], int] = {}
    most = 0
    for co in range(dst[0]):
        for ho0 in range(0, ho_n, TILE):
            for wo0 in range(0, TILE if rows_only else wo_n, TILE):
                f0 = (co * ho_n + ho0) * wo_n + wo0
                key = (f0 % period, min(ho_n - ho0, TILE), min(wo_n - wo0, TILE))
                if key not in seen:
                    seen[key] = _page_map_entries(co, ho0, wo0, src, dst)
                most = max(most, seen[key])
    most += most % l1_alignment
    return most * SEGMENT_BYTES


def is_reshape_view(x: TensorSpec, shape: tuple[int, ...]) -> bool:
    """reshape_view.cpp: the same last dimension and, for TILE, whole-tile heights."""
    if not shape or not x.shape or x.shape[-1] != shape[-1]:
        return False
    if x.layout is Layout.ROW_MAJOR:
        return True
    h_in = x.shape[-2] if len(x.shape) > 1 else 1
    h_out = shape[-2] if len(shape) > 1 else 1
    return h_in % TILE == 0 and h_out % TILE == 0


def plan_reshape(kind: OpKind, req: OpRequest, attrs: ReshapeAttrs) -> OpPlan:
    """ttnn.reshape: a view, or `ReshapeTiledProgramFactory` (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    shape = attrs.shape
    if attrs.padded is not None:
        require(padded_height_width(attrs.padded, x.layout) == padded_height_width(x.shape, x.layout)
                and attrs.padded[-1] == round_up(x.shape[-1], TILE if x.layout is Layout.TILE else 1), op,
                f"padded shape {list(attrs.padded)} is not the padded shape of {list(x.shape)}")
        require(all(a <= b for a, b in zip(shape, attrs.padded)) and len(shape) == len(attrs.padded), op,
                f"logical shape {list(shape)} exceeds the padded shape {list(attrs.padded)}")
        out = TensorSpec(shape, x.dtype, x.layout, req.out.memory())
        require(out.memory == x.memory, op, "a view keeps its input's memory")
        return OpPlan(op, (), (out,), ())
    require(math.prod(shape) == math.prod(x.shape), op, f"{x.shape} and {shape} differ in volume")
    _interleaved(op, x)
    out = TensorSpec(shape, x.dtype, x.layout, req.out.memory())
    if is_reshape_view(x, shape):
        require(out.memory == x.memory, op, "a view keeps its input's memory (the copy after it is not modelled)")
        return OpPlan(op, (), (out,), ())
    require(x.layout is Layout.TILE, op, "a row-major reshape that is not a view is not modelled")
    grid = req.target.grid_range()
    mapping = reshape_mapping_page_bytes(x.shape, shape, req.target.l1_alignment)
    source = SOURCE_DIR + "reshape_view/device/reshape_tiled_program_factory.cpp"
    program = Program("ReshapeTiledProgramFactory", source,
                      grid, (cbuf(0, "mapping", 1, mapping, grid), cbuf(1, "input", 1, x.dtype.tile_bytes, grid),
                             cbuf(2, "output", 1, out.dtype.tile_bytes, grid)))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def _normalise(dim: int, rank: int, op: str) -> int:
    require(-rank <= dim < rank, op, f"dimension {dim} out of range for rank {rank}")
    return dim % rank


def _transpose_program(x: TensorSpec, pair: tuple[int, int], target: OpTarget) -> Program:
    grid = target.grid_range()
    dims4 = (1,) * (4 - len(x.shape)) + x.shape
    t = x.dtype.tile_bytes
    if pair == (2, 3):
        source = SOURCE_DIR + "transpose/device/transpose_wh_program_factory.cpp"
        if x.layout is Layout.TILE:
            return Program("TransposeWHProgramFactory", source, grid,
                           (cbuf(0, "src0", 2, t, grid), cbuf(16, "output", 2, t, grid)))
        ht, wt = -(-dims4[2] // TILE), -(-dims4[3] // TILE)
        return Program("TransposeWHProgramFactory", source, grid,
                       (cbuf(0, "src0", 2 * wt, t, grid), cbuf(16, "output", 2 * ht, t, grid),
                        cbuf(24, "tilized", ht * wt, t, grid), cbuf(25, "transposed", ht, t, grid)))
    if pair == (1, 2):
        require(x.layout is Layout.TILE, "ttnn.transpose", "a row-major (C, H) transpose is not modelled")
        cbs = [cbuf(0, "in0", 2, t, grid)]
        if dims4[1] % TILE:
            cbs.append(cbuf(1, "pad", 1, FACE * FACE * x.dtype.element_bytes, grid))
        return Program("TransposeHCTiledInterleavedProgramFactory",
                       SOURCE_DIR + "transpose/device/transpose_hc_tiled_interleaved_program_factory.cpp", grid,
                       tuple(cbs))
    page = t if x.layout is Layout.TILE else dims4[3] * x.dtype.element_bytes
    return Program("TransposeCNProgramFactory", SOURCE_DIR + "transpose/device/transpose_cn_program_factory.cpp", grid,
                   (cbuf(0, "in0", 2, page, grid),))


def plan_transpose(kind: OpKind, req: OpRequest, attrs: TransposeAttrs) -> OpPlan:
    """ttnn.transpose(dim0, dim1): the WH, HC or CN factory, or a permute."""
    (x,) = req.inputs
    op = kind.value
    rank = len(x.shape)
    a, b = sorted((_normalise(attrs.dim0, rank, op), _normalise(attrs.dim1, rank, op)))
    _interleaved(op, x)
    require(not req.out.sharded, op, "a sharded output is not modelled")
    shape = list(x.shape)
    shape[a], shape[b] = shape[b], shape[a]
    out = TensorSpec(tuple(shape), x.dtype, x.layout, req.out.memory())
    if a == b:
        return OpPlan(op, (), (out,), ())
    pair = (a + 4 - rank, b + 4 - rank)
    if pair == (1, 2) and x.layout is Layout.ROW_MAJOR and rank == 4:
        return plan_permute(OpKind.PERMUTE, req, PermuteAttrs((0, 2, 1, 3)))
    if rank > 4 or pair not in ((2, 3), (1, 2), (0, 1)):
        perm = list(range(rank))
        perm[a], perm[b] = perm[b], perm[a]
        return plan_permute(OpKind.PERMUTE, req, PermuteAttrs(tuple(perm)))
    return OpPlan(op, (_transpose_program(x, pair, req.target),), (out,), output_buffers((out,), req.target, 0))


def plan_permute(kind: OpKind, req: OpRequest, attrs: PermuteAttrs) -> OpPlan:
    """ttnn.permute on a TILE tensor: `select_program_factory`'s three tiled factories."""
    (x,) = req.inputs
    op = kind.value
    rank = len(x.shape)
    require(len(attrs.dims) == rank, op, f"{len(attrs.dims)} dims for a rank-{rank} tensor")
    dims = tuple(_normalise(d, rank, op) for d in attrs.dims)
    require(sorted(dims) == list(range(rank)), op, f"{attrs.dims} is not a permutation")
    _interleaved(op, x)
    out = TensorSpec(tuple(x.shape[d] for d in dims), x.dtype, x.layout, req.out.memory())
    if x.layout is Layout.ROW_MAJOR:
        require(dims[-1] == rank - 1, op, "a row-major permute that moves the last dimension is not modelled "
                "(permute_rm_program_factory.cpp MultiCoreBlockedGeneric)")
        rows = math.prod(x.shape[:-1])
        used, _ = split_work(rows, req.target.num_cores)
        cores = CoreRangeSet.from_count(max(used, 1), *req.target.grid)
        page = round_up(x.shape[-1] * x.dtype.element_bytes, req.target.alignment(x.memory.buffer_type))
        program = Program("PermuteDeviceOperation::MultiCoreRowInvariant",
                          SOURCE_DIR + "permute/device/permute_rm_program_factory.cpp", cores,
                          (cbuf(0, "src0", 2, page, cores),))
        return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
    grid = req.target.grid_range()
    t = x.dtype.tile_bytes
    face_row = FACE * x.dtype.element_bytes
    source = SOURCE_DIR + "permute/device/permute_tiled_program_factory.cpp"
    last, second = dims[-1], dims[-2] if rank > 1 else dims[-1]
    if rank < 2 or {last, second} == {rank - 1, rank - 2}:
        cbs = [cbuf(0, "src0", 2, t, grid)]
        if rank >= 2 and last == rank - 2:
            cbs.append(cbuf(16, "transposed", 2, t, grid))
        name = "MultiCoreTileInvariant"
    elif last in (rank - 1, rank - 2):
        cbs = [cbuf(0, "src0", 2, t, grid)]
        swap = last == rank - 2
        # the new height: x.shape[dims[-2]] (the factory's relabelling leaves an outer dim as is)
        if x.shape[second] % TILE:
            cbs.append(cbuf(1, "padding", 1, face_row, grid))
        if swap:
            cbs.append(cbuf(16, "transposed", 2, t, grid))
        name = "MultiCoreTileRowInvariant"
    else:
        read_alignment = req.target.alignment(x.memory.buffer_type)
        page = t + max(read_alignment - face_row, 0)
        cbs = [cbuf(0, "src0", 2, page, grid), cbuf(1, "src1", 2, page, grid), cbuf(2, "src2", 2, page, grid)]
        if x.shape[second] % TILE:
            cbs.append(cbuf(3, "padding", 1, face_row, grid))
        name = "MultiCoreTiledGeneric"
    program = Program(f"PermuteDeviceOperation::{name}", source, grid, tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))


def fill_pad_program(x: TensorSpec, req: OpRequest) -> Program:
    """fill_pad/device/fill_pad_program_factory.cpp `FillPadProgramFactory`: c_0 of 2
    pages of a face row plus a uint16 (element bytes x 16 + 2)."""
    grid = req.target.grid_range()
    page = x.dtype.element_bytes * FACE + 2
    return Program("FillPadProgramFactory", SOURCE_DIR + "fill_pad/device/fill_pad_program_factory.cpp", grid,
                   (cbuf(0, "src0", 2, page, grid),))


def _pad_rm(x: TensorSpec, attrs: PadAttrs, req: OpRequest, op: str) -> OpPlan:
    """pad/device/pad_rm_reader_writer_multi_core_v2 (`PadRmReaderWriterMultiCoreV2`,
    tt-mlir's `use_multicore = true`): on every core of the grid, c_0 of 16 x
    `get_num_stick_per_barrier` (ceil(2,048 / the input row's bytes)) output rows aligned
    to L1, c_1 one output row aligned to DRAM, c_2 the same when the last dimension is
    padded in front or the L1-aligned row is not DRAM-aligned. The output: row-major, the
    padded shape, a new buffer."""
    target = req.target
    shape = tuple(d + before + after for d, (before, after) in zip(x.shape, attrs.padding))
    out = TensorSpec(shape, x.dtype, Layout.ROW_MAJOR, req.out.memory())
    elem = x.dtype.element_bytes
    row = shape[-1] * elem
    l1_row = round_up(row, target.l1_alignment)
    dram_row = round_up(row, target.dram_alignment)
    per_barrier = -(-2048 // (x.shape[-1] * elem))
    grid = target.grid_range()
    cbs = [cbuf(0, "src0", 16 * per_barrier, l1_row, grid), cbuf(1, "dst", 1, dram_row, grid)]
    if attrs.padding[-1][0] != 0 or l1_row % target.dram_alignment != 0:
        cbs.append(cbuf(2, "pad_value", 1, dram_row, grid))
    program = Program("PadRmReaderWriterMultiCoreV2ProgramFactory",
                      SOURCE_DIR + "pad/device/pad_rm_reader_writer_multi_core_v2_program_factory.cpp", grid,
                      tuple(cbs))
    return OpPlan(op, (program,), (out,), output_buffers((out,), target, 0))


def plan_pad(kind: OpKind, req: OpRequest, attrs: PadAttrs) -> OpPlan:
    """ttnn.pad (pad/pad.cpp `ExecutePad::invoke`): a row-major tensor by
    `PadRmReaderWriterMultiCoreV2`; a TILE one (`invoke_tile`: no front padding) has its
    implicit padding filled in place, then either a view (the last two dimensions'
    padded sizes kept, no upper dimension grown) or `PadTileMulticoreProgramFactory`
    into a new buffer (pad/device/pad_tile_multicore_program_factory.cpp: c_0 and c_1 of
    2 output tiles, c_2 of 1, on every core of the grid)."""
    (x,) = req.inputs
    op = kind.value
    rank = len(x.shape)
    require(len(attrs.padding) == rank, op, f"{len(attrs.padding)} (before, after) pairs for a rank-{rank} tensor")
    _interleaved(op, x)
    require(not x.dtype.block_float, op, f"a {x.dtype.value} pad (fill_pad typecasts it to bfloat16 and back) is not "
            "modelled")
    if x.layout is Layout.ROW_MAJOR:
        return _pad_rm(x, attrs, req, op)
    require(all(before == 0 for before, _ in attrs.padding), op,
            "ttnn.pad: on device tile padding does not support front padding")
    shape = tuple(d + after for d, (_, after) in zip(x.shape, attrs.padding))
    filled = not all(x.shape[i] % TILE == 0 for i in range(max(rank - 2, 0), rank))
    within = shape[:-2] == x.shape[:-2] and all(
        round_up(shape[i], TILE) == round_up(x.shape[i], TILE) for i in range(max(rank - 2, 0), rank))
    if within:
        out = TensorSpec(shape, x.dtype, x.layout, req.out.memory())
        require(out.memory == x.memory, op, "the pad is in place: its output keeps its input's memory")
        if not filled:
            return OpPlan(op, (), (out,), ())
        return OpPlan(op, (fill_pad_program(x, req),), (out,), (), in_place=True)
    out = TensorSpec(shape, x.dtype, Layout.TILE, req.out.memory())
    grid = req.target.grid_range()
    tile = x.dtype.tile_bytes
    pad = Program("PadTileMulticoreProgramFactory", SOURCE_DIR + "pad/device/pad_tile_multicore_program_factory.cpp",
                  grid, (cbuf(0, "src0", 2, tile, grid), cbuf(1, "dst", 2, tile, grid),
                         cbuf(2, "pad_value", 1, tile, grid)))
    programs = (fill_pad_program(x, req), pad) if filled else (pad,)
    return OpPlan(op, programs, (out,), output_buffers((out,), req.target, len(programs) - 1))


def plan_concat(kind: OpKind, req: OpRequest, attrs: ConcatAttrs) -> OpPlan:
    """ttnn.concat of interleaved inputs in one layout: `concat_multi_core`."""
    op = kind.value
    first = req.inputs[0]
    rank = len(first.shape)
    dim = _normalise(attrs.dim, rank, op)
    _interleaved(op, *req.inputs)
    for s in req.inputs:
        require(len(s.shape) == rank and s.layout is first.layout and s.dtype is first.dtype, op,
                "inputs of one rank, layout and dtype expected")
        require(all(s.shape[i] == first.shape[i] for i in range(rank) if i != dim), op,
                f"{s.shape} and {first.shape} differ outside dimension {dim}")
    shape = list(first.shape)
    shape[dim] = sum(s.shape[dim] for s in req.inputs)
    out = TensorSpec(tuple(shape), first.dtype, first.layout, req.out.memory())
    if len(req.inputs) == 1:
        require(out.memory == first.memory, op, "a one-input concat to another memory is a clone (not modelled)")
        return OpPlan(op, (), (out,), ())
    target = req.target
    if first.layout is Layout.TILE:
        page = first.dtype.tile_bytes
    else:
        align = max([target.alignment(s.memory.buffer_type) for s in req.inputs]
                    + [target.alignment(out.memory.buffer_type)])
        page = round_up(shape[-1] * first.dtype.element_bytes, align)
    budget = target.l1_size // 2 - target.l1_unreserved_base
    grid = target.grid_range()
    program = Program("ConcatProgramFactory", SOURCE_DIR + "concat/device/concat_program_factory.cpp", grid,
                      (cbuf(0, "src0", 2 if 2 * page <= budget else 1, page, grid),))
    return OpPlan(op, (program,), (out,), output_buffers((out,), target, 0))
