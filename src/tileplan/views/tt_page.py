"""The Tenstorrent page's view model (`build_tt_page`): each program's L1 on one core as
the picture tenstorrent/tt-metal#28835 asks for, and the tables beside it.

L1 of one core, addresses up: the reserved area below l1_unreserved_base, each
program's static circular buffers growing up from it (`cb_end`), the L1 buffers
(lockstep: at the same addresses on every core) growing down from the top of the L1
bank, the L1_SMALL region above that; where the two meet is the clash tt-metal checks
(`lowest`: the lowest L1 buffer when the program ran). Programs are drawn left to right
in run order, at most `MAX_COLUMNS` columns: a column stands for a run of consecutive
programs and shows the highest CB region end and the lowest L1 buffer among them, so no
peak and no near miss is lost; an L1 buffer is one rectangle over the columns where it
is live. When the run stopped allocating a buffer (after its last program), one more
column shows L1 then, and `failure_note` what the buffer needed.

Worked example: a program whose CBs end at 890,656 with an L1 buffer from 1,402,880 up:
the column's CB bar reaches 890,656, the buffer's rectangle starts at 1,402,880; the gap
of 512,224 B is the room left.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from tileplan.report.tt_report import TtReport
from tileplan.views.tt_summary import TtSummary, build_tt_summary

MAX_COLUMNS = 1000


@dataclass(frozen=True, slots=True)
class Column:
    """Programs [first, last] drawn as one column: the highest CB region end, the
    lowest L1 buffer (None: none), and the first program's operation and factory."""

    first: int
    last: int
    cb_end: int
    lowest: int | None
    operation: str
    factory: str


@dataclass(frozen=True, slots=True)
class Rect:
    """An L1 buffer over columns [first, last] (inclusive), at [address, end)."""

    buffer: int
    name: str
    first: int
    last: int
    address: int
    end: int
    responsible: bool


@dataclass(frozen=True, slots=True)
class WhatIfLine:
    knob: str
    value: str
    outcome: str
    command: str
    settings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TtPage:
    """See the module docstring: the geometry of the L1 picture (bytes and column
    indices: the renderer scales them) and the summary's tables."""

    title: str
    summary: TtSummary
    l1_size: int
    l1_base: int
    l1_bank_top: int
    columns: tuple[Column, ...]
    rects: tuple[Rect, ...]
    failing_column: int | None
    what_if: tuple[WhatIfLine, ...]
    failure_note: str | None = None


def column_runs(count: int, most: int = MAX_COLUMNS) -> list[tuple[int, int]]:
    """`count` programs in at most `most` runs of consecutive programs."""
    per = max(1, -(-count // most))
    return [(k, min(count, k + per) - 1) for k in range(0, count, per)]


def build_tt_page(r: TtReport) -> TtPage:
    p = r.programs
    runs = column_runs(p.count)
    columns = []
    for first, last in runs:
        lows = [x for x in p.lowest_l1[first:last + 1] if x is not None]
        columns.append(Column(first, last, max(p.cb_region_end[first:last + 1]), min(lows) if lows else None,
                              r.operations.name[p.op[first]], p.factory[first]))
    per = runs[0][1] - runs[0][0] + 1 if runs else 1
    events = list(p.event)
    responsible = set(r.verdict.responsible)
    rects = []
    for b in r.buffers.rows():
        if b.buffer_type != "L1":
            continue
        start = bisect_right(events, b.allocated)  # the first program run after its allocation
        stop = (bisect_left(events, b.freed + 1) if b.freed is not None else p.count) - 1  # the last before its free
        if start <= stop:
            rects.append(Rect(b.id, b.name, start // per, stop // per, b.address, b.end, b.id in responsible))
    failing = r.verdict.program // per if r.verdict.program is not None else None
    note = None
    v = r.verdict
    if not v.fits and v.program is None:  # failed allocating, after the last program: one more column
        failing = len(columns)
        live = [b for b in r.buffers.rows() if b.freed is None and b.buffer_type == "L1"]
        name = r.operations.name[v.operation] if v.operation is not None and v.operation >= 0 else "the uploads"
        columns.append(Column(p.count, p.count, r.device.l1_base, min((b.address for b in live), default=None), name,
                              "allocation failed"))
        alive = {b.id for b in live}
        rects = [Rect(x.buffer, x.name, x.first if x.first <= x.last else failing, failing, x.address, x.end,
                      x.responsible) if x.buffer in alive else x for x in rects]
        drawn = {x.buffer for x in rects}
        rects += [Rect(b.id, b.name, failing, failing, b.address, b.end, b.id in responsible) for b in live
                  if b.id not in drawn]
        q, st = v.request, v.statistics
        if q is not None and st is not None:
            note = (f"{q.name} needs {q.need:,} B in each of {q.banks} {q.buffer_type} banks: {st.free:,} B free, "
                    f"the largest free block {st.largest_free_block:,} B")
    what_if: tuple[WhatIfLine, ...] = ()
    if r.what_if is not None:
        what_if = tuple(WhatIfLine(w.knob, w.value, "error: " + w.error if w.error else
                                   ("fits" if w.fits else f"does not fit ({w.kind})"), w.command,
                                   w.settings or ())
                        for w in r.what_if.rows)
    d = r.device
    return TtPage(title=f"{r.model} on {d.machine}", summary=build_tt_summary(r), l1_size=d.l1_size,
                  l1_base=d.l1_base, l1_bank_top=d.l1_base + d.l1_bank_size, columns=tuple(columns),
                  rects=tuple(rects), failing_column=failing, what_if=what_if, failure_note=note)
