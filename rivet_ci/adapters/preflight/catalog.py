"""Capture the source catalog (`catalog:` of a facts file) from the live sources.

Public API::

    sources, warnings = capture_catalog(
        [(loaded_config, spelling_source), ...],  # the source as written (no environment)
        options=PreflightOptions(), environ=os.environ, source_url_override=None,
        schemas=("analytics",),                   # captured besides those the configs touch
        redact=redactor)

Per source (engine, host, port, database; never a credential), for every relation of the
schemas the configs touch (a `table:`'s schema, the relations a `query:` names, the default
schema for unqualified names) plus `schemas`: kind (table, partitioned table and its partitions,
view, materialized view), catalog row count, average row width, columns with their types and
nullability, valid non-partial btree indexes with their columns and uniqueness, the
single-integer primary key and the first usable unique key, `max_connections`, and the two ends
of every index-leading integer or temporal column.

Statements, all through the preflight session (`ProbeSession.read` / `min_max`: read-only
transactions, the statement timeout on each, a poisoned connection replaced): one listing of the
schemas' relations with their columns and indexes, one catalog lookup of the keys
(`ProbeSession.relations`, the same rules live preflight applies), and one min/max statement per
table with index-leading integer or temporal columns — answered from the index's two ends, so
no table is read (SQLite, whose declared types are only affinities and whose dates are
text: every index-leading column). Partitions' ends are not read (their parent's are). At most
`max_relations` relations are captured per source; beyond that the catalog says it is partial.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from rivet_ci.adapters.preflight import mysql
from rivet_ci.adapters.preflight.base import (
    PreflightOptions,
    ProbeTimeoutError,
    error_class,
    error_text,
)
from rivet_ci.adapters.preflight.collect import DRIVERS
from rivet_ci.adapters.preflight.safety import UnsafeQueryError, parse_table_name, vet_query
from rivet_ci.adapters.preflight.source_url import (
    ResolvedSource,
    SourceUrlError,
    UrlFileReader,
    resolve_source,
)
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.config.models import SourceConfig
from rivet_ci.core.facts.catalog import source_spelling
from rivet_ci.core.facts.catalog_models import (
    STORED_KINDS,
    CatalogColumn,
    CatalogIndex,
    CatalogRelation,
    CatalogSource,
    Engine,
    RelationKind,
)
from rivet_ci.core.facts.probe_rules import Rel, RelationInfo
from rivet_ci.output.redaction import Redactor

log = logging.getLogger(__name__)

MAX_CATALOG_RELATIONS = 5000
_ENGINE: dict[str, Engine] = {"postgresql": "postgres", "mysql": "mysql", "sqlite": "sqlite"}
# Column types whose index ends are read (integer family and dates/timestamps).
_PG_TEMPORAL = ("date", "timestamp without time zone", "timestamp with time zone")
_MY_TEMPORAL = ("date", "datetime", "timestamp")
_PG_KINDS: dict[str, RelationKind] = {"r": "table", "p": "partitioned_table", "v": "view",
                                      "m": "materialized_view"}

# Every relation of the schemas, with its columns and valid non-partial btree indexes, in one
# statement. The width is the planner's: each column's `avg_width` statistic, else its type's
# fixed length, else 32 (as `get_typavgwidth` guesses an unbounded variable-length type).
_PG_LIST = sa.text(
    """
    WITH RECURSIVE domains(domain, base, depth) AS (
      SELECT t.oid, t.typbasetype, 1 FROM pg_type t WHERE t.typtype = 'd'
      UNION ALL
      SELECT d.domain, t.typbasetype, d.depth + 1 FROM domains d JOIN pg_type t ON t.oid = d.base
      WHERE t.typtype = 'd' AND d.depth < 32),
    resolved AS (SELECT DISTINCT ON (domain) domain, base FROM domains
                 ORDER BY domain, depth DESC),
    listed AS (
      SELECT c.oid, c.relname, c.relkind, c.reltuples, c.relispartition, n.nspname
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE (n.nspname = ANY(CAST(:schemas AS text[]))
             OR (CAST(:with_default AS boolean) AND n.nspname = current_schema()))
        AND c.relkind IN ('r', 'p', 'v', 'm')),
    -- Every column of those relations, with the type rivet's driver receives (a domain resolved
    -- to its base, an enum, an array's element) and information_schema's numeric precision and
    -- scale (its own expressions, over the column's type or its domain's): one set-based pass.
    columns AS (
      SELECT a.attrelid, json_agg(json_build_array(
          a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, bt.typname,
          bt.typtype = 'e' OR et.typtype = 'e', et.typname,
          CASE WHEN tt.id = 1700 AND tt.mod <> -1 THEN ((tt.mod - 4) >> 16) & 65535 END,
          CASE WHEN tt.id = 1700 AND tt.mod <> -1 THEN (tt.mod - 4) & 65535 END)
        ORDER BY a.attnum)::text AS cols
      FROM listed l JOIN pg_attribute a ON a.attrelid = l.oid
      JOIN pg_type t ON t.oid = a.atttypid
      CROSS JOIN LATERAL (SELECT
          CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END AS id,
          CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END AS mod) tt
      LEFT JOIN resolved r ON r.domain = a.atttypid
      JOIN pg_type bt ON bt.oid = COALESCE(r.base, a.atttypid)
      LEFT JOIN pg_type et ON et.oid = bt.typelem AND bt.typcategory = 'A'
      WHERE a.attnum > 0 AND NOT a.attisdropped
      GROUP BY a.attrelid)
    SELECT l.nspname::text, l.relname::text, l.relkind::text, l.reltuples::float8,
      (SELECT pn.nspname::text || '.' || p.relname::text
       FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
       JOIN pg_namespace pn ON pn.oid = p.relnamespace
       WHERE i.inhrelid = l.oid AND l.relispartition LIMIT 1),
      (SELECT sum(COALESCE(s.avg_width, CASE WHEN t.typlen > 0 THEN t.typlen ELSE 32 END))
       FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_stats s ON s.schemaname = l.nspname AND s.tablename = l.relname
         AND s.attname = a.attname
       WHERE a.attrelid = l.oid AND a.attnum > 0 AND NOT a.attisdropped)::float8,
      cs.cols,
      (SELECT json_agg(json_build_array(
          (SELECT json_agg(a.attname ORDER BY k.o)
           FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, o)
           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
           WHERE k.o <= i.indnkeyatts), i.indisunique) ORDER BY ic.relname)::text
       FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
       JOIN pg_am am ON am.oid = ic.relam
       WHERE i.indrelid = l.oid AND i.indisvalid AND i.indpred IS NULL AND i.indkey[0] <> 0
         AND am.amname = 'btree'),
      current_schema()::text
    FROM listed l LEFT JOIN columns cs ON cs.attrelid = l.oid
    ORDER BY 1, 2
    LIMIT :limit
    """
)

_MY_LIST = sa.text(
    """
    SELECT 'T', t.table_schema, t.table_name, t.table_type, CAST(t.table_rows AS CHAR),
           CAST(t.avg_row_length AS CHAR), t.create_options, NULL, DATABASE()
    FROM information_schema.TABLES t WHERE t.table_schema IN :schemas
    UNION ALL
    SELECT 'C', c.table_schema, c.table_name, c.column_name, c.column_type, c.is_nullable,
           c.data_type, CAST(c.ordinal_position AS CHAR), NULL
    FROM information_schema.COLUMNS c WHERE c.table_schema IN :schemas
    UNION ALL
    SELECT 'I', s.table_schema, s.table_name, s.index_name, CAST(s.seq_in_index AS CHAR),
           s.column_name, CAST(s.non_unique AS CHAR), s.index_type, CAST(s.sub_part AS CHAR)
    FROM information_schema.STATISTICS s WHERE s.table_schema IN :schemas
    UNION ALL
    SELECT 'P', p.table_schema, p.table_name, p.partition_name, CAST(p.table_rows AS CHAR),
           NULL, NULL, NULL, NULL
    FROM information_schema.PARTITIONS p
    WHERE p.table_schema IN :schemas AND p.partition_name IS NOT NULL
    """
).bindparams(sa.bindparam("schemas", expanding=True))


@dataclass
class _Source:
    resolved: ResolvedSource
    spellings: list[str] = field(default_factory=list)
    schemas: set[str] = field(default_factory=set)
    unqualified: bool = False  # a name without a schema: the default schema is captured too


def capture_catalog(
    configs: Sequence[tuple[LoadedConfig, SourceConfig | None]], *,
    options: PreflightOptions | None = None, environ: Mapping[str, str],
    source_url_override: str | None = None, schemas: Sequence[str] = (),
    redact: Redactor | None = None, read_url_file: UrlFileReader | None = None,
    max_relations: int = MAX_CATALOG_RELATIONS, index_ends: bool = True,
) -> tuple[list[CatalogSource], list[str]]:
    """The catalog of every source the configs name, and a warning per source that failed.
    `index_ends=False` reads the catalog only (no min/max statement: what type fidelity
    needs)."""
    options = options or PreflightOptions()
    redact = redact if redact is not None else Redactor()
    sources: dict[str, _Source] = {}
    for loaded, written in configs:
        try:
            resolved = resolve_source(loaded.source, environ=environ,
                                      override=source_url_override,
                                      unresolved_variables=loaded.unresolved_source_variables,
                                      read_url_file=read_url_file)
        except SourceUrlError:
            continue  # live preflight reports it for every export of the config
        redact.add(*resolved.secrets)
        entry = sources.setdefault(resolved.key, _Source(resolved))
        spelling = source_spelling(written)
        if spelling is not None and spelling not in entry.spellings:
            entry.spellings.append(spelling)
        fold = DRIVERS[resolved.dialect].fold
        for export in loaded.exports:
            rels: list[tuple[str | None, str]] = []
            try:
                if export.table is not None:
                    rels.append(parse_table_name(export.table))
                elif export.query is not None:
                    rels.extend(vet_query(export.query, resolved.dialect).relations)
            except UnsafeQueryError:
                continue
            for schema, _ in rels:
                if schema is None:
                    entry.unqualified = True
                else:
                    entry.schemas.add(fold(schema))
    for schema in schemas:
        for entry in sources.values():
            entry.schemas.add(DRIVERS[entry.resolved.dialect].fold(schema))
    out: list[CatalogSource] = []
    warnings: list[str] = []
    for entry in sources.values():
        try:
            out.append(_capture(entry, options, max_relations, index_ends))
        except Exception as exc:  # a source that fails costs its catalog, not the run
            warnings.append(redact(f"catalog of {entry.resolved.display} not captured: "
                                   f"{error_text(exc)}"))
    return out, warnings


def _identity(source: ResolvedSource) -> dict[str, Any]:
    url = source.url
    engine = _ENGINE[source.dialect]
    if engine == "sqlite":
        return {"engine": engine, "database": url.database}
    return {"engine": engine, "host": url.host,
            "port": url.port or (5432 if engine == "postgres" else 3306),
            "database": url.database}


def _capture(entry: _Source, options: PreflightOptions, max_relations: int,
             index_ends: bool) -> CatalogSource:
    source = entry.resolved
    driver = DRIVERS[source.dialect]
    engine = driver.create_engine(source, options)
    try:
        session = driver.open_session(engine, options)
        try:
            return _capture_with(entry, session, max_relations, index_ends)
        finally:
            session.close()
    finally:
        engine.dispose()


def _capture_with(entry: _Source, session: Any, max_relations: int,
                  index_ends: bool = True) -> CatalogSource:
    dialect = entry.resolved.dialect
    notes: list[str] = []
    schemas = sorted(entry.schemas)
    if dialect == "postgresql":
        listed, default = _pg_list(session, schemas, entry.unqualified, max_relations + 1)
    elif dialect == "mysql":
        listed, default = _my_list(session, schemas, entry.unqualified)
    else:
        listed, default = _sqlite_list(session)
    if default is not None and entry.unqualified:
        schemas = sorted({*schemas, default})
    if len(listed) > max_relations:
        notes.append(f"only the first {max_relations} relations were captured (of more)")
        listed = dict(list(listed.items())[:max_relations])
    # The keys by the rules live preflight applies (integer and keyset columns, keys).
    rels = {name: _rel(name) for name, rel in listed.items() if rel.kind != "partition"
            or dialect == "postgresql"}
    # MySQL's listing carries the keys already (`_my_keys`): its catalog lookup by name pairs
    # takes seconds over 500 tables, the listing by schema a tenth of that.
    infos: dict[Rel, RelationInfo] = (session.relations(list(rels.values()))
                                      if rels and dialect != "mysql" else {})
    relations: dict[str, CatalogRelation] = {}
    temporal = _PG_TEMPORAL if dialect == "postgresql" else _MY_TEMPORAL
    probes = 0
    for name, listed_rel in listed.items():
        rel = listed_rel
        info = infos.get(rels[name]) if name in rels else None
        columns = dict(rel.columns)
        if info is not None:
            columns = {col: c.model_copy(update={
                "integer": col in info.integer_columns,
                "keyset_key": col in info.keyset_columns}) for col, c in columns.items()}
            rel = rel.model_copy(update={"integer_primary_key": info.integer_primary_key,
                                         "unique_key": info.unique_key})
        leading = {ix.columns[0] for ix in rel.indexes if ix.columns}
        ends = [col for col, c in columns.items() if col in leading and (
            c.integer or c.type.lower().split("(")[0].strip() in temporal
            or dialect == "sqlite")]  # SQLite: types are affinities, dates are TEXT
        if ends and index_ends and rel.kind in STORED_KINDS and rel.kind != "partition":
            probes += 1
            try:
                found = session.min_max(rels[name], ends)
                for col, (low, high, _) in found.items():
                    columns[col] = columns[col].model_copy(update={"min": low, "max": high})
            except ProbeTimeoutError as exc:
                for col in ends:
                    columns[col] = columns[col].model_copy(
                        update={"range_skipped": f"index ends {exc}"})
            except Exception as exc:
                if session.broken:
                    raise
                for col in ends:
                    columns[col] = columns[col].model_copy(
                        update={"range_skipped": f"index ends not read: {error_class(exc)}"})
        relations[name] = rel.model_copy(update={"columns": columns})
    log.debug("catalog of %s: %d relations, %d min/max statements", entry.resolved.display,
              len(relations), probes)
    return CatalogSource(
        **_identity(entry.resolved), spellings=entry.spellings,
        captured_at=datetime.now(UTC).replace(microsecond=0),
        max_connections=session.max_connections, default_schema=default, schemas=schemas,
        relations=relations, notes=notes)


def _rel(name: str) -> Rel:
    schema, _, table = name.partition(".")
    return (schema, table)


# The listing's cost estimate crosses PostgreSQL's JIT thresholds on a few hundred relations,
# and compiling it costs more than running it (2,000 tables of 10 columns: 9.0 s with JIT, 1.4 s
# without; the listing before the column types, 2.2 s with JIT). Off for this transaction only;
# PostgreSQL before 11 has no JIT.
_PG_NO_JIT = ("SELECT set_config('jit', 'off', true) "
              "WHERE current_setting('server_version_num')::int >= 110000")


def _pg_list(session: Any, schemas: list[str], with_default: bool, limit: int,
             ) -> tuple[dict[str, CatalogRelation], str | None]:
    def listing(c: Any) -> Any:
        c.exec_driver_sql(_PG_NO_JIT)
        return c.execute(_PG_LIST, {
            "schemas": schemas, "with_default": with_default, "limit": limit}).all()

    rows = session.read(listing)
    out: dict[str, CatalogRelation] = {}
    default: str | None = None
    for schema, name, relkind, reltuples, parent, width, columns, indexes, current in rows:
        default = current
        kind: RelationKind = "partition" if parent else _PG_KINDS[relkind]
        stored = relkind in ("r", "p", "m")
        cols = {str(n): _pg_column(t, null, wire) for n, t, null, *wire
                in json.loads(columns or "[]")}
        out[f"{schema}.{name}"] = CatalogRelation(
            kind=kind,
            rows=int(reltuples) if stored and reltuples is not None and reltuples >= 0 else None,
            avg_row_bytes=int(width) if width is not None and stored else None,
            partition_of=parent, columns=cols,
            indexes=[CatalogIndex(columns=[str(c) for c in ix_cols], unique=bool(unique))
                     for ix_cols, unique in json.loads(indexes or "[]") if ix_cols])
    if default is None and with_default:
        default = session.read(lambda c: c.exec_driver_sql("SELECT current_schema()").scalar())
    return out, default


def _pg_column(type_name: object, nullable: object, wire: list[object]) -> CatalogColumn:
    """A PostgreSQL column as the listing reads it: its declared type and, for type fidelity,
    the type rivet's driver receives (`wire`: the base type with domains resolved, whether it
    or an array's element is an enum, the element, `information_schema`'s numeric precision
    and scale)."""
    base, enum, element, precision, scale = (wire + [None] * 5)[:5]
    return CatalogColumn(
        type=str(type_name), nullable=bool(nullable),
        base_type=str(base) if base is not None else None,
        enum=True if enum else None, array_of=str(element) if element is not None else None,
        numeric_precision=precision if isinstance(precision, int) else None,
        numeric_scale=scale if isinstance(scale, int) else None)


def _my_list(session: Any, schemas: list[str], with_default: bool,
             ) -> tuple[dict[str, CatalogRelation], str | None]:
    default: str | None = getattr(session, "_database", None)
    wanted = sorted({*schemas, *([default] if with_default and default else [])})
    if not wanted:
        return {}, default
    rows = session.read(lambda c: c.execute(_MY_LIST, {"schemas": wanted}).all())
    tables: dict[str, dict[str, Any]] = {}
    columns: dict[str, list[tuple[int, str, CatalogColumn]]] = {}
    # per table, per index: (position, column, unique, BTREE, on the whole column)
    indexes: dict[str, dict[str, list[tuple[int, str | None, bool, bool, bool]]]] = {}
    partitions: dict[str, list[tuple[str, int | None]]] = {}
    data_types: dict[str, dict[str, str]] = {}
    for kind, schema, name, a, b, c_, d, e, f in rows:
        key = f"{schema}.{name}"
        if kind == "T":
            tables[key] = {"type": a, "rows": b, "width": c_, "options": d or ""}
            default = f or default
        elif kind == "C":
            data_types.setdefault(key, {})[str(a)] = str(d or "").lower()
            columns.setdefault(key, []).append(
                (int(e or 0), str(a), CatalogColumn(type=str(b), nullable=c_ == "YES")))
        elif kind == "I":
            indexes.setdefault(key, {}).setdefault(str(a), []).append(
                (int(b or 0), c_, d == "0", e == "BTREE", f is None))
        elif kind == "P":
            partitions.setdefault(key, []).append((str(a), int(b) if b is not None else None))
    out: dict[str, CatalogRelation] = {}
    for key in sorted(tables):
        t = tables[key]
        view = t["type"] == "VIEW"
        table_kind: RelationKind = ("view" if view else "partitioned_table"
                                    if "partitioned" in t["options"].lower() else "table")
        ixs = []
        for _, parts in sorted(indexes.get(key, {}).items(),
                                        key=lambda kv: (kv[0] != "PRIMARY", kv[0])):
            parts.sort()
            if parts and all(p[3] and p[4] and p[1] is not None for p in parts):
                ixs.append(CatalogIndex(columns=[str(p[1]) for p in parts], unique=parts[0][2]))
        rows_text, width_text = t["rows"], t["width"]
        cols = {n: c for _, n, c in sorted(columns.get(key, []), key=lambda x: x[0])}
        cols, pk, unique_key = _my_keys(cols, data_types.get(key, {}),
                                        indexes.get(key, {}))
        out[key] = CatalogRelation(
            kind=table_kind, rows=None if view or rows_text is None else int(rows_text),
            avg_row_bytes=None if view or width_text is None else int(width_text),
            columns=cols, indexes=ixs, integer_primary_key=pk, unique_key=unique_key)
        for part, rows in partitions.get(key, []):
            out[f"{key}#{part}"] = CatalogRelation(kind="partition", rows=rows, partition_of=key)
    return out, default


def _my_keys(columns: dict[str, CatalogColumn], types: dict[str, str],
             indexes: dict[str, list[tuple[int, str | None, bool, bool, bool]]],
             ) -> tuple[dict[str, CatalogColumn], str | None, str | None]:
    """Integer and keyset columns, the single-integer primary key and the first usable unique
    key, by the rules live preflight applies (`mysql.MySQLSession.relations`): single-column
    unique indexes on a whole NOT NULL column, PRIMARY first, then by index name; keyset-readable
    types; the primary key when it is one whole integer column."""
    required = {n for n, c in columns.items() if c.nullable is False}
    singles = [parts[0][1] for _, parts in sorted(
        ((name, sorted(parts)) for name, parts in indexes.items()),
        key=lambda kv: (kv[0] != "PRIMARY", kv[0]))
        if len(parts) == 1 and parts[0][2] and parts[0][1] is not None
        and _whole(parts[0]) and parts[0][1] in required]
    keyset = [k for k in singles if k is not None and types.get(k) in mysql.KEYSET_TYPES]
    primary = sorted(indexes.get("PRIMARY", []))
    pk = primary[0][1] if len(primary) == 1 and _whole(primary[0]) else None
    if pk is not None and types.get(pk) not in mysql.INTEGER_TYPES:
        pk = None
    out = {n: c.model_copy(update={"integer": types.get(n) in mysql.INTEGER_TYPES,
                                   "keyset_key": n in keyset}) for n, c in columns.items()}
    return out, pk, keyset[0] if keyset else None


def _whole(part: tuple[int, str | None, bool, bool, bool]) -> bool:
    """An index part on a whole column (no prefix length), whatever the index type."""
    return part[1] is not None and part[4]


def _sqlite_list(session: Any) -> tuple[dict[str, CatalogRelation], str | None]:
    master = session.read(lambda c: c.exec_driver_sql(
        "SELECT m.name, m.type, p.name, p.type, p.\"notnull\", p.pk "
        "FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p "
        "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "ORDER BY m.name, p.cid").all())
    index_rows = session.read(lambda c: c.exec_driver_sql(
        "SELECT m.name, il.name, il.\"unique\", ii.seqno, ii.name "
        "FROM sqlite_master AS m JOIN pragma_index_list(m.name) AS il "
        "JOIN pragma_index_info(il.name) AS ii "
        "WHERE m.type = 'table' AND il.partial = 0 ORDER BY m.name, il.name, ii.seqno").all())
    stat = session.read(lambda c: c.exec_driver_sql(
        "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").scalar())
    counts: dict[str, int] = {}
    if stat:
        for tbl, text in session.read(lambda c: c.exec_driver_sql(
                "SELECT tbl, stat FROM sqlite_stat1").all()):
            first = str(text or "").split()[:1]
            if first and first[0].isdigit():
                counts[str(tbl)] = max(counts.get(str(tbl), 0), int(first[0]))
    kinds: dict[str, str] = {}
    cols: dict[str, dict[str, CatalogColumn]] = {}
    pks: dict[str, list[tuple[str, str]]] = {}
    for table, kind, column, ctype, notnull, pk in master:
        kinds[table] = kind
        cols.setdefault(table, {})[str(column)] = CatalogColumn(
            type=str(ctype or ""), nullable=not notnull and not pk)
        if pk:
            pks.setdefault(table, []).append((str(column), str(ctype or "").upper()))
    indexes: dict[str, dict[str, tuple[bool, list[str | None]]]] = {}
    for table, index, unique, _, column in index_rows:
        indexes.setdefault(table, {}).setdefault(index, (bool(unique), []))[1].append(column)
    out: dict[str, CatalogRelation] = {}
    for table in sorted(kinds):
        ixs = [CatalogIndex(columns=[str(c) for c in columns], unique=unique)
               for _, (unique, columns) in sorted(indexes.get(table, {}).items())
               if columns and all(c is not None for c in columns)]
        pk = pks.get(table, [])
        if len(pk) == 1 and pk[0][1] == "INTEGER":  # the rowid alias: the table's own b-tree
            ixs.insert(0, CatalogIndex(columns=[pk[0][0]], unique=True))
        out[f"main.{table}"] = CatalogRelation(
            kind="view" if kinds[table] == "view" else "table",
            rows=counts.get(table) if kinds[table] == "table" else None,
            columns=cols.get(table, {}), indexes=ixs)
    return out, "main"
