"""Embedding: ttnn.embedding's programs (ttnn/cpp/ttnn/operations/embedding/device/
embedding_device_operation.cpp `select_program_factory`; the factories beside it).

The device operation takes the weights ROW_MAJOR, so TILE weights are untilized first
(a program of their own). Then:
- TILE indices: embeddings_tilized_indices_program_factory.cpp, row-major output: the
  weight rows c_0 (two aligned rows) and the index face c_1 (16 x 32 B); a TILE output is
  tilized after (a program of its own).
- ROW_MAJOR indices, TILE output: embeddings_fused_program_factory.cpp: c_0 and the output
  c_2 of a row of tiles each (Wt, doubled up to 64 tiles), the index block c_1 (32
  indices).
- ROW_MAJOR indices, ROW_MAJOR output: embeddings_rm_program_factory.cpp is not modelled.
The output is [B, 1, S, D] for indices [B, S] (a preallocated output tensor, when given,
is the output instead).
Check (tt-mlir OpModel rows): indices [1, 1024] and weights [256, 128], both TILE: the
weights' untilize holds 4 + 4 tiles, the gather 1,024 B, the output's tilize 4 + 4 tiles:
the peak 16,384 B.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import MemoryConfig, TensorSpec
from tileplan.targets.tenstorrent.ops.base import (
    cbuf,
    BufferRole,
    DeviceBuffer,
    OpPlan,
    OpRequest,
    Program,
    padded_shape4,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_layout import tilize_program, untilize_program
from tileplan.targets.tenstorrent.tiles import TILE, DataType, Layout, round_up

SOURCE_DIR = "ttnn/cpp/ttnn/operations/embedding/device/"
#: `FACE_HEIGHT`: the tilized-indices factory reads a face column of indices
FACE_HEIGHT = 16
#: the fused factory's double-buffering limit (`max_double_buffer_tiles`)
MAX_DOUBLE_BUFFER_TILES = 64


@dataclass(frozen=True, slots=True)
class EmbeddingAttrs:
    """The output layout asked for (ttnn's `layout`) and a preallocated output tensor."""

    layout: Layout = Layout.TILE
    output: TensorSpec | None = None


def plan_embedding(kind: OpKind, req: OpRequest, attrs: EmbeddingAttrs | None = None) -> OpPlan:
    """ttnn.embedding (inputs: indices [B, S], weights [V, D])."""
    attrs = attrs or EmbeddingAttrs()
    idx, weights = req.inputs
    op = kind.value
    target = req.target
    require(len(idx.shape) == 2 and len(weights.shape) >= 2 and all(d == 1 for d in weights.shape[:-2]), op,
            "indices [B, S] and weights [V, D] (or [1, 1, V, D], as tt-transformers' rotary tables) expected")
    require(idx.dtype in (DataType.UINT32, DataType.BFLOAT16), op,
            f"indices are uint32 or bfloat16, found {idx.dtype.value}")
    b, s = idx.shape
    d = weights.shape[-1]
    programs: list[Program] = []
    buffers: list[DeviceBuffer] = []
    w_rm = weights
    if weights.layout is Layout.TILE:
        w_rm = TensorSpec(weights.shape, weights.dtype, Layout.ROW_MAJOR, weights.memory)
        programs.append(untilize_program(weights, weights.dtype, target))
        buffers.append(tensor_buffer("weights_row_major", BufferRole.INTERMEDIATE, w_rm, target, (0, 1)))
    out_dtype = req.out.dtype or weights.dtype
    memory = req.out.memory()
    final = attrs.output or TensorSpec((b, 1, s, d), out_dtype, attrs.layout, memory)
    cores = target.grid_range()
    w_row = d * weights.dtype.element_bytes
    if idx.layout is Layout.TILE:
        align = target.alignment(idx.memory.buffer_type)
        index_page = round_up(idx.dtype.element_bytes, 32)
        programs.append(Program("EmbeddingsTilizedIndicesProgramFactory",
                                SOURCE_DIR + "embeddings_tilized_indices_program_factory.cpp", cores, (
                                    cbuf(0, "weights", 2, round_up(w_row, align), cores),
                                    cbuf(1, "indices", 1, FACE_HEIGHT * index_page, cores))))
        gathered = TensorSpec((b, 1, s, d), out_dtype, Layout.ROW_MAJOR, memory)
        if final.layout is Layout.TILE:
            first = len(programs) - 1
            buffers.append(tensor_buffer("gathered", BufferRole.INTERMEDIATE, gathered, target, (first, first + 1)))
            programs.append(tilize_program(gathered, out_dtype, target))
    else:
        require(final.layout is Layout.TILE, op, "row-major indices to a row-major output is not modelled")
        wt = padded_shape4(TensorSpec((1, d), weights.dtype, Layout.TILE, MemoryConfig(weights.memory.buffer_type)))[3]
        tiles = wt // TILE
        buffering = 1 if tiles > MAX_DOUBLE_BUFFER_TILES else 2
        require(2 * tiles * weights.dtype.tile_bytes <= 1024 * 1024, op, "the chunked embedding is not modelled")
        programs.append(Program("EmbeddingsFusedProgramFactory", SOURCE_DIR + "embeddings_fused_program_factory.cpp",
                                cores, (
                                    cbuf(0, "weights", buffering * tiles, weights.dtype.tile_bytes, cores),
                                    cbuf(1, "indices", 1, TILE * idx.dtype.element_bytes, cores),
                                    cbuf(2, "output", buffering * tiles, out_dtype.tile_bytes, cores))))
    last = len(programs) - 1
    buffers.append(tensor_buffer("output0", BufferRole.OUTPUT, final, target, (last, last)))
    return OpPlan(op, tuple(programs), (final,), tuple(buffers))
