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
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
