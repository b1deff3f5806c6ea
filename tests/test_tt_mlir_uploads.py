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
    assert (staged.allocated, tile.allocated, staged.freed) == (staged.allocated, staged.allocated + 1,
                                                                staged.allocated + 2)
    assert (staged.first_op, staged.last_op, tile.first_op, tile.freed) == (UPLOAD, UPLOAD, UPLOAD, None)
    assert tile.address == staged.address + staged.reserved


def test_a_down_projection_of_5120_by_27648_lands_as_427_row_major_pages_a_bank():
    """DeepSeek-R1-Distill-Qwen-32B's down_proj (torch [5,120, 27,648] bf16, 283,115,520 B):
    5,120 rows of 55,296 B over 12 banks, ceil(5,120 / 12) = 427 a bank: 23,611,392 B,
    the figure of tt-xla #1722's out-of-memory; tilized, 138,240 tiles, 11,520 a bank:
    23,592,960 B."""
    p = lower(linear(5120, 27648), TtMlirOptions.of(0, None), n150())
    w = next(p.tensors[t] for t in p.uploads if p.tensors[t].name == "fc.weight")
    from tileplan.targets.tenstorrent.bank import BufferRequest
    staged = BufferRequest.for_tensor(w.staged, n150(), "staged")
    tile = BufferRequest.for_tensor(w.spec, n150(), "tile")
    assert (staged.size, staged.page_size, tile.size) == (283115520, 55296, 283115520)
    assert (-(-staged.size // staged.page_size // 12) * staged.page_size, -(-tile.size // 2048 // 12) * 2048) == \
        (23611392, 23592960)


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


def staged_program(tiles_per_bank: tuple[int, ...]):
    """L1-interleaved bf16 weights of the given tiles a bank (n150: 72 banks), each
    uploaded row-major first (the same bytes a bank when the tiles are a multiple of 9)."""
    from dataclasses import replace as with_
    from tt_plan_support import Builder, l1_tiles_per_bank
    b = Builder()
    for k, n in enumerate(tiles_per_bank):
        spec = l1_tiles_per_bank(n)
        t = b.upload(f"w{k}", spec)
        b.tensors[t] = with_(b.tensors[t], staged=with_(spec, layout=Layout.ROW_MAJOR))
    return b


def test_row_major_holes_can_stop_the_uploads_and_the_note_counts_the_uploads_to_come():
    """n150's L1 bank holds 1,329,376 B, allocated top-down. w0 (99 tiles, 202,752 B)
    leaves its row-major hole at the top; w1 (198 tiles, 405,504 B) does not fit it and
    leaves its own hole below w0; w2's row-major form (252 tiles, 516,096 B) then finds
    721,120 B free in three blocks, none large enough. The final forms together
    (1,124,352 B) fit another order; with w3 (153 tiles) still to come they take
    1,437,696 B, more than the bank: no order would fit."""
    from tileplan.app.tenstorrent.whatif import fragmentation_note
    from tileplan.targets.tenstorrent.planned import FailureKind

    device = load_device("n150")
    plan = plan_tt(staged_program((99, 198, 252)).program(), device)
    v = plan.verdict
    assert (v.kind, v.op, v.request_name) == (FailureKind.FRAGMENTATION, UPLOAD, "w2 (row-major, to tilize)")
    assert v.statistics.free == 1329376 - (99 + 198) * 2048
    assert fragmentation_note(plan).startswith("a different order would fit: the placement solver places the 4 L1 "
                                               "buffers and the 1 upload still to come")
    plan = plan_tt(staged_program((99, 198, 252, 153)).program(), device)
    assert fragmentation_note(plan) == ("no order would fit: no placement of the 4 L1 buffers and the 2 uploads still "
                                        "to come stays within the 1,329,376-B bank")
