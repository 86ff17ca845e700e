"""What every dialect's probe session provides, and the shapes of what it observes.

A :class:`ProbeSession` is one read-only database session with a statement timeout on every
statement. It answers four questions, each with as few statements as the dialect allows:
``explain`` (plan of one vetted query: rows, width, index use, what it reads in full),
``relations`` (for many tables at once: size statistics, columns, leading btree columns),
``min_max`` (bounded range probe) and ``max_connections``. The collector decides *whether* a
probe is cheap enough to run; sessions only run what they are asked, safely.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import sqlalchemy as sa

from rivet_ci.adapters.preflight.safety import VettedQuery

# The facts contract stores integers as 64-bit values; a plan may estimate more (a cross join of
# two big tables), which is reported as this maximum.
MAX_FACT_INT = 2**63 - 1

# (schema or None, name): a relation as the collector names it. Names from a config are already
# case-folded the way the dialect folds unquoted identifiers.
Rel = tuple[str | None, str]


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
class FullScan:
    """A plan node that reads a whole relation (or a whole function result).

    `rows` is the node's own figure when there is no relation to look up (e.g. a function scan)
    or when the dialect reports rows read before filtering (MySQL).
    """

    relation: Rel | None
    rows: int | None = None


@dataclass(frozen=True)
class PlanFacts:
    """What a plain EXPLAIN (never ANALYZE) of one query says."""

    row_estimate: int | None
    avg_row_bytes: int | None = None
    uses_index: bool | None = None
    relations: tuple[Rel, ...] = ()
    full_scans: tuple[FullScan, ...] = ()
    # Upper bound on rows a join examines (MySQL: product of per-table rows), if known.
    examined_rows: int | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RelationInfo:
    """Catalog facts about one table or view."""

    rows: int | None
    columns: frozenset[str] | None
    leading_index_columns: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class TableTarget:
    """A `table:` export: probes are built with SQLAlchemy Core so names are quoted by it."""

    rel: Rel


@dataclass(frozen=True)
class QueryTarget:
    """A `query:` / `query_file:` export, vetted."""

    query: VettedQuery


Target = TableTarget | QueryTarget


class ProbeSession(Protocol):
    """One read-only session on one source (see the module docstring)."""

    max_connections: int | None

    def explain(self, target: Target) -> PlanFacts: ...

    def relations(self, rels: Sequence[Rel]) -> dict[Rel, RelationInfo]: ...

    def min_max(self, target: Target, column: str) -> tuple[str | None, str | None]: ...

    def close(self) -> None: ...


# Execution option for statements that embed vetted SQL text: the driver gets the text as is,
# with no parameter processing, so `%` and `:name` inside literals stay literal.
RAW = {"no_parameters": True}


def render(value: object) -> str | None:
    """min/max as the facts contract wants them: strings, as the database renders them."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


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
TXN_MAX_SECONDS = 1.0
TXN_MAX_PROBES = 50


class RecyclingSession:
    """Probes on one connection, in read-only transactions kept short.

    A transaction is reused for up to `TXN_MAX_SECONDS` or `TXN_MAX_PROBES` probes (fewer
    statements than one transaction per probe), then committed so no lock or snapshot is held on
    the replica for long. A failed probe rolls its transaction back so the next starts clean.
    Dialects supply `_begin` (start a read-only transaction) and `_is_timeout`.
    """

    _conn: sa.Connection
    _options: PreflightOptions
    _txn_started: float = 0.0
    _txn_probes: int = 0

    def _begin(self) -> None:
        """Start a read-only transaction (the dialect's statements); the default does nothing."""

    def _is_timeout(self, exc: sa.exc.DBAPIError) -> bool:
        raise NotImplementedError

    def _start_transaction(self) -> None:
        self._begin()
        self._txn_started = time.monotonic()
        self._txn_probes = 0

    def _run(self, probe: Callable[[sa.Connection], T]) -> T:
        if self._conn.in_transaction() and (
                self._txn_probes >= TXN_MAX_PROBES
                or time.monotonic() - self._txn_started > TXN_MAX_SECONDS):
            self._conn.commit()
        if not self._conn.in_transaction():
            self._start_transaction()
        self._txn_probes += 1
        try:
            return probe(self._conn)
        except sa.exc.DBAPIError as exc:
            # The transaction is aborted either way; end it so the next probe starts clean.
            with contextlib.suppress(sa.exc.DBAPIError):
                self._conn.rollback()
            if self._is_timeout(exc):
                raise ProbeTimeoutError(self._options.statement_timeout_s) from exc
            raise


def is_connection_lost(exc: BaseException) -> bool:
    return isinstance(exc, sa.exc.DBAPIError) and bool(exc.connection_invalidated)


def min_max_probe(
    conn: sa.Connection, target: Target, column: str,
) -> Callable[[sa.Connection], Sequence[Any]]:
    """The probe reading min and max of `column` over the export's relation.

    A `table:` export is queried through SQLAlchemy Core (identifiers quoted by SQLAlchemy); a
    vetted `query:` is wrapped as a subquery, as rivet wraps non-trivial queries.
    """
    if isinstance(target, TableTarget):
        col: sa.ColumnClause[Any] = sa.column(column)
        stmt = table_select(target.rel, sa.func.min(col), sa.func.max(col))
        return lambda c: c.execute(stmt).one()
    q = quoted(conn, column)
    sql = f"SELECT min(rivet_q.{q}), max(rivet_q.{q}) FROM ({target.query.text}) AS rivet_q"
    return lambda c: c.exec_driver_sql(sql, execution_options=RAW).one()


def select_sql(conn: sa.Connection, target: Target) -> str:
    """The SQL rivet would run for the export: the vetted query, or `SELECT *` of the table."""
    if isinstance(target, QueryTarget):
        return target.query.text
    return select_all_sql(conn, target.rel)

