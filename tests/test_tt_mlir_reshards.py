"""tt-mlir's operand reshard candidates at optimization level 2 (frontends/tt_mlir/
legal.py `reshard_layouts`, layouts.py `Propagation.input_candidates`), against
tenstorrent/tt-mlir lib/Dialect/TTNN/Analysis/MemoryLayoutPropagation.cpp at 50084c6569
(#7856) and aa1165f7c6 (#7987), and the builds that take them (devices/software.toml
`reshard_candidates`)."""

from __future__ import annotations

from functools import lru_cache

from tileplan.importers.graph import GraphBuilder
from tileplan.model.precision import Precision
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import GraphBuilder as TtnnBuilder
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.frontends.tt_mlir.layouts import input_filter, traces_to_constants
from tileplan.targets.tenstorrent.frontends.tt_mlir.legal import reshard_layouts, sharded_layout_pool
from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED,
    L1_INTERLEAVED,
    BufferType,
    CoreRange,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import ReshardRule

H, W, B = MemoryLayout.HEIGHT_SHARDED, MemoryLayout.WIDTH_SHARDED, MemoryLayout.BLOCK_SHARDED
FALCON_MLP = Value((576, 23040), DataType.BFLOAT16)  # Falcon3-7B's MLP activation, 18 x 720 tiles


def _reshards(rule: ReshardRule, base: MemoryConfig = L1_INTERLEAVED, explore: bool = True) -> list[tuple]:
    dev = load_device("n150", version="2026-04")
    pool = sharded_layout_pool(FALCON_MLP, op_target(dev), dev.software)
    got = reshard_layouts(pool, [DRAM_INTERLEAVED, base], explore, {base}, 18 * 720, rule)
    by_memory = {x.memory: x for x in pool}
    return [(by_memory[m].layout, by_memory[m].grid) for m in got]


def test_from_april_17_the_four_largest_grids_of_each_sharding_type():
    """#7987 `generateReshardCandidates`: the tensor's legal sharded layouts bucketed by
    sharding type, the 4 largest grids of each kept, then all sorted by grid volume
    (n150, April 2026: heights of 18, 9, 6, 5 cores; widths of 60, 56, 52, 48; blocks
    6 x 8, 6 x 7, 5 x 8 and 6 x 6: ceil(18 / 5) = 4 rows of tiles is a shard 6 x 8 does
    not give)."""
    assert _reshards(ReshardRule.PER_TYPE_4) == [
        (W, (1, 60)), (W, (1, 56)), (W, (1, 52)), (W, (1, 48)), (B, (6, 8)), (B, (6, 7)), (B, (5, 8)),
        (B, (6, 6)), (H, (18, 1)), (H, (9, 1)), (H, (6, 1)), (H, (5, 1))]


def test_before_april_17_the_eight_largest_grids_of_any_type():
    """#7856: one cap of 8 over all sharding types, the largest grids first (the same
    eight as the operation's legal layouts with a cap of 8)."""
    assert _reshards(ReshardRule.GLOBAL_8) == [
        (W, (1, 60)), (W, (1, 56)), (W, (1, 52)), (B, (6, 8)), (W, (1, 48)), (W, (1, 45)), (W, (1, 43)),
        (B, (6, 7))]


def test_an_interleaved_operand_explores_only_when_asked_and_a_sharded_one_always():
    """An interleaved base gives reshards only with interleaved-to-sharded exploration (no
    candidate of the operand is sharded); a sharded base always, itself excluded."""
    assert _reshards(ReshardRule.PER_TYPE_4, explore=False) == []
    dev = load_device("n150", version="2026-04")
    w60 = next(x.memory for x in sharded_layout_pool(FALCON_MLP, op_target(dev), dev.software) if x.grid == (1, 60))
    got = _reshards(ReshardRule.PER_TYPE_4, w60, explore=False)
    assert (W, (1, 60)) not in got and got[:2] == [(W, (1, 56)), (W, (1, 52))] and len(got) == 12


def test_the_input_filters_of_the_rule_books():
    """OpRules: slice and concatenate-heads take no sharded input, reshape and permute no
    width-sharded one, rotary embedding no sharding but height (interleaved kept:
    LayoutFilterUtils.h `allowOnlyShardingType`); from #7987 a matmul's right
    operand is never sharded (MatmulRules.cpp), its left one anything."""
    block = MemoryConfig(BufferType.L1, B, ShardSpec(CoreRange.grid(8, 8), (32, 32)))
    width = MemoryConfig(BufferType.L1, W, ShardSpec(CoreRange.grid(8, 8), (32, 32)))
    height = MemoryConfig(BufferType.L1, H, ShardSpec(CoreRange.grid(8, 8), (32, 32)))
    slice_ = input_filter(OpKind.SLICE, 0, ReshardRule.PER_TYPE_4)
    assert slice_ is not None and not slice_(block) and slice_(L1_INTERLEAVED)
    reshape = input_filter(OpKind.RESHAPE, 0, ReshardRule.PER_TYPE_4)
    assert reshape is not None and reshape(block) and not reshape(width)
    rotary = input_filter(OpKind.ROTARY_EMBEDDING_LLAMA, 0, ReshardRule.PER_TYPE_4)
    assert rotary is not None and rotary(height) and not rotary(block) and rotary(L1_INTERLEAVED)
    rhs = input_filter(OpKind.MATMUL, 1, ReshardRule.PER_TYPE_4)
    assert rhs is not None and not rhs(width) and rhs(DRAM_INTERLEAVED)
    assert input_filter(OpKind.MATMUL, 1, ReshardRule.GLOBAL_8) is None
    assert input_filter(OpKind.MATMUL, 0, ReshardRule.PER_TYPE_4) is None


def test_only_what_traces_to_the_models_constants_is_constant():
    """`valueTracesToConstantArgs`: a value whose use-def chain reaches function arguments,
    all of them parameters or constants; a model input on the chain makes it not
    constant."""
    b = TtnnBuilder("t")
    spec = TensorSpec((32, 32), DataType.BFLOAT16, Layout.TILE, DRAM_INTERLEAVED)
    x = b.upload("x", Role.INPUT, spec)
    w = b.upload("w", Role.WEIGHT, spec)
    v = Value((32, 32), DataType.BFLOAT16)
    neg_w = b.one(OpKind.NEG, "neg_w", (w,), v)
    mixed = b.one(OpKind.ADD, "add", (x, neg_w), v)
    constant = traces_to_constants(b.finish((mixed,)))
    assert constant[w] and constant[neg_w] and not constant[x] and not constant[mixed]


@lru_cache(maxsize=None)
def _slice_neg():
    b = GraphBuilder("slice-neg")
    x = b.input("x", (1, 256, 2048), "float")
    half = b.op("slice", [x], {"axis": 2, "start": 0, "end": 1024, "step": 1}, name="half")
    b.output(b.op("neg", [half], name="neg"))
    bf16 = Precision("BF16")
    return b.build().to_program(bf16, bf16, repeat=False)


def _ops(version: str):
    return [(op.kind, op.out) for op in lower(_slice_neg(), TtMlirOptions.of(2), load_device(
        "n150", version=version)).ops]


def test_an_operation_reads_its_interleaved_operand_resharded_from_april_2026():
    """A slice writes L1 interleaved (its rule book's non-sharded hints); ttnn.neg cannot
    turn an interleaved input into a sharded output, so before the greedy optimizer's
    reshards (a 2026-03-20 build) it stays interleaved, and from #7889 (the 2026-04-21
    build) tt-mlir moves its operand to a sharded layout first (the block 8 x 8 of the
    [256, 1024] slice, 1 x 4 tiles a core: the most cores) and shards its output."""
    before = _ops("2026-03-20")
    assert [k for k, _ in before] == [OpKind.TO_LAYOUT, OpKind.SLICE, OpKind.NEG, OpKind.TO_MEMORY_CONFIG]
    assert (before[2][1].buffer_type, before[2][1].layout) == (BufferType.L1, MemoryLayout.INTERLEAVED)
    after = _ops("2026-04-21")
    assert [k for k, _ in after] == [OpKind.TO_LAYOUT, OpKind.SLICE, OpKind.TO_MEMORY_CONFIG, OpKind.NEG,
                                     OpKind.TO_MEMORY_CONFIG]
    moved, neg = after[2][1], after[3][1]
    assert moved.layout is B and moved.shard is not None and moved.shard.num_cores == 64
    assert moved.shard.shape == (32, 128) and neg.layout is B


def test_a_typecast_or_where_takes_the_null_hint_only_and_pad_no_sharded_one():
    """OpRules: TypecastRuleBook (also WhereOp's) gives the null hint only, so the output
    follows the input; PadRuleBook the non-sharded legal layouts (OpRuleBook.cpp
    `getRuleBook`, TypecastRules.cpp, DataMovementRules.cpp)."""
    from tileplan.targets.tenstorrent.frontends.tt_mlir.layouts import Propagation
    from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Node

    dev = load_device("n150", version="2026-04-21")
    b = TtnnBuilder("t")
    x = b.upload("x", Role.INPUT, TensorSpec((256, 1024), DataType.BFLOAT16, Layout.TILE, DRAM_INTERLEAVED))
    v = Value((256, 1024), DataType.FLOAT32)
    cast = b.one(OpKind.TYPECAST, "cast", (x,), v)
    state = Propagation(b.finish((cast,)), TtMlirOptions.of(2), dev)
    spec = TensorSpec((256, 1024), DataType.BFLOAT16, Layout.TILE, L1_INTERLEAVED)
    hints = list(state.output_hints(Node(OpKind.TYPECAST, "cast", (x,), (cast,)), (spec,)))
    assert [(h.buffer_type, h.layout) for h in hints] == [(BufferType.L1, MemoryLayout.INTERLEAVED)]
    pads = list(state.output_hints(Node(OpKind.PAD, "pad", (x,), (cast,)), (spec,)))
    assert pads and all(not h.sharded for h in pads)


def test_a_reshard_that_changes_nothing_tt_mlir_compares_is_not_emitted():
    """MemoryLayoutPropagation.cpp `insertReshardOp` (#7454 to HEAD): same buffer type and
    memory layout and, both sharded, the same grid shape: no `ttnn.to_memory_config`, even
    when the shard shapes differ (a matmul output sharded by its program config); another
    grid, buffer type or layout is a reshard."""
    from tileplan.targets.tenstorrent.frontends.tt_mlir.layouts import is_no_op_reshard

    def block(x: int, y: int, shape: tuple[int, int]) -> MemoryConfig:
        return MemoryConfig(BufferType.L1, B, ShardSpec(CoreRange((0, 0), (x - 1, y - 1)), shape))

    assert is_no_op_reshard(block(8, 8, (64, 128)), block(8, 8, (32, 128)))
    assert not is_no_op_reshard(block(8, 8, (64, 128)), block(8, 4, (64, 256)))
    height = MemoryConfig(BufferType.L1, H, ShardSpec(CoreRange((0, 0), (7, 7)), (32, 1024)))
    assert not is_no_op_reshard(block(8, 8, (32, 128)), height)
    assert not is_no_op_reshard(height, L1_INTERLEAVED)
    assert is_no_op_reshard(DRAM_INTERLEAVED, DRAM_INTERLEAVED)
    assert not is_no_op_reshard(L1_INTERLEAVED, DRAM_INTERLEAVED)
