"""Layout policies: where a parameter (or the model's input) rests.

Each operation's plan says, for each input, the layout it reads without a re-layout
(`wanted`) and the layout a parameter should rest in to be read that way (`rest`).
A policy picks a resting layout for every declared tensor from the plans of the
operations that read it.

* `default`: a tensor is created in the layout its consumer asks for, as PopART
  "unwinds" an input to its consumer's `createInput` (a matmul's right-hand side
  through `poplin::createMatMulInputRHS`, a convolution's weights through
  `createWeights`, an embedding table through `popops::createSliceableTensor`;
  popart willow/src/popx/irlowering.cpp `getCreatorEndpoints`, CONV-NOTES.md section
  4). The creator is the reader PopART ranks first: a gather (its creator priority
  is the highest), else the earliest reader with a layout to give. A variable is held
  once: where the consumer's layout replicates the tensor (the AMP wants the weights
  on every M partition, a norm its scale on every row partition), the tensor is
  spread over the tiles instead (each element once) and the consumer's lowering
  broadcasts it into its own layout at its step (a `Copy` that lives only there, the
  broadcast PopLibs counts in the operation's temporary bytes). Other readers that
  want another layout copy it at their step (the copy is named after them). Every
  tensor nothing asks for is created linearly, as PopART's `LinearMapper` creates an
  input no operation creates (graphcore/popart willow/src/popx/irlowering.cpp
  `initTensorTask`, `linearMapper.mapTensor`; willow/src/popx/linearmapper.cpp): poputil's
  `calcLinearTileMapping` (8-byte grains from tile 0, at least 128 bytes a tile,
  `mapped_linearly`), turned to start on the tile after the last tensor it created
  (`next_mapping_start_index`; `lowering.program.place_tensors` keeps the count, in
  declaration order). A `[1,1,1152]` F16 vector's 2,304 B take 18 tiles of 128 B.
Each policy also says whose rules plan the matmuls and convolutions (`kernels`:
PopLibs', or the reference planner's) and how the values the lowering makes are named
(`names`: after what they are, or the reference's `operation N result 0`).

A policy also says how the verdict counts a tile's memory (`memory`): the default
counts all of it against the tile, as Poplar does; the reference policy keeps the
reference planner's fixed budgets.

* `reference`: the reference planner's resting layouts. The first operation's inputs
  rest where it wants them, every Gemm weight rounded up to one element pair; every
  other tensor rests in a Linear tiling over all tiles in 8-byte blocks with padding
  Reject, which no vector of fewer than 1472 x 8 bytes can fill.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.errors import InputError
from tileplan.kernel.layouts import LINEAR_MIN_BYTES_PER_TILE, linear_layout, mapped_linearly
from tileplan.kernel.options import Kernels
from tileplan.model.ir import Tensor
from tileplan.model.layout import Layout, Padding
from tileplan.model.machine import MemoryAccounting


@dataclass(frozen=True, slots=True)
class Resting:
    """Where a declared tensor rests: its layout, the alignment its reader asks for
    (None: none), and whether it is created linearly (PopART's `LinearMapper`: the
    caller turns its map to start after the last such tensor)."""

    layout: Layout
    alignment: int | None = None
    linearly_created: bool = False


@dataclass(frozen=True, slots=True)
class Reader:
    """One operation reading a tensor: its index, kind, input position and the plan's
    resting layout and alignment for that input."""

    op_index: int
    kind: str
    position: int
    rest: Layout | None
    alignment: int | None


class ValueNames(Enum):
    """How the lowering names the values it makes (`tileplan.lowering.naming`): after
    what each is, or as the reference did (`operation N result 0`)."""

    DESCRIPTIVE = "descriptive"
    REFERENCE = "reference"


class Policy:
    name = "abstract"
    #: parameters, buffers, constants and training state live for the whole program
    #: (Poplar's variables)
    always_live = True
    #: whose rules plan and lower the matmuls and convolutions
    kernels = Kernels.POPLIBS
    names = ValueNames.DESCRIPTIVE
    #: what the verdict compares with the tile: all its memory, as Poplar does
    memory = MemoryAccounting.ALL_MEMORY

    def resting(self, tensor: Tensor, readers: list[Reader], tile_count: int, prefix: str) -> Resting:
        raise NotImplementedError


class DefaultPolicy(Policy):
    name = "default"

    def resting(self, tensor, readers, tile_count, prefix):
        creator = creator_of(readers)
        if creator is not None and creator.rest is not None and creator.rest.tiling.replicas == 1:
            return Resting(creator.rest, creator.alignment)
        return Resting(mapped_linearly(tile_count, tensor.precision.bytes, prefix, LINEAR_MIN_BYTES_PER_TILE),
                       linearly_created=True)


#: operators whose layout wins when several read a tensor (PopART's creator priority:
#: Gather's `inputCreatorPriority` is the highest; popart willow/src/popx/op/gatherx.cpp)
FIRST_CREATORS = ("gather", "embedding")


def creator_of(readers: list[Reader]) -> Reader | None:
    """The reader whose layout a tensor is created in: a gather first, else the
    earliest reader that has a layout to give (PopART's `PICreatorCandidateCmp`:
    priority, then the earliest in the schedule)."""
    offering = [r for r in readers if r.rest is not None]
    for r in offering:
        if r.kind in FIRST_CREATORS:
            return r
    return offering[0] if offering else None


class ReferencePolicy(Policy):
    name = "reference"
    always_live = False  # the reference planner freed them after their last use
    kernels = Kernels.REFERENCE
    names = ValueNames.REFERENCE
    memory = MemoryAccounting.RESERVED_BUDGETS  # its fixed budgets and exchange rows

    def resting(self, tensor, readers, tile_count, prefix):
        first = readers[0] if readers else None
        if first is not None and first.op_index == 0 and first.rest is not None:
            return Resting(first.rest, first.alignment)
        return Resting(linear_layout(tile_count, tensor.precision.bytes, prefix, Padding.REJECT))


POLICIES: dict[str, type[Policy]] = {"default": DefaultPolicy, "reference": ReferencePolicy}


def policy(name: str) -> Policy:
    if name not in POLICIES:
        raise InputError(f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}")
    return POLICIES[name]()
