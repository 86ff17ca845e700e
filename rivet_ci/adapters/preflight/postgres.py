"""PostgreSQL probes through SQLAlchemy + psycopg 3.

Safety: every transaction is opened with `BEGIN READ ONLY` and sets `statement_timeout` (and
`idle_in_transaction_session_timeout`) with `set_config(..., is_local => true)` — `SET LOCAL`,
so nothing outlives the transaction (safe behind a transaction-pooling PgBouncer, unlike session
settings or startup options). Transactions are short: a new one is opened after about a second
or 500 probes, so the AccessShare locks EXPLAIN takes are not held across a whole run. The export
query is only ever EXPLAINed (no ANALYZE); min/max only ever reads a base table.

Statement economy (pg_stat_statements counts BEGIN/SET/COMMIT too): the driver runs in
autocommit mode and the session sends `[COMMIT;] BEGIN READ ONLY; SELECT set_config(...),
current_setting('max_connections')` as ONE round trip (three statements at most) per
transaction; the connection is closed without a ROLLBACK (the server ends a read-only
transaction by itself); `relations` answers for every table of a lane in one catalog query; so a
distinct query costs its EXPLAIN, and a probed table one min/max statement for all its columns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from rivet_ci.adapters.preflight.base import (
    RAW,
    MinMax,
    PreflightOptions,
    RecyclingSession,
    Target,
    checked_plan_text,
    min_max_statement,
    min_max_values,
    select_sql,
)
from rivet_ci.adapters.preflight.source_url import ResolvedSource
from rivet_ci.core.common.limits import fact_count
from rivet_ci.core.facts.probe_rules import FullScan, PlanFacts, Rel, RelationInfo

T = TypeVar("T")
_INDEX_NODES = frozenset({"Index Scan", "Index Only Scan", "Bitmap Index Scan"})
_FUNCTION_NODES = frozenset({"Function Scan", "Table Function Scan"})

# Starts every transaction, in one round trip: read-only, timeouts (as SET LOCAL) and
# max_connections. {end} is "COMMIT; " when a transaction is open. The values are numbers
# formatted here, never text from a config.
_BEGIN = ("{end}BEGIN READ ONLY; SELECT set_config('statement_timeout', '{timeout}ms', true),"
          " set_config('idle_in_transaction_session_timeout', '{idle}ms', true),"
          " current_setting('max_connections')")
# Size, kind, columns and leading columns of valid, non-partial btree indexes of many relations
# at once, plus what chunk planning checks: integer and NOT NULL columns, single-column NOT NULL
# unique keys of a type rivet's keyset cursor reads, and the single-integer primary key.
# Relations are passed as regclass text (to_regclass resolves search_path and returns NULL for a
# missing one instead of failing).
_RELATIONS = sa.text(
    """
    SELECT r.ord, c.reltuples::float8, c.relkind::text,
      ARRAY(SELECT a.attname::text FROM pg_attribute a
            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
      ARRAY(SELECT a.attname::text
            FROM pg_index i
            JOIN pg_class ic ON ic.oid = i.indexrelid
            JOIN pg_am am ON am.oid = ic.relam
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
            WHERE i.indrelid = c.oid AND i.indisvalid AND i.indpred IS NULL
              AND am.amname = 'btree'),
      ARRAY(SELECT a.attname::text FROM pg_attribute a
            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
              AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)),
      ARRAY(SELECT a.attname::text FROM pg_attribute a
            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull),
      ARRAY(SELECT a.attname::text
            FROM pg_index i
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
            WHERE i.indrelid = c.oid AND i.indisunique AND i.indnkeyatts = 1 AND i.indisvalid
              AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attnotnull
              AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype,
                  'float4'::regtype, 'float8'::regtype, 'text'::regtype, 'varchar'::regtype,
                  'bpchar'::regtype, 'timestamp'::regtype, 'timestamptz'::regtype,
                  'date'::regtype, 'uuid'::regtype)),
      (SELECT a.attname::text
       FROM pg_index i
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
       WHERE i.indrelid = c.oid AND i.indisprimary AND i.indnkeyatts = 1
         AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype))
    FROM unnest(CAST(:names AS text[])) WITH ORDINALITY AS r(name, ord)
    JOIN pg_class c ON c.oid = to_regclass(r.name)
    """
)


def fold_identifier(name: str) -> str:
    """PostgreSQL folds unquoted identifiers to lower case; rivet writes them unquoted."""
    return name.lower()


def create_engine(source: ResolvedSource, options: PreflightOptions) -> sa.Engine:
    connect_args: dict[str, Any] = {
        # libpq takes whole seconds and treats anything below 2 as 2.
        "connect_timeout": max(2, math.ceil(options.connect_timeout_s)),
        "application_name": "rivet-ci-preflight",
        # A server that vanishes without closing the socket must not hang the run.
        "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": int((options.statement_timeout_s + options.connect_timeout_s + 5)
                                * 1000),
    }
    # Autocommit: transactions are begun (READ ONLY) and ended by the session itself, and a
    # closed connection is not reset with a ROLLBACK first (the server ends the transaction).
    # No hstore: SQLAlchemy would look its type up on the first connection (a statement).
    return sa.create_engine(source.url, poolclass=NullPool, connect_args=connect_args,
                            isolation_level="AUTOCOMMIT", pool_reset_on_return=None,
                            use_native_hstore=False)


def open_session(engine: sa.Engine, options: PreflightOptions) -> PostgresSession:
    return PostgresSession(engine, options)


class PostgresSession(RecyclingSession):
    """A read-only PostgreSQL session (see the module docstring)."""

    def __init__(self, engine: sa.Engine, options: PreflightOptions) -> None:
        self._options = options
        self._conn = engine.connect()
        self.max_connections: int | None = None
        try:
            self._raw = self._driver()
            # Plans arrive as text, so their size is checked before they are parsed.
            self._raw.adapters.register_loader("json", psycopg.types.string.TextLoader)
            self._start_transaction()
        except BaseException:
            self._conn.close()
            raise

    def _driver(self) -> psycopg.Connection[Any]:
        raw = self._conn.connection.driver_connection
        assert isinstance(raw, psycopg.Connection)
        return raw

    def _begin(self, *, end_current: bool) -> None:
        timeout_ms = max(1, round(self._options.statement_timeout_s * 1000))
        sql = _BEGIN.format(end="COMMIT; " if end_current else "", timeout=timeout_ms,
                            idle=timeout_ms * 2 + 5000)
        # No parameters: psycopg sends the statements in one simple-protocol round trip.
        cursor = self._raw.execute(sql.encode())
        while cursor.nextset():
            pass
        row = cursor.fetchone()
        assert row is not None
        self.max_connections = int(row[2])

    def _rollback(self) -> None:
        self._raw.execute(b"ROLLBACK")

    def _is_timeout(self, exc: sa.exc.DBAPIError) -> bool:
        return isinstance(exc.orig, psycopg.errors.QueryCanceled)


    def explain(self, target: Target) -> PlanFacts:
        sql = "EXPLAIN (FORMAT JSON, VERBOSE) " + select_sql(self._conn, target)
        doc = checked_plan_text(self._run(
            lambda c: c.exec_driver_sql(sql, execution_options=RAW).scalar()))
        if isinstance(doc, str | bytes):  # registered as text above, so the size is known
            doc = json.loads(doc)
        if not isinstance(doc, list) or not doc or "Plan" not in doc[0]:
            return PlanFacts(row_estimate=None, notes=("EXPLAIN returned no plan",))
        return plan_facts(doc[0]["Plan"])

    def relations(self, rels: Sequence[Rel]) -> dict[Rel, RelationInfo]:
        if not rels:
            return {}
        names = [_regclass_text(rel) for rel in rels]
        rows = self._run(lambda c: c.execute(_RELATIONS, {"names": names}).all())
        out: dict[Rel, RelationInfo] = {}
        for ord_, reltuples, relkind, columns, leading, integers, not_null, keyset, pk in rows:
            # reltuples is -1 until the first ANALYZE/VACUUM (PG >= 14); views have no size.
            size = int(reltuples) if reltuples is not None and reltuples >= 0 and relkind in (
                "r", "p", "m") else None
            out[rels[int(ord_) - 1]] = RelationInfo(
                rows=size, columns=frozenset(columns), leading_index_columns=frozenset(leading),
                base_table=relkind in ("r", "p", "m"), integer_columns=frozenset(integers),
                not_null_columns=frozenset(not_null), keyset_columns=frozenset(keyset),
                integer_primary_key=pk)
        return out

    def min_max(self, rel: Rel, columns: Sequence[str],
                null_checks: Sequence[str] = ()) -> dict[str, MinMax]:
        stmt = min_max_statement(rel, columns, null_checks)
        return min_max_values(columns, self._run(lambda c: c.execute(stmt).one()), null_checks)

    def close(self) -> None:
        # No ROLLBACK first: closing ends the read-only transaction on the server.
        self._conn.close()


def plan_facts(top: dict[str, Any]) -> PlanFacts:
    """Facts from the top node of an `EXPLAIN (FORMAT JSON, VERBOSE)` plan."""
    nodes = list(_walk(top))
    relations: list[Rel] = []
    full: list[FullScan] = []
    for node in nodes:
        kind = node.get("Node Type", "")
        rel: Rel | None = None
        if "Relation Name" in node:
            rel = (node.get("Schema"), node["Relation Name"])
            if rel not in relations:
                relations.append(rel)
        if rel is not None and (kind in ("Seq Scan", "Sample Scan") or (
                kind in ("Index Scan", "Index Only Scan") and "Index Cond" not in node)):
            full.append(FullScan(rel))  # reads the whole relation (or the whole index)
        elif kind in _FUNCTION_NODES:
            full.append(FullScan(None, fact_count(node.get("Plan Rows"))))
    return PlanFacts(
        row_estimate=fact_count(top.get("Plan Rows")),
        avg_row_bytes=fact_count(top.get("Plan Width")),
        uses_index=any(n.get("Node Type") in _INDEX_NODES for n in nodes),
        relations=tuple(relations),
        full_scans=tuple(full),
    )


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _walk(child)


def _regclass_text(rel: Rel) -> str:
    schema, name = rel
    ident = '"' + name.replace('"', '""') + '"'
    return ident if schema is None else '"' + schema.replace('"', '""') + '".' + ident
