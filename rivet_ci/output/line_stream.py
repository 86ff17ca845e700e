"""A text stream that passes on what is written to it in whole lines.

Both filters on rivet-ci's standard streams need whole lines: the redactor (a secret can be split
across two writes) and the command guard (a workflow command can only be read from a whole
line). Each says what it does to a line in `_emit`; the buffering is here, once.
"""

from __future__ import annotations

import io
from typing import TextIO


class LineStream(io.TextIOBase):
    """Buffers the current line until its line break (LF or CR) or a flush, then `_emit`s it."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw
        self._pending = ""  # the current line, until its line break

    def write(self, text: str) -> int:
        self._pending += text
        cut = max(self._pending.rfind("\n"), self._pending.rfind("\r"))
        if cut >= 0:
            ready, self._pending = self._pending[:cut + 1], self._pending[cut + 1:]
            self._emit(ready)
        return len(text)

    def _emit(self, text: str) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        if self._pending:
            ready, self._pending = self._pending, ""
            self._emit(ready)
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", "utf-8") or "utf-8"
