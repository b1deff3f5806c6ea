"""`tileplan check` on the placements of the worst tiles (docs/report-format.md,
"Placement"): each placed tile re-validated."""

from __future__ import annotations

from tileplan.check.result import CheckResult, section_of, text
from tileplan.check.timeline import Groups
from tileplan.report.model import Report
from tileplan.report.sections import Placement


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
