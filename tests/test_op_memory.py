"""The operators the architectures of the coverage table brought to the registry: each
one's steps, scratch and exchange flags against a hand computation, as
`tests/test_op_contract.py` does for the others (its `lower` helper: IPU21 with 4
tiles, inputs spread linearly over them in 8-byte blocks of 4 F16 elements), and
their shape rules.
"""

from __future__ import annotations

import pytest

import test_op_contract as contract
from tileplan.errors import ModelError
from tileplan.model.ir import Operation
from tileplan.model.precision import F16
from tileplan.ops import REGISTRY, infer_dtype, infer_shape

I32 = contract.I32


def shape_of(kind: str, ins: list[tuple[int, ...]], attrs: dict) -> tuple[int, ...]:
    op = Operation(0, 0, kind, "op", tuple(f"in{i}" for i in range(len(ins))), "out", (1,), F16,
                   tuple(sorted(attrs.items())))
    return infer_shape(op, ins)


def test_tile_writes_its_repeats_into_a_new_spread_value():
    # [2, 4] tiled (2, 3) -> [4, 12]: one Tile step, every tile receiving its output
    # elements straight into the output (exchange), no scratch
    _, fragment = contract.lower("tile", [((2, 4), F16)], {"repeats": (2, 3)})
    assert contract.steps(fragment) == [("Tile", {}, True)]
    assert fragment.values[0].shape == (4, 12)
    with pytest.raises(ModelError, match="one repeat >= 1 per dimension"):
        shape_of("tile", [(2, 4)], {"repeats": (2,)})


@pytest.mark.parametrize("kind, name", [("reduce_l2", "L2"), ("reduce_l1", "L1"), ("reduce_sum_square", "SumSquare"),
                                        ("reduce_logsumexp", "LogSumExp")])
def test_norm_reductions_keep_partials_and_a_stage(kind: str, name: str):
    # as reduce_sum: [1, 8, 16] over the last axis -> [1, 8], at most 4 outputs a tile;
    # partials min(8, 32) = 8, stage min(16, 4 tiles) x 4 = 16: (8 + 16) x 4 B = 96
    _, fragment = contract.lower(kind, [((1, 8, 16), F16)], {"axes": (-1,)})
    assert contract.steps(fragment) == [("Reduce", {"standard": 96}, True)]
    assert fragment.steps[0].text == f"Reduce {{ op: {name}, exchange: true }}"


def test_group_norm_reduces_each_group_over_the_tiles_it_spans():
    # x [2, 8, 4] F16 in 4 groups: 64 elements spread, e = 16 a tile; a group is
    # g = 8 / 4 channels x 4 = 8 elements, so a tile touches min(2 x 4, ceil(16 / 8) + 1)
    # = 3 groups and a group spans min(4, ceil(8 / 16) + 1) = 2 tiles.
    # Statistics: (min(2, 16) + 1) x 3 x 2 x 4 B = 72, exchanging (a group spans tiles).
    # Normalize: the statistics 3 x 2 x 4 = 24, and scale and bias [8] received,
    # min(8, 16) x 2 B each = 32: 56.
    vectors = [((8,), F16), ((8,), F16)]
    _, fragment = contract.lower("groupnorm", [((2, 8, 4), F16), *vectors], {"groups": 4}, dies=True)
    assert contract.steps(fragment) == [("GroupNorm", {"standard": 72}, True), ("GroupNorm", {"standard": 56}, True)]
    assert fragment.values[-1].storage is not None  # the input dies: normalised in place
    # without scale and bias nothing is received: the Normalize step keeps to its tile
    _, fragment = contract.lower("groupnorm", [((2, 8, 4), F16)], {"groups": 4})
    assert contract.steps(fragment)[1] == ("GroupNorm", {"standard": 24}, False)


def test_instance_norm_is_a_group_a_channel():
    # groups = C = 8: g = 4 elements, a tile touches min(16, ceil(16 / 4) + 1) = 5
    # groups, a group spans min(4, ceil(4 / 16) + 1) = 2 tiles (at most): statistics
    # (2 + 1) x 5 x 2 x 4 B = 120, normalize 5 x 2 x 4 = 40
    _, fragment = contract.lower("groupnorm", [((2, 8, 4), F16)], {"groups": 8})
    assert contract.steps(fragment) == [("GroupNorm", {"standard": 120}, True), ("GroupNorm", {"standard": 40}, False)]


def test_group_norm_shape_rule():
    assert shape_of("groupnorm", [(2, 8, 4), (8,), (8,)], {"groups": 4}) == (2, 8, 4)
    assert shape_of("groupnorm", [(2, 8, 4), (4,)], {"groups": 4}) == (2, 8, 4)  # opset 18: a scale per group
    with pytest.raises(ModelError, match="C a multiple of the groups"):
        shape_of("groupnorm", [(2, 8, 4)], {"groups": 3})
    with pytest.raises(ModelError, match="vectors of the 8 channels"):
        shape_of("groupnorm", [(2, 8, 4), (5,)], {"groups": 4})


@pytest.mark.parametrize("mode, taps", [("nearest", 1), ("linear", 4), ("cubic", 16)])
def test_resize_receives_the_input_its_outputs_interpolate(mode: str, taps: int):
    # [1, 2, 16, 16] (512 elements) resized to 4 x 4 -> [1, 2, 4, 4]: 32 elements spread,
    # e = 8 a tile; each output reads 1, 2 x 2 or 4 x 4 inputs: min(512, 8 x taps) x 2 B
    _, fragment = contract.lower("resize", [((1, 2, 16, 16), F16)], {"size": (4, 4), "mode": mode})
    assert contract.steps(fragment) == [("Resize", {"standard": min(512, 8 * taps) * 2}, True)]
    with pytest.raises(ModelError, match="expected nearest, linear, cubic"):
        shape_of("resize", [(1, 2, 4, 4)], {"size": (8, 8), "mode": "area"})


def test_gather_nd_receives_its_indices_and_holds_its_looked_up_slices():
    # data [2, 7, 32] F16, indices [2, 1] with batch_dims 1 (CLIP's pooled token) ->
    # [2] + [32] = [2, 32]: 64 elements spread, 16 a tile. 2 indices x 4 B + 16 x 2 B = 40.
    _, fragment = contract.lower("gather_nd", [((2, 7, 32), F16), ((2, 1), I32)], {"batch_dims": 1})
    assert contract.steps(fragment) == [("Gather", {"standard": 2 * 4 + 16 * 2}, True)]
    assert shape_of("gather_nd", [(5, 6, 7), (3, 2)], {"batch_dims": 0}) == (3, 7)
    with pytest.raises(ModelError, match="batch dimensions alike"):
        shape_of("gather_nd", [(2, 7, 32), (3, 1)], {"batch_dims": 1})


def test_pooling_in_ceil_mode_follows_pytorch():
    # EfficientNet pools its 1 x 1 map with a kernel of 1280 in ceil mode: one output
    assert shape_of("avgpool", [(1, 8, 1, 1)], {"kernel": (1280, 1280), "strides": (1280, 1280),
                                                "ceil_mode": True}) == (1, 8, 1, 1)
    # [5] with kernel 2, stride 2: floor 2 windows, ceil 3 (the last starts inside the input)
    assert shape_of("maxpool", [(1, 1, 5)], {"kernel": (2,), "strides": (2,), "ceil_mode": True}) == (1, 1, 3)
    assert shape_of("maxpool", [(1, 1, 5)], {"kernel": (2,), "strides": (2,)}) == (1, 1, 2)
    with pytest.raises(ModelError, match="does not fit the input"):
        shape_of("maxpool", [(1, 1, 1, 1)], {"kernel": (3, 3)})


def test_the_new_operators_own_their_facts():
    for kind in ("tile", "groupnorm", "resize", "gather_nd", "reduce_l2"):
        entry = REGISTRY[kind]
        assert not entry.view and not entry.weight_inputs and not entry.commutative
        assert "cratch" in (entry.lower.__doc__ or "")
    op = Operation(0, 0, "gather_nd", "op", ("a", "b"), "out", (1,), F16, (("batch_dims", 0),))
    assert infer_dtype(op, ["float", "int"]) == "float"


# a mixture of experts (Mixtral's routing and experts) ----------------------------------

def test_topk_and_sort_keep_the_best_of_each_row_with_their_indices():
    # [1, 8, 16] F16, top 2 of the last axis -> [1, 8, 2]: rows as for softmax, 3 rows a
    # tile over 4 partitions; (min(4, 16) + 1) x 3 rows x 2 kept x (2 B + 4 B of index) = 180
    _, fragment = contract.lower("topk", [((1, 8, 16), F16)], {"k": 2})
    assert contract.steps(fragment) == [("TopK", {"standard": 5 * 3 * 2 * 6}, True)]
    assert shape_of("topk", [(1, 8, 16)], {"k": 2}) == (1, 8, 2)
    # a sort keeps the whole axis: k = 16, (4 + 1) x 3 x 16 x 6 = 1440
    _, fragment = contract.lower("sort", [((1, 8, 16), F16)])
    assert contract.steps(fragment) == [("TopK", {"standard": 5 * 3 * 16 * 6}, True)]
    op = Operation(0, 0, "topk", "op", ("a",), "out", (1,), F16, (("indices", True), ("k", 2)))
    assert infer_dtype(op, ["float"]) == "int"


def test_histogram_reduces_into_its_bins():
    # [16] I32 counted into 4 bins: 8-byte blocks of 2 I32, so 4 elements a tile and the
    # 4 bins in 2 blocks, 2 a tile; partials min(4 bins, 4) = 4, stage min(16, 4 tiles)
    # x 2 = 8: (4 + 8) x 4 B = 48
    _, fragment = contract.lower("histogram", [((16,), I32)], {"bins": 4}, precision=I32)
    assert contract.steps(fragment) == [("Reduce", {"standard": 48}, True)]
    assert fragment.steps[0].text == "Reduce { op: Histogram, exchange: true }"


def test_scatter_writes_its_values_in_place_of_the_data():
    # data [16] I32 (4 a tile), 16 indices and 16 values: indices received whole, 16 x 4
    # B, and the values a tile writes, min(16, 4) x 4 B: 80; in place when the data dies
    ins = [((16,), I32), ((16,), I32), ((16,), I32)]
    _, fragment = contract.lower("scatter", ins, {"axes": (0,)}, precision=I32, dies=True)
    assert contract.steps(fragment) == [("Scatter", {"standard": 16 * 4 + 4 * 4}, True)]
    assert fragment.values[-1].storage is not None


def test_grouped_matmul_receives_the_rows_and_their_experts_weights():
    # rows [16, 32] F16 sorted by expert, weights [2, 32, 8], offsets [2] -> [16, 8]:
    # 128 elements spread, e = 32 a tile; a run of 32 of rows of N = 8 touches
    # r = min(16, 4 + 1) = 5 rows of at most min(2, 5) = 2 experts and c = min(8, 32) = 8
    # columns: 5 x 32 x 2 + 2 x 32 x 8 x 2 + 2 x 4 + 32 x 4 = 320 + 1024 + 8 + 128 = 1480
    ins = [((16, 32), F16), ((2, 32, 8), F16), ((2,), I32)]
    _, fragment = contract.lower("grouped_matmul", ins)
    assert contract.steps(fragment) == [("GroupedGemm", {"standard": 1480}, True)]
    assert REGISTRY["grouped_matmul"].weight_inputs == (1,)  # the experts' weights take --weights
    with pytest.raises(ModelError, match="experts' weights"):
        shape_of("grouped_matmul", [(16, 32), (2, 16, 8), (2,)], {})
