"""The liveness view as one self-contained HTML page (jinja2).

Everything is inline: the style, the script and the data, so the page works offline
and from a file. Names from models reach the page two ways, both inert: the template
escapes every text it prints (autoescape), and the data is embedded as JSON with `<`,
`>`, `&` and the JavaScript line separators written as \\u escapes, so no name can
close its <script> element; the script puts names in the page with textContent only.
A Content-Security-Policy allows the page's own script (by hash) and nothing else:
no network, no other script.
"""

from __future__ import annotations

import base64
import hashlib
import json
from importlib import resources
from typing import Any

import jinja2

from tileplan import __version__
from tileplan.render import human_bytes
from tileplan.report.liveness import Liveness

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
REGION_NOTES = {
    "total": "both regions and the exchange rows: what the verdict judges",
    "standard": "the non-interleaved region; past it, standard data overflows into the interleaved region",
    "interleaved": "the interleaved region",
}


def embed_json(obj: Any) -> str:
    """JSON that can sit inside a <script> element: deterministic (sorted keys) and
    without a `<`, `>` or `&` that the HTML parser could read."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw, escaped in _ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def _asset(name: str) -> str:
    return resources.files("tileplan.render").joinpath("templates", name).read_text(encoding="utf-8")


def _percent(p: float | None) -> str:
    return "unknown" if p is None else f"{p:.1f}%"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("tileplan.render", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["human"] = human_bytes
    env.filters["percent"] = _percent
    return env


def render_html(lv: Liveness) -> str:
    """The whole page. Same view model, same bytes."""
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return environment().get_template("report.html.j2").render(
        lv=lv, notes=REGION_NOTES, version=__version__, style=_asset("report.css"), script=script,
        script_hash=f"sha256-{digest}", data_json=embed_json(lv.to_json()))
