"""Source catalog capture of a 500-table schema on real PostgreSQL and MariaDB: time, the
statements the servers count, and proof from their own statistics that no table is read.

Seeds 500 tables (`id` primary key, an indexed `updated_at`, an unindexed `payload`; 200 rows
each) and one unindexed 300,000-row `big`, then runs `rivet-ci facts` as a whole process twice
on a config with one export: with the catalog (every relation of the schema) and with
`--no-catalog`. Reported side by side with the floor, measured in the same run: the statements
the catalog needs (one listing, one key lookup, one min/max per table over its index-leading
integer and temporal columns) sent on one connection by a bare driver loop.

Counted by the servers: PostgreSQL `pg_stat_statements` (top-level, this database); MariaDB the
general query log (the capture's connections only). No full scan: PostgreSQL
`pg_stat_user_tables.seq_tup_read` unchanged for every table; MariaDB
`information_schema.TABLE_STATISTICS.rows_read` at most 2 per probed index end.

    .venv/bin/python benchmarks/bench_catalog_capture.py --pg-url URL --mysql-url URL
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa
import yaml
from sqlalchemy.pool import NullPool

REPO = Path(__file__).resolve().parent.parent
TABLES = 500
ROWS = 200
BIG = 300_000
DB = "rivet_bench_catalog"


def engine(url: str | sa.URL) -> sa.Engine:
    return sa.create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")


def seed_pg(admin_url: str) -> sa.URL:
    admin = engine(admin_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.exec_driver_sql(f"CREATE DATABASE {DB}")
    admin.dispose()
    url = sa.make_url(admin_url).set(database=DB)
    db = engine(url)
    with db.connect() as conn:
        conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.exec_driver_sql(f"""DO $$ BEGIN FOR i IN 0..{TABLES - 1} LOOP
          EXECUTE format('CREATE TABLE t%s (id bigint PRIMARY KEY, updated_at timestamptz
            NOT NULL, payload text)', lpad(i::text, 3, '0'));
          EXECUTE format('CREATE INDEX ON t%s (updated_at)', lpad(i::text, 3, '0'));
          EXECUTE format('INSERT INTO t%s SELECT g, timestamptz ''2024-01-01'' + g *
            interval ''1 hour'', ''p'' FROM generate_series(1, {ROWS}) g',
            lpad(i::text, 3, '0'));
        END LOOP; END $$""", execution_options={"no_parameters": True})
        conn.exec_driver_sql(f"CREATE TABLE big (id bigint NOT NULL, v int) ; INSERT INTO big "
                             f"SELECT g, mod(g, 9) FROM generate_series(1, {BIG}) g")
        conn.exec_driver_sql("ANALYZE")
    db.dispose()
    return url


def seed_my(admin_url: str) -> sa.URL:
    admin = engine(admin_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {DB}")
        conn.exec_driver_sql(f"CREATE DATABASE {DB}")
    admin.dispose()
    url = sa.make_url(admin_url).set(database=DB)
    db = engine(url)
    with db.connect() as conn:
        for i in range(TABLES):
            conn.exec_driver_sql(f"CREATE TABLE t{i:03d} (id BIGINT PRIMARY KEY, updated_at "
                                 f"DATETIME NOT NULL, payload VARCHAR(10), KEY (updated_at))")
            conn.exec_driver_sql(f"INSERT INTO t{i:03d} SELECT seq, TIMESTAMP '2024-01-01 "
                                 f"00:00:00' + INTERVAL seq HOUR, 'p' FROM seq_1_to_{ROWS}")
        conn.exec_driver_sql(f"CREATE TABLE big (id BIGINT NOT NULL, v INT) SELECT seq AS id, "
                             f"MOD(seq, 9) AS v FROM seq_1_to_{BIG}")
    db.dispose()
    return url


def run_facts(url: sa.URL, kind: str, work: Path, *extra: str) -> tuple[float, dict[str, object]]:
    config = {"source": {"type": kind, "url_env": "BENCH_URL"},
              "exports": [{"name": "t000", "table": "t000", "mode": "full",
                           "format": "parquet", "destination": {"type": "local"}}]}
    (work / "rivet.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "BENCH_URL": url.render_as_string(hide_password=False),
           "PYTHONPATH": str(REPO)}  # this checkout's code
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rivet_ci", "facts", "rivet.yaml", "--output",
                           "facts.json", *extra], cwd=work, env=env, capture_output=True,
                          text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return elapsed, json.loads((work / "facts.json").read_text())


def pg_reads(db: sa.Engine) -> dict[str, int]:
    with db.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
        return {str(n): int(r) for n, r in conn.exec_driver_sql(
            "SELECT relname, seq_tup_read FROM pg_stat_user_tables").all()}


def bench_pg(admin_url: str, work: Path) -> None:
    url = seed_pg(admin_url)
    db = engine(url)
    before = pg_reads(db)
    with db.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
    with_catalog, facts = run_facts(url, "postgres", work)
    time.sleep(1.0)  # the statistics collector's report interval
    with db.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT s.query, s.calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = "
            "s.dbid WHERE d.datname = current_database() AND s.toplevel AND s.query NOT LIKE "
            "'%%pg_stat_statements%%'").all()
    after = pg_reads(db)
    without, _ = run_facts(url, "postgres", work, "--no-catalog")
    relations = len(facts["catalog"][0]["relations"])  # type: ignore[index]
    minmax = sum(int(n) for q, n in rows if "min(" in str(q).lower())
    total = sum(int(n) for _, n in rows)
    scanned = {t: after[t] - before.get(t, 0) for t in after if after[t] != before.get(t, 0)}
    # The floor: the catalog's statements on one connection, by a bare driver loop.
    started = time.perf_counter()
    with db.connect() as conn:
        conn.exec_driver_sql("SELECT count(*) FROM pg_class c JOIN pg_attribute a ON "
                             "a.attrelid = c.oid").all()
        for i in range(TABLES):
            conn.exec_driver_sql(f"SELECT min(id), max(id), min(updated_at), max(updated_at) "
                                 f"FROM t{i:03d}").all()
    floor = time.perf_counter() - started
    db.dispose()
    print(f"PostgreSQL: {relations} relations catalogued; "
          f"`rivet-ci facts` {with_catalog:.2f} s with the catalog, {without:.2f} s without "
          f"(catalog: {with_catalog - without:.2f} s; floor of its statements: {floor:.2f} s); "
          f"{total} statements counted, {minmax} min/max; seq_tup_read changed: {scanned}")


def bench_my(admin_url: str, work: Path) -> None:
    url = seed_my(admin_url)
    db = engine(url)
    with db.connect() as conn:
        conn.exec_driver_sql("SET GLOBAL userstat = 1")
        conn.exec_driver_sql("FLUSH TABLE_STATISTICS")
        own = int(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one())
        conn.exec_driver_sql("TRUNCATE TABLE mysql.general_log")
        conn.exec_driver_sql("SET GLOBAL log_output = 'TABLE', general_log = 1")
    try:
        with_catalog, facts = run_facts(url, "mysql", work)
        with db.connect() as conn:
            conn.exec_driver_sql("SET GLOBAL general_log = 0")
            logged = conn.exec_driver_sql(
                "SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) "
                "FROM mysql.general_log").all()
            read = {str(t): int(n) for t, n in conn.exec_driver_sql(
                f"SELECT table_name, rows_read FROM information_schema.TABLE_STATISTICS "
                f"WHERE table_schema = '{DB}'").all()}
    finally:
        with db.connect() as conn:
            conn.exec_driver_sql("SET GLOBAL general_log = 0, userstat = 0")
    without, _ = run_facts(url, "mysql", work, "--no-catalog")
    queries = [str(a) for t, c, a in logged if int(t) != own and c == "Query"]
    minmax = sum(1 for q in queries if "min(" in q.lower())
    relations = len(facts["catalog"][0]["relations"])  # type: ignore[index]
    over = {t: n for t, n in read.items() if n > 4}
    started = time.perf_counter()
    with db.connect() as conn:
        conn.exec_driver_sql(f"SELECT count(*) FROM information_schema.COLUMNS WHERE "
                             f"table_schema = '{DB}'").all()
        for i in range(TABLES):
            conn.exec_driver_sql(f"SELECT min(id), max(id), min(updated_at), max(updated_at) "
                                 f"FROM t{i:03d}").all()
    floor = time.perf_counter() - started
    db.dispose()
    print(f"MariaDB: {relations} relations catalogued; "
          f"`rivet-ci facts` {with_catalog:.2f} s with the catalog, {without:.2f} s without "
          f"(catalog: {with_catalog - without:.2f} s; floor of its statements: {floor:.2f} s); "
          f"{len(queries)} queries logged, {minmax} min/max; big rows_read "
          f"{read.get('big', 0)}; tables read beyond their index ends: {over}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-url", default=os.environ.get("RIVET_CI_TEST_PG_URL"))
    parser.add_argument("--mysql-url", default=os.environ.get("RIVET_CI_TEST_MYSQL_URL"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-catalog-") as tmp:
        if args.pg_url:
            bench_pg(args.pg_url, Path(tmp))
        if args.mysql_url:
            bench_my(args.mysql_url, Path(tmp))


if __name__ == "__main__":
    main()
