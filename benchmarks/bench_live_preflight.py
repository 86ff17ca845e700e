"""Live preflight benchmark: statements a collection costs on real PostgreSQL and MariaDB,
counted by the servers themselves and reported side by side with the floor.

Seeds the same shapes on both servers (40 small indexed tables, an indexed 300k-row `orders`, an
unindexed 300k-row `events`, an unindexed 1.2M-row `big`) and writes 200 distinct exports over 4
config files in 4 `source_group`s:

- 80 table exports over the 40 small tables (two per table: incremental on `updated_at` and
  chunked on `id`) — one EXPLAIN and ONE min/max per table serve both;
- 117 query exports: 39 served by an index of `orders`, 39 chunked queries over `events`, 39
  filtered snapshots of `orders`, and 2 incremental queries over `big`. A query's range is read
  as rivet reads it, `SELECT min(c), max(c) FROM (<query>) AS _rivet`, EXPLAINed first and run
  only when bounded: the `orders` ones (an index) and the `events` ones (300k rows, under half
  the probe bound) run, the `big` ones (1.2M rows) are EXPLAIN-only;
- a chunked table export over the 1.2M-row `big` (min/max skipped: it would be a full scan).

The floor is what cannot be avoided: one EXPLAIN per distinct query (an incremental export's is
its ordered read, `... ORDER BY <cursor>`, as rivet EXPLAINs it), one min/max statement per
table whose range is probed, and per distinct query with a range column the EXPLAIN of its range
statement plus, where that plan is bounded, the statement. Counted:

- PostgreSQL: `pg_stat_statements` (reset first), top-level statements of the role preflight
  connects as (`rivet_bench_reader`, so the benchmark's own statements are not counted);
- MariaDB: the general query log (`log_output=TABLE`), every command but those of the
  benchmark's own reset/count connections and the connect/quit handshakes (reported apart).

Both runs are repeated with base and head configs of a PR (every export twice, as the action's
one collection sees them): identical probes run once, so the count must not grow.

Target: at most 0.2 statements per distinct export above the floor on each server (session
set-up, catalog, transactions). Exits 1 when missed.

    .venv/bin/python benchmarks/bench_live_preflight.py        # throwaway servers on free ports
    .venv/bin/python benchmarks/bench_live_preflight.py --pg-url URL --mysql-url URL
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from rivet_ci.adapters.preflight.collect import PreflightOptions, collect_facts
from rivet_ci.core.config.loader import LoadedConfig, load_config_text

REPO = Path(__file__).resolve().parent.parent
PER_FILE = 50
SMALL_TABLES = 40
TARGET_OVER_FLOOR = 0.2
BENCH_DB = "rivet_bench"

PG_SEED = f"""
SET default_statistics_target = 1000;
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL, amount int NOT NULL,
  updated_at timestamptz NOT NULL);
INSERT INTO orders SELECT g, g % 5000, g % 997, timestamptz '2024-01-01' + g * interval '1 min'
  FROM generate_series(1, 300000) g;
CREATE INDEX orders_updated_at ON orders (updated_at);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE TABLE big (id bigint NOT NULL, created_at timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO big SELECT g, timestamptz '2020-01-01' + g * interval '1 min', g % 997
  FROM generate_series(1, 1200000) g;
CREATE TABLE events (id bigint NOT NULL, ts timestamptz NOT NULL, kind int NOT NULL);
INSERT INTO events SELECT g, timestamptz '2024-01-01' + g * interval '1 s', g % 7
  FROM generate_series(1, 300000) g;
DO $$ BEGIN
  FOR i IN 0..{SMALL_TABLES - 1} LOOP
    EXECUTE format('CREATE TABLE small_%s (id int PRIMARY KEY, updated_at timestamptz NOT NULL)',
                   i);
    EXECUTE format('CREATE INDEX ON small_%s (updated_at)', i);
    EXECUTE format('INSERT INTO small_%s SELECT g, now() - g * interval ''1 h''
                    FROM generate_series(1, 2000) g', i);
  END LOOP;
END $$;
ANALYZE;
DROP ROLE IF EXISTS rivet_bench_reader;
CREATE ROLE rivet_bench_reader LOGIN;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO rivet_bench_reader;
"""

MY_SEED = [
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, amount INT NOT NULL,"
    " updated_at DATETIME NOT NULL, KEY orders_updated_at (updated_at),"
    " KEY orders_customer (customer_id))",
    "INSERT INTO orders SELECT seq, seq % 5000, seq % 997,"
    " TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq MINUTE FROM seq_1_to_300000",
    "CREATE TABLE big (id BIGINT NOT NULL, created_at DATETIME NOT NULL, amount INT NOT NULL)",
    "INSERT INTO big SELECT seq, TIMESTAMP '2020-01-01 00:00:00' + INTERVAL seq MINUTE,"
    " seq % 997 FROM seq_1_to_1200000",
    "CREATE TABLE events (id BIGINT NOT NULL, ts DATETIME NOT NULL, kind INT NOT NULL)",
    "INSERT INTO events SELECT seq, TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND,"
    " seq % 7 FROM seq_1_to_300000",
    *[statement for i in range(SMALL_TABLES) for statement in (
        f"CREATE TABLE small_{i} (id INT PRIMARY KEY, updated_at DATETIME NOT NULL,"
        f" KEY (updated_at))",
        f"INSERT INTO small_{i} SELECT seq, NOW() - INTERVAL seq HOUR FROM seq_1_to_2000")],
    "ANALYZE TABLE orders, big, events",
]


def exports() -> list[dict[str, Any]]:
    """200 distinct exports (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for t in range(SMALL_TABLES):
        group = f"g{t % 4}"
        out.append({"name": f"s{t:02d}_inc", "table": f"small_{t}", "mode": "incremental",
                    "cursor_column": "updated_at", "source_group": group})
        out.append({"name": f"s{t:02d}_chunk", "table": f"small_{t}", "mode": "chunked",
                    "chunk_column": "id", "chunk_size": 500, "source_group": group})
    for i in range(39):
        group = f"g{i % 4}"
        out.append({"name": f"q{i:02d}_idx", "mode": "incremental", "cursor_column": "updated_at",
                    "source_group": group,
                    "query": f"SELECT id, amount, updated_at FROM orders WHERE customer_id = {i}"})
        out.append({"name": f"q{i:02d}_chunk", "mode": "chunked", "chunk_column": "id",
                    "chunk_size": 50_000, "source_group": group,
                    "query": f"SELECT id, ts FROM events WHERE kind = {i % 7} AND id > {i}"})
        out.append({"name": f"q{i:02d}_snap", "source_group": group,
                    "query": f"SELECT * FROM orders WHERE amount BETWEEN {i} AND {i + 50}"})
    for i in range(2):
        out.append({"name": f"q{i:02d}_big", "mode": "incremental", "cursor_column": "created_at",
                    "query": f"SELECT id, created_at FROM big WHERE amount <> {i}"})
    out.append({"name": "big_chunk", "table": "big", "mode": "chunked", "chunk_column": "id",
                "chunk_size": 100_000})
    assert len(out) == 200 and len({e["name"] for e in out}) == 200
    # rivet requires these of every export; preflight does not read them.
    return [{**e, "format": "parquet", "destination": {"type": "local"}} for e in out]


def floor(specs: list[dict[str, Any]]) -> int:
    """One EXPLAIN per distinct query + one min/max per small table (the only cheap table
    ranges) + per distinct query with a range column: its range statement's EXPLAIN, and the
    statement where it is bounded (every one but those over `big`)."""
    # An incremental export is EXPLAINed as rivet reads it, ordered by its cursor: a statement
    # of its own.
    queries = {(s.get("query") or f"table:{s['table']}",
                s.get("cursor_column") if s.get("mode") == "incremental" else None)
               for s in specs}
    ranged = {(s["query"], bool("FROM big" not in s["query"])) for s in specs
              if s.get("query") and (s.get("cursor_column") or s.get("chunk_column"))}
    return len(queries) + SMALL_TABLES + len(ranged) + sum(1 for _, runs in ranged if runs)


def write_configs(directory: Path, specs: list[dict[str, Any]], source_type: str,
                  ) -> list[tuple[LoadedConfig, Path]]:
    directory.mkdir(parents=True, exist_ok=True)
    configs = []
    for n in range(0, len(specs), PER_FILE):
        path = directory / f"c{n // PER_FILE}.yaml"
        document = {"source": {"type": source_type, "url_env": "BENCH_URL"},
                    "exports": specs[n:n + PER_FILE]}
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        loaded = load_config_text(path.name, path.read_text(encoding="utf-8"), {})
        assert not [p for p in loaded.problems if p.severity == "error"], loaded.problems
        configs.append((loaded, path))
    return configs


def admin(url: str | sa.URL) -> sa.Engine:
    return sa.create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")


# --- servers -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Servers:
    """Throwaway servers on free ports in a directory of this run's own (stopped at the end)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="rivet-ci-bench-"))
        self.root.chmod(0o755)
        self.started: list[tuple[str, Path]] = []

    def start(self, kind: str) -> str:
        script = "pg-start.sh" if kind == "pg" else "mariadb-start.sh"
        root = self.root / kind
        port = str(free_port())
        env = {**os.environ, "PGPORT": port, "PG_ROOT": str(root), "MY_PORT": port,
               "MY_ROOT": str(root)}
        done = subprocess.run(["bash", str(REPO / ".ci" / script)], env=env, text=True,
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"cannot start {kind}: {done.stderr.strip()[-500:]}")
        self.started.append((kind, root))
        return done.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        for kind, root in self.started:
            script = "pg-stop.sh" if kind == "pg" else "mariadb-stop.sh"
            subprocess.run(["bash", str(REPO / ".ci" / script)], check=False,
                           capture_output=True, env={**os.environ, "PG_ROOT": str(root),
                                                     "MY_ROOT": str(root)})
        shutil.rmtree(self.root, ignore_errors=True)


# --- PostgreSQL --------------------------------------------------------------------------------


def pg_seed(server_url: str) -> sa.URL:
    engine = admin(server_url)
    with engine.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        conn.exec_driver_sql(f"CREATE DATABASE {BENCH_DB}")
    engine.dispose()
    url = make_url(server_url).set(database=BENCH_DB)
    db = admin(url)
    with db.connect() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute(PG_SEED)
    db.dispose()
    return url


_pg_sessions = [0]


def pg_sessions(conn: sa.Connection) -> int:
    return int(conn.exec_driver_sql(
        "SELECT sessions FROM pg_stat_database WHERE datname = current_database()").scalar()
        or 0)


def pg_reset(url: sa.URL) -> None:
    db = admin(url)
    with db.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
        conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
        _pg_sessions[0] = pg_sessions(conn) + 1  # this one ends after the reading
    db.dispose()


def pg_count(url: sa.URL) -> Counter[str]:
    db = admin(url)
    with db.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT s.query, s.calls FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid "
            "JOIN pg_roles r ON r.oid = s.userid "
            "WHERE d.datname = current_database() AND s.toplevel "
            "AND r.rolname = 'rivet_bench_reader'")).all()
        sessions = pg_sessions(conn) - _pg_sessions[0]
    db.dispose()
    kinds: Counter[str] = Counter()
    for query, calls in rows:
        kinds[kind_of(query)] += int(calls)
    kinds["(sessions, not statements)"] = sessions
    return kinds


# --- MariaDB -----------------------------------------------------------------------------------


def my_seed(server_url: str) -> sa.URL:
    engine = admin(server_url)
    with engine.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {BENCH_DB}")
        conn.exec_driver_sql(f"CREATE DATABASE {BENCH_DB}")
        conn.exec_driver_sql("SET GLOBAL log_output = 'TABLE'")
    engine.dispose()
    url = make_url(server_url).set(database=BENCH_DB)
    db = admin(url)
    with db.connect() as conn:
        for statement in MY_SEED:
            conn.exec_driver_sql(statement, execution_options={"no_parameters": True})
    db.dispose()
    return url


_my_admin_threads: set[int] = set()


def my_reset(url: sa.URL) -> None:
    db = admin(url)
    with db.connect() as conn:
        _my_admin_threads.add(int(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one()))
        conn.exec_driver_sql("SET GLOBAL general_log = 0")
        conn.exec_driver_sql("TRUNCATE TABLE mysql.general_log")
        conn.exec_driver_sql("SET GLOBAL general_log = 1")
    db.dispose()


def my_count(url: sa.URL) -> Counter[str]:
    """Commands logged since the reset, but the reset's and this one's own connections."""
    db = admin(url)
    with db.connect() as conn:
        conn.exec_driver_sql("SET GLOBAL general_log = 0")
        _my_admin_threads.add(int(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one()))
        rows = conn.execute(sa.text(
            "SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) "
            "FROM mysql.general_log")).all()
    db.dispose()
    statements = [(command, argument) for thread, command, argument in rows
                  if int(thread) not in _my_admin_threads]
    kinds: Counter[str] = Counter()
    for command, argument in statements:
        if command in ("Connect", "Quit"):
            kinds[f"({command.lower()}, not statements)"] += 1
        elif command == "Query":
            kinds[kind_of(argument or "")] += 1
        else:
            kinds[f"command {command}"] += 1
    return kinds


def kind_of(query: str) -> str:
    text = " ".join(query.split()).lower()
    if text.startswith("explain"):
        return "EXPLAIN"
    if "min(" in text:
        return "min/max"
    if "pg_attribute" in text or "information_schema" in text:
        return "catalog"
    if text.startswith(("begin", "commit", "rollback", "start transaction", "set transaction",
                        "savepoint", "release")):
        return "transaction control"
    if "set_config" in text or text.startswith("set ") or "max_connections" in text:
        return "session setup"
    return "driver/dialect start-up"


# --- the run -----------------------------------------------------------------------------------


def run(name: str, url: sa.URL, source_type: str, *, reset: Callable[[], None],
        count: Callable[[], Counter[str]], tmp: Path) -> float:
    specs = exports()
    single = write_configs(tmp / name / "one", specs, source_type)
    both = (write_configs(tmp / name / "base", specs, source_type)
            + write_configs(tmp / name / "head", specs, source_type))
    env = {"BENCH_URL": url.render_as_string(hide_password=False)}
    per_export = 0.0
    for label, configs in (("distinct exports", single), ("base + head (every export twice)",
                                                           both)):
        reset()
        start = time.perf_counter()
        facts = collect_facts(configs, options=PreflightOptions(), environ=env)
        wall = time.perf_counter() - start
        kinds = count()
        entries = [f for s in facts.configs.values() for f in s.exports.values()]
        errors = [f.preflight_error for f in entries if f.preflight_error]
        probed = sum(1 for f in entries for c in f.columns.values() if c.min is not None)
        total = sum(v for k, v in kinds.items() if not k.startswith("("))
        per_export = total / len(specs)
        print(f"\n{name}, {label}: {len(entries)} export entries, {len(specs)} distinct")
        print(f"  wall time        {wall:8.2f} s")
        print(f"  statements       {total:8d}   = {per_export:.3f} per distinct export "
              f"(target <= floor + {TARGET_OVER_FLOOR:g})")
        print(f"  floor            {floor(specs):8d}   = {floor(specs) / len(specs):.3f} per "
              f"distinct export (one EXPLAIN per distinct query + one min/max per probed table "
              f"+ a query's range statement: its EXPLAIN, and it where bounded)")
        for kind, n in sorted(kinds.items(), key=lambda kv: (kv[0].startswith("("), -kv[1])):
            print(f"    {kind:36s} {n:6d}")
        print(f"  ranges observed  {probed:8d}   preflight errors {len(errors)}")
        if errors:
            print(f"  first error: {errors[0]}")
    return per_export


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pg-url", default=os.environ.get("RIVET_CI_TEST_PG_URL"),
                        help="PostgreSQL admin URL (default RIVET_CI_TEST_PG_URL, else a "
                             "throwaway server)")
    parser.add_argument("--mysql-url", default=os.environ.get("RIVET_CI_TEST_MYSQL_URL"),
                        help="MariaDB admin URL (default RIVET_CI_TEST_MYSQL_URL, else a "
                             "throwaway server)")
    args = parser.parse_args()
    servers = Servers()
    try:
        pg_url = args.pg_url or servers.start("pg")
        my_url = args.mysql_url or servers.start("mariadb")
        t = time.perf_counter()
        pg = pg_seed(pg_url)
        my = my_seed(my_url)
        print(f"seeded both servers in {time.perf_counter() - t:.1f} s")
        with tempfile.TemporaryDirectory() as tmp:
            results = {
                "PostgreSQL": run("PostgreSQL", pg.set(username="rivet_bench_reader"),
                                  "postgres", reset=lambda: pg_reset(pg),
                                  count=lambda: pg_count(pg), tmp=Path(tmp)),
                "MariaDB": run("MariaDB", my, "mysql", reset=lambda: my_reset(my),
                               count=lambda: my_count(my), tmp=Path(tmp)),
            }
        print()
        met = True
        least = floor(exports()) / len(exports())
        for name, per_export in results.items():
            ok = per_export <= least + TARGET_OVER_FLOOR
            met = met and ok
            print(f"{name:11s} {per_export:.3f} statements per distinct export, floor "
                  f"{least:.3f}: {'met' if ok else 'MISSED'} (target <= floor + "
                  f"{TARGET_OVER_FLOOR:g})")
        return 0 if met else 1
    finally:
        servers.stop()


if __name__ == "__main__":
    sys.exit(main())
