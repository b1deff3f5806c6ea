"""The tt-mlir frontend's options (their checks and one-line errors), the optimizer's L1
budget, the level-2 passes' arithmetic, the override text's grammar, and an operator
with no TTNN rule."""

from __future__ import annotations

import pytest

from tileplan.errors import InputError, ModelError
from tileplan.importers.graph import GraphBuilder
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.budget import const_eval_reserve, usable_l1
from tileplan.targets.tenstorrent.frontends.tt_mlir.frontend import FRONTEND
from tileplan.targets.tenstorrent.frontends.tt_mlir.configs import tt_mlir_matmul_config
from tileplan.targets.tenstorrent.frontends.tt_mlir.layouts import Score
from tileplan.targets.tenstorrent.frontends.tt_mlir.legal import legal_sharded_layouts
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Value
from tileplan.targets.tenstorrent.frontends.tt_mlir.reproduce import (
    LEVEL_0_NOTE, OPTIMIZER_ONLY, compile_options_text, layout_text, output_specs, placement_overrides)
from tileplan.targets.tenstorrent.overrides import outputs_to_dram
from tileplan.targets.tenstorrent.frontends.tt_mlir.spill import Tracker
from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED, L1_INTERLEAVED, BufferType, CoreRange, CoreRangeSet, MemoryConfig, MemoryLayout, ShardSpec,
    TensorSpec)
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.tiles import DataType, Layout

from tt_mlir_support import BF16, lowered, mlp, n150


def test_options_parse_the_flags_spellings():
    o = TtMlirOptions.of(2, "bfp8", "f32", 4, 128)
    assert (o.opt_level, o.weights, o.activations, o.batch, o.sequence_length) == (
        2, DataType.BFLOAT8_B, DataType.FLOAT32, 4, 128)
    assert o.optimizer and o.l1_layouts and o.weight_conversion is DataType.BFLOAT8_B and o.model_weights is None
    assert TtMlirOptions.of(weights="bf16").model_weights is DataType.BFLOAT16
    assert o.compile_options() == {"optimization_level": "2", "experimental_weight_dtype": "bfp_bf8"}


@pytest.mark.parametrize("kwargs, words", [
    ({"opt_level": 3}, "expected 0, 1 or 2"),
    ({"activations": "bfp8"}, "block floats (bfp8, bfp4) are weights only"),
    ({"weights": "u8"}, "unknown Tenstorrent data type"),
    ({"batch": 0}, "expected a whole number >= 1"),
])
def test_bad_options_are_one_line_errors(kwargs, words):
    with pytest.raises(InputError) as e:
        TtMlirOptions.of(**kwargs)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_level_0_compute_config_is_hifi4_fp32_over_the_runtime_defaults():
    cfg = TtMlirOptions().compute()
    assert cfg is not None and (cfg.math_fidelity.value, cfg.fp32_dest_acc_en, cfg.math_approx_mode,
                                cfg.packer_l1_acc) == ("HiFi4", True, True, False)
    assert TtMlirOptions(opt_level=1).compute() is None


def test_usable_l1_is_the_capped_share_above_the_unreserved_base():
    """TENSTORRENT-NOTES (f): with l1_unreserved_base 103,712 on Wormhole,
    floor(0.95 x (1,499,136 - 103,712)) = 1,325,652 B (float arithmetic, truncated)."""
    dev = load_device("n150", version="2026-04")
    assert dev.l1_base == 103_712
    assert usable_l1(dev, TtMlirOptions()) == 1_325_652
    assert usable_l1(dev, TtMlirOptions(), const_eval_l1=10_000) == 1_325_652 - 11_264
    assert const_eval_reserve(0) == 0 and const_eval_reserve(1) == 2048


def _legal(shape, version):
    dev = load_device("n150", version=version)
    return [(x.layout, x.grid, x.shard.shape, x.shard.num_cores)
            for x in legal_sharded_layouts(Value(shape, DataType.BFLOAT16), op_target(dev), dev.software)]


def test_the_legal_sharded_layouts_of_april_2026_are_tt_mlirs():
    """tt-mlir of April 2026 on n150's 8-column, 9-row grid: block grids first (the
    smallest grid of each shard), then height and width ones, legal only inside the
    transposed rectangle CoreCoord{9, 8} (no ninth row: at most 64 cores), the 8 largest
    kept. For the 576 x 23040 output of Falcon3-7B's MLP (18 x 720 tiles) that is
    widths of 60, 56, 52 and 48 cores, block 6 x 8, widths 45 and 43, block 6 x 7."""
    W, B = MemoryLayout.WIDTH_SHARDED, MemoryLayout.BLOCK_SHARDED
    got = _legal((576, 23040), "2026-04")
    assert [(g[0], g[1]) for g in got] == [(W, (1, 60)), (W, (1, 56)), (W, (1, 52)), (B, (6, 8)), (W, (1, 48)),
                                           (W, (1, 45)), (W, (1, 43)), (B, (6, 7))]
    assert got[4][2:] == ((576, 480), 48) and got[3][2:] == ((96, 2880), 48)  # 15 and 3 x 90 tiles a core
    assert 576 * 23040 * 2 // 48 == 552_960  # a bank of either 48-core layout


def test_from_may_2026_the_whole_grid_and_64_layouts():
    """tt-mlir #8234 (2026-05-04) checks against the device's own rectangle and #8526
    (2026-05-27) keeps 64 layouts: the ninth row comes back."""
    got = _legal((576, 23040), "2026-07-15")
    assert got[0][:2] == (MemoryLayout.BLOCK_SHARDED, (9, 8)) and got[1][:2] == (MemoryLayout.WIDTH_SHARDED, (1, 72))
    assert len(got) == 64
    small = _legal((1, 128, 1024), "2026-07-15")  # 4 x 32 tiles: a grid has at most as many tiles a side
    assert all(g[1][0] <= 4 and g[1][1] <= 32 for g in small)
    assert not legal_sharded_layouts(Value((4, 3), DataType.BFLOAT16, Layout.ROW_MAJOR), op_target(n150()),
                                     n150().software)


def test_tt_mlirs_matmul_program_configs_follow_the_output_layout():
    """MatmulProgramConfig.cpp generateMatmulProgramConfig: width shards a 1-D in0
    multicast on the layout's bounding box, block shards a 2-D one."""
    from tileplan.targets.tenstorrent.memory import TensorSpec
    from tileplan.targets.tenstorrent.ops.tt_matmul_config import (
        MatmulMultiCoreReuseMultiCast1DProgramConfig, MatmulMultiCoreReuseMultiCastProgramConfig, MatmulShapes)

    a = TensorSpec((576, 3072), DataType.BFLOAT16, Layout.TILE, L1_INTERLEAVED)
    b = TensorSpec((3072, 23040), DataType.BFLOAT8_B, Layout.TILE, DRAM_INTERLEAVED)
    s = MatmulShapes.of(a, b)
    w48 = tt_mlir_matmul_config(s, MemoryLayout.WIDTH_SHARDED, CoreRange.grid(8, 6), None)
    assert isinstance(w48, MatmulMultiCoreReuseMultiCast1DProgramConfig) and w48.mcast_in0
    assert (w48.grid, w48.per_core_M, w48.per_core_N, w48.in0_block_w, w48.out_subblock_w) == ((8, 6), 18, 15, 2, 5)
    b68 = tt_mlir_matmul_config(s, MemoryLayout.BLOCK_SHARDED, CoreRange.grid(8, 6), None)
    assert isinstance(b68, MatmulMultiCoreReuseMultiCastProgramConfig)
    assert (b68.grid, b68.per_core_M, b68.per_core_N, b68.in0_block_w) == ((8, 6), 3, 90, 2)
    h = tt_mlir_matmul_config(s, MemoryLayout.HEIGHT_SHARDED, CoreRange.grid(8, 3), None)
    assert isinstance(h, MatmulMultiCoreReuseMultiCast1DProgramConfig) and not h.mcast_in0
    assert (h.per_core_M, h.per_core_N, h.in0_block_w) == (1, 720, 96)
    batched = MatmulShapes.of(TensorSpec((2, 64, 64), DataType.BFLOAT16, Layout.TILE, L1_INTERLEAVED),
                              TensorSpec((2, 64, 64), DataType.BFLOAT16, Layout.TILE, L1_INTERLEAVED))
    assert tt_mlir_matmul_config(batched, MemoryLayout.WIDTH_SHARDED, CoreRange.grid(2, 1), None) is None


def test_layout_score_ranks_l1_then_sharding_then_dram_reads_then_reshards_then_cores():
    base = Score(True, True, 0, False, 8, 1000, 0)
    assert base.key > Score(False, True, 0, False, 64, 0, 0).key  # L1 beats DRAM
    assert base.key > Score(True, False, 0, False, 64, 0, 0).key  # sharded beats interleaved
    assert base.key > Score(True, True, 1, False, 64, 0, 0).key  # fewer DRAM input bytes
    assert base.key > Score(True, True, 0, True, 64, 0, 0).key  # no reshard
    assert Score(True, True, 0, False, 16, 1000, 0).key > base.key  # more cores
    assert Score(True, True, 0, False, 8, 999, 0).key > base.key  # less L1


def test_the_spill_tracker_places_top_down_first_fit():
    t = Tracker(1000)
    from tileplan.targets.tenstorrent.frontends.tt_mlir.spill import Slot
    assert t.place(100) == 888  # 16-B aligned: 112 B below the top
    t.slots[1] = Slot(888, 112, 5)
    t.slots[2] = Slot(400, 400, 5)  # free: [800, 888) and [0, 400)
    assert t.place(80) == 808 and t.place(96) == 304 and t.place(500) is None and t.lowest() == 400


def test_a_model_operator_with_no_ttnn_rule_is_one_line_naming_both():
    b = GraphBuilder("pool")
    x = b.input("x", (1, 8, 16, 16), "float")
    b.output(b.op("adaptive_avgpool", [x], {"output_size": (1, 1)}, name="pool"))
    program = b.build().to_program(BF16, BF16, repeat=False)
    with pytest.raises(ModelError) as e:
        lowered(program, 0)
    text = str(e.value)
    assert "ttnn.adaptive_avg_pool2d" in text and "adaptive_avgpool" in text and "operation 0 (pool)" in text
    assert "\n" not in text


def test_layout_text_follows_tt_mlirs_grammar():
    dev = n150()
    sharded = TensorSpec((1, 1, 256, 512), DataType.BFLOAT16, Layout.TILE,
                         MemoryConfig(BufferType.L1, MemoryLayout.BLOCK_SHARDED,
                                      ShardSpec(CoreRange.grid(4, 2), (128, 128))))
    assert layout_text(sharded, dev) == "2x4:l1:block_sharded:tile:bf16"
    # height and width shards: tt-mlir's grid shape is N x 1 and 1 x N (LegalTensorLayoutAnalysis.cpp),
    # not the shard grid's bounding box (here 2 rows of 8 and 4 cores)
    height = TensorSpec((1, 1, 640, 64), DataType.BFLOAT16, Layout.TILE,
                        MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED,
                                     ShardSpec(CoreRangeSet.from_count(20, 8, 8), (32, 64))))
    assert layout_text(height, dev) == "20x1:l1:height_sharded:tile:bf16"
    width = TensorSpec((1, 1, 32, 384), DataType.FLOAT32, Layout.TILE,
                       MemoryConfig(BufferType.L1, MemoryLayout.WIDTH_SHARDED,
                                    ShardSpec(CoreRangeSet.from_count(12, 8, 8), (32, 32))))
    assert layout_text(width, dev) == "1x12:l1:width_sharded:tile:f32"
    assert layout_text(TensorSpec((64, 64), DataType.BFLOAT8_B, Layout.TILE, L1_INTERLEAVED), dev) == \
        "9x8:l1:interleaved:tile:bfp_bf8"
    assert layout_text(TensorSpec((64, 64), DataType.FLOAT32, Layout.ROW_MAJOR, DRAM_INTERLEAVED), dev) == \
        "1x1:dram:interleaved:row_major:f32"


def test_placement_overrides_list_every_l1_output_of_a_level_2_plan():
    dev = n150()
    p = lowered(mlp(), 2)
    specs = output_specs(p, dev)
    assert set(specs) == {t.id for t in p.tensors}
    lines = placement_overrides(p, specs, dev)
    assert lines and lines[0].startswith("override-output-layout=")
    entries = lines[0].split("=", 1)[1].split(",")
    l1_ops = [op.name for op in p.ops if op.kind is not OpKind.TO_MEMORY_CONFIG
              and specs[op.outputs[0]].memory.buffer_type is BufferType.L1]
    assert [e.split("=")[0] for e in entries] == l1_ops
    assert all(":l1:" in e for e in entries)


def test_reproduce_names_the_compile_options_and_every_chosen_layout():
    dev = n150()
    p = lowered(mlp(), 2)
    found = FRONTEND.reproduce(TtMlirOptions(opt_level=2), p, dev, ())
    assert found.settings[0] == 'torch_xla.set_custom_compile_options({"optimization_level": "2"})'
    assert found.settings[1:] == placement_overrides(p, output_specs(p, dev), dev)
    specs = output_specs(p, dev)
    assert [o.name for o in found.layouts] == [op.name for op in p.ops if op.kind is not OpKind.TO_MEMORY_CONFIG
                                               and specs[op.outputs[0]].memory.buffer_type is BufferType.L1]
    linears = {o.name: o for o in found.layouts if o.name.endswith(".linear")}
    assert set(linears) == {"fc1.linear", "fc2.linear"}
    assert all(o.memory_layout.sharded and o.grid[0] == 1 for o in linears.values())  # one row of shards: 1 x N
    fc1 = linears["fc1.linear"]
    assert f"fc1.linear={fc1.grid[0]}x{fc1.grid[1]}:l1:{fc1.memory_layout.value}:tile:bf16" in found.settings[1]
    # an output moved to DRAM is named with its DRAM layout, the others keep theirs
    moved = outputs_to_dram(p, ("fc1.linear",))
    found = FRONTEND.reproduce(TtMlirOptions(opt_level=2), moved, dev, ("fc1.linear",))
    assert found.settings[1].startswith("override-output-layout=fc1.linear=1x1:dram:interleaved:tile:bf16,")
    assert [(o.name, o.buffer_type) for o in found.layouts][0] == ("fc1.linear", BufferType.DRAM)


def test_reproduce_at_level_0_says_no_override_applies():
    opts = TtMlirOptions(opt_level=0, weights=DataType.BFLOAT4_B)
    p = lowered(mlp(), 0)
    found = FRONTEND.reproduce(opts, p, n150(), ())
    assert found.settings == (compile_options_text(opts), LEVEL_0_NOTE) and not found.layouts
    assert compile_options_text(opts) == ('torch_xla.set_custom_compile_options({"optimization_level": "0", '
                                          '"experimental_weight_dtype": "bfp_bf4"})')
    moved = FRONTEND.reproduce(opts, p, n150(), ("fc1.linear",))
    assert moved.settings[1] == "override-output-layout=fc1.linear=dram:interleaved" + OPTIMIZER_ONLY


def test_level_1_names_only_the_moved_outputs():
    dev = n150()
    p = outputs_to_dram(lowered(mlp(), 1), ("fc2.linear",))
    found = FRONTEND.reproduce(TtMlirOptions(opt_level=1), p, dev, ("fc2.linear",))
    assert found.settings[1:] == ("override-output-layout=fc2.linear=1x1:dram:interleaved:tile:bf16",)
    assert FRONTEND.reproduce(TtMlirOptions(opt_level=1), lowered(mlp(), 1), dev, ()).settings == (
        'torch_xla.set_custom_compile_options({"optimization_level": "1"})',)


def test_a_max_pool_runs_on_the_flattened_row_major_input():
    """TTIRToTTNN.cpp Pooling2dOpConversionPattern on the flattened input, row-major bf16
    in and out (createPool2DOpOperandsWorkarounds), config tensors in DRAM."""
    b = GraphBuilder("pool")
    x = b.input("x", (1, 32, 16, 16), "float")
    b.output(b.op("maxpool", [x], {"kernel": (2, 2), "strides": (2, 2), "pads": (0, 0, 0, 0)}, name="pool"))
    p = lowered(b.build().to_program(BF16, BF16, repeat=False), 0)
    k = [op.kind.value for op in p.ops]
    # NCHW input tilized, permuted to NHWC, flattened, back to row-major for the pool
    assert k[:5] == ["ttnn.to_layout", "ttnn.permute", "ttnn.reshape", "ttnn.to_layout", "ttnn.max_pool2d"]
    pool = p.ops[4]
    assert pool.attrs.config_tensors_in_dram and (pool.attrs.batch, pool.attrs.input_hw) == (1, (16, 16))
    assert pool.out.dtype is DataType.BFLOAT16
