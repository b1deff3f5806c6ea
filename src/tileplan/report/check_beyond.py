"""`tileplan check` beyond the tensors: the placements of the worst tiles (each
re-validated) and the memory that is not tensors (re-derived from the steps'
operation texts), docs/report-format.md, "Placement" and "Memory that is not
tensors"."""

from __future__ import annotations

import numpy as np

from tileplan.model.info import Mode
from tileplan.report.check_result import CheckResult, section_of, text
from tileplan.report.check_timeline import Groups, StepColumns, exchanges
from tileplan.report.model import Report
from tileplan.report.sections import NonTensor, NonTensorCounts, Placement

#: docs/report-format.md, "Memory that is not tensors": bytes per tile per kind of compute
#: step (vertex code), per compute step (vertex state), per program step (control code),
#: per exchanging step (exchange code), and the stack
NON_TENSOR_RATES = {"vertex_code": 550, "vertex_state": 229, "control_code": 165, "exchange_code": 221}
STACK_BYTES = 3200


def check_placement(report: Report, result: CheckResult, g: Groups) -> None:
    """Each placed tile's buffers: no two live at one step share a byte, interleaved ones
    sit in the interleaved region, a storage group's buffer spans exactly the steps its
    members are live, the height is the highest end, `fits` is height <= capacity, and
    the verdict's first words follow from them."""
    section = section_of(report, Placement, result)
    if section is None or section.tiles is None:
        result.add("disagree", "placement.tiles", "expected a list of placed tiles")
        return
    span: dict[int, tuple[int, int]] = {}
    for k, a, b in zip(g.pos.tolist(), g.first.tolist(), g.last.tolist()):
        lo, hi = span.get(g.ids[k], (a, b))
        span[g.ids[k]] = (min(lo, a), max(hi, b))
    floor = report.budget_bytes - report.interleaved_budget_bytes
    all_fit = True
    for k, t in enumerate(section.tiles):
        place = f"placement.tiles[{k}]"
        if t.capacity is None or t.height is None or t.fits is None or t.buffers is None:
            result.add("disagree", place, "expected tile, capacity, height, fits and buffers "
                                          "[what, group, region, first, end, bytes, offset]")
            return
        buffers, capacity = t.buffers, t.capacity
        if capacity != report.budget_bytes:
            result.add("disagree", f"{place}.capacity", f"reports {capacity}; the budget is {report.budget_bytes}")
        top = max((b.offset + b.size for b in buffers), default=0)
        if top != t.height:
            result.add("disagree", f"{place}.height", f"reports {t.height}; the highest buffer ends at {top}")
        if t.fits != (top <= capacity):
            result.add("disagree", f"{place}.fits", f"reports {str(t.fits).lower()}; height {top}, capacity "
                                                    f"{capacity}")
        all_fit &= top <= capacity
        for i, b in enumerate(buffers):
            where = f"{place}.buffers[{i}]"
            if b.region == "interleaved" and b.offset < floor:
                result.add("disagree", where, f"offset {b.offset} is outside its region (interleaved from {floor})")
            if b.what == "group" and b.group is not None and span.get(b.group) != (b.lower, b.upper - 1):
                result.add("disagree", where, f"storage group {b.group} spans steps {b.lower} to {b.upper - 1}; its "
                                              f"members are live in {span.get(b.group)}")
        events = sorted(range(len(buffers)), key=lambda i: (buffers[i].lower, buffers[i].offset))
        for a_i, a in enumerate(events):  # overlap: live at a common step and sharing a byte
            x = buffers[a]
            for b in events[a_i + 1:]:
                y = buffers[b]
                if y.lower >= x.upper:
                    break
                if x.size and y.size and x.offset < y.offset + y.size and y.offset < x.offset + x.size:
                    result.add("disagree", f"{place}.buffers[{b}]", f"shares bytes with buffers[{a}] while both are "
                                                                     f"live (step {max(x.lower, y.lower)})")
                    return
    verdict = section.verdict or ""
    expected = ("does not fit by bytes" if not report.fits_budget else
                "fits by bytes and by placement" if all_fit else "fits by bytes, not by placement")
    if not verdict.startswith(expected):
        result.add("disagree", "placement.verdict", f"reports {text(verdict)}; expected it to say {expected!r}")


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
