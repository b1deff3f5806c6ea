"""The liveness chart as a PNG (matplotlib, Agg): the HTML report's chart, still.

Top panel: every step's usage per tile stacked by value group, standard region
below, interleaved above (hatched), exchange rows on top; the budget, the
non-interleaved budget (the non-interleaved region less what else sits there), the
exact worst tile (a line, when the report has it) and the peak. Bottom panel: the
interleaved region against its budget. Repeat blocks
are shaded; steps of unknown usage are marked "?".
"""

from __future__ import annotations

import io
import math

import matplotlib
import numpy as np

matplotlib.use("Agg")  # before pyplot: no display, same pixels everywhere

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator  # noqa: E402

from tileplan.render import human_bytes  # noqa: E402
from tileplan.views.liveness import OTHER, SCRATCH, Liveness, chart_buckets, column_max, step_heights  # noqa: E402

WIDTH_IN, HEIGHT_IN, DPI = 13.0, 8.0, 100
#: bars drawn at most (the chart is about 1200 pixels wide): more steps share a column
MAX_COLUMNS = 1200
EXCHANGE_COLOUR = "#3b3b3b"
OTHER_COLOUR = "#bab0ac"
SCRATCH_COLOUR = "#79706e"


def plain(text: str) -> str:
    """Text from a model, drawn as it is: matplotlib would read `$...$` as math."""
    return text.replace("$", r"\$")


def _colours(lv: Liveness) -> dict[str, str]:
    """One colour per band label, the same in both regions (tab20, then tab20b)."""
    # tab20 and tab20b are ListedColormaps, which have .colors; get_cmap is typed as any Colormap
    palette = [*plt.get_cmap("tab20").colors, *plt.get_cmap("tab20b").colors]  # type: ignore[attr-defined]
    out: dict[str, str] = {}
    k = 0
    for b in lv.bands:
        if b.label in out:
            continue
        if b.group == OTHER:
            out[b.label] = OTHER_COLOUR
        elif b.group == SCRATCH:
            out[b.label] = SCRATCH_COLOUR
        else:
            out[b.label] = matplotlib.colors.to_hex(palette[k % len(palette)])
            k += 1
    return out


def tick_step(high: float, count: int) -> float:
    """A round tick step in the unit the labels use (B, KiB, MiB): at most about
    `count` ticks up to `high` (600 KiB, 5 -> 200 KiB = 204800)."""
    unit = 1024**2 if high >= 4 * 1024**2 else (1024 if high >= 4096 else 1)
    raw = max(high / unit / count, 1e-9)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return step * unit


def _bytes_axis(ax, high: float, count: int) -> None:
    ax.set_ylim(0, high)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: human_bytes(int(y))))
    ax.yaxis.set_major_locator(MultipleLocator(tick_step(high, count)))
    ax.grid(axis="y", color="#eaeef2", linewidth=0.8)
    ax.set_axisbelow(True)


def chart_columns(lv: Liveness, most: int = MAX_COLUMNS) -> list[tuple[int, int, int]]:
    """(first, last, shown) step of each bar: one step per bar up to `most` steps,
    else `most` runs of consecutive steps, each drawn as its tallest step (the most
    bytes stacked, ties: the first), so that no peak is lost. Linear in the steps."""
    lo, hi, shown = chart_buckets(step_heights(lv), most)
    return list(zip(lo.tolist(), hi.tolist(), shown.tolist(), strict=True))


def render_png(lv: Liveness) -> bytes:
    """The chart as PNG bytes (bounded: at most `MAX_COLUMNS` bars per band)."""
    n = len(lv.steps)
    lo_, hi_, shown_ = chart_buckets(step_heights(lv), MAX_COLUMNS)
    cols = list(zip(lo_.tolist(), hi_.tolist(), shown_.tolist(), strict=True))
    x = [(first + last) / 2 for first, last, _ in cols]
    m = len(cols)
    colours = _colours(lv)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1]})
    try:
        word = "fits" if lv.fits else ("does not fit" if lv.scope == "program" else "not planned")
        fig.suptitle(f"{plain(lv.title)}: {word}", fontsize=13, fontweight="bold", x=0.01, ha="left")
        top.set_title(plain(lv.verdict), fontsize=9, loc="left", color="#1a7f37" if lv.fits else "#cf222e")

        for ax in (top, bottom):
            for r in lv.repeats:
                ax.axvspan(r.first_step - 0.5, r.last_step + 0.5, color="#eaeef2", zorder=0)

        # stacked bars: standard, then interleaved (hatched), then the exchange rows
        # each band one filled outline over the columns (not a rectangle per column)
        edges = [cols[0][0] - 0.5, *(last + 0.5 for _, last, _ in cols)] if cols else [0.0, 1.0]
        base = [0] * m
        for region, hatch in (("standard", None), ("interleaved", "///")):
            for band in (b for b in lv.bands if b.region == region):
                heights = band.bytes[shown_].tolist()
                upper = [a + b for a, b in zip(base, heights, strict=True)]
                if any(heights):
                    top.stairs(upper, edges, baseline=base, fill=True, color=colours[band.label], hatch=hatch,
                               edgecolor="white" if hatch else None, linewidth=0, zorder=2)
                base = upper
        if lv.exchange_bytes and m:
            upper = [a + lv.exchange_bytes for a in base]
            top.stairs(upper, edges, baseline=base, fill=True, color=EXCHANGE_COLOUR, linewidth=0, zorder=2)
            base = upper
        base_i = [0] * m
        for band in (b for b in lv.bands if b.region == "interleaved"):
            heights = band.bytes[shown_].tolist()
            upper = [a + b for a, b in zip(base_i, heights, strict=True)]
            if any(heights):
                bottom.stairs(upper, edges, baseline=base_i, fill=True, color=colours[band.label], linewidth=0,
                              zorder=2)
            base_i = upper

        if lv.judged_on == "exact":
            highest, known = column_max(lv.steps.total, lv.steps.total_known, lo_)
            xs = [c for c, k in zip(x, known.tolist(), strict=True) if k]
            ys = highest[known].tolist()
            top.step(xs, ys, where="mid", color="#1f2328", linewidth=1.3, zorder=3, label="exact worst tile")

        totals = lv.steps.total[lv.steps.total_known]
        high = max([lv.budget_bytes, *base, int(totals.max()) if len(totals) else 0]) * 1.18
        _bytes_axis(top, high, 5)
        top.axhline(lv.budget_bytes, color="#cf222e", linewidth=1.5, zorder=4)
        top.text(n - 0.5, lv.budget_bytes, f"{lv.budget_label} {human_bytes(lv.budget_bytes)}", color="#cf222e",
                 ha="right", va="bottom", fontsize=9)
        top.axhline(lv.standard_budget_bytes, color="#bf8700", linestyle="--", linewidth=1.0, zorder=4)
        top.text(n - 0.5, lv.standard_budget_bytes,
                 f"non-interleaved budget {human_bytes(lv.standard_budget_bytes)}: standard data overflows above",
                 color="#7d4e00", ha="right", va="bottom", fontsize=8)
        unknown = np.logical_or.reduceat(lv.unknown > 0, lo_).tolist() if m else []
        for k in range(m):
            if unknown[k]:  # the bar shows the known part only
                top.text(x[k], base[k] + high * 0.01, "?", ha="center", va="bottom", color="#7d4e00", fontsize=12,
                         fontweight="bold", zorder=5)
        peak = lv.regions[0]
        if lv.peak_step is not None and peak.peak is not None:
            where = f" on tile {peak.tile}" if peak.tile is not None else ""
            top.annotate(f"peak {human_bytes(peak.peak)} at step {lv.peak_step}{where}",
                         xy=(lv.peak_step, peak.peak), xytext=(0, 18), textcoords="offset points",
                         ha="left" if lv.peak_step < 0.6 * n else "right", fontsize=9, fontweight="bold",
                         arrowprops={"arrowstyle": "-|>", "color": "#cf222e"}, zorder=6)
        top.set_ylabel("bytes per tile")

        _bytes_axis(bottom, max([lv.interleaved_budget_bytes, *base_i]) * 1.15, 2)
        bottom.axhline(lv.interleaved_budget_bytes, color="#cf222e", linewidth=1.5, zorder=4)
        bottom.text(n - 0.5, lv.interleaved_budget_bytes,
                    f"interleaved budget {human_bytes(lv.interleaved_budget_bytes)}",
                    color="#cf222e", ha="right", va="bottom", fontsize=9)
        bottom.set_title("interleaved region", fontsize=9, loc="left")
        bottom.set_xlabel("step")
        bottom.set_xlim(-0.5, max(n, 1) - 0.5)
        bottom.xaxis.set_major_locator(MaxNLocator(nbins=20, integer=True))

        seen: dict[str, str] = {}
        for b in lv.bands:
            seen.setdefault(b.label, colours[b.label])
        handles = [Patch(color=c, label=plain(label)) for label, c in seen.items()]
        if lv.exchange_bytes:
            handles.append(Patch(color=EXCHANGE_COLOUR, label="exchange rows"))
        if lv.repeats:
            handles.append(Patch(color="#eaeef2", label="repeat block"))
        handles.append(Patch(facecolor="white", edgecolor="#57606a", hatch="///", label="interleaved region"))
        if lv.any_unknown:
            handles.append(Patch(facecolor="white", edgecolor="#7d4e00",
                                 label="? usage unknown: values without a size (bar: the known part)"))
        fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7.5, frameon=False)
        fig.subplots_adjust(left=0.08, right=0.99, top=0.92, bottom=0.09 + 0.022 * ((len(handles) + 2) // 3),
                            hspace=0.25)
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
        return out.getvalue()
    finally:
        plt.close(fig)
