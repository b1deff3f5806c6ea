"""Atomic file output: a reader never sees a half-written report."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tileplan.errors import InputError


def write_atomic(path: str | os.PathLike, data: str | bytes, overwrite: bool = True) -> None:
    """Write `data` to `path` via a temporary file in the same folder and a rename."""
    target = Path(path)
    if not overwrite and target.exists():
        raise InputError(f"{target} exists; pass -f to overwrite it")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{target}: folder {folder} does not exist")
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as an ordinary open() would, not mkstemp's 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def derived_path(source: str | os.PathLike, suffix: str) -> Path:
    """The default output for an input file: the same path with `suffix` in place of
    `.json` (`out/model.json` -> `out/model.html`), or appended to any other name."""
    path = Path(source)
    return path.with_suffix(suffix) if path.suffix.lower() == ".json" else path.with_name(path.name + suffix)


def output_path(source: str | os.PathLike, output: str | None, suffix: str, force: bool) -> Path:
    """Where a verb writes what it makes of `source`: `output`, else `derived_path`.
    Refuses to overwrite an existing file without `force`, and never the input."""
    target = Path(output) if output else derived_path(source, suffix)
    if target.resolve() == Path(source).resolve():
        raise InputError(f"{target} is the input report; choose another output with -o")
    if target.exists() and not force:
        raise InputError(f"{target} exists; pass -f to overwrite it")
    return target
