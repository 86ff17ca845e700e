"""The hidden HTML marker that lets rivet-ci find its own sticky pull-request comment.

A marker looks like::

    <!-- rivet-ci:comment id=default head=0123abcd... at=2026-11-29T12:00:00Z -->

``id`` is the gate id (several gates may share one pull request, each with its own
comment), ``head`` the head commit the comment was rendered for (so an older run never
overwrites a newer result) and ``at`` when it was rendered (UTC). The marker sits on the
first line of the comment body; GitHub renders HTML comments invisibly.

This module is pure: it formats, parses and compares strings, nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from rivet_ci.core.common.patterns import COMMIT_SHA_PREFIX, GATE_ID, UTC_TIMESTAMP

__all__ = [
    "Marker",
    "attach_marker",
    "format_timestamp",
    "make_marker",
    "parse_leading_marker",
    "parse_marker",
    "same_apart_from_timestamp",
]

# Fields are parsed as generic key=value pairs so a later version may add fields without
# making today's comments unrecognisable (and vice versa).
# Linear on any body (every comment on a pull request is parsed, whoever wrote it): the fields
# are bounded and greedy, so a long run of spaces cannot make the match backtrack over it
# (the lazy `[^>]*?\s*-->` of before was quadratic in it: 23 s for a 2 MB comment).
_MARKER = re.compile(r"<!--\s*rivet-ci:comment\s(?P<fields>[^>]{0,512})-->")
_FIELD = re.compile(r"(?P<key>[a-z_]+)=(?P<value>\S+)")


@dataclass(frozen=True)
class Marker:
    """What a marker records; constructing one validates every field."""

    gate_id: str
    head_sha: str
    timestamp: str

    def __post_init__(self) -> None:
        if not GATE_ID.fullmatch(self.gate_id):
            raise ValueError(
                f"gate id {self.gate_id!r} must be 1-64 characters of letters, digits, "
                "'_', '.' or '-'"
            )
        if not COMMIT_SHA_PREFIX.fullmatch(self.head_sha):
            raise ValueError(
                f"head sha {self.head_sha!r} must be 7-64 lowercase hexadecimal digits"
            )
        if not UTC_TIMESTAMP.fullmatch(self.timestamp):
            raise ValueError(
                f"timestamp {self.timestamp!r} must look like 2026-11-29T12:00:00Z (UTC)"
            )

    def render(self) -> str:
        return (
            f"<!-- rivet-ci:comment id={self.gate_id} head={self.head_sha} at={self.timestamp} -->"
        )


def format_timestamp(moment: datetime) -> str:
    """Format an aware datetime the way markers store it (UTC, second precision)."""
    if moment.tzinfo is None:
        raise ValueError("timestamp must be timezone-aware")
    # isoformat, unlike strftime("%Y"), zero-pads years before 1000 on every platform.
    return moment.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def make_marker(gate_id: str, head_sha: str, timestamp: str) -> str:
    """Render the marker; raises ``ValueError`` naming the field that is malformed."""
    # Git prints lowercase hex; accepting either case here keeps comparisons exact later.
    return Marker(gate_id, head_sha.lower(), timestamp).render()


def _marker_of(match: re.Match[str]) -> Marker | None:
    fields = {m.group("key"): m.group("value") for m in _FIELD.finditer(match.group("fields"))}
    try:
        return Marker(fields["id"], fields["head"], fields["at"])
    except (KeyError, ValueError):
        return None  # a damaged or hand-edited marker is not ours to claim


def parse_marker(body: str) -> Marker | None:
    """Return the first well-formed rivet-ci marker in ``body``, or ``None``."""
    for match in _MARKER.finditer(body):
        marker = _marker_of(match)
        if marker is not None:
            return marker
    return None


def parse_leading_marker(body: str) -> Marker | None:
    """The marker ``body`` starts with (where `attach_marker` puts it), or ``None``.

    Only this one identifies a comment as rivet-ci's: a marker quoted anywhere else — later on
    the first line (a bot's "> <!-- rivet-ci:comment ... -->"), further down, or spread over
    several lines — never does.
    """
    match = _MARKER.match(body)
    if match is None or "\n" in match.group(0) or "\r" in match.group(0):
        return None
    return _marker_of(match)


def attach_marker(body: str, marker: str) -> str:
    """Put ``marker`` on the first line of ``body``, dropping any marker already in it.

    Dropping old markers makes this idempotent: a body saved to a file by one run and
    posted by another still carries exactly one marker.
    """
    cleaned = _MARKER.sub("", body).lstrip("\n")
    return f"{marker}\n{cleaned}"


def same_apart_from_timestamp(left: str, right: str) -> bool:
    """True when two bodies differ at most in their markers' ``at=`` field.

    Line endings are compared loosely: a comment edited in the browser comes back with CRLF.
    """
    return _without_timestamps(left) == _without_timestamps(right)


def _without_timestamps(body: str) -> str:
    def canonical(match: re.Match[str]) -> str:
        kept = [f.group(0) for f in _FIELD.finditer(match.group("fields")) if f["key"] != "at"]
        return f"<!-- rivet-ci:comment {' '.join(kept)} -->"

    return _MARKER.sub(canonical, body.replace("\r\n", "\n"))
