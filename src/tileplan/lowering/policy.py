"""Layout policies: where a parameter (or the model's input) rests.

Each operation's plan says, for each input, the layout it reads without a re-layout
(`wanted`) and the layout a parameter should rest in to be read that way (`rest`).
A policy picks a resting layout for every declared tensor from the plans of the
operations that read it.

* `default`: the first operation's inputs rest where it wants them (there is no
  earlier step to re-lay them out in); every other tensor (the Gemm weights, which
  the AMP wants replicated over the M partitions, the vectors, which an add or a norm
  wants replicated over the rows, the position table) rests compactly in a Linear
  tiling in 8-byte blocks, and is re-laid out by a `Copy` just before its use, so
  resident parameters cost the least memory per tile. The Linear
  tiling takes at most as many partitions as the tensor has blocks (a divisor of the
  tile count; the rest are replicas) with padding Reject: the weights take all 1472
  tiles as in the reference, a `[1,1,1152]` F16 vector's 288 blocks of 4 take 184
  partitions x 8 replicas (see `compact_layout`).
* `reference`: the reference planner's resting layouts. The first operation's inputs
  rest where it wants them, every Gemm weight rounded up to one element pair; every
  other tensor rests in a Linear tiling over all tiles in 8-byte blocks with padding
  Reject, which no vector of fewer than 1472 x 8 bytes can fill.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.errors import InputError
from tileplan.kernel.layouts import compact_layout, linear_layout
from tileplan.model.ir import Tensor
from tileplan.model.layout import Layout, Padding


@dataclass(frozen=True, slots=True)
class Reader:
    """One operation reading a tensor: its index, kind, input position and the plan's
    resting layout and alignment for that input."""

    op_index: int
    kind: str
    position: int
    rest: Layout | None
    alignment: int | None


class Policy:
    name = "abstract"

    def resting(self, tensor: Tensor, readers: list[Reader], tile_count: int, prefix: str
                ) -> tuple[Layout, int | None]:
        raise NotImplementedError


class DefaultPolicy(Policy):
    name = "default"

    def resting(self, tensor, readers, tile_count, prefix):
        first = next((r for r in readers if r.rest is not None), None)
        if first is not None and first.op_index == 0:
            return first.rest, first.alignment
        return compact_layout(tensor.elements, tensor.precision.bytes, tile_count, prefix), None


class ReferencePolicy(Policy):
    name = "reference"

    def resting(self, tensor, readers, tile_count, prefix):
        first = readers[0] if readers else None
        if first is not None and first.op_index == 0 and first.rest is not None:
            return first.rest, first.alignment
        return linear_layout(tile_count, tensor.precision.bytes, prefix, Padding.REJECT), None


POLICIES: dict[str, type[Policy]] = {"default": DefaultPolicy, "reference": ReferencePolicy}


def policy(name: str) -> Policy:
    if name not in POLICIES:
        raise InputError(f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}")
    return POLICIES[name]()
