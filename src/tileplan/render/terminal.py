"""The summary and the diff as terminal text: tables and a per-step usage chart.

Plain text with no dependency (so `tileplan summary` and `diff` work after a bare
`pip install tileplan`), coloured with ANSI escapes only on a terminal (and not with
NO_COLOR set). Names from models are printed as they are: nothing here interprets
markup. The renderers return text; the verb writes it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from tileplan.render import human_bytes
from tileplan.report.diff import Diff, PlacementSide
from tileplan.report.summary import Summary
from tileplan.report.views import RegionPeak, precision_display

EIGHTHS = " ▁▂▃▄▅▆▇█"
CHART_HEIGHT = 8
PIPE_WIDTH = 120
REGION_NOTES = {
    "total": "both regions + exchange rows (judged)",
    "standard": "non-interleaved region; overflows into interleaved past it",
    "interleaved": "",
}
_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "bold red": "1;31",
        "bold green": "1;32", "dim red": "2;31"}


@dataclass(frozen=True, slots=True)
class Style:
    """How text is marked: ANSI colours on a terminal, nothing elsewhere; `width` is
    the line width charts and notes fit in."""

    colour: bool = False
    width: int = PIPE_WIDTH

    def __call__(self, text: str, style: str) -> str:
        if not self.colour or not style or not text:
            return text
        return f"\x1b[{_SGR[style]}m{text}\x1b[0m"


def terminal_style(stream: object) -> Style:
    """Colour only on a terminal without NO_COLOR; the terminal's width there (or
    COLUMNS), else `PIPE_WIDTH`, so that a log or a file gets whole lines."""
    isatty = getattr(stream, "isatty", None)
    tty = bool(isatty and isatty())
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and 20 <= int(columns) <= 1000:
        width = int(columns)
    else:
        width = shutil.get_terminal_size((PIPE_WIDTH, 24)).columns if tty else PIPE_WIDTH
    return Style(colour=tty and not os.environ.get("NO_COLOR"), width=max(40, width))


def percent_text(p: float | None) -> str:
    return "unknown" if p is None else f"{p:.1f}%"


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool],
          style: Style = Style()) -> list[str]:
    """A titled table: columns as wide as their widest cell, numbers right-aligned;
    cells are never cut (a long name widens its column)."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return "  ".join(parts).rstrip()

    out = [style(title, "bold"), style(line(headers), "bold"), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return out


def bucket(values: Sequence[int | None], width: int) -> list[int | None]:
    """At most `width` columns: each the largest value of its run of consecutive steps
    (None only when every step of the run is unknown), so no peak is lost."""
    if width < 1:
        raise ValueError(f"width must be >= 1, found {width}")
    n = len(values)
    if n <= width:
        return list(values)
    out: list[int | None] = []
    for c in range(width):
        run = [v for v in values[c * n // width:(c + 1) * n // width] if v is not None]
        out.append(max(run) if run else None)
    return out


def usage_chart(values: Sequence[int | None], budget: int, width: int, height: int = CHART_HEIGHT,
                peak_step: int | None = None, style: Style = Style()) -> list[str]:
    """Columns of block characters, one per step (or run of steps), scaled to the
    larger of the budget and the highest value; the budget is the dotted row, columns
    over it are red, unknown steps a `?`. Ends with a step axis and the peak marked."""
    columns = bucket(values, width)
    top = max([budget, *(v for v in columns if v is not None)]) or 1
    budget_row = min(height - 1, int(budget * height / top))  # the row whose band holds the budget
    lines = []
    for row in range(height - 1, -1, -1):
        label = human_bytes(top) if row == height - 1 else ("budget" if row == budget_row else "")
        line = style(f"{label:>10} │", "dim")
        for v in columns:
            if v is None:
                line += style("?" if row == 0 else " ", "yellow")
                continue
            eighths = round(v * height * 8 / top) - row * 8
            ch = EIGHTHS[max(0, min(8, eighths))]
            if ch == " " and row == budget_row:
                line += style("┈", "dim red")
            else:
                line += style(ch, "red" if v > budget else "green")
        lines.append(line)
    n = len(values)
    lines.append(style(f"{'':>10} └" + "─" * len(columns), "dim"))
    ticks = f"{'':>10}  step 0"
    end = f"step {n - 1}" if n else ""
    pad = len(columns) - len("step 0") - len(end)
    if pad > 0:
        ticks += " " * pad + end
    lines.append(style(ticks, "dim"))
    if peak_step is not None and 0 <= peak_step < n:
        col = peak_step * len(columns) // n if n > len(columns) else peak_step
        lines.append(style(f"{'':>10}  " + " " * col + f"▲ peak at step {peak_step}", "bold"))
    return lines


def region_cells(r: RegionPeak) -> tuple[str, str]:
    """(used, margin) cells. The standard region has no budget of its own: past the
    non-interleaved region it overflows, legally, into the interleaved one, so it shows
    how much overflows there instead of a percentage over 100 and a negative margin."""
    if r.overflow:
        return "overflows", f"{human_bytes(r.overflow)} into interleaved"
    return percent_text(r.percent), human_bytes(r.margin)


def of_budget(r: RegionPeak) -> str:
    """A region's peak against its budget in one cell (the standard region's overflow
    into the interleaved one as such, see `region_cells`)."""
    return f"overflows {human_bytes(r.overflow)}" if r.overflow else percent_text(r.percent)


def render_summary(s: Summary, style: Style = Style()) -> str:
    """The summary as text, the verdict line first (one line, for logs and grep)."""
    out = [style(s.verdict, "bold green" if s.fits else "bold red")]
    if s.program:
        out.append(style(", ".join(f"{k} {v}" for k, v in s.program), "dim"))
    judged = "the exact worst tile" if s.judged_on == "exact" else "the planner's estimate (largest shards)"
    out.append(style(f"scope {s.scope}; judged on {judged}; {len(s.steps)} steps", "dim"))
    out.append("")

    rows = []
    for r in s.regions:
        used, margin = region_cells(r)
        rows.append([r.region, human_bytes(r.peak), human_bytes(r.budget), used, margin,
                     "-" if r.step is None else str(r.step), "-" if r.tile is None else str(r.tile),
                     REGION_NOTES[r.region]])
    out += table("Peak per region (bytes per tile)", ["region", "peak", "budget", "used", "margin", "step", "tile", ""],
                 rows, [False, True, True, True, True, True, True, False], style)
    out.append("")
    x = s.extras
    if x is not None and x.pipeline:
        out += [style(x.pipeline, "bold"), ""]
    if x is not None and x.placement:
        out += [f"Placement: {x.placement}", ""]
    if x is not None and x.non_tensor is not None:
        rows = [[label, human_bytes(b)] for label, b in x.non_tensor]
        if x.non_tensor_total is not None:
            rows.append(["total", human_bytes(x.non_tensor_total)])
        out += table("Memory that is not tensors (estimate per tile; docs/report-format.md)", ["class", "bytes"], rows,
                     [False, True], style)
        if x.reserve is not None:
            against = f"over it by {human_bytes(x.over_reserve)}" if x.over_reserve else "within it"
            out.append(f"The budgets reserve {human_bytes(x.reserve)} a tile for this memory: "
                       f"the estimate is {against}.")
        out.append("")

    if s.peak_step is None:
        out.append(style(f"No peak step: the report does not know every step's usage (scope {s.scope}).", "yellow"))
    else:
        rows = [[human_bytes(v.bytes), v.name, "x".join(map(str, v.shape)), precision_display(v.precision), v.layout]
                for v in s.top_values]
        out += table(f"Top {len(s.top_values)} of {s.values_live} values live at step {s.peak_step}"
                     f" ({s.peak_operation})", ["bytes/tile", "name", "shape", "precision", "layout"], rows,
                     [True, False, False, False, False], style)
    out.append("")

    if s.rejections_total:
        rows = [[str(vid), name, reason] for vid, name, reason in s.rejections]
        if s.rejections_total > len(s.rejections):
            rows.append(["", f"... {s.rejections_total - len(s.rejections)} more", ""])
        out += table(f"{s.rejections_total} values rejected (unknown size)", ["value", "name", "reason"], rows,
                     [True, False, False], style)
        out.append("")

    what = ("worst tile" if s.judged_on == "exact" else "estimate") + (" + exchange rows" if s.exchange_bytes else "")
    out.append(style(f"Usage per step ({what}) against the budget of {human_bytes(s.budget_bytes)}", "bold"))
    width = max(10, min(len(s.steps) or 1, style.width - 14))
    out += usage_chart(s.steps.totals(), s.budget_bytes, width, peak_step=s.peak_step, style=style)
    if not s.steps.total_known.all():
        out.append(style("? = usage unknown: a live value has no size (see the rejections)", "yellow"))
    if s.over_budget_steps:
        out.append(style(f"{s.over_budget_steps} of {len(s.steps)} steps over budget", "red"))
    return "\n".join(out) + "\n"


def render_diff(d: Diff, top: int = 20, a_path: str = "", b_path: str = "", style: Style = Style()) -> str:
    """Tables of what changed from A to B, the biggest changes first, `top` rows each."""
    out = []
    for name, path, line, fits in (("A", a_path, d.a_verdict, d.a_fits), ("B", b_path, d.b_verdict, d.b_fits)):
        out.append((f"{name} {path}: " if path else f"{name}: ") + style(line, "green" if fits else "red"))
    if d.verdict_changed:
        word = lambda fits, scope: "fits" if fits else ("does not fit" if scope == "program" else scope)  # noqa: E731
        out.append(style(f"verdict changed: {word(d.a_fits, d.a_scope)} -> {word(d.b_fits, d.b_scope)}", "bold"))
    else:
        out.append(style("verdict unchanged", "dim"))
    if d.pipeline is not None:
        out += [f"{name} is " + ("not one IPU of a pipeline" if stage is None else stage.text())
                for name, stage in (("A", d.pipeline.a), ("B", d.pipeline.b))]
        if d.pipeline.same_pipeline:
            out.append(style("two stages of one pipeline: their values differ by the layers each holds", "dim"))
    out.append("")

    if d.program:
        rows = [[f, "-" if a is None else a, "-" if b is None else b] for f, a, b in d.program]
        out += table("Program", ["field", "A", "B"], rows, [False, False, False], style)
        out.append("")

    rows = []
    for p in d.peaks:
        rows.append([p.region, human_bytes(p.a.peak), human_bytes(p.b.peak), _change(p.delta),
                     of_budget(p.a), of_budget(p.b)])
    out += table("Peaks (bytes per tile)", ["region", "A", "B", "change", "A of budget", "B of budget"], rows,
                 [False, True, True, True, True, True], style)
    if any(w.a_tile is not None or w.b_tile is not None for w in d.worst_tiles):
        out.append("")
        rows = [[w.region, _where(w.a_tile, w.a_step), _where(w.b_tile, w.b_step),
                 "moved" if w.changed else "same"] for w in d.worst_tiles]
        out += table("Worst tile (where each region peaks)", ["region", "A", "B", ""], rows,
                     [False, False, False, False], style)
    out += _render_non_tensor(d, style)
    out += _render_placement(d, style)
    out.append("")
    out.append(f"steps: {d.a_steps} -> {d.b_steps}; values: {len(d.of_kind('added'))} added, "
               f"{len(d.of_kind('removed'))} removed, {len(d.of_kind('resized'))} resized, "
               f"{len(d.of_kind('changed'))} changed without resizing, {d.unchanged} unchanged")
    out.append("")

    if d.resized_groups:
        rows = []
        for g in d.resized_groups[:top]:
            ap, bp = precision_display(g.a_precision), precision_display(g.b_precision)
            ratio = "-" if g.ratio is None else f"x{g.ratio:.2f}"
            rows.append([str(g.count), g.label, human_bytes(g.a_bytes), human_bytes(g.b_bytes), ratio,
                         ap if ap == bp else f"{ap} -> {bp}"])
        if len(d.resized_groups) > top:
            rows.append(["", f"... {len(d.resized_groups) - top} more (--json lists every value)", "", "", "", ""])
        out += table("Resized (per tile, folded by value group)", ["values", "group", "A", "B", "ratio", "precision"],
                     rows, [True, False, True, True, True, False], style)
        out.append("")
    for kind, title in (("added", "Only in B"), ("removed", "Only in A")):
        changes = d.of_kind(kind)
        if not changes:
            continue
        rows = []
        for v in changes[:top]:
            r = v.b if kind == "added" else v.a
            assert r is not None, "an added value has B, a removed one A"
            rows.append([human_bytes(r.bytes), r.name, "x".join(map(str, r.shape)), precision_display(r.precision)])
        if len(changes) > top:
            rows.append(["", f"... {len(changes) - top} more", "", ""])
        out += table(f"{title} ({len(changes)})", ["bytes/tile", "name", "shape", "precision"], rows,
                     [True, False, False, False], style)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _change(delta: int | None, unknown: str = "unknown") -> str:
    """A change in bytes with its sign (`+348.8 KiB`, `-392 B`, `0 B`)."""
    return unknown if delta is None else ("+" if delta > 0 else "") + human_bytes(delta)


def _where(tile: int | None, step: int | None) -> str:
    """Where a region peaks: `tile 11 at step 15`; on the estimate, the step only."""
    if step is None:
        return "unknown"
    return f"step {step} (estimate)" if tile is None else f"tile {tile} at step {step}"


def _render_non_tensor(d: Diff, style: Style) -> list[str]:
    """The memory that is not tensors by class, A -> B ("-" for a report without the
    section, "unknown" for a malformed field)."""
    nt = d.non_tensor
    if nt is None:
        return []
    rows = []
    for r in nt.rows:
        a = human_bytes(r.a) if nt.a_present else "-"
        b = human_bytes(r.b) if nt.b_present else "-"
        rows.append([r.label, a, b, _change(r.delta, "unknown" if nt.a_present and nt.b_present else "-")])
    out = ["", *table("Memory that is not tensors (estimate per tile; docs/report-format.md)",
                      ["class", "A", "B", "change"], rows, [False, True, True, True], style)]
    over = [(name, r) for name, r in (("A", nt.row("over_reserve").a), ("B", nt.row("over_reserve").b)) if r]
    if over:
        out.append(style("over the reserve: " + ", ".join(f"{name} by {human_bytes(r)}" for name, r in over), "red"))
    return out


def _placement_cell(side: PlacementSide, field: str) -> str:
    if side.state != "placed":
        return "-"
    x = getattr(side, field)
    return ("unknown" if x is None else str(x)) if field == "tile" else human_bytes(x)


def _render_placement(d: Diff, style: Style) -> list[str]:
    """The placement verdict of each report and its worst placed tile's numbers."""
    pl = d.placement
    if pl is None:
        return []
    out = ["", style("Placement (the worst tile's buffers at addresses)", "bold")]
    for name, side in (("A", pl.a), ("B", pl.b)):
        ok = side.state == "placed" and (side.verdict or "").startswith("fits by bytes and by placement")
        out.append(f"{name}: " + style(side.text(), "green" if ok else ("red" if side.state == "placed" else "")))
    if pl.a.state == "placed" or pl.b.state == "placed":
        both = pl.a.state == pl.b.state == "placed"
        labels = {"height": "placed height", "lower_bound": "lower bound", "gaps": "gaps", "capacity": "capacity"}
        rows = [["tile", _placement_cell(pl.a, "tile"), _placement_cell(pl.b, "tile"), ""]]
        unknown = "unknown" if both else "-"
        rows += [[labels[f], _placement_cell(pl.a, f), _placement_cell(pl.b, f), _change(delta, unknown)]
                 for f, _, _, delta in pl.changes()]
        out += ["", *table("Worst placed tile (bytes)", ["", "A", "B", "change"], rows, [False, True, True, True],
                           style)]
    return out
