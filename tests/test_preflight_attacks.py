"""Issue 9's attacks on live preflight, reproduced against real PostgreSQL and MariaDB.

- Full scans: a partitioned table whose partitions are each under the probe bound, a join of
  two unindexed tables, a view over them and a table just under the bound (estimate error) are
  never read in full — asserted from the servers' own statistics, not from our facts.
- Source data in outputs: a query whose EXPLAIN fails with a message quoting data (a setting's
  value in a cast error, MariaDB's `extractvalue` XPath error running a subquery) publishes only
  the error's class.
- A connection killed mid-run is replaced; exports after it still get facts.

Sizes are scaled to a probe bound of 100,000 rows (the default is 1,000,000): the guard is
relative to the bound, so the same mechanism is exercised with a tenth of the data.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from support.db_seed import collect, collect_all, engine, write_config

BOUND = 100_000
ATTACK_DB = "rivet_attacks"
# (table, rows) read in full by no probe.
PG_LARGE = ["part_p0", "part_p1", "part_p2", "part_p3", "join_a", "join_b", "near_bound"]
MY_LARGE = ["part", "join_a", "join_b", "near_bound"]

PG_SCHEMA = """
SET default_statistics_target = 1000;
CREATE TABLE part (id bigint NOT NULL, v int NOT NULL) PARTITION BY HASH (id);
CREATE TABLE part_p0 PARTITION OF part FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE part_p1 PARTITION OF part FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE part_p2 PARTITION OF part FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE part_p3 PARTITION OF part FOR VALUES WITH (MODULUS 4, REMAINDER 3);
INSERT INTO part SELECT g, g % 1000 FROM generate_series(1, 160000) g;  -- 4 x ~40k
CREATE TABLE join_a (id bigint NOT NULL, v int NOT NULL);
INSERT INTO join_a SELECT g, g % 1000 FROM generate_series(1, 90000) g;
CREATE TABLE join_b (id bigint NOT NULL, w int NOT NULL);
INSERT INTO join_b SELECT g, g % 1000 FROM generate_series(1, 90000) g;
CREATE VIEW joined AS SELECT a.id, a.v, b.w FROM join_a a JOIN join_b b ON b.id = a.id;
CREATE TABLE near_bound (id bigint NOT NULL, v int NOT NULL);
INSERT INTO near_bound SELECT g, g % 1000 FROM generate_series(1, 99000) g;
CREATE TABLE small_noidx (id bigint NOT NULL, v int NOT NULL);
INSERT INTO small_noidx SELECT g, g % 1000 FROM generate_series(1, 1000) g;
CREATE TABLE indexed (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL);
INSERT INTO indexed SELECT g, timestamptz '2024-01-01' + g * interval '1 min'
  FROM generate_series(1, 5000) g;
CREATE INDEX indexed_updated_at ON indexed (updated_at);
ANALYZE;
"""

MY_SCHEMA = [
    "CREATE TABLE part (id BIGINT NOT NULL, v INT NOT NULL) PARTITION BY HASH (id) PARTITIONS 4",
    "INSERT INTO part SELECT seq, seq % 1000 FROM seq_1_to_160000",
    "CREATE TABLE join_a (id BIGINT NOT NULL, v INT NOT NULL)",
    "INSERT INTO join_a SELECT seq, seq % 1000 FROM seq_1_to_90000",
    "CREATE TABLE join_b (id BIGINT NOT NULL, w INT NOT NULL)",
    "INSERT INTO join_b SELECT seq, seq % 1000 FROM seq_1_to_90000",
    "CREATE VIEW joined AS SELECT a.id, a.v, b.w FROM join_a a JOIN join_b b ON b.id = a.id",
    # InnoDB estimates it a little off its true size (either way): under the bound it may be.
    "CREATE TABLE near_bound (id BIGINT NOT NULL, v INT NOT NULL)",
    "INSERT INTO near_bound SELECT seq, seq % 1000 FROM seq_1_to_99000",
    "CREATE TABLE small_noidx (id BIGINT NOT NULL, v INT NOT NULL)",
    "INSERT INTO small_noidx SELECT seq, seq % 1000 FROM seq_1_to_1000",
    "CREATE TABLE indexed (id BIGINT PRIMARY KEY, updated_at DATETIME NOT NULL,"
    " KEY (updated_at))",
    "INSERT INTO indexed SELECT seq, TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq MINUTE"
    " FROM seq_1_to_5000",
    "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
    "INSERT INTO customers SELECT seq, CONCAT('customer ', seq) FROM seq_1_to_100",
    "ANALYZE TABLE part, join_a, join_b, near_bound, small_noidx, indexed, customers",
]

EXPORTS: list[dict[str, Any]] = [
    # Each partition (~40k) is under the bound; together (160k) they are over it.
    {"name": "partitioned", "table": "part", "mode": "incremental", "cursor_column": "v"},
    # A filtered query over it: a small estimate, but the probe would read every partition.
    {"name": "partitioned_query", "mode": "incremental", "cursor_column": "v",
     "query": "SELECT id, v FROM part WHERE v = 3"},
    # A join of two unindexed 90k tables: as a query and as a view, never run.
    {"name": "join_query", "mode": "incremental", "cursor_column": "v",
     "query": "SELECT a.id, a.v, b.w FROM join_a a JOIN join_b b ON b.id = a.id WHERE a.v < 5"},
    {"name": "join_view", "table": "joined", "mode": "incremental", "cursor_column": "v"},
    # 99k rows: under the bound by the estimate, but inside the margin kept for estimate error.
    {"name": "near", "table": "near_bound", "mode": "chunked", "chunk_column": "id"},
    # Probed: a small unindexed table, and an indexed one asked for by three exports.
    {"name": "small", "table": "small_noidx", "mode": "chunked", "chunk_column": "id"},
    {"name": "by_updated", "table": "indexed", "mode": "incremental",
     "cursor_column": "updated_at"},
    {"name": "by_id", "table": "indexed", "mode": "chunked", "chunk_column": "id"},
    {"name": "by_id_again", "table": "indexed", "mode": "chunked", "chunk_column": "id",
     "chunk_size": 10},
]


@pytest.fixture(scope="module")
def pg_attack(pg_url: str) -> Iterator[str]:
    admin = engine(pg_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {ATTACK_DB} WITH (FORCE)")
        conn.exec_driver_sql(f"CREATE DATABASE {ATTACK_DB}")
    admin.dispose()
    url = make_url(pg_url).set(database=ATTACK_DB)
    db = engine(url)
    with db.connect() as conn:
        conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute(PG_SCHEMA)
    db.dispose()
    yield url.render_as_string(hide_password=False)


@pytest.fixture(scope="module")
def my_attack(mysql_url: str) -> Iterator[str]:
    admin = engine(mysql_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {ATTACK_DB}")
        conn.exec_driver_sql(f"CREATE DATABASE {ATTACK_DB}")
    admin.dispose()
    url = make_url(mysql_url).set(database=ATTACK_DB)
    db = engine(url)
    with db.connect() as conn:
        for statement in MY_SCHEMA:
            conn.exec_driver_sql(statement, execution_options={"no_parameters": True})
    db.dispose()
    yield url.render_as_string(hide_password=False)


def _pg_rows_read(url: str) -> dict[str, tuple[int, int]]:
    """(seq_scan, seq_tup_read) per table, from PostgreSQL's own statistics."""
    db = engine(url)
    try:
        with db.connect() as conn:
            conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
            rows = conn.exec_driver_sql(
                "SELECT relname, seq_scan, seq_tup_read FROM pg_stat_user_tables").all()
    finally:
        db.dispose()
    return {str(name): (int(scans), int(read)) for name, scans, read in rows}


def _assert_facts(facts: dict[str, object]) -> None:
    from rivet_ci.core.facts.models import ExportFacts

    got = {name: f for name, f in facts.items() if isinstance(f, ExportFacts)}
    assert {n: f.preflight_error for n, f in got.items() if f.preflight_error} == {}
    partitioned = got["partitioned"].columns["v"]
    assert partitioned.min is None and partitioned.range_skipped is not None
    assert "over 50000" in partitioned.range_skipped, partitioned.range_skipped
    # A query's (and a view's) range statement is EXPLAINed first: reading every partition or
    # both sides of the join in full is over the bound, so it never runs.
    for name in ("join_query", "partitioned_query", "join_view"):
        skipped = got[name].columns["v"]
        assert skipped.min is None and "over 50000" in (skipped.range_skipped or ""), name
    near = got["near"].columns["id"]
    assert near.min is None and "over 50000" in (near.range_skipped or ""), near
    assert (got["small"].columns["id"].min, got["small"].columns["id"].max) == ("1", "1000")
    assert got["by_updated"].columns["updated_at"].min is not None
    assert got["by_id"].columns["id"].max == got["by_id_again"].columns["id"].max == "5000"


@pytest.mark.postgres
def test_postgres_reads_no_large_table_in_full(pg_attack: str, tmp_path: Path) -> None:
    before = _pg_rows_read(pg_attack)
    db = engine(pg_attack)
    with db.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
    facts = collect(pg_attack, tmp_path, EXPORTS, range_probe_row_bound=BOUND)
    with db.connect() as conn:
        statements = conn.exec_driver_sql(
            "SELECT s.query, s.calls FROM pg_stat_statements s JOIN pg_database d "
            "ON d.oid = s.dbid WHERE d.datname = current_database() AND s.toplevel").all()
        # A control scan proves the statistics of the finished session have arrived.
        conn.exec_driver_sql("SET max_parallel_workers_per_gather = 0")
        conn.exec_driver_sql("SELECT count(*) FROM small_noidx").scalar()
    db.dispose()
    _assert_facts(dict(facts))
    deadline = time.monotonic() + 10
    after = _pg_rows_read(pg_attack)
    while after["small_noidx"][0] < before["small_noidx"][0] + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        after = _pg_rows_read(pg_attack)
    # small_noidx: preflight's min/max and the control, both full scans of 1,000 rows.
    assert after["small_noidx"][1] - before["small_noidx"][1] == 2000
    for table in PG_LARGE:
        assert after[table] == before[table], (table, before[table], after[table])
    # One min/max statement per table: `indexed` serves three exports with one statement.
    # (The range statements over the queries and the view were only EXPLAINed.)
    minmax = {str(q): int(n) for q, n in statements
              if "min(" in str(q).lower() and not str(q).startswith("EXPLAIN")}
    assert sum(minmax.values()) == 2, minmax
    assert sum(n for q, n in minmax.items() if "FROM indexed" in q) == 1


@pytest.mark.mariadb
def test_mariadb_reads_no_large_table_in_full(my_attack: str, tmp_path: Path) -> None:
    db = engine(my_attack)
    with db.connect() as conn:
        conn.exec_driver_sql("SET GLOBAL userstat = 1")
        conn.exec_driver_sql("FLUSH TABLE_STATISTICS")
    try:
        facts = collect(my_attack, tmp_path, EXPORTS, range_probe_row_bound=BOUND)
        with db.connect() as conn:
            read = {str(t): int(n) for t, n in conn.execute(sa.text(
                "SELECT table_name, rows_read FROM information_schema.TABLE_STATISTICS "
                "WHERE table_schema = :db"), {"db": ATTACK_DB}).all()}
    finally:
        with db.connect() as conn:
            conn.exec_driver_sql("SET GLOBAL userstat = 0")
        db.dispose()
    _assert_facts(dict(facts))
    for table in MY_LARGE:
        assert read.get(table, 0) == 0, (table, read)
    assert read.get("small_noidx") == 1000  # the one probed full scan, of a small table
    assert read.get("indexed", 0) <= 4  # both ends of two indexes, nothing more


@pytest.mark.postgres
def test_postgres_query_error_publishes_only_its_class(pg_attack: str, tmp_path: Path) -> None:
    db = engine(pg_attack)
    with db.connect() as conn:
        data_directory = str(conn.exec_driver_sql("SHOW data_directory").scalar())
    db.dispose()
    # The planner evaluates the stable cast to estimate selectivity: the error quotes the value.
    facts = collect(pg_attack, tmp_path, [
        {"name": "setting", "query": "SELECT * FROM indexed "
                                     "WHERE id = CAST(current_setting('data_directory') AS int)"},
        {"name": "missing_table", "table": "no_such_table"},
    ])
    error = facts["setting"].preflight_error
    assert error == ("EXPLAIN failed: InvalidTextRepresentation (SQLSTATE 22P02) (the "
                     "database's message is not published for a query)")
    dump = "".join(f.model_dump_json() for f in facts.values())
    assert data_directory not in dump
    # A `table:` export's error names only what the config named: its message is kept.
    assert "no_such_table" in (facts["missing_table"].preflight_error or "")


@pytest.mark.mariadb
def test_mariadb_xpath_error_does_not_leak_a_row(my_attack: str, tmp_path: Path) -> None:
    # EXPLAIN runs the constant subquery; extractvalue's XPath error would quote its result.
    loaded, path = write_config(tmp_path, [
        {"name": "xpath", "query": "SELECT id FROM customers WHERE id = extractvalue(1, "
                                   "concat(0x7e, (SELECT name FROM customers WHERE id = 7)))"},
    ], source={"type": "mysql", "url_env": "SRC_URL"})
    facts = collect_all(my_attack, [(loaded, path)])
    entry = facts.configs[loaded.path].exports["xpath"]
    assert entry.preflight_error is not None
    assert "OperationalError (error 1105, SQLSTATE HY000)" in entry.preflight_error
    assert "customer 7" not in facts.model_dump_json()


@pytest.mark.postgres
def test_a_connection_killed_mid_run_is_replaced(pg_attack: str, tmp_path: Path) -> None:
    db = engine(pg_attack)
    with db.connect() as conn:
        for i in range(8):
            conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS kill_{i} (id int PRIMARY KEY)")
            conn.exec_driver_sql(f"INSERT INTO kill_{i} VALUES (1), (2) ON CONFLICT DO NOTHING")
    killed: list[int] = []

    def progress(done: int, total: int) -> None:
        if done == 2:  # on the worker, between two min/max probes
            with db.connect() as conn:
                killed.append(int(conn.exec_driver_sql(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = 'rivet-ci-preflight'").scalar_one()))

    loaded, path = write_config(tmp_path, [
        {"name": f"k{i}", "table": f"kill_{i}", "mode": "chunked", "chunk_column": "id"}
        for i in range(8)])
    try:
        facts = collect_all(pg_attack, [(loaded, path)], progress=progress).configs[
            loaded.path].exports
    finally:
        db.dispose()
    assert killed == [1]
    failed = {n: f.preflight_error for n, f in facts.items() if f.preflight_error}
    assert len(failed) <= 1, failed  # at most the probe that met the dead connection
    assert all(facts[f"k{i}"].columns["id"].max == "2" for i in range(8)
               if f"k{i}" not in failed)
    assert facts["k7"].columns["id"].max == "2"  # a fresh connection served the rest


@pytest.mark.parametrize("db", [
    pytest.param("pg_attack", marks=pytest.mark.postgres, id="postgres"),
    pytest.param("my_attack", marks=pytest.mark.mariadb, id="mariadb"),
])
def test_a_huge_plan_is_refused_and_the_connection_goes_on(
        db: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = request.getfixturevalue(db)
    # ~120 kB of SQL that plans into megabytes of JSON: 4,000 branches of a UNION ALL.
    huge = " UNION ALL ".join(f"SELECT id, updated_at FROM indexed WHERE id = {i}"
                              for i in range(4000))
    source = {"type": "mysql" if db == "my_attack" else "postgres", "url_env": "SRC_URL"}
    loaded, path = write_config(tmp_path, [
        {"name": "huge", "query": huge},
        {"name": "next", "table": "indexed", "mode": "chunked", "chunk_column": "id"},
        {"name": "next_query", "query": "SELECT id FROM indexed WHERE id < 10"},
    ], source=source)
    facts = collect_all(url, [(loaded, path)], statement_timeout_s=30).configs[
        loaded.path].exports
    error = facts["huge"].preflight_error or ""
    assert "EXPLAIN output of" in error and "over the limit of 1000000" in error, error
    assert facts["next"].preflight_error is None, facts["next"].preflight_error
    assert facts["next"].columns["id"].max == "5000"
    assert facts["next_query"].preflight_error is None
    assert facts["next_query"].row_estimate is not None
