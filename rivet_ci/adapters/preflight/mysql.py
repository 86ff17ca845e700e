"""MySQL / MariaDB probes through SQLAlchemy + PyMySQL.

Safety: before any probe the session is made read-only (`SET SESSION TRANSACTION READ ONLY`,
effective from the next transaction, hence the commit right after) and gets a statement timeout
— `max_statement_time` in seconds on MariaDB (every statement), `max_execution_time` in
milliseconds on MySQL (SELECTs) — plus a metadata-lock wait bound. PyMySQL never enables
multi-statements, and socket timeouts bound a server that stops answering. The export query is
only EXPLAINed; transactions are committed every second or 50 probes so metadata locks are not
held for the whole run.

Row estimate: `EXPLAIN FORMAT=JSON` (a str through PyMySQL). MariaDB's `query_block` gives
`rows` and `filtered` per table of the join: the estimate is Π rows × filtered / 100; MySQL 8's
format gives `rows_produced_per_join` on the last table. When JSON yields nothing, the first row
of a plain EXPLAIN (`rows` arrives as a string) is used. There is no row width here.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from rivet_ci.adapters.preflight.base import (
    MAX_FACT_INT,
    RAW,
    FullScan,
    PlanFacts,
    PreflightOptions,
    RecyclingSession,
    Rel,
    RelationInfo,
    TableTarget,
    Target,
    min_max_probe,
    render,
    select_sql,
)
from rivet_ci.adapters.preflight.source_url import ResolvedSource

T = TypeVar("T")
# MariaDB max_statement_time, MySQL max_execution_time, "query execution was interrupted".
_TIMEOUT_CODES = frozenset({1969, 3024, 1317})
_FULL_ACCESS = frozenset({"ALL", "index"})

# information_schema column names are case-insensitive; lower case keeps SQLAlchemy from
# quoting them.
_IS = "information_schema"
_TABLES = sa.table("TABLES", sa.column("table_schema"), sa.column("table_name"),
                   sa.column("table_rows"), sa.column("table_type"), schema=_IS)
_COLUMNS = sa.table("COLUMNS", sa.column("table_schema"), sa.column("table_name"),
                    sa.column("column_name"), schema=_IS)
_STATISTICS = sa.table("STATISTICS", sa.column("table_schema"), sa.column("table_name"),
                       sa.column("column_name"), sa.column("seq_in_index"),
                       sa.column("index_type"), sa.column("sub_part"), schema=_IS)


def fold_identifier(name: str) -> str:
    """MySQL does not fold identifiers (table-name case follows the server's filesystem)."""
    return name


def create_engine(source: ResolvedSource, options: PreflightOptions) -> sa.Engine:
    socket_timeout = math.ceil(options.statement_timeout_s + options.connect_timeout_s + 5)
    connect_args: dict[str, Any] = {
        "connect_timeout": max(1, math.ceil(options.connect_timeout_s)),
        "read_timeout": socket_timeout,
        "write_timeout": socket_timeout,
        "program_name": "rivet-ci-preflight",
    }
    return sa.create_engine(source.url, poolclass=NullPool, connect_args=connect_args)


def open_session(engine: sa.Engine, options: PreflightOptions) -> MySQLSession:
    return MySQLSession(engine, options)


class MySQLSession(RecyclingSession):
    """A read-only MySQL/MariaDB session (see the module docstring).

    READ ONLY is a session characteristic here, so every implicit transaction is read-only and
    `_begin` has nothing to send.
    """

    def __init__(self, engine: sa.Engine, options: PreflightOptions) -> None:
        self._options = options
        self._conn = engine.connect()
        try:
            self._setup()
        except BaseException:
            self._conn.close()
            raise

    def _setup(self) -> None:
        conn = self._conn
        conn.exec_driver_sql("SET SESSION TRANSACTION READ ONLY")
        if getattr(conn.dialect, "is_mariadb", False):
            conn.execute(sa.text("SET SESSION max_statement_time = :s"),
                         {"s": self._options.statement_timeout_s})
        else:
            conn.execute(sa.text("SET SESSION max_execution_time = :ms"),
                         {"ms": max(1, round(self._options.statement_timeout_s * 1000))})
        conn.execute(sa.text("SET SESSION lock_wait_timeout = :s"),
                     {"s": max(1, math.ceil(self._options.statement_timeout_s))})
        # The session characteristic applies from the next transaction on.
        conn.commit()
        row = conn.exec_driver_sql("SELECT @@max_connections, DATABASE()").one()
        self.max_connections: int | None = int(row[0]) if row[0] is not None else None
        self._database: str | None = row[1]
        self._txn_started = time.monotonic()

    def _is_timeout(self, exc: sa.exc.DBAPIError) -> bool:
        code = exc.orig.args[0] if exc.orig is not None and exc.orig.args else None
        return code in _TIMEOUT_CODES

    def explain(self, target: Target) -> PlanFacts:
        select = select_sql(self._conn, target)
        raw = self._run(lambda c: c.exec_driver_sql("EXPLAIN FORMAT=JSON " + select,
                                                    execution_options=RAW).scalar())
        doc = json.loads(raw) if isinstance(raw, str | bytes) else raw
        facts = plan_facts(doc if isinstance(doc, dict) else {})
        relations = (target.rel,) if isinstance(target, TableTarget) else target.query.relations
        if facts.row_estimate is None:
            rows = self._run(lambda c: c.exec_driver_sql("EXPLAIN " + select,
                                                         execution_options=RAW).mappings().all())
            facts = _with_plain_estimate(facts, rows)
        return PlanFacts(
            row_estimate=facts.row_estimate, uses_index=facts.uses_index,
            relations=tuple(relations), full_scans=facts.full_scans,
            examined_rows=facts.examined_rows, notes=facts.notes,
        )

    def relations(self, rels: Sequence[Rel]) -> dict[Rel, RelationInfo]:
        if not rels:
            return {}
        # `orders` and `db.orders` may both be asked for: one catalog entry answers both. Names
        # are sent as written (the catalog's collation decides) and matched back ignoring case.
        asked = {(rel[0] or self._database or "", rel[1]) for rel in rels}
        wanted: dict[tuple[str, str], list[Rel]] = {}
        for rel in dict.fromkeys(rels):
            schema = (rel[0] or self._database or "").lower()
            wanted.setdefault((schema, rel[1].lower()), []).append(rel)

        def where(table: sa.TableClause) -> sa.ColumnElement[bool]:
            return sa.or_(*(sa.and_(table.c.table_schema == schema, table.c.table_name == name)
                            for schema, name in sorted(asked)))

        tables = self._run(lambda c: c.execute(
            sa.select(_TABLES.c.table_schema, _TABLES.c.table_name, _TABLES.c.table_rows,
                      _TABLES.c.table_type).where(where(_TABLES))).all())
        columns = self._run(lambda c: c.execute(
            sa.select(_COLUMNS.c.table_schema, _COLUMNS.c.table_name, _COLUMNS.c.column_name)
            .where(where(_COLUMNS))).all())
        s = _STATISTICS.c
        leading = self._run(lambda c: c.execute(
            sa.select(s.table_schema, s.table_name, s.column_name).where(
                where(_STATISTICS), s.seq_in_index == 1, s.index_type == "BTREE",
                s.sub_part.is_(None))).all())
        cols: dict[tuple[str, str], set[str]] = {}
        for schema, name, column in columns:
            cols.setdefault((schema.lower(), name.lower()), set()).add(column)
        lead: dict[tuple[str, str], set[str]] = {}
        for schema, name, column in leading:
            if column is not None:  # an expression index has no column
                lead.setdefault((schema.lower(), name.lower()), set()).add(column)
        out: dict[Rel, RelationInfo] = {}
        for schema, name, table_rows, table_type in tables:
            key = (schema.lower(), name.lower())
            rows = int(table_rows) if table_rows is not None and table_type != "VIEW" else None
            info = RelationInfo(rows=rows, columns=frozenset(cols.get(key, ())),
                                leading_index_columns=frozenset(lead.get(key, ())))
            for rel in wanted.get(key, ()):
                out[rel] = info
        return out

    def min_max(self, target: Target, column: str) -> tuple[str | None, str | None]:
        row = self._run(min_max_probe(self._conn, target, column))
        return render(row[0]), render(row[1])

    def close(self) -> None:
        try:
            if self._conn.in_transaction() and not self._conn.invalidated:
                self._conn.rollback()
        except sa.exc.DBAPIError:
            pass
        finally:
            self._conn.close()


def plan_facts(doc: dict[str, Any]) -> PlanFacts:
    """Facts from an `EXPLAIN FORMAT=JSON` document (MariaDB or MySQL 8 layout)."""
    block = doc.get("query_block", {})
    top = [t for t in _tables(block, top_level=True) if "message" not in t]
    every = [t for t in _tables(block, top_level=False) if "message" not in t]
    estimate: float | None = None
    examined: float | None = None
    if top:
        produced = top[-1].get("rows_produced_per_join")
        if produced is not None:  # MySQL 8
            estimate = _num(produced)
        else:  # MariaDB: rows × filtered% per table, multiplied along the join
            estimate = 1.0
            for table in top:
                rows, filtered = _num(table.get("rows")), _num(table.get("filtered"))
                if rows is None:
                    estimate = None
                    break
                estimate *= rows * (filtered if filtered is not None else 100.0) / 100.0
        examined = 1.0
        for table in top:
            rows = _num(table.get("rows", table.get("rows_examined_per_scan")))
            if rows is None:
                examined = None
                break
            examined *= max(rows, 1.0)
    full = tuple(
        FullScan(None, _int(t.get("rows", t.get("rows_examined_per_scan"))))
        for t in every if t.get("access_type") in _FULL_ACCESS
    )
    return PlanFacts(
        row_estimate=_int(estimate),
        uses_index=any(t.get("key") and t.get("access_type") != "ALL" for t in every)
        if every else None,
        full_scans=full,
        examined_rows=_int(examined),
    )


def _tables(node: Any, *, top_level: bool) -> Iterator[dict[str, Any]]:
    """Every `table` object; with top_level, not those inside subqueries or derived tables."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "table" and isinstance(value, dict):
                yield value
                if not top_level:
                    yield from _tables(value, top_level=False)
            elif top_level and key in ("subqueries", "materialized", "query_specifications"):
                continue
            else:
                yield from _tables(value, top_level=top_level)
    elif isinstance(node, list):
        for item in node:
            yield from _tables(item, top_level=top_level)


def _with_plain_estimate(facts: PlanFacts, rows: Sequence[Any]) -> PlanFacts:
    if not rows:
        return facts
    first = rows[0]
    count, filtered = _num(first.get("rows")), _num(first.get("filtered"))
    if count is None:
        return facts
    estimate = _int(count * (filtered if filtered is not None else 100.0) / 100.0)
    uses_index = facts.uses_index
    if uses_index is None:
        uses_index = any(r.get("key") and r.get("type") != "ALL" for r in rows)
    return PlanFacts(row_estimate=estimate, uses_index=uses_index, full_scans=facts.full_scans,
                     examined_rows=facts.examined_rows,
                     notes=(*facts.notes, "row estimate from plain EXPLAIN"))


def _num(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _int(value: object) -> int | None:
    number = _num(value)
    return round(min(number, MAX_FACT_INT)) if number is not None and number >= 0 else None
