"""Run history from rivet's state database: read-only, one statement, scored as spec §5 says."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from support.db_seed import engine, write_config

from rivet_ci.adapters.preflight.collect import collect_facts
from rivet_ci.adapters.state_history import (
    STATE_FILE,
    STATE_URL_ENV,
    locate_state,
    read_history,
)
from rivet_ci.core.facts.history import RunRecord, summarize_history
from rivet_ci.core.plan.scoring import recommend_export
from rivet_ci.core.plan.signals import Signals

# rivet's export_metrics (the columns planning reads, plus a few it does not).
SCHEMA = """
CREATE TABLE export_metrics (
  id INTEGER PRIMARY KEY, export_name TEXT NOT NULL, run_at TEXT, duration_ms INTEGER,
  total_rows INTEGER, status TEXT NOT NULL, retries INTEGER, error_message TEXT,
  files_written INTEGER, bytes_written INTEGER)
"""
# (export, status, duration_ms, retries) in insertion order: later rows are newer.
RUNS: list[tuple[str, str, int, int]] = [
    *[("failing", "success", 1_000, 0)] * 4, ("failing", "failed", 2_000, 0),
    *[("retrying", "success", 10_000, 1)] * 10,
    *[("slow", "success", 400_000, 0)] * 4,
    ("running", "success", 1_000, 0), ("running", "running", 0, 0),
    *[("many", "failed", 1_000, 0)] * 5, *[("many", "success", 1_000, 0)] * 20,
    ("other", "failed", 1, 9),
]
NAMES = ["failing", "retrying", "slow", "running", "many", "never_ran"]


def make_state(path: Path, *, wal: bool = False) -> Path:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(SCHEMA)
    conn.executemany(
        "INSERT INTO export_metrics (export_name, run_at, duration_ms, total_rows, status, "
        "retries, error_message) VALUES (?, datetime('2026-01-01', '+' || ? || ' minutes'), ?, "
        "100, ?, ?, ?)",
        [(name, i, duration, status, retries,
          "connect postgresql://etl:hunter2@db/prod failed" if status == "failed" else None)
         for i, (name, status, duration, retries) in enumerate(RUNS)])
    conn.commit()
    conn.close()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def baseline() -> Signals:
    # Spec §8 baseline: snapshot, 10,000 rows, EFFICIENT, no warnings → 75.
    return Signals(strategy="snapshot", row_estimate=10_000, verdict="EFFICIENT")


def score(runs: list[RunRecord]) -> int:
    return recommend_export("x", baseline(), summarize_history(runs)).priority_score


def test_history_changes_scores_exactly_as_spec(tmp_path: Path) -> None:
    config = tmp_path / "rivet.yaml"
    state = make_state(tmp_path / STATE_FILE)
    before = digest(state)
    files_before = sorted(p.name for p in tmp_path.iterdir())
    history = read_history(config, NAMES, environ={})
    assert history.problem is None
    runs = history.runs
    assert set(runs) == {"failing", "retrying", "slow", "running", "many"}  # never_ran: none
    assert runs["failing"][0].status == "failed"  # newest first
    assert [r.status for r in runs["running"]] == ["success"]  # running rows left out
    assert len(runs["many"]) == 20 and all(r.status == "success" for r in runs["many"])
    assert score([]) == 75
    assert score(runs["failing"]) == 75 - 8      # last run failed
    assert score(runs["retrying"]) == 75 - 5     # 1.0 retries/run over 10 runs
    assert score(runs["slow"]) == 75 - 4         # mean 400,000 ms over 4 runs
    assert score(runs["running"]) == 75          # one finished run, nothing to say
    assert score(runs["many"]) == 75             # the 5 old failures are past the 20 newest
    message = runs["failing"][0].error_message or ""
    assert "hunter2" not in message and "***" in message
    # Read-only: the file is byte-identical and nothing was created beside it.
    assert digest(state) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files_before


def test_wal_mode_state_is_read_without_side_files(tmp_path: Path) -> None:
    state = make_state(tmp_path / STATE_FILE, wal=True)
    before = digest(state)
    files_before = sorted(p.name for p in tmp_path.iterdir())
    assert files_before == [STATE_FILE]  # a clean close checkpoints and removes the WAL
    history = read_history(tmp_path / "rivet.yaml", NAMES, environ={})
    assert len(history.runs["failing"]) == 5
    assert digest(state) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files_before


def test_missing_database_or_table_is_no_history_and_creates_nothing(tmp_path: Path) -> None:
    history = read_history(tmp_path / "rivet.yaml", NAMES, environ={})
    assert (history.runs, history.problem) == ({}, None)
    assert not (tmp_path / STATE_FILE).exists()
    sqlite3.connect(tmp_path / STATE_FILE).close()  # an empty database: no table
    before = digest(tmp_path / STATE_FILE)
    history = read_history(tmp_path / "rivet.yaml", NAMES, environ={})
    assert (history.runs, history.problem) == ({}, None)
    assert digest(tmp_path / STATE_FILE) == before


def test_unreadable_state_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_bytes(b"this is not a database" * 100)
    history = read_history(tmp_path / "rivet.yaml", NAMES, environ={})
    assert history.runs == {}
    assert history.problem is not None and "cannot read run history" in history.problem


def test_state_location_rules(tmp_path: Path) -> None:
    config = tmp_path / "pipelines" / "rivet.yaml"
    assert locate_state(config, environ={}).path == config.parent / STATE_FILE
    # rivet only honours RIVET_STATE_URL for Postgres.
    assert locate_state(config, environ={STATE_URL_ENV: "sqlite:///x.db"}).path == (
        config.parent / STATE_FILE)
    pg = locate_state(config, environ={STATE_URL_ENV: "postgresql://u:pw@h/state"})
    assert pg.url is not None and pg.url.drivername == "postgresql+psycopg"
    assert "pw" not in pg.describe()
    assert locate_state(config, environ={}, state_url="sqlite:////tmp/s.db").path == Path(
        "/tmp/s.db")
    assert locate_state(config, environ={}, state_url="other/state.db").path == Path(
        "other/state.db")


def test_collect_facts_attaches_history(sqlite_db: str, tmp_path: Path) -> None:
    make_state(tmp_path / STATE_FILE)
    loaded = write_config(tmp_path, [{"name": "slow", "table": "customers"},
                                     {"name": "never_ran", "table": "customers"}])
    facts = collect_facts([loaded], environ={}, source_url_override=sqlite_db,
                          include_history=True)
    exports = facts.configs[loaded[0].path].exports
    assert exports["slow"].history is not None and len(exports["slow"].history) == 4
    assert exports["never_ran"].history is None  # absent means unknown


@pytest.fixture(scope="module")
def pg_state(pg_url: str) -> Iterator[str]:
    admin = engine(pg_url)
    with admin.connect() as conn:
        conn.exec_driver_sql("DROP DATABASE IF EXISTS rivet_state_test WITH (FORCE)")
        conn.exec_driver_sql("CREATE DATABASE rivet_state_test")
    admin.dispose()
    url = make_url(pg_url).set(database="rivet_state_test")
    db = engine(url)
    with db.connect() as conn:
        conn.exec_driver_sql(SCHEMA.replace("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY"))
        for name, status, duration, retries in RUNS:
            conn.execute(sa.text(
                "INSERT INTO export_metrics (export_name, run_at, duration_ms, total_rows, "
                "status, retries) VALUES (:n, now(), :d, 100, :s, :r)"),
                {"n": name, "d": duration, "s": status, "r": retries})
    db.dispose()
    yield url.set(password="stateSecret42").render_as_string(hide_password=False)


@pytest.mark.postgres
def test_postgres_state_database_via_url(pg_state: str, tmp_path: Path) -> None:
    for environ, state_url in (({STATE_URL_ENV: pg_state}, None), ({}, pg_state)):
        history = read_history(tmp_path / "rivet.yaml", NAMES, environ=environ,
                               state_url=state_url)
        assert history.problem is None
        assert score(history.runs["failing"]) == 67
        assert score(history.runs["slow"]) == 71
        assert [r.status for r in history.runs["running"]] == ["success"]
        assert len(history.runs["many"]) == 20
        assert "stateSecret42" not in history.location
    assert not (tmp_path / STATE_FILE).exists()


def test_unreachable_postgres_state_is_a_problem(tmp_path: Path) -> None:
    history = read_history(tmp_path / "rivet.yaml", NAMES, environ={},
                           state_url="postgresql://u:stateSecret42@127.0.0.1:1/state")
    assert history.runs == {}
    assert history.problem is not None and "stateSecret42" not in history.problem


def test_a_recursive_view_named_export_metrics_is_refused_fast(tmp_path: Path) -> None:
    # A pull request can commit a .rivet_state.db: a never-ending recursive VIEW must neither
    # hang the gate nor spill temp files until the disk is full. It is not read at all.
    state = tmp_path / STATE_FILE
    conn = sqlite3.connect(state)
    conn.execute(
        "CREATE VIEW export_metrics AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
        "SELECT n + 1 FROM r) SELECT n AS id, 'failing' AS export_name, 'failed' AS status, "
        "randomblob(100000) AS error_message FROM r ORDER BY n DESC")
    conn.commit()
    conn.close()
    before = digest(state)
    start = time.monotonic()
    history = read_history(tmp_path / "rivet.yaml", NAMES, environ={}, timeout_s=30)
    assert time.monotonic() - start < 2
    assert history.runs == {}
    assert history.problem is not None and "is a view, not a table" in history.problem
    assert digest(state) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FILE]


def test_reading_history_stops_at_the_deadline(tmp_path: Path) -> None:
    state = tmp_path / STATE_FILE
    conn = sqlite3.connect(state)
    conn.execute(SCHEMA)
    conn.execute(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 200000) "
        "INSERT INTO export_metrics (export_name, status, duration_ms) "
        "SELECT 'failing', 'success', n FROM g")
    conn.commit()
    conn.close()
    start = time.monotonic()
    history = read_history(tmp_path / "rivet.yaml", NAMES, environ={}, timeout_s=0.01)
    assert time.monotonic() - start < 2
    assert history.runs == {}
    assert history.problem is not None and "took longer than 0.01 s" in history.problem
    # ...and with time enough, the same file is read.
    full = read_history(tmp_path / "rivet.yaml", NAMES, environ={}, timeout_s=30)
    assert full.problem is None and len(full.runs["failing"]) == 20


def test_last_success_is_the_newest_success_among_the_25_newest_rows(tmp_path: Path) -> None:
    state = tmp_path / STATE_FILE
    conn = sqlite3.connect(state)
    conn.execute(SCHEMA)
    rows: list[tuple[str, str, int | None]] = []
    for name, failed in (("x", 24), ("y", 23)):  # oldest first
        rows.append((name, "success", 7 if name == "x" else 9))
        rows += [(name, "failed", None)] * failed
        rows.append((name, "running", None))  # counts towards rivet's 25, not the history
    rows.append(("z", "SUCCESS", 5))  # not exactly `success`
    conn.executemany("INSERT INTO export_metrics (export_name, status, total_rows, run_at) "
                     "VALUES (?, ?, ?, '2026-01-01T00:00:00Z')", rows)
    conn.commit()
    conn.close()
    history = read_history(tmp_path / "rivet.yaml", ["x", "y", "z"], environ={})
    assert history.problem is None
    assert "x" not in history.last_success  # the success is the 26th newest row
    assert history.last_success["y"].total_rows == 9  # the 25th
    assert history.last_success["y"].run_at == "2026-01-01T00:00:00Z"
    assert "z" not in history.last_success
    assert len(history.runs["y"]) == 20
    assert all(r.status == "failed" for r in history.runs["y"])
