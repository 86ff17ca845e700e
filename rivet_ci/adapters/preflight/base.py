"""What every dialect's probe session provides, and the shapes of what it observes.

A :class:`ProbeSession` is one read-only database session with a statement timeout on every
statement. It answers four questions, each with as few statements as the dialect allows:
``explain`` (plan of one vetted query: rows, width, index use, what it reads in full),
``relations`` (for many tables at once: kind, size statistics, columns, leading btree columns),
``min_max`` (min and max of several columns of ONE base table, in one statement) and
``max_connections``. The collector decides *whether* a probe is cheap enough to run; sessions
only run what they are asked, safely. A session whose connection cannot be trusted any more
(an error while ending or starting a transaction, a result it could not read) sets ``broken``:
the collector then replaces it instead of sending more statements down a poisoned connection.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import sqlalchemy as sa

from rivet_ci.adapters.preflight.safety import VettedQuery
from rivet_ci.core.facts.probe_rules import PlanFacts, Rel, RelationInfo


@dataclass(frozen=True)
class PreflightOptions:
    """Limits of live preflight. Defaults suit a production replica.

    statement_timeout_s: every statement is cancelled by the server after this long.
    connect_timeout_s: give up connecting after this long (libpq rounds up to at least 2 s).
    range_probe_row_bound: min/max of an unindexed range column is probed only when the export
        reads fewer rows than this (a full scan of a big table is exactly what preflight must not
        do on a replica).
    max_connections_per_group: concurrent connections per `source_group` and per source URL.
    """

    statement_timeout_s: float = 5.0
    connect_timeout_s: float = 5.0
    range_probe_row_bound: int = 1_000_000
    max_connections_per_group: int = 1

    def __post_init__(self) -> None:
        if self.statement_timeout_s <= 0 or self.connect_timeout_s <= 0:
            raise ValueError("timeouts must be positive")
        if self.range_probe_row_bound < 0:
            raise ValueError("range_probe_row_bound must be >= 0")
        if self.max_connections_per_group < 1:
            raise ValueError("max_connections_per_group must be >= 1")


@dataclass(frozen=True)
class TableTarget:
    """A `table:` export: probes are built with SQLAlchemy Core so names are quoted by it.

    `order_by`: an incremental export's key (the cursor, or cursor and fallback in coalesce
    mode) — rivet EXPLAINs `SELECT * FROM (<base>) AS _rivet ORDER BY <key>`."""

    rel: Rel
    order_by: tuple[str, ...] = ()
    # A view's range, read as rivet reads a query's (see QueryTarget).
    min_max_of: str | None = None


@dataclass(frozen=True)
class QueryTarget:
    """A `query:` / `query_file:` export, vetted.

    `order_by` as for :class:`TableTarget`. `min_max_of`: not the export's query but rivet's
    range statement over it, `SELECT min(c), max(c) FROM (<query>) AS _rivet` — EXPLAINed
    first, and run only for a trusted query whose plan of it is bounded (collector's rule)."""

    query: VettedQuery
    order_by: tuple[str, ...] = ()
    min_max_of: str | None = None


Target = TableTarget | QueryTarget


class ProbeSession(Protocol):
    """One read-only session on one source (see the module docstring)."""

    max_connections: int | None

    def explain(self, target: Target) -> PlanFacts: ...

    def relations(self, rels: Sequence[Rel]) -> dict[Rel, RelationInfo]: ...

    def min_max(self, rel: Rel, columns: Sequence[str],
                null_checks: Sequence[str] = ()) -> dict[str, MinMax]: ...

    def query_min_max(self, target: Target) -> MinMax: ...

    @property
    def broken(self) -> bool: ...

    def close(self) -> None: ...


# min and max of one column, rendered (None: no non-null value, or too long to record), and
# whether a row with NULL in it exists (None: not checked).
MinMax = tuple[str | None, str | None, bool | None]

# EXPLAIN output larger than this is refused (a query of a few kB can plan into megabytes).
MAX_EXPLAIN_CHARS = 1_000_000
# A min/max value longer than this (rendered) is not recorded: a range column is a number, a
# date or a short key, and facts must stay small.
MAX_VALUE_CHARS = 256


class ExplainTooLargeError(Exception):
    """The plan document is over MAX_EXPLAIN_CHARS."""

    def __init__(self, size: int) -> None:
        super().__init__(f"EXPLAIN output of {size} characters is over the limit of "
                         f"{MAX_EXPLAIN_CHARS}")


# Execution option for statements that embed vetted SQL text: the driver gets the text as is,
# with no parameter processing, so `%` and `:name` inside literals stay literal.
RAW = {"no_parameters": True}


def render(value: object) -> str | None:
    """min/max as the facts contract wants them: strings, as the database renders them.

    A value longer than MAX_VALUE_CHARS is not recorded (None).
    """
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        if len(value) * 2 > MAX_VALUE_CHARS:
            return None
        return bytes(value).hex()
    text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else None


def checked_plan_text(raw: object) -> object:
    """A plan document as the driver returned it, refused when over MAX_EXPLAIN_CHARS."""
    if isinstance(raw, str | bytes) and len(raw) > MAX_EXPLAIN_CHARS:
        raise ExplainTooLargeError(len(raw))
    return raw


def min_max_statement(rel: Rel, columns: Sequence[str],
                      null_checks: Sequence[str] = ()) -> sa.Select[Any]:
    """`SELECT min(a), max(a), min(b), max(b) ..., EXISTS (SELECT 1 FROM t WHERE a IS NULL) ...
    FROM schema.name`: one statement for all the range columns of one base table (quoting left
    to SQLAlchemy); the NULL checks only for the columns asked (rivet's NULL-key probe)."""
    aggregates: list[sa.ColumnElement[Any]] = []
    for name in columns:
        col: sa.ColumnClause[Any] = sa.column(name)
        aggregates += [sa.func.min(col), sa.func.max(col)]
    schema, table_name = rel
    for name in null_checks:
        inner = sa.table(table_name, sa.column(name), schema=schema).alias("rivet_n")
        aggregates.append(sa.exists(sa.select(sa.literal(1)).select_from(inner)
                                    .where(inner.c[name].is_(None))))
    return table_select(rel, *aggregates)


def min_max_values(columns: Sequence[str], row: Sequence[Any],
                   null_checks: Sequence[str] = ()) -> dict[str, MinMax]:
    nulls = {name: bool(row[2 * len(columns) + i]) for i, name in enumerate(null_checks)}
    return {name: (render(row[2 * i]), render(row[2 * i + 1]), nulls.get(name))
            for i, name in enumerate(columns)}


def table_select(rel: Rel, *columns: sa.ColumnElement[Any]) -> sa.Select[Any]:
    """`SELECT <columns> FROM schema.name`, quoting left to SQLAlchemy."""
    schema, name = rel
    return sa.select(*columns).select_from(sa.table(name, schema=schema))


def select_all_sql(conn: sa.Connection, rel: Rel) -> str:
    """`SELECT * FROM schema.name` as text for EXPLAIN, rendered by the connection's dialect."""
    stmt = table_select(rel, sa.literal_column("*"))
    return " ".join(str(stmt.compile(dialect=conn.dialect)).split())


def quoted(conn: sa.Connection, name: str) -> str:
    """An identifier quoted by the dialect's own preparer (only where SQL text is unavoidable)."""
    return conn.dialect.identifier_preparer.quote(name)


def error_class(exc: BaseException) -> str:
    """What kind of error the driver raised, without its message (which may quote data).

    `UndefinedTable (SQLSTATE 42P01)`, `OperationalError (error 1105, SQLSTATE HY000)`,
    `OperationalError (SQLITE_ERROR)`: enough to act on, nothing a query could smuggle out.
    """
    orig = getattr(exc, "orig", None)
    inner: BaseException = orig if isinstance(orig, BaseException) else exc
    name = type(inner).__name__
    parts: list[str] = []
    if inner.args and isinstance(inner.args[0], int) and not isinstance(inner.args[0], bool):
        parts.append(f"error {inner.args[0]}")  # PyMySQL: (code, message)
    sqlstate = getattr(inner, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate.isalnum():
        parts.append(f"SQLSTATE {sqlstate}")
    sqlite_name = getattr(inner, "sqlite_errorname", None)
    if isinstance(sqlite_name, str) and sqlite_name.replace("_", "").isalnum():
        parts.append(sqlite_name)
    return f"{name} ({', '.join(parts)})" if parts else name


def error_text(exc: BaseException) -> str:
    """The driver's message (not SQLAlchemy's wrapper with the SQL and a link), one line."""
    orig = getattr(exc, "orig", None)
    inner: BaseException = orig if isinstance(orig, BaseException) else exc
    args = inner.args
    if len(args) == 2 and isinstance(args[0], int) and isinstance(args[1], str):
        text = f"{args[1]} (error {args[0]})"  # PyMySQL: (code, message)
    else:
        text = str(inner)
    text = " ".join(text.split())
    if not text:
        text = type(inner).__name__
    return text[:500]


class ProbeTimeoutError(Exception):
    """A probe was cut off by the statement timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"cut off by the statement timeout ({seconds:g} s)")
        self.seconds = seconds


T = TypeVar("T")
# A read-only transaction is ended after this long or this many probes, so no snapshot or lock
# is held on the source for long.
TXN_MAX_SECONDS = 1.0
TXN_MAX_PROBES = 500


class RecyclingSession:
    """Probes on one connection, in read-only transactions kept short.

    A transaction is reused for up to `TXN_MAX_SECONDS` or `TXN_MAX_PROBES` probes, then ended
    so no lock or snapshot is held on the replica for long. Dialects supply `_begin` (end the
    current transaction, if any, and start a read-only one with its settings — one round trip),
    `_rollback` (end a failed transaction) and `_is_timeout`.

    Recovery: a failed probe rolls its transaction back so the next starts clean. When that
    rollback fails too, or starting/ending a transaction fails, or a probe fails with anything
    but a database error (a result the driver could not read), the connection is invalidated and
    the session marked `broken`; the collector opens a fresh one.
    """

    _conn: sa.Connection
    _options: PreflightOptions
    _txn_started: float = 0.0
    _txn_probes: int = 0
    _in_txn: bool = False
    _broken: bool = False

    @property
    def broken(self) -> bool:
        return self._broken or self._conn.invalidated or self._conn.closed

    def _begin(self, *, end_current: bool) -> None:
        raise NotImplementedError

    def _rollback(self) -> None:
        raise NotImplementedError

    def _is_timeout(self, exc: sa.exc.DBAPIError) -> bool:
        raise NotImplementedError

    def _start_transaction(self, *, end_current: bool = False) -> None:
        self._in_txn = False
        self._begin(end_current=end_current)
        self._in_txn = True
        self._txn_started = time.monotonic()
        self._txn_probes = 0

    def _poison(self) -> None:
        """The connection's state is unknown: never send another statement down it."""
        self._broken = True
        self._in_txn = False
        with contextlib.suppress(Exception):
            self._conn.invalidate()

    def _recover(self, exc: BaseException) -> None:
        if not isinstance(exc, sa.exc.DBAPIError) or is_connection_lost(exc):
            self._poison()
            return
        try:
            self._rollback()
            self._in_txn = False
        except Exception:  # the rollback failed too (e.g. PendingRollbackError): start afresh
            self._poison()

    def query_min_max(self, target: Target) -> MinMax:
        return self._run(lambda conn: query_min_max(conn, target))

    def read(self, probe: Callable[[sa.Connection], T]) -> T:
        """Run one catalog read under this session's safety (read-only transaction, statement
        timeout, recovery), as every probe is (`rivet_ci.adapters.preflight.catalog`)."""
        return self._run(probe)

    def _run(self, probe: Callable[[sa.Connection], T]) -> T:
        if self.broken:
            raise BrokenSessionError
        try:
            expired = self._in_txn and (
                self._txn_probes >= TXN_MAX_PROBES
                or time.monotonic() - self._txn_started > TXN_MAX_SECONDS)
            if expired or not self._in_txn:
                self._start_transaction(end_current=expired)
        except Exception:
            self._poison()
            raise
        self._txn_probes += 1
        try:
            return probe(self._conn)
        except Exception as exc:
            self._recover(exc)
            if isinstance(exc, sa.exc.DBAPIError) and self._is_timeout(exc):
                raise ProbeTimeoutError(self._options.statement_timeout_s) from exc
            raise


class BrokenSessionError(Exception):
    """The session was marked broken by an earlier failure; open another."""

    def __init__(self) -> None:
        super().__init__("the connection was reset after an earlier error")


def is_connection_lost(exc: BaseException) -> bool:
    return isinstance(exc, sa.exc.DBAPIError) and bool(exc.connection_invalidated)


def select_sql(conn: sa.Connection, target: Target) -> str:
    """The SQL rivet would run for the export: the vetted query, or `SELECT *` of the table;
    wrapped as rivet wraps it for an incremental key (`ORDER BY`) or a query's range
    (`min`/`max`). Identifiers are quoted by the dialect; values never appear."""
    base = (target.query.text if isinstance(target, QueryTarget)
            else select_all_sql(conn, target.rel))
    if target.min_max_of is not None:
        column = quoted(conn, target.min_max_of)
        return f"SELECT min({column}), max({column}) FROM ({base}) AS _rivet"
    if not target.order_by:
        return base
    keys = [quoted(conn, name) for name in target.order_by]
    key = keys[0] if len(keys) == 1 else f"COALESCE({', '.join(keys)})"
    return f"SELECT * FROM ({base}) AS _rivet ORDER BY {key}"


def query_min_max(conn: sa.Connection, target: Target) -> MinMax:
    """Run rivet's range statement over a query (`target.min_max_of` set): min and max, as
    rendered for the facts; NULL presence is not checked."""
    assert target.min_max_of is not None
    row = conn.exec_driver_sql(select_sql(conn, target), execution_options=RAW).one()
    return (render(row[0]), render(row[1]), None)

