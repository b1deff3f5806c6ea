"""The tt-mlir frontend's lowering of a Linear + GELU MLP, of attention (against tt-mlir's
own decomposition test) and of a small CNN: the TTNN operations, their specs, memory
configs and compute configs at each optimization level, the frees, and the planner's
verdict on them."""

from __future__ import annotations

import pytest

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.memory import BufferType, MemoryLayout
from tileplan.targets.tenstorrent.ops.base import MathFidelity
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_conv_attrs import Conv2dAttrs
from tileplan.targets.tenstorrent.ops.tt_conv_transpose import ConvTranspose2dAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.tiles import DataType, Layout

from tt_mlir_support import attention, cnn, kinds, lowered, mlp, n150, upsampler


def test_mlp_at_level_0_is_tilize_then_two_linears_with_gelu_fused_all_in_dram():
    p = lowered(mlp(), 0)
    assert [k for k in kinds(p) if k != "ttnn.reshape"] == ["ttnn.to_layout", "ttnn.linear", "ttnn.linear"]
    linears = [op for op in p.ops if op.kind is OpKind.LINEAR]
    assert [len(op.inputs) for op in linears] == [3, 3]  # the bias is the linear's third operand
    for op in p.ops:
        assert (op.out.buffer_type, op.out.layout) == (BufferType.DRAM, MemoryLayout.INTERLEAVED)
    # level 0: HiFi4 with fp32 destination accumulation on every op exposing a compute config
    assert all(op.compute.math_fidelity is MathFidelity.HIFI4 and op.compute.fp32_dest_acc_en for op in linears)
    assert all(op.compute is None for op in p.ops if op.kind is not OpKind.LINEAR)


def test_mlp_uploads_the_input_row_major_and_the_weights_in_tile_in_dram():
    p = lowered(mlp(), 0)
    uploads = {p.tensors[t].name: p.tensors[t] for t in p.uploads}
    assert set(uploads) == {"x", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert uploads["x"].role is Role.INPUT and uploads["x"].spec.layout is Layout.ROW_MAJOR
    for name in ("fc1.weight", "fc2.weight"):
        spec = uploads[name].spec
        assert (spec.layout, spec.dtype, spec.memory.buffer_type) == (Layout.TILE, DataType.BFLOAT16, BufferType.DRAM)
    assert uploads["fc1.weight"].spec.shape == (64, 128)  # tileplan's IR holds a Linear's weight transposed


def test_every_computed_tensor_is_freed_after_its_last_reader_and_no_upload_is():
    p = lowered(mlp(), 0)
    last: dict[int, int] = {}
    for op in p.ops:
        for t in op.inputs:
            last[t] = op.index
    freed = {t: k for k, ids in enumerate(p.frees) for t in ids}
    made = {t for op in p.ops for t in op.outputs}
    assert not set(p.uploads) & set(freed)
    for t in made - set(p.outputs):
        assert freed[t] == last[t]
    assert set(p.outputs) <= made and not set(p.outputs) & set(freed)


def test_bfp8_weights_are_the_matmul_weights_typecast_the_biases_stay():
    p = lowered(mlp(), 0, weights=DataType.BFLOAT8_B)
    specs = {p.tensors[t].name: p.tensors[t].spec for t in p.uploads}
    assert specs["fc1.weight"].dtype is DataType.BFLOAT8_B and specs["fc2.weight"].dtype is DataType.BFLOAT8_B
    assert specs["fc1.bias"].dtype is DataType.BFLOAT16


def test_level_1_keeps_dram_but_leaves_compute_configs_to_ttnn_and_fixes_matmul_configs():
    p = lowered(mlp(), 1)
    linears = [op for op in p.ops if op.kind is OpKind.LINEAR]
    assert all(op.compute is None for op in linears)
    assert all(isinstance(op.attrs, MatmulAttrs) and op.attrs.program_config is not None for op in linears)
    assert all(op.out.buffer_type is BufferType.DRAM for op in p.ops)


def test_level_2_places_outputs_in_l1_and_returns_the_result_in_dram():
    p = lowered(mlp(), 2)
    assert any(op.out.buffer_type is BufferType.L1 for op in p.ops)
    (out,) = p.outputs
    producer = next(op for op in p.ops if out in op.outputs)
    assert producer.out.buffer_type is BufferType.DRAM
    assert plan_tt(p, n150()).fits


@pytest.mark.parametrize("level", [0, 1, 2])
def test_the_mlp_fits_n150_at_every_level(level):
    assert plan_tt(lowered(mlp(), level), n150()).fits


def test_attention_at_level_0_decomposes_as_tt_mlirs_sdpa_decomposition_test():
    """tt-mlir test/ttmlir/Dialect/TTNN/Transforms/Decomposition/sdpa_decomposition.mlir,
    test 1: q, k, v [1, 8, 64, 64], mask [1, 1, 64, 64], scale 0.125 -> transpose(-2, -1),
    matmul, full(0.125), multiply, add, softmax(-1), matmul (here the mask's heads repeated,
    and the full a const-eval upload)."""
    p = lowered(attention((1, 8, 64, 64), (1, 8, 64, 64), (1, 1, 64, 64)), 0)
    assert kinds(p) == ["ttnn.to_layout", "ttnn.to_layout", "ttnn.to_layout", "ttnn.transpose", "ttnn.matmul",
                        "ttnn.multiply", "ttnn.add", "ttnn.softmax", "ttnn.matmul"]
    transpose = next(op for op in p.ops if op.kind is OpKind.TRANSPOSE)
    assert (transpose.attrs.dim0, transpose.attrs.dim1) == (-2, -1)
    softmax = next(op for op in p.ops if op.kind is OpKind.SOFTMAX)
    assert softmax.attrs.numeric_stable and softmax.attrs.dim == -1
    names = {p.tensors[t].name: p.tensors[t].spec for t in p.uploads}
    assert names["sdpa.scale=0.125"].shape == (1, 1, 1, 1)
    assert names["mask.repeat8"].shape == (1, 8, 64, 64)  # the repeat of a constant mask is const-evaluated


def test_grouped_query_attention_repeats_the_kv_heads_first():
    """The same test file's test 2: 32 query heads, 8 KV heads -> two repeat_interleave
    (dim 1, repeats 4) before the transpose."""
    p = lowered(attention((1, 32, 64, 64), (1, 8, 64, 64), (1, 1, 64, 64)), 0)
    rep = [op for op in p.ops if op.kind is OpKind.REPEAT_INTERLEAVE]
    assert [(op.attrs.dim, op.attrs.repeats) for op in rep] == [(1, 4), (1, 4)]
    assert kinds(p).index("ttnn.repeat_interleave") < kinds(p).index("ttnn.transpose")


def test_attention_is_one_sdpa_operation_above_level_0():
    p = lowered(attention((1, 8, 64, 64), (1, 8, 64, 64), (1, 1, 64, 64)), 1)
    assert "ttnn.transformer.scaled_dot_product_attention" in kinds(p)
    assert "ttnn.softmax" not in kinds(p)


def test_decode_attention_above_level_0_is_sdpa_decode_between_permutes():
    p = lowered(attention((1, 8, 1, 64), (1, 8, 128, 64), None, causal=True), 1)
    k = kinds(p)
    assert "ttnn.transformer.scaled_dot_product_attention_decode" in k
    sdpa = k.index("ttnn.transformer.scaled_dot_product_attention_decode")
    assert k[sdpa - 1] == "ttnn.permute" and k[sdpa + 1] == "ttnn.permute"


def test_cnn_at_level_0_runs_ttnn_batch_norm_on_the_nchw_conv_output():
    """Level 0 keeps the batch norm (TTIRToTTNN.cpp BatchNormInferenceOpConversionPattern):
    after the conv the flattened output is reshaped and permuted back to NCHW, its four
    [1, 32, 1, 1] statistics and parameters uploaded in TILE."""
    p = lowered(cnn(), 0)
    k = kinds(p)
    bn = k.index("ttnn.batch_norm")
    assert k[bn - 3:bn] == ["ttnn.conv2d", "ttnn.reshape", "ttnn.permute"] and "ttnn.multiply" not in k
    op = p.ops[bn]
    assert op.attrs.mean.shape == (1, 32, 1, 1) and op.attrs.bias is not None
    assert plan_tt(p, n150()).fits


def test_cnn_at_level_1_folds_the_batch_norm_and_runs_conv2d_with_tt_mlirs_config():
    p = lowered(cnn(), 1)
    convs = [op for op in p.ops if op.kind is OpKind.CONV2D]
    assert len(convs) == 2  # the 1x1 convolution is a linear (tt-metal's matmul path)
    for op in convs:
        assert isinstance(op.attrs, Conv2dAttrs) and op.attrs.config.config_tensors_in_dram
        assert op.attrs.config.shard_layout is not None and len(op.inputs) == 3  # bias: the folded shift
    assert "ttnn.multiply" not in kinds(p) and "ttnn.relu" not in kinds(p)  # BN folded, ReLU fused
    conv_in = p.tensors[convs[0].inputs[0]]
    assert conv_in.name.startswith("x.")  # the input permuted to NHWC, flattened, row-major
    assert plan_tt(p, n150()).fits


def test_cnn_at_level_2_fits_with_l1_outputs():
    p = lowered(cnn(), 2)
    assert any(op.out.buffer_type is BufferType.L1 for op in p.ops)
    assert plan_tt(p, n150()).fits


def test_transposed_convs_at_level_0_are_conv_transpose2d_with_the_bias_fused():
    """TTIRToTTNN.cpp ConvTranspose2dOpConversionPattern on the flattened input (here the
    conv2d's own flattened output, row-major again), the bias taken by TTIRFusing.cpp
    ConvAddBias<ConvTranspose2dOp>, the output padding the shapes imply ((32 - 1) x 2 - 2
    + 2 + 1 = 63, one row short of 64), config tensors in DRAM, the weights prepared as a
    conv2d's of C_in -> C_out: [1, 1, 2 x 2 x 32 (16 aligned), 32 (8 aligned)]."""
    p = lowered(upsampler(), 0)
    k = kinds(p)
    ups = [op for op in p.ops if op.kind is OpKind.CONV_TRANSPOSE2D]
    assert len(ups) == 2 and "ttnn.add" not in k
    first, second = ups
    assert k[first.index - 2:first.index] == ["ttnn.conv2d", "ttnn.to_layout"]
    assert [len(op.inputs) for op in ups] == [3, 2]
    assert isinstance(first.attrs, ConvTranspose2dAttrs) and isinstance(second.attrs, ConvTranspose2dAttrs)
    a, b = first.attrs, second.attrs
    assert (a.in_channels, a.out_channels, a.input_hw, a.kernel, a.stride, a.padding, a.output_padding) == \
        (16, 8, (16, 16), (2, 2), (2, 2), (0, 0), (0, 0))
    assert (b.input_hw, b.padding, b.output_padding, b.output_hw) == ((32, 32), (1, 1), (1, 1), (64, 64))
    assert a.config.config_tensors_in_dram and a.config.shard_layout is not None
    assert p.tensors[first.inputs[1]].spec.shape == (1, 1, 2 * 2 * 32, 32)
    assert first.compute.fp32_dest_acc_en  # level 0's compute config, as conv2d's
    # level 0 keeps the batch norm on the NCHW value the transposed conv's output is made
    bn = k.index("ttnn.batch_norm")
    assert k[first.index:bn] == ["ttnn.conv_transpose2d", "ttnn.reshape", "ttnn.permute"]
    assert plan_tt(p, n150()).fits


def test_transposed_convs_at_level_1_fold_the_batch_norm_and_reproduce_their_config():
    """ConvWithMultiply<ConvTranspose2dOp> folds the batch norm into the transposed conv
    (weights and bias const-evaluated); tt-mlir's override-conv2d-config applies to
    conv_transpose2d too (LegalOpConfigAnalysis.cpp), so the reproduce line names it."""
    from tileplan.targets.tenstorrent.frontends.tt_mlir.reproduce import output_specs, placement_overrides

    p = lowered(upsampler(), 1)
    k = kinds(p)
    assert "ttnn.batch_norm" not in k and "ttnn.multiply" not in k
    first = next(op for op in p.ops if op.kind is OpKind.CONV_TRANSPOSE2D)
    # the bias the importer reshaped to [1, 8, 1, 1], shifted by the batch norm
    assert len(first.inputs) == 3 and p.tensors[first.inputs[2]].name == "up.reshape+bn.batchnorm"
    lines = placement_overrides(p, output_specs(p, n150()), n150())
    convs = next(line for line in lines if line.startswith("override-conv2d-config="))
    assert f"{first.name}=weights_dtype#bf16:shard_layout#" in convs
    assert plan_tt(p, n150()).fits
