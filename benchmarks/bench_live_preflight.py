"""Live preflight benchmark: 200 exports planned against a real PostgreSQL, statements counted.

Seeds a database `rivet_bench` (a 300k-row indexed table, a 300k-row and a 1.2M-row unindexed
one, 40 small tables) and writes 200 distinct exports over 4 config files: table exports with an
indexed cursor, query exports served by an index, chunked queries over the 300k-row table in
three source groups, filtered snapshots, and incremental queries over the 1.2M-row table whose
min/max must be skipped. Then runs `collect_facts` with default options and reports:

- wall time of the collection;
- top-level statements the server executed, from pg_stat_statements (reset first), per export
  and by kind (EXPLAIN, min/max, catalog, transaction control, driver start-up);
- the same again with base and head configs of a PR (each export twice): identical probes run once.

Target: at most 3 statements per export on average. Exits 1 when the target is missed.

    .venv/bin/python benchmarks/bench_live_preflight.py            # RIVET_CI_TEST_PG_URL or a
                                                                    # throwaway server
    .venv/bin/python benchmarks/bench_live_preflight.py --url postgresql+psycopg://...
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from rivet_ci.adapters.preflight.collect import PreflightOptions, collect_facts
from rivet_ci.core.config_loader import LoadedConfig, load_config_text

REPO = Path(__file__).resolve().parent.parent
EXPORTS = 200
PER_FILE = 50
SMALL_TABLES = 40
TARGET = 3.0
BENCH_DB = "rivet_bench"
PORT = 54369
ROOT = Path("/tmp/rivet-ci-bench/pg")

SEED = f"""
SET default_statistics_target = 1000;
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL, amount int NOT NULL,
  updated_at timestamptz NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO orders SELECT g, g % 5000, g % 997, timestamptz '2024-01-01' + g * interval '1 min',
  timestamptz '2023-01-01' + g * interval '1 min' FROM generate_series(1, 300000) g;
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
    EXECUTE format('INSERT INTO small_%s SELECT g, now() - g * interval ''1 h''
                    FROM generate_series(1, 2000) g', i);
  END LOOP;
END $$;
ANALYZE;
"""


def exports() -> list[dict[str, Any]]:
    """200 distinct exports: every probe is different, so nothing is saved by dedup here."""
    out: list[dict[str, Any]] = []
    for i in range(EXPORTS):
        kind = i % 5
        name = f"e{i:03d}"
        if kind == 0:  # small table, indexed cursor: EXPLAIN + catalog + cheap min/max
            out.append({"name": name, "table": f"small_{i // 5 % SMALL_TABLES}",
                        "mode": "incremental", "cursor_column": "updated_at"})
        elif kind == 1:  # query served by an index, cursor probed over the query
            out.append({"name": name, "mode": "incremental", "cursor_column": "updated_at",
                        "query": f"SELECT id, amount, updated_at FROM orders "
                                 f"WHERE customer_id = {i}"})
        elif kind == 2:  # query over a 300k-row unindexed table: under the bound, so probed
            out.append({"name": name, "mode": "chunked", "chunk_column": "id",
                        "chunk_size": 50_000, "source_group": f"g{i % 3}",
                        "query": f"SELECT id, ts FROM events WHERE kind = {i % 7} "
                                 f"AND id > {i}"})
        elif kind == 3:  # snapshot of a filtered query: EXPLAIN only
            out.append({"name": name,
                        "query": f"SELECT * FROM orders WHERE amount BETWEEN {i} AND {i + 50}"})
        else:  # 1.2M-row table, unindexed cursor: over the bound, min/max skipped
            out.append({"name": name, "mode": "incremental", "cursor_column": "created_at",
                        "query": f"SELECT id, created_at FROM big WHERE amount <> {i}"})
    return out


def write_configs(directory: Path, specs: list[dict[str, Any]], prefix: str,
                  ) -> list[tuple[LoadedConfig, Path]]:
    directory.mkdir(parents=True, exist_ok=True)
    configs = []
    for n in range(0, len(specs), PER_FILE):
        path = directory / f"{prefix}{n // PER_FILE}.yaml"
        document = {"source": {"type": "postgres", "url_env": "BENCH_URL"},
                    "exports": specs[n:n + PER_FILE]}
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        loaded = load_config_text(str(path), path.read_text(encoding="utf-8"), {})
        assert not loaded.has_errors, loaded.problems
        configs.append((loaded, path))
    return configs


def admin_engine(url: str | sa.URL) -> sa.Engine:
    return sa.create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")


def seed(server_url: str) -> sa.URL:
    admin = admin_engine(server_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        conn.exec_driver_sql(f"CREATE DATABASE {BENCH_DB}")
    admin.dispose()
    url = make_url(server_url).set(database=BENCH_DB)
    db = admin_engine(url)
    with db.connect() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute(SEED)
    db.dispose()
    return url


def reset(url: sa.URL) -> None:
    db = admin_engine(url)
    with db.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
    db.dispose()


def statements(url: sa.URL) -> Counter[str]:
    """Top-level statements in the bench database since the reset, by kind."""
    db = admin_engine(url)
    with db.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT s.query, s.calls FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = current_database() AND s.toplevel "
            "AND s.query NOT LIKE '%pg_stat_statements%'")).all()
    db.dispose()
    kinds: Counter[str] = Counter()
    for query, calls in rows:
        kinds[_kind(query)] += int(calls)
    return kinds


def _kind(query: str) -> str:
    text = query.lstrip().lower()
    if text.startswith("explain"):
        return "EXPLAIN"
    if "min(" in text:
        return "min/max"
    if "pg_attribute" in text or "set_config" in text:
        return "catalog/settings"
    if text.startswith(("begin", "commit", "rollback", "set transaction", "savepoint",
                        "release")):
        return "transaction control"
    return "driver start-up"


def run(url: sa.URL, configs: list[tuple[LoadedConfig, Path]], label: str) -> float:
    reset(url)
    env = {"BENCH_URL": url.render_as_string(hide_password=False)}
    done: list[int] = []
    start = time.perf_counter()
    facts = collect_facts(configs, options=PreflightOptions(), environ=env,
                          progress=lambda d, t: done.append(d))
    wall = time.perf_counter() - start
    kinds = statements(url)
    configured = sum(len(c.exports) for c, _ in configs)
    entries = [f for s in facts.configs.values() for f in s.exports.values()]
    errors = [f.preflight_error for f in entries if f.preflight_error]
    skipped = sum(1 for f in entries for c in f.columns.values() if c.range_skipped)
    total = sum(kinds.values())
    per_export = total / configured
    print(f"\n{label}: {configured} exports in {len(configs)} configs")
    print(f"  wall time            {wall:8.2f} s   ({wall / configured * 1000:.1f} ms/export)")
    print(f"  statements executed  {total:8d}     ({per_export:.2f} per export, "
          f"target <= {TARGET:g})")
    for kind, count in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"    {kind:20s} {count:6d}")
    print(f"  min/max skipped      {skipped:8d}     (over the default 1,000,000-row bound)")
    print(f"  preflight errors     {len(errors):8d}")
    assert len(done) == configured
    return per_export


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("RIVET_CI_TEST_PG_URL"),
                        help="PostgreSQL server (admin) URL; default RIVET_CI_TEST_PG_URL, "
                             "else a throwaway server is started")
    args = parser.parse_args()
    started = False
    server_url = args.url
    if not server_url:
        ROOT.parent.mkdir(parents=True, exist_ok=True)
        ROOT.parent.chmod(0o755)
        env = {**os.environ, "PGPORT": str(PORT), "PG_ROOT": str(ROOT)}
        done = subprocess.run(["bash", str(REPO / ".ci" / "pg-start.sh")], env=env, text=True,
                              capture_output=True, check=False)
        if done.returncode != 0:
            print(f"cannot start PostgreSQL: {done.stderr.strip()}", file=sys.stderr)
            return 2
        server_url = done.stdout.strip().splitlines()[-1]
        started = True
    try:
        t = time.perf_counter()
        url = seed(server_url)
        print(f"seeded {BENCH_DB} in {time.perf_counter() - t:.1f} s")
        specs = exports()
        with tempfile.TemporaryDirectory() as tmp:
            single = write_configs(Path(tmp) / "one", specs, "c")
            per_export = run(url, single, "distinct exports")
            both = (write_configs(Path(tmp) / "base", specs, "c")
                    + write_configs(Path(tmp) / "head", specs, "c"))
            run(url, both, "base + head of a PR (every export twice)")
        met = per_export <= TARGET
        print(f"\ntarget ({TARGET:g} statements per export): {'met' if met else 'MISSED'}")
        return 0 if met else 1
    finally:
        if started:
            subprocess.run(["bash", str(REPO / ".ci" / "pg-stop.sh")], check=False,
                           env={**os.environ, "PG_ROOT": str(ROOT)}, capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
