"""TTNN data types, layouts and pages: the units tt-metal's allocator counts in.

A TTNN tensor is laid out as a 2-D array: every outer dimension is folded into the
height, the last dimension is the width (tt-metal tech_reports/tensor_layouts/
tensor_layouts.md section 1). In TILE layout the height and width are padded up to
32 and each 32 x 32 tile (four 16 x 16 faces) is one page; in ROW_MAJOR layout one
row of the width is one page (for a sharded row-major buffer, one row of the shard).

Worked example: a [2, 12, 1024, 64] bf16 tensor in TILE layout is 2*12*1024 = 24,576
rows of 64: 768 tile rows x 2 tile columns = 1,536 pages of 2,048 B.

Tile bytes are tt-metal's `Tile::get_tile_size` (tt_metal/impl/data_format/tile.cpp):
a block-float tile holds one byte (bfp8), half a byte (bfp4) or a quarter byte (bfp2)
per element plus a shared exponent per 16-element face row: 16 rows x 4 faces = 64 B
(already a multiple of the 16-B alignment).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from tileplan.errors import InputError

#: a tile's height and width in elements (tt-metal `constants::TILE_HEIGHT/WIDTH`)
TILE = 32
#: a tile's face (tt-metal `constants::FACE_HEIGHT/WIDTH`)
FACE = 16
#: bytes of a block-float tile's shared exponents: one per face row, 16 rows x 4 faces
#: (tile.cpp `get_tile_size`: `round_up(face_r_dim * num_faces, 16)`)
EXPONENT_BYTES = 64


class DataType(Enum):
    """A TTNN data type (`ttnn.bfloat16` ...), with its name as ttnn spells it."""

    BFLOAT16 = "bfloat16"
    FLOAT32 = "float32"
    BFLOAT8_B = "bfloat8_b"
    BFLOAT4_B = "bfloat4_b"
    UINT32 = "uint32"
    INT32 = "int32"
    UINT16 = "uint16"
    UINT8 = "uint8"

    @property
    def block_float(self) -> bool:
        """A block-float type: exists only in TILE layout."""
        return self in (DataType.BFLOAT8_B, DataType.BFLOAT4_B)

    @property
    def tile_bytes(self) -> int:
        """One 32 x 32 tile (tt-metal tile.cpp `Tile::get_tile_size`): bf16 2,048; fp32
        4,096; bfloat8_b 1,088 (1,024 + 64 exponent bytes); bfloat4_b 576 (512 + 64)."""
        if self is DataType.BFLOAT8_B:
            return TILE * TILE + EXPONENT_BYTES
        if self is DataType.BFLOAT4_B:
            return TILE * TILE // 2 + EXPONENT_BYTES
        return TILE * TILE * self.element_bytes

    @property
    def element_bytes(self) -> int:
        """Bytes of one element in ROW_MAJOR layout (block floats have none: they are
        tiles only)."""
        if self.block_float:
            raise InputError(f"{self.value} exists only in TILE layout; a row-major page has no element size for it")
        return _ELEMENT_BYTES[self]

    @classmethod
    def parse(cls, text: str) -> "DataType":
        """A data type from its ttnn name or the short names tileplan's options take
        (`bf16`, `f32`, `bfp8`, `bfp4`; tt-mlir's `bfp_bf8`, `bfp_bf4`)."""
        key = text.strip().lower()
        found = _ALIASES.get(key)
        if found is None:
            raise InputError(f"unknown Tenstorrent data type {text!r}; expected one of "
                             f"{', '.join(sorted(_ALIASES))}")
        return found


_ELEMENT_BYTES = {DataType.BFLOAT16: 2, DataType.FLOAT32: 4, DataType.UINT32: 4, DataType.INT32: 4,
                  DataType.UINT16: 2, DataType.UINT8: 1}
_ALIASES = {**{d.value: d for d in DataType}, "bf16": DataType.BFLOAT16, "f32": DataType.FLOAT32,
            "fp32": DataType.FLOAT32, "bfp8": DataType.BFLOAT8_B, "bfp4": DataType.BFLOAT4_B,
            "bfp_bf8": DataType.BFLOAT8_B, "bfp_bf4": DataType.BFLOAT4_B}


class Layout(Enum):
    """A TTNN tensor layout (`ttnn.TILE_LAYOUT`, `ttnn.ROW_MAJOR_LAYOUT`)."""

    TILE = "tile"
    ROW_MAJOR = "row_major"


def round_up(value: int, multiple: int) -> int:
    """`value` rounded up to a multiple of `multiple` (> 0)."""
    assert multiple > 0, multiple
    return -(-value // multiple) * multiple


def height_width(shape: tuple[int, ...]) -> tuple[int, int]:
    """The 2-D view of `shape`: outer dimensions folded into the height, the last one
    the width (a rank-1 tensor is one row). [2, 12, 1024, 64] -> (24576, 64)."""
    if not shape:
        return 1, 1
    return math.prod(shape[:-1]), shape[-1]


def padded_height_width(shape: tuple[int, ...], layout: Layout) -> tuple[int, int]:
    """The 2-D view with TILE layout's padding: the last two dimensions each rounded up
    to 32 (tt-metal pads a tile tensor's logical shape per dimension, so [3, 1, 20, 40]
    pads to [3, 1, 32, 64]: height 96, width 64)."""
    if layout is Layout.ROW_MAJOR or not shape:
        return height_width(shape)
    dims = list(shape) if len(shape) >= 2 else [1, *shape]
    dims[-1] = round_up(dims[-1], TILE)
    dims[-2] = round_up(dims[-2], TILE)
    return math.prod(dims[:-1]), dims[-1]


@dataclass(frozen=True, slots=True)
class Pages:
    """A buffer's pages: `count` pages of `page_bytes` (before the buffer type's
    alignment). Invariant: count >= 0, page_bytes >= 1."""

    count: int
    page_bytes: int

    def __post_init__(self) -> None:
        if self.count < 0 or self.page_bytes < 1:
            raise ValueError(f"pages: count {self.count} must be >= 0 and page_bytes {self.page_bytes} >= 1")


def pages(shape: tuple[int, ...], dtype: DataType, layout: Layout, page_width: int | None = None) -> Pages:
    """The pages of a tensor: TILE, one page per tile of the padded 2-D view; ROW_MAJOR,
    one page per row of `page_width` elements (the whole width for an interleaved
    buffer, the shard's width for a sharded one).

    [2, 12, 1024, 64] bf16 TILE -> 1,536 pages of 2,048 B; [1, 1, 50176, 3] bf16
    ROW_MAJOR -> 50,176 pages of 6 B (the allocator then aligns each page)."""
    if layout is Layout.TILE:
        h, w = padded_height_width(shape, layout)
        return Pages((h // TILE) * (w // TILE), dtype.tile_bytes)
    if dtype.block_float:
        raise InputError(f"{dtype.value} exists only in TILE layout, found ROW_MAJOR")
    h, w = height_width(shape)
    width = w if page_width is None else page_width
    if width < 1 or w % width:
        raise InputError(f"a row-major page of {width} elements must divide the width {w}")
    return Pages(h * (w // width), width * dtype.element_bytes)
