"""The sliding-window config tensors of a halo and a conv2d, as buffers and the circular
buffers that read them: where they live (L1_SMALL, or DRAM with `config_tensors_in_dram`),
for how long, and tt-metal's check of the conv's reader-indices page.

Sizes: ops/tt_sliding_window.py (a core's row of each tensor). Placement (tenstorrent/
tt-metal ttnn/cpp/ttnn/operations/sliding_window/sliding_window.cpp
`construct_on_host_config_tensor`, `move_config_tensor_to_device`): in L1_SMALL, a
HEIGHT_SHARDED UINT16 tensor of one row a core of the op's grid (the N x H x W rows
repeated over block and width sharding's channel cores), shard [1, row]; in DRAM
(`store_in_dram`), the N x H x W cores' rows unrepeated, DRAM interleaved, a page a row.
The halo's four (halo/device/untilize_with_halo_program_factory.cpp) are made and freed
inside the halo operation; its CBs `padding_config0/1` and `gather_config0/1` take one
page of the buffer's page size, bound to the L1_SMALL buffer, bound to nothing (L1 the
program reserves) when the tensors are in DRAM. The conv's reader indices (conv2d/device/
conv2d_op_sharded_program_factory.cpp) are made for the conv program: its READER_INDICES
CB takes the buffer's page, bound, in L1_SMALL; in DRAM the CB keeps `get_cb_info`'s
page, N x 32 x 2 B for N output tiles a core, and the factory asserts the tensor's page
fits it: "CB page size {} should be greater than the config tensor page size {}" (the
TT_FATAL tt-xla's AudioLDM runs hit on a 16 x 2 output: 64 against 68; tt-xla
remediation notes, tt-metal 3fa4d753); from tt-metal PR #43193 (2026-04-27) the CB
takes the tensor's own page either way and the row is checked against that worst case
("Reader indices buffer page size {} exceeds worst-case CB size {}"): `ReaderIndicesCb`,
devices/software.toml `reader_indices_cb`. With the device's program cache the tensors
stay as long as their program is cached (plan.py; `DeviceBuffer.cache_key`).

Worked example (H3 of TENSTORRENT-NOTES.md, the graph-capture trace of a 3x3 conv of
128 x 128 x 32 height-sharded over 103 Blackhole cores): L1_SMALL buffers of 12, 12, 40
and 40 B a core for the halo (16, 16, 48, 48 B a bank at 16-B alignment; 1,236 and
4,120 B in all) and 20 B (32 a bank; 2,060 in all) for the conv's reader indices.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED,
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    MemoryLayout,
    ShardSpec,
    TensorSpec,
)
from tileplan.targets.tenstorrent.ops.base import (
    BufferRole,
    CircularBuffer,
    DeviceBuffer,
    OpTarget,
    cbuf,
    require,
    tensor_buffer,
)
from tileplan.targets.tenstorrent.ops.tt_sliding_window import (
    ENTRY_BYTES,
    SlidingWindow,
    conv_reader_indices_bytes,
    halo_config_bytes,
)
from tileplan.targets.tenstorrent.tiles import DataType, Layout
from tileplan.targets.tenstorrent.versions import ReaderIndicesCb

HALO_CONFIGS = ("padding_config0", "padding_config1", "gather_config0", "gather_config1")


@dataclass(frozen=True, slots=True)
class ConfigPlacement:
    """Where an op's config tensors go: the op's grid, its cores along N x H x W (the
    rows a DRAM copy holds) and whether they are in DRAM (`config_tensors_in_dram`)."""

    grid: CoreRange | CoreRangeSet
    cores_nhw: int
    in_dram: bool

    def buffer(self, name: str, row_bytes: int, target: OpTarget, live: tuple[int, int],
               program: str) -> DeviceBuffer:
        """The config tensor of `row_bytes` a core (an even count of UINT16 entries), held
        by the cached program `program` names (its cache key: `DeviceBuffer.cache_key`)."""
        width = row_bytes // ENTRY_BYTES
        if self.in_dram:
            spec = TensorSpec((self.cores_nhw, width), DataType.UINT16, Layout.ROW_MAJOR, DRAM_INTERLEAVED)
        else:
            cores = self.grid.cores
            spec = TensorSpec((cores, width), DataType.UINT16, Layout.ROW_MAJOR,
                              MemoryConfig(BufferType.L1_SMALL, MemoryLayout.HEIGHT_SHARDED,
                                           ShardSpec(self.grid, (1, width))))
        return replace(tensor_buffer(name, BufferRole.CONFIG, spec, target, live), cache_key=f"{program} {name}")


def halo_configs(window: SlidingWindow, input_shard: ShardSpec, dtype: DataType, where: ConfigPlacement,
                 first_cb: int, target: OpTarget, halo: int) -> tuple[list[CircularBuffer], list[DeviceBuffer]]:
    """The halo program's four config CBs (indices from `first_cb`) and the four config
    tensors, alive through the halo program (index `halo`) and, with a program cache,
    as long as the program is cached (its key, as `HaloParams` and the input hash: the
    window, the input's shard and dtype, where the configs go)."""
    input_shard_height = input_shard.shape[0]
    program = f"halo {window!r} {input_shard!r} {dtype.value} {where!r}"
    sizes = halo_config_bytes(window, input_shard_height)
    rows = (sizes.padding_config0, sizes.padding_config1, sizes.gather_config0, sizes.gather_config1)
    cbs = [cbuf(first_cb + i, name, 1, row, where.grid, globally_allocated=not where.in_dram)
           for i, (name, row) in enumerate(zip(HALO_CONFIGS, rows))]
    buffers = [where.buffer(f"halo_{name}", row, target, (halo, halo), program)
               for name, row in zip(HALO_CONFIGS, rows)]
    return cbs, buffers


def reader_indices(window: SlidingWindow, act_block_h_ntiles: int, split_reader: bool, where: ConfigPlacement,
                   rule: ReaderIndicesCb, op: str) -> tuple[int, int]:
    """The conv's reader-indices row in bytes and its READER_INDICES CB's page, with the
    build's check of the row against `get_cb_info`'s worst case, the output tiles a core
    x 32 x 2 B (`ReaderIndicesCb`)."""
    row = conv_reader_indices_bytes(window, act_block_h_ntiles, split_reader=split_reader)
    worst = window.output_shard_height * ENTRY_BYTES
    if rule is ReaderIndicesCb.ACTUAL:
        require(row <= worst, op, f"Reader indices buffer page size {row} exceeds worst-case CB size {worst} "
                "(tt-metal conv2d_op_program_factory_common.cpp get_cb_info, from PR #43193)")
        return row, row
    require(not where.in_dram or row <= worst, op,
            f"CB page size {worst} should be greater than the config tensor page size {row} (tt-metal "
            "conv2d_op_sharded_program_factory.cpp: with the config tensors in DRAM the reader indices outgrow "
            "get_cb_info's page of 2 B an output row)")
    return row, worst if where.in_dram else row
