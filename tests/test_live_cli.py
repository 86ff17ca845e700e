"""`rivet-ci facts` and `rivet-ci plan --live / --state-url` end to end against real PostgreSQL."""

from __future__ import annotations

import io
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import db_seed

from rivet_ci.cli import run
from rivet_ci.commands.context import Context

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

EXPORTS: list[dict[str, Any]] = [
    {"name": "orders", "table": "public.orders", "mode": "incremental",
     "cursor_column": "updated_at", "source_group": "replica_a"},
    {"name": "sparse", "table": "public.sparse", "mode": "chunked", "chunk_column": "id",
     "chunk_size": 200_000, "chunk_checkpoint": True, "source_group": "replica_a"},
    {"name": "customers", "table": "public.customers", "source_group": "replica_a"},
    {"name": "events", "table": "public.events_noidx", "mode": "chunked", "chunk_column": "id",
     "chunk_size": 10000},
    {"name": "recent", "query": "SELECT id, customer_id, updated_at FROM recent_orders",
     "mode": "incremental", "cursor_column": "updated_at"},
    {"name": "order_customers",
     "query": "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id"},
]


def cli(argv: list[str], cwd: Path, environ: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, Context(stdout=out, stderr=err, environ=environ, cwd=cwd, now=lambda: NOW))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    config = {"source": {"type": "postgres", "url_env": "SRC_URL"},
              "exports": [db_seed.with_required_keys(e) for e in EXPORTS]}
    (tmp_path / "rivet.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return tmp_path


def test_live_plan_equals_plan_from_captured_facts(pg_db: str, project: Path) -> None:
    env = {"SRC_URL": pg_db}
    code, _, err = cli(["facts", "rivet.yaml", "--output", "facts.json"], project, env)
    assert code == 0, err
    facts_text = (project / "facts.json").read_text()
    assert json.loads(facts_text)["format"] == "rivet-ci-facts/1"

    code, live_out, err = cli(["plan", "rivet.yaml", "--live", "--format", "json"], project, env)
    assert code == 0, err
    code, file_out, err = cli(["plan", "rivet.yaml", "--facts", "facts.json", "--format",
                               "json"], project, {})
    assert code == 0, err
    live, from_file = json.loads(live_out), json.loads(file_out)
    assert live["facts"]["origin"] == "live" and from_file["facts"]["origin"] == "file"
    assert live["configs"] == from_file["configs"]
    recs = {e["export_name"]: e["prioritization"]["export_recommendation"]
            for e in live["configs"][0]["exports"]}
    assert set(recs) == {e["name"] for e in EXPORTS}
    # Real observations drove the plan: an indexed cursor, a sparse range, and no failures.
    assert "strong_cursor" in [r["kind"] for r in recs["orders"]["reasons"]]
    assert "sparse_range_risk" in [r["kind"] for r in recs["sparse"]["reasons"]]
    assert not any("low_confidence_metadata" in [r["kind"] for r in rec["reasons"]]
                   for rec in recs.values())
    # The DSN's password never reaches an artifact or the terminal.
    for text in (facts_text, live_out, file_out, err):
        assert db_seed.PG_SECRET not in text


def test_state_history_changes_scores_and_is_not_written(project: Path) -> None:
    state = project / ".rivet_state.db"
    with sqlite3.connect(state) as db:
        db.execute("CREATE TABLE export_metrics (id INTEGER PRIMARY KEY, export_name TEXT, "
                   "run_at TEXT, duration_ms INT, total_rows INT, status TEXT, retries INT, "
                   "error_message TEXT)")
        db.executemany(
            "INSERT INTO export_metrics (export_name, duration_ms, status, retries) "
            "VALUES (?, ?, ?, ?)",
            [("customers", 400_000, "success", 1)] * 3 + [("customers", 400_000, "failed", 2)])
    before = state.read_bytes()
    facts = {"format": "rivet-ci-facts/1",
             "exports": {"customers": {"row_estimate": 10_000, "verdict": "EFFICIENT"}}}
    (project / "facts.yaml").write_text(yaml.safe_dump(facts))
    code, out, err = cli(["plan", "rivet.yaml", "--facts", "facts.yaml", "--state-url",
                          str(state), "--export", "customers", "--format", "json"], project, {})
    assert code == 0, err
    rec = json.loads(out)["configs"][0]["exports"][0]["prioritization"]["export_recommendation"]
    kinds = [r["kind"] for r in rec["reasons"]]
    # 75 (baseline) − 8 (last failed) − 5 (1.25 retries/run) − 4 (6.7 min mean) = 58
    assert kinds == ["small_table", "recent_failure_history", "high_retry_rate_history",
                     "slow_history"]
    assert rec["priority_score"] == 58
    assert state.read_bytes() == before


def test_unreachable_source_plans_with_low_confidence(project: Path) -> None:
    env = {"SRC_URL": "postgresql+psycopg://rivet:hunter2-secret@127.0.0.1:1/nope"}
    code, out, err = cli(["plan", "rivet.yaml", "--live", "--connect-timeout", "2", "--format",
                          "json"], project, env)
    assert code == 0, err
    assert "Traceback" not in err
    exports = json.loads(out)["configs"][0]["exports"]
    for export in exports:
        assert export["diagnostics"]["verdict"] == "unknown (preflight failed)"
        assert export["diagnostics"]["preflight_error"]
        kinds = [r["kind"] for r in export["prioritization"]["export_recommendation"]["reasons"]]
        assert "low_confidence_metadata" in kinds
    assert "hunter2-secret" not in out + err


def test_a_directory_holding_the_facts_file_does_not_plan_it_as_a_config(project: Path) -> None:
    facts = {"format": "rivet-ci-facts/1", "exports": {"customers": {"row_estimate": 10}}}
    (project / "facts.yaml").write_text(yaml.safe_dump(facts))
    code, out, err = cli(["plan", ".", "--facts", "facts.yaml", "--output", "out.yaml",
                          "--format", "json"], project, {})
    assert code == 0, err
    assert [c["path"] for c in json.loads(out)["configs"]] == ["rivet.yaml"]
