"""The one facts document in a forge's artifact archive (a zip), read within one bound.

A forge's trusted facts arrive as an archive (GitHub's workflow artifact; a GitLab job's
artifacts are a zip too). Its bytes are data, bounded by `core/common/limits.py`:

* the members: before the central directory is parsed, its entries are counted (each starts
  with the central-directory signature: the count is an upper bound of what `zipfile` parses);
  more than `MAX_FACTS_ARCHIVE_MEMBERS` refuses the archive;
* the bytes: every member is inflated against one budget for the whole archive,
  `MAX_FACTS_ARCHIVE_INFLATED_BYTES`, counted as read (a member never yields more than the
  size the archive declares for it, and `zipfile` checks its CRC at the end); the first byte
  past the budget refuses the archive, so no archive inflates to more than the bound, however
  its members split it.

Members are stored or deflated (as upload-artifact and GitLab write them; any other method is
refused, so only zlib inflates). The archive must then hold exactly one facts document
(`format: rivet-ci-facts/...`), found by its structure; members that are not UTF-8 or not a
facts document are passed over.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from rivet_ci.core.common.limits import (
    MAX_FACTS_ARCHIVE_INFLATED_BYTES,
    MAX_FACTS_ARCHIVE_MEMBERS,
)
from rivet_ci.core.facts.loader import is_facts_document

_CENTRAL_HEADER = b"PK\x01\x02"
_END_OF_DIRECTORY = b"PK\x05\x06"
_END_RECORD_MAX = 22 + 65_535  # the end record and the longest comment it may carry
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


class FactsArchiveError(Exception):
    """The archive is refused; the message says why (safe to print)."""


def listed_members(archive: bytes) -> int:
    """An upper bound of the entries `zipfile` would parse from the archive's central
    directory: the central-directory headers before its end record."""
    end = archive.rfind(_END_OF_DIRECTORY, max(0, len(archive) - _END_RECORD_MAX))
    if end < 0:
        raise FactsArchiveError("is not a zip archive (no end of central directory)")
    return archive.count(_CENTRAL_HEADER, 0, end)


def facts_member(archive: bytes, *, max_members: int = MAX_FACTS_ARCHIVE_MEMBERS,
                 max_inflated: int = MAX_FACTS_ARCHIVE_INFLATED_BYTES) -> tuple[str, str]:
    """The name and text of the one facts document in `archive` (module docstring)."""
    listed = listed_members(archive)
    if listed > max_members:
        raise FactsArchiveError(f"lists {listed:,} members, more than the {max_members:,} a "
                                "facts archive may hold")
    budget = max_inflated
    found: list[tuple[str, str]] = []
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                if info.compress_type not in _METHODS:
                    raise FactsArchiveError(f"member {info.filename!r:.200} is compressed with "
                                            f"method {info.compress_type}, not stored or "
                                            "deflated")
                if info.file_size > budget:
                    raise _too_large(max_inflated)
                with zf.open(info) as member:
                    data = member.read(budget + 1)
                if len(data) > budget:
                    raise _too_large(max_inflated)
                budget -= len(data)
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if is_facts_document(text):
                    found.append((info.filename, text))
    except (zipfile.BadZipFile, zlib.error, RuntimeError, ValueError, OSError,
            EOFError) as exc:  # (RuntimeError: an encrypted member)
        raise FactsArchiveError(f"is not a readable zip archive: {exc}") from None
    if len(found) != 1:
        raise FactsArchiveError(f"holds {len(found)} facts documents, not exactly one")
    return found[0]


def _too_large(bound: int) -> FactsArchiveError:
    return FactsArchiveError(f"inflates to more than {bound:,} bytes, the bound on a facts "
                             "archive (all its members together)")
