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


class SlowNotice:
    """One line on stderr when a step takes longer than `after` seconds (`rivet-ci: planning
    base and head …`), then, when it ends, how long it took. Only when `enabled` (stderr is a
    terminal, or RIVET_CI_PROGRESS=1 asks for it in a log)."""

    def __init__(self, stream: TextIO, label: str, *, enabled: bool, after: float = 1.0,
                 done_line: bool = True) -> None:
        self._stream = stream
        self._done_line = done_line
        self._label = label
        self._started = time.monotonic()
        self._shown = threading.Event()
        self._timer = threading.Timer(after, self._show) if enabled else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _show(self) -> None:
        self._stream.write(f"rivet-ci: {self._label} …\n")
        self._stream.flush()
        self._shown.set()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._shown.is_set() and self._done_line:
            self._stream.write(f"rivet-ci: {self._label}: done in "
                               f"{time.monotonic() - self._started:.1f} s\n")
            self._stream.flush()
