"""The address-by-step map of one placed tile as a self-contained inline SVG string
(plain string building, no dependency): steps run left to right, addresses bottom
(0) to top (the capacity), each buffer a rectangle over its steps [lower, upper) and
its bytes [offset, offset + size), with a `<title>` for hover text (its name, region,
bytes, offset and steps). Lines mark the capacity and, when given, the boundary
between the two regions; a band marks the peak step.

Input: one entry of a report's `placement.tiles` (JSON as read back: the buffers are
`[what, storage group, region, lower, upper, size, offset]` rows) and the names of the
storage groups. Reports are hostile input: every name is XML-escaped (control
characters XML cannot hold become U+FFFD, and long names are cut), malformed buffer
rows are left out and counted in the caption, and the output is bounded: above
`max_buffers` buffers only the largest (by bytes x steps, the area they cover on the
map) are drawn and the caption says how many were left out. The same input gives the
same string.

Geometry (used by the tests): the plot spans x in [LEFT, LEFT + PLOT_WIDTH] and y in
[TOP, TOP + PLOT_HEIGHT]; address a maps to y = TOP + PLOT_HEIGHT * (1 - a / top),
where top = max(capacity, height, highest buffer top), and step s to
x = LEFT + PLOT_WIDTH * (s - first) / (end - first) over the steps of the buffers and
the peak step. Coordinates are written with two decimals.

    >>> tile = {"tile": 3, "why": "worst tile (total)", "capacity": 100, "height": 60, "lower_bound": 60,
    ...         "peak_step": 1, "largest_free": 40, "buffers": [["group", 0, "standard", 0, 2, 60, 0]]}
    >>> address_map_svg(tile, {0: "x"}).count("<rect class=\\"buffer\\"")
    1
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from tileplan.render import human_bytes

LEFT, TOP, PLOT_WIDTH, PLOT_HEIGHT = 72.0, 28.0, 880.0, 400.0
WIDTH, HEIGHT = LEFT + PLOT_WIDTH + 24.0, TOP + PLOT_HEIGHT + 72.0
MAX_NAME = 160  # characters of a name kept in hover text
FILLS = {"standard": "#4e79a7", "interleaved": "#f28e2b", "scratch": "#9c9c9c", "exchange": "#b07aa1"}
OVER_FILL = "#e15759"  # a buffer ending above the capacity
_XML_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def address_map_svg(tile: Mapping[str, Any], names: Mapping[int, str], *, max_buffers: int = 2000,
                    boundary: int | None = None) -> str:
    """The tile's address map as one `<svg>` element.

    `tile`: one entry of a report's `placement.tiles`; `names`: storage group index
    -> display name (a group missing from it shows as `storage group N`);
    `max_buffers`: the most rectangles drawn (the largest by bytes x steps);
    `boundary`: the address where the interleaved region starts (the report's
    budget_bytes - interleaved_budget_bytes), drawn as a dashed line when given.
    """
    if max_buffers < 0:
        raise ValueError(f"max_buffers must be >= 0, found {max_buffers}")
    capacity = _count(tile.get("capacity")) or 0
    height = _count(tile.get("height")) or 0
    peak = _count(tile.get("peak_step"))
    rows, malformed = _rows(tile.get("buffers"))
    top = max([capacity, height, 1] + [r[6] + r[5] for r in rows])
    steps = [r[3] for r in rows] + [r[4] for r in rows] + ([peak, peak + 1] if peak is not None else [])
    first, end = (min(steps), max(steps)) if steps else (0, 1)
    end = max(end, first + 1)

    def x(step: int) -> float:
        return LEFT + PLOT_WIDTH * (step - first) / (end - first)

    def y(address: int) -> float:
        return TOP + PLOT_HEIGHT * (1 - address / top)

    drawn = sorted(range(len(rows)), key=lambda i: (-rows[i][5] * (rows[i][4] - rows[i][3]), -rows[i][5], i))
    drawn = sorted(drawn[:max_buffers], key=lambda i: (rows[i][6], rows[i][3], i))
    left_out = len(rows) - len(drawn)

    title = _text(f"Tile {_count(tile.get('tile'))} ({_cut(tile.get('why'))}): addresses by step, "
                  f"height {human_bytes(height)} of capacity {human_bytes(capacity)}", cut=False)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="address-map" viewBox="0 0 {WIDTH:.0f} {HEIGHT:.0f}" '
           f'width="{WIDTH:.0f}" height="{HEIGHT:.0f}" role="img" aria-label="{title}" '
           f'font-family="sans-serif" font-size="11">',
           f"<title>{title}</title>",
           f'<rect x="{LEFT:.2f}" y="{TOP:.2f}" width="{PLOT_WIDTH:.2f}" height="{PLOT_HEIGHT:.2f}" '
           f'fill="#fafafa" stroke="#bbbbbb"/>']
    if peak is not None and first <= peak < end:
        out.append(f'<rect class="peak" x="{x(peak):.2f}" y="{TOP:.2f}" width="{max(x(peak + 1) - x(peak), 1.0):.2f}" '
                   f'height="{PLOT_HEIGHT:.2f}" fill="#ffd84d" fill-opacity="0.35">'
                   f"<title>peak step {peak}</title></rect>")
        out.append(f'<text class="peak-label" x="{(x(peak) + x(peak + 1)) / 2:.2f}" y="{TOP - 6:.2f}" '
                   f'text-anchor="middle">peak step {peak}</text>')
    for i in drawn:
        what, group, region, lower, upper, size, offset = rows[i]
        name = "scratch" if what == "scratch" else "exchange" if what == "exchange" else \
            (names.get(group, f"storage group {group}") if group is not None else "group")
        fill = OVER_FILL if offset + size > capacity else FILLS.get(what if what != "group" else region, "#59a14f")
        x0, x1, y0, y1 = x(lower), x(upper), y(offset + size), y(offset)
        hover = (f"{_text(name)}\n{_text(region)} region, {size:,} B ({human_bytes(size)}) at offset {offset:,}\n"
                 f"steps {lower} to {upper - 1}")
        out.append(f'<rect class="buffer" x="{x0:.2f}" y="{y0:.2f}" width="{max(x1 - x0, 0.5):.2f}" '
                   f'height="{max(y1 - y0, 0.5):.2f}" fill="{fill}" fill-opacity="0.8" stroke="#ffffff" '
                   f'stroke-width="0.3"><title>{hover}</title></rect>')
    out.append(_line(y(capacity), "#d62728", f"capacity {human_bytes(capacity)}", dashed=False))
    if boundary is not None and 0 < boundary < top:
        out.append(_line(y(boundary), "#555555", f"interleaved region from {human_bytes(boundary)}", dashed=True))
    out += _axes(first, end, top, x, y)
    caption = [f"{len(drawn)} of {len(rows)} buffers drawn"]
    if left_out:
        caption.append(f"{left_out} smaller ones (by bytes x steps) left out")
    if malformed:
        caption.append(f"{malformed} malformed rows skipped")
    if peak is not None:
        caption.append(f"peak step {peak}")
    out.append(f'<text class="caption" x="{LEFT:.2f}" y="{HEIGHT - 12:.2f}">{_text("; ".join(caption))}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _line(at: float, colour: str, label: str, dashed: bool) -> str:
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    return (f'<line x1="{LEFT:.2f}" y1="{at:.2f}" x2="{LEFT + PLOT_WIDTH:.2f}" y2="{at:.2f}" stroke="{colour}" '
            f'stroke-width="1.5"{dash}/><text x="{LEFT + PLOT_WIDTH - 4:.2f}" y="{at - 4:.2f}" text-anchor="end" '
            f'fill="{colour}">{_text(label)}</text>')


def _axes(first: int, end: int, top: int, x: Any, y: Any) -> list[str]:
    """Ticks: about eight steps along x, quarters of the address range along y."""
    out = [f'<text x="{LEFT + PLOT_WIDTH / 2:.2f}" y="{TOP + PLOT_HEIGHT + 34:.2f}" text-anchor="middle">step</text>',
           f'<text x="14" y="{TOP + PLOT_HEIGHT / 2:.2f}" text-anchor="middle" '
           f'transform="rotate(-90 14 {TOP + PLOT_HEIGHT / 2:.2f})">address</text>']
    stride = max(1, -(-(end - first) // 8))
    for step in range(first, end + 1, stride):
        out.append(f'<text x="{x(step):.2f}" y="{TOP + PLOT_HEIGHT + 16:.2f}" text-anchor="middle">{step}</text>')
    for quarter in range(5):
        address = top * quarter // 4
        out.append(f'<text x="{LEFT - 6:.2f}" y="{y(address) + 4:.2f}" text-anchor="end">'
                   f"{_text(human_bytes(address))}</text>")
    return out


def _rows(buffers: Any) -> tuple[list[tuple[str, int | None, str, int, int, int, int]], int]:
    """The well-formed buffer rows and how many were not: [what, group (int or null),
    region, lower < upper, size >= 0, offset >= 0] with integers (not booleans)."""
    rows: list[tuple[str, int | None, str, int, int, int, int]] = []
    malformed = 0
    for row in buffers if isinstance(buffers, list) else []:
        if not (isinstance(row, list) and len(row) == 7):
            malformed += 1
            continue
        what, group, region, lower, upper, size, offset = row
        numbers = [_count(v) for v in (lower, upper, size, offset)]
        if (type(what) is not str or type(region) is not str or (group is not None and _count(group) is None)
                or None in numbers):
            malformed += 1
            continue
        lower, upper, size, offset = (int(v) for v in numbers if v is not None)
        if lower >= upper:
            malformed += 1
            continue
        rows.append((what, group, region, lower, upper, size, offset))
    return rows, malformed


def _count(value: Any) -> int | None:
    """A JSON integer >= 0 under 2**62 (not a boolean), else None."""
    return value if type(value) is int and 0 <= value < 2**62 else None


def _cut(value: Any) -> str:
    """A name as text of at most MAX_NAME characters."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_NAME else text[:MAX_NAME - 1] + "\u2026"


def _text(value: Any, cut: bool = True) -> str:
    """Text safe inside an XML element or a quoted attribute: escaped, characters XML
    cannot hold replaced, cut at MAX_NAME characters (unless `cut` is False)."""
    text = _cut(value) if cut else str(value)
    return html.escape(_XML_UNSAFE.sub("\ufffd", text), quote=True)
