"""Attention that tt-xla's SDPA composite does not take (frontends/tt_mlir/torch_sdpa.py):
torch's math decomposition, float32 for a bfloat16 model, `_safe_softmax` and all, by
build (`sdpa_lowering`), fused back at levels 1 and 2 where tt-mlir's TTNN fusing does
(`sdpa_fusing`); `any` as `ttnn.sum`, tt-metal's composite `where` for an INVALID_BCAST,
equal scalar fulls shared."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from tileplan.errors import ModelError
from tileplan.model.ir import Program
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.context import Lowering, unroll
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import GraphBuilder, Node, TtnnGraph
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.frontends.tt_mlir.torch_sdpa import takes_composite, torch_decomposition
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.tiles import DataType
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.versions import AttentionMask, SdpaFusing, SdpaLowering, Stack, software_at

from tt_mlir_support import LLAMA, attention, config_program

BF16, BOOL = Precision("BF16"), Precision("Bool")


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> Program:
    """Two layers, 4 query heads over 2 key / value heads, 64 tokens: transformers' boolean mask."""
    return config_program(LLAMA, tmp_path_factory.mktemp("llama"), 64)


def _lowered(program: Program, version: str | None = None, level: int = 0) -> TtnnGraph:
    return lower_graph(program, TtMlirOptions(opt_level=level), load_device("n150", version=version))


def _out(g: TtnnGraph, node: Node) -> tuple[tuple[int, ...], DataType]:
    value = g.values[node.outputs[0]]
    return value.shape, value.dtype


def _lowering(program: Program, version: str, **options: object) -> Lowering:
    device = load_device("n150", version=version)
    return Lowering(program, TtMlirOptions(opt_level=0, **options), device, op_target(device),  # type: ignore[arg-type]
                    GraphBuilder(program.name), unroll(program))


def _sdpa(program: Program):
    return next(op for op in program.operations() if op.kind == "sdpa")


@pytest.mark.parametrize("date, rule, fusing", [
    ("2025-09-01", SdpaLowering.UNKNOWN, SdpaFusing.NONE), ("2025-09-02", SdpaLowering.TORCH, SdpaFusing.NONE),
    ("2025-12-22", SdpaLowering.TORCH, SdpaFusing.OPTIMIZER),
    ("2026-04-15", SdpaLowering.COMPOSITE, SdpaFusing.OPTIMIZER),
    ("2026-06-29", SdpaLowering.COMPOSITE_BOOL, SdpaFusing.OPTIMIZER),
    ("2026-06-30", SdpaLowering.COMPOSITE, SdpaFusing.OPTIMIZER)])
def test_the_rules_follow_the_builds(date, rule, fusing):
    software = software_at(date, Stack.TT_MLIR)
    assert (software.sdpa_lowering, software.sdpa_fusing) == (rule, fusing)


def test_the_composite_takes_bf16_inputs_and_a_bf16_or_no_mask():
    rule, mask = SdpaLowering.COMPOSITE, AttentionMask
    assert rule.composite(True, mask.NONE) and rule.composite(True, mask.BFLOAT16)
    assert not rule.composite(True, mask.BOOLEAN) and not rule.composite(False, mask.NONE)
    assert not rule.composite(True, mask.OTHER)
    assert SdpaLowering.COMPOSITE_BOOL.composite(True, mask.BOOLEAN)
    assert not SdpaLowering.TORCH.composite(True, mask.NONE)


def test_a_hugging_face_decoders_boolean_mask_keeps_torchs_decomposition(llama):
    op = _sdpa(llama)
    precisions = {o.output: o.output_precision for o in llama.operations()}
    assert precisions[op.inputs[3]] == BOOL
    for version, composite in (("2026-07-15", False), ("2026-03-20", False)):
        lw = _lowering(llama, version)
        assert takes_composite(lw, op) is composite


def test_float32_activations_keep_torchs_decomposition():
    program = attention((1, 4, 64, 64), (1, 4, 64, 64), None)
    assert takes_composite(_lowering(program, "2026-07-15"), _sdpa(program))
    assert not takes_composite(_lowering(program, "2026-07-15", activations=DataType.FLOAT32), _sdpa(program))


def test_the_decomposition_is_aten_math_in_float32(llama):
    op = _sdpa(llama)
    shapes = {t.name: t.shape for t in llama.tensors} | {o.output: o.output_shape for o in llama.operations()}
    precisions = {t.name: t.precision for t in llama.tensors} | {o.output: o.output_precision
                                                                  for o in llama.operations()}
    ops = torch_decomposition(op, shapes, precisions)
    assert [o.kind for o in ops] == [
        "fill", "where",  # the additive mask where(mask, 0, -inf), made once
        "cast", "cast", "cast", "mul", "transpose", "mul", "matmul", "add", "softmax",
        "eq", "not", "reduce_any", "where", "matmul", "cast"]
    by_name = {o.name.rsplit(".", 1)[-1]: o for o in ops}
    assert by_name["qk"].output_shape == (1, 4, 64, 64) and by_name["qk"].output_precision.name == "F32"
    assert by_name["q_scale"].attrs == (("scalar", pytest.approx(64 ** -0.25)),)
    assert ops[-1].output == op.output and ops[-1].output_precision == BF16
    # a mask already made is read, not made again
    again = torch_decomposition(op, shapes | {f"{op.inputs[3]}.additive": (1, 1, 64, 64)}, precisions)
    assert [o.kind for o in again][:2] == ["cast", "cast"]


def test_at_level_0_the_scores_are_float32_and_the_mask_shared_by_the_layers(llama):
    p = _lowered(llama)
    counts = Counter(op.kind for op in p.nodes)
    assert OpKind.SDPA not in counts and counts[OpKind.SOFTMAX] == 2 and counts[OpKind.SUM] == 2
    scores = [_out(p, op) for op in p.nodes if op.kind is OpKind.MATMUL and op.name.endswith(".qk")]
    assert scores == [((1, 4, 64, 64), DataType.FLOAT32)] * 2
    additive = [t for t in p.tensors if t.name.endswith(".additive")]
    assert len(additive) == 1  # one boolean mask: one additive mask for both layers


def test_at_level_1_tt_mlirs_fusing_takes_it_back_to_one_sdpa(llama):
    fused = Counter(op.kind for op in _lowered(llama, level=1).nodes)
    assert fused[OpKind.SDPA] == 2 and OpKind.SOFTMAX not in fused
    before = Counter(op.kind for op in _lowered(llama, "2025-12-18", level=1).nodes)
    assert OpKind.SDPA not in before and before[OpKind.SOFTMAX] == 2


def test_a_bf16_mask_keeps_the_composite():
    p = _lowered(attention((1, 4, 64, 64), (1, 4, 64, 64), (1, 1, 64, 64)))
    assert {_out(p, op)[1] for op in p.nodes if op.kind is OpKind.MATMUL} == {DataType.BFLOAT16}
    # before the composite (2026-04-15) the same attention is torch's, in float32
    before = _lowered(attention((1, 4, 64, 64), (1, 4, 64, 64), (1, 1, 64, 64)), "2026-03-20")
    assert {_out(before, op)[1] for op in before.nodes if op.kind is OpKind.MATMUL} == {DataType.FLOAT32}


def test_the_safe_softmax_where_is_tt_metals_composite_on_implicit_broadcasts(llama):
    p = _lowered(llama)
    names = [(op.kind, op.name) for op in p.nodes if ".safe_softmax" in op.name]
    # [1, 4, 64, 1], [1, 4, 64, 64] and a one-element zero: INVALID_BCAST -> where_impl
    assert [k for k, _ in names] == [OpKind.GTZ, OpKind.MULTIPLY, OpKind.LEZ, OpKind.MULTIPLY, OpKind.ADD] * 2


def test_on_explicit_broadcasts_equal_scalar_fulls_are_one(llama):
    p = _lowered(llama, "2025-12-18")
    assert OpKind.WHERE in {op.kind for op in p.nodes}
    fulls = [(t.name, p.values[t.id].shape) for t in p.tensors if t.name.startswith("full=")]
    assert fulls == [("full=0", (1, 4, 64, 64))]


def test_an_unknown_build_refuses_attention_in_one_line(llama):
    device = load_device("n150")
    early = dataclasses.replace(device, software=dataclasses.replace(device.software,
                                                                      sdpa_lowering=SdpaLowering.UNKNOWN))
    with pytest.raises(ModelError, match="pick a later --tt-version"):
        lower(llama, TtMlirOptions(opt_level=0), early)


def test_is_causal_without_a_mask_adds_the_lower_triangle_and_gqa_repeats_in_float32():
    """Before the composite (2026-03-20), `is_causal` with 2 key / value heads for 4 query
    heads: the math kernel's tril of ones made additive (a constant [Sq, Sk]) and K and V
    repeated after their float32 cast (`enable_gqa`)."""
    g = _lowered(attention((1, 4, 64, 64), (1, 2, 64, 64), None, causal=True), "2026-03-20")
    add = next(n for n in g.nodes if n.name == "attention.mask_add")
    assert [(g.tensors[t].name, g.values[t].shape) for t in add.inputs][1] == \
        ("sdpa.causal_mask.64x64.additive", (64, 64))
    repeats = [_out(g, n) for n in g.nodes if n.kind is OpKind.REPEAT_INTERLEAVE]
    assert repeats == [((1, 4, 64, 64), DataType.FLOAT32)] * 2
