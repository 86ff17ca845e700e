"""Run history from rivet's state database, read-only (spec §5).

Where: `--state-url` (a postgres URL, a `sqlite:///` URL or a file path), else `RIVET_STATE_URL`
when it starts with `postgres` (rivet ignores other values), else `.rivet_state.db` beside the
config. What: the 20 newest `export_metrics` rows per export by `id` descending, leaving out
`status = 'running'`, as :class:`~rivet_ci.core.facts.history.RunRecord`s, and the newest `success`
row among the 25 newest (rivet's measured-rows overlay) — one statement per state database for
all exports (`row_number()` windows).

Never writes: SQLite is opened with a `mode=ro` URI (or `immutable=1` for a WAL-mode file whose
WAL is absent, so no `-wal`/`-shm` files appear next to it), Postgres in a READ ONLY transaction
with a statement timeout. Nothing is created or migrated. A missing file or table is simply no
history. Any other failure is reported in :attr:`StateHistory.problem` (passwords masked) and
also means no history: history refines a plan, it never blocks one.

A SQLite state file may come from anywhere (a pull request can commit one), so it is read
defensively: `export_metrics` must be a TABLE (a view — e.g. a recursive one that never ends
and spills to temp files — is refused without being read), every statement runs under a
progress handler that interrupts it past the deadline (`timeout_s`), and temp storage stays
bounded by the file itself (a plain table sorted once).

Usage::

    history = read_history(Path("pipelines/a.yaml"), ["orders"], environ=os.environ)
    runs = history.runs.get("orders", [])
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from rivet_ci.adapters.preflight.base import error_text
from rivet_ci.core.common.limits import I64_MAX, as_int
from rivet_ci.core.facts.history import HISTORY_SAMPLE, RunRecord
from rivet_ci.core.facts.models import MeasuredRun
from rivet_ci.output.redaction import Redactor

STATE_URL_ENV = "RIVET_STATE_URL"
STATE_FILE = ".rivet_state.db"
TABLE = "export_metrics"
_REQUIRED = ("id", "export_name", "status")
_OPTIONAL = ("duration_ms", "retries", "run_at", "total_rows", "error_message")
_MAX_ERROR_CHARS = 500
# rivet's measured-rows overlay reads the newest `success` among this many newest rows.
MEASURED_WINDOW = 25


@dataclass(frozen=True)
class StateLocation:
    """Where the state database is: a SQLite file or a Postgres URL."""

    path: Path | None = None
    url: sa.URL | None = None

    def describe(self) -> str:
        if self.url is not None:
            return Redactor([self.url.password or ""])(
                self.url.render_as_string(hide_password=True))
        return str(self.path)


@dataclass(frozen=True)
class StateHistory:
    """History per export name, newest first; `problem` says why there is none, if it failed."""

    location: str
    runs: dict[str, list[RunRecord]] = field(default_factory=dict)
    problem: str | None = None
    # The newest `success` run among each export's 25 newest rows (with total_rows and run_at).
    last_success: dict[str, MeasuredRun] = field(default_factory=dict)


def locate_state(
    config_path: Path, *, environ: Mapping[str, str], state_url: str | None = None
) -> StateLocation:
    """Where rivet keeps the state of this config (see the module docstring)."""
    explicit = state_url or None
    env_url = environ.get(STATE_URL_ENV, "")
    if explicit is None and env_url.startswith("postgres"):
        explicit = env_url
    if explicit is None:
        return StateLocation(path=config_path.parent / STATE_FILE)
    if explicit.startswith("postgres"):
        return StateLocation(url=make_url(explicit).set(drivername="postgresql+psycopg"))
    if explicit.startswith("sqlite:"):
        return StateLocation(path=Path(make_url(explicit).database or ""))
    return StateLocation(path=Path(explicit))


def read_history(
    config_path: Path,
    export_names: Iterable[str],
    *,
    environ: Mapping[str, str],
    state_url: str | None = None,
    timeout_s: float = 5.0,
) -> StateHistory:
    """The newest finished runs of each export of one config (never raises for I/O)."""
    location = locate_state(config_path, environ=environ, state_url=state_url)
    return read_history_at(location, export_names, timeout_s=timeout_s)


def read_history_at(
    location: StateLocation, export_names: Iterable[str], *, timeout_s: float = 5.0
) -> StateHistory:
    names = sorted(set(export_names))
    where = location.describe()
    redact = Redactor([location.url.password or ""] if location.url is not None else [])
    if not names:
        return StateHistory(location=where)
    try:
        if location.url is not None:
            rows = _read_postgres(location.url, names, timeout_s)
        else:
            assert location.path is not None
            if not location.path.is_file():
                return StateHistory(location=where)  # no state yet: no history
            rows = _read_sqlite(location.path, names, timeout_s)
    except Exception as exc:  # history must never stop planning
        reason = str(exc) if isinstance(exc, HistoryTimeoutError | LookupError) else error_text(
            exc)
        return StateHistory(location=where,
                            problem=redact(f"cannot read run history from {where}: {reason}"))
    if rows is None:
        return StateHistory(location=where)
    runs: dict[str, list[RunRecord]] = {}
    per_export: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:  # newest first per export
        per_export.setdefault(str(row["export_name"]), []).append(row)
        if row["is_running"] or int(row["rn"]) > HISTORY_SAMPLE:
            continue
        record = _record(row, redact)
        if record is not None:
            runs.setdefault(str(row["export_name"]), []).append(record)
    last = {name: found for name, export_rows in per_export.items()
            if (found := _last_success(export_rows)) is not None}
    return StateHistory(location=where, runs=runs, last_success=last)


class HistoryTimeoutError(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"reading it took longer than {seconds:g} s")


def _read_sqlite(path: Path, names: list[str], timeout_s: float) -> list[dict[str, Any]] | None:
    uri = _sqlite_uri(path)
    deadline = time.monotonic() + timeout_s

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout_s, check_same_thread=False)
        # Called every 10,000 virtual-machine instructions: past the deadline, interrupt.
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        return conn

    engine = sa.create_engine("sqlite://", creator=connect, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA query_only = 1")
            kind = conn.exec_driver_sql(
                "SELECT type FROM sqlite_master WHERE name = ? COLLATE NOCASE",
                (TABLE,)).scalar()
            if kind is None:
                return None
            if kind != "table":
                raise LookupError(f"{TABLE} is a {kind}, not a table: not read")
            return _select(conn, names)
    except sa.exc.OperationalError as exc:
        if "interrupted" in str(exc.orig):
            raise HistoryTimeoutError(timeout_s) from None
        raise
    finally:
        engine.dispose()


def _sqlite_uri(path: Path) -> str:
    resolved = path.resolve()
    with resolved.open("rb") as fh:
        header = fh.read(20)
    wal_mode = len(header) == 20 and header[18] == 2  # file format version 2 = WAL
    wal = resolved.with_name(resolved.name + "-wal")
    # A read-only open of a WAL database would create -wal/-shm files beside it. With no WAL
    # file present there is nothing to replay, so the file can be read as immutable instead.
    mode = "immutable=1" if wal_mode and not wal.exists() else "mode=ro"
    return f"file:{quote(str(resolved))}?{mode}"


def _read_postgres(url: sa.URL, names: list[str], timeout_s: float) -> list[dict[str, Any]] | None:
    engine = sa.create_engine(url, poolclass=NullPool, connect_args={
        "connect_timeout": max(2, math.ceil(timeout_s)),
        "application_name": "rivet-ci-history",
    })
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            conn.execute(sa.text("SELECT set_config('statement_timeout', :t, true)"),
                         {"t": f"{max(1, round(timeout_s * 1000))}ms"})
            try:
                return _select(conn, names)
            finally:
                conn.rollback()
    finally:
        engine.dispose()


def _select(conn: sa.Connection, names: list[str]) -> list[dict[str, Any]] | None:
    inspector = sa.inspect(conn)
    if not inspector.has_table(TABLE):
        return None
    present = {c["name"].lower(): c["name"] for c in inspector.get_columns(TABLE)}
    missing = [c for c in _REQUIRED if c not in present]
    if missing:
        raise LookupError(f"{TABLE} has no column {', '.join(missing)}")
    table = sa.table(TABLE, *(sa.column(present[c]) for c in present))

    def col(name: str) -> sa.ColumnElement[Any]:
        if name in present:
            return table.c[present[name]].label(name)
        return sa.null().label(name)

    export_name = table.c[present["export_name"]]
    status = table.c[present["status"]]
    newest_first = table.c[present["id"]].desc()
    running = sa.func.lower(sa.func.coalesce(status, "")) == "running"
    # rn_all: position among all of the export's rows (rivet's measured-rows overlay looks at the
    # 25 newest); rn_done: position among its finished rows (the history sample, 20 newest).
    rn_all = sa.func.row_number().over(partition_by=export_name, order_by=newest_first)
    rn_done = sa.func.row_number().over(partition_by=(export_name, running),
                                        order_by=newest_first)
    ranked = (
        sa.select(*(col(c) for c in ("export_name", "status", *_OPTIONAL)),
                  running.label("is_running"), rn_all.label("rn_all"),
                  rn_done.label("rn"))
        .where(export_name.in_(names))
        .subquery("ranked")
    )
    stmt = (sa.select(ranked)
            .where(sa.or_(ranked.c.rn_all <= MEASURED_WINDOW,
                          sa.and_(sa.not_(ranked.c.is_running), ranked.c.rn <= HISTORY_SAMPLE)))
            .order_by(ranked.c.export_name, ranked.c.rn_all))
    return [dict(row) for row in conn.execute(stmt).mappings()]


def _last_success(rows: list[Mapping[str, Any]]) -> MeasuredRun | None:
    """The newest run with status exactly `success` among the export's 25 newest rows, if it
    has a total_rows and a run_at (rivet's measured-rows overlay)."""
    for row in rows:
        if int(row["rn_all"]) > MEASURED_WINDOW:
            break
        if row.get("status") == "success":
            total = _non_negative(row.get("total_rows"))
            run_at = row.get("run_at")
            if total is None or run_at is None:
                return None
            return MeasuredRun(total_rows=total, run_at=str(run_at))
    return None


def _record(row: Mapping[str, Any], redact: Redactor) -> RunRecord | None:
    status = row.get("status")
    if status is None:
        return None
    message = row.get("error_message")
    if message is not None:
        # rivet's error messages may quote a DSN: mask passwords before they reach a comment.
        message = redact(str(message))[:_MAX_ERROR_CHARS]
    return RunRecord(
        status=str(status),
        duration_ms=_non_negative(row.get("duration_ms")),
        retries=_non_negative(row.get("retries")),
        run_at=str(row["run_at"]) if row.get("run_at") is not None else None,
        total_rows=_non_negative(row.get("total_rows")),
        error_message=message,
    )


def _non_negative(value: object) -> int | None:
    number = as_int(value)  # the history contract stores 64-bit integers
    return number if number is not None and 0 <= number <= I64_MAX else None
