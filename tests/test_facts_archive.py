"""The bounds on a facts archive (`rivet_ci/adapters/facts_archive.py`, defined once in
`core/common/limits.py`): the members its central directory lists, counted before it is
parsed, and the bytes all members inflate to together, counted as read — so an archive of many
members, each small, cannot inflate without bound. Archives are written as an attacker would
(`support.zips`: one deflated payload under many names)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from support.zips import repeated_member_zip

from rivet_ci.adapters.facts_archive import FactsArchiveError, facts_member, listed_members
from rivet_ci.core.common.limits import (
    MAX_FACTS_ARCHIVE_INFLATED_BYTES,
    MAX_FACTS_ARCHIVE_MEMBERS,
)

FACTS = json.dumps({"format": "rivet-ci-facts/1", "captured_at": "2026-11-29T06:00:00Z",
                    "exports": {"orders": {"row_estimate": 8_000_000}}})
MIB = 1024 * 1024


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def test_many_small_members_cannot_inflate_past_the_bound_together() -> None:
    # 300 members of 1 MiB each: each far within any per-member bound, 300 MiB together.
    archive = repeated_member_zip(b"\0" * MIB, 300, extra={"facts.json": FACTS.encode()})
    assert len(archive) < MIB // 2  # a third of a megabyte on the wire
    with pytest.raises(FactsArchiveError, match=r"inflates to more than 268,435,456 bytes"):
        facts_member(archive)
    assert MAX_FACTS_ARCHIVE_INFLATED_BYTES == 256 * MIB


def test_the_bound_counts_every_inflated_byte_of_every_member() -> None:
    archive = _zip({"facts.json": FACTS.encode(), "notes.txt": b"x" * 10})
    total = len(FACTS) + 10
    assert facts_member(archive, max_inflated=total) == ("facts.json", FACTS)
    with pytest.raises(FactsArchiveError, match=f"more than {total - 1:,} bytes"):
        facts_member(archive, max_inflated=total - 1)


def test_the_member_count_is_bounded() -> None:
    at_bound = repeated_member_zip(b"-", MAX_FACTS_ARCHIVE_MEMBERS - 1,
                                   extra={"facts.json": FACTS.encode()})
    assert listed_members(at_bound) == MAX_FACTS_ARCHIVE_MEMBERS == 1_000
    assert facts_member(at_bound) == ("facts.json", FACTS)
    over = repeated_member_zip(b"-", MAX_FACTS_ARCHIVE_MEMBERS,
                               extra={"facts.json": FACTS.encode()})
    with pytest.raises(FactsArchiveError, match=r"lists 1,001 members, more than the 1,000"):
        facts_member(over)


def test_members_are_counted_before_the_directory_is_parsed() -> None:
    """An archive listing too many members is refused by its count even where its members'
    data is gone: nothing of it was parsed or inflated."""
    over = repeated_member_zip(b"-", MAX_FACTS_ARCHIVE_MEMBERS + 1)
    directory = over.index(b"PK\x01\x02")
    gutted = b"\0" * directory + over[directory:]  # every local header and its data zeroed
    with pytest.raises(FactsArchiveError, match=r"lists 1,001 members"):
        facts_member(gutted)
    with pytest.raises(FactsArchiveError, match="not a readable zip archive"):
        facts_member(gutted, max_members=2_000)


@pytest.mark.parametrize("damage", ["deflate", "method", "truncated", "not a zip"])
def test_a_damaged_archive_is_a_clear_error(damage: str) -> None:
    archive = bytearray(_zip({"facts.json": FACTS.encode() * 50}))
    data_at = 30 + len("facts.json")
    if damage == "deflate":
        archive[data_at:data_at + 16] = b"\xff" * 16
    elif damage == "method":  # LZMA (14), in the local header and the central directory
        central = archive.index(b"PK\x01\x02")
        archive[8:10] = archive[central + 10:central + 12] = b"\x0e\x00"
    elif damage == "truncated":
        archive = archive[: len(archive) // 2] + archive[-22:]
    else:
        archive = bytearray(FACTS.encode())
    with pytest.raises(FactsArchiveError) as raised:
        facts_member(bytes(archive))
    assert str(raised.value).startswith(("is not", "member 'facts.json' is compressed with "
                                                   "method 14"))
