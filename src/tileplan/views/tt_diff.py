"""What changed from one Tenstorrent report to another, as plain data (`diff_tt_reports`):
the verdicts, each memory's peak, the largest circular-buffer region and L1 in use, and
the buffers added, removed and resized (bytes per bank; buffers match by name and memory,
the n-th of a name to the n-th)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tileplan.errors import InputError
from tileplan.report.tt_report import TtReport
from tileplan.views.tt_summary import verdict_text


@dataclass(frozen=True, slots=True)
class Figure:
    what: str
    a: int
    b: int

    @property
    def change(self) -> int:
        return self.b - self.a


@dataclass(frozen=True, slots=True)
class BufferChange:
    name: str
    memory: str
    a: int | None
    b: int | None

    @property
    def change(self) -> int:
        return (self.b or 0) - (self.a or 0)


@dataclass(frozen=True, slots=True)
class TtDiff:
    verdict_a: str
    verdict_b: str
    fits_a: bool
    fits_b: bool
    figures: tuple[Figure, ...]
    buffers: tuple[BufferChange, ...]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["figures"] = [{**asdict(f), "change": f.change} for f in self.figures]
        out["buffers"] = [{**asdict(b), "change": b.change} for b in self.buffers]
        return out


def _figures(r: TtReport) -> dict[str, int]:
    out = {f"{p.buffer_type} peak (bytes per bank)": p.bytes_per_bank for p in r.memory.peaks}
    out["circular buffers, largest region end"] = r.memory.cb_region_end
    out["L1 in use on a core, most"] = r.memory.l1_in_use
    return out


def _by_name(r: TtReport) -> dict[tuple[str, str, int], int]:
    seen: dict[tuple[str, str], int] = {}
    out: dict[tuple[str, str, int], int] = {}
    b = r.buffers
    for i in range(b.count):
        key = (b.name[i], b.buffer_type[i])
        n = seen.get(key, 0)
        seen[key] = n + 1
        out[(*key, n)] = b.bytes_per_bank[i]
    return out


def diff_tt_reports(a: Any, b: Any) -> TtDiff:
    if not isinstance(a, TtReport) or not isinstance(b, TtReport):
        raise InputError("diff compares two reports of one kind: both from an IPU or both from a Tenstorrent "
                         "machine, found one of each")
    fa, fb = _figures(a), _figures(b)
    figures = tuple(Figure(k, fa[k], fb[k]) for k in fa)
    ba, bb = _by_name(a), _by_name(b)
    changes = [BufferChange(k[0], k[1], ba.get(k), bb.get(k)) for k in sorted({*ba, *bb}, key=str)
               if ba.get(k) != bb.get(k)]
    changes.sort(key=lambda c: (-abs(c.change), c.name, c.memory))
    return TtDiff(verdict_text(a), verdict_text(b), a.fits, b.fits, figures, tuple(changes))
