"""A Tenstorrent summary (views/tt_summary.py) as terminal text: the verdict line first
(tt-metal's words), then where, the buffers responsible, the peaks, the largest buffers
and what to change. `headline_lines` is the head `tileplan plan` prints; `render_tt_diff`
renders a diff of two reports (views/tt_diff.py)."""

from __future__ import annotations

from collections.abc import Sequence

from tileplan.ioutil import escape_controls
from tileplan.render import human_bytes
from tileplan.render.terminal import Style, format_table
from tileplan.views.tt_diff import TtDiff
from tileplan.views.tt_summary import KIND_WORDS, BufferLine, TtSummary


def _verdict(s: TtSummary, style: Style) -> list[str]:
    if s.fits:
        return [style(escape_controls(s.verdict), "bold green")]
    lines = [style(f"does not fit: {escape_controls(s.verdict)}", "bold red")]
    if s.kind is not None:
        lines.append(f"  why: {KIND_WORDS[s.kind]}")
    if s.where is not None:
        lines.append(f"  where: {escape_controls(s.where)}")
    return lines


def buffer_table(rows: Sequence[BufferLine]) -> list[str]:
    cells = [[escape_controls(b.name), escape_controls(b.module or "-"), b.buffer_type, str(b.bytes_per_bank),
              str(b.banks) + (" shards" if b.sharded else ""), str(b.address), escape_controls(b.made_by),
              escape_controls(b.freed_after or "-")] for b in rows]
    return ["  " + line for line in format_table(
        ["buffer", "module", "memory", "bytes/bank", "banks", "address", "made by", "freed after"], cells)]


def headline_lines(s: TtSummary, style: Style | None = None) -> list[str]:
    """The verdict, where and the buffers responsible (three at most), what to change;
    for a plan that fits, what reproduces it."""
    lines = _verdict(s, style or Style())
    if s.responsible:
        lines.append("  responsible (live then, largest first):")
        lines += buffer_table(s.responsible[:3])
    word = "what-if" if s.fits else "change"
    for change in s.changes:
        lines.append(f"  {word}: {escape_controls(change)}")
    if s.fits and s.reproduce:
        lines.append("  to reproduce this plan:")
        lines += [f"    {escape_controls(c)}" for c in s.reproduce]
    return lines


def render_tt_summary(s: TtSummary, style: Style | None = None) -> str:
    lines = _verdict(s, style or Style())
    lines += [f"machine: {s.machine}", f"frontend: {escape_controls(s.frontend)}"]
    if s.responsible:
        lines += ["", "buffers responsible (live then):", *buffer_table(s.responsible)]
    lines += ["", "peaks:"]
    for p in s.peaks:
        share = f" ({100 * p.bytes_per_bank / p.of:.1f}%)" if p.of else ""
        lines.append(f"  {p.memory}: {p.bytes_per_bank:,} B of {p.of:,} B{share} ({human_bytes(p.bytes_per_bank)}); "
                     f"{escape_controls(p.where)}")
    if s.largest:
        lines += ["", "largest buffers (L1 first, bytes per bank):", *buffer_table(s.largest)]
    if s.changes:
        title = "what-if (each a re-plan):" if s.fits else "what to change:"
        lines += ["", title, *(f"  {escape_controls(c)}" for c in s.changes)]
    if s.reproduce:
        lines += ["", "to reproduce this plan:", *(f"  {escape_controls(c)}" for c in s.reproduce)]
    return "\n".join(lines) + "\n"


def render_tt_diff(d: TtDiff, top: int = 20, a_path: str = "A", b_path: str = "B") -> str:
    lines = [f"A: {a_path}: {'fits' if d.fits_a else 'does not fit'}: {escape_controls(d.verdict_a)}",
             f"B: {b_path}: {'fits' if d.fits_b else 'does not fit'}: {escape_controls(d.verdict_b)}", ""]
    lines += format_table(["figure", "A", "B", "change"],
                          [[f.what, str(f.a), str(f.b), f"{f.change:+d}"] for f in d.figures])
    if d.buffers:
        lines += ["", f"buffers added, removed or resized (bytes per bank; {min(top, len(d.buffers))} of "
                      f"{len(d.buffers)}):"]
        lines += format_table(["buffer", "memory", "A", "B", "change"],
                              [[escape_controls(c.name), c.memory, "-" if c.a is None else str(c.a),
                                "-" if c.b is None else str(c.b), f"{c.change:+d}"] for c in d.buffers[:top]])
    return "\n".join(lines) + "\n"
