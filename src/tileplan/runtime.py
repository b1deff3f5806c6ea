"""Process-level settings for the passes that build large data.

Planning a million values allocates millions of small immutable objects and no
reference cycles; Python's cyclic garbage collector would walk them again and again
(a quarter of the planning time, measured). `gc_paused` turns it off for the
duration of a pass and restores it after; reference counting still frees everything.
Restored as it was, the collector's first runs would walk every object the pass made
once per generation (young, middle, old: 1.8 CPU s of a million-value plan,
measured), so before it is turned on again the objects alive are frozen
(`gc.freeze`: moved to the permanent generation the collector skips; freed by
reference counting as before). Only a cycle alive at that moment is left to leak.

Importing a model runs torch, transformers and onnx, which print on the process's
standard streams; `library_output_captured` keeps that off the CLI's one-line
contract (shown with `tileplan plan --verbose`).
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from typing import Callable, Iterator, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


def without_gc(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` runs with the cyclic collector paused (see the module docstring)."""
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with gc_paused():
            return fn(*args, **kwargs)
    return wrapper


# What libraries print while a model is imported --------------------------------------

#: show what torch, transformers and onnx print while importing (`tileplan plan --verbose`)
VERBOSE = False
#: the most bytes of library output kept per import (the rest is counted, not kept)
MAX_CAPTURED_BYTES = 1 << 20
#: what the last capture held, for `--verbose` and for tests (lines)
captured: list[str] = []
_depth = 0


@contextmanager
def library_output_captured() -> Iterator[list[str]]:
    """While importing a model, torch, transformers and onnx print warnings and log
    records (sometimes whole tracebacks) on the process's standard error and output,
    from Python and from C++. The CLI promises one line on stderr, so standard output
    and error are pointed at a temporary file at the descriptor level for the
    duration, and Python warnings are recorded instead of printed; the lines land in
    the yielded list (and `captured`). With `VERBOSE` nothing is captured. Nested uses
    capture once."""
    global _depth
    lines: list[str] = []
    if VERBOSE or _depth:
        yield lines
        return
    import os
    import sys
    import tempfile
    import warnings

    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    saved: list[int] = []
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # no descriptors to redirect (a closed stdout): record warnings only
        for fd in saved:
            os.close(fd)
        saved = []
    with tempfile.TemporaryFile() as sink, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if saved:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
        _depth += 1
        try:
            yield lines
        finally:
            _depth -= 1
            for stream in (sys.stdout, sys.stderr):
                try:
                    if stream is not None:
                        stream.flush()
                except (OSError, ValueError):
                    pass
            if saved:
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                for fd in saved:
                    os.close(fd)
            size = sink.seek(0, 2)
            sink.seek(0)
            text = sink.read(MAX_CAPTURED_BYTES).decode("utf-8", "replace")
            lines.extend(f"{w.category.__name__}: {w.message}" for w in caught)
            lines.extend(line for line in text.splitlines() if line.strip())
            if size > MAX_CAPTURED_BYTES:
                lines.append(f"... {size - MAX_CAPTURED_BYTES} more bytes")
            captured[:] = lines
