"""Live preflight against hostile configs: nothing is written, scanned, leaked or left running."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from support.db_seed import (
    BIG_ROWS,
    MY_SECRET,
    PG_SECRET,
    ROWS,
    collect,
    collect_all,
    engine,
    reader_url,
    write_config,
)

from rivet_ci.adapters.preflight import mysql, postgres
from rivet_ci.adapters.preflight.base import TXN_MAX_SECONDS, PreflightOptions
from rivet_ci.adapters.preflight.safety import UnsafeQueryError, parse_table_name
from rivet_ci.adapters.preflight.source_url import to_sqlalchemy
from rivet_ci.core.config.loader import load_config_text

DIALECTS = [
    pytest.param("pg_db", marks=pytest.mark.postgres, id="postgres"),
    pytest.param("mysql_db", marks=pytest.mark.mariadb, id="mariadb"),
    pytest.param("sqlite_db", id="sqlite"),
]

HOSTILE = [
    {"name": "delete", "query": "DELETE FROM orders"},
    {"name": "stacked", "query": "SELECT 1; DROP TABLE orders"},
    {"name": "stacked_comment", "query": "SELECT 1 /* x */ ; DROP TABLE orders -- y"},
    {"name": "modifying_cte",
     "query": "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d"},
    {"name": "select_into", "query": "SELECT * INTO orders_copy FROM orders"},
    {"name": "for_update", "query": "SELECT * FROM orders FOR UPDATE"},
    {"name": "copy", "query": "COPY orders TO '/tmp/rivet-ci-orders.csv'"},
    {"name": "column_injection", "table": "orders", "mode": "incremental",
     "cursor_column": 'id"; DROP TABLE orders; --'},
    {"name": "backtick_column", "table": "orders", "mode": "chunked",
     "chunk_column": "id`; DROP TABLE orders; --"},
    {"name": "sleepy", "query": "SELECT pg_sleep(30), SLEEP(30)"},
]


# `table:` values rivet 0.32 refuses before it connects (V-E38): the config layer blocks them,
# and preflight refuses them again on its own (defence in depth).
HOSTILE_TABLES = ["orders; DROP TABLE orders", 'orders"; DROP TABLE orders; --']


@pytest.mark.parametrize("table", HOSTILE_TABLES)
def test_a_hostile_table_name_is_a_config_error_and_refused_by_preflight_too(
        table: str) -> None:
    text = ("source: {type: postgres, url_env: SRC_URL}\nexports:\n"
            f"  - {{name: e, table: {json.dumps(table)}, format: parquet, "
            "destination: {type: local}}\n")
    loaded = load_config_text("c.yaml", text, {})
    assert [p.rule for p in loaded.problems] == ["V-E38e"] and loaded.exports == ()
    with pytest.raises(UnsafeQueryError, match="not a plain name"):
        parse_table_name(table)


def table_count(url: str, table: str) -> int:
    db = engine(to_sqlalchemy(url, environ={}).url if url.startswith("sqlite") else url)
    try:
        with db.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(
                sa.table(table))).scalar_one())
    finally:
        db.dispose()


@pytest.mark.parametrize("db", DIALECTS)
def test_hostile_configs_are_refused_and_nothing_changes(
        db: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = request.getfixturevalue(db)
    facts = collect(url, tmp_path, HOSTILE)
    for spec in HOSTILE:
        error = facts[spec["name"]].preflight_error
        assert error is not None and error.startswith("refused:"), (spec["name"], error)
    assert "DELETE statement" in (facts["delete"].preflight_error or "")
    assert "one statement" in (facts["stacked"].preflight_error or "")
    assert "cursor_column" in (facts["column_injection"].preflight_error or "")
    assert "chunk_column" in (facts["backtick_column"].preflight_error or "")
    assert table_count(url, "orders") == ROWS
    assert not Path("/tmp/rivet-ci-orders.csv").exists()


@pytest.mark.postgres
def test_explain_never_runs_a_volatile_function(pg_db: str, tmp_path: Path) -> None:
    before = table_count(pg_db, "audit_log")
    facts = collect(pg_db, tmp_path, [
        {"name": "volatile", "mode": "incremental", "cursor_column": "id",
         "query": "SELECT id, evil() AS e FROM customers"},
        {"name": "in_filter", "query": "SELECT * FROM customers WHERE id = evil()"},
    ])
    # Planned (EXPLAIN succeeded), but the query was never run, not even for min/max: a query
    # calling a function that is not a known side-effect-free builtin stays EXPLAIN-only.
    assert facts["volatile"].preflight_error is None
    assert facts["volatile"].row_estimate == 1000
    assert "the query calls evil" in (facts["volatile"].columns["id"].range_skipped or "")
    assert facts["in_filter"].preflight_error is None
    assert table_count(pg_db, "audit_log") == before


@pytest.mark.postgres
def test_read_only_transaction_stops_a_function_the_planner_runs(
        pg_db: str, tmp_path: Path) -> None:
    # sneaky() claims to be IMMUTABLE, so planning folds (executes) it. Its INSERT must fail.
    before = table_count(pg_db, "audit_log")
    facts = collect(pg_db, tmp_path, [
        {"name": "folded", "query": "SELECT * FROM customers WHERE id = sneaky()"}])
    error = facts["folded"].preflight_error
    # Only the error's class: the driver's text of a query's error is never published.
    assert error is not None and "ReadOnlySqlTransaction (SQLSTATE 25006)" in error
    assert table_count(pg_db, "audit_log") == before


@pytest.mark.postgres
def test_postgres_session_is_read_only_with_a_statement_timeout(pg_db: str) -> None:
    options = PreflightOptions(statement_timeout_s=0.25)
    db = postgres.create_engine(to_sqlalchemy(pg_db, environ={}), options)
    session = postgres.open_session(db, options)
    try:
        # White-box: run our own statements through the session's guarded path.
        assert session._run(lambda c: c.exec_driver_sql("SHOW statement_timeout").scalar()) \
            == "250ms"
        assert session._run(lambda c: c.exec_driver_sql(
            "SHOW transaction_read_only").scalar()) == "on"
        with pytest.raises(sa.exc.DBAPIError, match="read-only transaction"):
            session._run(lambda c: c.exec_driver_sql("INSERT INTO audit_log (note) VALUES ('x')"))
        # ...and the next probe still works, in a fresh read-only transaction.
        assert session._run(lambda c: c.exec_driver_sql("SELECT 1").scalar()) == 1
    finally:
        session.close()
        db.dispose()


@pytest.mark.mariadb
def test_mariadb_session_is_read_only_with_a_statement_timeout(mysql_db: str) -> None:
    options = PreflightOptions(statement_timeout_s=0.25)
    db = mysql.create_engine(to_sqlalchemy(mysql_db, environ={}), options)
    session = mysql.open_session(db, options)
    try:
        timeout = session._run(lambda c: c.exec_driver_sql(
            "SELECT @@max_statement_time").scalar())
        assert float(str(timeout)) == pytest.approx(0.25)
        with pytest.raises(sa.exc.DBAPIError, match="READ ONLY"):
            session._run(lambda c: c.exec_driver_sql("DELETE FROM customers"))
        assert session._run(lambda c: c.exec_driver_sql("SELECT COUNT(*) FROM customers")
                            .scalar()) == 1000
    finally:
        session.close()
        db.dispose()


@pytest.mark.parametrize("db", [
    pytest.param("pg_db", marks=pytest.mark.postgres, id="postgres"),
    pytest.param("mysql_db", marks=pytest.mark.mariadb, id="mariadb"),
])
def test_slow_probe_is_cut_off_by_the_statement_timeout(
        db: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = request.getfixturevalue(db)
    # The min/max of `events` waits on a lock another session takes once the first export is
    # done (its EXPLAIN and catalog lookups ran before): only the timeout can end that wait, so
    # the test does not depend on how fast the machine is. On PostgreSQL the lock request queues
    # behind preflight's own read-only transaction (EXPLAIN's AccessShare locks) and is granted
    # when that transaction rolls over (after 1 s), just before the min/max is sent.
    locker = engine(url, autocommit=False)
    held = locker.connect()
    taker: list[threading.Thread] = []

    def progress(done: int, total: int) -> None:
        if done != 1:
            return
        if db == "mysql_db":
            held.exec_driver_sql("LOCK TABLES events_noidx WRITE")
            return
        thread = threading.Thread(target=lambda: held.exec_driver_sql(
            "LOCK TABLE events_noidx IN ACCESS EXCLUSIVE MODE"))
        thread.start()
        taker.append(thread)
        time.sleep(TXN_MAX_SECONDS + 0.2)

    loaded, path = write_config(tmp_path, [
        {"name": "first", "table": "sparse", "mode": "chunked", "chunk_column": "id"},
        {"name": "events", "table": "events_noidx", "mode": "incremental",
         "cursor_column": "ts"},
        {"name": "after", "table": "customers", "mode": "incremental", "cursor_column": "id"},
    ])
    start = time.monotonic()
    try:
        facts = collect_all(url, [(loaded, path)], progress=progress, statement_timeout_s=1.5,
                            range_probe_row_bound=10**12).configs[loaded.path].exports
    finally:
        for thread in taker:
            thread.join()
        held.rollback()
        if db == "mysql_db":
            held.exec_driver_sql("UNLOCK TABLES")
        held.close()
        locker.dispose()
    elapsed = time.monotonic() - start
    assert facts["events"].preflight_error is None, facts["events"].preflight_error
    skipped = facts["events"].columns["ts"].range_skipped
    assert skipped is not None and "statement timeout (1.5 s)" in skipped, skipped
    assert elapsed < 10, elapsed
    # The session survives the cancelled probe: the next export is probed normally.
    assert facts["after"].columns["id"].max == "1000"


def test_sqlite_slow_count_is_cut_off(sqlite_db: str, tmp_path: Path) -> None:
    start = time.monotonic()
    facts = collect(sqlite_db, tmp_path, [
        {"name": "pairs", "table": "slow_pairs", "mode": "incremental", "cursor_column": "id"},
    ], statement_timeout_s=0.3, range_probe_row_bound=10**12)["pairs"]
    assert time.monotonic() - start < 5
    assert any("statement timeout (0.3 s)" in note for note in facts.notes)
    assert facts.columns["id"].range_skipped is not None


def _seq_scans(url: str, table: str) -> int:
    db = engine(url)
    try:
        with db.connect() as conn:
            conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
            return int(conn.execute(sa.text(
                "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = :t"), {"t": table})
                .scalar_one())
    finally:
        db.dispose()


def _wait_for_seq_scans(url: str, table: str, at_least: int) -> int:
    deadline = time.monotonic() + 10
    value = _seq_scans(url, table)
    while value < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
        value = _seq_scans(url, table)
    return value


@pytest.mark.postgres
def test_planning_a_big_unindexed_table_never_scans_it(pg_db: str, tmp_path: Path) -> None:
    before = _seq_scans(pg_db, "big_unindexed")
    facts = collect(pg_db, tmp_path, [
        {"name": "big", "table": "big_unindexed"},
        {"name": "big_inc", "table": "big_unindexed", "mode": "incremental",
         "cursor_column": "v"},
        {"name": "big_chunked", "table": "big_unindexed", "mode": "chunked",
         "chunk_column": "id"},
        {"name": "big_query", "mode": "incremental", "cursor_column": "id",
         "query": "SELECT id, v FROM big_unindexed WHERE v < 10"},
    ], range_probe_row_bound=500_000)
    assert facts["big"].row_estimate is not None
    assert abs(facts["big"].row_estimate - BIG_ROWS) <= BIG_ROWS // 10
    for name, column in [("big_inc", "v"), ("big_chunked", "id"), ("big_query", "id")]:
        assert facts[name].columns[column].range_skipped is not None, name
    # Statistics arrive asynchronously: a known scan (the control) must show up, and then the
    # counter must have moved by exactly that one scan.
    control = engine(pg_db)
    with control.connect() as conn:
        conn.exec_driver_sql("SET max_parallel_workers_per_gather = 0")
        conn.exec_driver_sql("SELECT count(*) FROM big_unindexed").scalar()
    control.dispose()
    after = _wait_for_seq_scans(pg_db, "big_unindexed", before + 1)
    time.sleep(0.5)
    assert _seq_scans(pg_db, "big_unindexed") == after == before + 1


def test_no_secret_in_facts_or_logs(
        request: pytest.FixtureRequest, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = []
    runs: list[tuple[str, list[dict[str, object]]]] = []
    # Whichever servers are available; the unknown-host case needs none.
    try:
        pg = request.getfixturevalue("pg_db")
        secrets.append(PG_SECRET)
        runs.append((pg, [
            {"name": "ok", "table": "customers", "mode": "incremental", "cursor_column": "id"},
            # The password as a table name: the driver echoes it (case-folded) in its error.
            {"name": "echo", "table": PG_SECRET},
        ]))
    except pytest.skip.Exception:
        pass
    try:
        my = request.getfixturevalue("mysql_db")
        secrets.append(MY_SECRET)
        runs.append((reader_url(my), [{"name": "denied", "table": "orders"}]))
        runs.append((reader_url(my, MY_SECRET + "-wrong"), [{"name": "wrong_pw",
                                                              "table": "orders"}]))
    except pytest.skip.Exception:
        pass
    secret = "hostSecretNeverShown9"
    secrets.append(secret)
    runs.append((f"postgresql://u:{secret}@nonexistent.invalid:5432/db",
                  [{"name": "unknown_host", "table": "orders"}]))
    dumps = []
    for i, (url, exports) in enumerate(runs):
        loaded, path = write_config(tmp_path / str(i), exports)
        facts = collect_all(url, [(loaded, path)], connect_timeout_s=2)
        for name, entry in facts.configs[loaded.path].exports.items():
            if name != "ok":
                assert entry.preflight_error, name
        dumps.append(facts.model_dump_json())
        dumps.append(json.dumps(facts.model_dump(mode="json")))
    captured = capsys.readouterr()
    haystack = "\n".join([*dumps, caplog.text, captured.out, captured.err]).lower()
    assert "***" in haystack  # something was masked
    for value in secrets:
        assert value.lower() not in haystack, value
