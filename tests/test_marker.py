"""The hidden comment marker: format, parsing, validation and timestamp-blind comparison."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rivet_ci.core.comment.marker import (
    Marker,
    attach_marker,
    format_timestamp,
    make_marker,
    parse_marker,
    same_apart_from_timestamp,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
AT = "2026-11-29T12:00:00Z"


def test_marker_format_is_stable() -> None:
    assert make_marker("default", SHA, AT) == (
        f"<!-- rivet-ci:comment id=default head={SHA} at=2026-11-29T12:00:00Z -->"
    )


def test_parse_round_trips() -> None:
    body = make_marker("nightly.pg-1", SHA, AT) + "\n## Plan\n"
    assert parse_marker(body) == Marker("nightly.pg-1", SHA, AT)


def test_uppercase_sha_is_normalised() -> None:
    assert parse_marker(make_marker("default", SHA.upper(), AT)) == Marker("default", SHA, AT)


@pytest.mark.parametrize("gate_id", ["", "has space", "a/b", "x-->", "é", "a" * 65])
def test_bad_gate_ids_are_rejected(gate_id: str) -> None:
    with pytest.raises(ValueError, match="gate id"):
        make_marker(gate_id, SHA, AT)


@pytest.mark.parametrize("sha", ["", "abc", "g" * 40, SHA + " x"])
def test_bad_head_shas_are_rejected(sha: str) -> None:
    with pytest.raises(ValueError, match="head sha"):
        make_marker("default", sha, AT)


@pytest.mark.parametrize("timestamp", ["", "2026-11-29", "2026-11-29T12:00:00+01:00", "now -->"])
def test_bad_timestamps_are_rejected(timestamp: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        make_marker("default", SHA, timestamp)


@pytest.mark.parametrize(
    "body",
    [
        "",
        "just a comment",
        "<!-- some-other-bot:comment id=default -->",
        f"<!-- rivet-ci:comment id=default head={SHA} -->",  # no timestamp
        f"<!-- rivet-ci:comment id=bad/id head={SHA} at={AT} -->",
    ],
)
def test_non_markers_parse_to_none(body: str) -> None:
    assert parse_marker(body) is None


def test_a_damaged_marker_is_skipped_for_a_good_one() -> None:
    body = f"<!-- rivet-ci:comment id=x head=zzz at={AT} -->\n{make_marker('ok', SHA, AT)}"
    assert parse_marker(body) == Marker("ok", SHA, AT)


def test_unknown_fields_are_tolerated_for_forward_compatibility() -> None:
    body = f"<!--  rivet-ci:comment id=default head={SHA} at={AT} v=2  -->"
    assert parse_marker(body) == Marker("default", SHA, AT)


def test_attach_marker_replaces_an_existing_marker() -> None:
    old = make_marker("default", "1" * 40, AT)
    new = make_marker("default", SHA, "2026-11-30T00:00:00Z")
    marked = attach_marker(f"{old}\n## Plan\n", new)
    assert marked == f"{new}\n## Plan\n"
    assert attach_marker(marked, new) == marked


def test_only_the_timestamp_is_ignored_when_comparing() -> None:
    body = attach_marker("## Plan\nok\n", make_marker("default", SHA, AT))
    later = attach_marker("## Plan\nok\n", make_marker("default", SHA, "2027-01-01T00:00:00Z"))
    other_head = attach_marker("## Plan\nok\n", make_marker("default", "f" * 40, AT))
    assert same_apart_from_timestamp(body, later)
    assert same_apart_from_timestamp(body, later.replace("\n", "\r\n"))
    assert not same_apart_from_timestamp(body, other_head)
    assert not same_apart_from_timestamp(body, later + "more")


def test_format_timestamp_converts_to_utc() -> None:
    plus_one = timezone(timedelta(hours=1))
    assert format_timestamp(datetime(2026, 11, 29, 13, 0, 0, 999, tzinfo=plus_one)) == AT
    with pytest.raises(ValueError, match="timezone-aware"):
        format_timestamp(datetime(2026, 11, 29))


@given(
    gate_id=st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True),
    sha=st.from_regex(r"[0-9a-f]{40}", fullmatch=True),
    moment=st.datetimes(timezones=st.just(UTC)),
    text=st.text(),
)
def test_any_valid_marker_round_trips_through_any_body(
    gate_id: str, sha: str, moment: datetime, text: str
) -> None:
    marker = make_marker(gate_id, sha, format_timestamp(moment))
    assert parse_marker(attach_marker(text, marker)) == parse_marker(marker)
    assert parse_marker(marker) == Marker(gate_id, sha, format_timestamp(moment))
