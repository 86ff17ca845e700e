"""rivet's resolved run strategy and tuning as JSON (rivet-plan.md §10.3): the objects
`rivet_ci.core.plan.strategy` resolves, written into `resolved_plan.strategy` and
`resolved_plan.tuning`.

Part of the plan document's one definition: `rivet_ci.core.formats.plan_format` imports them
into `ResolvedPlanJSON`, and its reader validates them (every object refuses keys it does not
define). A module of its own, so that a plan run never creates them: `strategy` and the
writer import these names for type checking only (9 TypedDicts, ~1.4 ms of every run), as the
writer does `plan_format`'s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import ConfigDict, Discriminator, Tag, with_config
from typing_extensions import TypedDict

from rivet_ci.core.config.models import (
    IncrementalCursorMode,
    OnBatchMemoryExceeded,
    TimeColumnType,
    TuningProfile,
)

# As every object of the plan document (`plan_format`): keys it does not define are refused.
_CLOSED = ConfigDict(extra="forbid")


# `resolved_plan.tuning` (rivet-config.md §2.16), keys in rivet's order.


@with_config(_CLOSED)
class ResolvedTuningJSON(TypedDict):
    batch_size: int
    batch_size_memory_mb: int | None
    throttle_ms: int
    statement_timeout_s: int
    max_retries: int
    retry_backoff_ms: int
    lock_timeout_s: int
    memory_threshold_mb: int
    max_batch_memory_mb: int | None
    on_batch_memory_exceeded: OnBatchMemoryExceeded
    adaptive: bool
    min_parallel: int | None
    max_value_mb: int
    configured_profile: TuningProfile


# `resolved_plan.strategy`, keys in rivet's order.


@with_config(_CLOSED)
class IncrementalJSON(TypedDict):
    primary_column: str | None
    fallback_column: str | None
    mode: IncrementalCursorMode


@with_config(_CLOSED)
class TimeWindowJSON(TypedDict):
    column: str | None
    column_type: TimeColumnType
    days_window: int | None


@with_config(_CLOSED)
class ChunkedJSON(TypedDict):
    column: str | None
    chunk_size: int | None
    chunk_count: int | None
    parallel: int
    dense: bool  # always false when rivet-ci writes it (V-E32); an older document may say true
    by_days: int | None
    checkpoint: bool
    max_attempts: int


@with_config(_CLOSED)
class KeysetJSON(TypedDict):
    key_column: str | None
    chunk_size: int | None
    checkpoint: bool
    incremental: bool
    parallel: int


@with_config(_CLOSED)
class IncrementalTag(TypedDict):
    Incremental: IncrementalJSON


@with_config(_CLOSED)
class TimeWindowTag(TypedDict):
    TimeWindow: TimeWindowJSON


@with_config(_CLOSED)
class ChunkedTag(TypedDict):
    Chunked: ChunkedJSON


@with_config(_CLOSED)
class KeysetTag(TypedDict):
    Keyset: KeysetJSON


def _strategy_tag(value: Any) -> str | None:
    if isinstance(value, str):
        return "Snapshot"
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value)))
    return None


# serde's external tagging: the string "Snapshot", or a one-key object naming the strategy.
RivetStrategyJSON: TypeAlias = Annotated[
    Annotated[Literal["Snapshot"], Tag("Snapshot")]
    | Annotated[IncrementalTag, Tag("Incremental")]
    | Annotated[ChunkedTag, Tag("Chunked")]
    | Annotated[KeysetTag, Tag("Keyset")]
    | Annotated[TimeWindowTag, Tag("TimeWindow")],
    Discriminator(_strategy_tag, custom_error_type="strategy",
                  custom_error_message="expected \"Snapshot\" or an object with one key: "
                                       "Incremental, Chunked, Keyset or TimeWindow")]
