"""The operator contract (issue 17), family by family: each lowering's steps, scratch
and exchange flags against a hand computation on small shapes, and the facts an
operator owns (dtype rule, weight inputs, commutativity, view-ness).

The machine is IPU21 with 4 tiles (`TILES4`) unless a case says otherwise. A tensor no
operation lays out is spread linearly over the 4 tiles in 8-byte blocks: 4 F16
elements a block, blocks shared out as evenly as can be. So a [1, 8, 16] F16 tensor
(128 elements, 32 blocks) has 8 blocks = 32 elements on each tile; [2, 4, 4] (32
elements, 8 blocks) 2 blocks = 8 elements; [1, 8] (8 elements, 2 blocks) at most 1
block = 4 elements. Each case writes the arithmetic out in its comments.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, Operand, StepKind, ValueKind
from tileplan.kernel.gemm import GemmPartition
from tileplan.kernel.layouts import linear_layout
from tileplan.kernel.options import AttentionProducts, Options
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout, Padding
from tileplan.model.machine import IPU21, Machine
from tileplan.model.precision import F16, Precision
from tileplan.ops import REGISTRY, InputInfo, OpPlan, infer_dtype, infer_shape

TILES4 = replace(IPU21, name="tiles4", tile_count=4)
TILE1 = replace(IPU21, name="tile1", tile_count=1)
DEFAULTS = Options()
F8 = Precision("F8F143", -4)
I32 = Precision("I32")


def spread(machine: Machine, precision: Precision) -> Layout:
    return linear_layout(machine.tile_count, precision.bytes, machine.class_prefix, Padding.ZERO)


def lower(kind: str, ins: list[tuple[tuple[int, ...], Precision]], attrs: dict[str, Any] | None = None, *,
          machine: Machine = TILES4, options: Options = DEFAULTS, where: str = "spread",
          dies: bool = False, precision: Precision = F16) -> tuple[OpPlan, Fragment]:
    """Plan and lower one operation. Inputs rest spread over the tiles (`where`
    "spread") or where the plan wants them ("wanted"; spread where it has no wish);
    none is a declared tensor; every input dies here when `dies`."""
    op = Operation(0, 0, kind, "op", tuple(f"in{i}" for i in range(len(ins))), "op.out", (1,), precision,
                   tuple(sorted((attrs or {}).items())))
    op = replace(op, output_shape=infer_shape(op, [s for s, _ in ins]))
    k = Kernel(machine, options)
    plan = REGISTRY[kind].plan(k, op, [InputInfo(s, p, spread(machine, p), False) for s, p in ins])
    layouts = [spread(machine, p) if where == "spread" or w is None else w
               for (_, p), w in zip(ins, plan.wanted + (None,) * len(ins))]
    operands = [[Operand(layout, s, p, None, False, f"in{i}")] for i, ((s, p), layout) in enumerate(zip(ins, layouts))]
    return plan, REGISTRY[kind].lower(k, op, plan, operands, tuple(dies for _ in ins))


def steps(fragment: Fragment) -> list[tuple[str, dict[str, int], bool]]:
    """Each step's kind, scratch per region and exchange flag."""
    return [(s.kind.value, dict(s.scratch), s.exchange) for s in fragment.steps]


# matmul ---------------------------------------------------------------------------------

def test_gemm_sums_its_k_partials_with_pk_plus_one_slices_of_f32():
    # [1, 16, 64] x [64, 2], F16 on 4 tiles (AMP: 16 rows, 16 input channels, F32 partials).
    # M is one block of 16 rows and N one column pair, so only K can split: pk = 4 gives
    # k_tile 16 and 16 x 16 x 8 (N in whole AMP passes of 8) = 2048 MACs a tile, half of
    # pk = 2's: the split is pm 1 x pk 4 x pn 1.
    plan, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F16)], where="wanted")
    p = plan.detail
    assert isinstance(p, GemmPartition) and (p.pm, p.pk, p.pn) == (1, 4, 1)
    # temporary: left (16 x 16) and weight (16 x 2) blocks in F16, partials (16 x 2) in F32
    assert plan.temporary == (16 * 16 + 16 * 2) * 2 + 16 * 2 * 4 == 704
    # The output's N axis has pk x pn = 4 partitions of one pair: a tile holds at most
    # 16 rows x 2 columns = 32 elements. Sum: (pk + 1) x 32 x 4 B (F32) = 640.
    assert steps(fragment) == [("Gemm", {}, False), ("Sum", {"standard": 5 * 32 * 4}, True)]
    assert [v.kind for v in fragment.values] == [ValueKind.RESULT, ValueKind.RESULT]
    assert [v.label for v in fragment.values] == ["", "partials"]


def test_gemm_converts_its_left_operand_to_the_weights_precision_in_place_when_it_dies():
    _, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F8)], where="wanted", dies=True)
    converted = fragment.values[0]
    assert converted.kind is ValueKind.CONVERTED and converted.precision == F8
    assert converted.storage == converted.of  # F8 is narrower than F16 and x dies: written in place
    # F8 x F8 accumulates in F16 = the output's precision; K still splits in 2 (32 input
    # channels a block: 64 = 2 blocks) so a Sum remains: (2 + 1) x 32 x 2 B (F16) = 192.
    assert steps(fragment)[0] == ("Convert", {}, False)
    assert steps(fragment)[-1] == ("Sum", {"standard": 3 * 32 * 2}, True)


def test_gemm_copies_operands_that_rest_elsewhere_into_the_amp_layouts():
    _, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F16)])
    assert [s[0] for s in steps(fragment)] == ["Copy", "Copy", "Gemm", "Sum"]
    copies = [v for v in fragment.values if v.kind is ValueKind.COPY]
    assert [(v.label, v.operand) for v in copies] == [("AMP copy", None), ("AMP copy", 1)]  # weights by operand


def test_a_batched_product_receives_the_rows_and_columns_its_output_run_needs():
    # [2, 4, 8] x [2, 8, 4] -> [2, 4, 4]: 32 elements spread, e = 8 a tile. A run of 8
    # elements of rows of N = 4 touches r = min(8 rows, ceil(8 / 4) + 1) = 3 rows and
    # c = min(4, 8) = 4 columns: 3 x 8 + 8 x 4 F16 elements received, 8 F32 partials.
    _, fragment = lower("matmul", [((2, 4, 8), F16), ((2, 8, 4), F16)])
    assert steps(fragment) == [("BatchedGemm", {"standard": 3 * 8 * 2 + 8 * 4 * 2 + 8 * 4}, True)]


# elementwise ----------------------------------------------------------------------------

def test_a_broadcast_operand_of_a_spread_output_is_received_as_scratch():
    # x [1, 8, 16] spread (32 elements a tile) + b [16]: each tile receives at most
    # min(16, 32) = 16 elements of b, 32 B, and the step exchanges.
    _, fragment = lower("add", [((1, 8, 16), F16), ((16,), F16)], dies=True)
    assert steps(fragment) == [("Binary", {"standard": 16 * 2}, True)]
    assert fragment.steps[0].text == "Binary { op: Add, broadcast: true, in_place: true, exchange: true }"
    assert fragment.values[0].storage is not None  # x dies: the sum is written over it


def test_unary_and_same_shape_binary_steps_have_no_scratch():
    _, fragment = lower("gelu", [((1, 8, 16), F16)], {"approximate": "tanh"})
    assert steps(fragment) == [("Unary", {}, False)]
    assert fragment.values[0].storage is None  # its input does not die
    _, fragment = lower("mul", [((1, 8, 16), F16), ((1, 8, 16), F16)])
    assert steps(fragment) == [("Binary", {}, False)]
    # where: the output takes the condition's layout (its first full-shape input), a
    # Bool spread of 8 elements a block; x, spread in blocks of 4, is copied into it
    _, fragment = lower("where", [((1, 8, 16), Precision("Bool")), ((1, 8, 16), F16)], {"scalar": 0.0})
    assert steps(fragment) == [("Copy", {}, True), ("Select", {}, False)]


# norms ----------------------------------------------------------------------------------

def test_layernorm_of_a_spread_input():
    # x [1, 8, 16] spread: 32 elements a tile, cut anywhere, so a tile touches up to
    # ceil(32 / 16) + 1 = 3 rows, each split over min(4 tiles, 16) = 4 partitions.
    # Statistics (sum and sum of squares, F32): 2 x 4 B x 3 rows = 24 B, with the tree
    # (min(4, 16) + 1) x 24 = 120. Normalize: 24 + scale and bias received, each
    # min(16, 32) = 16 F16 elements: 24 + 2 x 32 = 88.
    _, fragment = lower("layernorm", [((1, 8, 16), F16), ((16,), F16), ((16,), F16)])
    assert steps(fragment) == [("LayerNorm", {"standard": 120}, True), ("LayerNorm", {"standard": 88}, True)]


def test_rmsnorm_keeps_one_statistic():
    # as layernorm with 1 statistic: 4 B x 3 rows = 12; 5 x 12 = 60; 12 + 32 = 44
    _, fragment = lower("rmsnorm", [((1, 8, 16), F16), ((16,), F16)])
    assert steps(fragment) == [("RmsNorm", {"standard": 60}, True), ("RmsNorm", {"standard": 44}, True)]


def test_batchnorm_receives_its_four_channel_vectors():
    # x [2, 4, 2, 2] spread: 32 elements, 8 a tile; 4 vectors of C = 4, each
    # min(4, 8) = 4 F16 elements received: 4 x 4 x 2 B = 32.
    vectors = [((4,), F16)] * 4
    _, fragment = lower("batchnorm", [((2, 4, 2, 2), F16), *vectors])
    assert steps(fragment) == [("BatchNorm", {"standard": 32}, True)]


# reductions and softmax -----------------------------------------------------------------

def test_reduce_keeps_partials_and_a_stage():
    # [1, 8, 16] summed over the last axis -> [1, 8], spread: at most 4 outputs a tile.
    # Partials: min(8 outputs, 32 input elements) = 8; stage: min(16, 4 tiles) x 4 = 16;
    # (8 + 16) x 4 B = 96.
    _, fragment = lower("reduce_sum", [((1, 8, 16), F16)], {"axes": (-1,)})
    assert steps(fragment) == [("Reduce", {"standard": 96}, True)]


def test_softmax_and_cumsum_along_rows():
    # rows as for layernorm: 3 rows a tile over 4 partitions. Softmax: max and sum in
    # F32 with the tree, (4 + 1) x 3 x 2 x 4 B = 120. Cumsum: a running total a row, 3 x 4 = 12.
    _, fragment = lower("softmax", [((1, 8, 16), F16)], {"axis": -1})
    assert steps(fragment) == [("Softmax", {"standard": 120}, True)]
    _, fragment = lower("cumsum", [((1, 8, 16), F16)], {"axis": -1})
    assert steps(fragment) == [("Scan", {"standard": 12}, True)]


# lookups --------------------------------------------------------------------------------

def test_gather_receives_the_indices_and_holds_its_looked_up_rows():
    # table [10, 16] F16, indices [3] -> [3, 16]: 48 elements spread, 12 a tile.
    # 3 indices x 4 B + 12 x 2 B = 36.
    _, fragment = lower("gather", [((10, 16), F16), ((3,), I32)], {"axis": 0})
    assert steps(fragment) == [("Gather", {"standard": 3 * 4 + 12 * 2}, True)]
    _, fragment = lower("index", [((10, 16), F16), ((3,), I32)], {"axes": (0,)})
    assert steps(fragment) == [("Gather", {"standard": 3 * 4 + 12 * 2}, True)]


# views ----------------------------------------------------------------------------------

def test_a_view_that_keeps_the_layout_shares_its_input_and_a_real_one_copies():
    _, fragment = lower("reshape", [((1, 8, 16), F16)], {"shape": (8, 16)})
    assert steps(fragment) == [("View", {}, False)]
    assert fragment.values[0].kind is ValueKind.VIEW and fragment.values[0].storage == fragment.values[0].of
    # a transpose changes a linear spread's element order: a Copy, exchanging, no scratch
    _, fragment = lower("transpose", [((1, 8, 16), F16)], {"perm": (0, 2, 1)})
    assert steps(fragment) == [("Copy", {}, True)]
    _, fragment = lower("concat", [((1, 8, 16), F16), ((1, 8, 16), F16)], {"axis": 1})
    assert steps(fragment) == [("Concat", {}, True)]
    _, fragment = lower("fill", [], {"shape": (4, 4)})
    assert steps(fragment) == [("Fill", {}, False)]


# convolution and pooling ----------------------------------------------------------------

def test_a_convolution_is_its_implicit_gemm():
    # x [1, 2, 4, 4], w [4, 2, 2, 2], stride 2 -> [1, 4, 2, 2] on one tile: M = 2 x 2
    # positions, K = 2 x 2 x 2, N = 4, one partition each. F16 accumulates in F32, so
    # the Sum stays: (1 + 1) x 16 output elements x 4 B, plus the bias added, min(4, 16)
    # x 2 B: 128 + 8 = 136.
    plan, fragment = lower("conv", [((1, 2, 4, 4), F16), ((4, 2, 2, 2), F16), ((4,), F16)],
                           {"strides": (2, 2)}, machine=TILE1)
    assert (plan.detail.pm, plan.detail.pk, plan.detail.pn) == (1, 1, 1)
    assert steps(fragment) == [("Copy", {}, True), ("Copy", {}, True), ("Gemm", {}, False),
                               ("Sum", {"standard": 2 * 16 * 4 + 4 * 2}, True)]
    assert [v.label for v in fragment.values] == ["expanded", "AMP copy", "partials", ""]


def test_a_depthwise_convolution_receives_windows_and_weights():
    # x [1, 2, 4, 4], w [2, 1, 3, 3], 2 groups, pads 1 -> [1, 2, 4, 4]: 32 elements
    # spread, e = 8 a tile; a window of 1 x 3 x 3 = 9. Input min(32, 8 x 9) = 32, weights
    # min(18, 72) = 18, both F16; 8 F32 partials: 64 + 36 + 32 = 132.
    _, fragment = lower("conv", [((1, 2, 4, 4), F16), ((2, 1, 3, 3), F16)], {"groups": 2, "pads": (1, 1, 1, 1)})
    assert steps(fragment) == [("GroupedConv", {"standard": 32 * 2 + 18 * 2 + 8 * 4}, True)]


def test_pooling_receives_its_windows():
    # [1, 2, 4, 4] max-pooled 2 x 2, stride 2 -> [1, 2, 2, 2]: 8 elements spread, at
    # most 4 a tile; input min(32, 4 x 4) = 16 F16 elements + 4 F32 partials = 48.
    _, fragment = lower("maxpool", [((1, 2, 4, 4), F16)], {"kernel": (2, 2), "strides": (2, 2)})
    assert steps(fragment) == [("Pool", {"standard": 16 * 2 + 4 * 4}, True)]


# attention ------------------------------------------------------------------------------

def test_attention_materialized_and_streamed():
    # packed qkv [1, 8, 24]: D = 8, 2 heads of 4. 4 tiles = gcd(2, 4) = 2 head
    # partitions x 2 query partitions: hb = 1 head and rows = 4 queries a tile, keys = 8.
    # Gathered keys (or values): 1 x 8 x 4 x 2 B = 64; scores 1 x 4 x 8 x 2 B = 64, so
    # materialized needs 128 a tile against streamed's 1 x (2 x 8 x 4 x 2 + 4 x 8 x 4 +
    # 4 x 4 x 4 + 4 x 2 x 4) = 352: Automatic materializes. Softmax: 1 x 4 rows x 2 x 4 B = 32.
    _, fragment = lower("attention", [((1, 8, 24), F16)], {"heads": 2})
    assert steps(fragment) == [("Copy", {}, True), ("AttentionScores", {"standard": 64}, True),
                               ("Softmax", {"standard": 32}, False), ("AttentionValues", {"standard": 64}, True)]
    streamed = Options(attention_products=AttentionProducts.STREAMED)
    _, fragment = lower("attention", [((1, 8, 24), F16)], {"heads": 2}, options=streamed)
    assert steps(fragment) == [("Copy", {}, True), ("AttentionStreamed", {"standard": 352}, True)]


def test_sdpa_charges_its_mask_rows_to_the_scores_step():
    # q, k, v [1, 2, 8, 4]: the same grid and sizes as above; a mask [8, 8] F16 has no
    # head dimension (1 head's worth): min(4 rows, 8) x 8 keys x 2 B = 64 more.
    qkv = [((1, 2, 8, 4), F16)] * 3
    _, fragment = lower("sdpa", [*qkv, ((8, 8), F16)], where="wanted")
    assert steps(fragment) == [("AttentionScores", {"standard": 64 + 64}, True), ("Softmax", {"standard": 32}, False),
                               ("AttentionValues", {"standard": 64}, True)]


# what an operator owns ------------------------------------------------------------------

@pytest.mark.parametrize("kind, classes, dtype", [
    ("add", ["float", "float"], "float"), ("add", ["int", "int"], "int"), ("lt", ["float", "float"], "bool"),
    ("not", ["bool"], "bool"), ("isnan", ["float"], "bool"), ("argmax", ["float"], "int"),
    ("reduce_sum", ["float"], "float"), ("where", ["bool", "float", "float"], "float"),
    ("gather", ["float", "int"], "float"), ("matmul", ["float", "float"], "float"),
])
def test_dtype_rules(kind: str, classes: list[str], dtype: str):
    attrs = {"argmax": (("axes", None),), "reduce_sum": (("axes", None),)}.get(kind, ())
    op = Operation(0, 0, kind, "op", tuple(f"in{i}" for i in range(len(classes))), "out", (1,), F16, attrs)
    assert infer_dtype(op, classes) == dtype


def test_weight_inputs_commutativity_and_views_are_the_operators_own():
    weights = {kind for kind, d in REGISTRY.items() if d.weight_inputs}
    assert weights == {"matmul", "conv", "matmul_grad_input", "conv_grad_input"}  # training's dX = dY W^T
    assert REGISTRY["matmul"].weight_inputs == REGISTRY["conv"].weight_inputs == (1,)
    commutative = {kind for kind, d in REGISTRY.items() if d.commutative}
    assert commutative == {"add", "mul", "eq", "ne", "and", "or", "xor", "maximum", "minimum"}
    # restore and send: a pipeline's stash slot read in place, a tensor sent to another IPU
    assert {kind for kind, d in REGISTRY.items() if d.view} == {"reshape", "transpose", "slice", "alias", "restore",
                                                                "send"}


def test_every_lowering_states_its_scratch_and_every_step_kind_is_a_text_head():
    silent = sorted({e.lower.__qualname__ for e in REGISTRY.values() if "cratch" not in (e.lower.__doc__ or "")})
    assert silent == []
    assert len({k.value for k in StepKind}) == len(StepKind)
