"""A progress bar on stderr, only when stderr is a terminal (CI logs stay clean)."""

from __future__ import annotations

import threading
import time
from typing import TextIO


class ProgressBar:
    """`bar(done, total)` redraws at most ten times a second; `close()` ends the line."""

    def __init__(self, stream: TextIO, label: str, *, enabled: bool) -> None:
        self._stream = stream
        self._label = label
        self._enabled = enabled
        self._last = 0.0
        self._drawn = False
        self._lock = threading.Lock()  # preflight reports from worker threads

    def __call__(self, done: int, total: int) -> None:
        if not self._enabled or total <= 0:
            return
        with self._lock:
            now = time.monotonic()
            if done < total and now - self._last < 0.1:
                return
            self._last = now
            width = 30
            filled = width * done // total
            self._stream.write(f"\r{self._label} [{'#' * filled}{'.' * (width - filled)}] "
                               f"{done}/{total}")
            self._stream.flush()
            self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
