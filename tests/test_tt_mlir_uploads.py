"""How tt-mlir's runtime uploads the arguments tt-xla passes (lower.py `stage_uploads`):
a TILE argument whose data type the build tilizes on the device first lands row-major in
the framework's orientation, is tilized there, and the row-major buffer is freed, all
before the first operation (tt-mlir runtime/lib/ttnn/types/layout_converter.cpp)."""

from __future__ import annotations

import pytest

from tileplan.errors import ModelError
from tileplan.importers.graph import GraphBuilder
from tileplan.model.ir import Tensor as ModelTensor
from tileplan.model.precision import Precision
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.planned import UPLOAD
from tileplan.targets.tenstorrent.program import Tensor
from tileplan.targets.tenstorrent.tiles import DataType, Layout

from tt_mlir_support import BF16, lowered, mlp, n150
from tt_plan_support import staged, staged_row_major_fails, staged_tile_fails

F32 = Precision("F32")


def linear(out_features: int, in_features: int, precision: Precision = BF16):
    """x [1, 32, in] @ W^T with W [out, in] a parameter, as torch.export gives a Linear."""
    b = GraphBuilder("linear")
    x = b.input("x", (1, 32, in_features), "float")
    w = b.parameter("fc.weight", (out_features, in_features), "float")
    wt = b.op("transpose", [w], {"perm": (1, 0)}, name="fc.weight_t")
    b.output(b.op("matmul", [x, wt], name="fc.matmul"))
    return b.build().to_program(precision, precision, repeat=False)


def test_the_importer_declares_a_linear_weight_transposed_and_keeps_the_frameworks_shape():
    program = mlp()
    tensors = {t.name: t for t in program.tensors}
    assert (tensors["fc1.weight"].shape, tensors["fc1.weight"].source_shape) == ((64, 128), (128, 64))
    assert tensors["fc1.bias"].source_shape is None and tensors["x"].source_shape is None


def test_a_model_tensor_whose_source_shape_is_not_a_permutation_is_refused():
    with pytest.raises(ModelError, match=r"source shape \[128, 32\] is not a permutation of \[64, 128\]"):
        ModelTensor(0, "fc.weight", (64, 128), BF16, Role.WEIGHT, (128, 32))


def test_each_bf16_argument_lands_row_major_in_the_frameworks_orientation_the_input_does_not():
    p = lowered(mlp(), 0)
    uploads = {p.tensors[t].name: p.tensors[t] for t in p.uploads}
    w = uploads["fc1.weight"]
    assert (w.staged.shape, w.staged.layout, w.staged.dtype) == ((128, 64), Layout.ROW_MAJOR, DataType.BFLOAT16)
    assert w.staged.memory == w.spec.memory == DRAM_INTERLEAVED
    assert uploads["fc1.bias"].staged.shape == uploads["fc1.bias"].spec.shape
    assert uploads["x"].staged is None  # the model's input stays row-major, tilized by an operation


def test_the_row_major_buffer_is_placed_first_and_freed_once_the_tile_one_is_made():
    """fc1.weight: torch's [128, 64] bf16 is 128 rows of 128 B, ceil(128 / 12) = 11 a
    bank on n150 (1,408 B); its TILE form [64, 128] is 8 tiles, one a bank (2,048 B).
    DRAM is allocated bottom-up, so the row-major buffer sits just below the TILE one."""
    plan = plan_tt(lowered(mlp(), 0), n150())
    rows = [b for b in plan.buffers if b.name.startswith("fc1.weight")]
    staged, tile = rows
    assert staged.name == "fc1.weight (row-major, to tilize)"
    assert (staged.page_bytes, staged.bytes_per_bank, tile.page_bytes, tile.bytes_per_bank) == (128, 1408, 2048, 2048)
    assert (tile.allocated - staged.allocated, staged.freed - staged.allocated) == (1, 2)
    assert staged.staged and not tile.staged
    assert (staged.first_op, staged.last_op, tile.first_op, tile.freed) == (UPLOAD, UPLOAD, UPLOAD, None)
    assert tile.address == staged.address + staged.reserved


def test_a_down_projection_of_5120_by_27648_lands_as_427_row_major_pages_a_bank():
    """DeepSeek-R1-Distill-Qwen-32B's down_proj (torch [5,120, 27,648] bf16, 283,115,520 B):
    5,120 rows of 55,296 B over 12 banks, ceil(5,120 / 12) = 427 a bank: 23,611,392 B,
    the figure of tt-xla #1722's out-of-memory; tilized, 138,240 tiles, 11,520 a bank:
    23,592,960 B."""
    plan = plan_tt(lower(linear(5120, 27648), TtMlirOptions.of(0, None), n150()), n150())
    staged, tile = [b for b in plan.buffers if b.name.startswith("fc.weight")]
    assert (staged.bytes, staged.page_bytes, staged.bytes_per_bank) == (283115520, 55296, 23611392)
    assert (tile.bytes, tile.page_bytes, tile.bytes_per_bank) == (283115520, 2048, 23592960)


def test_the_device_tilize_types_change_on_the_day_after_tt_mlir_6342():
    from tileplan.targets.tenstorrent.versions import Stack, software_at
    before, after = (software_at(d, Stack.TT_MLIR).device_tilize for d in ("2025-12-18", "2025-12-19"))
    assert before == {DataType.BFLOAT16}
    assert after == {DataType.BFLOAT16, DataType.FLOAT32, DataType.UINT32, DataType.UINT16, DataType.INT32}


@pytest.mark.parametrize(("version", "staged"), [("2025-10", False), ("2026-04", True)])
def test_f32_arguments_are_tilized_on_the_host_until_tt_mlir_6342(version, staged):
    """Before tt-mlir 6d0dbb023c (#6342, 2025-12-18) the runtime tilized only bfloat16 on
    the device; from then float32 too (devices/software.toml `device_tilize`)."""
    device = load_device("n150", version=version)
    p = lower(linear(64, 128, F32), TtMlirOptions.of(0, None), device)
    w = next(p.tensors[t] for t in p.uploads if p.tensors[t].name == "fc.weight")
    assert w.spec.dtype is DataType.FLOAT32 and (w.staged is not None) is staged


def test_bfp8_weights_are_converted_on_the_host_and_uploaded_once():
    p = lowered(mlp(), 0, weights=DataType.BFLOAT8_B)
    weights = [p.tensors[t] for t in p.uploads if p.tensors[t].name.startswith("fc1.weight")]
    assert [(t.spec.dtype, t.staged) for t in weights] == [(DataType.BFLOAT8_B, None)]


def test_a_staged_form_must_be_the_row_major_twin_of_a_tile_spec():
    spec = TensorSpec((64, 128), DataType.BFLOAT16, Layout.TILE, DRAM_INTERLEAVED)
    Tensor(0, "w", Role.WEIGHT, spec, staged=TensorSpec((128, 64), DataType.BFLOAT16, Layout.ROW_MAJOR,
                                                        DRAM_INTERLEAVED))
    for bad in (TensorSpec((64, 128), DataType.FLOAT32, Layout.ROW_MAJOR, DRAM_INTERLEAVED),
                TensorSpec((64, 128), DataType.BFLOAT16, Layout.TILE, DRAM_INTERLEAVED),
                TensorSpec((64, 64), DataType.BFLOAT16, Layout.ROW_MAJOR, DRAM_INTERLEAVED)):
        with pytest.raises(ModelError, match="a staged form must be the row-major twin of a TILE spec"):
            Tensor(0, "w", Role.WEIGHT, spec, staged=bad)


def test_the_arguments_go_up_in_declaration_order_then_the_const_eval_results(tmp_path):
    """The TILE arguments go up as declared; the forms const-eval makes after them, in
    first-read order: the embedding workaround's row-major table (uploaded as it is,
    nothing to tilize) and the fused Q/K/V weights (a concatenation)."""
    from tt_mlir_support import LLAMA, config_program

    program = config_program({**LLAMA, "tie_word_embeddings": False}, tmp_path, 64)
    p = lower(program, TtMlirOptions.of(0, None), load_device("n150", version="2025-12-18"))
    names = [p.tensors[t].name for t in p.uploads]
    declared = [t.name for t in program.tensors if t.name in names]
    table = next(p.tensors[t] for t in p.uploads if p.tensors[t].spec.layout is Layout.ROW_MAJOR
                 and p.tensors[t].role is Role.WEIGHT)
    assert table.staged is None
    fused = "model.layers.0.self_attn.q_proj.weight+model.layers.0.self_attn.k_proj.weight+" \
            "model.layers.0.self_attn.v_proj.weight"
    arguments = [n for n in declared if n != table.name]
    assert names[:len(arguments)] == arguments
    assert {table.name, fused} <= set(names[len(arguments):])


def test_row_major_holes_can_stop_the_uploads_and_the_note_counts_the_uploads_to_come():
    """n150's L1 bank holds 1,329,376 B (649 tiles and 224 B), allocated top-down; each
    upload takes its own size twice in first fit (its row-major hole above it). With
    w0 = 99 and w1 = 198 tiles placed, w2's row-major form (252 tiles) finds 721,120 B
    free in three blocks, none large enough. No order would fit: w2's two forms beside
    w0 and w1 need 801 tiles. With w1 = 126 and w2 = 207 tiles, w2's row-major form
    finds the bottom 199 tiles, and holes of 99 and 126: first fit fails, but the final
    forms and w2's row-major one take 639 tiles, which another placement fits."""
    from tileplan.app.tenstorrent.whatif import fragmentation_note
    from tileplan.targets.tenstorrent.planned import FailureKind

    device = load_device("n150")
    plan = plan_tt(staged_row_major_fails().program(), device)
    v = plan.verdict
    assert (v.kind, v.op, v.request_name) == (FailureKind.FRAGMENTATION, UPLOAD, "w2 (row-major, to tilize)")
    assert v.statistics.free == 1329376 - (99 + 198) * 2048
    assert fragmentation_note(plan) == ("no order would fit: no placement of the 4 L1 buffers and the 1 upload still "
                                        "to come (each with its row-major form) stays within the 1,329,376-B bank")
    plan = plan_tt(staged((99, 126, 207)).program(), device)
    assert (plan.verdict.kind, plan.verdict.request_name) == (FailureKind.FRAGMENTATION, "w2 (row-major, to tilize)")
    assert fragmentation_note(plan).startswith("a different order would fit: the placement solver places the 4 L1 "
                                               "buffers and the 1 upload still to come (each with its row-major form)")


def test_when_the_tile_form_fails_its_live_row_major_form_is_counted_with_its_upload():
    """w0 (27 tiles) and w1 (63) leave row-major holes of 27 and 63 tiles; w2's
    row-major form (252 tiles) is placed below them, and its TILE form finds 217 tiles
    at the bottom: no block. Still to come is w2, its row-major form with it (the live
    one is not counted twice): 4 buffers placed and 1 upload."""
    from tileplan.app.tenstorrent.whatif import fragmentation_note
    from tileplan.targets.tenstorrent.planned import FailureKind

    plan = plan_tt(staged_tile_fails().program(), load_device("n150"))
    v = plan.verdict
    assert (v.kind, v.request_name) == (FailureKind.FRAGMENTATION, "w2")
    assert [b.staged for b in plan.buffers if b.freed is None] == [False, False, True]
    assert fragmentation_note(plan).startswith("a different order would fit: the placement solver places the 4 L1 "
                                               "buffers and the 1 upload still to come (each with its row-major form)")


@pytest.mark.parametrize(("version", "retained"), [("2025-10", True), ("2026-04", False)])
def test_before_tt_mlir_6198_a_const_eval_input_goes_up_before_its_result_and_stays(version, retained):
    """bfp8 weights are a const-eval typecast of the bf16 ones. Before tt-mlir #6198
    (2025-12-11) the typecast's input moves to device DRAM on first use and the frontend
    keeps it: fc1.weight [64, 128] bf16 (8 tiles, one a bank: 2,048 B) goes up just
    before its bfloat8_b form and is never freed; from #6198 it stays on the host."""
    device = load_device("n150", version=version)
    p = lower(mlp(), TtMlirOptions.of(0, "bfp8"), device)
    names = [p.tensors[t].name for t in p.uploads]
    kept = "fc1.weight (const-eval input)"
    assert (kept in names) is retained
    if retained:
        assert names[names.index(kept) + 1] == "fc1.weight"
        assert p.tensors[p.uploads[names.index(kept)]].spec.dtype is DataType.BFLOAT16
        plan = plan_tt(p, device)
        buffer = next(b for b in plan.buffers if b.name == kept)
        assert (buffer.bytes_per_bank, buffer.freed) == (2048, None)


def test_a_fused_weights_const_eval_inputs_are_its_parts(tmp_path):
    """The Q/K/V weights concatenated by tt-mlir's fusion come from the three
    projections' weights (and nothing comes from a constant made from nothing)."""
    from tt_mlir_support import LLAMA, config_program
    from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering
    from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import GraphBuilder
    from tileplan.targets.tenstorrent.plan import op_target

    program = config_program(LLAMA, tmp_path, 64)
    device = load_device("n150", version="2025-12-18")
    lw = Lowering(program, TtMlirOptions.of(0, None), device, op_target(device), GraphBuilder("x"), (),
                  {"qkv": (("model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                            "model.layers.0.self_attn.v_proj.weight"), (256, 512))})
    assert lw.const_eval_inputs("qkv") == ("model.layers.0.self_attn.q_proj.weight",
                                            "model.layers.0.self_attn.k_proj.weight",
                                            "model.layers.0.self_attn.v_proj.weight")
    assert lw.const_eval_inputs("model.layers.0.mlp.up_proj.weight") == ("model.layers.0.mlp.up_proj.weight",)
    assert lw.const_eval_inputs("input_ids") == ()
