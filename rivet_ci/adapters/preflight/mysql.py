"""MySQL / MariaDB probes through SQLAlchemy + PyMySQL.

Safety: before any probe, ONE statement makes the session read-only (`tx_read_only` on MariaDB,
`transaction_read_only` on MySQL: every later transaction is read-only) and gives it a statement
timeout — `max_statement_time` in seconds on MariaDB (every statement), `max_execution_time` in
milliseconds on MySQL (SELECTs) — plus a metadata-lock wait bound. The driver runs in autocommit
mode: each probe is its own read-only transaction, so no metadata lock outlives a statement and
no COMMIT is ever sent. PyMySQL never enables multi-statements, and socket timeouts bound a
server that stops answering. The export query is only EXPLAINed; min/max only reads a base table.

Statement economy (the general log counts every command): per connection the setting statement
and one `SELECT @@max_connections, DATABASE()`; per lane one catalog statement (tables, columns
and leading index columns in one UNION ALL); per distinct query one EXPLAIN; per probed table
one min/max statement for all its columns.

Row estimate: `EXPLAIN FORMAT=JSON` (a str through PyMySQL). MariaDB's `query_block` gives
`rows` and `filtered` per table of the join: the estimate is Π rows × filtered / 100; MySQL 8's
format gives `rows_produced_per_join` on the last table. When JSON yields nothing, the first row
of a plain EXPLAIN (`rows` arrives as a string) is used. There is no row width here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from rivet_ci.adapters.preflight.base import (
    RAW,
    MinMax,
    PreflightOptions,
    RecyclingSession,
    TableTarget,
    Target,
    checked_plan_text,
    min_max_statement,
    min_max_values,
    select_sql,
)
from rivet_ci.adapters.preflight.source_url import ResolvedSource
from rivet_ci.core.common.limits import as_number, fact_count
from rivet_ci.core.facts.probe_rules import FullScan, PlanFacts, Rel, RelationInfo

T = TypeVar("T")
# MariaDB max_statement_time, MySQL max_execution_time, "query execution was interrupted",
# "lock wait timeout exceeded" (lock_wait_timeout).
_TIMEOUT_CODES = frozenset({1969, 3024, 1317, 1205})
_FULL_ACCESS = frozenset({"ALL", "index"})
# rivet's "the plan uses an index": the first table's access type (`EXPLAIN`'s `type`).
_INDEX_ACCESS = frozenset({"ref", "range", "index", "eq_ref", "const"})

# information_schema column names are case-insensitive; lower case keeps SQLAlchemy from
# quoting them.
_IS = "information_schema"
_TABLES = sa.table("TABLES", sa.column("table_schema"), sa.column("table_name"),
                   sa.column("table_rows"), sa.column("table_type"), schema=_IS)
_COLUMNS = sa.table("COLUMNS", sa.column("table_schema"), sa.column("table_name"),
                    sa.column("column_name"), sa.column("data_type"), sa.column("is_nullable"),
                    schema=_IS)
_STATISTICS = sa.table("STATISTICS", sa.column("table_schema"), sa.column("table_name"),
                       sa.column("column_name"), sa.column("seq_in_index"),
                       sa.column("index_type"), sa.column("sub_part"), sa.column("non_unique"),
                       sa.column("index_name"), schema=_IS)
_INTEGER_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})
# Types rivet's keyset cursor reads (integer / float / string / timestamp / date / uuid).
_KEYSET_TYPES = _INTEGER_TYPES | frozenset({
    "float", "double", "real", "char", "varchar", "tinytext", "text", "mediumtext", "longtext",
    "timestamp", "datetime", "date", "uuid"})
# The same sets for the source catalog's listing (`rivet_ci.adapters.preflight.catalog`).
INTEGER_TYPES, KEYSET_TYPES = _INTEGER_TYPES, _KEYSET_TYPES


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
        # The server's default: PyMySQL then sends no SET AUTOCOMMIT, nor does SQLAlchemy.
        "autocommit": True,
    }
    # Autocommit: every statement is its own (read-only) transaction; nothing to commit or reset.
    return sa.create_engine(source.url, poolclass=NullPool, connect_args=connect_args,
                            isolation_level="AUTOCOMMIT", pool_reset_on_return=None)


def open_session(engine: sa.Engine, options: PreflightOptions) -> MySQLSession:
    return MySQLSession(engine, options)


class MySQLSession(RecyclingSession):
    """A read-only MySQL/MariaDB session (see the module docstring).

    READ ONLY is a session characteristic here and the driver autocommits, so every statement is
    a read-only transaction of its own and `_begin` / `_rollback` have nothing to send.
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
        raw = conn.connection.driver_connection
        version = str(getattr(raw, "server_version", ""))
        timeout = self._options.statement_timeout_s
        lock_wait = max(1, math.ceil(timeout))
        # Numbers formatted here (never text from a config), in one statement.
        if "mariadb" in version.lower():
            sql = (f"SET SESSION tx_read_only = 1, max_statement_time = {timeout:.3f},"
                   f" lock_wait_timeout = {lock_wait}")
        else:
            sql = (f"SET SESSION transaction_read_only = 1,"
                   f" max_execution_time = {max(1, round(timeout * 1000))},"
                   f" lock_wait_timeout = {lock_wait}")
        conn.exec_driver_sql(sql, execution_options=RAW)
        row = conn.exec_driver_sql("SELECT @@max_connections, DATABASE()").one()
        self.max_connections: int | None = int(row[0]) if row[0] is not None else None
        self._database: str | None = row[1]

    def _begin(self, *, end_current: bool) -> None:
        """Nothing to send: autocommit, and the session is read-only."""

    def _rollback(self) -> None:
        """Nothing to send: a failed autocommit statement leaves no transaction behind."""

    def _is_timeout(self, exc: sa.exc.DBAPIError) -> bool:
        code = exc.orig.args[0] if exc.orig is not None and exc.orig.args else None
        return code in _TIMEOUT_CODES

    def explain(self, target: Target) -> PlanFacts:
        select = select_sql(self._conn, target)
        raw = checked_plan_text(self._run(lambda c: c.exec_driver_sql(
            "EXPLAIN FORMAT=JSON " + select, execution_options=RAW).scalar()))
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

        # Tables, columns and their types, leading btree index columns and the parts of unique
        # indexes, in ONE statement.
        t, c, s = _TABLES.c, _COLUMNS.c, _STATISTICS.c
        text = sa.String()

        def as_text(value: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
            return sa.cast(value, text)

        union = sa.union_all(
            sa.select(sa.literal("T", text), t.table_schema, t.table_name, sa.null(),
                      as_text(t.table_rows), t.table_type, sa.null()).where(where(_TABLES)),
            sa.select(sa.literal("C", text), c.table_schema, c.table_name, c.column_name,
                      c.data_type, c.is_nullable, sa.null()).where(where(_COLUMNS)),
            sa.select(sa.literal("I", text), s.table_schema, s.table_name, s.column_name,
                      sa.null(), sa.null(), sa.null()).where(
                where(_STATISTICS), s.seq_in_index == 1, s.index_type == "BTREE",
                s.sub_part.is_(None)),
            sa.select(sa.literal("U", text), s.table_schema, s.table_name, s.column_name,
                      s.index_name, as_text(s.seq_in_index), as_text(s.sub_part)).where(
                where(_STATISTICS), s.non_unique == 0),
        )
        rows = self._run(lambda conn: conn.execute(union).all())
        tables = [(r[1], r[2], r[4], r[5]) for r in rows if r[0] == "T"]
        cols: dict[tuple[str, str], set[str]] = {}
        types: dict[tuple[str, str], dict[str, str]] = {}
        not_null: dict[tuple[str, str], set[str]] = {}
        lead: dict[tuple[str, str], set[str]] = {}
        unique_parts: dict[tuple[str, str], dict[str, list[tuple[str, bool]]]] = {}
        for kind, schema, name, column, a, b, c_ in rows:
            key = (schema.lower(), name.lower())
            if kind == "C":
                cols.setdefault(key, set()).add(column)
                types.setdefault(key, {})[column] = str(a or "").lower()
                if b == "NO":
                    not_null.setdefault(key, set()).add(column)
            elif kind == "I" and column is not None:  # an expression index has no column
                lead.setdefault(key, set()).add(column)
            elif kind == "U":
                unique_parts.setdefault(key, {}).setdefault(str(a), []).append(
                    (column, column is not None and c_ is None))
        out: dict[Rel, RelationInfo] = {}
        for schema, name, table_rows, table_type in tables:
            key = (schema.lower(), name.lower())
            size = int(table_rows) if table_rows is not None and table_type != "VIEW" else None
            kinds = types.get(key, {})
            required = not_null.get(key, set())
            # Single-column unique keys on a whole NOT NULL column, PRIMARY first.
            keys = [parts[0][0] for index, parts in sorted(
                unique_parts.get(key, {}).items(), key=lambda kv: (kv[0] != "PRIMARY", kv[0]))
                if len(parts) == 1 and parts[0][1] and parts[0][0] in required]
            keyset = [k for k in keys if kinds.get(k) in _KEYSET_TYPES]
            primary = unique_parts.get(key, {}).get("PRIMARY", [])
            pk = primary[0][0] if len(primary) == 1 and primary[0][1] else None
            info = RelationInfo(
                rows=size, columns=frozenset(cols.get(key, ())),
                leading_index_columns=frozenset(lead.get(key, ())),
                base_table=table_type in ("BASE TABLE", "SYSTEM VERSIONED"),
                integer_columns=frozenset(k for k, v in kinds.items() if v in _INTEGER_TYPES),
                not_null_columns=frozenset(required), keyset_columns=frozenset(keyset),
                integer_primary_key=pk if pk is not None and kinds.get(pk) in _INTEGER_TYPES
                else None,
                unique_key=keyset[0] if keyset else None)
            for rel in wanted.get(key, ()):
                out[rel] = info
        return out

    def min_max(self, rel: Rel, columns: Sequence[str],
                null_checks: Sequence[str] = ()) -> dict[str, MinMax]:
        stmt = min_max_statement(rel, columns, null_checks)
        return min_max_values(columns, self._run(lambda c: c.execute(stmt).one()), null_checks)

    def close(self) -> None:
        self._conn.close()


def plan_facts(doc: dict[str, Any]) -> PlanFacts:
    """Facts from an `EXPLAIN FORMAT=JSON` document (MariaDB or MySQL 8 layout)."""
    block = doc.get("query_block", {})
    top = [t for t in _tables(block, top_level=True) if "message" not in t]
    every = [t for t in _tables(block, top_level=False) if "message" not in t]
    estimate: float | None = None
    examined: float | None = None
    if top:
        # rivet reads the `rows` of the FIRST row of a plain EXPLAIN — the first table of the
        # plan, before any filter and never multiplied along a join — and takes an index access
        # of that table (ref, range, index, eq_ref, const) as "the plan uses an index". The
        # JSON plan's first table is that row (MariaDB `rows`, MySQL 8
        # `rows_examined_per_scan`).
        estimate = as_number(top[0].get("rows", top[0].get("rows_examined_per_scan")))
        examined = 1.0
        for table in top:
            rows = as_number(table.get("rows", table.get("rows_examined_per_scan")))
            if rows is None:
                examined = None
                break
            examined *= max(rows, 1.0)
    full = tuple(
        FullScan(None, fact_count(t.get("rows", t.get("rows_examined_per_scan"))))
        for t in every if t.get("access_type") in _FULL_ACCESS
    )
    return PlanFacts(
        row_estimate=fact_count(estimate),
        uses_index=top[0].get("access_type") in _INDEX_ACCESS if top else None,
        full_scans=full,
        examined_rows=fact_count(examined),
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
    count = as_number(first.get("rows"))
    if count is None:
        return facts
    estimate = fact_count(count)  # rivet: the first row's `rows`, as is
    uses_index = facts.uses_index
    if uses_index is None:
        uses_index = first.get("type") in _INDEX_ACCESS
    return PlanFacts(row_estimate=estimate, uses_index=uses_index, full_scans=facts.full_scans,
                     examined_rows=facts.examined_rows,
                     notes=(*facts.notes, "row estimate from plain EXPLAIN"))


