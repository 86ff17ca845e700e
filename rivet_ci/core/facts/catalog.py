"""The source catalog of a facts file, and an export's facts derived from it (pure).

Facts are keyed by export name, so an export a pull request adds has none. The catalog fills
that gap: `rivet-ci facts` snapshots every relation of the schemas the configs touch (size, kind,
columns, valid btree indexes, keys and the index endpoints of integer and temporal columns) per
source, and an export without an entry of its own gets facts derived from the catalog of its
source and base table. Such facts say what they are (`FactsProvenance`): a catalog count is the
whole table, where rivet would have EXPLAINed a filtered query; a table missing from the
catalog gives no facts at all (unknown cost, never a guess).

A source is identified without secrets: engine, host, port and database, plus the config's
spelling of its `source:` (`url: ${ORDERS_URL}`, `url_env: ORDERS_URL`, the structured fields,
a literal URL with its password removed), so a pull request's configs, planned without the
secrets, map to the source their base captured.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from rivet_ci.core.common.fast_model import construct
from rivet_ci.core.config.models import ExportConfig, SourceConfig
from rivet_ci.core.facts.catalog_models import (
    STORED_KINDS,
    CatalogColumn,
    CatalogRelation,
    CatalogSource,
    Engine,
)
from rivet_ci.core.facts.models import ColumnFacts, ExportFacts, TableFacts

# --- identifying a source without secrets ------------------------------------------------------

_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$", re.DOTALL)
_ENGINES: dict[str, Engine] = {"postgres": "postgres", "postgresql": "postgres",
                               "mysql": "mysql", "mariadb": "mysql", "sqlite": "sqlite"}
_DEFAULT_PORT = {"postgres": 5432, "mysql": 3306}


def _without_password(url: str) -> str:
    match = _URL.match(url)
    if match is None:
        return url
    rest = match["rest"]
    netloc, sep, tail = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = userinfo.split(":", 1)[0] + "@" + hostport
    return f"{match['scheme']}://{netloc}{sep}{tail}"


def source_spelling(source: SourceConfig | None) -> str | None:
    """How a config spells its source, without any secret: `postgres url=${ORDERS_URL}`,
    `mysql url_env=ORDERS_URL`, `postgres host=db1 port=5432 user=etl database=shop` (a literal
    URL's password removed; `password` and `password_env` never part of it)."""
    if source is None:
        return None
    parts: list[str] = [source.type]
    if source.url is not None:
        parts.append("url=" + _without_password(source.url))
    for key in ("url_env", "url_file", "host", "port", "user", "database"):
        value = getattr(source, key)
        if value is not None:
            parts.append(f"{key}={value}")
    return " ".join(parts) if len(parts) > 1 else None


class SourceIdentity(NamedTuple):
    engine: Engine
    host: str | None
    port: int | None
    database: str | None


def source_identity(source: SourceConfig | None) -> SourceIdentity | None:
    """Engine, host, port and database of a source whose config names them outright (structured
    fields, or a literal URL with no `${...}` left); None otherwise."""
    if source is None or source.type not in _DEFAULT_PORT:
        return None
    engine: Engine = "postgres" if source.type == "postgres" else "mysql"
    if source.host is not None and "${" not in source.host:
        database = source.database if source.database and "${" not in source.database else None
        return SourceIdentity(engine, source.host, source.port or _DEFAULT_PORT[engine],
                              database)
    if source.url is None or "${" in source.url:
        return None
    return url_identity(source.url)


def url_identity(url: str) -> SourceIdentity | None:
    """Engine, host, port and database of a database URL (None: not one)."""
    match = _URL.match(url.strip())
    if match is None:
        return None
    engine = _ENGINES.get(match["scheme"].split("+", 1)[0].lower())
    if engine is None:
        return None
    netloc, _, tail = match["rest"].partition("/")
    hostport = netloc.rpartition("@")[2]
    host, _, port_text = hostport.rpartition(":") if hostport.count(":") == 1 else (
        hostport, "", "")
    port = int(port_text) if port_text.isdigit() and int(port_text) <= 65535 else None
    database = tail.split("?", 1)[0] or None
    if engine == "sqlite":
        return SourceIdentity(engine, None, None, database)
    return SourceIdentity(engine, host or None, port or _DEFAULT_PORT[engine], database)


def find_source(catalog: list[CatalogSource], source: SourceConfig | None,
                ) -> CatalogSource | None:
    """The catalogued source a config names: by its spelling first, else by engine, host, port
    and database when the config names them outright. None when nothing (or more than one
    source with one identity) matches — a guess would plan against another database."""
    spelling = source_spelling(source)
    if spelling is not None:
        for entry in catalog:
            if spelling in entry.spellings:
                return entry
    identity = source_identity(source)
    if identity is None:
        return None
    found = [e for e in catalog
             if (e.engine, e.host, e.port, e.database) == tuple(identity)]
    return found[0] if len(found) == 1 else None


# --- the base table of an export ---------------------------------------------------------------

_IDENT = r'(?:[A-Za-z_][A-Za-z0-9_$]*|"[^"]+"|`[^`]+`)'
_ONE_TABLE = re.compile(
    rf"^\s*select\s+(?P<what>.+?)\s+from\s+(?P<name>{_IDENT}(?:\s*\.\s*{_IDENT})?)"
    rf"(?:\s+(?:as\s+)?(?!where\b|group\b|order\b|limit\b|offset\b|fetch\b|having\b|window\b)"
    rf"{_IDENT})?"
    r"(?P<tail>\s+(?:where|group|order|limit|offset|fetch|having|window)\b.*)?\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)
_NOT_ONE_TABLE = re.compile(r"\b(?:join|union|intersect|except|lateral)\b|\(\s*select\b|,\s*"
                            r"(?=[^)]*$)", re.IGNORECASE)
_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_STRING = re.compile(r"'(?:[^']|'')*'")


class BaseTable(NamedTuple):
    schema: str | None
    name: str
    filtered: bool  # a query with WHERE / GROUP BY / LIMIT ...: not the whole table


def _unquote(ident: str) -> str:
    ident = ident.strip()
    return ident[1:-1] if ident[:1] in '"`' else ident


def base_table(export: ExportConfig) -> BaseTable | None:
    """The one table an export reads: its `table:`, or the single relation in the FROM of a
    plain `query:` (no join, subquery or set operation); None when there is not exactly one.
    `query_file` text is not read here (the planner is pure), so such an export has none."""
    if export.table is not None:
        qualifier, _, table = export.table.rpartition(".")
        return BaseTable(qualifier or None, table, False)
    if export.query is None:
        return None
    text = _STRING.sub("''", _COMMENT.sub(" ", export.query))
    match = _ONE_TABLE.match(text)
    if match is None or _NOT_ONE_TABLE.search(text[match.start("name"):]):
        return None
    what = match["what"]
    if re.search(r"\bselect\b", what, re.IGNORECASE):
        return None
    parts = [_unquote(p) for p in match["name"].split(".")]
    schema: str | None = parts[0] if len(parts) == 2 else None
    name = parts[-1]
    filtered = bool(match["tail"]) or (what.strip() != "*" and bool(
        re.search(r"\bdistinct\b|\(", what, re.IGNORECASE)))
    return BaseTable(schema, name, filtered)


# --- provenance ---------------------------------------------------------------------------------

FactsFrom = Literal["export", "catalog", "none"]
InputFrom = Literal["export", "catalog", "catalog-table-count", "unknown"]
# The inputs of the plan a provenance names, in the order the docs list them.
PROVENANCE_INPUTS = ("row_estimate", "avg_row_bytes", "plan_uses_index", "range",
                     "max_connections", "table_keys", "history")


class FactsProvenance(BaseModel):
    """Where an export's facts came from, input by input."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    facts: FactsFrom
    inputs: dict[str, InputFrom] = Field(default_factory=dict)
    relation: str | None = None  # the catalogued relation the facts were derived from
    captured_at: datetime | None = None
    why_unknown: str | None = None  # no facts: why (no entry, table not in the catalog, ...)


def provenance_of(entry: ExportFacts | None, origin: FactsFrom, *, range_column: str | None,
                  filtered: bool = False, relation: str | None = None,
                  captured_at: datetime | None = None,
                  why_unknown: str | None = None) -> FactsProvenance:
    """Which inputs of `entry` are known, and from where (`origin`)."""
    if entry is None or entry.preflight_error is not None:
        return _provenance("none", _UNKNOWN, relation, captured_at,
                           why_unknown or (entry.preflight_error if entry is not None else None))
    source: InputFrom = "export" if origin == "export" else "catalog"
    column = entry.columns.get(range_column) if range_column else None
    observed = (column is not None and column.range_skipped is None
                and column.min is not None and column.max is not None)
    rows: InputFrom = source if entry.row_estimate is not None else "unknown"
    if rows == "catalog" and filtered:
        rows = "catalog-table-count"
    inputs: tuple[InputFrom, ...] = (
        rows, source if entry.avg_row_bytes is not None else "unknown",
        source if entry.plan_uses_index is not None else "unknown",
        source if observed else "unknown",
        source if entry.max_connections is not None else "unknown",
        source if entry.table is not None else "unknown",
        "export" if entry.history or entry.last_success else "unknown")
    return _provenance(origin, inputs, relation, captured_at, None)


_UNKNOWN: tuple[InputFrom, ...] = tuple("unknown" for _ in PROVENANCE_INPUTS)


@functools.lru_cache(maxsize=4096)
def _provenance(facts: FactsFrom, inputs: tuple[InputFrom, ...], relation: str | None,
                captured_at: datetime | None, why_unknown: str | None) -> FactsProvenance:
    # A plan of 10,000 exports from per-export facts meets a handful of distinct provenances:
    # each is built once (frozen, so shared).
    # Built from values of the fields' types, without validation (`fast_model.construct`): a
    # `plan` run validates only untrusted input (tests/test_model_build.py).
    return construct(FactsProvenance, {
        "facts": facts, "inputs": dict(zip(PROVENANCE_INPUTS, inputs, strict=True)),
        "relation": relation, "captured_at": captured_at, "why_unknown": why_unknown})


# --- deriving an export's facts ----------------------------------------------------------------


FILTERED_RANGE_SKIPPED = ("the query filters its table, so the table's index ends are not its "
                          "range")


class Derived(NamedTuple):
    """Facts derived from the catalog (None: nothing known) and their provenance."""

    facts: ExportFacts | None
    provenance: FactsProvenance


def _day(when: datetime | None) -> str:
    return f" captured {when.date().isoformat()}" if when is not None else ""


def derive_from_catalog(export: ExportConfig, source: SourceConfig | None,
                        catalog: list[CatalogSource]) -> Derived:
    """An export's facts from the catalog of its source and base table (see the module)."""
    range_column = export.range_column
    entry = find_source(catalog, source)
    if entry is None:
        why = "its source is not in the catalog"
        return Derived(None, provenance_of(None, "none", range_column=None, why_unknown=why))
    when = entry.captured_at
    table = base_table(export)
    if table is None:
        why = ("its query does not read exactly one table" if export.query is not None else
               "its query_file is not read to find its table")
        return Derived(None, provenance_of(None, "none", range_column=None, captured_at=when,
                                           why_unknown=why))
    found = entry.relation(table.schema, table.name)
    qualifier = table.schema or entry.default_schema
    shown = f"{qualifier}.{table.name}" if qualifier else table.name
    if found is None:
        why = f"table {shown} is not in the catalog{_day(when)}"
        if entry.schemas and (table.schema or entry.default_schema) not in entry.schemas:
            why += f" (schema {table.schema or entry.default_schema} was not captured)"
        return Derived(None, provenance_of(None, "none", range_column=None, captured_at=when,
                                           why_unknown=why))
    key, rel = found
    rows = rel.rows
    if rel.kind == "partitioned_table":
        parts = [r.rows for r in entry.relations.values() if r.partition_of == key]
        if parts and all(p is not None for p in parts):
            rows = max(rows or 0, sum(p for p in parts if p is not None))
    if rel.kind == "view":
        rows = None  # a view has no size of its own
    notes = [f"facts derived from the catalog of {key}{_day(when)}"]
    if table.filtered and rows is not None:
        notes.append(f"row estimate is the catalog count of {key}: the query's filter is not "
                     f"applied (rivet would EXPLAIN it)")
    leading = {ix.columns[0] for ix in rel.indexes if ix.columns}
    columns: dict[str, ColumnFacts] = {}
    chunked_auto = (export.mode == "chunked" and export.table is not None
                    and export.chunk_column is None and export.chunk_by_key is None)
    wanted = range_column or (rel.integer_primary_key if chunked_auto else None)
    if wanted is not None:
        name, column = _column(entry, rel, wanted)
        if column is None and rel.columns:
            notes.append(f"column {wanted} is not in {key}")
        elif column is not None:
            stored = rel.kind in STORED_KINDS
            # A query that reads its table whole (a projection) has the table's range; a
            # filtered one has a narrower one the catalog cannot know.
            observed = (stored and not table.filtered and column.range_skipped is None
                        and column.min is not None)
            skipped = None
            if table.filtered:
                skipped = FILTERED_RANGE_SKIPPED
            elif not observed:
                skipped = column.range_skipped or (
                    "the catalog reads the ends of index-leading integer and temporal columns "
                    f"only; {wanted} is not one" if stored else
                    f"{key} is a view: min/max would run its query")
            columns[wanted] = ColumnFacts(
                indexed=name in leading, min=column.min if observed else None,
                max=column.max if observed else None, range_skipped=skipped,
                integer=column.integer, keyset_key=column.keyset_key,
                has_nulls=False if column.nullable is False else None)
    fallback = export.cursor_fallback_column
    if fallback and fallback not in columns:
        name, column = _column(entry, rel, fallback)
        if column is not None:
            columns[fallback] = ColumnFacts(indexed=name in leading)
    facts = ExportFacts(
        row_estimate=rows,
        avg_row_bytes=rel.avg_row_bytes,
        # `SELECT * FROM t` reads the table in full; a filtered query may or may not use an
        # index: unknown (no credit), as the catalog cannot say what its plan would be.
        plan_uses_index=False if not table.filtered and export.table is not None else None,
        max_connections=entry.max_connections,
        columns=columns,
        table=TableFacts(rows=rows, integer_primary_key=rel.integer_primary_key,
                         unique_key=rel.unique_key if entry.engine == "mysql" else None)
        if export.table is not None else None,
        notes=notes,
    )
    return Derived(facts, provenance_of(facts, "catalog", range_column=wanted,
                                        filtered=table.filtered, relation=key,
                                        captured_at=when))


def _column(entry: CatalogSource, rel: CatalogRelation, name: str,
            ) -> tuple[str, CatalogColumn | None]:
    if name in rel.columns:
        return name, rel.columns[name]
    folded = name.lower()
    for key, column in rel.columns.items():
        if key.lower() == folded and (entry.engine != "postgres" or key == folded):
            return key, column
    return name, None
