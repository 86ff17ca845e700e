"""The source URL of a config, resolved the way rivet resolves it, then made SQLAlchemy-ready.

rivet's order (0.24.x, `SourceConfig::resolve_url`): structured fields (`host`, `port`, `user`,
`password` | `password_env`, `database`) build `scheme://user[:password]@host:port/database`
with port 5432 / 3306 by default; otherwise exactly one of `url`, `url_env` (the variable's
value) or `url_file` (the file's content, trimmed; a relative path is relative to the working
directory, as in rivet), and `${VAR}` placeholders in that URL are then substituted — an unset
one is an error, never an empty string. rivet-ci adds one thing in front: an explicit override
(`--source-url`, else `RIVET_CI_SOURCE_URL`) wins over the config, so CI can point every config
at one replica.

The scheme picks the driver: `postgres[ql]` → psycopg 3, `mysql` / `mariadb` → PyMySQL,
`sqlite` → the standard library (opened read-only; only through the override, since rivet has no
SQLite sources and a config must not aim preflight at local files). Other source types cannot be
probed live.
Errors are :class:`SourceUrlError` with messages that never contain the password.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from rivet_ci.adapters.preflight.safety import Dialect
from rivet_ci.core.common.patterns import PLACEHOLDER
from rivet_ci.core.config.models import SourceConfig
from rivet_ci.output.redaction import Redactor

SOURCE_URL_ENV = "RIVET_CI_SOURCE_URL"
_DEFAULT_PORTS = {"postgres": 5432, "mysql": 3306}


class SourceUrlError(Exception):
    """The source URL cannot be resolved; the message is safe to print (no secrets)."""


@dataclass(frozen=True)
class ResolvedSource:
    """A connectable source: the SQLAlchemy URL, its dialect and how to show it."""

    url: sa.URL
    dialect: Dialect
    secrets: tuple[str, ...]

    @property
    def key(self) -> str:
        """Identity of the source (with the password: two users are two sources)."""
        return self.url.render_as_string(hide_password=False)

    @property
    def display(self) -> str:
        """The URL with the password masked."""
        return Redactor(self.secrets)(self.url.render_as_string(hide_password=True))


def resolve_source(
    source: SourceConfig | None,
    *,
    environ: Mapping[str, str],
    override: str | None = None,
    unresolved_variables: Sequence[str] = (),
    read_url_file: UrlFileReader | None = None,
) -> ResolvedSource:
    """Resolve a config's source (or the override) to a connectable URL.

    `read_url_file` reads `source.url_file` (default: from disk, relative to the working
    directory, as rivet does); a pull-request run passes one that reads the base revision.
    """
    explicit = override if override else environ.get(SOURCE_URL_ENV) or None
    if explicit:
        return to_sqlalchemy(explicit, environ=environ, origin="the --source-url override")
    if source is None:
        raise SourceUrlError("the config's `source` section is invalid, so there is nothing to "
                             "connect to; fix it or pass --source-url")
    if unresolved_variables:
        names = ", ".join("${" + n + "}" for n in unresolved_variables)
        raise SourceUrlError(f"the source uses {names}, which is not set in the environment; "
                             f"set it or pass --source-url")
    if source.type not in ("postgres", "mysql"):
        raise SourceUrlError(f"live preflight supports postgres and mysql sources, not "
                             f"{source.type}; capture facts another way and plan with --facts")
    structured = [k for k in ("host", "user", "database", "password", "password_env")
                  if getattr(source, k) is not None]
    if structured and any(getattr(source, k) is not None for k in ("url", "url_env", "url_file")):
        raise SourceUrlError(f"the source mixes a URL with structured fields "
                             f"({', '.join(structured)}); rivet accepts one or the other")
    if structured:
        return _from_fields(source, environ)
    origin = (f"source.url_env ({source.url_env})" if source.url_env else
              f"source.url_file ({source.url_file})" if source.url_file else "source.url")
    resolved = to_sqlalchemy(rivet_url(source, environ, read_url_file), environ=environ,
                             origin=origin)
    if resolved.dialect == "sqlite":
        # rivet has no SQLite sources; letting a (PR-controlled) config name a local file would
        # let it read min/max of any SQLite database on the runner into the PR comment.
        raise SourceUrlError("a config cannot point preflight at a SQLite file (rivet has no "
                             "sqlite sources); pass one with --source-url")
    return resolved


UrlFileReader = Callable[[str], str]


def _read_url_file_from_disk(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def rivet_url(source: SourceConfig, environ: Mapping[str, str],
              read_url_file: UrlFileReader | None = None) -> str:
    """The raw URL from `url` / `url_env` / `url_file`, before placeholder substitution."""
    if source.url is not None:
        return source.url
    if source.url_env is not None:
        value = environ.get(source.url_env)
        if value is None:
            raise SourceUrlError(f"environment variable {source.url_env} (source.url_env) is "
                                 f"not set")
        return value
    if source.url_file is not None:
        try:
            return (read_url_file or _read_url_file_from_disk)(source.url_file).strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise SourceUrlError(f"cannot read source.url_file {source.url_file!r}: "
                                 f"{reason}") from None
    raise SourceUrlError("the source has none of url, url_env, url_file or host")


def to_sqlalchemy(raw: str, *, environ: Mapping[str, str], origin: str = "the source URL",
                  ) -> ResolvedSource:
    """A rivet-style URL (after `${VAR}` substitution) as a SQLAlchemy URL with our drivers."""
    text = _substitute(raw.strip(), environ)
    try:
        url = make_url(text)
    except Exception:  # SQLAlchemy raises several types; the URL is the cause
        # Never echo the text: a PR could point url_file / url_env at any file or variable
        # and read it back from the error in the PR comment.
        raise SourceUrlError(f"cannot parse {origin} as a database URL") from None
    backend = url.get_backend_name()
    if backend in ("postgres", "postgresql"):
        url = url.set(drivername="postgresql+psycopg")
        dialect: Dialect = "postgresql"
    elif backend in ("mysql", "mariadb"):
        url = url.set(drivername="mysql+pymysql")
        dialect = "mysql"
    elif backend == "sqlite":
        url = url.set(drivername="sqlite")
        dialect = "sqlite"
    else:
        raise SourceUrlError(f"live preflight cannot connect to {backend!r} URLs "
                             f"(postgres, mysql/mariadb and sqlite are supported)")
    return ResolvedSource(url=url, dialect=dialect, secrets=_secrets(url.password))


def _from_fields(source: SourceConfig, environ: Mapping[str, str]) -> ResolvedSource:
    for key in ("host", "user", "database"):
        if getattr(source, key) is None:
            raise SourceUrlError(f"the structured source is missing {key!r} (rivet needs host, "
                                 f"user and database)")
    if source.password_env is not None:
        password = environ.get(source.password_env)
        if password is None:
            raise SourceUrlError(f"environment variable {source.password_env} "
                                 f"(source.password_env) is not set")
    else:
        password = _substitute(source.password, environ) if source.password else None
    # rivet splices the parts into a string; building the URL from parts keeps the same meaning
    # and stays correct when the password contains `@`, `:` or `/`.
    url = sa.URL.create(
        "postgresql+psycopg" if source.type == "postgres" else "mysql+pymysql",
        username=source.user, password=password or None, host=source.host,
        port=source.port or _DEFAULT_PORTS[source.type], database=source.database,
    )
    dialect: Dialect = "postgresql" if source.type == "postgres" else "mysql"
    return ResolvedSource(url=url, dialect=dialect, secrets=_secrets(password))


def _substitute(text: str, environ: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if not name:
            return ""  # rivet keeps the legacy `${}` → "" expansion
        value = environ.get(name)
        if value is None:
            raise SourceUrlError(f"environment variable {name} (used as ${{{name}}} in the "
                                 f"source URL) is not set")
        return value

    return PLACEHOLDER.sub(replace, text)


def _secrets(password: object) -> tuple[str, ...]:
    return (str(password),) if password else ()
