"""Reading a report of any kind: an IPU report (versions 1 and 2: report/format.py) or a
Tenstorrent report (report/tt_report.py, told apart by its `"target": "tenstorrent"`).
The verbs that take a report (`check`, `summary`, `html`, `plot`, `diff`) read it here
and render it by its kind."""

from __future__ import annotations

from tileplan.errors import TileplanError
from tileplan.ioutil import parse_json, read_text
from tileplan.report.format import from_json_dict
from tileplan.report.model import Report
from tileplan.report.tt_report import TtReport, is_tt_report, read_tt_report

AnyReport = Report | TtReport


def read_any_report(path: str) -> AnyReport:
    """The report at `path`, of either kind (one located line for any problem)."""
    text = read_text(path)
    obj = parse_json(text, path)
    try:
        return read_tt_report(obj) if is_tt_report(obj) else from_json_dict(obj, len(text))
    except TileplanError as e:
        raise e.at(path, sep=": ") from None
