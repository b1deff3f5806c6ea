"""The README's examples are true: each command it shows, run, prints what it shows (an
IPU plan that does not fit with its what-if rows, the notebook snippets, a Tenstorrent
decoder's summary on an n150 and a T3K), its picture is the default plan's, and it stays short enough to
read in five minutes (the rest lives in docs/)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from tileplan.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: a line of shown output standing for N lines left out: `[21 lines: what they are]`
ELIDED = re.compile(r"^\s*\[(\d+) lines: [^\]]+\]$")


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Each fenced block of `text`: its info string and its lines."""
    return [(m.group(1), m.group(2).splitlines()) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


def session(command: str, text: str = README) -> list[str]:
    """The lines `text` (the README) shows after `$ command`, up to the next `$ ` line or
    the end of its block."""
    for _, lines in fenced_blocks(text):
        if f"$ {command}" in lines:
            after = lines[lines.index(f"$ {command}") + 1:]
            end = next((i for i, line in enumerate(after) if line.startswith("$ ")), len(after))
            return after[:end]
    raise AssertionError(f"no `$ {command}` shown")


def assert_shown(shown: list[str], printed: list[str]) -> None:
    """`printed` is what `shown` shows: line for line, a `[N lines: ...]` line standing
    for exactly N lines."""
    at = 0
    for line in shown:
        m = ELIDED.match(line)
        if m:
            at += int(m.group(1))
            continue
        assert at < len(printed), f"the README shows {line!r} beyond the output's end"
        assert printed[at] == line, f"line {at + 1}: the README shows {line!r}, the command prints {printed[at]!r}"
        at += 1
    assert at == len(printed), f"the command prints {len(printed) - at} lines more than the README shows"


def run(argv: list[str]) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue().splitlines()


def test_the_plan_that_does_not_fit_prints_what_the_readme_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    shown = session(".venv/bin/tileplan plan --weights f16 -o out/f16.json")
    code, printed = run(["plan", "--weights", "f16", "-o", "out/f16.json"])
    assert code == 0
    assert_shown(shown, printed)
    assert any(ELIDED.match(line) for line in shown) and "what if" in " ".join(shown)


def test_each_notebook_snippet_prints_what_the_readme_shows():
    """Each python block (an IPU's, a Tenstorrent card's) run prints the block after it."""
    blocks = fenced_blocks(README)
    snippets = [at for at, (info, _) in enumerate(blocks) if info == "python"]
    assert len(snippets) == 2, "a notebook snippet for each target"
    for at in snippets:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile("\n".join(blocks[at][1]), "README.md", "exec"), {})  # the README's own snippet
        assert out.getvalue().splitlines() == blocks[at + 1][1]


def test_the_tenstorrent_decoder_prints_what_the_readme_shows(tmp_path, monkeypatch):
    config = "tests/data/tt_transformers/Llama-3.1-8B-Instruct/config.json"
    argv = ["plan", config, "--machine", "n150", "--frontend", "tt-transformers", "--prefill-chunk", "8192",
            "-o", "llama8b.json"]
    shown = session(".venv/bin/tileplan " + " ".join(argv))
    monkeypatch.chdir(tmp_path)
    code, printed = run([argv[0], str(ROOT / config), *argv[2:]])
    assert code == 0
    printed = [line.replace(str(ROOT / config), config) for line in printed]
    assert_shown(shown, printed)
    assert shown[1].startswith("does not fit: Out of Memory: Not enough space to allocate")


def test_the_t3k_example_prints_what_the_readme_shows(tmp_path, monkeypatch):
    """The T3K's 70B prefill: the verdict, why and where (the command's lines 2-4)."""
    config = "tests/data/tt_transformers/Llama-3.1-70B-Instruct"
    argv = ["plan", config, "--machine", "t3k", "--frontend", "tt-transformers", "--prefill-chunk", "65536",
            "-o", "llama70b.json"]
    shown = session(".venv/bin/tileplan " + " ".join(argv) + " | sed -n 2,4p")
    monkeypatch.chdir(tmp_path)
    code, printed = run([argv[0], str(ROOT / config), *argv[2:]])
    assert code == 0
    assert_shown(shown, printed[1:4])
    assert shown[0].startswith("does not fit: Out of Memory: Not enough space to allocate")


def test_the_picture_is_the_default_plans_chart():
    """The picture (`tileplan plot` of `make demo`'s report, copied to docs/) is a small
    PNG whose description names the default plan's peak, tile, step and budget."""
    from tileplan.app.api import plan
    from tileplan.views.common import region_peaks

    m = re.search(r"!\[([^\]]*)\]\((docs/[\w.-]+\.png)\)", README)
    assert m, "the README's picture"
    picture = ROOT / m.group(2)
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size < 200_000
    total = region_peaks(plan("siglip-so400m-patch14-384", what_if=False).report)[0]
    numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", m.group(1))]
    assert numbers == [total.peak, total.tile, total.step, total.budget]


def test_the_readme_is_short():
    assert len(README.splitlines()) < 200
