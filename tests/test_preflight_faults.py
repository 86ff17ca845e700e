"""Failures are facts: every fault ends as per-export `preflight_error`, never an exception."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from support.db_seed import collect, collect_all, engine, reader_url, start_or_skip, write_config
from support.isolation import free_port

pytestmark = pytest.mark.postgres

READER_PASSWORD = "readerRightPw7"


@pytest.fixture(scope="module")
def password_pg() -> Iterator[str]:
    """A throwaway server where role `reader` must give its password (scram over TCP)."""
    server = start_or_skip("pg", "pg-password")
    try:
        admin = engine(server.url)
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE ROLE reader LOGIN PASSWORD '{READER_PASSWORD}'")
            conn.exec_driver_sql("CREATE TABLE t (id int PRIMARY KEY)")
            conn.exec_driver_sql("INSERT INTO t SELECT generate_series(1, 100)")
            conn.exec_driver_sql("GRANT SELECT ON t TO reader")
            hba = Path(conn.exec_driver_sql("SHOW hba_file").scalar_one())
            # First match wins: the reader must authenticate, everyone else stays trusted.
            hba.write_text(f"host all reader 127.0.0.1/32 scram-sha-256\n{hba.read_text()}")
            conn.exec_driver_sql("SELECT pg_reload_conf()")
        admin.dispose()
        url = make_url(server.url).set(username="reader")
        _wait_until_password_is_checked(url)
        yield url.render_as_string(hide_password=False)
    finally:
        server.stop()


def _wait_until_password_is_checked(url: sa.URL) -> None:
    deadline = time.monotonic() + 10
    while True:
        probe = engine(url.set(password="certainly-wrong"))
        try:
            with probe.connect():
                pass
        except sa.exc.OperationalError:
            return
        finally:
            probe.dispose()
        if time.monotonic() > deadline:
            raise AssertionError("pg_hba.conf reload did not take effect")
        time.sleep(0.1)


EXPORTS = [{"name": "a", "table": "t"}, {"name": "b", "query": "SELECT id FROM t"}]


def _assert_all_failed(facts: Mapping[str, object], *fragments: str) -> None:
    for name, entry in facts.items():
        error = getattr(entry, "preflight_error", None)
        assert error is not None, name
        assert any(f in error for f in fragments), error


def test_right_password_works_and_wrong_password_is_a_fact(
        password_pg: str, tmp_path: Path) -> None:
    right = make_url(password_pg).set(password=READER_PASSWORD)
    ok = collect(right.render_as_string(hide_password=False), tmp_path / "ok", EXPORTS)
    assert ok["a"].preflight_error is None and ok["a"].row_estimate is not None
    wrong = make_url(password_pg).set(password="not-the-password")
    facts = collect(wrong.render_as_string(hide_password=False), tmp_path / "wrong", EXPORTS)
    _assert_all_failed(facts, "password authentication failed")
    assert "not-the-password" not in str(facts)


@pytest.mark.mariadb
def test_wrong_mariadb_password_is_a_fact(mysql_db: str, tmp_path: Path) -> None:
    facts = collect(reader_url(mysql_db, "not-the-password"), tmp_path, EXPORTS)
    _assert_all_failed(facts, "Access denied")


@pytest.mark.parametrize("url", [
    "postgresql://u:pw@nonexistent.invalid:5432/db",
    "mysql://u:pw@nonexistent.invalid:3306/db",
    "postgresql://u:pw@127.0.0.1:{port}/db",
    "mysql://u:pw@127.0.0.1:{port}/db",
    "sqlite:////nonexistent/dir/source.db",
], ids=["pg-unknown-host", "mysql-unknown-host", "pg-unused-port", "mysql-unused-port",
        "sqlite-missing-file"])
def test_unreachable_source_is_a_fact(url: str, tmp_path: Path) -> None:
    start = time.monotonic()
    facts = collect(url.format(port=free_port()), tmp_path, EXPORTS, connect_timeout_s=2)
    _assert_all_failed(facts, "cannot connect to")
    assert time.monotonic() - start < 10


def test_server_stopped_mid_run(tmp_path: Path) -> None:
    server = start_or_skip("pg", "pg-doomed")
    try:
        admin = engine(server.url)
        with admin.connect() as conn:
            for i in range(30):
                conn.exec_driver_sql(f"CREATE TABLE t{i} (id int PRIMARY KEY)")
                conn.exec_driver_sql(f"INSERT INTO t{i} SELECT generate_series(1, 100)")
            conn.exec_driver_sql("ANALYZE")
        admin.dispose()
        # One min/max per table, each run as its export finishes: the stop lands between them.
        exports = [{"name": f"e{i}", "mode": "incremental", "cursor_column": "id",
                    "table": f"t{i}"} for i in range(30)]
        loaded, path = write_config(tmp_path, exports)
        seen: list[int] = []

        def progress(done: int, total: int) -> None:
            seen.append(done)
            if done == 3:  # called on the worker, which waits: the stop is truly mid-run
                server.stop()

        facts = collect_all(server.url, [(loaded, path)], progress=progress).configs[
            loaded.path].exports
    finally:
        server.stop()
    assert seen == list(range(1, 31))
    finished = [n for n, f in facts.items() if f.preflight_error is None]
    assert finished == ["e0", "e1", "e2"]
    for name in list(facts)[3:]:
        error = facts[name].preflight_error
        assert error is not None and ("connect" in error or "terminat" in error), error

