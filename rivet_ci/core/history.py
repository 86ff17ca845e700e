"""Run history from rivet's `export_metrics` rows, summarised for scoring (spec §5).

rivet writes `success`, `failed`, `skipped` and `running`; rivet-ci also accepts `completed` (as
success) and `error` (as failure), and leaves `running` rows out: a run in progress has no outcome.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from rivet_ci.core.fast_model import construct
from rivet_ci.core.limits import I64_MAX

HISTORY_SAMPLE = 20
FAILED = frozenset({"failed", "error"})
IN_PROGRESS = frozenset({"running"})


class RunRecord(BaseModel):
    """One row of `export_metrics` (the fields planning reads)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: str
    duration_ms: int | None = Field(default=None, ge=0, le=I64_MAX)
    retries: int | None = Field(default=None, ge=0, le=I64_MAX)
    run_at: str | None = None
    total_rows: int | None = None
    error_message: str | None = None


class HistorySummary(BaseModel):
    """What the scoring rules read from the newest runs of one export."""

    model_config = ConfigDict(frozen=True)

    runs: int
    last_failed: bool
    retries_per_run: float
    mean_duration_ms: int | None  # integer mean (rivet: Σ duration_ms div n)


def summarize_history(newest_first: Sequence[RunRecord]) -> HistorySummary | None:
    """Summarise up to the 20 newest finished runs; None when there is no finished run."""
    sample = [r for r in newest_first if r.status.lower() not in IN_PROGRESS][:HISTORY_SAMPLE]
    if not sample:
        return None
    durations = [r.duration_ms for r in sample if r.duration_ms is not None]
    return construct(HistorySummary, {
        "runs": len(sample),
        "last_failed": sample[0].status.lower() in FAILED,
        "retries_per_run": sum(r.retries or 0 for r in sample) / len(sample),
        "mean_duration_ms": sum(durations) // len(durations) if durations else None,
    })
