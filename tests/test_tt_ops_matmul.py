"""Matmul rules (tileplan.targets.tenstorrent.ops.tt_matmul*) against the ground truth of
TENSTORRENT-NOTES.md (h), and properties of tt-metal's automatic program configs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tt_ops_support import DRAM, E150, L1, MLIR, N300, P150, footprint, sharded, tile

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.memory import (
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import BufferRole, OpRequest, OpTarget, OutputRequest, find_max_divisor
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_matmul import MATMUL_DEFAULT_COMPUTE, MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul_auto import generate_config
from tileplan.targets.tenstorrent.ops.tt_matmul_config import (
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
    MatmulShapes,
    estimated_cb_bytes,
    interm_tile_bytes,
    matmul_subblock,
)
from tileplan.targets.tenstorrent.tiles import DataType

#: H1's matmul configs (test_graph_query_op_constraints.cpp @027519b)
H1_1D = MatmulMultiCoreReuseMultiCast1DProgramConfig((8, 4), 2, 1, 1, 64, 2, True, True, 64, 2)
H1_2D = MatmulMultiCoreReuseMultiCastProgramConfig((8, 8), 1, 1, 4, 10, 4, 1, 4)
H1_A9 = tile((1, 1, 1024, 64), sharded(MemoryLayout.HEIGHT_SHARDED, CoreRange((0, 0), (7, 3)), (32, 64)))
H1_B10 = tile((1, 1, 64, 2048), sharded(MemoryLayout.WIDTH_SHARDED, CoreRange((0, 0), (7, 3)), (64, 64)))
H1_A11 = tile((1, 1, 1600, 256), sharded(MemoryLayout.BLOCK_SHARDED, CoreRange((0, 0), (7, 4)), (320, 32)))
#: H2's sharded layouts (TestOpModelLib.cpp @78b9ce3, virtual grids 7x8, 1x56, 56x1)
BS78 = sharded(MemoryLayout.BLOCK_SHARDED, CoreRange((0, 0), (7, 6)), (256, 224))
WS56 = sharded(MemoryLayout.WIDTH_SHARDED, CoreRangeSet.from_count(56, 8, 8), (32, 32))
HS56_IN = sharded(MemoryLayout.HEIGHT_SHARDED, CoreRangeSet.from_count(56, 8, 8), (32, 32))
HS56_OUT = sharded(MemoryLayout.HEIGHT_SHARDED, CoreRangeSet.from_count(56, 8, 8), (32, 1792))


def _matmul(a: TensorSpec, b: TensorSpec, out: MemoryConfig, target: OpTarget,
            attrs: MatmulAttrs | None = None) -> tuple[int, int]:
    return footprint(plan_op(OpKind.MATMUL, OpRequest((a, b), OutputRequest.of(out), target), attrs))


@pytest.mark.parametrize(("source", "a", "b", "attrs", "target", "expected"), [
    ("H1 #9 default HS a N300", H1_A9, tile((1, 1, 64, 128)), None, N300, (24_576, 6_144)),
    ("H1 #9 default HS a E150", H1_A9, tile((1, 1, 64, 128)), None, E150, (24_576, 2_048)),
    ("H1 #10 1-D mcast_in0 N300", tile((1, 1, 2048, 64)), H1_B10, MatmulAttrs(H1_1D), N300, (524_288, 151_552)),
    ("H1 #10 1-D mcast_in0 E150", tile((1, 1, 2048, 64)), H1_B10, MatmulAttrs(H1_1D), E150, (524_288, 65_536)),
    ("H1 #11 2-D block sharded N300", H1_A11, tile((1, 1, 256, 1024)), MatmulAttrs(H1_2D), N300, (28_736, 59_392)),
    ("H1 #11 2-D block sharded E150", H1_A11, tile((1, 1, 256, 1024)), MatmulAttrs(H1_2D), E150, (28_736, 26_624)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_h1_matmul(source: str, a: TensorSpec, b: TensorSpec, attrs: MatmulAttrs | None, target: OpTarget,
                   expected: tuple[int, int]) -> None:
    """H1 MatmulOpIfTest: output bf16 TILE L1 interleaved."""
    assert _matmul(a, b, L1, target, attrs) == expected


@pytest.mark.parametrize(("a_mem", "b_mem", "out", "expected"), [
    (DRAM, DRAM, DRAM, (655_360, 0)), (DRAM, DRAM, L1, (786_432, 131_072)), (DRAM, L1, DRAM, (786_432, 0)),
    (L1, DRAM, DRAM, (786_432, 0)), (L1, L1, L1, (786_432, 131_072)),
], ids=["H2 MatMul DRAM,DRAM->DRAM", "H2 DRAM,DRAM->L1", "H2 DRAM,L1->DRAM", "H2 L1,DRAM->DRAM", "H2 L1,L1->L1"])
def test_h2_matmul_interleaved(a_mem: MemoryConfig, b_mem: MemoryConfig, out: MemoryConfig,
                               expected: tuple[int, int]) -> None:
    """H2 matmul 2048^3 on 8x8: all DRAM takes the 2-D config over the whole grid
    (per_core 8x8, fit-searched in0_block_w); anything in L1 the 4x4-block one."""
    assert _matmul(tile((2048, 2048), a_mem), tile((2048, 2048), b_mem), out, MLIR) == expected


@pytest.mark.parametrize(("a", "b", "out", "expected"), [
    (tile((1792, 1792), BS78), tile((1792, 1792), DRAM), BS78, (430_144, 114_688)),
    (tile((1792, 1792), DRAM), tile((1792, 1792), DRAM), BS78, (262_144, 401_408)),
    (tile((1792, 1792), BS78), tile((1792, 1792), DRAM), DRAM, (544_832, 0)),
    (tile((32, 1792), WS56), tile((1792, 1792), DRAM), WS56, (8_256, 2_048)),
    (tile((1792, 32), HS56_IN), tile((32, 1792), DRAM), HS56_OUT, (114_688, 114_688)),
], ids=["H2 BS7x8*DRAM->BS7x8", "H2 DRAM*DRAM->BS7x8 (shards to less cores)", "H2 BS7x8*DRAM->DRAM",
        "H2 WS1x56*DRAM->WS", "H2 HS56x1*DRAM->HS"])
def test_h2_matmul_sharded(a: TensorSpec, b: TensorSpec, out: MemoryConfig, expected: tuple[int, int]) -> None:
    """H2 MatmulSharded rows: the output shard is the program's own (per_core_M x
    per_core_N over its block grid), not the one requested."""
    assert _matmul(a, b, out, MLIR) == expected


def test_h3_matmul_on_blackhole() -> None:
    """H3 p150b: 1024^3 bf16, DRAM in, L1 out: CBs 131,072 + 131,072 + 524,288 on a 2x2
    grid; output 1,024 tiles over 110 banks = 10 tiles = 20,480 B a bank."""
    plan = plan_op(OpKind.MATMUL, OpRequest((tile((1024, 1024), DRAM), tile((1024, 1024), DRAM)),
                                            OutputRequest.of(L1), P150))
    assert footprint(plan) == (786_432, 20_480)
    (program,) = plan.programs
    assert [cb.total_bytes for cb in program.circular_buffers] == [131_072, 131_072, 524_288]
    assert program.circular_buffers[0].core_ranges == (CoreRange((0, 0), (1, 1)),)


def test_the_fit_search_reads_the_occupied_l1() -> None:
    """`get_max_l1_space`: with L1 occupied from 600,000 the 16x16 block no longer fits
    (1,310,720 B estimate), the auto config falls to 8x8 blocks."""
    s = MatmulShapes.of(tile((2048, 2048)), tile((2048, 2048)))
    free = generate_config(s, OutputRequest.of(L1), MLIR, MATMUL_DEFAULT_COMPUTE, DataType.BFLOAT16)
    occupied = OpTarget(MLIR.arch, MLIR.grid, 64, 12, MLIR.l1_size, MLIR.l1_unreserved_base,
                        lowest_occupied_l1=600_000)
    tight = generate_config(s, OutputRequest.of(L1), occupied, MATMUL_DEFAULT_COMPUTE, DataType.BFLOAT16)
    assert isinstance(free, MatmulMultiCoreReuseMultiCastProgramConfig)
    assert isinstance(tight, MatmulMultiCoreReuseMultiCastProgramConfig)
    assert (free.per_core_M, free.per_core_N) == (16, 16)
    assert (tight.per_core_M, tight.per_core_N) == (8, 8)


def test_dram_sharded_config_is_a_value() -> None:
    """tt-transformers' DRAM-sharded decode matmul: a width-sharded activation, the
    weights in DRAM; in0 double-buffered, in1 triple-buffered blocks."""
    a = tile((32, 2048), sharded(MemoryLayout.WIDTH_SHARDED, CoreRange((0, 0), (7, 3)), (32, 64)))
    cfg = MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(in0_block_w=2, per_core_M=1, per_core_N=4)
    plan = plan_op(OpKind.MATMUL, OpRequest((a, tile((2048, 1536), DRAM)), OutputRequest.of(L1), MLIR),
                   MatmulAttrs(cfg))
    names = {cb.name: cb.total_bytes for cb in plan.programs[0].circular_buffers}
    assert names["in0"] == 1 * 2 * 2 * 2048 and names["in1"] == 4 * 2 * 3 * 2048


def test_matmul_refuses_mismatched_k() -> None:
    with pytest.raises(InputError, match="k dimension"):
        _matmul(tile((64, 64)), tile((96, 64)), L1, MLIR)


def test_a_sharded_output_must_be_the_one_the_config_writes() -> None:
    """matmul_op.cpp Matmul::validate: a 1-D config multicasting in0 writes a width-sharded
    output with all of M on each core, a 2-D config a block-sharded one; a block-sharded
    output asked of a 1-D config is refused (tt-mlir's op model finds it invalid)."""
    from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout

    a, b = tile((1, 1, 32, 256), L1), tile((1, 1, 256, 512), DRAM)
    one_d = MatmulMultiCoreReuseMultiCast1DProgramConfig((8, 2), 2, 1, 1, 1, 1, mcast_in0=True)
    width = OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED)
    block = OutputRequest(BufferType.L1, MemoryLayout.BLOCK_SHARDED)
    plan = plan_op(OpKind.MATMUL, OpRequest((a, b), width, MLIR), MatmulAttrs(one_d))
    assert plan.outputs[0].memory.shard is not None and plan.outputs[0].memory.shard.num_cores == 16
    with pytest.raises(InputError, match="width-sharded"):
        plan_op(OpKind.MATMUL, OpRequest((a, b), block, MLIR), MatmulAttrs(one_d))
    two_d = MatmulMultiCoreReuseMultiCastProgramConfig((8, 1), 2, 1, 2, 1, 2)
    with pytest.raises(InputError, match="block-sharded"):
        plan_op(OpKind.MATMUL, OpRequest((a, b), width, MLIR), MatmulAttrs(two_d))


def test_a_sharded_in0_must_be_the_one_the_config_reads() -> None:
    """matmul_device_operation.cpp validate: a 2-D multicast config reads a block- or
    height-sharded in0, never a width-sharded one ("Unsupported memory layout"), and a
    block-sharded in0 holds per_core_M row tiles a core; a 1-D config multicasting in0
    reads a width-sharded in0 with all of M a core. Falcon3-7B's down projection: its
    [576, 23040] input width sharded on 60 cores cannot feed the 2-D config of a
    block-sharded [576, 3072] output; block sharded 6 x 8 (3 x 90 tiles a core) can."""
    from tileplan.targets.tenstorrent.memory import BufferType

    b = tile((23040, 3072), DRAM, DataType.BFLOAT8_B)
    two_d = MatmulMultiCoreReuseMultiCastProgramConfig((8, 6), 2, 1, 4, 3, 12)
    block_out = OutputRequest(BufferType.L1, MemoryLayout.BLOCK_SHARDED)
    width_in = tile((576, 23040), sharded(MemoryLayout.WIDTH_SHARDED, CoreRangeSet.from_count(60, 8, 8), (576, 384)))
    with pytest.raises(InputError, match="Unsupported memory layout"):
        plan_op(OpKind.MATMUL, OpRequest((width_in, b), block_out, MLIR), MatmulAttrs(two_d))
    block_in = tile((576, 23040), sharded(MemoryLayout.BLOCK_SHARDED, CoreRange.grid(8, 6), (96, 2880)))
    plan = plan_op(OpKind.MATMUL, OpRequest((block_in, b), block_out, MLIR), MatmulAttrs(two_d))
    assert plan.outputs[0].memory.layout is MemoryLayout.BLOCK_SHARDED
    tall = tile((576, 23040), sharded(MemoryLayout.BLOCK_SHARDED, CoreRange.grid(8, 3), (192, 2880)))
    with pytest.raises(InputError, match="per_core_M 3"):
        plan_op(OpKind.MATMUL, OpRequest((tall, b), block_out, MLIR), MatmulAttrs(two_d))
    one_d = MatmulMultiCoreReuseMultiCast1DProgramConfig((8, 8), 2, 1, 1, 18, 2, mcast_in0=True)
    with pytest.raises(InputError, match="width-sharded in0"):
        plan_op(OpKind.MATMUL, OpRequest((block_in, b), OutputRequest(BufferType.L1, MemoryLayout.WIDTH_SHARDED),
                                         MLIR), MatmulAttrs(one_d))


TILES = st.integers(min_value=1, max_value=72)
MEMORIES = st.sampled_from([DRAM, L1])
OCCUPIED = st.one_of(st.none(), st.integers(min_value=MLIR.l1_unreserved_base + 200_000, max_value=MLIR.l1_size))


@given(TILES, TILES, TILES, MEMORIES, MEMORIES, MEMORIES, OCCUPIED, st.booleans())
def test_auto_config_blocks_cover_the_output(mt: int, kt: int, nt: int, a_mem: MemoryConfig, b_mem: MemoryConfig,
                                             out: MemoryConfig, occupied: int | None, fp32: bool) -> None:
    """create_simple_matmul_program_config's configs: the per-core blocks cover M and N
    on the grid, subblocks divide the out block, out blocks divide the per-core block,
    in0_block_w divides K, and fp32 accumulation keeps subblocks within 4 tiles."""
    target = OpTarget(MLIR.arch, MLIR.grid, 64, 12, MLIR.l1_size, MLIR.l1_unreserved_base, occupied)
    compute = MATMUL_DEFAULT_COMPUTE.__class__(fp32_dest_acc_en=fp32)
    s = MatmulShapes.of(tile((mt * 32, kt * 32), a_mem), tile((kt * 32, nt * 32), b_mem))
    cfg = generate_config(s, OutputRequest.of(out), target, compute, DataType.BFLOAT16)
    gx, gy = target.grid
    if isinstance(cfg, MatmulMultiCoreReuseMultiCastProgramConfig):
        assert -(-mt // cfg.per_core_M) <= gy and -(-nt // cfg.per_core_N) <= gx
    elif isinstance(cfg, MatmulMultiCoreReuseMultiCast1DProgramConfig):
        blocks = -(-mt // cfg.per_core_M) * -(-nt // cfg.per_core_N)
        assert blocks <= gx * gy
        assert cfg.per_core_M >= mt if cfg.mcast_in0 else cfg.per_core_N >= nt
    else:
        return
    assert kt % cfg.in0_block_w == 0
    assert cfg.per_core_M % cfg.block_h == 0 and cfg.per_core_N % cfg.block_w == 0
    assert cfg.block_h % cfg.out_subblock_h == 0 and cfg.block_w % cfg.out_subblock_w == 0
    if fp32:
        assert cfg.out_subblock_h * cfg.out_subblock_w <= 4


@given(TILES, TILES, TILES, MEMORIES, MEMORIES, OCCUPIED)
def test_the_fit_search_keeps_the_cbs_within_l1(mt: int, kt: int, nt: int, a_mem: MemoryConfig,
                                                b_mem: MemoryConfig, occupied: int | None) -> None:
    """When the fit search found a block whose estimate (`get_estimated_size_of_cbs`)
    is below max_l1_space, the program's circular buffers are too (the estimate counts
    output and interm apart where the factory shares them)."""
    target = OpTarget(MLIR.arch, MLIR.grid, 64, 12, MLIR.l1_size, MLIR.l1_unreserved_base, occupied)
    a, b = tile((mt * 32, kt * 32), a_mem), tile((kt * 32, nt * 32), b_mem)
    s = MatmulShapes.of(a, b)
    cfg = generate_config(s, OutputRequest.of(DRAM), target, MATMUL_DEFAULT_COMPUTE, DataType.BFLOAT16)
    if not isinstance(cfg, (MatmulMultiCoreReuseMultiCastProgramConfig,
                            MatmulMultiCoreReuseMultiCast1DProgramConfig)):
        return
    interm = interm_tile_bytes(MATMUL_DEFAULT_COMPUTE, DataType.BFLOAT16)
    if estimated_cb_bytes(s, cfg.block_h, cfg.block_w, cfg.in0_block_w, interm) < target.max_l1_space:
        plan = plan_op(OpKind.MATMUL, OpRequest((a, b), OutputRequest.of(DRAM), target), MatmulAttrs(cfg))
        assert plan.cb_peak < target.max_l1_space


@given(st.integers(min_value=1, max_value=16), st.integers(min_value=1, max_value=16), st.booleans(),
       st.booleans())
def test_subblock_divides_the_block(bh: int, bw: int, fp32: bool, w_constraint: bool) -> None:
    """`get_matmul_subblock_params`: the subblock divides the block, at most 8 tiles (4
    with fp32), h = 1 and w = block_w under the sharded-output constraint when found."""
    h, w = matmul_subblock(bh, bw, False, w_constraint, fp32)
    assert bh % h == 0 and bw % w == 0
    assert h * w <= (4 if fp32 else 8)
    if w_constraint and (h, w) != (1, 1):
        assert (h, w) == (1, bw)


@given(st.integers(min_value=1, max_value=4096), st.integers(min_value=1, max_value=16))
def test_find_max_divisor_skips_five_and_seven(value: int, start: int) -> None:
    d = find_max_divisor(value, start)
    assert value % d == 0 and d <= start and d not in (5, 7)


def test_reuse_config_for_a_batched_b() -> None:
    """create_matmul_program_config with b batched and a height-sharded: the no-multicast
    reuse config, one a shard per core."""
    a = tile((4, 1, 256, 64), sharded(MemoryLayout.HEIGHT_SHARDED, CoreRange((0, 0), (7, 3)), (32, 64)))
    b = tile((4, 1, 64, 128), L1)
    s = MatmulShapes.of(a, b)
    cfg = generate_config(s, OutputRequest.of(L1), MLIR, MATMUL_DEFAULT_COMPUTE, DataType.BFLOAT16, batched=True)
    assert isinstance(cfg, MatmulMultiCoreReuseProgramConfig)
    assert (cfg.per_core_M, cfg.per_core_N, cfg.in0_block_w) == (1, 4, 2)


def test_a_sharded_output_reserves_whole_shards_where_the_op_model_reports_its_pages_per_core() -> None:
    """H2 "shards to less cores": 1,792 x 1,792 bf16 (3,136 tiles) in the program's own
    16 shards of 16 x 16 tiles. tt-metal's allocator reserves a whole shard on every core
    (Buffer::num_dev_pages: 256 tiles, 524,288 B); tt-mlir's op model reports the
    logical pages over the cores (worst_case_per_core_allocation: 196 tiles, 401,408 B)."""
    plan = plan_op(OpKind.MATMUL, OpRequest((tile((1792, 1792), DRAM), tile((1792, 1792), DRAM)),
                                            OutputRequest.of(BS78), MLIR), None)
    (out,) = [b for b in plan.buffers if b.role is BufferRole.OUTPUT]
    assert plan.outputs[0].memory.shard is not None and plan.outputs[0].memory.shard.shape == (512, 512)
    assert (out.banks, out.bytes_per_bank) == (16, 256 * 2048)
    assert plan.output_bytes_per_core(0) == 196 * 2048
