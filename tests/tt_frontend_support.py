"""A hand-built Tenstorrent frontend for the tests of the target seam, the CLI, the API
and the what-if rows (the real frontends, tt-mlir and tt-transformers, are their own
modules): it takes the model names of `tt_plan_support.PROGRAMS` and one more,
`chunked`, whose program grows with its prefill chunk and batch:

- `chunked`: x [batch x chunk, 4096] in DRAM, a weight [4096, 4096] in DRAM (the weights'
  dtype), the matmul's output in L1 interleaved, then a relu into DRAM. Per bank the L1
  output takes ceil(batch x chunk / 32 x 128 / 72) tiles: 8,192 rows fit the 1.33 MB bank
  (455 tiles), 16,384 rows do not (911 tiles).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from tileplan.errors import InputError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent import frontend as frontends
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontend import Knob, Reproduction, Search
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.program import Frontend, TtProgram
from tileplan.targets.tenstorrent.tiles import DataType
from tileplan.targets.tenstorrent.versions import Stack

from tt_plan_support import PROGRAMS, Builder, tile

CHUNKS = tuple(32 * 2**k for k in range(11))  # 32 .. 32768


@dataclass(frozen=True)
class HandOptions:
    prefill_chunk: int = 2048
    batch: int = 1
    weights: str = "bf16"


class HandFrontend:
    frontend = Frontend.TT_TRANSFORMERS
    keys = frozenset({"prefill_chunk", "batch", "weights"})
    stack = Stack.TT_MLIR

    def device_defaults(self, model: Any, options: Any, machine: str) -> Mapping[str, int]:
        return {}

    def options(self, model: Any, given: Mapping[str, Any], device: Device) -> HandOptions:
        if model != "chunked" and model not in PROGRAMS:
            raise InputError(f"the hand frontend does not implement {model!r}; it implements chunked, "
                             f"{', '.join(sorted(PROGRAMS))}")
        DataType.parse(given.get("weights", "bf16"))
        return HandOptions(**given)

    def lower(self, model: Any, options: HandOptions, device: Device) -> TtProgram:
        if model != "chunked":
            return PROGRAMS[model]().program()
        b = Builder("chunked")
        rows = options.batch * options.prefill_chunk
        x = b.upload("x", tile((1, 1, rows, 4096)), Role.INPUT)
        w = b.upload("layers.0.w", tile((1, 1, 4096, 4096), dtype=DataType.parse(options.weights)))
        h = b.op(OpKind.MATMUL, "layers.0.matmul", (x, w), OutputRequest(BufferType.L1), free=(x,))
        b.op(OpKind.RELU, "layers.0.relu", (h,), free=(h,))
        return b.program()

    def words(self, options: HandOptions) -> tuple[tuple[str, Any], ...]:
        return (("batch", options.batch), ("prefill_chunk", options.prefill_chunk), ("weights", options.weights))

    def knobs(self, options: HandOptions, device: Device) -> tuple[Knob, ...]:
        return (Knob("prefill_chunk", Search.LARGEST, CHUNKS, options.prefill_chunk),
                Knob("weights", Search.EACH, ("bf16", "bfp8"), options.weights))

    def turn(self, options: HandOptions, key: str, value: Any) -> HandOptions:
        return replace(options, **{key: value})

    def reproduce(self, options: HandOptions, program: TtProgram, device: Device, moved: tuple[str, ...]
                  ) -> Reproduction:
        return Reproduction((f"MAX_PREFILL_CHUNK_SIZE={options.prefill_chunk // 1024 or 1}",))


@contextmanager
def hand_frontend() -> Iterator[HandFrontend]:
    """The hand frontend registered as `--frontend hand` while the block runs."""
    fe = HandFrontend()
    frontends.register("hand", fe)
    try:
        yield fe
    finally:
        frontends.unregister("hand")
