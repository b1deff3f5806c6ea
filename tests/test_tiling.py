import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.errors import LayoutError, TextSyntaxError, TilingError
from tileplan.model.layout import (
    LINEAR, ROW_MAJOR, Axis, AxisTiling, Layout, MemoryClass, Padding, Spread, TensorTiling,
)
from tileplan.model.precision import Precision
from tileplan.check.shards import shard_layout, tile_map
from tileplan.kernel.layouts import LINEAR_MIN_BYTES_PER_TILE, mapped_linearly, turn_linear
from tileplan.model.tiling import default_strides, replica_offsets, shards_of, tile_of

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
        leading = draw(st.booleans())  # PopLibs' splitRegions spread, at least min_blocks a partition
        axes = (AxisTiling(LINEAR, draw(st.integers(1, 12)), block_size=draw(st.integers(1, 6)),
                           padding_multiple=draw(st.integers(1, 8)),
                           shard_padding_multiple=draw(st.integers(1, 3)),
                           spread=Spread.LEADING if leading else Spread.ROUNDED,
                           min_blocks=draw(st.integers(1, 6)) if leading else 1),)
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
                                a.shard_padding_multiple, a.padding, strides[i], a.spread, a.min_blocks)
                     for i, a in enumerate(axes))
    tile_count = math.prod(a.partitions for a in axes) * replicas
    first = draw(st.integers(0, tile_count - 1)) if draw(st.booleans()) else 0  # the map turned on
    layout = Layout(ROW_MAJOR, TensorTiling(tile_count, replicas, axes, first), STANDARD)
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


@settings(max_examples=150, deadline=None)
@given(tilings())
def test_check_cuts_and_maps_every_layout_as_the_planner_does(case):
    """`tileplan check`'s shard arithmetic (written apart from the planner's) gives the
    same shards on the same tiles, turned maps and Leading spreads included."""
    layout, shape = case
    try:
        shards = shards_of(layout, shape, "t")
    except TilingError:
        with pytest.raises(TilingError):
            shard_layout(layout, shape)
        return
    mine = shard_layout(layout, shape)
    assert mine.largest_elements == shards.largest_elements
    assert mine.shard_elements().tolist() == shards.shard_elements().ravel().tolist()
    assert tile_map(layout.tiling).tolist() == tile_of(layout).reshape(layout.tiling.replicas, -1).tolist()


def _leading(partitions: int, block: int, min_blocks: int, first: int = 0) -> Layout:
    axis = AxisTiling(LINEAR, partitions, 1, block, block, 1, Padding.ZERO, None, Spread.LEADING, min_blocks)
    return Layout(ROW_MAJOR, TensorTiling(partitions, 1, (axis,), first), STANDARD)


def test_a_leading_spread_fills_the_fewest_first_partitions_as_split_regions_does():
    # poputil splitRegions, 125 grains over 1472 tiles at 16 grains or more a tile:
    # at most max(ceil(125 / 1472), ceil(125 / (125 // 16))) = 18 a tile -> 7 tiles,
    # tile v from grain floor(v x 125 / 7): 17, 18, 18, 18, 18, 18, 18
    counts = shards_of(_leading(1472, 4, 16), (500,)).splits[0].block_counts
    assert counts[:7] == (17, 18, 18, 18, 18, 18, 18) and not any(counts[7:])
    # a large tensor, one grain more than 24 a tile: at most 25 a tile -> ceil(35329 / 25)
    # = 1414 tiles of 24 or 25 grains, the last 58 tiles empty (the even spread would use all)
    counts = shards_of(_leading(1472, 4, 16), (4 * 35329,)).splits[0].block_counts
    assert set(counts[:1414]) == {24, 25} and not any(counts[1414:])
    # fewer grains than the minimum: all on tile 0
    assert shards_of(_leading(1472, 4, 16), (9,)).splits[0].block_counts[:2] == (3, 0)


def test_a_turned_map_starts_on_its_first_tile_and_wraps():
    layout = _leading(1472, 4, 16, first=1465)  # 7 tiles from 1465: 1465..1471
    tiles = tile_of(layout).ravel()
    held = shards_of(layout, (500,)).shard_elements().ravel()
    assert sorted(tiles[held > 0].tolist()) == list(range(1465, 1472))
    layout = _leading(1472, 4, 16, first=1470)  # wraps: 1470, 1471, 0..4
    tiles = tile_of(layout).ravel()
    assert sorted(tiles[shards_of(layout, (500,)).shard_elements().ravel() > 0].tolist()) == [0, 1, 2, 3, 4, 1470, 1471]


def test_leading_and_first_tile_are_named_only_when_used_and_checked():
    text = _leading(1472, 4, 16, first=18).to_text()
    assert "spread: Leading { min_blocks: 16 } }], first_tile: 18 }" in text
    assert Layout.from_text(text) == _leading(1472, 4, 16, first=18)
    plain = AxisTiling(LINEAR, 4, 1, 4, 4, 1, Padding.ZERO, None)
    assert "spread" not in plain.to_text() and "first_tile" not in TensorTiling(4, 1, (plain,)).to_text()
    with pytest.raises(LayoutError, match="min_blocks applies to spread Leading only"):
        AxisTiling(LINEAR, 4, min_blocks=2)
    with pytest.raises(LayoutError, match="first_tile must be at least 0 and below tile_count 4, found 4"):
        TensorTiling(4, 1, (plain,), 4)
    with pytest.raises(TextSyntaxError, match="spread must be Leading"):
        Layout.from_text(text.replace("Leading {", "Trailing {"))


def test_the_linear_mapper_starts_each_tensor_where_the_last_ended():
    # PopART's LinearMapper: poputil's mapping turned right by the running start, which
    # then moves on by the tiles it used: three 2,304 B F16 vectors take 18 tiles each
    start, firsts = 0, []
    for _ in range(3):
        layout, start = turn_linear(mapped_linearly(1472, 2, "Ipu21", LINEAR_MIN_BYTES_PER_TILE), (1152,), start)
        firsts.append(layout.tiling.first_tile)
    assert firsts == [0, 18, 36] and start == 54
    # near the end it wraps, modulo the tiles
    layout, start = turn_linear(mapped_linearly(1472, 2, "Ipu21", 128), (1152,), 1460)
    assert layout.tiling.first_tile == 1460 and start == 6
