"""The training operators' contract: each backward and training operator's
steps, scratch and exchange flags against a hand computation, as
tests/test_op_contract.py does for the forward ones (the same machine: IPU21 with 4
tiles, `TILES4`; a tensor no operation lays out spread over the 4 tiles in 8-byte
blocks, 4 F16 elements a block: a [1, 8, 16] F16 tensor has 32 elements a tile, a
[2, 4, 4] one 8).
"""

from __future__ import annotations

from test_op_contract import F16, I32, TILES4, lower, spread, steps

from tileplan.kernel.context import Kernel
from tileplan.kernel.convplan import plan_joint_fc
from tileplan.kernel.fragment import Operand, ValueKind
from tileplan.kernel.options import Options
from tileplan.model.ir import Operation
from tileplan.model.machine import IPU21
from tileplan.model.precision import F32, Precision
from tileplan.ops import REGISTRY
from tileplan.ops.base import InputInfo


# the joint plan of a fully connected layer ---------------------------------------------

def test_a_joint_plan_never_splits_the_rows_and_bounds_each_pass():
    # x [16, 32] @ W [32, 16], F16 (input grain 16, output grain 8, F32 partials), 4 tiles:
    # K over 4 and N whole (k_t 8, n_t 16), M whole (m_t 16). forward (swapped: batch N,
    # K in, M out): x block 8 -> 16 (the input grain) x 16 = 256 received, W block 16 x
    # 16 = 256, partials 16 x 16 = 256: (256 + 256) x 2 + 256 x 4 = 2048 B; backward
    # (batch K, N in, M out): dY block 16 x 16 = 256 received, W 8 x 16 = 128, partials 8
    # x 16 = 128: (256 + 128) x 2 + 128 x 4 = 1280 B; update (batch N, M in, K out): dY
    # block 16 x 16 and X block 16 x 8 received (384), partials 16 x 8 = 128: 768 + 512 =
    # 1280 B. The plan's temporary is the most of the three. K over 2 and N over 2 holds
    # as much (2048 B) in more AMP blocks a tile (each block's fixed cycles).
    jp = plan_joint_fc(16, 32, 16, 4, TILES4.amp_for(F16, None), 2, 4, TILES4.tile_bytes, 0.6)
    f, b, u = jp.forward, jp.backward, jp.update
    assert (f.batch_split, f.in_split, f.out_split, f.serial) == (1, 4, 1, 1)
    assert (f.input_elements, f.weight_elements, f.partial_elements) == (256, 256, 256)
    assert (b.input_elements, b.weight_elements, b.partial_elements) == (256, 128, 128)
    assert (u.input_elements, u.weight_elements, u.partial_elements) == (384, 0, 128)
    assert (f.temp_bytes, b.temp_bytes, u.temp_bytes, jp.temp_bytes) == (2048, 1280, 1280, 2048)


def test_a_joint_plan_splits_many_rows_serially():
    # BERT-Base's FFN at micro-batch 32 x 128 tokens (M 4096, K 768, N 3072), half
    # partials (output grain 16), proportion 0.25 (159,744 B): M is never split over
    # tiles, so the plan runs M in serial iterations (poplin's outChanSplit.serial of the
    # swapped operands) to keep each pass under the cap.
    jp = plan_joint_fc(4096, 768, 3072, 1472, IPU21.amp_for(F16, "F16"), 2, 2, IPU21.tile_bytes, 0.25)
    assert jp.forward.serial > 1 and jp.forward.serial_dim == "batch" and jp.temp_bytes <= 159_744


def test_bert_large_ffn_joint_plan_matches_the_worked_example():
    # convplan.plan_joint_fc's docstring: M 384, K 1024, N 4096, F16, F32 partials, 1472 tiles
    jp = plan_joint_fc(384, 1024, 4096, 1472, IPU21.amp_for(F16, None), 2, 4, IPU21.tile_bytes, 0.6)
    assert (jp.forward.in_split, jp.forward.out_split, jp.forward.batch_split) == (23, 64, 1)
    assert (jp.forward.temp_bytes, jp.backward.temp_bytes, jp.update.temp_bytes) == (141_312, 124_032, 98_304)


def test_the_forward_product_marked_joint_plans_the_joint_forward_pass():
    plan, _ = lower("matmul", [((16, 32), F16), ((32, 16), F16)], {"joint": True})
    jp = plan_joint_fc(16, 32, 16, 4, TILES4.amp_for(F16, None), 2, 4, TILES4.tile_bytes, 0.6)
    assert plan.detail == jp.forward and plan.temporary == 2048
    assert plan.rest[1] is not None  # W created in the joint plan's layout


def test_grad_input_reads_the_weights_where_the_forward_pass_created_them():
    # dX [16, 32] = dY [16, 16] W^T: the backward pass above. Read where the forward pass
    # created W: scratch the dY block 256 x 2 B standard, partials 128 x 4 B interleaved.
    # Read anywhere else: the W block (128 x 2 B) received too.
    k = Kernel(TILES4, Options(available_memory_proportion=0.6))
    op = Operation(0, 0, "matmul_grad_input", "g", ("dy", "w"), "g.out", (16, 32), F16)
    spread16 = spread(TILES4, F16)
    plan = REGISTRY[op.kind].plan(k, op, [InputInfo((16, 16), F16, spread16, False),
                                          InputInfo((32, 16), F16, None, True)])
    created = plan.rest[1]
    assert created is not None
    for w_layout, standard in ((created, 256 * 2), (spread16, (256 + 128) * 2)):
        operands = [[Operand(spread16, (16, 16), F16, None, False, "dy")],
                    [Operand(w_layout, (32, 16), F16, None, True, "w")]]
        fragment = REGISTRY[op.kind].lower(k, op, plan, operands, (False, False))
        assert steps(fragment) == [("Matmul", {"standard": standard, "interleaved": 128 * 4}, True)]
        assert fragment.steps[0].text.startswith("Matmul { pass: backward, ")


def test_grad_weight_writes_the_gradient_where_the_weights_rest():
    # dW [32, 16] = X^T dY: the update pass above; the dY (256) and X (128) blocks received
    # (F16), partials 128 x 4 B; dW in the layout the forward pass creates W in.
    plan, fragment = lower("matmul_grad_weight", [((16, 32), F16), ((16, 16), F16)])
    assert steps(fragment) == [("Matmul", {"standard": (256 + 128) * 2, "interleaved": 128 * 4}, True)]
    forward, _ = lower("matmul", [((16, 32), F16), ((32, 16), F16)], {"joint": True})
    assert plan.output == forward.rest[1]


# norms, softmax, non-linearities -----------------------------------------------------------

def test_layernorm_grad_whitens_again_and_keeps_four_row_statistics():
    # [1, 8, 16] F16 spread: 32 elements a tile, which touch ceil(32 / 16) + 1 = 3 rows cut
    # into 4 partitions. Scratch: X whitened again 32 x 2 = 64 B; four F32 statistics a row
    # with a tree of fan-in min(4, 16): (4 + 1) x 3 x 4 x 4 = 240 B; the scale of a linear
    # layout received: min(16, 32) x 2 = 32 B.
    _, fragment = lower("layernorm_grad", [((1, 8, 16), F16), ((1, 8, 16), F16), ((16,), F16)])
    assert steps(fragment) == [("LayerNorm", {"standard": 64 + 240 + 32}, True)]


def test_layernorm_grad_weight_reduces_the_product_in_f32():
    # dY x whitened X on each tile (32 x 2 = 64 B), F32 partials min(16, 32) = 16, a stage of
    # min(16, 4) x the output shard (16 F16 = 4 blocks: 4 elements a tile) = 16: (16 + 16) x 4
    _, fragment = lower("layernorm_grad_weight", [((1, 8, 16), F16), ((1, 8, 16), F16)])
    assert steps(fragment) == [("Reduce", {"standard": 64 + (16 + 16) * 4}, True)]


def test_softmax_grad_keeps_one_row_sum_and_writes_in_place():
    # [2, 4, 4] F16: 8 elements a tile, ceil(8 / 4) + 1 = 3 rows in 4 partitions:
    # (4 + 1) x 3 x 4 B = 60 B; dX in place of dY, which dies here
    _, fragment = lower("softmax_grad", [((2, 4, 4), F16), ((2, 4, 4), F16)], dies=True)
    assert steps(fragment) == [("Softmax", {"standard": 60}, True)]
    assert fragment.values[-1].storage is not None and not fragment.values[-1].storage.new


def test_activation_grad_is_an_elementwise_step_without_scratch():
    _, fragment = lower("activation_grad", [((2, 4, 4), F16), ((2, 4, 4), F16)], {"fn": "gelu"}, dies=True)
    assert steps(fragment) == [("Binary", {}, False)]
    assert fragment.steps[0].text == "Binary { op: GeluGrad, broadcast: false, in_place: true }"


# lookups and the loss ----------------------------------------------------------------------

def test_embedding_grad_is_a_dense_table_laid_out_as_the_table():
    # [32, 16] F16 = 512 elements, 128 blocks of 4: 4 partitions of 32 blocks = 128 elements
    # a tile. Scratch: the 8 indices (4 B each) and min(dY 128, 128) elements of dY (F16)
    _, fragment = lower("embedding_grad", [((1, 8, 16), F16), ((1, 8), I32)], {"rows": 32})
    assert steps(fragment) == [("Scatter", {"standard": 8 * 4 + 128 * 2}, True)]
    assert fragment.values[-1].shape == (32, 16)


def test_the_loss_and_its_gradient():
    # nll_loss: 8 targets received (4 B) and 8 picked values in F32 with a stage of 16
    _, fragment = lower("nll_loss", [((8, 16), F16), ((8,), I32)])
    assert steps(fragment) == [("Reduce", {"standard": 8 * 4 + (8 + 16) * 4}, True)]
    _, fragment = lower("nll_loss_grad", [((1,), F16), ((8, 16), F16), ((8,), I32)])
    assert steps(fragment) == [("Scatter", {"standard": 8 * 4}, True)]
    assert fragment.values[-1].shape == (8, 16)


# accumulation, the weight update, the stash -------------------------------------------------

def test_accumulate_writes_in_place_in_the_accumulator():
    plan, fragment = lower("accumulate", [((32, 16), F16), ((32, 16), F32)], precision=F32, where="wanted")
    assert steps(fragment) == [("Optimizer", {}, False)]
    out = fragment.values[-1]
    assert out.kind is ValueKind.VIEW and out.of is not None and not out.of.new and out.precision == F32
    assert plan.rest[1] is not None  # the accumulator rests as the gradient is laid out


def test_adam_update_makes_its_updater_term_and_casts_a_half_gradient():
    # W [32, 16] F16 spread: 128 elements a tile. F16 gradient, F32 moments: the gradient
    # cast to F32, 128 x 4 B; the updater term x, W-shaped, is the output
    attrs = {"optimizer": "adamw"}
    _, fragment = lower("optimizer_update", [((32, 16), F16), ((32, 16), F16), ((32, 16), F32), ((32, 16), F32)],
                        attrs)
    assert steps(fragment) == [("Optimizer", {"standard": 128 * 4}, False)]
    assert fragment.values[-1].kind is ValueKind.RESULT and fragment.values[-1].shape == (32, 16)


def test_offchip_state_is_loaded_for_the_update_and_replicas_reduce_the_gradient():
    # state off chip: each moment loaded as a value of this step (W's shape, its precision);
    # 2 replicas: the gradient's reduction, 128 x 2 B; no cast with an F16 first moment
    attrs = {"optimizer": "lamb", "offchip": ("F16", "F32"), "replicas": 2}
    _, fragment = lower("optimizer_update", [((32, 16), F16), ((32, 16), F16)], attrs)
    assert steps(fragment) == [("Optimizer", {"standard": 128 * 2}, True)]
    loaded = [v for v in fragment.values if v.label.endswith("loaded")]
    assert [(v.label, v.precision.name, v.shape) for v in loaded] == [
        ("first moment loaded", "F16", (32, 16)), ("second moment loaded", "F32", (32, 16))]
    # sharded over 2 replicas: each a flat shard of ceil(512 / 2) elements
    attrs = {"optimizer": "adam", "offchip": ("F32", "F32"), "shards": 2, "replicas": 2}
    _, fragment = lower("optimizer_update", [((32, 16), F16), ((32, 16), F16)], attrs)
    assert [v.shape for v in fragment.values if v.label.endswith("loaded")] == [(256,), (256,)]


def test_sgd_updates_in_place():
    _, fragment = lower("optimizer_update", [((32, 16), F16), ((32, 16), F16)], {"optimizer": "sgd"})
    assert steps(fragment) == [("Optimizer", {}, False)]
    assert fragment.values[-1].kind is ValueKind.VIEW


def test_a_stash_holds_depth_slots_laid_out_as_the_value_and_restores_in_place():
    # X [1, 8, 16] spread, the stash [3, 1, 8, 16] in X's layout stacked: a local copy
    stashed = Precision("F16")
    plan, _ = lower("stash", [((1, 8, 16), F16), ((3, 1, 8, 16), stashed)])
    assert plan.rest[1] is not None
    k = Kernel(TILES4, Options())
    layout = spread(TILES4, F16)
    op = Operation(0, 0, "stash", "s", ("x", "s"), "s.out", (3, 1, 8, 16), F16)
    fragment = REGISTRY["stash"].lower(k, op, plan, [[Operand(layout, (1, 8, 16), F16, None, False, "x")],
                                                     [Operand(plan.rest[1], (3, 1, 8, 16), F16, None, True, "s")]],
                                       (True, False))
    assert steps(fragment) == [("Copy", {}, False)]
    _, fragment = lower("restore", [((3, 1, 8, 16), F16)])
    assert steps(fragment) == [("View", {}, False)] and fragment.values[-1].kind is ValueKind.VIEW


def test_sending_and_receiving_exchange_without_scratch():
    _, fragment = lower("send", [((1, 8, 16), F16)])
    assert steps(fragment) == [("Copy", {}, True)] and fragment.values[-1].kind is ValueKind.VIEW
    _, fragment = lower("receive", [], {"shape": (1, 8, 16)})
    assert steps(fragment) == [("Copy", {}, True)] and fragment.values[-1].shape == (1, 8, 16)


def test_a_convolutions_gradients_are_its_implicit_products():
    # One tile: nothing splits. dW [3, 2, 3, 3] of X [1, 2, 4, 4] and dY [1, 3, 2, 2]: the
    # product (2 x 9 = 18) x (1 x 4 = 4) x 3. Per tile: 18 rows of 4 -> 16 (the input grain)
    # = 288 and a 16 x 3 -> 8 (the output grain) block = 128, F16; partials 18 x 8 = 144 in
    # F32: (288 + 128) x 2 = 832 B standard, 144 x 4 = 576 B interleaved.
    from test_op_contract import TILE1
    _, fragment = lower("conv_grad_weight", [((1, 2, 4, 4), F16), ((1, 3, 2, 2), F16)],
                        {"kernel": (3, 3), "groups": 1}, machine=TILE1)
    assert steps(fragment) == [("Conv", {"standard": 832, "interleaved": 576}, True)]
    assert fragment.values[-1].shape == (3, 2, 3, 3)
    # dX [1, 2, 4, 4] of dY and W [3, 2, 3, 3]: (1 x 16) x (3 x 9 = 27 -> 32) x (2 -> 8):
    # 16 x 32 = 512 and 32 x 8 = 256 (F16), partials 16 x 8 = 128 (F32)
    _, fragment = lower("conv_grad_input", [((1, 3, 2, 2), F16), ((3, 2, 3, 3), F16)],
                        {"input_shape": (1, 2, 4, 4), "groups": 1, "strides": (1, 1), "pads": (0, 0, 0, 0),
                         "dilations": (1, 1)}, machine=TILE1)
    assert steps(fragment) == [("Conv", {"standard": (512 + 256) * 2, "interleaved": 128 * 4}, True)]


def test_a_conv_data_gradient_carries_the_geometry_it_transposes():
    """dX of a 3x3 conv of stride 2 and padding 1 reading a [1, 4, 9, 9] input: its dY is
    5 x 5, and (5 - 1) x 2 - 1 - 1 + (3 - 1) + 1 = 9 rows, so no extra row; the joint
    importer passes the stride, pads and dilation, and the shape rule refuses an input
    shape they do not transpose to (11 = 9 + 2 rows, two more than the stride skips)."""
    import pytest
    import torch

    from tileplan.errors import ModelError
    from tileplan.importers.joint import joint_graph
    from tileplan.ops.gradients import conv_grad_input_shape

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.b = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x))).sum()

    graph = joint_graph(Net(), {"x": ((1, 3, 9, 9), torch.float32)}, "net", positional=True).graph
    (dx,) = [o for o in graph.ops if o.kind == "conv_grad_input"]
    assert dx.shape == (1, 4, 9, 9)
    assert {k: v for k, v in dx.attrs if k != "input_shape"} == {
        "strides": (2, 2), "pads": (1, 1, 1, 1), "dilations": (1, 1), "groups": 1}
    attrs = dict(dx.attrs)
    assert conv_grad_input_shape([(1, 6, 5, 5), (6, 4, 3, 3)], {**attrs, "input_shape": (1, 4, 10, 10)}) \
        == (1, 4, 10, 10)  # one row the stride skipped
    with pytest.raises(ModelError, match="dimension 2 .* not what dY"):
        conv_grad_input_shape([(1, 6, 5, 5), (6, 4, 3, 3)], {**attrs, "input_shape": (1, 4, 11, 11)})
