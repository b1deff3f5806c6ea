"""Build the report from a plan (data only; rendering is elsewhere): the version-1
fields and the typed sections (`tileplan.report.sections`), each made here or by
`build_verdict.py`, `build_exact.py` and `build_whatif.py` from the planner's values.

The build lives in the application layer, not in `tileplan.report`: it is the one
place that reads both the planner and the report's sections, so the format imports
nothing that plans and `tileplan.check`, which imports the format, re-derives a
report with none of the planner's code (tests/test_import_cycles.py holds both)."""

from __future__ import annotations

from itertools import compress

import numpy as np

from tileplan.lowering.columns import LoweredOperations
from tileplan.model.info import Mode
from tileplan.model.machine import MemoryAccounting
from tileplan.model.timeline import StepTable
from tileplan.planner.placed import placement_verdict
from tileplan.planner.plan import Plan
from tileplan.app.build_exact import exact_section, peak_tile_section
from tileplan.report.program_info import pipeline_section, program_entries
from tileplan.report.model import Extra, PeakFigures, Report
from tileplan.report.sections import (
    AvailableMemoryProportion,
    Buffer,
    CapExceeded,
    NonTensor,
    NonTensorCounts,
    OperationRow,
    Operations,
    PlacedTile,
    Placement,
    PlacementSkipped,
    Program,
    RejectedOperation,
    Section,
)
from tileplan.app.build_verdict import verdict_section
from tileplan.runtime import without_gc

MODEL_TEXT = ("Planner estimate (peak.*, usage): sum of per-allocation maximum shard sizes, not a placed tile: an "
              "upper bound on the worst real tile, which `exact` gives from the tile maps. Repeat execution counts "
              "do not multiply scratch. Exchange rows are reserved separately for the whole program.")


NON_TENSOR_TEXT = ("Estimated bytes per tile of the memory that is not tensors, by Poplar's categories "
                   "(docs/report-format.md, \"Memory that is not tensors\"): vertex code per kind of compute "
                   "step, vertex state per compute step, exchange code per exchanging step, control code per "
                   "program step, each at the rate measured on PopLiner's BERT-Large profile, and Poplar's "
                   "published 3,168 B of stack; the same on every tile (an average: Poplar puts a vertex only on "
                   "the tiles that run it). in_verdict: counted with the tensors against the tile's memory.")


PLACEMENT_TEXT = ("Addresses on the worst tiles: each storage group live on the tile is a buffer over the steps it "
                  "is live, each step's scratch a buffer of that step, the exchange rows a buffer of every step; "
                  "[0, budget_bytes - interleaved_budget_bytes) is the non-interleaved region's usable part, above it "
                  "the interleaved region's, where interleaved buffers must sit. Buffers: [what, storage group, "
                  "region, first step, end step (exclusive), bytes (8-byte aligned), offset].")

CAP_TEXT = ("Poplar's cap on one matmul's or convolution's temporary bytes per tile; a product over it is planned "
            "anyway (the least temporary split) and listed here")


@without_gc
def build_report(plan: Plan) -> Report:
    m = plan.machine
    p = plan.peaks
    info = plan.program.info
    training = info.mode is Mode.TRAINING
    sections: list[Section] = [
        Program.of(plan.program.name, m.name, plan.policy, program_entries(info)),
        Operations(rows=operation_rows(plan.operations, plan.steps)),
    ]
    proportion = plan.options.available_memory_proportion
    if proportion is not None:
        sections.append(AvailableMemoryProportion(
            proportion=proportion, cap_bytes=int(proportion * m.tile_bytes), tile_bytes=m.tile_bytes,
            exceeded=tuple(CapExceeded(operation=i, name=name, temporary_bytes=b) for i, name, b in plan.over_cap),
            note=CAP_TEXT))
    if plan.steps:
        nt = plan.non_tensor
        sections.append(NonTensor(
            vertex_code=nt.vertex_code, vertex_state=nt.vertex_state, exchange_code=nt.exchange_code,
            control_code=nt.control_code, stack=nt.stack, total=nt.total, reserve=m.support_reserve_bytes,
            over_reserve=max(0, nt.total - m.support_reserve_bytes),
            counts=NonTensorCounts(kinds=nt.kinds, compute_steps=nt.compute_steps, program_steps=nt.program_steps,
                                   exchange_steps=nt.exchange_steps),
            outlining=nt.outlining.value,
            in_verdict=plan.accounting is MemoryAccounting.ALL_MEMORY,
            note=NON_TENSOR_TEXT))
    if plan.placements:
        names = {v.storage_group: v.name for v in reversed(plan.values)}
        sections.append(Placement(
            verdict=placement_verdict(plan.placements, plan.verdict.fits, names),
            tiles=tuple(PlacedTile(
                tile=t.tile, why=t.why, capacity=t.capacity, height=t.height, lower_bound=t.lower_bound, gaps=t.gaps,
                optimal=t.optimal, fits=t.fits, infeasible=t.infeasible, method=t.method, peak_step=t.peak_step,
                largest_free=t.largest_free,
                buffers=tuple(Buffer(what=b.what, group=b.group, region=b.region, lower=b.lower,  # type: ignore[arg-type]
                                     upper=b.upper, size=b.size, offset=b.offset) for b in t.buffers))
                for t in plan.placements),
            note=PLACEMENT_TEXT))
    if plan.placement_skipped is not None:
        ps = plan.placement_skipped
        sections.append(PlacementSkipped(
            tile=ps.tile, buffers=ps.buffers, limit=ps.limit,
            reason=f"tile {ps.tile} holds {ps.buffers} buffers, more than the {ps.limit} placed per tile in a plan; "
                   "the verdict is by bytes (place the tile's buffers with `tileplan place`)"))
    pipeline = pipeline_section(info)
    if pipeline is not None:  # one stage of a pipeline over several IPUs
        sections.append(pipeline)
    counted = m.support_reserve_bytes if plan.accounting is MemoryAccounting.ALL_MEMORY else None
    verdict = verdict_section(plan.steps, p, plan.verdict, m.budget_bytes, m.interleaved_budget_bytes,
                              plan.exchange_bytes, plan.exact, m.tile_bytes, counted)
    if plan.exact is not None:
        sections.append(exact_section(plan.exact, p.total))
        verdict = verdict.with_peak_tile(peak_tile_section(plan.values, plan.steps, plan.shards, plan.exact,
                                                           training))
    sections.append(verdict)
    if plan.rejected_operation is not None:
        index, name, reason = plan.rejected_operation
        sections.append(RejectedOperation(index=index, name=name, reason=reason))
    report = Report(
        scope=plan.scope, model=MODEL_TEXT, tile_count=m.tile_count, budget_bytes=m.budget_bytes,
        interleaved_budget_bytes=m.interleaved_budget_bytes,
        standard_contiguous_overflow_bytes=plan.verdict.standard_contiguous_overflow_bytes,
        fits_budget=plan.verdict.fits, support_reserve_bytes=m.support_reserve_bytes,
        effective_peak_bytes=plan.verdict.effective_peak_bytes,
        peak=PeakFigures(p.standard, p.interleaved, p.total, plan.exchange_rows, p.maximum_standard_allocation),
        total_peak_step=p.total_step, standard_peak_step=p.standard_step, interleaved_peak_step=p.interleaved_step,
        gemm_output_packing=plan.options.gemm_output_packing.value,
        attention_products=plan.options.attention_products.value,
        values=plan.values, steps=plan.steps, rejections=plan.rejections,
        exchange_row_bytes=m.exchange_row_bytes, extra=Extra(sections=sections),
    )
    return report


def operation_rows(operations: LoweredOperations, steps: StepTable) -> tuple[OperationRow, ...]:
    """The operations that have steps, in order, each with its first and last step
    (its steps are consecutive), column by column (a million-value plan has some
    800,000 of them)."""
    source = steps.source
    index, origin, name, kind, count = operations.columns()
    if not len(source) or not index:
        return ()
    ops, first = np.unique(source, return_index=True)
    last = len(source) - 1 - np.unique(source[::-1], return_index=True)[1]
    wanted = np.array(index, dtype=np.int64)
    at = np.searchsorted(ops, wanted)
    found = ops[np.minimum(at, len(ops) - 1)] == wanted
    if not found.all():
        keep = found.tolist()
        index, origin, count = (list(compress(column, keep)) for column in (index, origin, count))
        name, kind = (list(compress(column, keep)) for column in (name, kind))
    at = at[found]
    return tuple(zip(index, origin, name, kind, count, first[at].tolist(), last[at].tolist()))
