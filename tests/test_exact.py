"""Exact per-tile accounting: the tile maps' arithmetic and its bound by the estimate."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.errors import TilingError
from tileplan.model.precision import Precision
from tileplan.model.tiling import shards_of, tile_of

from helpers import plan
from test_tiling import tilings

PRECISIONS = [Precision("F16"), Precision("F32"), Precision("F8F143", -4)]
BASE = "siglip-base-patch16-224"


@settings(max_examples=200, deadline=None)
@given(tilings(), st.sampled_from(PRECISIONS))
def test_bytes_per_tile_are_the_shards_of_the_tile_map(case, precision):
    """Every shard of every replica, placed by the tile map, holds its stored elements
    times the element bytes on its tile, and nothing else is on that tile: summed over
    the tiles, a value's exact bytes are its shard bytes summed over its tile map."""
    layout, shape = case
    try:
        shards = shards_of(layout, shape, "t")
    except TilingError:
        return
    elements = shards.shard_elements()  # [p_0, ..., p_n]
    tiles = tile_of(layout)  # [r, p_0, ..., p_n]
    expected = np.zeros(layout.tiling.tile_count, dtype=np.int64)
    for index in itertools.product(*(range(n) for n in tiles.shape)):
        expected[tiles[index]] += int(elements[index[1:]]) * precision.bytes
    per_tile = shards.bytes_per_tile(precision)
    assert per_tile.tolist() == expected.tolist()
    assert int(per_tile.sum()) == layout.tiling.replicas * int(elements.sum()) * precision.bytes
    assert int(per_tile.max()) == shards.largest_bytes(precision)


def test_values_of_different_sizes_put_their_larger_shards_on_different_tiles():
    """Blocks are spread by rounding p x blocks / P, so where the larger shards sit
    depends on the remainder: no single tile holds every value's largest shard."""
    from tileplan.kernel.layouts import linear_layout
    from tileplan.model.layout import Padding

    layout = linear_layout(1472, 1, "Ipu21", Padding.REJECT)
    qkv = shards_of(layout, (1152, 3456)).bytes_per_tile(Precision("F8F143", -4))  # 497664 blocks of 8
    mlp = shards_of(layout, (1152, 4304)).bytes_per_tile(Precision("F8F143", -4))  # 619776 blocks of 8
    assert set(qkv.tolist()) == {338 * 8, 339 * 8} and set(mlp.tolist()) == {421 * 8, 422 * 8}
    both = (qkv + mlp).max()
    assert both < qkv.max() + mlp.max()


def test_exact_peak_of_so400m_is_below_the_estimate():
    p = plan()
    exact, tile, step = p.exact.peak("total")
    assert exact < p.peaks.total
    assert int(p.exact.tile_peak.min()) < exact == int(p.exact.tile_peak.max())


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("weights", ["f8f143:-4", "f16"])
@pytest.mark.parametrize("attention", ["Materialized", "Streamed"])
def test_exact_worst_tile_never_exceeds_the_estimate(layers, weights, attention):
    """The estimate adds each live allocation's largest shard; the exact accounting adds
    the real shards tile by tile, so no tile can hold more than the estimate, in any
    step or region."""
    p = plan(model=BASE, layers=layers, weights=weights, attention=attention)
    assert p.scope == "program" and p.exact is not None
    assert p.exact.peak("total")[0] <= p.peaks.total
    assert p.exact.peak("standard")[0] <= p.peaks.standard
    assert p.exact.peak("interleaved")[0] <= p.peaks.interleaved
    for s, worst in zip(p.steps, p.exact.steps):
        assert worst.total <= s.usage["standard"] + s.usage["interleaved"], s.index
        assert worst.max_standard <= s.usage["standard"] and worst.max_interleaved <= s.usage["interleaved"]
    assert int(p.exact.tile_peak.max()) == p.exact.peak("total")[0]
