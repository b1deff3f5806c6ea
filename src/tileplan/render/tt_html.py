"""A Tenstorrent report as one self-contained HTML page (jinja2): the verdict, each
program's L1 on one core as an SVG (views/tt_page.py: circular buffers up from
l1_unreserved_base, L1 buffers down from the top, where they meet), the buffers
responsible, the peaks, the largest buffers, the what-if rows and what reproduces a fit.

Inline and inert: the style is inline and allowed by its hash, there is no script
(tooltips are SVG <title>s), every name is escaped by the template (autoescape), and a
Content-Security-Policy allows nothing else, so the page works offline and no model's
name can run in it.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from importlib import resources

import jinja2
from markupsafe import Markup

from tileplan.version import __version__
from tileplan.views.tt_page import TtPage
from tileplan.views.tt_summary import BufferLine

WIDTH, HEIGHT, LEFT = 1100, 420, 60


@dataclass(frozen=True, slots=True)
class Geometry:
    """Bytes and columns to pixels: addresses up from the bottom."""

    l1_size: int
    columns: int
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT

    @property
    def cw(self) -> float:
        return self.width / max(1, self.columns)

    def x(self, column: int) -> float:
        return round(self.left + column * self.cw, 2)

    def y(self, address: int) -> float:
        return round(self.height - address / self.l1_size * self.height, 2)

    @property
    def ticks(self) -> list[int]:
        step = 256 * 1024
        return list(range(0, self.l1_size + 1, step))


def _buffers(env: jinja2.Environment, rows: tuple[BufferLine, ...]) -> Markup:
    template = env.from_string(
        "<table><tr><th>buffer</th><th>module</th><th>memory</th><th>bytes per bank</th><th>banks</th>"
        "<th>address</th><th>made by</th><th>freed after</th></tr>"
        "{% for b in rows %}<tr><td>{{ b.name }}</td><td>{{ b.module or '-' }}</td><td>{{ b.buffer_type }}</td>"
        "<td class=\"n\">{{ '{:,}'.format(b.bytes_per_bank) }}</td><td class=\"n\">{{ b.banks }}"
        "{{ ' shards' if b.sharded else '' }}</td><td class=\"n\">{{ b.address }}</td><td>{{ b.made_by }}</td>"
        "<td>{{ b.freed_after or '-' }}</td></tr>{% endfor %}</table>")
    return Markup(template.render(rows=rows))


def render_tt_html(page: TtPage) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("tileplan.render", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    style = resources.files("tileplan.render").joinpath("templates/tt_report.css").read_text()
    digest = base64.b64encode(hashlib.sha256(style.encode("utf-8")).digest()).decode("ascii")
    return env.get_template("tt_report.html.j2").render(
        page=page, s=page.summary, g=Geometry(page.l1_size, len(page.columns)), style=Markup(style),
        style_hash=f"sha256-{digest}", version=__version__, buffers=lambda rows: _buffers(env, rows))
