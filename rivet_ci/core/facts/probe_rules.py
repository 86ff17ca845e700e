"""What live preflight may ask a source about an export, and what a probe would cost (pure).

The shapes a probe session observes (:class:`PlanFacts` of an EXPLAIN, :class:`RelationInfo` of a
catalog lookup) and the rules over them: which range column an export needs observed, which
relations are looked up, whether min/max of a column is cheap enough to run on a replica, which
columns one min/max statement covers, and what the catalog says about a column. No I/O: the
collector (`rivet_ci.adapters.preflight.collect`) schedules the probes these rules allow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from rivet_ci.core.config.models import ExportConfig

# (schema or None, name): a relation as the collector names it. Names from a config are already
# case-folded the way the dialect folds unquoted identifiers.
Rel = tuple[str | None, str]

# A probe may read at most bound / SCAN_MARGIN rows by the estimates: estimates err (InnoDB put a
# 1,000,000-row table at 996,630), so an estimate just under the bound must not let a full scan of
# a table at the bound through.
SCAN_MARGIN = 2

QUERY_RANGE_SKIPPED = ("min/max is only probed on the base table of a `table:` export, never by "
                       "running a query")
# A query the pull request added or changed is never run, not even inside a min/max.
UNTRUSTED_QUERY_RANGE_SKIPPED = (
    "the query is new or changed in this pull request: its range is only observed over a bare "
    "column of its single base table, never by running the query")

# The export fields naming the range column, in the order rivet reads them.
RANGE_FIELDS = ("chunk_column", "chunk_by_key", "cursor_column", "time_column")


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
    """Catalog facts about one table or view.

    `base_table`: stored rows of its own (a table, a partitioned table, a materialized view),
    not a view whose reading runs other SQL. Only base tables are ever probed for min/max.
    """

    rows: int | None
    columns: frozenset[str] | None
    leading_index_columns: frozenset[str] = field(default_factory=frozenset)
    base_table: bool = True
    # What rivet's chunk planning checks (rivet-plan.md §4.2): integer-family columns, NOT NULL
    # columns, single-column NOT NULL unique/primary keys of a type the keyset cursor reads
    # (integer, float, string, timestamp, date, uuid — not decimal), the single-integer primary
    # key, and (MySQL) the first such unique key.
    integer_columns: frozenset[str] = field(default_factory=frozenset)
    not_null_columns: frozenset[str] = field(default_factory=frozenset)
    keyset_columns: frozenset[str] = field(default_factory=frozenset)
    integer_primary_key: str | None = None
    unique_key: str | None = None


class ProbeNeeds(NamedTuple):
    """What an export needs observed beyond its EXPLAIN."""

    # The field that names the range column (its value is `export.range_column`), if any.
    range_field: str | None
    # A chunked `table:` export: the table's catalog facts (size, keys) are looked up.
    wants_table: bool
    # ... with no chunk_column/chunk_by_key: rivet chunks it on the table's single-integer
    # primary key (rivet-plan.md §4.2), so that key's range is observed too.
    auto_key: bool


def probe_needs(export: ExportConfig) -> ProbeNeeds:
    range_field = next((f for f in RANGE_FIELDS if getattr(export, f)), None)
    chunked_table = export.table is not None and export.mode == "chunked"
    return ProbeNeeds(
        range_field=range_field if export.range_column else None,
        wants_table=chunked_table,
        auto_key=chunked_table and export.chunk_column is None and export.chunk_by_key is None)


def range_sliced(export: ExportConfig) -> bool:
    """A chunked export cut into integer key-range windows (not keyset or by days)."""
    return (export.mode == "chunked" and export.chunk_by_key is None
            and export.chunk_by_days is None)


def same_name(dialect: str, a: str, b: str) -> bool:
    """Names are folded already; PostgreSQL compares exactly, the others ignore case."""
    return a == b if dialect == "postgresql" else a.lower() == b.lower()


def _member(dialect: str, column: str, names: Iterable[str]) -> bool:
    return any(same_name(dialect, column, name) for name in names)


def column_kind(dialect: str, info: RelationInfo | None, column: str) -> dict[str, bool | None]:
    """What chunk planning checks about a column of the table (unknown for a query)."""
    if info is None or not info.columns:
        return {}
    return {"integer": _member(dialect, column, info.integer_columns),
            "keyset_key": _member(dialect, column, info.keyset_columns),
            # NOT NULL: no NULL can exist; a nullable one is checked with min/max, if at all.
            "has_nulls": False if _member(dialect, column, info.not_null_columns) else None}


def indexed(dialect: str, rels: Sequence[Rel], infos: Mapping[Rel, RelationInfo],
            column: str) -> bool | None:
    """Leading column of a valid btree index of one of `rels` (None: none of them is known)."""
    known = [infos[rel] for rel in rels if rel in infos]
    if not known:
        return None
    return any(_member(dialect, column, info.leading_index_columns) for info in known)


def has_column(dialect: str, info: RelationInfo | None, column: str) -> bool | None:
    """Whether the table has the column (None: its columns are unknown)."""
    if info is None or not info.columns:
        return None
    return _member(dialect, column, info.columns)


def rows_read(rel: Rel, plan: PlanFacts, infos: Mapping[Rel, RelationInfo]) -> int | None:
    """Rows a full read of the table costs, by every estimate at hand: its catalog size, the
    plan's row estimate, and the SUM of every relation its plan reads in full (the partitions of
    a partitioned table). None when any part is of unknown size."""
    figures: list[int] = []
    info = infos.get(rel)
    if info is not None and info.rows is not None:
        figures.append(info.rows)
    if plan.row_estimate is not None:
        figures.append(plan.row_estimate)
    if plan.examined_rows is not None:
        figures.append(plan.examined_rows)
    if info is None and not plan.full_scans:
        return None
    scanned = 0
    for scan in plan.full_scans:
        scan_info = infos.get(scan.relation) if scan.relation is not None else None
        size = scan_info.rows if scan_info is not None else scan.rows
        if size is None:
            return None  # one relation of unknown size: the total is unknown
        scanned += size
    if plan.full_scans:
        figures.append(scanned)
    # No figure at all (no catalog size, no plan estimate, no scan) is an unknown size, never 0:
    # weak data must not make a probe look cheap.
    return max(figures) if figures else None


def range_skip(dialect: str, rel: Rel, column: str, plan: PlanFacts,
               infos: Mapping[Rel, RelationInfo], *, bound: int) -> str | None:
    """Why min/max of `column` must not be probed on the table (None: it is cheap). `bound` is
    the probe's row bound (`range_probe_row_bound`)."""
    name = ".".join(p for p in rel if p)
    info = infos.get(rel)
    if info is None:
        return f"{name} was not found in the catalog"
    if not info.base_table:
        return f"{name} is a view: min/max would run its query"
    if info.columns and not _member(dialect, column, info.columns):
        return f"{name} has no column {column}"
    if _member(dialect, column, info.leading_index_columns):
        return None  # the index's two ends answer min and max
    limit = bound // SCAN_MARGIN
    what = f"no index leads with {column}, so min/max reads the whole table"
    rows = rows_read(rel, plan, infos)
    if rows is None:
        return f"{what}, and its size is unknown"
    if rows > limit:
        return (f"{what}: ~{rows} rows, over {limit} (the probe bound of {bound} with a "
                f"margin of {SCAN_MARGIN}x for estimate error)")
    return None


# Built-in functions of PostgreSQL and MySQL/MariaDB without side effects that a trusted query
# may call and still run inside rivet's range statement. Any other call (a user-defined
# function could do anything the read-only transaction allows, or sleep until the timeout)
# keeps the query EXPLAIN-only: its range is then not observed.
RANGE_SAFE_FUNCTIONS = frozenset({
    "abs", "avg", "cast", "ceil", "ceiling", "char_length", "coalesce", "concat", "concat_ws",
    "convert", "count", "date", "date_format", "date_trunc", "extract", "floor", "from_unixtime",
    "greatest", "if", "ifnull", "isnull", "least", "left", "length", "lower", "ltrim", "max",
    "md5", "min", "mod", "nullif", "position", "replace", "right", "round", "row_number",
    "rtrim", "substr", "substring", "sum", "to_char", "to_timestamp", "trim", "trunc",
    "unix_timestamp", "upper"})


def unsafe_range_functions(functions: Iterable[str]) -> list[str]:
    """The functions a query calls that keep it out of a range statement (sorted)."""
    return sorted(f for f in functions if f not in RANGE_SAFE_FUNCTIONS)


def query_range_skip(plan: PlanFacts, infos: Mapping[Rel, RelationInfo], *,
                     bound: int) -> str | None:
    """Why rivet's range statement over a (trusted) query, `SELECT min(c), max(c) FROM (<query>)
    AS _rivet`, must not run (None: it is bounded). `plan` is the EXPLAIN of that statement:
    bounded when it reads no relation in full (every scan is an index endpoint or an index
    range), or when everything it reads in full is at most bound / SCAN_MARGIN rows by the
    catalog (a relation of unknown size makes the whole unknown, and unknown never runs)."""
    if not plan.full_scans:
        return None
    limit = bound // SCAN_MARGIN
    what = "min/max over the query reads whole relations"
    scanned = 0
    for scan in plan.full_scans:
        info = infos.get(scan.relation) if scan.relation is not None else None
        size = info.rows if info is not None and info.rows is not None else scan.rows
        if size is None:
            return f"{what}, of unknown size"
        scanned += size
    if plan.examined_rows is not None:
        scanned = max(scanned, plan.examined_rows)
    if scanned > limit:
        return (f"{what}: ~{scanned} rows, over {limit} (the probe bound of {bound} with a "
                f"margin of {SCAN_MARGIN}x for estimate error)")
    return None


_WORD = r'(?:[A-Za-z_][A-Za-z0-9_$]*|"[^"]+"|`[^`]+`)'
_BARE_SELECT = re.compile(
    rf"\s*SELECT\s+(?P<items>[^()';]+?)\s+FROM\s+(?P<table>{_WORD}(?:\.{_WORD})?)"
    rf"(?:\s+(?:AS\s+)?(?P<alias>{_WORD}))?(?:\s+WHERE\s+[^;]*)?\s*", re.IGNORECASE | re.DOTALL)
_NOT_ALIASES = frozenset({"where", "join", "inner", "left", "right", "full", "cross", "natural",
                          "group", "order", "limit", "union", "having", "window", "offset",
                          "fetch", "for", "on", "using", "lateral", "tablesample"})


def _unquote(word: str) -> str:
    return word[1:-1] if word[:1] in ('"', "`") else word


def bare_column_of_single_table(dialect: str, query: str, column: str, plan: PlanFacts,
                                infos: Mapping[Rel, RelationInfo]) -> Rel | None:
    """The base table whose bare column `column` a query selects, or None.

    For a query the pull request wrote, the range is observed only where that costs nothing a
    `table:` export could not read anyway: `SELECT [*|a, b, alias.c, ...] FROM one_table [alias]
    [WHERE ...]` — no function, expression, subquery, join or set operation (no parenthesis at
    all in the select list), the column listed bare (or `*`), and the plan reading exactly one
    relation, a base table that has the column. The probe then reads `min(column)`, `max(column)`
    of that table (the table's own cost rule applies), never the query."""
    match = _BARE_SELECT.fullmatch(query)
    if match is None or len(plan.relations) != 1:
        return None
    alias = match.group("alias")
    if alias is not None and _unquote(alias).lower() in _NOT_ALIASES:
        return None
    rel = plan.relations[0]
    info = infos.get(rel)
    if info is None or not info.base_table or not info.columns:
        return None
    if not _member(dialect, column, info.columns):
        return None
    for item in (i.strip() for i in match.group("items").split(",")):
        if item == "*":
            return rel
        parts = item.split(".")
        if len(parts) <= 3 and all(re.fullmatch(_WORD, p) for p in parts) and same_name(
                dialect, _unquote(parts[-1]).lower() if dialect == "postgresql"
                and parts[-1][:1] != '"' else _unquote(parts[-1]), column):
            return rel
    return None


class MinMaxProbe(NamedTuple):
    """One min/max statement on a table: its columns, and those also checked for a NULL."""

    columns: tuple[str, ...]
    null_checks: tuple[str, ...]


def min_max_probe(dialect: str, rel: Rel, wanted: Iterable[str], *, auto_key: bool,
                  plan: PlanFacts, infos: Mapping[Rel, RelationInfo], bound: int,
                  ) -> MinMaxProbe:
    """The min/max statement for every wanted, cheap column of the table (over all exports of
    the collection); `auto_key` adds the table's integer primary key."""
    columns = set(wanted)
    info = infos.get(rel)
    if auto_key and info is not None and info.integer_primary_key:
        columns.add(info.integer_primary_key)
    cheap = sorted(c for c in columns
                   if range_skip(dialect, rel, c, plan, infos, bound=bound) is None)
    # rivet's NULL-key probe, for nullable columns of a table small enough to read in full
    # (an EXISTS over a big table may be planned as a scan of it).
    rows = rows_read(rel, plan, infos)
    small = rows is not None and rows <= bound // SCAN_MARGIN
    null_checks = [c for c in cheap if small and info is not None and info.columns
                   and not _member(dialect, c, info.not_null_columns)]
    return MinMaxProbe(tuple(cheap), tuple(null_checks))
