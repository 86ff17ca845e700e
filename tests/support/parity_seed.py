"""Seeded tables and generated configs for live plan parity with the real rivet (no tests here).

The tables have the shapes rivet's planner tells apart, at sizes around its thresholds (100,000
rows: small vs large and the missing-checkpoint warning; `chunk_size`: the small-table
downgrade; 10,000,000 rows: huge): indexed and unindexed cursors, a nullable cursor with a
fallback, sparse and dense integer keys, time columns, an empty table, a partitioned table, a
view and a join. PostgreSQL also has one table whose catalog says 20,000,000 rows (the
statistics are set, the rows are not there) so that heavy members of a `source_group` can be
planned without seeding them. Every database is analyzed with a statistics target that samples
whole tables, so estimates are the same on every run.

`generated_configs(seed, ...)` assembles configs from `EXPORTS` (every shape above, as `table:`
and `query:`, in every mode that applies) with `source_group`s and `reconcile_required` drawn
from a seeded generator: the same seed, the same configs.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

SMALL, MID, NOIDX, SPARSE, NULLABLE, EVENTS, FAKE_HUGE = (
    5_000, 150_000, 120_000, 2_000, 50_000, 60_000, 20_000_000)

# Autovacuum's own ANALYZE (the server's statistics target: a sample) would replace a seed's
# statistics whenever it chose to — between rivet's plan and ours (seen once: 150,000 vs 149,970
# rows). Each PostgreSQL seed switches it off on every table before its final ANALYZE, which waits
# for one already running (both take the same lock), so nothing changes the statistics after.
PG_NO_AUTOVACUUM = """
DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT c.oid::regclass AS t FROM pg_class c
           WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace LOOP
    EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', r.t);
  END LOOP;
END $$;
"""

PG_SEED = f"""
SET default_statistics_target = 1000;
CREATE TABLE small (id bigint PRIMARY KEY, name text NOT NULL, updated_at timestamptz NOT NULL);
INSERT INTO small SELECT g, 'n' || g, timestamptz '2024-01-01' + g * interval '1 minute'
  FROM generate_series(1, {SMALL}) g;
CREATE INDEX small_updated_at ON small (updated_at);
CREATE TABLE mid (id bigint PRIMARY KEY, customer_id int NOT NULL, v int NOT NULL,
  updated_at timestamptz NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO mid SELECT g, 1 + g % {SMALL}, g % 997,
  timestamptz '2024-01-01' + g * interval '1 second',
  timestamptz '2023-01-01' + g * interval '1 second' FROM generate_series(1, {MID}) g;
CREATE INDEX mid_updated_at ON mid (updated_at);
CREATE TABLE noidx (id bigint NOT NULL, updated_at timestamptz NOT NULL);
INSERT INTO noidx SELECT g, timestamptz '2024-01-01' + g * interval '1 second'
  FROM generate_series(1, {NOIDX}) g;
CREATE TABLE sparse (id bigint PRIMARY KEY, v int NOT NULL);
INSERT INTO sparse SELECT g * 5000, g FROM generate_series(1, {SPARSE}) g;
CREATE TABLE nullable (id bigint PRIMARY KEY, updated_at timestamptz,
  created_at timestamptz NOT NULL);
INSERT INTO nullable SELECT g,
  CASE WHEN g % 10 = 0 THEN NULL ELSE timestamptz '2024-01-01' + g * interval '1 minute' END,
  timestamptz '2023-06-01' + g * interval '1 minute' FROM generate_series(1, {NULLABLE}) g;
CREATE INDEX nullable_updated_at ON nullable (updated_at);
CREATE TABLE empty_t (id bigint PRIMARY KEY, v int);
CREATE TABLE events (id bigint NOT NULL, at timestamptz NOT NULL, PRIMARY KEY (id))
  PARTITION BY RANGE (id);
CREATE TABLE events_a PARTITION OF events FOR VALUES FROM (MINVALUE) TO ({EVENTS // 2 + 1});
CREATE TABLE events_b PARTITION OF events FOR VALUES FROM ({EVENTS // 2 + 1}) TO (MAXVALUE);
INSERT INTO events SELECT g, timestamptz '2024-06-01' + g * interval '10 second'
  FROM generate_series(1, {EVENTS}) g;
CREATE VIEW recent_mid AS SELECT id, customer_id, updated_at FROM mid WHERE v < 500;
CREATE TABLE huge (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL);
INSERT INTO huge SELECT g, timestamptz '2020-01-01' + g * interval '1 hour'
  FROM generate_series(1, 1000) g;
CREATE INDEX huge_updated_at ON huge (updated_at);
CREATE TABLE extreme (id bigint PRIMARY KEY, v int);
INSERT INTO extreme VALUES (-9223372036854775808, 1), (0, 2), (9223372036854775807, 3);
{PG_NO_AUTOVACUUM}
ANALYZE;
UPDATE pg_class SET reltuples = {FAKE_HUGE} WHERE relname = 'huge';
"""

MY_SEED = [
    "CREATE TABLE small (id bigint PRIMARY KEY, name varchar(32) NOT NULL, "
    "updated_at datetime NOT NULL, KEY small_updated_at (updated_at))",
    f"INSERT INTO small SELECT seq, CONCAT('n', seq), '2024-01-01' + INTERVAL seq MINUTE "
    f"FROM seq_1_to_{SMALL}",
    "CREATE TABLE mid (id bigint PRIMARY KEY, customer_id int NOT NULL, v int NOT NULL, "
    "updated_at datetime NOT NULL, created_at datetime NOT NULL, KEY mid_updated_at (updated_at))",
    f"INSERT INTO mid SELECT seq, 1 + seq % {SMALL}, seq % 997, "
    f"'2024-01-01' + INTERVAL seq SECOND, '2023-01-01' + INTERVAL seq SECOND FROM seq_1_to_{MID}",
    "CREATE TABLE noidx (id bigint NOT NULL, updated_at datetime NOT NULL)",
    f"INSERT INTO noidx SELECT seq, '2024-01-01' + INTERVAL seq SECOND FROM seq_1_to_{NOIDX}",
    "CREATE TABLE sparse (id bigint PRIMARY KEY, v int NOT NULL)",
    f"INSERT INTO sparse SELECT seq * 5000, seq FROM seq_1_to_{SPARSE}",
    "CREATE TABLE nullable (id bigint PRIMARY KEY, updated_at datetime NULL, "
    "created_at datetime NOT NULL, KEY nullable_updated_at (updated_at))",
    f"INSERT INTO nullable SELECT seq, IF(seq % 10 = 0, NULL, '2024-01-01' + INTERVAL seq MINUTE), "
    f"'2023-06-01' + INTERVAL seq MINUTE FROM seq_1_to_{NULLABLE}",
    "CREATE TABLE empty_t (id bigint PRIMARY KEY, v int)",
    "CREATE TABLE events (id bigint NOT NULL, at datetime NOT NULL, PRIMARY KEY (id)) "
    f"PARTITION BY RANGE (id) (PARTITION pa VALUES LESS THAN ({EVENTS // 2 + 1}), "
    "PARTITION pb VALUES LESS THAN MAXVALUE)",
    f"INSERT INTO events SELECT seq, '2024-06-01' + INTERVAL (seq * 10) SECOND "
    f"FROM seq_1_to_{EVENTS}",
    "CREATE VIEW recent_mid AS SELECT id, customer_id, updated_at FROM mid WHERE v < 500",
    "CREATE TABLE extreme (id bigint PRIMARY KEY, v int)",
    "INSERT INTO extreme VALUES (-9223372036854775808, 1), (0, 2), (9223372036854775807, 3)",
    "ANALYZE TABLE small, mid, noidx, sparse, nullable, empty_t, events, extreme "
    "PERSISTENT FOR ALL",
]

_DEST = {"format": "parquet", "destination": {"type": "local", "path": "./out"}}

# Every shape, by name: what the export reads and how. `{}` in `query` stays literal.
EXPORTS: dict[str, dict[str, Any]] = {
    "small_full": {"table": "small", "mode": "full"},
    "small_query_full": {"query": "SELECT id, name FROM small", "mode": "full"},
    "small_inc": {"table": "small", "mode": "incremental", "cursor_column": "updated_at"},
    "mid_full": {"table": "mid", "mode": "full"},
    "mid_inc": {"table": "mid", "mode": "incremental", "cursor_column": "updated_at"},
    "mid_query_inc": {"query": "SELECT id, v, updated_at FROM mid", "mode": "incremental",
                      "cursor_column": "updated_at"},
    "mid_inc_unindexed": {"table": "mid", "mode": "incremental", "cursor_column": "created_at"},
    "mid_chunked": {"table": "mid", "mode": "chunked", "chunk_column": "id",
                    "chunk_size": 20_000},
    "mid_chunked_auto": {"table": "mid", "mode": "chunked", "chunk_size": 50_000,
                         "chunk_checkpoint": True},
    "mid_query_chunked": {"query": "SELECT id, v FROM mid", "mode": "chunked",
                          "chunk_column": "id", "chunk_size": 40_000},
    "mid_chunk_count": {"table": "mid", "mode": "chunked", "chunk_column": "id",
                        "chunk_count": 4},
    "mid_by_days": {"table": "mid", "mode": "chunked", "chunk_column": "updated_at",
                    "chunk_by_days": 1},
    "mid_keyset": {"table": "mid", "mode": "chunked", "chunk_by_key": "id",
                   "chunk_size": 50_000},
    "mid_window": {"table": "mid", "mode": "time_window", "time_column": "updated_at",
                   "days_window": 3},
    "mid_window_wide": {"query": "SELECT id, updated_at FROM mid", "mode": "time_window",
                        "time_column": "updated_at", "days_window": 30},
    "noidx_full": {"table": "noidx", "mode": "full"},
    "noidx_inc": {"table": "noidx", "mode": "incremental", "cursor_column": "updated_at"},
    "noidx_query_inc": {"query": "SELECT id, updated_at FROM noidx", "mode": "incremental",
                        "cursor_column": "updated_at"},
    "sparse_downgraded": {"table": "sparse", "mode": "chunked", "chunk_column": "id",
                          "chunk_size": 200_000},
    "sparse_chunked": {"table": "sparse", "mode": "chunked", "chunk_column": "id",
                       "chunk_size": 200_000, "chunk_checkpoint": True},
    "sparse_query_chunked": {"query": "SELECT id, v FROM sparse", "mode": "chunked",
                             "chunk_column": "id", "chunk_size": 200_000},
    "nullable_inc": {"table": "nullable", "mode": "incremental", "cursor_column": "updated_at"},
    "nullable_coalesce": {"table": "nullable", "mode": "incremental",
                          "cursor_column": "updated_at", "incremental_cursor_mode": "coalesce",
                          "cursor_fallback_column": "created_at"},
    "empty_chunked": {"table": "empty_t", "mode": "chunked", "chunk_column": "id"},
    "empty_full": {"table": "empty_t", "mode": "full"},
    "events_full": {"table": "events", "mode": "full"},
    "events_chunked": {"table": "events", "mode": "chunked", "chunk_column": "id",
                       "chunk_size": 10_000, "chunk_checkpoint": True},
    "events_inc": {"table": "events", "mode": "incremental", "cursor_column": "id"},
    "view_full": {"table": "recent_mid", "mode": "full"},
    "view_inc": {"table": "recent_mid", "mode": "incremental", "cursor_column": "updated_at"},
    "join_full": {"query": "SELECT m.id, s.name FROM mid m JOIN small s ON s.id = m.customer_id",
                  "mode": "full"},
    # Keys at both ends of the 64-bit range: rivet's 64-bit arithmetic (a span that wraps).
    "extreme_count": {"table": "extreme", "mode": "chunked", "chunk_column": "id",
                      "chunk_count": 4},
    "extreme_size": {"table": "extreme", "mode": "chunked", "chunk_column": "id",
                     "chunk_size": 9_223_372_036_854_775_807, "chunk_checkpoint": True},
    "join_inc": {"query": "SELECT m.id, m.updated_at, s.name FROM mid m JOIN small s "
                          "ON s.id = m.customer_id", "mode": "incremental",
                 "cursor_column": "updated_at"},
}
PG_ONLY: dict[str, dict[str, Any]] = {
    "huge_full": {"table": "huge", "mode": "full"},
    "huge_inc": {"table": "huge", "mode": "incremental", "cursor_column": "updated_at"},
    "huge_query_full": {"query": "SELECT id FROM huge", "mode": "full"},
}
GROUPS = ("replica_a", "replica_b", None)


PARITY_DB = "rivet_parity"


def fresh_database(server_url: str, name: str = PARITY_DB) -> str:
    """Drop and create the database `name` on the server; its URL (same user)."""
    url = sa.make_url(server_url)
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
    finally:
        engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def seed_postgres(url: str, script: str = PG_SEED) -> None:
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(script.replace("%", "%%"))
    finally:
        engine.dispose()


def seed_mariadb(url: str, statements: list[str] = MY_SEED) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement.replace("%", "%%"))
    finally:
        engine.dispose()


def export_entry(name: str, spec: Mapping[str, Any], *, schema: str | None,
                 group: str | None = None, reconcile: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    for key, value in spec.items():
        entry[key] = f"{schema}.{value}" if key == "table" and schema else value
    if group is not None:
        entry["source_group"] = group
    if reconcile:
        entry["reconcile_required"] = True
    return {**entry, **_DEST}


def config_document(source_type: str, exports: list[dict[str, Any]],
                    url_env: str) -> dict[str, Any]:
    return {"source": {"type": source_type, "url_env": url_env}, "exports": exports}


def generated_configs(seed: int, shapes: Mapping[str, Mapping[str, Any]], *, count: int,
                      size: int, schema: str | None) -> list[list[dict[str, Any]]]:
    """`count` configs of `size` exports each, drawn from `shapes` by a generator seeded with
    `seed`: each export gets a `source_group` (or none) and sometimes `reconcile_required`."""
    rng = random.Random(seed)
    names = sorted(shapes)
    configs = []
    for _ in range(count):
        picked = rng.sample(names, min(size, len(names)))
        configs.append([
            export_entry(n, shapes[n], schema=schema, group=rng.choice(GROUPS),
                         reconcile=rng.random() < 0.2) for n in picked])
    return configs
