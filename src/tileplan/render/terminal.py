"""The summary, the diff and what `tileplan plan` prints as terminal text: tables, a
per-step usage chart, the plan's verdict lines and a sweep's table.

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

from tileplan.ioutil import escape_controls
from tileplan.render import human_bytes
from tileplan.views.diff import Diff, PlacementSide
from tileplan.views.common import TileSplit
from tileplan.views.headline import Headline
from tileplan.views.liveness import WhatIfRow
from tileplan.report.sections import Pipeline, Sweep
from tileplan.views.summary import Summary
from tileplan.views.classes import TrainingClasses
from tileplan.views.common import RegionPeak, precision_display

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


def training_table(t: TrainingClasses, style: Style = Style()) -> list[str]:
    """A training report's worst tile at its peak by class, always live apart."""
    rows = [[name, "always live" if live else "not always live", human_bytes(b), str(n)] for name, live, b, n in t.rows]
    rows.append(["always live", "", human_bytes(t.always_live), ""])
    rows.append(["not always live", "", human_bytes(t.not_always_live), ""])
    where = f"tile {t.tile} at step {t.step}" if t.tile is not None else "the worst tile"
    return table(f"Training memory on {where}, by class (bytes)", ["class", "", "bytes", "values"], rows,
                 [False, False, True, True], style)


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
    if s.tile_split is not None:
        t = s.tile_split
        out.append(f"Tile {t.tile} at its peak: {human_bytes(t.resident)} always live (parameters, buffers, constants) "
                   f"+ {human_bytes(t.step_dependent)} not always live (activations, operands, scratch) + "
                   f"{human_bytes(t.exchange)} exchange rows")
    out.append("")
    x = s.extras
    if x is not None and x.pipeline:
        out += [style(x.pipeline, "bold"), ""]
    if x is not None and x.training is not None:
        out += training_table(x.training, style) + [""]
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
    if d.a_split is not None or d.b_split is not None:
        out.append("")

        def cell(t: TileSplit | None, always: bool) -> str:
            return "-" if t is None else human_bytes(t.resident if always else t.step_dependent)
        rows = [[label, cell(d.a_split, always), cell(d.b_split, always)]
                for label, always in (("always live", True), ("not always live", False))]
        out += table("The worst tile at its peak (bytes per tile)", ["", "A", "B"], rows, [False, True, True], style)
    out += _render_training(d, style)
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


def _render_training(d: Diff, style: Style) -> list[str]:
    """A training report's worst tile by class, A -> B ("-": no such bytes there)."""
    if d.training is None:
        return []
    rows = [[name, "always live" if live else "not always live", "-" if a is None else human_bytes(a),
             "-" if b is None else human_bytes(b), _change(None if a is None or b is None else b - a, "-")]
            for name, live, a, b in d.training]
    return ["", *table("Training memory on the worst tile at its peak, by class (bytes)",
                       ["class", "", "A", "B", "change"], rows, [False, False, True, True, True], style)]


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


# what `tileplan plan` prints ----------------------------------------------------------

def _num(x: object) -> str:
    return "-" if x is None else str(x)


def _verdict_word(fits: bool | None, scope: str | None) -> str:
    if scope != "program":
        return f"not planned ({scope})"
    return "fits" if fits else "does not fit"


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A plain table: columns as wide as their widest cell, all-number columns right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    numeric = [all(r[i].lstrip("-").isdigit() or r[i] == "-" for r in rows) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric)).rstrip()

    return [line(header), *(line(r) for r in rows)]


def render_headline(h: Headline) -> list[str]:
    """The plan's verdict as `tileplan plan` prints it, one line each (see
    `tileplan.views.headline`)."""
    lines = [h.verdict]
    if not h.planned:
        lines += [f"  {name}: {reason}" for name, reason in h.rejections]
        if h.rejections_total > len(h.rejections):
            lines.append(f"  ... {h.rejections_total - len(h.rejections)} more under rejections")
        return lines
    return lines + _figure_lines(h) + _live_lines(h)


def _figure_lines(h: Headline) -> list[str]:
    """Where the plan peaks and its figures: regions, the tile's split, placement, the
    memory that is not tensors, the products over the cap, the steps over budget."""
    lines = []
    if h.peak_step is not None:
        p = h.peak_step
        runs = f", runs {p.runs} times" if p.runs > 1 else ""
        lines.append(f"  at step {p.index}: {p.operation} of operation {p.source} ({p.name}{runs})")
    if h.total is not None:
        t = h.total
        lines.append(f"  total        {_num(t.peak):>8} B of {_num(t.budget)} (margin {_num(t.margin)}; estimate "
                     f"{_num(t.estimate)}, exact/estimate {h.ratio_exact_to_estimate})")
    if h.tile_split is not None:
        s = h.tile_split
        lines.append(f"  on tile {s.tile}: {s.resident} B always live (parameters, buffers, constants), "
                     f"{s.step_dependent} B not always live (activations, operands, scratch), {s.exchange} B "
                     "exchange rows")
    if h.training is not None:
        for live in (True, False):
            parts = [f"{name} {b} B" for name, always, b, _ in h.training.rows if always == live]
            if parts:
                lines.append(f"  {'always live' if live else 'not always live'} by class: {', '.join(parts)}")
    if h.standard is not None:
        r = h.standard
        lines.append(f"  standard     {_num(r.peak):>8} B on tile {r.tile} at step {r.step} ({_num(r.budget)} B "
                     "non-interleaved budget; beyond it standard data overflows into the interleaved region)")
    if h.interleaved is not None:
        r = h.interleaved
        lines.append(f"  interleaved  {_num(r.peak):>8} B of {_num(r.budget)} on tile {r.tile} at step {r.step} "
                     f"(margin {_num(r.margin)})")
    if h.placed is not None:
        t2 = h.placed
        # the height is the highest address used, not the bytes live: interleaved buffers
        # start at the non-interleaved budget, so the least possible height counts it too
        floor = (f", interleaved buffers starting at {_num(h.standard.budget)} B"
                 if h.standard is not None and h.standard.budget is not None else "")
        lines.append(f"  placement    {_num(t2.height):>8} B the highest address on tile {_num(t2.tile)} "
                     f"({_num(t2.gaps)} B of gaps above the least possible, {_num(t2.lower_bound)} B{floor}; "
                     f"{_num(t2.largest_free)} B the largest free block at step {_num(t2.peak_step)}): "
                     f"{h.placement_verdict}")
    if h.placement_skipped is not None:
        lines.append(f"  placement    not placed: {h.placement_skipped}")
    if h.non_tensor is not None:
        nt = h.non_tensor
        over = ("counted in the verdict with the tensors" if nt.in_verdict
                else f"{nt.over_reserve} B over the {_num(nt.reserve)} B the budget reserves for it" if nt.over_reserve
                else f"within the {_num(nt.reserve)} B the budget reserves for it")
        lines.append(f"  not tensors  {_num(nt.total):>8} B a tile (estimate: vertex code {_num(nt.vertex_code)}, "
                     f"vertex state {_num(nt.vertex_state)}, exchange code {_num(nt.exchange_code)}, control code "
                     f"{_num(nt.control_code)}, stack {_num(nt.stack)}): {over}")
    if h.over_cap is not None:
        c = h.over_cap
        lines.append(f"  {c.count} products need more temporary memory than the available memory proportion "
                     f"{c.proportion} allows ({_num(c.cap_bytes)} B a tile), the most {c.worst.name} "
                     f"({_num(c.worst.temporary_bytes)} B): planned anyway, as Poplar does")
    if h.over_budget is not None and h.over_budget.first is not None and h.over_budget.worst is not None:
        o, f, w = h.over_budget, h.over_budget.first, h.over_budget.worst
        lines.append(f"  over budget in {o.steps} steps: first at step {f.step} ({f.region}, tile {f.tile}, "
                     f"{_num(f.bytes_over)} B over); worst at step {w.step} ({w.region}, tile {w.tile}, "
                     f"{_num(w.bytes_over)} B over)")
    return lines


def _live_lines(h: Headline) -> list[str]:
    """What is live on the worst tile at the peak, and the what-if table."""
    lines = []
    if h.peak_tile is not None:
        p2 = h.peak_tile
        scratch = p2.scratch
        lines.append(f"live on tile {p2.tile} at step {p2.step}, by group ({_num(p2.values_live)} allocations; "
                     f"scratch {_num(scratch and scratch.standard)} B standard, "
                     f"{_num(scratch and scratch.interleaved)} B interleaved):")
        for g in h.live_groups:
            lines.append(f"  {g.bytes:>8} B  {g.label}" + (f", {g.values} values" if g.values > 1 else ""))
        lines.append(f"largest live values on tile {p2.tile} (bytes there):")
        for v in h.live_values:
            shape = "x".join(map(str, v.shape))
            lines.append(f"  {v.bytes:>8} B  {v.label} [{shape}] {v.precision} (value {v.id})")
    if h.what_if:
        lines.append("what if (each row re-planned; its command re-derives it):")
        banded = any(w.inside_band is not None for w in h.what_if)
        used = h.what_if_used
        header = ["knob", "value", "verdict", "peak B" if used is None else "used B", "margin B"] + \
            (["of tile", "band"] if banded else [])
        rows = [[w.knob, w.value, "not planned" if w.error is not None else _verdict_word(w.fits, w.scope),
                 _num(w.peak if used is None else used[k]), _num(w.margin)] +
                (_band_cells(w, h.what_if_band[k] if h.what_if_band is not None else None) if banded else [])
                for k, w in enumerate(h.what_if)]
        lines += ["  " + line for line in format_table(header, rows)]
        lines += [escape_controls(f"  {w.knob} {w.value} not planned: {w.error}") for w in h.what_if
                  if w.error is not None]
        if banded and h.error_band is not None:
            lines.append(f"  band: tileplan's measured error on the worst tile, {h.error_band} (docs/fidelity.md); "
                         "a margin inside it: compile to be sure")
    return lines


def _band_cells(w: WhatIfRow, place: str | None) -> list[str]:
    """A what-if row's margin as a share of the tile and its place in the band."""
    if w.margin_percent is None or w.inside_band is None:
        return ["", ""]
    return [f"{w.margin_percent:+.1f} %", place or ("inside" if w.inside_band else "outside")]


def render_sweep(sweep: Sweep) -> list[str]:
    """A sweep's rows as a table: each combination's knobs and what its plan came to."""
    header = [*sweep.knobs, "verdict", "peak B", "margin B", "tile", "step", "interleaved B"]
    rows = []
    for r in sweep.rows:
        knobs, o = dict(r.knobs), r.outcome
        rows.append([*(str(knobs.get(k)) for k in sweep.knobs), _verdict_word(o.fits, o.scope), _num(o.peak),
                     _num(o.margin), _num(o.tile), _num(o.step), _num(o.interleaved_peak)])
    return format_table(header, rows)


def render_stage(ipu: int, stage: Pipeline | None, verdict: str) -> str:
    """One IPU of a pipeline in a line: its layers and its verdict line."""
    layers = stage.layers if stage is not None else None
    if layers is None or layers[1] <= layers[0]:
        return f"IPU {ipu} (no layers): {verdict}"
    return f"IPU {ipu} (layers {layers[0]}-{layers[1] - 1}): {verdict}"
