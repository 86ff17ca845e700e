"""The per-export score (spec §4): an ordered table of small, documented rules.

Each rule is one object (`ScoreRule`): when it applies, what it adds to the score, and the
reason it gives — its kind, rivet's message and the values the message is written from. The
total starts at 50 and is clamped to 0..100; the history rules together take at most −17;
classes and the wave follow from the score. `recommend_export` runs the table in order, which is
the order of the reasons (rivet's). `docs/scoring-rules.md` prints the same table for humans.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any, NamedTuple

from rivet_ci.core.common.compiled import compiled_function
from rivet_ci.core.common.fast_model import maker
from rivet_ci.core.facts.history import HistorySummary
from rivet_ci.core.plan import reasons as kinds
from rivet_ci.core.plan.reasons import ReasonKind
from rivet_ci.core.plan.recommendation import (
    SHARED_SOURCE_MESSAGE,
    CostClass,
    ExportRecommendation,
    PriorityClass,
    Reason,
    ReasonValues,
    RiskClass,
)
from rivet_ci.core.plan.signals import Signals

BASE_SCORE = 50
HISTORY_PENALTY_CAP = 17


class ScoreInputs(NamedTuple):
    """What the rules read of one export, computed once (plain values: each rule reads a few)."""

    strategy: str  # the prioritization kind: snapshot, incremental, chunked, time_window
    cursor_quality: str
    rows: int | None  # the row estimate
    windows: int  # the chunk windows (rivet counts an unknown count as 0)
    verdict: str  # lower-cased
    sparse: bool
    risk: RiskClass
    reconcile: bool
    recent: bool  # freshness `recent`
    history: HistorySummary | None  # None, or a summary of at least one finished run


# Each input's expression over the export's `signals` and `history` (in order: `risk` reads
# `verdict` and `sparse`).
_INPUTS = {
    "strategy": "signals.strategy",
    "cursor_quality": "signals.cursor_quality",
    "rows": "signals.row_estimate",
    "windows": "signals.chunk_count or 0",
    "verdict": "signals.verdict.lower()",
    "sparse": "signals.sparse_range_risk",
    "risk": "_risk_class(verdict, sparse, signals.warnings)",
    "reconcile": "signals.reconcile_required",
    "recent": "signals.freshness == 'recent'",
    "history": "history if history is not None and history.runs else None",
}
if tuple(_INPUTS) != ScoreInputs._fields:
    raise RuntimeError("every score input has one expression, in the order of ScoreInputs")
# What the rule expressions read: the fields of `ScoreInputs`, by name.
_INPUT_NAMES = ", ".join(ScoreInputs._fields)


def _expression(source: str) -> Callable[[ScoreInputs], Any]:
    """A function of the inputs computing `source`, an expression over their field names."""
    return compiled_function("expression", "_i", [f"{_INPUT_NAMES} = _i", f"return {source}"],
                             {})


class ScoreRule:
    """One row of the score table: its condition, its delta and the reason it gives.

    `when` is the condition, an expression over the fields of `ScoreInputs` (None: the
    campaign applies the row, not the score); `values` the expression of the message's values
    (its replacement fields, in their order). `step`, `rule` and `condition` are the row as
    `docs/scoring-rules.md` prints it. The expressions are this module's own text, never input:
    `recommend_export` runs them all in one function made from them (`_score_function`)."""

    __slots__ = ("_fixed", "_names", "_parts", "applies", "condition", "delta", "history",
                 "kind", "message", "reason_kind", "rule", "step", "values", "values_of", "when")

    def __init__(self, step: int, rule: str, condition: str, delta: int, *,
                 when: str | None, reason: ReasonKind | None = None,
                 message: str | None = None, values: str | None = None,
                 history: bool = False) -> None:
        self.step, self.rule, self.condition, self.delta = step, rule, condition, delta
        self.when, self.reason_kind, self.message, self.values = when, reason, message, values
        self.kind = reason.token if reason is not None else None
        self.history = history  # counted against HISTORY_PENALTY_CAP
        self.applies = _expression(when) if when is not None else None
        self.values_of = _expression(f"({values},)") if values is not None else None
        # The values the message is written from: its replacement fields, each one its kind
        # labels (a kind's rows may write fewer: the light chunked row writes no count).
        self._names = _fields(message) if when is not None else ()  # the campaign fills its own
        labelled = {v.name for v in reason.values} if reason is not None else set()
        if not set(self._names) <= labelled or (values is None) != (not self._names):
            raise ValueError(f"{rule}: a message's fields need `values` and their kind's labels")
        self._fixed = (_REASON.make_full({"kind": reason.token, "message": message, "values": ()})
                       if reason is not None and message is not None and values is None
                       else None)
        self._parts = _plain_field(message, self._names)

    def reason(self, values: tuple[int | float, ...] = ()) -> Reason | None:
        """The reason this row gives, written from `values` (None for a row that gives none; a
        row without values gives the same reason every time)."""
        if self._fixed is not None or self.kind is None or self.message is None:
            return self._fixed
        if self._parts is not None:
            return self.one_value()(values[0])
        message = self.message.format_map(dict(zip(self._names, values, strict=True)))
        pairs: ReasonValues = tuple(zip(self._names, values, strict=True))
        return _REASON.make_full({"kind": self.kind, "message": message, "values": pairs})

    def one_value(self) -> Callable[[int | float], Reason]:
        """`reason((value,))` for a message with one plain `{field}`: the message joined around
        it (the text `format` gives, a third of the cost; nearly every export has a row-count
        reason, many a chunk-window one)."""
        if self._parts is None or self.kind is None:
            raise ValueError(f"{self.rule}: not a message with one plain field")
        (before, after), kind, (name,) = self._parts, self.kind, self._names

        def reason(value: int | float) -> Reason:
            return _REASON.make_full({"kind": kind, "message": f"{before}{value}{after}",
                                      "values": ((name, value),)})

        return reason


def _fields(message: str | None) -> tuple[str, ...]:
    """The replacement fields of a message template, in order."""
    if message is None:
        return ()
    return tuple(name for _, name, _, _ in string.Formatter().parse(message) if name)


def _plain_field(message: str | None, names: tuple[str, ...]) -> tuple[str, str] | None:
    """The text before and after a message's one replacement field when it is a plain
    `{name}` (no format spec) and the message has no other braces; else None."""
    if message is None or len(names) != 1:
        return None
    parts = message.split("{" + names[0] + "}")
    if len(parts) != 2 or any("{" in part or "}" in part for part in parts):
        return None
    return parts[0], parts[1]


_REASON = maker(Reason)
_ROWS = "rows"
# Every run counted by a history rule is a finished one; two rules need three of them.
_RAN = "history is not None and history.runs >= 3"
_CHUNKED_HEAVY = "strategy == 'chunked' and (windows > 1 or (rows or 0) > 1_000_000)"


def _incremental(*qualities: str) -> str:
    return f"strategy == 'incremental' and cursor_quality in {qualities!r}"


NO_ROWS = ScoreRule(1, "cost by rows", "no row estimate", -3, reason=kinds.LOW_CONFIDENCE,
                    when="rows is None",
                    message="No row estimate — assume medium cost until preflight succeeds.")
SMALL_TABLE = ScoreRule(1, "cost by rows", "rows < 100,000", 12, reason=kinds.SMALL_TABLE,
                        when="rows is not None and rows < 100_000", values=_ROWS,
                        message="Smaller estimated row count (~{rows}) — lower extraction cost.")
LARGE_TABLE = ScoreRule(1, "cost by rows", "rows < 10,000,000", 0, reason=kinds.LARGE_TABLE,
                        when="rows is not None and 100_000 <= rows < 10_000_000",
                        values=_ROWS, message="Medium/large estimated row count (~{rows}).")
HUGE_TABLE = ScoreRule(1, "cost by rows", "otherwise", -15, reason=kinds.HUGE_TABLE,
                       when="rows is not None and rows >= 10_000_000", values=_ROWS,
                       message="Very large estimated row count (~{rows}) — defer and isolate if "
                               "possible.")
RISK_MEDIUM = ScoreRule(2, "risk", "risk class is `medium`", -4, when="risk == 'medium'")
SNAPSHOT = ScoreRule(3, "strategy: snapshot", "resolved strategy snapshot", 5,
                     when="strategy == 'snapshot'")
STRONG_CURSOR = ScoreRule(3, "strategy: incremental", "cursor quality `strong_monotonic`", 18,
                          reason=kinds.STRONG_CURSOR, when=_incremental("strong_monotonic"),
                          message="Incremental export with indexed cursor — reliable "
                                  "continuation.")
WEAK_CURSOR = ScoreRule(3, "strategy: incremental", "`weak_time` or `weak_multi_candidate`", -8,
                        reason=kinds.WEAK_CURSOR,
                        when=_incremental("weak_time", "weak_multi_candidate"),
                        message="Weaker cursor signal — treat ordering as advisory.")
FALLBACK_CURSOR = ScoreRule(3, "strategy: incremental", "`fallback_only` (never derived)", -14,
                            reason=kinds.WEAK_CURSOR, when=_incremental("fallback_only"),
                            message="Fallback cursor quality — higher reconcile and ordering "
                                    "risk.")
NO_CURSOR = ScoreRule(3, "strategy: incremental", "`none`", -12, reason=kinds.WEAK_CURSOR,
                      when=_incremental("none"),
                      message="Cursor quality unknown or weak — prefer validation before large "
                              "runs.")
CHUNKED_HEAVY = ScoreRule(3, "strategy: chunked (and keyset)",
                          "windows (unknown = 0) > 1 or rows (unknown = 0) > 1,000,000", -10,
                          reason=kinds.CHUNKING_HEAVY, when=_CHUNKED_HEAVY, values="windows",
                          message="Chunked extraction ({windows} chunk windows) — higher source "
                                  "load and runtime.")
CHUNKED_LIGHT = ScoreRule(3, "strategy: chunked (and keyset)", "otherwise", 0,
                          reason=kinds.CHUNKING_HEAVY,
                          when=f"strategy == 'chunked' and not ({_CHUNKED_HEAVY})",
                          message="Chunked extraction — monitor source during long runs.")
TIME_WINDOW = ScoreRule(3, "strategy: time_window", "always", 0, reason=kinds.NO_TIME_CURSOR,
                        when="strategy == 'time_window'",
                        message="Time-window strategy — bounded scan; ordering balances "
                                "freshness vs cost.")
SPARSE = ScoreRule(4, "sparse range", "sparse-range signal", -18, reason=kinds.SPARSE_RANGE,
                   when="sparse",
                   message="Sparse key range detected — many empty chunks possible; defer "
                           "relative to dense exports.")
RECONCILE = ScoreRule(5, "reconcile", "`reconcile_required: true`", -12, reason=kinds.RECONCILE,
                      when="reconcile",
                      message="Reconcile enabled — extra source read; schedule after cheaper "
                              "exports unless critical.")
FRESHNESS = ScoreRule(6, "freshness", "freshness `recent`", 6, reason=kinds.FRESHNESS_RECENT,
                      when="recent",
                      message="Narrow time window — likely fresher subset; good candidate for an "
                              "early wave.")
UNSAFE = ScoreRule(7, "verdict", "verdict contains \"unsafe\"", -25, when="'unsafe' in verdict")
DEGRADED = ScoreRule(7, "verdict", "else contains \"degraded\"", -12,
                     when="'unsafe' not in verdict and 'degraded' in verdict")
EFFICIENT = ScoreRule(7, "verdict", "else contains \"efficient\"", 8,
                      when="'unsafe' not in verdict and 'degraded' not in verdict "
                           "and 'efficient' in verdict")
RECENT_FAILURE = ScoreRule(8, "history", "most recent run failed", -8, history=True,
                           reason=kinds.RECENT_FAILURE,
                           when="history is not None and history.last_failed",
                           message="Most recent run ended in failure — investigate before "
                                   "scheduling a large retry.")
HIGH_RETRY = ScoreRule(8, "history", "≥ 3 runs and more than 0.3 retries per run", -5,
                       history=True, reason=kinds.HIGH_RETRY,
                       when=f"{_RAN} and history.retries_per_run > 0.3",
                       # The rate as the message prints it (one decimal): what a reviewer reads.
                       values="round(history.retries_per_run, 1), history.runs",
                       message="Recent runs retried frequently ({rate:.1f} retries/run over "
                               "{runs} runs).")
SLOW_RUNS = ScoreRule(8, "history", "≥ 3 runs and mean duration ≥ 300,000 ms", -4,
                      history=True, reason=kinds.SLOW_HISTORY,
                      when=f"{_RAN} and history.mean_duration_ms is not None "
                           "and history.mean_duration_ms >= 300_000",
                      # rivet: integer minutes of the integer mean, truncated
                      values="history.mean_duration_ms // 60_000",
                      message="Historical average duration is {minutes} min — expect similar "
                              "runtime.")
ISOLATION = ScoreRule(9, "campaign", "heavy member of a source group with ≥ 2 heavy members", 0,
                      reason=kinds.SHARED_SOURCE, message=SHARED_SOURCE_MESSAGE, when=None)
# Every row, in the order the rules run (the table of docs/scoring-rules.md).
SCORE_TABLE: tuple[ScoreRule, ...] = (
    NO_ROWS, SMALL_TABLE, LARGE_TABLE, HUGE_TABLE, RISK_MEDIUM, SNAPSHOT, STRONG_CURSOR,
    WEAK_CURSOR, FALLBACK_CURSOR, NO_CURSOR, CHUNKED_HEAVY, CHUNKED_LIGHT, TIME_WINDOW, SPARSE,
    RECONCILE, FRESHNESS, UNSAFE, DEGRADED, EFFICIENT, RECENT_FAILURE, HIGH_RETRY, SLOW_RUNS,
    ISOLATION,
)
# The score: (delta, history total, reasons, risk class) of an export's signals and history.
ScoreFunction = Callable[[Signals, HistorySummary | None],
                         tuple[int, int, list[Reason], RiskClass]]


def _input_lines() -> list[str]:
    return [f"{name} = {source}" for name, source in _INPUTS.items()]


def _inputs_function() -> Callable[[Signals, HistorySummary | None], ScoreInputs]:
    return compiled_function(
        "inputs", "signals, history",
        [*_input_lines(), f"return _new(ScoreInputs, ({_INPUT_NAMES},))"],
        {"_risk_class": _risk_class, "_new": tuple.__new__, "ScoreInputs": ScoreInputs})


def _score_function(table: tuple[ScoreRule, ...]) -> ScoreFunction:
    """One function that runs every scored row of `table` in order: the inputs' expressions,
    then the rows' own condition and value expressions, each row's delta added to the score
    (or to the history total), its reason appended. The same as computing `ScoreInputs` and
    calling each row's `applies`, at a fifth of the cost: a call per row per export was ~1,500
    instructions (22 rows)."""
    lines = [*_input_lines(), "score = 0", "history_total = 0", "reasons = []"]
    rows: dict[str, object] = {"_risk_class": _risk_class}
    for n, rule in enumerate(table):
        if rule.when is None:
            continue  # applied by the campaign
        rows[f"_rule{n}"] = rule
        total = "history_total" if rule.history else "score"
        lines += [f"if {rule.when}:", f"    {total} += {rule.delta}"]
        if rule._parts is not None:  # one value: its own reason maker
            rows[f"_one{n}"] = rule.one_value()
            lines.append(f"    reasons.append(_one{n}({rule.values}))")
        elif rule.values is not None:
            lines.append(f"    reasons.append(_rule{n}.reason(({rule.values},)))")
        elif rule.reason() is not None:
            rows[f"_reason{n}"] = rule.reason()
            lines.append(f"    reasons.append(_reason{n})")
    lines.append("return score, history_total, reasons, risk")
    return compiled_function("score", "signals, history", lines, rows)


def reason_values(kind: str, signals: Signals,
                  history: HistorySummary | None) -> ReasonValues:
    """The values a reason of `kind` is written from, for an export with these signals and
    history: what a plan read back from JSON gives its reasons (the rule's own `values`)."""
    rule = _VALUED.get(kind)
    if rule is None or rule.values_of is None:
        return ()
    inputs = score_inputs(signals, history)
    if kind in _FROM_HISTORY and (rule.applies is None or not rule.applies(inputs)):
        return ()  # the history it was written from is not in the document
    return tuple(zip(rule._names, rule.values_of(inputs), strict=True))


# The rule that gives each valued kind its values (one per kind) and the kinds read from history.
_VALUED = {rule.kind: rule for rule in SCORE_TABLE if rule.kind and rule.values}
_FROM_HISTORY = frozenset(rule.kind for rule in SCORE_TABLE if rule.history and rule.kind)


def cost_class(signals: Signals) -> CostClass:
    return _cost_class(signals.row_estimate, signals.chunk_count)


def _cost_class(rows: int | None, windows: int | None) -> CostClass:
    if rows is None or (rows >= 100_000 and rows < 10_000_000):
        return "medium"
    if rows < 100_000:
        return "low"
    return "very_high" if (windows or 0) >= 8 else "high"


def risk_class(signals: Signals) -> RiskClass:
    return _risk_class(signals.verdict.lower(), signals.sparse_range_risk, signals.warnings)


def _risk_class(verdict: str, sparse: bool, warnings: tuple[str, ...]) -> RiskClass:
    """`risk_class` with the verdict already lower-cased."""
    if sparse or "unsafe" in verdict:
        return "high"
    if "degraded" in verdict or len(warnings) > 3:
        return "medium"
    return "low"


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
    delta, history_total, reasons, risk = _SCORE(signals, history)
    score = BASE_SCORE + delta
    score += max(history_total, -HISTORY_PENALTY_CAP)
    score = min(max(score, 0), 100)
    priority, wave = _CLASS_AND_WAVE[score]
    return _RECOMMENDATION.make_full({
        "export_name": export_name, "source_group": source_group, "priority_score": score,
        "priority_class": priority,
        "cost_class": _cost_class(signals.row_estimate, signals.chunk_count),
        "risk_class": risk, "recommended_wave": wave, "isolate_on_source": False,
        "reasons": tuple(reasons),
    })


_RECOMMENDATION = maker(ExportRecommendation)
# Each score's priority class and wave, computed once (the score is clamped to 0..100).
_CLASS_AND_WAVE = tuple((priority_class(score), recommended_wave(score)) for score in range(101))
_SCORE = _score_function(SCORE_TABLE)
score_inputs = _inputs_function()  # what the rules read of an export (reason_values)
