"""The head shuffles of tt-transformers' attention (tt-metal models/tt_transformers/tt/
attention.py), beside split_qkv / nlp_concat_heads (tt_transformer):

- nlp_create_qkv_heads (prefill; ttnn/cpp/ttnn/operations/experimental/transformer/
  nlp_create_qkv_heads/device/nlp_create_qkv_heads_program_factory.cpp
  `Interleaved::create`): a fused [B, 1, S, (q + 2 kv) x D] input split into Q [B, q, S, D],
  K and V [B, kv, S, D] (K [B, kv, D, S] when transposed); c_1 of 4 tiles, a transposed K
  adds c_0 and c_16 of 4 tiles each.
- nlp_create_qkv_heads_decode (nlp_create_qkv_heads_decode/device/
  nlp_create_qkv_heads_decode_device_operation.cpp `create_output_tensors`,
  nlp_create_qkv_heads_decode_interleaved_program_factory.cpp): a [1, 1, B, (q + 2 kv) x D]
  input (L1 interleaved in tt-transformers) to Q [1, B, q, D] and K, V [1, B, kv, D],
  HEIGHT_SHARDED one user per core on the first B cores (row-wise), each shard
  (32 ceil(q / 32), D) (K and V take Q's padded head count too: the factory pads them with
  num_q_heads); every CB is bound to an output, none takes space.
- nlp_concat_heads_decode (nlp_concat_heads_decode/device/
  nlp_concat_heads_decode_device_operation.cpp `compute_output_specs`,
  nlp_concat_heads_decode_program_factory.cpp): a [1, B, 32, D] input height-sharded one
  user per core to [1, 1, max(B, 32), heads x D] WIDTH_SHARDED on `heads` cores (row-wise),
  shards (max(B, 32), D); its one CB (c_16) is bound to the output.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import (
    BufferType,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import (
    OpPlan,
    OpRequest,
    Program,
    cbuf,
    ceil_div,
    output_buffers,
    padded_shape4,
    require,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_transformer import CREATE_QKV_SOURCE, QKV_CB_TILES
from tileplan.targets.tenstorrent.tiles import TILE, Layout

DIR = "ttnn/cpp/ttnn/operations/experimental/transformer/"
#: nlp_create_qkv_heads_decode validates "Support maximum 32 heads for now" and 32 users
MAX_DECODE_HEADS = 32
MAX_DECODE_USERS = 32


@dataclass(frozen=True, slots=True)
class CreateHeadsAttrs:
    """num_heads, num_kv_heads and (prefill) transpose_k_heads."""

    num_heads: int
    num_kv_heads: int
    transpose_k: bool = False

    def __post_init__(self) -> None:
        require(self.num_heads >= 1 and self.num_kv_heads >= 1, "nlp_create_qkv_heads", "head counts are >= 1")


@dataclass(frozen=True, slots=True)
class ConcatHeadsDecodeAttrs:
    num_heads: int


def plan_create_heads(kind: OpKind, req: OpRequest, attrs: CreateHeadsAttrs) -> OpPlan:
    """nlp_create_qkv_heads on an interleaved fused input, or Q from the first input and
    K, V from a second (`input_tensor_kv`: the factory's READ_FROM_INPUT_TENSOR_KV, the
    same circular buffers; see the module docstring)."""
    x = req.inputs[0]
    op = kind.value
    require(len(req.inputs) in (1, 2), op, "one fused input, or Q's input and a KV input")
    for t in req.inputs:
        require(len(t.shape) == 4 and t.layout is Layout.TILE and not t.memory.layout.sharded, op,
                "the input is an interleaved [B, 1, S, hidden] TILE tensor")
    b, one, s, hidden = x.shape
    require(one == 1, op, f"the input's second dimension is 1, found {one}")
    if len(req.inputs) == 2:
        kv = req.inputs[1]
        require(hidden % attrs.num_heads == 0, op, f"hidden {hidden} is not {attrs.num_heads} heads of a whole size")
        d = hidden // attrs.num_heads
        require(kv.shape[:3] == x.shape[:3] and kv.shape[3] == 2 * attrs.num_kv_heads * d, op,
                f"the KV input {list(kv.shape)} is {2 * attrs.num_kv_heads} heads of {d} beside Q's rows")
    else:
        heads = attrs.num_heads + 2 * attrs.num_kv_heads
        require(hidden % heads == 0, op, f"hidden {hidden} is not {heads} heads of a whole size")
        d = hidden // heads
    require(d % TILE == 0, op, f"the head size {d} must be a multiple of 32")
    memory = req.out.memory()
    q = TensorSpec((b, attrs.num_heads, s, d), x.dtype, Layout.TILE, memory)
    k_shape = (b, attrs.num_kv_heads, d, s) if attrs.transpose_k else (b, attrs.num_kv_heads, s, d)
    k = TensorSpec(k_shape, x.dtype, Layout.TILE, memory)
    v = TensorSpec((b, attrs.num_kv_heads, s, d), x.dtype, Layout.TILE, memory)
    cores = req.target.grid_range()
    cbs = [cbuf(1, "src1", QKV_CB_TILES, x.dtype.tile_bytes, cores)]
    if attrs.transpose_k:
        cbs += [cbuf(0, "src0", QKV_CB_TILES, x.dtype.tile_bytes, cores),
                cbuf(16, "out", QKV_CB_TILES, x.dtype.tile_bytes, cores)]
    program = Program("NlpCreateHeadsDeviceOperation::Interleaved", CREATE_QKV_SOURCE, cores, tuple(cbs))
    return OpPlan(op, (program,), (q, k, v), output_buffers((q, k, v), req.target, 0))


def plan_create_heads_decode(kind: OpKind, req: OpRequest, attrs: CreateHeadsAttrs) -> OpPlan:
    """nlp_create_qkv_heads_decode on an interleaved [1, 1, B, hidden] input: one user a
    core, row-wise on the device's grid, or inside the grid the output config's shard spec
    names (`num_cores_to_corerangeset_in_subcoregrids(start, batch, output_core_grid)`:
    tt-transformers' CREATE_QKV_DECODE_SHARD on Blackhole, 8 x 4 from (0, 0))."""
    (x,) = req.inputs
    op = kind.value
    require(len(x.shape) == 4 and x.shape[0] == 1 and x.shape[1] == 1 and x.layout is Layout.TILE, op,
            "the input is [1, 1, users, hidden] TILE")
    require(not x.memory.layout.sharded, op, "a width-sharded input (the sharded factory) is not modelled")
    users = x.shape[2]
    require(users <= MAX_DECODE_USERS, op, f"at most {MAX_DECODE_USERS} users, found {users}")
    require(attrs.num_heads <= MAX_DECODE_HEADS, op, f"at most {MAX_DECODE_HEADS} heads, found {attrs.num_heads}")
    require(attrs.num_heads >= attrs.num_kv_heads, op, "no more KV heads than Q heads")
    heads = attrs.num_heads + 2 * attrs.num_kv_heads
    require(x.shape[3] % heads == 0, op, f"hidden {x.shape[3]} is not {heads} heads of a whole size")
    d = x.shape[3] // heads
    grid = req.target.grid
    if req.out.shard is not None:  # a requested grid: the users' cores inside it, row-wise
        box = req.out.shard.bounding_box()
        grid = (box.end[0] + 1, box.end[1] + 1)
    require(grid[0] * grid[1] >= users, op, f"{users} users need as many cores")
    padded_q = ceil_div(attrs.num_heads, TILE) * TILE
    cores = CoreRangeSet.from_count(users, *grid, row_wise=True)
    memory = MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED, ShardSpec(cores, (padded_q, d)))
    q = TensorSpec((1, users, attrs.num_heads, d), x.dtype, Layout.TILE, memory)
    k = TensorSpec((1, users, attrs.num_kv_heads, d), x.dtype, Layout.TILE, memory)
    v = TensorSpec((1, users, attrs.num_kv_heads, d), x.dtype, Layout.TILE, memory)
    tiles = padded_q * d // (TILE * TILE)
    cbs = (cbuf(0, "q_out", tiles, x.dtype.tile_bytes, cores, globally_allocated=True),
           cbuf(1, "k_out", tiles, x.dtype.tile_bytes, cores, globally_allocated=True),
           cbuf(2, "v_out", tiles, x.dtype.tile_bytes, cores, globally_allocated=True))
    program = Program("NLPCreateQKVHeadsDecodeInterleavedProgramFactory",
                      DIR + "nlp_create_qkv_heads_decode/device/"
                      "nlp_create_qkv_heads_decode_interleaved_program_factory.cpp",
                      cores, cbs)
    return OpPlan(op, (program,), (q, k, v), output_buffers((q, k, v), req.target, 0))


def plan_concat_heads_decode(kind: OpKind, req: OpRequest, attrs: ConcatHeadsDecodeAttrs) -> OpPlan:
    """nlp_concat_heads_decode (see the module docstring)."""
    (x,) = req.inputs
    op = kind.value
    dims = padded_shape4(x)
    require(x.memory.layout is MemoryLayout.HEIGHT_SHARDED and x.memory.shard is not None, op,
            "the input is height-sharded, one user per core")
    require(dims[0] == 1 and dims[1] <= MAX_DECODE_USERS and dims[2] == TILE, op,
            "the input is [1, users <= 32, 32 padded heads, head_dim]")
    require(attrs.num_heads <= dims[2], op, f"{attrs.num_heads} heads in {dims[2]} padded rows")
    batch = max(dims[1], TILE)
    d = dims[3]
    grid = req.target.grid
    cores = CoreRangeSet.from_count(attrs.num_heads, *grid, row_wise=True)
    memory = MemoryConfig(BufferType.L1, MemoryLayout.WIDTH_SHARDED, ShardSpec(cores, (batch, d)))
    out = TensorSpec((1, 1, batch, attrs.num_heads * d), x.dtype, Layout.TILE, memory)
    program = Program("NLPConcatHeadsDecodeProgramFactory",
                      DIR + "nlp_concat_heads_decode/device/nlp_concat_heads_decode_program_factory.cpp", cores,
                      (cbuf(16, "q_output", batch * d // (TILE * TILE), x.dtype.tile_bytes, cores,
                            globally_allocated=True),))
    return OpPlan(op, (program,), (out,), output_buffers((out,), req.target, 0))
