"""The output boundary: every byte rivet-ci writes leaves through here, redacted.

* :class:`RedactingStream` wraps stdout and stderr (`rivet_ci.cli.run` installs it for every
  command, `main` also for the process-wide ``sys.stdout``/``sys.stderr``, so tracebacks and the
  logging fallback pass it too); it redacts whole lines, so a secret is never split between
  two writes;
* :func:`logging_to` routes the ``logging`` module (``log.exception`` included) to such a stream
  for the length of a command;
* :func:`write_output` / :func:`append_output` write files (plan.json, the comment file, the
  step summary, ``GITHUB_OUTPUT``) redacted and without following symbolic links: a final
  component that is a symlink (a pull request may commit ``plan.json -> /etc/passwd``) is
  replaced, never written through, and a symlinked directory inside the workspace is refused.

Redaction happens before any escaping where rivet-ci escapes (``Redactor.scrub`` on the data a
template renders) and again on the finished text, which also catches the escaped forms.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from rivet_ci.output.line_stream import LineStream
from rivet_ci.output.paths import PathRefusedError, first_symlink, normalized
from rivet_ci.output.redaction import Redactor

_FLAGS = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class RedactingStream(LineStream):
    """A text stream that redacts every complete line before passing it on."""

    def __init__(self, raw: TextIO, redact: Redactor) -> None:
        super().__init__(raw)
        self.redact = redact

    def _emit(self, text: str) -> None:
        self.raw.write(self.redact(text))

    def write_redacted(self, data: bytes) -> None:
        """Pass on UTF-8 text this stream's redactor has already redacted (whole lines), as
        bytes when the underlying stream has a buffer: not decoded, not scanned again."""
        self.flush()
        buffer = getattr(self.raw, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            self.raw.write(data.decode("utf-8", "surrogatepass"))


class _StreamHandler(logging.Handler):
    def __init__(self, stream: TextIO) -> None:
        super().__init__(logging.WARNING)
        self.stream = stream
        self.setFormatter(logging.Formatter("rivet-ci: %(levelname)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(self.format(record) + "\n")
            self.stream.flush()
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def logging_to(stream: TextIO) -> Iterator[None]:
    """Send log records (and the last-resort handler's) to `stream` while the block runs."""
    handler = _StreamHandler(stream)
    root = logging.getLogger()
    previous = logging.lastResort
    root.addHandler(handler)
    logging.lastResort = handler
    try:
        yield
    finally:
        root.removeHandler(handler)
        logging.lastResort = previous


def symlinked_parent(path: Path, root: Path | None) -> Path | None:
    """The first directory below `root` on the way to `path` that is a symbolic link, if any
    (None also for a path outside `root`); the one path rule's `first_symlink`."""
    if root is None:
        return None
    base = Path(os.path.normpath(root))
    return first_symlink(normalized(path, base), base, include_last=False)


def _confined(path: Path, root: Path | None) -> Path:
    """`path` as the I/O uses it: normalised lexically below `root` (so `a/link/../x` is
    `a/x`, which is what was checked), as given without a root."""
    return path if root is None else normalized(path, Path(os.path.normpath(root)))


def check_parents(path: Path, root: Path | None) -> None:
    """Refuse a parent directory of `path` that is a symlink below `root`."""
    link = symlinked_parent(path, root)
    if link is not None:
        raise PathRefusedError(f"refusing to write {path}: {link} is a symbolic link "
                          "(committed by the pull request?)")


def _refuse_symlinked_parents(path: Path, root: Path | None) -> None:
    """Create the parent directories; refuse one that is a symlink below `root`."""
    check_parents(path, root)
    path.parent.mkdir(parents=True, exist_ok=True)


def _open_nofollow(path: Path, *, append: bool) -> int:
    flags = _FLAGS | (os.O_APPEND if append else os.O_TRUNC)
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EMLINK) and not path.is_symlink():
            raise
    if append:
        raise PathRefusedError(f"refusing to append to {path}: it is a symbolic link")
    path.unlink()  # replace the link itself, never write through it
    return os.open(path, flags | os.O_EXCL, 0o644)


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[BinaryIO]:
    """A new file that takes `path`'s place only once it is complete: written beside it under a
    temporary name, then `os.replace`d (atomic: a reader, a SIGTERM or a full disk leaves either
    the complete previous file or the complete new one, never half of either; a symlink at
    `path` is replaced, never followed). On any failure the temporary file is removed; an
    `OSError` names `path`. A device or FIFO (`--output /dev/stdout`) is written in place."""
    try:
        mode: int | None = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        with os.fdopen(_open_nofollow(path, append=False), "wb") as handle:
            yield handle
        return
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(temporary, _FLAGS | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def write_output(path: Path, text: str, redact: Redactor, *, root: Path | None = None,
                 append: bool = False) -> None:
    """Write `text`, redacted, to `path` without following a symlink at or below `root`;
    atomically unless appending (`_replacing`)."""
    data = redact(text).encode("utf-8", "backslashreplace")
    path = _confined(path, root)
    _refuse_symlinked_parents(path, root)
    if append:
        with os.fdopen(_open_nofollow(path, append=True), "wb") as handle:
            handle.write(data)
        return
    with _replacing(path) as handle:
        handle.write(data)


def append_output(path: Path, text: str, redact: Redactor, *, root: Path | None = None) -> None:
    write_output(path, text, redact, root=root, append=True)


def write_chunks(path: Path | None, chunks: Iterable[bytes], redact: Redactor, *,
                 root: Path | None = None, stream: TextIO | None = None) -> None:
    """Write a document given as UTF-8 chunks, each ending with a line break, to `path`
    (as `write_output` does: no symlink followed, atomically) and/or to `stream`. Each chunk
    is redacted once, as bytes, for both; nothing holds the whole document."""
    target = None
    if path is not None:
        target = _confined(path, root)
        _refuse_symlinked_parents(target, root)
    with _replacing(target) if target is not None else contextlib.nullcontext() as handle:
        for chunk in chunks:
            data = redact.redact_bytes(chunk)
            if handle is not None:
                handle.write(data)
            if stream is not None:
                _to_stream(stream, data, redact)
    if stream is not None:
        stream.flush()


def _to_stream(stream: TextIO, data: bytes, redact: Redactor) -> None:
    if isinstance(stream, RedactingStream) and stream.redact is redact:
        stream.write_redacted(data)
    else:  # a stream outside the boundary: the text is redacted already
        stream.write(data.decode("utf-8", "surrogatepass"))


# -- reads below the workspace, by the same walk -------------------------------------------------

MAX_TRUSTED_FILE_BYTES = 256 * 1024 * 1024
_NOFOLLOW = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class UntrustedPathError(PathRefusedError):
    """A trusted file would be read through a symbolic link or from outside the workspace."""


class FileTooLargeError(UntrustedPathError):
    """A file over the reader's size limit (read no further)."""


def read_nofollow(path: Path, root: Path | None, *, limit: int = MAX_TRUSTED_FILE_BYTES) -> bytes:
    """A file's bytes without following a symlink at or below `root` (nor at `path` itself)."""
    path = _confined(path, root)
    link = symlinked_parent(path, root)
    if link is not None:
        raise UntrustedPathError(f"refusing to read {path}: {link} is a symbolic link")
    try:
        fd = os.open(path, _NOFOLLOW)
    except OSError as exc:
        if path.is_symlink():
            raise UntrustedPathError(f"refusing to read {path}: it is a symbolic link") from None
        raise exc
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(f"{path} is larger than {limit:,} bytes")
    return data
