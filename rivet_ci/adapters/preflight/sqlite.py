"""SQLite probes through SQLAlchemy + the standard library driver.

Safety: the file is opened with a `file:...?mode=ro` URI (a missing file is an error, never a
new database) plus `PRAGMA query_only`. SQLite has no server-side statement timeout, so each
probe runs under a progress handler that interrupts it past the deadline.

SQLite plans carry no row counts. A table's size comes from `sqlite_stat1` (written by the
user's ANALYZE: the first number of each row is the row count); without it, `count(*)` of the
table or view the config names is run only when the whole database is small (`PRAGMA
page_count` under a bound), else the size is unknown. A `query:` is never run (not even
counted): its size is unknown. Indexes come from `pragma_index_list` / `pragma_index_info`
(non-partial indexes whose first column is the one asked about) and the rowid alias
(`INTEGER PRIMARY KEY`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, cast
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from rivet_ci.adapters.preflight.base import (
    RAW,
    MinMax,
    PreflightOptions,
    ProbeTimeoutError,
    TableTarget,
    Target,
    min_max_statement,
    min_max_values,
    query_min_max,
    quoted,
    select_sql,
    table_select,
)
from rivet_ci.adapters.preflight.source_url import ResolvedSource
from rivet_ci.core.facts.probe_rules import FullScan, PlanFacts, Rel, RelationInfo

T = TypeVar("T")
# count(*) is allowed only on databases of at most this many pages (~100 MB at 4 KiB): a full
# scan of that is well under a second, and the statement timeout still applies.
COUNT_PAGE_BOUND = 25_000
_INDEX_MARKERS = ("USING INDEX", "USING COVERING INDEX", "USING INTEGER PRIMARY KEY",
                  "USING PRIMARY KEY", "USING ROWID")


def fold_identifier(name: str) -> str:
    """SQLite compares identifiers case-insensitively; keep them as written."""
    return name


def database_path(source: ResolvedSource) -> Path:
    database = source.url.database
    if not database or database == ":memory:":
        raise ValueError("an in-memory SQLite database has nothing to plan")
    return Path(database).resolve()


def create_engine(source: ResolvedSource, options: PreflightOptions) -> sa.Engine:
    path = database_path(source)

    def connect() -> sqlite3.Connection:
        # Checked here so a missing file is reported as such, not as "unable to open".
        if not path.is_file():
            raise sqlite3.OperationalError(f"no SQLite database at {path}")
        return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True,
                               timeout=options.connect_timeout_s, check_same_thread=False)

    return sa.create_engine("sqlite://", creator=connect, poolclass=NullPool)


def open_session(engine: sa.Engine, options: PreflightOptions) -> SQLiteSession:
    return SQLiteSession(engine, options)


class SQLiteSession:
    """A read-only SQLite session (see the module docstring)."""

    max_connections: int | None = None
    broken: bool = False

    def __init__(self, engine: sa.Engine, options: PreflightOptions) -> None:
        self._options = options
        self._conn = engine.connect()
        self._relations: dict[Rel, RelationInfo | None] = {}
        try:
            self._conn.exec_driver_sql("PRAGMA query_only = 1")
            self._pages = int(self._conn.exec_driver_sql("PRAGMA page_count").scalar_one())
        except BaseException:
            self._conn.close()
            raise

    @property
    def small(self) -> bool:
        return self._pages <= COUNT_PAGE_BOUND

    def read(self, probe: Callable[[sa.Connection], T]) -> T:
        """Run one catalog read under this session's deadline (read-only file)."""
        return self._run(probe)

    def _run(self, probe: Callable[[sa.Connection], T]) -> T:
        raw = cast(sqlite3.Connection, self._conn.connection.dbapi_connection)
        deadline = time.monotonic() + self._options.statement_timeout_s
        # Called every N virtual-machine instructions; a non-zero return interrupts the query.
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            return probe(self._conn)
        except sa.exc.OperationalError as exc:
            if "interrupted" in str(exc.orig):
                raise ProbeTimeoutError(self._options.statement_timeout_s) from exc
            raise
        finally:
            raw.set_progress_handler(None, 0)
            if self._conn.in_transaction():
                self._conn.rollback()

    def query_min_max(self, target: Target) -> MinMax:
        return self._run(lambda conn: query_min_max(conn, target))

    def explain(self, target: Target) -> PlanFacts:
        select = select_sql(self._conn, target)
        rows = self._run(lambda c: c.exec_driver_sql("EXPLAIN QUERY PLAN " + select,
                                                     execution_options=RAW).all())
        details = [str(r[3]) for r in rows]
        relations = (target.rel,) if isinstance(target, TableTarget) else target.query.relations
        by_name = {name.lower(): (schema, name) for schema, name in relations}
        full: list[FullScan] = []
        for detail in details:
            words = detail.split()
            if len(words) >= 2 and words[0] == "SCAN" and not any(
                    marker in detail for marker in _INDEX_MARKERS):
                rel = by_name.get(words[1].lower())
                full.append(FullScan(rel) if rel else FullScan(None, None))
        notes: list[str] = []
        estimate: int | None = None
        if isinstance(target, TableTarget):
            info = self.relations([target.rel]).get(target.rel)
            estimate = info.rows if info else None
        if estimate is None and self.small and isinstance(target, TableTarget):
            estimate = self._bounded_count(select, notes)
        return PlanFacts(
            row_estimate=estimate,
            uses_index=any(marker in d for d in details for marker in _INDEX_MARKERS),
            relations=tuple(relations), full_scans=tuple(full), notes=tuple(notes),
        )

    def _bounded_count(self, select: str, notes: list[str]) -> int | None:
        """Rows of a table or view the config names, in a small file, counted up to the probe
        bound only (never a `query:`: that would run SQL a pull request wrote)."""
        bound = self._options.range_probe_row_bound
        # The LIMIT stops a huge result (a cross join) early; the deadline stops the rest.
        sql = f"SELECT count(*) FROM (SELECT 1 FROM ({select}) LIMIT ?)"
        try:
            count = int(self._run(lambda c: c.exec_driver_sql(sql, (bound,)).scalar_one()))
        except ProbeTimeoutError as exc:
            notes.append(f"row count {exc}")
            return None
        if count >= bound:
            notes.append(f"row count stopped at the probe bound ({bound})")
            return None
        notes.append("row count measured (small SQLite database)")
        return count

    def relations(self, rels: Sequence[Rel]) -> dict[Rel, RelationInfo]:
        for rel in rels:
            if rel not in self._relations:
                self._relations[rel] = self._relation(rel)
        return {rel: info for rel in rels if (info := self._relations[rel]) is not None}

    def _relation(self, rel: Rel) -> RelationInfo | None:
        schema, name = rel[0] or "main", rel[1]
        master = f"{quoted(self._conn, schema)}.sqlite_master"
        kind = self._run(lambda c: c.exec_driver_sql(
            f"SELECT type FROM {master} WHERE name = ? COLLATE NOCASE "
            f"AND type IN ('table', 'view')", (name,)).scalar())
        if kind is None:
            return None
        table_info = self._run(lambda c: c.exec_driver_sql(
            "SELECT name, upper(type), pk, \"notnull\" FROM pragma_table_info(?, ?)",
            (name, schema)).all())
        leading = {str(r[0]) for r in self._run(lambda c: c.exec_driver_sql(
            "SELECT ii.name FROM pragma_index_list(?, ?) AS il "
            "JOIN pragma_index_info(il.name, ?) AS ii "
            "WHERE ii.seqno = 0 AND il.partial = 0 AND ii.name IS NOT NULL",
            (name, schema, schema)).all())}
        # Single-column, non-partial unique indexes (a PRIMARY KEY's included), in index order.
        unique = [str(r[0]) for r in self._run(lambda c: c.exec_driver_sql(
            "SELECT min(ii.name) FROM pragma_index_list(?, ?) AS il "
            "JOIN pragma_index_info(il.name, ?) AS ii "
            "WHERE il.\"unique\" = 1 AND il.partial = 0 GROUP BY il.name, il.seq "
            "HAVING count(*) = 1 AND min(ii.name) IS NOT NULL ORDER BY il.seq",
            (name, schema, schema)).all())]
        types = {str(r[0]): str(r[1] or "") for r in table_info}
        # SQLite's affinity rule: a declared type containing INT is an integer column.
        integers = {col for col, kind in types.items() if "INT" in kind}
        pk = [r for r in table_info if r[2]]
        not_null = {str(r[0]) for r in table_info if r[3]}
        integer_pk: str | None = None
        if len(pk) == 1 and pk[0][1] == "INTEGER":
            integer_pk = str(pk[0][0])
            leading.add(integer_pk)  # the rowid alias: the table's own b-tree key
            unique.insert(0, integer_pk)
            not_null.add(integer_pk)  # a rowid is never NULL
        elif len(pk) == 1 and "INT" in str(pk[0][1]):
            integer_pk = str(pk[0][0])
        readable = ("INT", "CHAR", "CLOB", "TEXT", "REAL", "FLOA", "DOUB", "DATE", "TIME", "UUID")
        keyset = [col for col in dict.fromkeys(unique) if col in not_null
                  and any(word in types.get(col, "") for word in readable)]
        return RelationInfo(rows=self._rows(schema, name) if kind == "table" else None,
                            columns=frozenset(str(r[0]) for r in table_info),
                            leading_index_columns=frozenset(leading),
                            base_table=kind == "table", integer_columns=frozenset(integers),
                            not_null_columns=frozenset(not_null),
                            keyset_columns=frozenset(keyset), integer_primary_key=integer_pk)

    def _rows(self, schema: str, name: str) -> int | None:
        q_schema = quoted(self._conn, schema)
        has_stat = self._run(lambda c: c.exec_driver_sql(
            f"SELECT 1 FROM {q_schema}.sqlite_master WHERE name = 'sqlite_stat1'").scalar())
        if has_stat:
            stats = self._run(lambda c: c.exec_driver_sql(
                f"SELECT stat FROM {q_schema}.sqlite_stat1 WHERE tbl = ? COLLATE NOCASE",
                (name,)).scalars().all())
            counts = [int(s.split()[0]) for s in stats if s and s.split()[0].isdigit()]
            if counts:
                return max(counts)
        if self.small:
            stmt = table_select((schema, name), sa.func.count())
            count: int = self._run(lambda c: c.execute(stmt).scalar_one())
            return count
        return None

    def min_max(self, rel: Rel, columns: Sequence[str],
                null_checks: Sequence[str] = ()) -> dict[str, MinMax]:
        stmt = min_max_statement(rel, columns, null_checks)
        return min_max_values(columns, self._run(lambda c: c.execute(stmt).one()), null_checks)

    def close(self) -> None:
        self._conn.close()
