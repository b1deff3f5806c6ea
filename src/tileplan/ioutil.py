"""File input and output: JSON read with one-line errors; atomic writes, so a reader
never sees a half-written report."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from tileplan.errors import InputError


def read_json(path: str) -> object:
    """The JSON document in a UTF-8 file; `InputError` naming the file otherwise."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path) from None
    return parse_json(text, path)


def parse_json(text: str, source: str) -> object:
    """Parse JSON text; `InputError` naming `source`, the line and the column otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", source) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", source) from None


def check_target(target: Path, overwrite: bool) -> None:
    """An output path must name a regular file (new, or replaced with `overwrite`) in an
    existing folder: never a folder, a device or a path with no name."""
    if not str(target) or target.name in ("", ".", ".."):
        raise InputError(f"output path {str(target)!r} names no file")
    if target.exists() or target.is_symlink():
        if not target.is_file():
            raise InputError(f"{target} exists and is not a regular file; choose another output")
        if not overwrite:
            raise InputError(f"{target} exists; pass -f to overwrite it")
    folder = target.parent
    if not folder.is_dir():
        raise InputError(f"{target}: folder {folder} does not exist")


def write_atomic(path: str | os.PathLike, data: str | bytes, overwrite: bool = True) -> None:
    """Write `data` to `path` via a temporary file in the same folder and a rename."""
    target = Path(path)
    check_target(target, overwrite)
    raw = data.encode() if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise InputError(f"cannot write in {target.parent}: {e.strerror}", str(target)) from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as an ordinary open() would, not mkstemp's 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.replace(tmp, target)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise InputError(f"cannot write: {e.strerror}", str(target)) from None
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
    target = Path(output) if output is not None else derived_path(source, suffix)
    if target.resolve() == Path(source).resolve():
        raise InputError(f"{target} is the input report; choose another output with -o")
    check_target(target, force)
    return target
