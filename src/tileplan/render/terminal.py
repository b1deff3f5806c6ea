"""The summary and the diff in the terminal (rich): tables and a per-step usage chart."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from tileplan.render import human_bytes
from tileplan.report.diff import Diff
from tileplan.report.summary import Summary
from tileplan.report.views import precision_brief

EIGHTHS = " ▁▂▃▄▅▆▇█"
CHART_HEIGHT = 8
REGION_NOTES = {
    "total": "both regions + exchange rows (judged)",
    "standard": "overflows into interleaved past this",
    "interleaved": "",
}


def name_width(names: Sequence[str], cap: int = 44) -> int:
    """A name column's minimum width: its longest name, up to `cap` (names fold past it)."""
    return min(cap, max((len(n) for n in names), default=4))


def percent_text(p: float | None) -> str:
    return "unknown" if p is None else f"{p:.1f}%"


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
                peak_step: int | None = None) -> list[Text]:
    """Columns of block characters, one per step (or run of steps), scaled to the
    larger of the budget and the highest value; the budget is the dotted row, columns
    over it are red, unknown steps a `?`. Ends with a step axis and the peak marked."""
    columns = bucket(values, width)
    top = max([budget, *(v for v in columns if v is not None)]) or 1
    budget_row = min(height - 1, int(budget * height / top))  # the row whose band holds the budget
    lines = []
    for row in range(height - 1, -1, -1):
        line = Text()
        label = human_bytes(top) if row == height - 1 else ("budget" if row == budget_row else "")
        line.append(f"{label:>10} │", style="dim")
        for v in columns:
            if v is None:
                line.append("?" if row == 0 else " ", style="yellow")
                continue
            eighths = round(v * height * 8 / top) - row * 8
            ch = EIGHTHS[max(0, min(8, eighths))]
            style = "red" if v > budget else "green"
            if ch == " " and row == budget_row:
                line.append("┈", style="dim red")
            else:
                line.append(ch, style=style)
        lines.append(line)
    n = len(values)
    axis = Text(f"{'':>10} └" + "─" * len(columns), style="dim")
    lines.append(axis)
    ticks = Text(f"{'':>10}  step 0", style="dim")
    end = f"step {n - 1}" if n else ""
    pad = len(columns) - len("step 0") - len(end)
    if pad > 0:
        ticks.append(" " * pad + end, style="dim")
    lines.append(ticks)
    if peak_step is not None and 0 <= peak_step < n:
        col = peak_step * len(columns) // n if n > len(columns) else peak_step
        lines.append(Text(f"{'':>10}  " + " " * col + f"▲ peak at step {peak_step}", style="bold"))
    return lines


PIPE_WIDTH = 120


def make_console() -> Console:
    """stdout; colour only on a terminal; no guessing of what to highlight. Piped
    into a file or a CI log it is `PIPE_WIDTH` wide (unless COLUMNS says otherwise),
    not the 80 columns rich assumes, so that names do not fold."""
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPE_WIDTH
    return Console(highlight=False, width=width)


def render_summary(s: Summary, console: Console | None = None) -> None:
    console = console or make_console()
    style = "bold green" if s.fits else "bold red"
    console.print(Text(s.verdict, style=style), soft_wrap=True)  # one line, for logs and grep
    if s.program:
        console.print(Text(", ".join(f"{k} {v}" for k, v in s.program), style="dim"), soft_wrap=True)
    judged = "the exact worst tile" if s.judged_on == "exact" else "the planner's estimate (largest shards)"
    console.print(Text(f"scope {s.scope}; judged on {judged}; {len(s.steps)} steps", style="dim"))

    peaks = Table(title="Peak per region (bytes per tile)", box=box.SIMPLE_HEAD, title_justify="left")
    notes = console.width >= 110
    for name, justify in (("region", "left"), ("peak", "right"), ("budget", "right"), ("used", "right"),
                          ("margin", "right"), ("step", "right"), ("tile", "right")):
        peaks.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    if notes:
        peaks.add_column("")
    for r in s.regions:
        over = r.margin is not None and r.margin < 0 and r.region != "standard"
        peaks.add_row(r.region, human_bytes(r.peak), human_bytes(r.budget),
                      Text(percent_text(r.percent), style="red" if over else ""),
                      human_bytes(r.margin), "-" if r.step is None else str(r.step),
                      "-" if r.tile is None else str(r.tile),
                      *([Text(REGION_NOTES[r.region], style="dim")] if notes else []))
    console.print(peaks)
    if not notes:
        console.print(Text("total: both regions + exchange rows (what the verdict judges); standard data overflows "
                           "into the interleaved region past its budget", style="dim"))

    if s.peak_step is None:
        console.print(Text(f"No peak step: the report does not know every step's usage (scope {s.scope}).",
                           style="yellow"))
    else:
        top = Table(title=Text(f"Top {len(s.top_values)} of {s.values_live} values live at step {s.peak_step}"
                               f" ({s.peak_operation})", style="bold"), box=box.SIMPLE_HEAD, title_justify="left")
        wide = console.width >= 120  # the layout column only where it does not squeeze the names
        columns = [("bytes/tile", "right"), ("name", "left"), ("shape", "left"), ("precision", "left")]
        for name, justify in columns + ([("layout", "left")] if wide else []):
            width = name_width([v.name for v in s.top_values]) if name == "name" else None
            top.add_column(name, justify=justify, overflow="fold", min_width=width,  # type: ignore[arg-type]
                           no_wrap=name == "bytes/tile")
        for v in s.top_values:
            cells = [human_bytes(v.bytes), Text(v.name), "x".join(map(str, v.shape)),
                     Text(precision_brief(v.precision))]
            top.add_row(*cells, *([Text(v.layout)] if wide else []))
        console.print(top)

    if s.rejections_total:
        rej = Table(title=f"{s.rejections_total} values rejected (unknown size)", box=box.SIMPLE_HEAD,
                    title_justify="left")
        rej.add_column("value", justify="right")
        rej.add_column("name")
        rej.add_column("reason", overflow="fold")
        for vid, name, reason in s.rejections:
            rej.add_row(str(vid), Text(name), Text(reason))
        if s.rejections_total > len(s.rejections):
            rej.add_row("", f"... {s.rejections_total - len(s.rejections)} more", "")
        console.print(rej)

    what = ("worst tile" if s.judged_on == "exact" else "estimate") + (" + exchange rows" if s.exchange_bytes else "")
    console.print(Text(f"Usage per step ({what}) against the budget of {human_bytes(s.budget_bytes)}",
                       style="bold"))
    width = max(10, min(len(s.steps) or 1, console.width - 14))
    console.print(Group(*usage_chart([st.total for st in s.steps], s.budget_bytes, width, peak_step=s.peak_step)))
    if any(st.total is None for st in s.steps):
        console.print(Text("? = usage unknown: a live value has no size (see the rejections)", style="yellow"))
    if s.over_budget_steps:
        console.print(Text(f"{s.over_budget_steps} of {len(s.steps)} steps over budget", style="red"))


def render_diff(d: Diff, console: Console | None = None, top: int = 20, a_path: str = "", b_path: str = "") -> None:
    """Tables of what changed from A to B, the biggest changes first, `top` rows each."""
    console = console or make_console()
    a_name, b_name = "A", "B"
    for name, path, line, fits in (("A", a_path, d.a_verdict, d.a_fits), ("B", b_path, d.b_verdict, d.b_fits)):
        console.print(Text(f"{name} {path}: " if path else f"{name}: ") + Text(line, style="green" if fits else "red"),
                      soft_wrap=True)
    if d.verdict_changed:
        word = lambda fits, scope: "fits" if fits else ("does not fit" if scope == "program" else scope)  # noqa: E731
        console.print(Text(f"verdict changed: {word(d.a_fits, d.a_scope)} -> {word(d.b_fits, d.b_scope)}",
                           style="bold"))
    else:
        console.print(Text("verdict unchanged", style="dim"))

    if d.program:
        prog = Table(title="Program", box=box.SIMPLE_HEAD, title_justify="left")
        for c in ("field", a_name, b_name):
            prog.add_column(c, overflow="fold")
        for field, a, b in d.program:
            prog.add_row(Text(field), Text("-" if a is None else a), Text("-" if b is None else b))
        console.print(prog)

    peaks = Table(title="Peaks (bytes per tile)", box=box.SIMPLE_HEAD, title_justify="left")
    for c, j in (("region", "left"), (a_name, "right"), (b_name, "right"), ("change", "right"),
                 (f"{a_name} of budget", "right"), (f"{b_name} of budget", "right")):
        peaks.add_column(c, justify=j)  # type: ignore[arg-type]
    for p in d.peaks:
        delta = "unknown" if p.delta is None else ("+" if p.delta > 0 else "") + human_bytes(p.delta)
        peaks.add_row(p.region, human_bytes(p.a.peak), human_bytes(p.b.peak), delta,
                      percent_text(p.a.percent), percent_text(p.b.percent))
    console.print(peaks)
    console.print(Text(f"steps: {d.a_steps} -> {d.b_steps}; values: {len(d.of_kind('added'))} added, "
                       f"{len(d.of_kind('removed'))} removed, {len(d.of_kind('resized'))} resized, "
                       f"{len(d.of_kind('changed'))} changed without resizing, {d.unchanged} unchanged"))

    if d.resized_groups:
        t = Table(title="Resized (per tile, folded by value group)", box=box.SIMPLE_HEAD, title_justify="left")
        shown = d.resized_groups[:top]
        for c, j in (("values", "right"), ("group", "left"), (a_name, "right"), (b_name, "right"),
                     ("ratio", "right"), ("precision", "left")):
            width = name_width([g.label for g in shown]) if c == "group" else None
            t.add_column(c, justify=j, overflow="fold", min_width=width, no_wrap=c in (a_name, b_name, "ratio"))
        for g in shown:
            ap, bp = precision_brief(g.a_precision), precision_brief(g.b_precision)
            prec = ap if ap == bp else f"{ap} -> {bp}"
            ratio = "-" if g.ratio is None else f"x{g.ratio:.2f}"
            t.add_row(str(g.count), Text(g.label), human_bytes(g.a_bytes), human_bytes(g.b_bytes), ratio, Text(prec))
        if len(d.resized_groups) > top:
            t.add_row("", f"... {len(d.resized_groups) - top} more (--json lists every value)", "", "", "", "")
        console.print(t)
    for kind, title in (("added", f"Only in {b_name}"), ("removed", f"Only in {a_name}")):
        rows = d.of_kind(kind)
        if not rows:
            continue
        t = Table(title=f"{title} ({len(rows)})", box=box.SIMPLE_HEAD, title_justify="left")
        t.add_column("bytes/tile", justify="right", no_wrap=True)
        t.add_column("name", overflow="fold", min_width=name_width([(v.a or v.b).name for v in rows[:top]]))  # type: ignore[union-attr]
        t.add_column("shape")
        t.add_column("precision")
        for v in rows[:top]:
            r = v.b if kind == "added" else v.a
            assert r is not None
            t.add_row(human_bytes(r.bytes), Text(r.name), "x".join(map(str, r.shape)),
                      Text(precision_brief(r.precision)))
        if len(rows) > top:
            t.add_row("", f"... {len(rows) - top} more", "", "")
        console.print(t)
