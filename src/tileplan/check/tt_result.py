"""What `tileplan check` finds in a Tenstorrent report, and the bank managers' first-fit
lists it replays the report's events through (check/tt_rules.py's `FirstFit`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tileplan.check.result import Finding
from tileplan.check.tt_rules import FirstFit
from tileplan.report.tt_sections import TtDevice
from tileplan.report.tt_tables import BufferRow


@dataclass(slots=True)
class TtCheckResult:
    """What check found: each disagreement or defect, and how much agreed."""

    findings: list[Finding] = field(default_factory=list)
    buffers_agreeing: int = 0
    programs_agreeing: int = 0
    layouts_agreeing: int = 0

    @property
    def consistent(self) -> bool:
        return not self.findings

    def add(self, place: str, message: str, kind: str = "disagree") -> None:
        self.findings.append(Finding(kind, place, message))

    def compare(self, place: str, reported: object, derived: object) -> bool:
        if reported != derived:
            self.add(place, f"the report gives {reported}, the rules give {derived}")
            return False
        return True


def managers(d: TtDevice) -> dict[str, FirstFit]:
    """A first-fit list per bank manager, as the allocator lays them out."""
    return {"L1": FirstFit(d.l1_base, d.l1_bank_size, d.dram_alignment),
            "L1_SMALL": FirstFit(d.l1_base + d.l1_bank_size, d.l1_small_bank_size, d.dram_alignment),
            "DRAM": FirstFit(d.dram_unreserved_base, d.dram_bank_size, d.dram_alignment),
            "TRACE": FirstFit(d.dram_unreserved_base + d.dram_bank_size, d.trace_bank_size, d.dram_alignment)}


def top_down(b: BufferRow) -> bool:
    """L1 and L1_SMALL top-down; DRAM and TRACE bottom-up, but a trace buffer in DRAM
    (no trace region configured) top-down."""
    return b.buffer_type in ("L1", "L1_SMALL") or (b.buffer_type == "DRAM" and b.use == "trace")


