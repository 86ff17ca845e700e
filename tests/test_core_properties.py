"""Properties of the score, the classes, the campaign and the plan document (hypothesis).

Every property runs derandomized (`derandomize=True`, no example database), so CI sees the same
examples on every run, and small enough to keep the whole suite fast.
"""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime
from typing import Any, get_args

from hypothesis import given, settings
from hypothesis import strategies as st

from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.facts.history import RunRecord, summarize_history
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.formats.document import dump_json, plan_document
from rivet_ci.core.formats.rivet_artifact import rivet_document
from rivet_ci.core.plan.campaign import build_campaign, campaign_order
from rivet_ci.core.plan.planner import FactsOrigin, plan_configs
from rivet_ci.core.plan.recommendation import HEAVY_COST, CostClass, ExportRecommendation
from rivet_ci.core.plan.scoring import priority_class, recommend_export, recommended_wave
from rivet_ci.core.plan.signals import Signals

DETERMINISTIC = settings(derandomize=True, database=None, deadline=None, max_examples=300)
QUICK = settings(derandomize=True, database=None, deadline=None, max_examples=60)
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

VERDICTS = ["EFFICIENT", "ACCEPTABLE", "DEGRADED", "UNSAFE", "unknown (preflight failed)",
            "Degraded", "probably unsafe"]
KNOWN_KINDS = {
    "low_confidence_metadata", "small_table", "large_table", "huge_table", "strong_cursor",
    "weak_cursor", "chunking_heavy", "no_time_cursor", "sparse_range_risk", "reconcile_required",
    "freshness_hint_recent", "recent_failure_history", "high_retry_rate_history", "slow_history",
}

signals_st = st.builds(
    Signals,
    strategy=st.sampled_from(["snapshot", "incremental", "chunked", "time_window"]),
    row_estimate=st.none() | st.integers(0, 10**11),
    avg_row_bytes=st.none() | st.integers(0, 10**6),
    uses_index=st.booleans(),
    cursor_quality=st.sampled_from(
        ["strong_monotonic", "weak_time", "weak_multi_candidate", "fallback_only", "none"]),
    chunk_count=st.none() | st.integers(0, 10**6),
    freshness=st.sampled_from([None, "recent"]),
    reconcile_required=st.booleans(),
    verdict=st.sampled_from(VERDICTS) | st.text(max_size=12),
    warnings=st.lists(st.text(max_size=8), max_size=6).map(tuple),
    sparse_range_risk=st.booleans(),
)
runs_st = st.lists(st.builds(
    RunRecord,
    status=st.sampled_from(["success", "completed", "failed", "error", "skipped", "running",
                            "FAILED"]),
    duration_ms=st.none() | st.integers(0, 10**8),
    retries=st.none() | st.integers(0, 5),
), max_size=25)


def score(signals: Signals, runs: list[RunRecord] | None = None) -> ExportRecommendation:
    return recommend_export("x", signals, summarize_history(runs) if runs else None)


@DETERMINISTIC
@given(signals_st, runs_st)
def test_score_is_within_0_100_and_classes_follow_it(signals: Signals,
                                                     runs: list[RunRecord]) -> None:
    rec = score(signals, runs)
    assert 0 <= rec.priority_score <= 100
    s = rec.priority_score
    assert rec.priority_class == ("high" if s >= 70 else "medium" if s >= 40 else "low")
    assert rec.recommended_wave == (1 if s >= 75 else 2 if s >= 55 else 3 if s >= 35 else 4)
    assert set(rec.reason_kinds) <= KNOWN_KINDS
    assert rec.low_confidence == (signals.row_estimate is None)
    assert not rec.isolate_on_source  # only the campaign sets it


def test_classes_and_waves_are_monotonic_in_the_score() -> None:
    rank = {"low": 0, "medium": 1, "high": 2}
    for low, high in itertools.pairwise(range(-5, 106)):
        assert rank[priority_class(low)] <= rank[priority_class(high)]
        assert recommended_wave(low) >= recommended_wave(high)
    assert {recommended_wave(s) for s in range(101)} == {1, 2, 3, 4}


@DETERMINISTIC
@given(signals_st, runs_st, st.integers(0, 99_999))
def test_low_confidence_never_scores_higher_than_a_known_small_estimate(
        signals: Signals, runs: list[RunRecord], small: int) -> None:
    known = score(signals.model_copy(update={"row_estimate": small}), runs)
    unknown = score(signals.model_copy(update={"row_estimate": None}), runs)
    assert "low_confidence_metadata" in unknown.reason_kinds
    assert unknown.priority_score <= known.priority_score


@DETERMINISTIC
@given(signals_st, runs_st)
def test_history_only_lowers_the_score_and_by_at_most_17(signals: Signals,
                                                          runs: list[RunRecord]) -> None:
    without = score(signals).priority_score
    with_history = score(signals, runs).priority_score
    assert without - 17 <= with_history <= without


@DETERMINISTIC
@given(signals_st)
def test_weaker_inputs_never_raise_the_score(signals: Signals) -> None:
    base = score(signals).priority_score
    for worse in ({"reconcile_required": True}, {"sparse_range_risk": True},
                  {"verdict": "UNSAFE"}):
        assert score(signals.model_copy(update=worse)).priority_score <= base


recommendations_st = st.lists(
    st.tuples(st.integers(0, 100), st.sampled_from(get_args(CostClass)),
              st.sampled_from([None, "g1", "g2", "g3"])),
    max_size=14,
).map(lambda items: [ExportRecommendation(
    export_name=f"e{i:02d}" if i % 3 else f"Z{i}", source_group=group, priority_score=s,
    priority_class=priority_class(s), cost_class=cost, risk_class="low",
    recommended_wave=recommended_wave(s)) for i, (s, cost, group) in enumerate(items)])


def precedes(a: ExportRecommendation, b: ExportRecommendation) -> bool:
    return (-a.priority_score, a.export_name) < (-b.priority_score, b.export_name)


@DETERMINISTIC
@given(recommendations_st, st.randoms(use_true_random=False))
def test_campaign_order_is_a_total_order_by_score_then_name(
        recs: list[ExportRecommendation], rnd: random.Random) -> None:
    ordered = campaign_order(recs)
    position = {r.export_name: i for i, r in enumerate(ordered)}
    for a, b in itertools.permutations(recs, 2):
        assert precedes(a, b) != precedes(b, a)  # antisymmetric and total (names are unique)
        assert precedes(a, b) == (position[a.export_name] < position[b.export_name])
    for a, b, c in itertools.permutations(recs[:7], 3):
        if precedes(a, b) and precedes(b, c):
            assert precedes(a, c)
    shuffled = recs[:]
    rnd.shuffle(shuffled)
    assert campaign_order(shuffled) == ordered  # the input order never matters


@DETERMINISTIC
@given(recommendations_st)
def test_campaign_invariants(recs: list[ExportRecommendation]) -> None:
    updated, campaign = build_campaign(recs)
    names = [r.export_name for r in recs]
    assert sorted(campaign.ordered_exports) == sorted(names)
    assert [n for w in campaign.waves for n in w.exports] == list(campaign.ordered_exports)
    assert [w.wave for w in campaign.waves] == sorted({r.recommended_wave for r in recs})
    assert all(w.exports for w in campaign.waves)
    assert list(campaign.source_group_warnings) == sorted(campaign.source_group_warnings)
    heavy_by_group: dict[str, int] = {}
    size_by_group: dict[str, int] = {}
    for r in recs:
        if r.source_group:
            size_by_group[r.source_group] = size_by_group.get(r.source_group, 0) + 1
        if r.source_group and r.cost_class in HEAVY_COST:
            heavy_by_group[r.source_group] = heavy_by_group.get(r.source_group, 0) + 1
    for before, after in zip(recs, updated, strict=True):
        # rivet 0.32.2: the heavy members of every warned group (two heavy, or three members).
        group = before.source_group
        expected = (before.cost_class in HEAVY_COST and group is not None
                    and (heavy_by_group[group] >= 2 or size_by_group[group] >= 3))
        assert after.isolate_on_source == expected
        assert (after.priority_score, after.priority_class, after.recommended_wave,
                after.cost_class) == (before.priority_score, before.priority_class,
                                      before.recommended_wave, before.cost_class)


# --- the whole pipeline is deterministic ---------------------------------------------------------

export_st = st.fixed_dictionaries({
    "mode": st.sampled_from(["full", "incremental", "chunked", "time_window"]),
    "group": st.sampled_from([None, "a", "b"]),
    "reconcile": st.booleans(),
    "rows": st.none() | st.integers(0, 10**9),
    "indexed": st.booleans(),
    "low": st.integers(-10, 10**6),
    "width": st.integers(0, 10**8),
    "has_entry": st.booleans(),
    "failed_runs": st.integers(0, 3),
})


def config_and_facts(exports: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    lines = ["source: {type: postgres, url_env: X}", "exports:"]
    entries: dict[str, Any] = {}
    for i, e in enumerate(exports):
        name = f"export_{i}"
        lines += [f"  - name: {name}", f"    table: public.t{i}", f"    mode: {e['mode']}",
                  "    format: parquet", "    destination: {type: local}"]
        lines += {"incremental": ["    cursor_column: k"],
                  "chunked": ["    chunk_column: k", "    chunk_size: 50000"],
                  "time_window": ["    time_column: k", "    days_window: 5"]}.get(
                      e["mode"], [])
        if e["group"]:
            lines.append(f"    source_group: {e['group']}")
        if e["reconcile"]:
            lines.append("    reconcile_required: true")
        if e["has_entry"]:
            entries[name] = {
                "row_estimate": e["rows"], "avg_row_bytes": 200,
                "columns": {"k": {"indexed": e["indexed"], "min": str(e["low"]),
                                  "max": str(e["low"] + e["width"])}},
                "history": [{"status": "failed", "retries": 1}] * e["failed_runs"],
            }
    return "\n".join(lines) + "\n", entries


def document_text(config_text: str, entries: dict[str, Any]) -> str:
    loaded = load_config_text("pipelines/p.yaml", config_text, {})
    assert not loaded.problems
    facts = FactsFile.model_validate({"format": "rivet-ci-facts/1", "exports": entries})
    plan = plan_configs([loaded], facts, FactsOrigin(kind="file", path="facts.yaml"))
    return dump_json(plan_document(plan, generated_at="2026-11-29T12:00:00Z", version="t"))


@QUICK
@given(st.lists(export_st, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_same_input_same_bytes_whatever_the_facts_order(
        exports: list[dict[str, Any]], rnd: random.Random) -> None:
    config_text, entries = config_and_facts(exports)
    first = document_text(config_text, entries)
    assert document_text(config_text, entries) == first
    shuffled = list(entries.items())
    rnd.shuffle(shuffled)
    assert document_text(config_text, dict(shuffled)) == first


# --- chunk bounds at the ends of the 64-bit range never end in a traceback ---------------------

I64 = 1 << 63
edge_st = st.sampled_from([-I64, -I64 + 1, -1, 0, 1, I64 - 2, I64 - 1]) | st.integers(-I64, I64 - 1)
shape_st = st.sampled_from([
    "chunk_size: 1", "chunk_size: 100000", "chunk_size: 4611686018427387904",
    "chunk_size: 9223372036854775807", "chunk_count: 1", "chunk_count: 4", "chunk_count: 64",
    "chunk_by_days: 1"])


@settings(derandomize=True, database=None, deadline=None, max_examples=80)
@given(edge_st, edge_st, shape_st, st.none() | st.integers(0, I64 - 1), st.booleans())
def test_extreme_chunk_bounds_plan_or_refuse_never_crash(
        a: int, b: int, shape: str, rows: int | None, checkpoint: bool) -> None:
    """Any i64 min/max with any window shape: the plan (rivet-ci-plan/1 and rivet's artifact)
    is written, with the export planned or refused as rivet refuses — never a traceback. rivet's
    64-bit arithmetic is followed: a span over the whole range wraps (`computed.row_estimate`
    stays within 0..2^63−1)."""
    low, high = min(a, b), max(a, b)
    config_text = (
        "source: {type: postgres, url_env: X}\nexports:\n  - name: e\n    table: public.t\n"
        f"    mode: chunked\n    chunk_column: k\n    {shape}\n"
        f"    chunk_checkpoint: {str(checkpoint).lower()}\n"
        "    format: parquet\n    destination: {type: local}\n")
    entries = {"e": {"row_estimate": rows, "table": {"rows": rows, "integer_primary_key": "k"},
                     "columns": {"k": {"indexed": True, "integer": True, "has_nulls": False,
                                       "min": str(low), "max": str(high)}}}}
    loaded = load_config_text("pipelines/p.yaml", config_text, {})
    assert not loaded.problems
    facts = FactsFile.model_validate({"format": "rivet-ci-facts/1", "exports": entries})
    plan = plan_configs([loaded], facts, FactsOrigin(kind="file", path="facts.yaml"))
    document = dump_json(plan_document(plan, generated_at="2026-11-29T12:00:00Z", version="t"))
    rivet = dump_json(rivet_document(plan.configs, created_at=NOW))
    assert '"format"' in document and rivet
    for config in plan.configs:
        for export in config.exports:
            estimate = export.signals.row_estimate if export.signals is not None else None
            assert estimate is None or 0 <= estimate < I64
