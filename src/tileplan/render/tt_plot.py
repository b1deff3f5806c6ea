"""The Tenstorrent page's L1 picture as a PNG (matplotlib, Agg): each program's L1 on one
core (views/tt_page.py), circular buffers up from l1_unreserved_base, L1 buffers down
from the top of the bank (the responsible ones red), L1_SMALL and the reserved area
shaded, the failing program marked."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, same pixels everywhere

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from tileplan.render.plot import plain  # noqa: E402
from tileplan.views.tt_page import TtPage  # noqa: E402

WIDTH_IN, HEIGHT_IN, DPI = 13.0, 6.5, 100
CB, BUF, RESP, SMALL, RESERVED = "#60a5fa", "#fdba74", "#f87171", "#c4b5fd", "#d4d4d4"


def render_tt_png(page: TtPage) -> bytes:
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    n = max(1, len(page.columns))
    kib = 1024
    ax.add_patch(Rectangle((0, 0), n, page.l1_base / kib, color=RESERVED, lw=0))
    ax.add_patch(Rectangle((0, page.l1_bank_top / kib), n, (page.l1_size - page.l1_bank_top) / kib, color=SMALL,
                           lw=0))
    for i, c in enumerate(page.columns):
        ax.add_patch(Rectangle((i, page.l1_base / kib), 1, (c.cb_end - page.l1_base) / kib, color=CB, lw=0))
    for r in page.rects:
        ax.add_patch(Rectangle((r.first, r.address / kib), r.last - r.first + 1, (r.end - r.address) / kib,
                               facecolor=RESP if r.responsible else BUF, edgecolor="#7c2d12", lw=0.3))
    if page.failing_column is not None:
        ax.axvline(page.failing_column + 0.5, color="#b91c1c", lw=1.5)
    ax.set_xlim(0, n)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, page.l1_size / kib)
    ax.set_xlabel("programs in run order" + (f" ({page.columns[-1].last + 1} programs)" if page.columns else ""))
    ax.set_ylabel("L1 address on a core (KiB)")
    verdict = page.summary.verdict if page.summary.fits else f"does not fit: {page.summary.verdict}"
    ax.set_title(plain(f"{page.title}\n{verdict[:160]}"), fontsize=10, loc="left")
    ax.legend(handles=[Patch(color=CB, label="circular buffers (up from l1_unreserved_base)"),
                       Patch(color=BUF, label="L1 buffers (down from the top)"), Patch(color=RESP, label="responsible"),
                       Patch(color=SMALL, label="L1_SMALL"), Patch(color=RESERVED, label="reserved")],
              loc="upper right", fontsize=8, framealpha=0.9)
    out = io.BytesIO()
    fig.savefig(out, format="png", metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()
