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

# The inner loop, `pytest -m "not slow"`, leaves out what needs a database server, the Docker
# image or the real rivet binary, and the property and fuzz suites. They are marked `slow` here,
# by what they use, so that no test module has to remember it; a test that is slow on its own
# says `@pytest.mark.slow`. `.ci/run` runs everything.
SLOW_FIXTURES = frozenset({"pg_url", "mysql_url", "pg_db", "mysql_db"})
SLOW_MODULES = frozenset({
    "test_image_e2e", "test_core_fuzz", "test_core_properties", "test_core_yaml_equivalence",
    # Live preflight and history: their tests reach a server through request.getfixturevalue too.
    "test_live_cli", "test_pr_action_live", "test_preflight_attacks", "test_preflight_collect",
    "test_preflight_dialects", "test_preflight_faults", "test_preflight_safety",
    "test_state_history",
})
SLOW_SUPPORT = frozenset({"support.real_rivet"})


def _is_slow(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    if module is None:
        return False
    if module.__name__ in SLOW_MODULES:
        return True
    if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    if any(item.get_closest_marker(server) for server in ("postgres", "mariadb")):
        return True
    return any(getattr(value, "__module__", None) in SLOW_SUPPORT
               for value in vars(module).values())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


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
