"""Throwaway database servers and seeded databases of known shape for the preflight tests.

Servers come from `.ci/pg-start.sh` / `.ci/mariadb-start.sh` (loopback only, temp dirs). The
seeded databases hold the shapes preflight must tell apart: a few hundred thousand rows with and
without indexes, a sparse id range, a nullable cursor with a coalesce fallback, a view and a
join, a 1M-row unindexed table (to prove planning never scans it) and a function with a side
effect (to prove EXPLAIN never runs it). Generated with generate_series / seq_1_to_N so seeding
stays fast, then ANALYZEd (Postgres with a statistics target that samples whole tables, so
estimates are stable between runs).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
import sqlalchemy as sa
import yaml
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from rivet_ci.adapters.preflight.base import PreflightOptions
from rivet_ci.adapters.preflight.collect import TrustedReads, collect_facts
from rivet_ci.core.config.loader import LoadedConfig, load_config_text
from rivet_ci.core.facts.models import ExportFacts, FactsFile
from support.isolation import free_port, run_root

REPO = Path(__file__).resolve().parents[2]
CI = REPO / ".ci"
ROWS = 300_000          # the "large" tables
BIG_ROWS = 1_000_000    # the table preflight must never scan
SPARSE_ROWS = 2_000     # ids 5000, 10000, ... 10,000,000
SPARSE_STEP = 5_000
NULLABLE_ROWS = 50_000
CUSTOMERS = 1_000
TEST_DB = "rivet_preflight"
# Passwords that must never show up in facts, logs or messages. The Postgres test servers trust
# loopback connections, so the password there is carried but not checked.
PG_SECRET = "pgSecretHunter2x"
MY_SECRET = "mySecretHunter2x"


class ServerError(RuntimeError):
    pass


@dataclass(frozen=True)
class Server:
    url: str
    root: Path
    kind: str

    def stop(self) -> None:
        script = "pg-stop.sh" if self.kind == "pg" else "mariadb-stop.sh"
        env = {**os.environ, "PG_ROOT": str(self.root), "MY_ROOT": str(self.root)}
        subprocess.run(["bash", str(CI / script)], env=env, check=False, capture_output=True,
                       timeout=120)


def start_server(kind: str, port: int, root: Path) -> Server:
    """Start a throwaway server with the project's script; raise ServerError with its stderr."""
    root.parent.mkdir(parents=True, exist_ok=True)
    root.parent.chmod(0o755)
    script = "pg-start.sh" if kind == "pg" else "mariadb-start.sh"
    env = {**os.environ, "PGPORT": str(port), "PG_ROOT": str(root), "MY_PORT": str(port),
           "MY_ROOT": str(root)}
    try:
        done = subprocess.run(["bash", str(CI / script)], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"{script}: {exc}") from exc
    if done.returncode != 0:
        raise ServerError(f"{script} exited {done.returncode}: {done.stderr.strip()[-800:]}")
    return Server(url=done.stdout.strip().splitlines()[-1], root=root, kind=kind)


def unavailable(reason: str) -> NoReturn:
    """A server the tests need is missing: fail under CI, skip (with the reason) elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"database server unavailable under CI: {reason}")
    pytest.skip(f"database server unavailable: {reason}")


def start_or_skip(kind: str, name: str) -> Server:
    """A throwaway server on a free port under this run's own directory, or skip/fail via
    :func:`unavailable`. A port taken between choosing and binding it is retried."""
    error = ServerError("not started")
    for _ in range(3):
        try:
            return start_server(kind, free_port(), run_root() / name)
        except ServerError as exc:
            error = exc
    unavailable(str(error))


def engine(url: str | sa.URL, *, autocommit: bool = True) -> sa.Engine:
    kwargs: dict[str, object] = {"poolclass": NullPool}
    if autocommit:
        kwargs["isolation_level"] = "AUTOCOMMIT"
    return sa.create_engine(url, **kwargs)


# --- PostgreSQL --------------------------------------------------------------------------------

PG_SCHEMA = f"""
SET default_statistics_target = 1000;
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO customers SELECT g, 'customer ' || g FROM generate_series(1, {CUSTOMERS}) g;
CREATE TABLE orders (
  id bigint PRIMARY KEY, customer_id int NOT NULL, amount int NOT NULL,
  updated_at timestamptz NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO orders SELECT g, 1 + g % {CUSTOMERS}, g % 997,
  timestamptz '2024-01-01' + g * interval '1 minute',
  timestamptz '2023-01-01' + g * interval '1 minute'
  FROM generate_series(1, {ROWS}) g;
CREATE INDEX orders_updated_at_idx ON orders (updated_at);
CREATE TABLE events_noidx (id bigint NOT NULL, ts timestamptz NOT NULL, kind int NOT NULL);
INSERT INTO events_noidx SELECT g, timestamptz '2024-01-01' + g * interval '1 second', g % 7
  FROM generate_series(1, {ROWS}) g;
CREATE TABLE sparse (id bigint PRIMARY KEY, payload text NOT NULL);
INSERT INTO sparse SELECT g * {SPARSE_STEP}, 'p' || g FROM generate_series(1, {SPARSE_ROWS}) g;
CREATE TABLE nullable_cursor (
  id bigint PRIMARY KEY, updated_at timestamptz, created_at timestamptz NOT NULL);
INSERT INTO nullable_cursor SELECT g,
  CASE WHEN g % 2 = 0 THEN timestamptz '2024-06-01' + g * interval '1 minute' END,
  timestamptz '2024-01-01' + g * interval '1 minute'
  FROM generate_series(1, {NULLABLE_ROWS}) g;
CREATE INDEX nullable_cursor_updated_at_idx ON nullable_cursor (updated_at);
CREATE INDEX nullable_cursor_created_at_idx ON nullable_cursor (created_at);
CREATE TABLE big_unindexed (id bigint NOT NULL, v int NOT NULL);
INSERT INTO big_unindexed SELECT g, g % 1000 FROM generate_series(1, {BIG_ROWS}) g;
CREATE VIEW recent_orders AS SELECT id, customer_id, updated_at FROM orders
  WHERE updated_at >= timestamptz '2024-06-01';
-- Estimated at ~9e10 rows: a min/max over it runs far past any statement timeout.
CREATE VIEW slow_pairs AS SELECT a.id AS id FROM events_noidx a CROSS JOIN events_noidx b;
CREATE TABLE audit_log (id serial PRIMARY KEY, note text);
CREATE FUNCTION evil() RETURNS int LANGUAGE plpgsql VOLATILE AS $$
BEGIN INSERT INTO audit_log (note) VALUES ('evil ran'); RETURN 1; END $$;
-- Lies about being immutable, so the planner folds (runs) it while planning; it writes through
-- a volatile function (PostgreSQL refuses a direct write in a non-volatile one). Only the
-- read-only transaction stands between EXPLAIN and that write.
CREATE FUNCTION sneaky() RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN evil(); END $$;
ANALYZE;
"""


def seed_postgres(server_url: str) -> str:
    """Create (afresh) and seed the test database; return its URL, carrying PG_SECRET."""
    admin = engine(server_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {TEST_DB} WITH (FORCE)")
        conn.exec_driver_sql(f"CREATE DATABASE {TEST_DB}")
    admin.dispose()
    url = make_url(server_url).set(database=TEST_DB)
    db = engine(url)
    with db.connect() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute(PG_SCHEMA)
    db.dispose()
    return url.set(password=PG_SECRET).render_as_string(hide_password=False)


# --- MariaDB -----------------------------------------------------------------------------------

MY_SCHEMA = [
    "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
    f"INSERT INTO customers SELECT seq, CONCAT('customer ', seq) FROM seq_1_to_{CUSTOMERS}",
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, amount INT NOT NULL,"
    " updated_at DATETIME NOT NULL, created_at DATETIME NOT NULL, KEY orders_updated_at_idx"
    " (updated_at))",
    f"INSERT INTO orders SELECT seq, 1 + seq % {CUSTOMERS}, seq % 997,"
    f" TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq MINUTE,"
    f" TIMESTAMP '2023-01-01 00:00:00' + INTERVAL seq MINUTE FROM seq_1_to_{ROWS}",
    "CREATE TABLE events_noidx (id BIGINT NOT NULL, ts DATETIME NOT NULL, kind INT NOT NULL)",
    f"INSERT INTO events_noidx SELECT seq, TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND,"
    f" seq % 7 FROM seq_1_to_{ROWS}",
    "CREATE TABLE sparse (id BIGINT PRIMARY KEY, payload VARCHAR(20) NOT NULL)",
    f"INSERT INTO sparse SELECT seq * {SPARSE_STEP}, CONCAT('p', seq) FROM seq_1_to_{SPARSE_ROWS}",
    "CREATE TABLE nullable_cursor (id BIGINT PRIMARY KEY, updated_at DATETIME NULL,"
    " created_at DATETIME NOT NULL, KEY nc_updated (updated_at), KEY nc_created (created_at))",
    f"INSERT INTO nullable_cursor SELECT seq, IF(seq % 2 = 0, TIMESTAMP '2024-06-01 00:00:00'"
    f" + INTERVAL seq MINUTE, NULL), TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq MINUTE"
    f" FROM seq_1_to_{NULLABLE_ROWS}",
    "CREATE VIEW recent_orders AS SELECT id, customer_id, updated_at FROM orders"
    " WHERE updated_at >= '2024-06-01'",
    "CREATE VIEW slow_pairs AS SELECT a.id AS id FROM events_noidx a CROSS JOIN events_noidx b",
    "ANALYZE TABLE customers, orders, events_noidx, sparse, nullable_cursor",
]


def seed_mariadb(server_url: str) -> str:
    """Create (afresh) and seed the test database; return its URL (the server's user).

    Also creates `rivet_reader` with MY_SECRET and no privileges (CI's user may create users but
    not grant): it can log in, and every table access is denied — the secret-leak tests use it.
    """
    admin = engine(server_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {TEST_DB}")
        conn.exec_driver_sql(f"CREATE DATABASE {TEST_DB}")
        conn.exec_driver_sql("DROP USER IF EXISTS 'rivet_reader'@'127.0.0.1'")
        conn.exec_driver_sql(
            f"CREATE USER 'rivet_reader'@'127.0.0.1' IDENTIFIED BY '{MY_SECRET}'")
    admin.dispose()
    url = make_url(server_url).set(database=TEST_DB)
    db = engine(url)
    with db.connect() as conn:
        for statement in MY_SCHEMA:
            conn.exec_driver_sql(statement, execution_options={"no_parameters": True})
    db.dispose()
    return url.render_as_string(hide_password=False)


def reader_url(mysql_db: str, password: str = MY_SECRET) -> str:
    """The seeded database as `rivet_reader` (no privileges) with the given password."""
    url = make_url(mysql_db).set(username="rivet_reader", password=password)
    return url.render_as_string(hide_password=False)


# --- SQLite ------------------------------------------------------------------------------------


def seed_sqlite(path: Path, *, analyze: bool = True) -> str:
    """Create and seed a SQLite file; return its `sqlite:///` URL."""
    conn = sqlite3.connect(path)
    conn.executescript(f"""
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INT NOT NULL,
          amount INT NOT NULL, updated_at TEXT NOT NULL, created_at TEXT NOT NULL);
        WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {ROWS})
        INSERT INTO orders SELECT n, 1 + n % {CUSTOMERS}, n % 997,
          datetime('2024-01-01', '+' || n || ' minutes'),
          datetime('2023-01-01', '+' || n || ' minutes') FROM g;
        CREATE INDEX orders_updated_at_idx ON orders (updated_at);
        CREATE TABLE events_noidx (id INT NOT NULL, ts TEXT NOT NULL, kind INT NOT NULL);
        INSERT INTO events_noidx SELECT id, updated_at, id % 7 FROM orders;
        CREATE TABLE sparse (id INTEGER PRIMARY KEY, payload TEXT NOT NULL);
        WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {SPARSE_ROWS})
        INSERT INTO sparse SELECT n * {SPARSE_STEP}, 'p' || n FROM g;
        CREATE TABLE nullable_cursor (id INTEGER PRIMARY KEY, updated_at TEXT,
          created_at TEXT NOT NULL);
        INSERT INTO nullable_cursor SELECT id, CASE WHEN id % 2 = 0 THEN updated_at END,
          created_at FROM orders WHERE id <= {NULLABLE_ROWS};
        CREATE INDEX nc_updated ON nullable_cursor (updated_at);
        CREATE INDEX nc_created ON nullable_cursor (created_at);
        CREATE INDEX orders_partial_amount ON orders (amount) WHERE amount > 500;
        CREATE VIEW recent_orders AS SELECT id, customer_id, updated_at FROM orders
          WHERE updated_at >= '2024-06-01';
        CREATE VIEW slow_pairs AS SELECT a.id AS id FROM events_noidx a, events_noidx b;
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {CUSTOMERS})
        INSERT INTO customers SELECT n, 'customer ' || n FROM g;
    """)
    if analyze:
        conn.execute("ANALYZE")
    conn.commit()
    conn.close()
    return f"sqlite:///{path}"


# --- configs and collection --------------------------------------------------------------------


# Keys rivet requires of every export that preflight does not read.
EXPORT_DEFAULTS: dict[str, Any] = {"format": "parquet", "destination": {"type": "local"}}


def with_required_keys(export: Mapping[str, Any]) -> dict[str, Any]:
    """The export with rivet's required `format`/`destination` added when not given."""
    return {**EXPORT_DEFAULTS, **export}


def write_config(directory: Path, exports: Sequence[Mapping[str, Any]], *,
                 name: str = "rivet.yaml", source: Mapping[str, Any] | None = None,
                 environ: Mapping[str, str] | None = None) -> tuple[LoadedConfig, Path]:
    """Write a rivet config (source defaults to `url_env: SRC_URL`) and load it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    document = {"source": dict(source or {"type": "postgres", "url_env": "SRC_URL"}),
                "exports": [with_required_keys(e) for e in exports]}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    loaded = load_config_text(str(path), path.read_text(encoding="utf-8"), environ or {})
    assert not [p for p in loaded.problems if p.severity == "error"], loaded.problems
    return loaded, path


def collect(url: str, directory: Path, exports: Sequence[Mapping[str, Any]],
            **options: Any) -> dict[str, ExportFacts]:
    """Facts for `exports` collected live from `url` (via `url_env`), by export name."""
    loaded, _ = write_config(directory, exports)
    facts = collect_all(url, [(loaded, Path(loaded.path))], **options)
    return dict(facts.configs[loaded.path].exports)


def collect_all(url: str, configs: Sequence[tuple[LoadedConfig, Path]], *,
                progress: Any = None, trusted: TrustedReads | None = None,
                **options: Any) -> FactsFile:
    """Collect through the configs' `url_env: SRC_URL`; SQLite only via the override.
    `trusted` as in `collect_facts` (None: every query is trusted)."""
    override = url if url.startswith("sqlite") else None
    return collect_facts(configs, options=PreflightOptions(**options), environ={"SRC_URL": url},
                         source_url_override=override, progress=progress, trusted=trusted)
