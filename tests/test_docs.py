"""The documentation keeps up with the CLI: every option `tileplan VERB --help` offers is
named as code (in backquotes or a fenced block) on a page of docs/ or in the README, so
an option added without a word on what it does is seen; a page's example prints what
the page shows (the README's own: tests/test_readme.py)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tileplan.cli.main import build_parser

from test_readme import assert_shown, run, session

ROOT = Path(__file__).resolve().parent.parent
VERBS = ("plan", "check", "summary", "html", "plot", "diff", "place")


def verb_parser(verb: str) -> argparse.ArgumentParser:
    parser = build_parser(verb)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[verb]


def code(text: str) -> str:
    """The code of a Markdown text: its fenced blocks and its backquoted spans."""
    fenced = re.findall(r"^```\w*\n(.*?)^```$", text, re.M | re.S)
    rest = re.sub(r"^```\w*\n.*?^```$", "", text, flags=re.M | re.S)
    return "\n".join(fenced + re.findall(r"`([^`]+)`", rest))


def test_every_option_of_every_verb_is_documented():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = "\n".join(code(p.read_text()) for p in pages)
    missing = sorted(f"{verb} {flag}" for verb in VERBS for action in verb_parser(verb)._actions
                     for flag in action.option_strings if flag.startswith("--") and flag != "--help"
                     and not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", named))
    assert not missing, missing


def test_the_scan_sees_the_options():
    """It reads what `--help` lists: `plan` has its flags, `place` its own."""
    plan = {f for a in verb_parser("plan")._actions for f in a.option_strings}
    assert {"--weights", "--train", "--machine", "--sweep"} <= plan
    assert "--capacity" in {f for a in verb_parser("place")._actions for f in a.option_strings}
    assert code("a `--x y` b\n```\n--z\n```\n--w") == "--z\n\n--x y"


def test_the_pipelines_example_prints_what_the_page_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = (ROOT / "docs" / "pipelines.md").read_text()
    shown = session(".venv/bin/tileplan plan --weights f16 --ipus auto --no-what-if -o so.json", page)
    code, printed = run(["plan", "--weights", "f16", "--ipus", "auto", "--no-what-if", "-o", "so.json"])
    assert code == 0
    assert_shown(shown, printed)
