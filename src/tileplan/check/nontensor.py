"""`tileplan check` on the memory that is not tensors (docs/report-format.md, "Memory
that is not tensors"): the `non_tensor` section re-derived from the steps' operation
texts."""

from __future__ import annotations

import numpy as np

from tileplan.check.result import CheckResult, section_of
from tileplan.check.timeline import StepColumns, exchanges
from tileplan.model.info import Mode
from tileplan.report.model import Report
from tileplan.report.sections import NonTensor, NonTensorCounts

#: docs/report-format.md, "Memory that is not tensors": bytes per tile per kind of compute
#: step (vertex code), per compute step (vertex state), per program step (control code),
#: per exchanging step (exchange code), and the stack
NON_TENSOR_RATES = {"vertex_code": 550, "vertex_state": 229, "control_code": 165, "exchange_code": 221}
STACK_BYTES = 3200


def non_tensor(report: Report, result: CheckResult, cols: StepColumns) -> NonTensor:
    """The `non_tensor` section re-derived from the steps' operation texts (each
    distinct text judged once; in a training report also counted once, as PopART
    outlines the layers); its note is taken as written (prose)."""
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
    vertex_code, vertex_state = len(kinds) * NON_TENSOR_RATES["vertex_code"], n_compute * NON_TENSOR_RATES[
        "vertex_state"]
    exchange_code, control_code = (exchanging * NON_TENSOR_RATES["exchange_code"],
                                   n_program * NON_TENSOR_RATES["control_code"])
    total = vertex_code + vertex_state + exchange_code + control_code + STACK_BYTES
    stated = section_of(report, NonTensor, result)
    return NonTensor(vertex_code=vertex_code, vertex_state=vertex_state, exchange_code=exchange_code,
                     control_code=control_code, stack=STACK_BYTES, total=total, reserve=report.support_reserve_bytes,
                     over_reserve=max(0, total - report.support_reserve_bytes),
                     counts=NonTensorCounts(kinds=len(kinds), compute_steps=n_compute, program_steps=n_program,
                                            exchange_steps=exchanging),
                     note=stated.note if stated is not None else None)
