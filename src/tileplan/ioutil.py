"""File input and output with one-line errors.

Reading: only regular files, at most a stated number of bytes (a report, a machine or
a config that is `/dev/zero`, a FIFO or a folder is refused, not read whole), strict
UTF-8, JSON without NaN, numbers past Python's digit limit or lone surrogates.

Writing: atomic (a temporary file in the target's folder, then a rename or a link),
so a reader never sees a half-written file; through a symbolic link to its target;
never over anything but a regular file; without `-f` the file must still be new at
the moment it appears (`os.link` of the temporary file fails if another writer got
there first); the temporary file is removed on any error and on SIGTERM.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tileplan.errors import InputError

#: the largest report read (docs/performance.md's 100,000-value report is 104 MB in version 1)
MAX_REPORT_BYTES = 1 << 30
#: the largest configuration (machine TOML, Hugging Face config.json) read
MAX_CONFIG_BYTES = 16 << 20
#: a file name's length limit on every common file system, in bytes
MAX_NAME_BYTES = 255

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: str, limit: int = MAX_REPORT_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; `InputError` naming the
    file otherwise. Opening never blocks (a FIFO with no writer is refused at once)."""
    if "\0" in path:
        raise InputError("a path must not contain a NUL character", repr(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"expected a regular file, found {_kind(st.st_mode)}; give the path of a file", path)
        if st.st_size > limit:
            raise InputError(f"{st.st_size} bytes, larger than the {limit} tileplan reads from such a file; "
                             "is it the right file?", path)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(1 << 24, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise InputError(f"larger than {limit} bytes, the most tileplan reads from such a file; "
                                 "is it the right file?", path)
        return b"".join(chunks)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path) from None
    finally:
        os.close(fd)


def read_text(path: str, limit: int = MAX_REPORT_BYTES) -> str:
    """A regular UTF-8 file of at most `limit` bytes as text (see `read_bytes`)."""
    raw = read_bytes(path, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text (byte {e.start}); save the file as UTF-8", path) from None


def read_json(path: str, limit: int = MAX_REPORT_BYTES) -> object:
    """The JSON document in a UTF-8 file; `InputError` naming the file otherwise."""
    return parse_json(read_text(path, limit), path)


_LONE_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, source: str) -> object:
    """Parse JSON text; `InputError` naming `source`, the line and the column otherwise.
    NaN and Infinity, integers of more digits than Python converts (4300) and strings
    holding a lone UTF-16 surrogate (which no file or terminal can take) are refused."""
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", source) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", source) from None
    except ValueError as e:  # the int-str digit limit, NaN or Infinity
        first = str(e).split(";")[0].split(":")[0]
        raise InputError(f"not a number tileplan reads: {first}", source) from None
    if _LONE_SURROGATE_ESCAPE.search(text):
        where = _lone_surrogate(obj)
        if where is not None:
            raise InputError("a string holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair), "
                             "which is not text; fix the name", f"{source}: {where}" if where else source)
    return obj


def _lone_surrogate(obj: object) -> str | None:
    """The JSON path of the first string (or key) holding a lone surrogate, else None."""
    stack: list[tuple[object, str]] = [(obj, "")]
    while stack:
        node, place = stack.pop()
        if isinstance(node, str):
            if _has_surrogate(node):
                return place or "(document)"
        elif isinstance(node, dict):
            for k, v in node.items():
                sub = f"{place}.{k}" if place else str(k)
                if _has_surrogate(k):
                    return place or "(document)"
                stack.append((v, sub))
        elif isinstance(node, list):
            stack.extend((v, f"{place}[{i}]") for i, v in enumerate(node))
    return None


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str) -> str:
    """`text` with every control character escaped as Python writes it (`\\n`,
    `\\x1b`): a name holding a newline or a terminal escape cannot forge a second
    line of a message or recolour a terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def display_name(name: str, limit: int = 120) -> str:
    """A name from a model file made fit for reports, file names and one-line
    messages: control characters (NUL, newline, escapes) escaped, at most `limit`
    characters."""
    clean = escape_controls(name)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


# Writing ----------------------------------------------------------------------------

#: paths `check_target` found new without -f: `write_atomic` then refuses to replace them
_MUST_BE_NEW: set[str] = set()


def _stat(target: Path, follow: bool) -> os.stat_result | None:
    try:
        return os.stat(target, follow_symlinks=follow)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise InputError(f"cannot use as output: {e.strerror}", str(target)) from None


def _validate_name(target: Path) -> None:
    text = str(target)
    if "\0" in text:
        raise InputError(f"output path {text!r} contains a NUL character; choose another name")
    if not text or target.name in ("", ".", ".."):
        raise InputError(f"output path {text!r} names no file")
    size = len(os.fsencode(target.name))
    if size > MAX_NAME_BYTES:
        raise InputError(f"output file name is {size} bytes long, more than the {MAX_NAME_BYTES} a file system "
                         f"allows; choose a shorter name", f"{text[:40]}...")


def resolve_target(target: Path) -> Path:
    """Where writing `target` lands: a symbolic link's final target (written through,
    as an ordinary open() would), else `target` itself."""
    _validate_name(target)
    if target.is_symlink():
        return Path(os.path.realpath(target))
    return target


def check_target(target: Path, overwrite: bool) -> None:
    """An output path must name a regular file (new, or replaced with `overwrite`) in an
    existing folder: never a folder, a device, a FIFO or a path with no name. A
    symbolic link is judged by what it points to."""
    _validate_name(target)
    st = _stat(target, follow=True)  # a dangling link: None, and writing creates its target
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{target} exists and is not a regular file ({_kind(st.st_mode)}); "
                             "choose another output")
        if not overwrite:
            raise InputError(f"{target} exists; pass -f to overwrite it")
    folder = resolve_target(target).parent
    if not folder.is_dir():
        raise InputError(f"{target}: folder {folder} does not exist")
    if not overwrite:
        _MUST_BE_NEW.add(os.path.abspath(target))


class _Terminated(BaseException):
    """SIGTERM while a temporary file exists: unwind, remove it, then exit 143."""


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """Turn SIGTERM into an exception for the duration (main thread only), so that
    `finally` blocks run; the default action is restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except _Terminated:
        raise SystemExit(128 + signal.SIGTERM) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def write_atomic(path: str | os.PathLike, data: str | bytes | Iterable[str], overwrite: bool | None = None) -> None:
    """Write `data` to `path` via a temporary file in the same folder, then a rename
    (`overwrite`) or a hard link that fails if the file exists (no `overwrite`). With
    `overwrite` None, a path `check_target` found new without -f must still be new.
    A symbolic link is written through to its target; nothing but a regular file is
    ever replaced. `data` may be an iterable of text chunks, streamed to the temporary
    file as they come (nothing is left if one fails)."""
    target = Path(path)
    if overwrite is None:
        overwrite = os.path.abspath(target) not in _MUST_BE_NEW
    check_target(target, overwrite)
    real = resolve_target(target)
    chunks: Iterable[str | bytes] = [data] if isinstance(data, (str, bytes)) else data

    def encoded(chunk: str | bytes) -> bytes:
        try:
            return chunk.encode("utf-8") if isinstance(chunk, str) else chunk
        except UnicodeEncodeError as e:
            raise InputError(f"the text to write holds a lone surrogate at offset {e.start}, which is not UTF-8; "
                             "a name in the input is not text", str(target)) from None
    tmp: str | None = None
    with _sigterm_unwinds():
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{real.name[:64]}.", suffix=".tmp", dir=real.parent)
        except OSError as e:
            raise InputError(f"cannot write in {real.parent}: {e.strerror}", str(target)) from None
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # as an ordinary open() would, not mkstemp's 0600
            with os.fdopen(fd, "wb") as fh:
                for chunk in chunks:
                    fh.write(encoded(chunk))
            if overwrite:
                st = _stat(real, follow=False)
                if st is not None and not stat.S_ISREG(st.st_mode):  # it changed since check_target
                    raise InputError(f"{target} exists and is not a regular file ({_kind(st.st_mode)}); "
                                     "choose another output")
                os.replace(tmp, real)
            else:
                _link_new(tmp, real, target)
        except OSError as e:
            raise InputError(f"cannot write: {e.strerror}", str(target)) from None
        finally:
            if tmp is not None and os.path.lexists(tmp):
                os.unlink(tmp)
    _MUST_BE_NEW.discard(os.path.abspath(target))


def _link_new(tmp: str, real: Path, target: Path) -> None:
    """Make `real` name the finished temporary file, failing if `real` exists (also when
    another writer created it since `check_target`)."""
    try:
        os.link(tmp, real)
        return
    except FileExistsError:
        raise InputError(f"{target} exists (another writer created it meanwhile); pass -f to overwrite it") from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV):
            raise
    # no hard links on this file system: claim the name exclusively, then replace the claim
    try:
        os.close(os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise InputError(f"{target} exists (another writer created it meanwhile); pass -f to overwrite it") from None
    os.replace(tmp, real)


def derived_path(source: str | os.PathLike, suffix: str) -> Path:
    """The default output for an input file: the same path with `suffix` in place of
    `.json` (`out/model.json` -> `out/model.html`), or appended to any other name."""
    path = Path(source)
    return path.with_suffix(suffix) if path.suffix.lower() == ".json" else path.with_name(path.name + suffix)


def output_path(source: str | os.PathLike, output: str | None, suffix: str, force: bool) -> Path:
    """Where a verb writes what it makes of `source`: `output`, else `derived_path`.
    Refuses to overwrite an existing file without `force`, and never the input."""
    target = Path(output) if output is not None else derived_path(source, suffix)
    _validate_name(target)
    try:
        same = target.resolve() == Path(source).resolve()
    except (OSError, RuntimeError, ValueError):
        same = False
    if same:
        raise InputError(f"{target} is the input report; choose another output with -o")
    check_target(target, force)
    return target
