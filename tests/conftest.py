"""Shared fixtures. Database servers: real ones, never mocks.

`pg_url` / `mysql_url` are the servers' admin URLs: `RIVET_CI_TEST_PG_URL` /
`RIVET_CI_TEST_MYSQL_URL` when set (CI starts the servers), otherwise a throwaway server started
here on a free port in a directory of this run's own and stopped at the end of the session. When
a server cannot start, tests that need it fail under CI (`CI` set) and are skipped with the
reason elsewhere.
`pg_db`, `mysql_db`, `sqlite_db` are seeded databases of known shape (see
`tests/support/db_seed.py`).
`gh` is the local fake GitHub with the action's tokens and `ws` the bundled example in a real git
workspace (see `tests/support/action.py`); a module needing other tokens defines its own `gh`.

Helpers live in `tests/support/`; no test module imports another.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import db_seed
from support.action import Workspace, action_github, example_workspace
from support.fake_github import FakeGitHub


def _server_url(env: str, kind: str, name: str) -> Iterator[str]:
    if os.environ.get(env):
        yield os.environ[env]
        return
    server = db_seed.start_or_skip(kind, name)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """Admin URL of a PostgreSQL server (pg_stat_statements preloaded)."""
    yield from _server_url("RIVET_CI_TEST_PG_URL", "pg", "pg")


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """Admin URL of a MariaDB (or MySQL) server."""
    yield from _server_url("RIVET_CI_TEST_MYSQL_URL", "mariadb", "mariadb")


@pytest.fixture(scope="session")
def pg_db(pg_url: str) -> str:
    """URL of the seeded PostgreSQL test database (carries `db_seed.PG_SECRET`)."""
    return db_seed.seed_postgres(pg_url)


@pytest.fixture(scope="session")
def mysql_db(mysql_url: str) -> str:
    """URL of the seeded MariaDB database (the server's user; `db_seed.reader_url` gives the
    privilege-less `rivet_reader` with `db_seed.MY_SECRET`)."""
    return db_seed.seed_mariadb(mysql_url)


@pytest.fixture(scope="session")
def sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """URL of a seeded SQLite file (ANALYZEd)."""
    return db_seed.seed_sqlite(tmp_path_factory.mktemp("sqlite") / "source.db")


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    """The local fake GitHub with the action's job token and a fork's read-only token."""
    with action_github() as fake:
        yield fake


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """The bundled example committed on `main`, checked out on `feature`."""
    return example_workspace(tmp_path)


@pytest.fixture
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's global and system git config out of a test that runs git."""
    empty = tmp_path_factory.mktemp("gitconfig") / "config"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
