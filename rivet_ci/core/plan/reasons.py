"""The reason kinds a recommendation can carry, each defined once.

A reason is rivet's: a stable `kind` token and rivet's English message. Beside the message a
reason carries the values the message was written from (`Reason.values`: the row estimate, the
chunk windows, ...), so the diff and the comment compare numbers, never the English. Each value
has a label and a unit for people (`ValueLabel`), defined here with its kind. The values are not
part of rivet's artifact nor of `plan.json` (both keep rivet's texts): a plan read back from JSON
gets them again from the inputs it records (`core/formats/document.py`).
"""

from __future__ import annotations

from typing import NamedTuple


class ValueLabel(NamedTuple):
    """How people read one value of a reason (`chunk windows 48 → 192`, `~8,000,000`)."""

    name: str  # the value's name in the message template (`{windows}`)
    label: str  # what the comment calls it
    unit: str = ""  # written after the number (`min`)
    prefix: str = ""  # written before it (`~` for an estimate)


class ReasonKind(NamedTuple):
    token: str  # rivet's `kind`
    values: tuple[ValueLabel, ...] = ()


_ROWS = (ValueLabel("rows", "row count", prefix="~"),)
LOW_CONFIDENCE = ReasonKind("low_confidence_metadata")
SMALL_TABLE = ReasonKind("small_table", _ROWS)
LARGE_TABLE = ReasonKind("large_table", _ROWS)
HUGE_TABLE = ReasonKind("huge_table", _ROWS)
STRONG_CURSOR = ReasonKind("strong_cursor")
WEAK_CURSOR = ReasonKind("weak_cursor")
CHUNKING_HEAVY = ReasonKind("chunking_heavy", (ValueLabel("windows", "chunk windows"),))
NO_TIME_CURSOR = ReasonKind("no_time_cursor")
SPARSE_RANGE = ReasonKind("sparse_range_risk")
RECONCILE = ReasonKind("reconcile_required")
FRESHNESS_RECENT = ReasonKind("freshness_hint_recent")
RECENT_FAILURE = ReasonKind("recent_failure_history")
HIGH_RETRY = ReasonKind("high_retry_rate_history",
                        (ValueLabel("rate", "retries/run"), ValueLabel("runs", "runs")))
SLOW_HISTORY = ReasonKind("slow_history", (ValueLabel("minutes", "average duration", "min"),))
SHARED_SOURCE = ReasonKind("shared_source_heavy_conflict")

REASON_KINDS: dict[str, ReasonKind] = {kind.token: kind for kind in (
    LOW_CONFIDENCE, SMALL_TABLE, LARGE_TABLE, HUGE_TABLE, STRONG_CURSOR, WEAK_CURSOR,
    CHUNKING_HEAVY, NO_TIME_CURSOR, SPARSE_RANGE, RECONCILE, FRESHNESS_RECENT, RECENT_FAILURE,
    HIGH_RETRY, SLOW_HISTORY, SHARED_SOURCE)}
ISOLATION_KIND = SHARED_SOURCE.token  # the reason campaign isolation adds
LOW_CONFIDENCE_KIND = LOW_CONFIDENCE.token
