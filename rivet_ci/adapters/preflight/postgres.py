"""PostgreSQL probes through SQLAlchemy + psycopg 3.

Safety: every transaction starts with `SET TRANSACTION READ ONLY` and sets `statement_timeout`
(and `idle_in_transaction_session_timeout`) with `set_config(..., is_local => true)` — the
bind-parameter form of `SET LOCAL`, so nothing outlives the transaction (safe behind a
transaction-pooling PgBouncer, unlike session settings or startup options). Transactions are
short: a new one is opened after about a second or 50 probes, so the AccessShare locks EXPLAIN
takes are not held across a whole run. The export query is only ever EXPLAINed (no ANALYZE).

Statement economy (pg_stat_statements counts BEGIN/SET/COMMIT too): one transaction setup
serves many probes and also reads `max_connections`; `relations` answers for every table of a
lane in one catalog query; so an export costs its EXPLAIN, plus a min/max when that is cheap.
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
    MAX_FACT_INT,
    RAW,
    FullScan,
    PlanFacts,
    PreflightOptions,
    RecyclingSession,
    Rel,
    RelationInfo,
    Target,
    min_max_probe,
    render,
    select_sql,
)
from rivet_ci.adapters.preflight.source_url import ResolvedSource

T = TypeVar("T")
_INDEX_NODES = frozenset({"Index Scan", "Index Only Scan", "Bitmap Index Scan"})
_FUNCTION_NODES = frozenset({"Function Scan", "Table Function Scan"})

# One statement per transaction: timeouts (as SET LOCAL) and max_connections.
_SETUP = sa.text(
    "SELECT set_config('statement_timeout', :timeout, true),"
    " set_config('idle_in_transaction_session_timeout', :idle, true),"
    " current_setting('max_connections')"
)
# Size, columns and leading columns of valid, non-partial btree indexes of many relations at
# once. Relations are passed as regclass text (to_regclass resolves search_path and returns
# NULL for a missing one instead of failing).
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
              AND am.amname = 'btree')
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
    return sa.create_engine(source.url, poolclass=NullPool, connect_args=connect_args)


def open_session(engine: sa.Engine, options: PreflightOptions) -> PostgresSession:
    return PostgresSession(engine, options)


class PostgresSession(RecyclingSession):
    """A read-only PostgreSQL session (see the module docstring)."""

    def __init__(self, engine: sa.Engine, options: PreflightOptions) -> None:
        self._options = options
        self._conn = engine.connect()
        self.max_connections: int | None = None
        try:
            self._start_transaction()
        except BaseException:
            self._conn.close()
            raise

    def _begin(self) -> None:
        # psycopg opens the transaction with this first statement; READ ONLY must come first.
        self._conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        timeout_ms = max(1, round(self._options.statement_timeout_s * 1000))
        row = self._conn.execute(_SETUP, {
            "timeout": f"{timeout_ms}ms", "idle": f"{timeout_ms * 2 + 5000}ms",
        }).one()
        self.max_connections = int(row[2])

    def _is_timeout(self, exc: sa.exc.DBAPIError) -> bool:
        return isinstance(exc.orig, psycopg.errors.QueryCanceled)


    def explain(self, target: Target) -> PlanFacts:
        sql = "EXPLAIN (FORMAT JSON, VERBOSE) " + select_sql(self._conn, target)
        doc = self._run(lambda c: c.exec_driver_sql(sql, execution_options=RAW).scalar())
        if isinstance(doc, str | bytes):  # psycopg parses json; other drivers may not
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
        for ord_, reltuples, relkind, columns, leading in rows:
            # reltuples is -1 until the first ANALYZE/VACUUM (PG >= 14); views have no size.
            size = int(reltuples) if reltuples is not None and reltuples >= 0 and relkind in (
                "r", "p", "m") else None
            out[rels[int(ord_) - 1]] = RelationInfo(
                rows=size, columns=frozenset(columns), leading_index_columns=frozenset(leading))
        return out

    def min_max(self, target: Target, column: str) -> tuple[str | None, str | None]:
        row = self._run(min_max_probe(self._conn, target, column))
        return render(row[0]), render(row[1])

    def close(self) -> None:
        try:
            if self._conn.in_transaction() and not self._conn.invalidated:
                self._conn.rollback()  # read-only: nothing to keep
        except sa.exc.DBAPIError:
            pass
        finally:
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
            full.append(FullScan(None, _int(node.get("Plan Rows"))))
    return PlanFacts(
        row_estimate=_int(top.get("Plan Rows")),
        avg_row_bytes=_int(top.get("Plan Width")),
        uses_index=any(n.get("Node Type") in _INDEX_NODES for n in nodes),
        relations=tuple(relations),
        full_scans=tuple(full),
    )


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _walk(child)


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(min(value, MAX_FACT_INT))


def _regclass_text(rel: Rel) -> str:
    schema, name = rel
    ident = '"' + name.replace('"', '""') + '"'
    return ident if schema is None else '"' + schema.replace('"', '""') + '".' + ident
