"""`tileplan check` on the memory that is not tensors (docs/report-format.md, "Memory
that is not tensors"): the `non_tensor` section re-derived from the steps' operation
texts and execution counts, and, when the verdict counts it (`in_verdict`), the
budgets it leaves: the support reserve is its total, the exchange rows cost nothing,
and the budgets with the reserve make the tile."""

from __future__ import annotations

import numpy as np

from tileplan.check.result import CheckResult, section_of
from tileplan.check.timeline import StepColumns, exchanges
from tileplan.model.info import Mode
from tileplan.report.model import Report
from tileplan.report.sections import NonTensor, NonTensorCounts

#: docs/report-format.md, "Memory that is not tensors": each category's published bytes
#: summed over the 1472 tiles of PopLiner's BERT-Large profile, stage 0, and the count of
#: the same program they are divided by: per kind of compute step (vertex code), per
#: compute step (vertex state), per exchanging step (exchange code), per program step
#: (control code); a figure is ceil(count x bytes / (1472 x calibration count))
RATES = {"vertex_code": (9_664_672, 13), "vertex_state": (12_826_418, 276), "exchange_code": (15_544_264, 284),
         "control_code": (16_535_740, 337)}
TILES = 1472
#: Poplar's published stack per tile
STACK_BYTES = 3168
OUTLININGS = ("shared", "per-layer")


def _bytes(category: str, count: int) -> int:
    published, calibration = RATES[category]
    return -(-count * published // (TILES * calibration))


def non_tensor(report: Report, result: CheckResult, cols: StepColumns) -> NonTensor:
    """The `non_tensor` section re-derived from the steps' operation texts: counted as
    the section says it was (`outlining`: shared, each step once and a training
    report's distinct texts once; per-layer, every run of a step); its note is taken
    as written (prose). With `in_verdict`, the report's budgets are held to it."""
    stated = section_of(report, NonTensor, result)
    outlining = stated.outlining if stated is not None and stated.outlining in OUTLININGS else "shared"
    if outlining == "per-layer":
        uses = (np.bincount(cols.operation, weights=cols.execution_count, minlength=len(cols.texts))
                .astype(np.int64).tolist() if cols.n else [0] * len(cols.texts))
    else:
        uses = np.bincount(cols.operation, minlength=len(cols.texts)).tolist() if cols.n else [0] * len(cols.texts)
        written = report.sections.program
        if written is not None and written.mode is Mode.TRAINING:  # outlined: each distinct text once
            uses = [min(1, n) for n in uses]
    texts = [(op, n) for op, n in zip(cols.texts, uses) if n]
    program = [(op, n) for op, n in texts if not op.startswith("View ")]
    compute = [(op, n) for op, n in program if not op.startswith("Copy ")]
    kinds = {op.replace("}", ",").split(",", 1)[0].strip() for op, _ in compute}
    exchanging = sum(n for op, n in texts if exchanges(op))
    n_compute, n_program = sum(n for _, n in compute), sum(n for _, n in program)
    figures = {"vertex_code": _bytes("vertex_code", len(kinds)), "vertex_state": _bytes("vertex_state", n_compute),
               "exchange_code": _bytes("exchange_code", exchanging),
               "control_code": _bytes("control_code", n_program)}
    total = sum(figures.values()) + STACK_BYTES
    in_verdict = bool(stated is not None and stated.in_verdict)
    if in_verdict:
        _hold_budgets(report, result, total)
    return NonTensor(**figures, stack=STACK_BYTES, total=total, reserve=report.support_reserve_bytes,
                     over_reserve=max(0, total - report.support_reserve_bytes),
                     counts=NonTensorCounts(kinds=len(kinds), compute_steps=n_compute, program_steps=n_program,
                                            exchange_steps=exchanging),
                     outlining=outlining,
                     in_verdict=stated.in_verdict if stated is not None else None,
                     note=stated.note if stated is not None else None)


def _hold_budgets(report: Report, result: CheckResult, total: int) -> None:
    """The verdict counts all memory: the reserve is the memory that is not tensors, no
    exchange row costs a byte, and budgets plus reserve are the tile (where the report
    states the tile's bytes: the error band's or the proportion's)."""
    if report.support_reserve_bytes != total:
        result.add("disagree", "support_reserve_bytes", f"reports {report.support_reserve_bytes}; the verdict counts "
                                                        f"the memory that is not tensors, re-derived as {total}")
    if report.exchange_row_bytes != 0:
        result.add("disagree", "exchange_row_bytes", f"reports {report.exchange_row_bytes}; expected 0 when the "
                                                     "verdict counts all memory (exchange is code, in non_tensor)")
    verdict, cap = report.sections.verdict, report.sections.available_memory_proportion
    band = verdict.error_band if verdict is not None else None
    tile = band.tile_bytes if band is not None else cap.tile_bytes if cap is not None else None
    if tile is not None and report.budget_bytes + report.support_reserve_bytes != tile:
        result.add("disagree", "budget_bytes", f"reports {report.budget_bytes}; with the memory that is not tensors "
                                               f"({report.support_reserve_bytes}) it must make the tile's {tile}")
