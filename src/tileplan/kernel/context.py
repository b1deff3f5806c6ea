"""The read-only context every operator's plan and lowering is given.

`Kernel` knows the machine and the options and answers questions about layouts on
shapes (shards, value sizes). Nothing in it changes while a program is lowered but
its memo of sizes, which only remembers answers: a plan or a lowering is a function
of its operation, its inputs and this context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from tileplan.errors import TilingError
from tileplan.kernel.options import Kernels, Options
from tileplan.model.layout import Layout
from tileplan.model.machine import AmpGeometry, Machine
from tileplan.model.precision import Precision
from tileplan.model.tiling import Shards, round_up, shards_of

Shape = tuple[int, ...]


class Sized(NamedTuple):
    """A value's shards, its largest shard's bytes and those rounded up to its
    alignment; or, when the layout cannot hold the shape, None and the reason
    (`TilingError`'s detail, which names no value)."""

    shards: Shards | None
    shard_bytes: int | None
    aligned_bytes: int | None
    reason: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Kernel:
    """The machine and the options, with shard and size arithmetic."""

    machine: Machine
    options: Options
    #: whose rules plan the matmuls and convolutions (the policy's `kernels`)
    kernels: Kernels = Kernels.POPLIBS
    #: (layout, shape, precision, alignment) -> its size: a memo, nothing more
    _sizes: dict[tuple, Sized] = field(default_factory=dict, repr=False)

    @property
    def poplibs(self) -> bool:
        """Matmuls and convolutions as poplin plans them (`Kernels.POPLIBS`)."""
        return self.kernels is Kernels.POPLIBS

    @property
    def prefix(self) -> str:
        """The machine's memory-class prefix (`Ipu21`)."""
        return self.machine.class_prefix

    @property
    def tile_count(self) -> int:
        return self.machine.tile_count

    @property
    def cap_bytes(self) -> int | None:
        """The temporary-memory cap of one matmul or convolution per tile, in bytes."""
        p = self.options.available_memory_proportion
        return None if p is None else int(p * self.machine.tile_bytes)

    def amp(self, multiply: Precision) -> AmpGeometry:
        """The AMP geometry a product in `multiply` runs on, with the options' partials."""
        return self.machine.amp_for(multiply, self.options.partials)

    def shards(self, layout: Layout, shape: Shape, name: str) -> Shards:
        """Shards of a layout on a shape; raises the `TilingError` naming `name`."""
        return shards_of(layout, shape, name)

    def size(self, layout: Layout, shape: Shape, precision: Precision, alignment: int | None) -> Sized:
        """A value's size (see `Sized`), computed once per layout, shape, precision and
        alignment."""
        key = (layout, shape, precision, alignment)
        sized = self._sizes.get(key)
        if sized is None:
            try:
                shards = shards_of(layout, shape)
            except TilingError as e:
                sized = Sized(None, None, None, e.detail)
            else:
                shard = shards.largest_bytes(precision)
                sized = Sized(shards, shard, round_up(shard, alignment) if alignment else shard)
            self._sizes[key] = sized
        return sized
