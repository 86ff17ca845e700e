"""Source URL resolution as rivet does it, plus rivet-ci's override (no database needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.db_seed import write_config

from rivet_ci.adapters.preflight.collect import collect_facts
from rivet_ci.adapters.preflight.source_url import (
    SOURCE_URL_ENV,
    SourceUrlError,
    resolve_source,
)
from rivet_ci.core.config.models import SourceConfig


def source(**fields: Any) -> SourceConfig:
    return SourceConfig.model_validate({"type": "postgres", **fields})


def test_inline_url_gets_our_driver() -> None:
    resolved = resolve_source(source(url="postgresql://u:pw@db:5433/app"), environ={})
    assert resolved.url.drivername == "postgresql+psycopg"
    assert (resolved.url.host, resolved.url.port, resolved.url.database) == ("db", 5433, "app")
    assert resolved.dialect == "postgresql"
    assert resolved.display == "postgresql+psycopg://u:***@db:5433/app"


@pytest.mark.parametrize(("url", "driver", "dialect"), [
    ("postgres://u@h/d", "postgresql+psycopg", "postgresql"),
    ("postgresql+psycopg2://u@h/d", "postgresql+psycopg", "postgresql"),
    ("mysql://u@h/d", "mysql+pymysql", "mysql"),
    ("mariadb://u@h/d", "mysql+pymysql", "mysql"),
    ("sqlite:////tmp/x.db", "sqlite", "sqlite"),
])
def test_scheme_picks_the_driver(url: str, driver: str, dialect: str) -> None:
    resolved = resolve_source(None, environ={}, override=url)
    assert (resolved.url.drivername, resolved.dialect) == (driver, dialect)


def test_url_env_and_placeholders_in_its_value() -> None:
    env = {"DATABASE_URL": "postgresql://u:${DB_PASS}@db/app", "DB_PASS": "s3cr3t"}
    resolved = resolve_source(source(url_env="DATABASE_URL"), environ=env)
    assert resolved.url.password == "s3cr3t"
    assert "s3cr3t" not in resolved.display
    with pytest.raises(SourceUrlError, match="DB_PASS"):
        resolve_source(source(url_env="DATABASE_URL"), environ={"DATABASE_URL": env[
            "DATABASE_URL"]})
    with pytest.raises(SourceUrlError, match=r"DATABASE_URL .*not set"):
        resolve_source(source(url_env="DATABASE_URL"), environ={})


def test_url_file_is_trimmed_and_relative_to_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "source.url").write_text("  mysql://u:pw@db/app\n")
    monkeypatch.chdir(tmp_path)
    resolved = resolve_source(source(type="mysql", url_file="source.url"), environ={})
    assert resolved.url.drivername == "mysql+pymysql"
    with pytest.raises(SourceUrlError, match=r"cannot read source\.url_file 'missing\.url'"):
        resolve_source(source(url_file="missing.url"), environ={})


def test_structured_fields_default_ports_and_password_env() -> None:
    pg = resolve_source(source(host="db", user="u", database="app", password="p@ss:w/rd"),
                        environ={})
    assert (pg.url.port, pg.url.password) == (5432, "p@ss:w/rd")
    my = resolve_source(source(type="mysql", host="db", user="u", database="app",
                               password_env="MYPW"), environ={"MYPW": "x"})
    assert (my.url.drivername, my.url.port, my.url.password) == ("mysql+pymysql", 3306, "x")
    nopw = resolve_source(source(host="db", user="u", database="app"), environ={})
    assert nopw.url.password is None
    with pytest.raises(SourceUrlError, match=r"MYPW .*password_env"):
        resolve_source(source(host="db", user="u", database="app", password_env="MYPW"),
                       environ={})
    with pytest.raises(SourceUrlError, match="missing 'user'"):
        resolve_source(source(host="db", database="app"), environ={})


def test_override_wins_argument_then_environment() -> None:
    config = source(url="postgresql://u@config/app")
    env = {SOURCE_URL_ENV: "postgresql://u@env/app"}
    assert resolve_source(config, environ=env).url.host == "env"
    assert resolve_source(config, environ=env, override="mysql://u@arg/app").url.host == "arg"
    # An override also rescues a config whose source cannot be resolved.
    assert resolve_source(None, environ=env, unresolved_variables=("X",)).url.host == "env"


def test_sqlite_only_through_the_override() -> None:
    with pytest.raises(SourceUrlError, match="cannot point preflight at a SQLite file"):
        resolve_source(source(url="sqlite:////tmp/x.db"), environ={})
    assert resolve_source(source(url="sqlite:////tmp/x.db"), environ={},
                          override="sqlite:////tmp/y.db").url.database == "/tmp/y.db"


def test_unsupported_and_unresolvable_sources() -> None:
    with pytest.raises(SourceUrlError, match="not mssql"):
        resolve_source(source(type="mssql", url="mssql://h/d"), environ={})
    with pytest.raises(SourceUrlError, match=r"\$\{DB_PASSWORD\}"):
        resolve_source(source(url="postgresql://u:${DB_PASSWORD}@h/d"), environ={},
                       unresolved_variables=("DB_PASSWORD",))
    with pytest.raises(SourceUrlError, match="cannot connect to 'mongodb'"):
        resolve_source(source(url="mongodb://h/d"), environ={})


def test_unset_source_variable_is_a_per_export_error_not_a_crash(tmp_path: Path) -> None:
    loaded, path = write_config(
        tmp_path, [{"name": "a", "table": "orders"}, {"name": "b", "query": "SELECT 1"}],
        source={"type": "postgres", "url": "postgresql://u:${DB_PASSWORD}@db/app"})
    assert loaded.unresolved_source_variables == ("DB_PASSWORD",)
    facts = collect_facts([(loaded, path)], environ={})
    exports = facts.configs[loaded.path].exports
    assert set(exports) == {"a", "b"}
    for entry in exports.values():
        assert entry.preflight_error is not None
        assert "${DB_PASSWORD}" in entry.preflight_error


def test_unparseable_url_is_never_echoed(tmp_path: Path) -> None:
    # A PR could aim url_file / url_env at a file or variable and read it back from the error.
    secret_file = tmp_path / "credentials"
    secret_file.write_text("aws_secret_access_key = wJalrXUtnFEMI\n")
    for config, environ in [(source(url_file=str(secret_file)), {}),
                            (source(url_env="AWS_SECRET"), {"AWS_SECRET": "wJalrXUtnFEMI"})]:
        with pytest.raises(SourceUrlError) as raised:
            resolve_source(config, environ=environ)
        assert "wJalrXUtnFEMI" not in str(raised.value)
        assert "cannot parse source.url_" in str(raised.value)
