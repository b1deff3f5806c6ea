"""Tenstorrent tiles and pages (tileplan.targets.tenstorrent.tiles) against tt-metal's
tile sizes (tile.cpp `Tile::get_tile_size`) and the layout rules of
tech_reports/tensor_layouts/tensor_layouts.md."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.tiles import DataType, Layout, Pages, padded_height_width, pages


@pytest.mark.parametrize(("dtype", "tile_bytes"), [
    (DataType.BFLOAT16, 2048), (DataType.FLOAT32, 4096), (DataType.BFLOAT8_B, 1088), (DataType.BFLOAT4_B, 576),
    (DataType.UINT32, 4096), (DataType.UINT16, 2048), (DataType.UINT8, 1024)])
def test_tile_bytes_are_tt_metals(dtype: DataType, tile_bytes: int) -> None:
    assert dtype.tile_bytes == tile_bytes


def test_a_tile_tensor_pads_its_last_two_dimensions_to_32() -> None:
    assert padded_height_width((3, 1, 20, 40), Layout.TILE) == (96, 64)
    assert pages((3, 1, 20, 40), DataType.BFLOAT16, Layout.TILE) == Pages(6, 2048)
    # the gtest's I4x2 tensor: 4x2x160x224 = 280 tiles
    assert pages((4, 2, 160, 224), DataType.BFLOAT16, Layout.TILE).count == 280


def test_a_row_major_page_is_one_row_or_one_shard_row() -> None:
    assert pages((1, 1, 50176, 3), DataType.BFLOAT16, Layout.ROW_MAJOR) == Pages(50176, 6)
    assert pages((3, 1, 1024, 1024), DataType.BFLOAT16, Layout.ROW_MAJOR, page_width=256) == Pages(3072 * 4, 512)


def test_block_floats_exist_only_as_tiles() -> None:
    with pytest.raises(InputError, match="only in TILE layout"):
        pages((32, 32), DataType.BFLOAT8_B, Layout.ROW_MAJOR)


def test_data_types_parse_from_ttnn_and_short_names() -> None:
    assert DataType.parse("bfp8") is DataType.BFLOAT8_B
    assert DataType.parse("bfloat4_b") is DataType.BFLOAT4_B
    with pytest.raises(InputError, match="unknown Tenstorrent data type 'f8'; expected one of"):
        DataType.parse("f8")


@given(st.lists(st.integers(1, 300), min_size=1, max_size=4))
def test_tile_pages_cover_every_element(shape: list[int]) -> None:
    p = pages(tuple(shape), DataType.BFLOAT16, Layout.TILE)
    elements = 1
    for d in shape:
        elements *= d
    assert p.count * 32 * 32 >= elements


def test_per_bank_bytes_are_tt_metals_bank_size_spread() -> None:
    from tileplan.targets.tenstorrent.memory import (
        BufferType, CoreRange, MemoryConfig, MemoryLayout, ShardSpec, TensorSpec, bytes_per_bank,
    )
    # the gtest's HS16 tensor: 3x1x1024x1024 bf16 row-major, shards of 192 x 1024 on 16 cores
    hs16 = TensorSpec((3, 1, 1024, 1024), DataType.BFLOAT16, Layout.ROW_MAJOR,
                      MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED,
                                   ShardSpec(CoreRange.grid(4, 4), (192, 1024))))
    assert hs16.shards() == 16
    assert bytes_per_bank(hs16.shard_pages(), hs16.pages().page_bytes, 1, 16) == 393_216
    # I4x2 interleaved in L1: 280 tiles over 56 banks (N300, worker dispatch) and 128 (E150)
    i4x2 = TensorSpec((4, 2, 160, 224), DataType.BFLOAT16, Layout.TILE, MemoryConfig(BufferType.L1))
    assert bytes_per_bank(i4x2.pages().count, 2048, 56, 16) == 10_240
    assert bytes_per_bank(i4x2.pages().count, 2048, 128, 16) == 6_144
    # tt-mlir #8044: 12,960 bf16 tiles sharded over 48 cores -> 552,960 B a bank
    assert bytes_per_bank(12_960, 2048, 48, 32) == 552_960
    assert CoreRange.grid(8, 8).text() == "[0-0 - 7-7]"
    assert CoreRange.grid(8, 8).text(2025) == "[(x=0,y=0) - (x=7,y=7)]"
