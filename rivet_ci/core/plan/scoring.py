"""The per-export score (spec §4): an ordered table of small, documented rules.

Each rule reads the export's `Signals` (and history summary) and may contribute a score delta and
a structured reason. The total starts at 50 and is clamped to 0..100; classes and the wave follow
from the score. `docs/scoring-rules.md` describes the same table for humans.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from rivet_ci.core.common.fast_model import maker
from rivet_ci.core.facts.history import HistorySummary
from rivet_ci.core.plan.recommendation import (
    SHARED_SOURCE_MESSAGE,
    CostClass,
    ExportRecommendation,
    PriorityClass,
    Reason,
    RiskClass,
)
from rivet_ci.core.plan.signals import Signals

BASE_SCORE = 50
HISTORY_PENALTY_CAP = 17


class ScoreRule(NamedTuple):
    """One row of the score table: the code applies it, `docs/scoring-rules.md` prints it."""

    step: int
    rule: str
    condition: str
    delta: int
    kind: str | None = None
    message: str | None = None  # a format string; `{rows}`, `{windows}`, ... are filled in

    def applied(self, **values: object) -> Contribution:
        """What this row adds, its message (if any) filled in with `values`."""
        if self.kind is None or self.message is None:
            return self.delta, None
        return self.delta, _REASON.make_full({"kind": self.kind,
                                              "message": self.message.format_map(values)})


# What one rule adds: a delta and, when it explains something, a reason.
Contribution = tuple[int, Reason | None]
_REASON = maker(Reason)

NO_ROWS = ScoreRule(1, "cost by rows", "no row estimate", -3, "low_confidence_metadata",
                    "No row estimate — assume medium cost until preflight succeeds.")
SMALL_TABLE = ScoreRule(1, "cost by rows", "rows < 100,000", 12, "small_table",
                        "Smaller estimated row count (~{rows}) — lower extraction cost.")
LARGE_TABLE = ScoreRule(1, "cost by rows", "rows < 10,000,000", 0, "large_table",
                        "Medium/large estimated row count (~{rows}).")
HUGE_TABLE = ScoreRule(1, "cost by rows", "otherwise", -15, "huge_table",
                       "Very large estimated row count (~{rows}) — defer and isolate if possible.")
RISK_MEDIUM = ScoreRule(2, "risk", "risk class is `medium`", -4)
SNAPSHOT = ScoreRule(3, "strategy: snapshot", "resolved strategy snapshot", 5)
STRONG_CURSOR = ScoreRule(3, "strategy: incremental", "cursor quality `strong_monotonic`", 18,
                          "strong_cursor",
                          "Incremental export with indexed cursor — reliable continuation.")
WEAK_CURSOR = ScoreRule(3, "strategy: incremental", "`weak_time` or `weak_multi_candidate`", -8,
                        "weak_cursor", "Weaker cursor signal — treat ordering as advisory.")
FALLBACK_CURSOR = ScoreRule(3, "strategy: incremental", "`fallback_only` (never derived)", -14,
                            "weak_cursor",
                            "Fallback cursor quality — higher reconcile and ordering risk.")
NO_CURSOR = ScoreRule(3, "strategy: incremental", "`none`", -12, "weak_cursor",
                      "Cursor quality unknown or weak — prefer validation before large runs.")
CHUNKED_HEAVY = ScoreRule(3, "strategy: chunked (and keyset)",
                          "windows (unknown = 0) > 1 or rows (unknown = 0) > 1,000,000", -10,
                          "chunking_heavy",
                          "Chunked extraction ({windows} chunk windows) — higher source load "
                          "and runtime.")
CHUNKED_LIGHT = ScoreRule(3, "strategy: chunked (and keyset)", "otherwise", 0, "chunking_heavy",
                          "Chunked extraction — monitor source during long runs.")
TIME_WINDOW = ScoreRule(3, "strategy: time_window", "always", 0, "no_time_cursor",
                        "Time-window strategy — bounded scan; ordering balances freshness vs "
                        "cost.")
SPARSE = ScoreRule(4, "sparse range", "sparse-range signal", -18, "sparse_range_risk",
                   "Sparse key range detected — many empty chunks possible; defer relative to "
                   "dense exports.")
RECONCILE = ScoreRule(5, "reconcile", "`reconcile_required: true`", -12, "reconcile_required",
                      "Reconcile enabled — extra source read; schedule after cheaper exports "
                      "unless critical.")
FRESHNESS = ScoreRule(6, "freshness", "freshness `recent`", 6, "freshness_hint_recent",
                      "Narrow time window — likely fresher subset; good candidate for an early "
                      "wave.")
UNSAFE = ScoreRule(7, "verdict", "verdict contains \"unsafe\"", -25)
DEGRADED = ScoreRule(7, "verdict", "else contains \"degraded\"", -12)
EFFICIENT = ScoreRule(7, "verdict", "else contains \"efficient\"", 8)
RECENT_FAILURE = ScoreRule(8, "history", "most recent run failed", -8, "recent_failure_history",
                           "Most recent run ended in failure — investigate before scheduling a "
                           "large retry.")
HIGH_RETRY = ScoreRule(8, "history", "≥ 3 runs and more than 0.3 retries per run", -5,
                       "high_retry_rate_history",
                       "Recent runs retried frequently ({rate:.1f} retries/run over {runs} "
                       "runs).")
SLOW_RUNS = ScoreRule(8, "history", "≥ 3 runs and mean duration ≥ 300,000 ms", -4,
                      "slow_history",
                      "Historical average duration is {minutes} min — expect similar runtime.")
ISOLATION = ScoreRule(9, "campaign", "heavy member of a source group with ≥ 2 heavy members", 0,
                      "shared_source_heavy_conflict", SHARED_SOURCE_MESSAGE)
# Every row, in the order the rules run (the table of docs/scoring-rules.md).
SCORE_TABLE: tuple[ScoreRule, ...] = (
    NO_ROWS, SMALL_TABLE, LARGE_TABLE, HUGE_TABLE, RISK_MEDIUM, SNAPSHOT, STRONG_CURSOR,
    WEAK_CURSOR, FALLBACK_CURSOR, NO_CURSOR, CHUNKED_HEAVY, CHUNKED_LIGHT, TIME_WINDOW, SPARSE,
    RECONCILE, FRESHNESS, UNSAFE, DEGRADED, EFFICIENT, RECENT_FAILURE, HIGH_RETRY, SLOW_RUNS,
    ISOLATION,
)


# The rows whose message has no placeholder add the same on every export: each contribution (and
# its frozen Reason) is built once.
_NO_ROWS, _RISK_MEDIUM, _SNAPSHOT, _CHUNKED_LIGHT, _TIME_WINDOW = (
    rule.applied() for rule in (NO_ROWS, RISK_MEDIUM, SNAPSHOT, CHUNKED_LIGHT, TIME_WINDOW))
_SPARSE, _RECONCILE, _FRESHNESS, _UNSAFE, _DEGRADED, _EFFICIENT, _RECENT_FAILURE = (
    rule.applied() for rule in (SPARSE, RECONCILE, FRESHNESS, UNSAFE, DEGRADED, EFFICIENT,
                                RECENT_FAILURE))


def _one_field(rule: ScoreRule, field: str) -> Callable[[object], Contribution]:
    """`rule.applied(**{field: value})` for a message whose one replacement field is a plain
    `{field}`: the message is split around it once, here, and each value joined in (the same
    text: both format the value with an empty spec). `str.format` parses the message on every
    call, ~5,000 instructions a reason against ~1,700 for the join, and `applied`'s keyword call
    costs ~2,500 more; nearly every export gets a row-count reason, many a chunk-window one."""
    kind, message = rule.kind, rule.message
    parts = message.split("{" + field + "}") if kind is not None and message is not None else []
    if len(parts) != 2 or any("{" in part or "}" in part for part in parts):
        raise ValueError(f"{rule.rule}: the message must have one `{{{field}}}` and no other "
                         f"braces")
    before, after = parts

    def applied(value: object) -> Contribution:
        return rule.delta, _REASON.make_full({"kind": kind, "message": f"{before}{value}{after}"})

    return applied


_SMALL_TABLE_ROWS, _LARGE_TABLE_ROWS, _HUGE_TABLE_ROWS = (
    _one_field(rule, "rows") for rule in (SMALL_TABLE, LARGE_TABLE, HUGE_TABLE))
_CHUNKED_HEAVY_WINDOWS = _one_field(CHUNKED_HEAVY, "windows")
_SLOW_RUNS_MINUTES = _one_field(SLOW_RUNS, "minutes")
_CURSOR: dict[str, Contribution] = {
    "strong_monotonic": STRONG_CURSOR.applied(), "weak_time": WEAK_CURSOR.applied(),
    "weak_multi_candidate": WEAK_CURSOR.applied(), "fallback_only": FALLBACK_CURSOR.applied(),
    "none": NO_CURSOR.applied()}


def cost_class(signals: Signals) -> CostClass:
    return _cost_class(signals.row_estimate, signals.chunk_count)


def _cost_class(rows: int | None, windows: int | None) -> CostClass:
    if rows is None or (rows >= 100_000 and rows < 10_000_000):
        return "medium"
    if rows < 100_000:
        return "low"
    return "very_high" if (windows or 0) >= 8 else "high"


def rows_rule(rows: int | None) -> Contribution:
    """Step 1 on the row estimate."""
    if rows is None:
        return _NO_ROWS
    if rows < 100_000:
        return _SMALL_TABLE_ROWS(rows)
    if rows < 10_000_000:
        return _LARGE_TABLE_ROWS(rows)
    return _HUGE_TABLE_ROWS(rows)


def risk_class(signals: Signals) -> RiskClass:
    return _risk_class(signals.verdict.lower(), signals.sparse_range_risk, signals.warnings)


def _risk_class(verdict: str, sparse: bool, warnings: tuple[str, ...]) -> RiskClass:
    """`risk_class` with the verdict already lower-cased."""
    if sparse or "unsafe" in verdict:
        return "high"
    if "degraded" in verdict or len(warnings) > 3:
        return "medium"
    return "low"


def strategy_rule(signals: Signals, rows: int | None, windows: int | None) -> Contribution:
    """Step 3 (`rows`, `windows`: the signals' row estimate and chunk count)."""
    strategy = signals.strategy
    if strategy == "snapshot":
        return _SNAPSHOT
    if strategy == "incremental":
        return _CURSOR[signals.cursor_quality]
    if strategy == "chunked":
        # rivet prints 0 when the window count is unknown (keyset, MongoDB page_size).
        count = windows or 0
        if count > 1 or (rows or 0) > 1_000_000:
            return _CHUNKED_HEAVY_WINDOWS(count)
        return _CHUNKED_LIGHT
    return _TIME_WINDOW


def history_contributions(history: HistorySummary | None) -> list[Contribution]:
    """Bounded history penalties (at most −17 in all); nothing without a finished run."""
    if history is None or history.runs == 0:
        return []
    out: list[Contribution] = []
    if history.last_failed:
        out.append(_RECENT_FAILURE)
    if history.runs >= 3 and history.retries_per_run > 0.3:
        out.append(HIGH_RETRY.applied(rate=history.retries_per_run, runs=history.runs))
    if (history.runs >= 3 and history.mean_duration_ms is not None
            and history.mean_duration_ms >= 300_000):
        # rivet: integer minutes of the integer mean, truncated
        out.append(_SLOW_RUNS_MINUTES(history.mean_duration_ms // 60_000))
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
    """Score one export. Pure and deterministic: same inputs, same recommendation.

    The rules run in the table's order, which is the order of the reasons (rivet's)."""
    rows, windows = signals.row_estimate, signals.chunk_count
    verdict = signals.verdict.lower()
    sparse = signals.sparse_range_risk
    risk = _risk_class(verdict, sparse, signals.warnings)
    applied = [rows_rule(rows)]
    if risk == "medium":
        applied.append(_RISK_MEDIUM)
    applied.append(strategy_rule(signals, rows, windows))
    if sparse:
        applied.append(_SPARSE)
    if signals.reconcile_required:
        applied.append(_RECONCILE)
    if signals.freshness == "recent":
        applied.append(_FRESHNESS)
    if "unsafe" in verdict:
        applied.append(_UNSAFE)
    elif "degraded" in verdict:
        applied.append(_DEGRADED)
    elif "efficient" in verdict:
        applied.append(_EFFICIENT)
    score = BASE_SCORE
    reasons: list[Reason] = []
    for delta, reason in applied:
        score += delta
        if reason is not None:
            reasons.append(reason)
    if history is not None and history.runs:  # no finished run: no history rule applies
        history_total = 0
        for delta, reason in history_contributions(history):
            history_total += delta
            if reason is not None:
                reasons.append(reason)
        score += max(history_total, -HISTORY_PENALTY_CAP)
    score = min(max(score, 0), 100)
    priority, wave = _CLASS_AND_WAVE[score]
    return _RECOMMENDATION.make_full({
        "export_name": export_name, "source_group": source_group, "priority_score": score,
        "priority_class": priority, "cost_class": _cost_class(rows, windows),
        "risk_class": risk, "recommended_wave": wave,
        "isolate_on_source": False, "reasons": tuple(reasons),
    })


_RECOMMENDATION = maker(ExportRecommendation)
# Each score's priority class and wave, computed once (the score is clamped to 0..100).
_CLASS_AND_WAVE = tuple((priority_class(score), recommended_wave(score)) for score in range(101))
