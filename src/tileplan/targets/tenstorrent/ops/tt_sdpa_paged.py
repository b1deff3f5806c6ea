"""chunked_scaled_dot_product_attention: a prefill chunk's queries against the paged KV
cache through a page table (tt-metal ttnn/cpp/ttnn/operations/transformer/sdpa/device/
sdpa_program_factory.cpp, the `is_chunked` path: the reader takes the page table's row
through c_6, `cb_id_page_table`, one aligned page). Otherwise the prefill factory's
circular buffers (tt_sdpa.plan_sdpa), with K and V the cache tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, cbuf, require
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_sdpa import SdpaAttrs, plan_sdpa
from tileplan.targets.tenstorrent.tiles import round_up


@dataclass(frozen=True, slots=True)
class ChunkedSdpaAttrs:
    """The prefill attributes and the page table (a spec)."""

    sdpa: SdpaAttrs
    page_table: TensorSpec


def plan_sdpa_chunked(kind: OpKind, req: OpRequest, attrs: ChunkedSdpaAttrs) -> OpPlan:
    """chunked_scaled_dot_product_attention (inputs q, the K cache, the V cache)."""
    require(len(req.inputs) >= 3, kind.value, "inputs q, K cache, V cache")
    plan = plan_sdpa(OpKind.SDPA, req, attrs.sdpa)
    program = plan.programs[0]
    table = attrs.page_table
    page = round_up(table.pages().page_bytes, req.target.alignment(table.memory.buffer_type))
    cbs = (*program.circular_buffers, cbuf(6, "page_table", 1, page, program.cores))
    return replace(plan, op=kind.value, programs=(replace(program, circular_buffers=cbs),))
