"""One escaping for the workflow-command stream (docs/security.md, "The command stream").

GitHub Actions reads every line a step prints: a line starting (after leading whitespace) with
``::`` is a workflow command (``::error``, ``::add-mask``, ``::stop-commands``, ...), and the
older form ``##[command]`` is recognised anywhere in a line. rivet-ci prints text a pull request
controls (file names, config values, messages quoting them), so no line it prints may start a
command unless rivet-ci built that command itself:

* :func:`workflow_command` marks a command line rivet-ci built (its data and properties escaped
  by ``github_action.annotations``) with this process's random token;
* :class:`CommandGuard`, wrapped around stdout and stderr by ``rivet_ci.cli`` for every command,
  passes a marked line on without the token and neutralises every other line: a leading ``::``
  becomes ``%3A%3A`` and ``##[`` becomes ``##%5B`` (the percent-escaping annotations use), at
  every line break the runner splits at (LF, CR, CRLF). Outside GitHub Actions
  (``GITHUB_ACTIONS`` not ``true``) text passes unchanged; the token is always removed.

The token is made per process (``secrets.token_hex``) and never printed, so pull-request text
cannot forge a marked line.
"""

from __future__ import annotations

import re
import secrets
from typing import TextIO

from rivet_ci.output.line_stream import LineStream

_TOKEN = "\x1e" + secrets.token_hex(16) + "\x1e"
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


def workflow_command(line: str) -> str:
    """`line`, a workflow command rivet-ci built (`::warning title=...::message`, its data
    escaped), marked to pass the guard as a command; the older `##[` form is broken in it too
    (the runner would read one anywhere in a line)."""
    return _TOKEN + line.replace("##[", "##%5B")


def neutralise(line: str, *, at_line_start: bool = True) -> str:
    """`line` (no line break in it) such that the runner reads no command from it."""
    if "##[" in line:
        line = line.replace("##[", "##%5B")
    if at_line_start:
        stripped = line.lstrip()
        if stripped.startswith("::"):
            line = line[:len(line) - len(stripped)] + "%3A%3A" + stripped[2:]
    return line


class CommandGuard(LineStream):
    """A text stream that lets through only the workflow commands rivet-ci built."""

    def __init__(self, raw: TextIO, *, active: bool) -> None:
        super().__init__(raw)
        self.active = active
        self._blank = True  # only whitespace so far on the current line (after a flush)

    def _emit(self, text: str) -> None:
        if _TOKEN not in text and (not self.active or (
                "::" not in text and "##[" not in text)):
            self.raw.write(text)  # nothing here can start a command (the usual case)
            if self.active:
                cut = max(text.rfind("\n"), text.rfind("\r"))
                self._blank = (not text[cut + 1:].strip() if cut >= 0
                               else self._blank and not text.strip())
            return
        out = []
        for piece in _LINE_BREAK.split(text):
            if piece in ("\n", "\r", "\r\n"):
                out.append(piece)
                self._blank = True
                continue
            if piece.startswith(_TOKEN) and self._blank:
                line = piece[len(_TOKEN):]  # a command rivet-ci built
            else:
                line = piece.replace(_TOKEN, "")
                if self.active:
                    line = neutralise(line, at_line_start=self._blank)
            out.append(line)
            self._blank = self._blank and not line.strip()
        self.raw.write("".join(out))

    @property
    def buffer(self) -> object:
        """The raw stream's buffer when inactive (a redacted document written as bytes needs
        no guard outside Actions); raises AttributeError when active, so text passes here."""
        if self.active:
            raise AttributeError("buffer")
        return self.raw.buffer
