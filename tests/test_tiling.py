import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.errors import TilingError
from tileplan.model.layout import ROW_MAJOR, Axis, AxisTiling, Layout, MemoryClass, Padding, TensorTiling, LINEAR
from tileplan.model.precision import Precision
from tileplan.model.tiling import default_strides, replica_offsets, shards_of

STANDARD = MemoryClass("Ipu21", "Standard")


def _value(reference_values, i):
    v = reference_values[i]
    return Layout.from_text(v["layout"]), tuple(v["shape"]), Precision.from_text(v["precision"]), v


def test_every_representable_reference_value_has_its_shard_bytes(reference_values):
    agree = 0
    for i, v in enumerate(reference_values):
        layout, shape, precision, _ = _value(reference_values, i)
        if v["shard_bytes"] == 2**64 - 1:
            with pytest.raises(TilingError, match=r"cannot fill 1472 partitions \(padding Reject\)"):
                shards_of(layout, shape, v["name"])
            continue
        shards = shards_of(layout, shape, v["name"])
        assert shards.largest_bytes(precision) == v["shard_bytes"], v["name"]
        assert shards.bytes_per_tile(precision).max() == v["shard_bytes"]
        agree += 1
    assert agree == 28


def test_unrepresentable_vector_error_names_value_rule_and_numbers(reference_values):
    layout, shape, _, v = _value(reference_values, 2)
    with pytest.raises(TilingError) as info:
        shards_of(layout, shape, v["name"])
    assert str(info.value) == ("vit.embedding.bias: Linear tiling of 288 blocks of 4 elements cannot fill "
                               "1472 partitions (padding Reject)")


def test_position_shards_differ_by_tile(reference_values):
    layout, shape, precision, _ = _value(reference_values, 3)
    per_tile = shards_of(layout, shape).bytes_per_tile(precision)
    # 209952 blocks of 4 over 1472 tiles: 944 tiles hold 143 blocks, 528 hold 142
    assert sorted(set(per_tile.tolist())) == [142 * 8, 143 * 8]
    assert (per_tile == 1144).sum() == 209952 % 1472
    assert per_tile.sum() == 729 * 1152 * 2


def test_gemm_partials_tile_map_follows_explicit_strides(reference_values):
    layout, shape, precision, _ = _value(reference_values, 70)
    shards = shards_of(layout, shape)
    assert default_strides(layout) == (1, 184, 46)
    tile_of = shards.tile_of()  # [replica, m, n, k]
    assert tile_of[0, 1, 0, 0] == 1 and tile_of[0, 0, 1, 0] == 184 and tile_of[0, 0, 0, 1] == 46
    assert sorted(tile_of.ravel().tolist()) == list(range(1472))


def test_default_strides_put_replicas_outermost(reference_values):
    layout, shape, _, _ = _value(reference_values, 0)  # patches: M stride Some(1), K None, 8 replicas
    assert default_strides(layout) == (1, 46)
    assert replica_offsets(layout).tolist() == [184 * r for r in range(8)]


def test_replicas_fill_the_gaps_left_by_strided_axes():
    # a bias tiled like the Gemm output's N axis (32 partitions, stride 46), on 46 replicas
    tiling = TensorTiling(1472, 46, (AxisTiling(Axis.from_end(1), 32, block_size=2, padding_multiple=2,
                                                tile_stride=46),))
    layout = Layout(ROW_MAJOR, tiling, STANDARD)
    assert replica_offsets(layout).tolist() == list(range(46))
    per_tile = shards_of(layout, (1, 1, 1152)).bytes_per_tile(Precision("F16"))
    assert (per_tile == 72).all()


def test_colliding_strides_are_rejected():
    tiling = TensorTiling(4, 1, (AxisTiling(Axis.from_end(2), 2, tile_stride=1),
                                 AxisTiling(Axis.from_end(1), 2, tile_stride=1)))
    with pytest.raises(TilingError, match="tile map puts 2 shards on tile 1, expected 1"):
        shards_of(Layout(ROW_MAJOR, tiling, STANDARD), (4, 4), "x")


def test_reject_padding_on_a_dimension():
    tiling = TensorTiling(4, 1, (AxisTiling(Axis.from_end(1), 4, block_size=1, padding_multiple=8,
                                            padding=Padding.REJECT),))
    with pytest.raises(TilingError, match=r"x: FromEnd\(1\) tiling of 12 elements needs padding to 16"):
        shards_of(Layout(ROW_MAJOR, tiling, STANDARD), (3, 12), "x")


def test_axis_outside_shape():
    tiling = TensorTiling(2, 1, (AxisTiling(Axis.from_start(3), 2),))
    with pytest.raises(TilingError, match=r"outside the shape \[3, 12\]"):
        shards_of(Layout(ROW_MAJOR, tiling, STANDARD), (3, 12), "x")


# Property tests ------------------------------------------------------------------

@st.composite
def tilings(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 24), min_size=rank, max_size=rank)))
    replicas = draw(st.integers(1, 3))
    if draw(st.booleans()) and rank:
        axes = (AxisTiling(LINEAR, draw(st.integers(1, 12)), block_size=draw(st.integers(1, 6)),
                           padding_multiple=draw(st.integers(1, 8)),
                           shard_padding_multiple=draw(st.integers(1, 3))),)
    else:
        dims = draw(st.lists(st.integers(0, rank - 1), unique=True, min_size=1, max_size=rank))
        axes = tuple(
            AxisTiling(Axis.from_start(d) if draw(st.booleans()) else Axis.from_end(rank - d),
                       draw(st.integers(1, 5)), block_size=draw(st.integers(1, 5)),
                       padding_multiple=draw(st.integers(1, 8)), shard_padding_multiple=draw(st.integers(1, 3)))
            for d in dims)
    # explicit strides from a random nesting order of the axes (and replicas last or first)
    if draw(st.booleans()):
        order = draw(st.permutations(range(len(axes))))
        stride = replicas if draw(st.booleans()) else 1
        strides = {}
        for i in order:
            strides[i] = stride
            stride *= axes[i].partitions
        axes = tuple(AxisTiling(a.axis, a.partitions, a.padding_groups, a.block_size, a.padding_multiple,
                                a.shard_padding_multiple, a.padding, strides[i]) for i, a in enumerate(axes))
    tile_count = math.prod(a.partitions for a in axes) * replicas
    layout = Layout(ROW_MAJOR, TensorTiling(tile_count, replicas, axes), STANDARD)
    return layout, shape


def _coverage(shards):
    """How often each element of the tensor is held, per replica: [replicas, *shape]."""
    layout, shape = shards.layout, shards.shape
    replicas = layout.tiling.replicas
    if layout.tiling.axes[0].axis.is_linear:
        flat = np.zeros(math.prod(shape), dtype=np.int64)
        for lo, hi in shards.splits[0].real_ranges():
            flat[lo:hi] += 1
        return np.broadcast_to(flat.reshape(shape), (replicas, *shape))
    cover = np.zeros(shape, dtype=np.int64)
    dims = [a.axis.dim(len(shape)) for a in layout.tiling.axes]
    for ranges in itertools.product(*(s.real_ranges() for s in shards.splits)):
        index = [slice(None)] * len(shape)
        for d, (lo, hi) in zip(dims, ranges):
            index[d] = slice(lo, hi)
        cover[tuple(index)] += 1
    return np.broadcast_to(cover, (replicas, *shape))


@settings(max_examples=150, deadline=None)
@given(tilings())
def test_tile_map_covers_every_element_once_per_replica(case):
    layout, shape = case
    try:
        shards = shards_of(layout, shape, "t")
    except TilingError as e:
        assert "tile map" in str(e)  # only a colliding explicit stride order may fail
        return
    assert (_coverage(shards) == 1).all()
    tiles = shards.tile_of().ravel()
    assert sorted(tiles.tolist()) == list(range(layout.tiling.tile_count))


@settings(max_examples=150, deadline=None)
@given(tilings(), st.sampled_from([Precision("F16"), Precision("F32"), Precision("F8F143", -4)]))
def test_largest_shard_times_tiles_holds_the_tensor(case, precision):
    layout, shape = case
    try:
        shards = shards_of(layout, shape, "t")
    except TilingError:
        return
    tensor_bytes = math.prod(shape) * precision.bytes
    largest = shards.largest_bytes(precision)
    per_tile = shards.bytes_per_tile(precision)
    assert largest * layout.tiling.tile_count >= tensor_bytes * layout.tiling.replicas
    assert per_tile.max() == largest
    assert per_tile.sum() >= tensor_bytes * layout.tiling.replicas


@settings(max_examples=150, deadline=None)
@given(tilings())
def test_layout_text_round_trips(case):
    layout, _ = case
    assert Layout.from_text(layout.to_text()) == layout
