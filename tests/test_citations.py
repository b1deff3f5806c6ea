"""Every Markdown file of this repository that the README, the docs or a docstring or
comment cites exists in the repository: the research notes the code cites live in
docs/notes/, and no citation points outside the repository (`/work/shared/...`)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the repository's own top folders: a path citation starting with one is ours
OURS = ("docs", "tests", "src", "benchmarks", "shared", "notes")
_CITED = re.compile(r"(?<![\w./-])(/?[\w.-]+(?:/[\w.-]+)*\.md)(?![\w/])")
#: `graphcore/popliner tests/...README.md`: a path inside another repository
_OTHER_REPOSITORY = re.compile(r"[\w.-]+/[\w.-]+")


def texts(path: Path) -> Iterator[str]:
    """A Python file's docstrings and comments; a Markdown file whole."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        yield source
        return
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield doc
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.string


def citations(path: Path) -> Iterator[str]:
    """The Markdown files of this repository that `path` cites: a path under one of its
    top folders (or outside it: absolute), or a note's bare upper-case name
    (`CONV-NOTES.md`); in docs/, a sibling's bare name too."""
    for text in texts(path):
        for m in _CITED.finditer(text):
            cited = m.group(1)
            before = text[:m.start()].rsplit(None, 1)
            previous = before[-1].strip("(`'\",;") if len(before) > 1 or text[:m.start()].strip() else ""
            if _OTHER_REPOSITORY.fullmatch(previous) and not previous.endswith(".md") \
                    and previous.split("/")[0] not in OURS:
                continue
            if cited.startswith("/") or cited.split("/")[0] in OURS:
                yield cited
            elif "/" not in cited and (re.fullmatch(r"[A-Z][A-Z0-9_-]*\.md", cited) or path.parent.name == "docs"):
                yield cited


def found(cited: str, path: Path) -> bool:
    if cited.startswith("/"):
        return False  # outside the repository
    if "/" in cited:
        return (ROOT / cited).is_file()
    return any((folder / cited).is_file() for folder in (ROOT, ROOT / "docs", ROOT / "docs" / "notes", path.parent))


def sources() -> Iterator[Path]:
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").glob("*.md"))
    for top in ("src", "tests", "benchmarks"):
        yield from sorted((ROOT / top).rglob("*.py"))


def test_every_cited_markdown_file_exists_in_the_repository():
    missing = sorted({f"{path.relative_to(ROOT)}: {cited}" for path in sources() for cited in citations(path)
                      if not found(cited, path)})
    assert not missing, missing


def test_the_citations_found_include_the_notes():
    """The scan sees what it must: the notes' citations in docstrings and the README."""
    cited = {c for path in sources() for c in citations(path)}
    assert {"docs/notes/TRAINING-NOTES.md", "docs/notes/IPU-LOWERING.md", "docs/report-format.md",
            "CONV-NOTES.md"} <= cited
    assert not any(c.startswith(("/work", "shared/")) for c in cited)
