"""Progress on stderr for work that takes more than a moment, only on a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    """`update(text)` rewrites one status line after `delay` seconds have passed;
    nothing at all when stderr is not a terminal (CI logs stay clean)."""

    def __init__(self, delay: float = 0.3, stream=None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.delay = delay
        self.shown = False

    def update(self, text: str) -> None:
        if self.enabled and time.monotonic() - self.start >= self.delay:
            self.stream.write(f"\r\033[K{text}")
            self.stream.flush()
            self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
