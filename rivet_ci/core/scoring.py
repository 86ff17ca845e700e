"""The per-export score (spec §4): an ordered table of small, documented rules.

Each rule reads the export's `Signals` (and history summary) and may contribute a score delta and
a structured reason. The total starts at 50 and is clamped to 0..100; classes and the wave follow
from the score. `docs/scoring-rules.md` describes the same table for humans.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from rivet_ci.core.history import HistorySummary
from rivet_ci.core.recommendation import (
    CostClass,
    ExportRecommendation,
    PriorityClass,
    Reason,
    RiskClass,
)
from rivet_ci.core.signals import Signals

BASE_SCORE = 50
HISTORY_PENALTY_CAP = 17


class Contribution(NamedTuple):
    """What one rule adds: a delta and, when it explains something, a reason."""

    delta: int
    reason: Reason | None = None


Rule = Callable[[Signals], Contribution | None]


def cost_class(signals: Signals) -> CostClass:
    rows = signals.row_estimate
    if rows is None or (rows >= 100_000 and rows < 10_000_000):
        return "medium"
    if rows < 100_000:
        return "low"
    return "very_high" if (signals.chunk_count or 0) >= 8 else "high"


def rows_rule(signals: Signals) -> Contribution:
    rows = signals.row_estimate
    if rows is None:
        return Contribution(-3, Reason(kind="low_confidence_metadata", message=(
            "No row estimate — assume medium cost until preflight succeeds.")))
    if rows < 100_000:
        return Contribution(12, Reason(kind="small_table", message=(
            f"Smaller estimated row count (~{rows}) — lower extraction cost.")))
    if rows < 10_000_000:
        return Contribution(0, Reason(kind="large_table", message=(
            f"Medium/large estimated row count (~{rows}).")))
    return Contribution(-15, Reason(kind="huge_table", message=(
        f"Very large estimated row count (~{rows}) — defer and isolate if possible.")))


def risk_class(signals: Signals) -> RiskClass:
    verdict = signals.verdict.lower()
    if signals.sparse_range_risk or "unsafe" in verdict:
        return "high"
    if "degraded" in verdict or len(signals.warnings) > 3:
        return "medium"
    return "low"


def risk_rule(signals: Signals) -> Contribution | None:
    return Contribution(-4) if risk_class(signals) == "medium" else None


_WEAKER_CURSOR = "Weaker cursor signal — treat ordering as advisory."
_WEAK_CURSOR = {
    "weak_time": (-8, _WEAKER_CURSOR),
    "weak_multi_candidate": (-8, _WEAKER_CURSOR),
    "fallback_only": (-14, "Fallback cursor quality — higher reconcile and ordering risk."),
    "none": (-12, "Cursor quality unknown or weak — prefer validation before large runs."),
}
CHUNKED_HEAVY = "Chunked extraction ({windows} chunk windows) — higher source load and runtime."
CHUNKED_LIGHT = "Chunked extraction — monitor source during long runs."
TIME_WINDOW = "Time-window strategy — bounded scan; ordering balances freshness vs cost."


def strategy_rule(signals: Signals) -> Contribution | None:
    if signals.strategy == "snapshot":
        return Contribution(5)
    if signals.strategy == "incremental":
        if signals.cursor_quality == "strong_monotonic":
            return Contribution(18, Reason(kind="strong_cursor", message=(
                "Incremental export with indexed cursor — reliable continuation.")))
        delta, message = _WEAK_CURSOR[signals.cursor_quality]
        return Contribution(delta, Reason(kind="weak_cursor", message=message))
    if signals.strategy == "chunked":
        # rivet prints 0 when the window count is unknown (keyset, MongoDB page_size).
        count = signals.chunk_count or 0
        if count > 1 or (signals.row_estimate or 0) > 1_000_000:
            return Contribution(-10, Reason(kind="chunking_heavy",
                                            message=CHUNKED_HEAVY.format(windows=count)))
        return Contribution(0, Reason(kind="chunking_heavy", message=CHUNKED_LIGHT))
    return Contribution(0, Reason(kind="no_time_cursor", message=TIME_WINDOW))


def sparse_rule(signals: Signals) -> Contribution | None:
    if not signals.sparse_range_risk:
        return None
    return Contribution(-18, Reason(kind="sparse_range_risk", message=(
        "Sparse key range detected — many empty chunks possible; defer relative to dense "
        "exports.")))


def reconcile_rule(signals: Signals) -> Contribution | None:
    if not signals.reconcile_required:
        return None
    return Contribution(-12, Reason(kind="reconcile_required", message=(
        "Reconcile enabled — extra source read; schedule after cheaper exports unless "
        "critical.")))


def freshness_rule(signals: Signals) -> Contribution | None:
    if signals.freshness != "recent":
        return None
    return Contribution(6, Reason(kind="freshness_hint_recent", message=(
        "Narrow time window — likely fresher subset; good candidate for an early wave.")))


def verdict_rule(signals: Signals) -> Contribution | None:
    verdict = signals.verdict.lower()
    if "unsafe" in verdict:
        return Contribution(-25)
    if "degraded" in verdict:
        return Contribution(-12)
    if "efficient" in verdict:
        return Contribution(8)
    return None


# Order matters: reasons appear in this order (rivet's order).
SIGNAL_RULES: tuple[Rule, ...] = (
    rows_rule, risk_rule, strategy_rule, sparse_rule, reconcile_rule, freshness_rule,
    verdict_rule,
)


def history_contributions(history: HistorySummary | None) -> list[Contribution]:
    """Bounded history penalties (at most −17 in all); nothing without a finished run."""
    if history is None or history.runs == 0:
        return []
    out: list[Contribution] = []
    if history.last_failed:
        out.append(Contribution(-8, Reason(kind="recent_failure_history", message=(
            "Most recent run ended in failure — investigate before scheduling a large retry."))))
    if history.runs >= 3 and history.retries_per_run > 0.3:
        out.append(Contribution(-5, Reason(kind="high_retry_rate_history", message=(
            f"Recent runs retried frequently ({history.retries_per_run:.1f} retries/run over "
            f"{history.runs} runs)."))))
    if (history.runs >= 3 and history.mean_duration_ms is not None
            and history.mean_duration_ms >= 300_000):
        minutes = history.mean_duration_ms // 60_000  # rivet: integer minutes, truncated
        out.append(Contribution(-4, Reason(kind="slow_history", message=(
            f"Historical average duration is {minutes} min — expect similar runtime."))))
    return out


def priority_class(score: int) -> PriorityClass:
    if score >= 70:
        return "high"
    return "medium" if score >= 40 else "low"


def recommended_wave(score: int) -> int:
    if score >= 75:
        return 1
    if score >= 55:
        return 2
    return 3 if score >= 35 else 4


def recommend_export(
    export_name: str, signals: Signals, history: HistorySummary | None = None,
    source_group: str | None = None,
) -> ExportRecommendation:
    """Score one export. Pure and deterministic: same inputs, same recommendation."""
    score = BASE_SCORE
    reasons: list[Reason] = []
    for rule in SIGNAL_RULES:
        contribution = rule(signals)
        if contribution is not None:
            score += contribution.delta
            if contribution.reason is not None:
                reasons.append(contribution.reason)
    history_total = 0
    for contribution in history_contributions(history):
        history_total += contribution.delta
        if contribution.reason is not None:
            reasons.append(contribution.reason)
    score += max(history_total, -HISTORY_PENALTY_CAP)
    score = min(max(score, 0), 100)
    return ExportRecommendation(
        export_name=export_name, source_group=source_group, priority_score=score,
        priority_class=priority_class(score), cost_class=cost_class(signals),
        risk_class=risk_class(signals), recommended_wave=recommended_wave(score),
        reasons=tuple(reasons),
    )
