"""The operator contract, family by family: each lowering's steps, scratch
and exchange flags against a hand computation on small shapes, and the facts an
operator owns (dtype rule, weight inputs, commutativity, view-ness).

The machine is IPU21 with 4 tiles (`TILES4`) unless a case says otherwise. A tensor no
operation lays out is spread linearly over the 4 tiles in 8-byte blocks: 4 F16
elements a block, blocks shared out as evenly as can be. So a [1, 8, 16] F16 tensor
(128 elements, 32 blocks) has 8 blocks = 32 elements on each tile; [2, 4, 4] (32
elements, 8 blocks) 2 blocks = 8 elements; [1, 8] (8 elements, 2 blocks) at most 1
block = 4 elements. Each case writes the arithmetic out in its comments.

Matmuls with 2-D weights and convolutions lower two ways: with the default policy as
poplin plans them (`tileplan.kernel.convplan`, one `Matmul` or `Conv` step whose
scratch is the plan's temporary bytes), with the reference policy through the
reference's GEMM partitioner (Convert, Copy into the AMP's layouts, Gemm, Sum; an
im2col copy for a convolution): `lower(..., poplibs=False)` is the latter. On IPU21
in F16 the AMP takes 16 input channels and 8 output channels a pass and accumulates
in F32; in F8, 32 and 16, accumulating in F16.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tileplan.kernel.context import Kernel
from tileplan.kernel.fragment import Fragment, Operand, StepKind, ValueKind
from tileplan.kernel.convplan import ConvPartition
from tileplan.kernel.gemm import GemmPartition
from tileplan.kernel.layouts import linear_layout
from tileplan.kernel.options import AttentionProducts, Kernels, Options
from tileplan.model.ir import Operation
from tileplan.model.layout import Layout, Padding, Spread
from tileplan.model.machine import IPU21, Machine
from tileplan.model.precision import F16, Precision
from tileplan.model.tiling import shards_of
from tileplan.ops import REGISTRY, InputInfo, OpPlan, infer_dtype, infer_shape
from tileplan.ops.attention import AttentionGrid, SdpaGrid
from tileplan.ops.conv import GROUPED, GroupedConvolution
from tileplan.ops.elementwise import Broadcast
from tileplan.ops.matmul import BATCHED, BatchedProduct

TILES4 = replace(IPU21, name="tiles4", tile_count=4)
TILE1 = replace(IPU21, name="tile1", tile_count=1)
DEFAULTS = Options()
F8 = Precision("F8F143", -4)
I32 = Precision("I32")


def spread(machine: Machine, precision: Precision) -> Layout:
    return linear_layout(machine.tile_count, precision.bytes, machine.class_prefix, Padding.ZERO)


def lower(kind: str, ins: list[tuple[tuple[int, ...], Precision]], attrs: dict[str, Any] | None = None, *,
          machine: Machine = TILES4, options: Options = DEFAULTS, where: str = "spread",
          dies: bool = False, precision: Precision = F16, poplibs: bool = True,
          declared: bool = False) -> tuple[OpPlan, Fragment]:
    """Plan and lower one operation. Inputs rest spread over the tiles (`where`
    "spread"), where the plan wants them ("wanted"; spread where it has no wish) or
    where the policy would create them from the plan ("rest": the plan's resting
    layout, spread where it has none); declared tensors (`declared`: never written in
    place) or not; every input dies here when `dies`. `poplibs`: the default policy's
    kernel (False: the reference policy's)."""
    op = Operation(0, 0, kind, "op", tuple(f"in{i}" for i in range(len(ins))), "op.out", (1,), precision,
                   tuple(sorted((attrs or {}).items())))
    op = replace(op, output_shape=infer_shape(op, [s for s, _ in ins]))
    k = Kernel(machine, options, Kernels.POPLIBS if poplibs else Kernels.REFERENCE)
    plan = REGISTRY[kind].plan(k, op, [InputInfo(s, p, spread(machine, p), False) for s, p in ins])
    chosen = {"spread": (None,) * len(ins), "wanted": plan.wanted, "rest": plan.rest}[where]
    layouts = [spread(machine, p) if w is None else w for (_, p), w in zip(ins, chosen + (None,) * len(ins))]
    operands = [[Operand(layout, s, p, None, declared, f"in{i}")]
                for i, ((s, p), layout) in enumerate(zip(ins, layouts))]
    return plan, REGISTRY[kind].lower(k, op, plan, operands, tuple(dies for _ in ins))


def steps(fragment: Fragment) -> list[tuple[str, dict[str, int], bool]]:
    """Each step's kind, scratch per region and exchange flag."""
    return [(s.kind.value, dict(s.scratch), s.exchange) for s in fragment.steps]


# matmul ---------------------------------------------------------------------------------

def test_gemm_sums_its_k_partials_with_pk_plus_one_slices_of_f32():
    # The reference policy's lowering.
    # [1, 16, 64] x [64, 2], F16 on 4 tiles (AMP: 16 rows, 16 input channels, F32 partials).
    # M is one block of 16 rows and N one column pair, so only K can split: pk = 4 gives
    # k_tile 16 and 16 x 16 x 8 (N in whole AMP passes of 8) = 2048 MACs a tile, half of
    # pk = 2's: the split is pm 1 x pk 4 x pn 1.
    plan, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F16)], where="wanted", poplibs=False)
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
    # The reference policy's lowering.
    _, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F8)], where="wanted", dies=True, poplibs=False)
    converted = fragment.values[0]
    assert converted.kind is ValueKind.CONVERTED and converted.precision == F8
    assert converted.storage == converted.of  # F8 is narrower than F16 and x dies: written in place
    # F8 x F8 accumulates in F16 = the output's precision; K still splits in 2 (32 input
    # channels a block: 64 = 2 blocks) so a Sum remains: (2 + 1) x 32 x 2 B (F16) = 192.
    assert steps(fragment)[0] == ("Convert", {}, False)
    assert steps(fragment)[-1] == ("Sum", {"standard": 3 * 32 * 2}, True)


def test_gemm_copies_operands_that_rest_elsewhere_into_the_amp_layouts():
    # The reference policy's lowering.
    _, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F16)], poplibs=False)
    assert [s[0] for s in steps(fragment)] == ["Copy", "Copy", "Gemm", "Sum"]
    copies = [v for v in fragment.values if v.kind is ValueKind.COPY]
    assert [(v.label, v.operand) for v in copies] == [("AMP copy", None), ("AMP copy", 1)]  # weights by operand


def test_a_matmul_is_one_step_as_poplin_plans_it():
    # The default policy's lowering. [1, 64, 16] x [16, 8], F16 on 4 tiles, both operands
    # spread. Partitions of M x K x N over 4 tiles, cycles as convplan counts them (each
    # AMP block of 16 x 8 channels, padded to the grains, 174 cycles and 2 a row; received
    # bytes at 4 a cycle, 2000 a serial iteration, a K split's partials reduced):
    #   M/4: one block of 16 rows, 174 + 32 = 206, receives 16 x 16 + 16 x 8 (the weights
    #        are broadcast when rows split) F16 = 768 B: 192; 2398 in all
    #   M/2 x N/2: 238 + 320 + 2000 = 2558; M/2 x K/2: 238 + 320 + reduction 128 + 2000
    #   = 2686; K/4 (4 channels padded to 16): 302 + 512 + 384 + 2000 = 3198; N/4 (2
    #   padded to 8): 302 + 512 + 2000 = 2814; K/2 x N/2: 3070
    # so M/4. Per tile: the row block 16 x 16, the weight block 16 x 8, partials 16 x 8:
    # temporary (256 + 128) x 2 B + 128 x 4 B = 1280.
    plan, fragment = lower("matmul", [((1, 64, 16), F16), ((16, 8), F16)])
    cp = plan.detail
    assert isinstance(cp, ConvPartition)
    assert (cp.batch_split, cp.in_split, cp.out_split, cp.serial) == (4, 1, 1, 1)
    assert (cp.input_elements, cp.weight_elements, cp.partial_elements) == (16 * 16, 16 * 8, 16 * 8)
    assert plan.temporary == cp.temp_bytes == (256 + 128) * 2 + 128 * 4 == 1280
    # rows split: the weights are not created in the plan's layout (each tile receives
    # its block); the output spread; one exchanging step, poplin's temporaries as scratch:
    # the blocks in standard memory, the partials in interleaved (N not split: the input
    # is read where it rests; K not split: no reduction)
    assert plan.rest == (None, None)
    assert steps(fragment) == [("Matmul", {"standard": 256 * 2 + 128 * 2, "interleaved": 128 * 4}, True)]
    assert [v.kind for v in fragment.values] == [ValueKind.RESULT]
    text = fragment.steps[0].text
    assert text.startswith("Matmul { multiply: F16, accumulate: F32, batch_split: 4, field_split: 1, in_split: 1, ")
    assert "temporary: 1280," in text


def test_weights_created_in_the_plan_s_layout_are_read_in_place():
    # [1, 2, 16] x [16, 64], F16 on 4 tiles: 2 rows cannot be split usefully, K is one
    # grain, so N splits 4 ways (16 columns, 2 passes of 8): row block 2 x 16, weight
    # block 16 x 16, partials 2 x 16: temporary (32 + 256) x 2 + 32 x 4 = 704. Rows are
    # not split, so the weights are created in the plan's layout (`createMatMulInputRHS`):
    # each tile holds its block, the step receives none. The input rests spread and N
    # splits: each tile keeps a rearranged copy of its share of the input, 32 / 4 x 2 B =
    # 16.
    plan, fragment = lower("matmul", [((1, 2, 16), F16), ((16, 64), F16)], where="rest")
    cp = plan.detail
    assert (cp.batch_split, cp.in_split, cp.out_split, cp.serial) == (1, 1, 4, 1)
    assert cp.temp_bytes == (2 * 16 + 16 * 16) * 2 + 2 * 16 * 4 == 704
    assert plan.rest[1] is not None and plan.rest[1].tiling.replicas == 1  # held once
    assert steps(fragment) == [("Matmul", {"standard": 2 * 16 * 2 + 16, "interleaved": 2 * 16 * 4}, True)]
    # the same weights resting spread instead: each tile receives its block, 16 x 16 x 2 B
    _, fragment = lower("matmul", [((1, 2, 16), F16), ((16, 64), F16)])
    assert steps(fragment) == [("Matmul", {"standard": 2 * 16 * 2 + 16 * 16 * 2 + 16,
                                           "interleaved": 2 * 16 * 4}, True)]


def test_a_k_split_reduces_its_partials_within_the_operands_buffers():
    # [1, 16, 64] x [64, 2], F16 on 4 tiles: K splits 4 ways (16 channels a tile), 16
    # rows, N padded to 8: blocks 16 x 16 and 16 x 8, partials 16 x 8 F32 = 512 B, the
    # same 512 B each tile receives to reduce them (poplin max's the phases:
    # max(768 + 512, 2 x 512) = 1280). With the weights in the plan's layout the step
    # holds the row block, 512 B, and the partials; the received partials fit in the
    # operands' buffers, free by then: nothing more.
    plan, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F16)], where="rest")
    cp = plan.detail
    assert (cp.batch_split, cp.in_split, cp.out_split) == (1, 4, 1) and cp.temp_bytes == 1280
    assert steps(fragment) == [("Matmul", {"standard": 16 * 16 * 2, "interleaved": 16 * 8 * 4}, True)]


def test_a_matmul_converts_its_left_operand_in_place_unless_it_is_a_declared_tensor():
    # F16 x F8 weights: x converted to F8 first (the AMP multiplies one precision), in
    # place when it dies here and is narrower, never over a declared tensor (the model's
    # input, a parameter: always live, never written in place)
    _, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F8)], dies=True)
    converted = fragment.values[0]
    assert converted.kind is ValueKind.CONVERTED and converted.precision == F8
    assert converted.storage == converted.of
    assert [s[0] for s in steps(fragment)] == ["Convert", "Matmul"]
    assert "multiply: F8F143 { scale_exponent: -4 }, accumulate: F16," in fragment.steps[1].text
    _, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F8)], dies=True, declared=True)
    assert fragment.values[0].kind is ValueKind.CONVERTED and fragment.values[0].storage is None
    _, fragment = lower("matmul", [((1, 16, 64), F16), ((64, 2), F8)], dies=False)
    assert fragment.values[0].storage is None  # read again later: converted apart


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


def test_an_output_no_input_has_the_shape_of_is_mapped_linearly_from_tile_0():
    # [8, 1] + [1, 64] -> [8, 64] F16 (1,024 B): popops finds no input to clone and maps
    # the output linearly with no minimum a tile, 8-byte grains from tile 0 (128 grains
    # over 4 tiles: 32 each); under the reference's kernels, the even spread
    plan, _ = lower("add", [((8, 1), F16), ((1, 64), F16)])
    assert isinstance(plan.detail, Broadcast) and plan.detail.lead is None
    (axis,) = plan.output.tiling.axes
    assert axis.spread is Spread.LEADING and axis.min_blocks == 1 and axis.block_size == 4
    assert shards_of(plan.output, (8, 64)).splits[0].block_counts == (32, 32, 32, 32)
    # on 1472 tiles the same 128 grains take the first 128 tiles, one each
    plan, _ = lower("add", [((8, 1), F16), ((1, 64), F16)], machine=replace(IPU21, tile_count=1472))
    counts = shards_of(plan.output, (8, 64)).splits[0].block_counts
    assert counts[:128] == (1,) * 128 and not any(counts[128:])
    plan, _ = lower("add", [((8, 1), F16), ((1, 64), F16)], poplibs=False)
    assert plan.output == spread(TILES4, F16)


def test_a_declared_tensor_is_never_written_in_place():
    # x [1, 8, 16] + y [1, 8, 16]: in place over x when x dies here, but not when x is a
    # declared tensor (a parameter is always live; the model's input is its caller's)
    _, fragment = lower("add", [((1, 8, 16), F16), ((1, 8, 16), F16)], dies=True)
    assert fragment.values[0].storage is not None and "in_place: true" in fragment.steps[0].text
    _, fragment = lower("add", [((1, 8, 16), F16), ((1, 8, 16), F16)], dies=True, declared=True)
    assert fragment.values[0].storage is None and "in_place: false" in fragment.steps[0].text


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
    # The reference policy's lowering (im2col: the input expanded into its [M, K] operand).
    # x [1, 2, 4, 4], w [4, 2, 2, 2], stride 2 -> [1, 4, 2, 2] on one tile: M = 2 x 2
    # positions, K = 2 x 2 x 2, N = 4, one partition each. F16 accumulates in F32, so
    # the Sum stays: (1 + 1) x 16 output elements x 4 B, plus the bias added, min(4, 16)
    # x 2 B: 128 + 8 = 136.
    plan, fragment = lower("conv", [((1, 2, 4, 4), F16), ((4, 2, 2, 2), F16), ((4,), F16)],
                           {"strides": (2, 2)}, machine=TILE1, poplibs=False)
    assert (plan.detail.pm, plan.detail.pk, plan.detail.pn) == (1, 1, 1)
    assert steps(fragment) == [("Copy", {}, True), ("Copy", {}, True), ("Gemm", {}, False),
                               ("Sum", {"standard": 2 * 16 * 4 + 4 * 2}, True)]
    assert [v.label for v in fragment.values] == ["expanded", "AMP copy", "partials", ""]


def test_a_depthwise_convolution_receives_windows_and_weights():
    # The reference policy's lowering.
    # x [1, 2, 4, 4], w [2, 1, 3, 3], 2 groups, pads 1 -> [1, 2, 4, 4]: 32 elements
    # spread, e = 8 a tile; a window of 1 x 3 x 3 = 9. Input min(32, 8 x 9) = 32, weights
    # min(18, 72) = 18, both F16; 8 F32 partials: 64 + 36 + 32 = 132.
    _, fragment = lower("conv", [((1, 2, 4, 4), F16), ((2, 1, 3, 3), F16)], {"groups": 2, "pads": (1, 1, 1, 1)},
                        poplibs=False)
    assert steps(fragment) == [("GroupedConv", {"standard": 32 * 2 + 18 * 2 + 8 * 4}, True)]


def test_a_convolution_is_one_step_as_poplin_plans_it():
    # The default policy's lowering: no im2col. x [1, 16, 4, 4], w [4, 16, 2, 2], stride
    # 2, bias [4] -> [1, 4, 2, 2] on one tile: no split; 16 input channels fill the F16
    # grain, so nothing is expanded. The tile's 2 x 2 output positions need an input
    # window of (2 - 1) x 2 + (2 - 1) + 1 = 4 rows and columns of 16 channels: 256
    # elements; the weights 2 x 2 kernel positions x 16 x 8 (4 output channels padded to
    # 8) = 512; partials 4 x 8 in F32. Temporary (256 + 512) x 2 + 32 x 4 = 1664. The
    # step: the window (standard), the weights not broadcast (one tile: they are where
    # they rest), the partials (interleaved); the bias read by the same step.
    plan, fragment = lower("conv", [((1, 16, 4, 4), F16), ((4, 16, 2, 2), F16), ((4,), F16)],
                           {"strides": (2, 2)}, machine=TILE1)
    cp = plan.detail
    assert isinstance(cp, ConvPartition) and cp.tiles == 1 and not cp.broadcasts_weights
    assert (cp.input_elements, cp.weight_elements, cp.partial_elements) == (256, 512, 32)
    assert plan.temporary == (256 + 512) * 2 + 32 * 4 == 1664
    assert steps(fragment) == [("Conv", {"standard": 256 * 2, "interleaved": 32 * 4}, True)]
    assert len(fragment.steps[0].reads) == 3 and [v.kind for v in fragment.values] == [ValueKind.RESULT]


def test_a_convolution_that_splits_its_batch_broadcasts_the_weights():
    # x [2, 16, 8, 8], w [16, 16, 3, 3], pads 1 -> [2, 16, 8, 8], F16 on 4 tiles: the
    # plan splits the batch 2 ways and the output channels 2 ways. A tile: 1 image, all 8
    # x 8 positions, a window of (8 - 1) + (3 - 1) + 1 = 10 x 10 x 16 channels = 1600
    # elements; weights 9 x 16 x 8 = 1152, received (the batch is split: every image's
    # tiles need them); partials 64 x 8 F32. Temporary (1600 + 1152) x 2 + 512 x 4 =
    # 7552. The input rests spread and the output channels split: each tile also keeps
    # its share of the rearranged input, 2048 / 4 x 2 B = 1024.
    plan, fragment = lower("conv", [((2, 16, 8, 8), F16), ((16, 16, 3, 3), F16)], {"pads": (1, 1, 1, 1)})
    cp = plan.detail
    assert (cp.batch_split, cp.field_split, cp.in_split, cp.out_split) == (2, (1, 1), 1, 2)
    assert cp.broadcasts_weights and (cp.input_elements, cp.weight_elements, cp.partial_elements) == (1600, 1152, 512)
    assert plan.temporary == (1600 + 1152) * 2 + 512 * 4 == 7552
    assert steps(fragment) == [("Conv", {"standard": (1600 + 1152) * 2 + 1024, "interleaved": 512 * 4}, True)]
    # the output stays where the plan computed it: images over 2, channels over 2
    out = fragment.values[0].layout
    assert [a.partitions for a in out.tiling.axes] == [2, 2, 1, 1]


def test_a_depthwise_convolution_combines_its_groups():
    # The default policy: x [1, 16, 4, 4], w [16, 1, 3, 3], 16 groups of one channel, pads
    # 1, F16 on 4 tiles. poplin combines the groups into one of 16 channels (the F16 AMP
    # takes 16 input channels a pass: up to 16 groups of one channel combine), weights
    # padded off the block diagonal: 9 x 16 x 16 a whole block, filling the grain, so
    # nothing is expanded. A tile's blocks follow from the plan's splits (the field
    # 4 x 4 with its halo of 1, channels padded to the grains), and the step holds them:
    # the window, and the weights when broadcast, in standard memory; partials in F32
    # in interleaved memory.
    plan, fragment = lower("conv", [((1, 16, 4, 4), F16), ((16, 1, 3, 3), F16)],
                           {"groups": 16, "pads": (1, 1, 1, 1)})
    cp = plan.detail
    assert cp.combine == 16 and cp.expanded == () and cp.group_split == 1
    rows, cols = -(-4 // cp.field_split[0]), -(-4 // cp.field_split[1])
    def ceil(a: int, b: int) -> int:
        return -(-a // b)
    in_p = ceil(ceil(16, cp.in_split), 16) * 16
    out_p = ceil(ceil(16, cp.out_split), 8) * 8
    assert cp.serial == 1  # so small a product needs no serial split
    assert cp.input_elements == (rows + 2) * (cols + 2) * in_p
    assert cp.weight_elements == 9 * in_p * out_p
    assert cp.partial_elements == rows * cols * out_p
    standard = (cp.input_elements + (cp.weight_elements if cp.broadcasts_weights else 0)) * 2
    standard += 16 * 4 * 4 // 4 * 2 if cp.out_split > 1 else 0  # the rearranged input's share
    interleaved = cp.partial_elements * 4 + max(0, cp.partial_elements * 4 - standard) * (cp.in_split > 1)
    assert steps(fragment) == [("Conv", {"standard": standard, "interleaved": interleaved}, True)]


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
    assert weights == {"matmul", "conv", "grouped_matmul", "matmul_grad_input", "conv_grad_input"}  # dX = dY W^T
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


def test_each_plan_carries_its_operators_detail_typed():
    """`OpPlan[D]`: a plan's detail is its operator's typed value (no strings), the one
    its lowering reads."""
    plan, _ = lower("matmul", [((2, 16, 64), F16), ((2, 64, 8), F16)])
    assert plan.detail is BATCHED and isinstance(plan.detail, BatchedProduct)
    plan, _ = lower("matmul", [((1, 16, 64), F16), ((64, 2), F16)])
    assert isinstance(plan.detail, ConvPartition)
    plan, _ = lower("matmul", [((1, 16, 64), F16), ((64, 2), F16)], poplibs=False)
    assert isinstance(plan.detail, GemmPartition)
    plan, _ = lower("conv", [((1, 2, 4, 4), F16), ((2, 1, 3, 3), F16)], {"groups": 2, "pads": (1, 1, 1, 1)},
                    poplibs=False)
    assert plan.detail is GROUPED and isinstance(plan.detail, GroupedConvolution)
    plan, _ = lower("conv", [((1, 2, 4, 4), F16), ((2, 1, 3, 3), F16)], {"groups": 2, "pads": (1, 1, 1, 1)})
    assert isinstance(plan.detail, ConvPartition)
    plan, _ = lower("add", [((1, 8, 16), F16), ((16,), F16)])
    assert plan.detail == Broadcast(lead=0, gathered=(1,))  # the bias received: x rests linearly
    plan, _ = lower("attention", [((1, 8, 24), F16)], {"heads": 2})
    assert isinstance(plan.detail, AttentionGrid) and plan.detail.heads == 2
    plan, _ = lower("sdpa", [((1, 2, 8, 4), F16), ((1, 2, 8, 4), F16), ((1, 2, 8, 4), F16)])
    assert isinstance(plan.detail, SdpaGrid) and plan.detail.heads == 2
    plan, _ = lower("layernorm", [((1, 8, 16), F16), ((16,), F16), ((16,), F16)])
    assert plan.detail is None
