"""Attention's tile mapping over heads, queries and keys together (`ops/attention.py`
`attention_grid`): poplin splits a grouped matmul's groups as one dimension of its
partition among the others, each split rounded up, so a head count sharing no factor
with the tiles still spreads. A GPT-2-shaped scaled dot-product attention (sequence
2048, head dim 50, a [2048, 2048] bool mask, F16, one Mk2 IPU of 1472 tiles) from 20
to 48 heads: the busiest tile's work stays near the even share, and its bytes never
jump more than that work grows."""

from __future__ import annotations

import pytest

from test_op_contract import lower, steps
from tileplan.kernel.options import AttentionProducts, Options
from tileplan.model.machine import MK2
from tileplan.model.precision import Precision
from tileplan.ops.attention import AttentionGrid, attention_costs, attention_grid

F16, BOOL = Precision("F16"), Precision("Bool")
SEQ, DIM, TILES = 2048, 50, MK2.tile_count


def _plan(heads: int, choice: AttentionProducts) -> tuple[AttentionGrid, int, list[str]]:
    """(the grid of the busiest tile's view, the bytes of the largest step, the steps)."""
    qkv = [((1, heads, SEQ, DIM), F16)] * 3
    plan, fragment = lower("sdpa", [*qkv, ((SEQ, SEQ), BOOL)], machine=MK2, where="wanted",
                           options=Options(attention_products=choice))
    g = plan.detail
    grid = AttentionGrid(heads, DIM, g.head_parts, g.query_parts, SEQ, SEQ, g.key_parts)
    kinds = [kind for kind, _, _ in steps(fragment)]
    costs = attention_costs(grid, 2, (False, 1))
    need = costs["streamed"] if "AttentionStreamed" in kinds else costs["materialized"]
    if "AttentionStreamed" in kinds:  # the step states exactly these bytes
        assert steps(fragment)[-1][1]["standard"] == need
    return grid, need, kinds


def test_the_issues_head_counts_no_longer_pile_work_on_a_few_tiles():
    # 24 heads: 8 head x 184 query partitions (3 heads and 12 rows a tile), as before;
    # 25 heads: gcd(25, 1472) = 1 used to put all 25 heads on every tile (334,096 B);
    # now 16 x 92, 2 heads and 23 rows: 2 x (2 x 64 x 50 x 2 + 23 x (64 + 50 + 2) x 4)
    # + 23 x 2048 x 1 = 94,048 B
    grid24, bytes24, _ = _plan(24, AttentionProducts.STREAMED)
    grid25, bytes25, _ = _plan(25, AttentionProducts.STREAMED)
    assert (grid24.head_parts, grid24.query_parts, bytes24) == (8, 184, 79680)
    assert (grid25.head_parts, grid25.query_parts, grid25.heads_per_part, grid25.rows) == (16, 92, 2, 23)
    assert bytes25 == 2 * (2 * 64 * 50 * 2 + 23 * (64 + 50 + 2) * 4) + 23 * 2048 == 94048


@pytest.mark.parametrize("choice", [AttentionProducts.AUTOMATIC, AttentionProducts.STREAMED])
def test_from_20_to_48_heads_the_bytes_never_jump_more_than_the_work_grows(choice):
    previous = None
    for heads in range(20, 49):
        grid, need, _ = _plan(heads, choice)
        even = heads * SEQ * SEQ * DIM / TILES
        assert grid.work <= 1.4 * even, (heads, grid)  # no tile takes much beyond its share
        if previous is not None:
            work, before = previous
            assert need / before <= grid.work / work, (heads, need, before, grid.work, work)
        previous = (grid.work, need)


def test_materialized_scores_are_spread_over_heads_queries_and_keys():
    """The materialized products split the keys too: every tile holds a block of its
    rows' scores, the busiest within 1.4 x the even share from 20 to 48 heads; with a
    divisor grid (the tile count's partitions multiply to it) a step between head
    counts can cost more than the work grows, but never more than 1.5 times."""
    previous = None
    for heads in range(20, 49):
        grid, need, kinds = _plan(heads, AttentionProducts.MATERIALIZED)
        assert kinds == ["AttentionScores", "Softmax", "AttentionValues"]
        assert grid.work <= 1.4 * heads * SEQ * SEQ * DIM / TILES, (heads, grid)
        if previous is not None:
            assert need <= 1.5 * previous, (heads, need, previous)
        previous = need


def test_the_grid_is_a_split_of_the_tiles_whatever_the_sizes():
    for heads, queries, keys in ((1, 1, 1), (25, 3, 3), (16, 1, 729), (7, 5000, 5000)):
        for tiles in (1, 4, 1216, 1472):
            grid = attention_grid(tiles, heads, 64, queries, keys, 2, AttentionProducts.AUTOMATIC)
            assert grid.head_parts * grid.query_parts * grid.key_parts == tiles
