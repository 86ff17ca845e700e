"""Run history from rivet's `export_metrics` rows, summarised for scoring (spec §5).

rivet writes `success`, `failed`, `skipped` and `running`; rivet-ci also accepts `completed` (as
success) and `error` (as failure), and leaves `running` rows out: a run in progress has no outcome.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from rivet_ci.core.common.fast_model import maker
from rivet_ci.core.common.limits import I64_MAX

HISTORY_SAMPLE = 20
FAILED = frozenset({"failed", "error"})
IN_PROGRESS = frozenset({"running"})


class RunRecord(BaseModel):
    """One row of `export_metrics` (the fields planning reads)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    status: str
    duration_ms: int | None = Field(default=None, ge=0, le=I64_MAX)
    retries: int | None = Field(default=None, ge=0, le=I64_MAX)
    run_at: str | None = None
    total_rows: int | None = None
    error_message: str | None = None


class HistorySummary(BaseModel):
    """What the scoring rules read from the newest runs of one export."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    runs: int
    last_failed: bool
    retries_per_run: float
    mean_duration_ms: int | None  # integer mean (rivet: Σ duration_ms div n)


def summarize_history(newest_first: Sequence[RunRecord]) -> HistorySummary | None:
    """Summarise up to the 20 newest finished runs; None when there is no finished run."""
    runs = retries = timed = total_ms = 0
    last_failed = False
    for record in newest_first:
        status = record.status.lower()
        if status in IN_PROGRESS:
            continue
        if not runs:
            last_failed = status in FAILED
        runs += 1
        retries += record.retries or 0
        if record.duration_ms is not None:
            timed += 1
            total_ms += record.duration_ms
        if runs == HISTORY_SAMPLE:
            break
    if not runs:
        return None
    return _SUMMARY.make_full({
        "runs": runs, "last_failed": last_failed, "retries_per_run": retries / runs,
        "mean_duration_ms": total_ms // timed if timed else None,
    })


_SUMMARY = maker(HistorySummary)
