"""An export's type report from the trusted catalog of its source (pure; see the package).

The result columns rivet reads: a `table:` export's are its relation's, in order (rivet runs
`SELECT * FROM <table>`); a `query:` export's are read from its SELECT
(`select_list.parse_select`) and resolved against the catalog — never run. Each column's type is
then rivet's (`sources`), unless the export's `columns:` override names it exactly; its fidelity,
format and `--target` verdicts follow (`rivet_types`, `targets`).

Where rivet-ci cannot know what rivet would read — a source type it does not model, a relation
or column not in the catalog, an expression whose type it does not derive, a query it does not
read — the column (or the export) is `unknown`, with the reason; never `safe`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rivet_ci.core.common.fast_model import construct
from rivet_ci.core.config.models import ExportConfig, SourceConfig
from rivet_ci.core.config.rules import column_override
from rivet_ci.core.facts.catalog import find_source
from rivet_ci.core.facts.catalog_models import CatalogColumn, CatalogRelation, CatalogSource
from rivet_ci.core.fidelity.models import (
    UNSAFE_MAPPING_CODE,
    ColumnVerdict,
    ExportTypes,
    RefusedBy,
    TypeReport,
)
from rivet_ci.core.fidelity.rivet_types import (
    CSV_REFUSAL,
    UNSAFE_FIDELITIES,
    RivetType,
    csv_refuses,
    from_override,
    narrowing,
)
from rivet_ci.core.fidelity.select_list import (
    Cast,
    ColumnRef,
    Count,
    Dialect,
    Item,
    Name,
    Select,
    Star,
    TableRef,
    parse_select,
    single_table,
)
from rivet_ci.core.fidelity.sources import (
    SourceType,
    mysql_type,
    numeric_hint,
    postgres_type,
)
from rivet_ci.core.fidelity.targets import Target, resolve_target

_DIALECTS: dict[str, Dialect] = {"postgres": "postgres", "mysql": "mysql"}


@dataclass(frozen=True)
class _Column:
    """A result column before its verdict: its name (None: not known) and where its type comes
    from — a catalogued column, a type of its own (a cast, `count`), or nothing known."""

    name: str | None
    catalogued: CatalogColumn | None = None
    own_type: SourceType | None = None
    unknown: str | None = None


def type_report(exports: Iterable[tuple[str, SourceConfig | None, ExportConfig]],
                catalog: Sequence[CatalogSource], *, target: Target | None = None,
                query_texts: Mapping[tuple[str, str], str] | None = None) -> TypeReport:
    """The type report of every `(config path, source, export)`. `query_texts`: the text of
    a `query_file` export by (config path, export name), read by the shell."""
    texts = query_texts or {}
    reports = tuple(export_types(path, source, export, catalog, target=target,
                                 query_text=texts.get((path, export.name)))
                    for path, source, export in exports)
    return construct(TypeReport, {"target": target, "exports": reports})


def export_types(config: str, source: SourceConfig | None, export: ExportConfig,
                 catalog: Sequence[CatalogSource], *, target: Target | None = None,
                 query_text: str | None = None) -> ExportTypes:
    """One export's type report (see the module)."""

    def report(columns: tuple[ColumnVerdict, ...] = (), relation: str | None = None,
               unknown: str | None = None) -> ExportTypes:
        return construct(ExportTypes, {
            "config": config, "export": export.name, "format": export.format,
            "target": target, "relation": relation, "columns": columns, "unknown": unknown})

    dialect = _DIALECTS.get(source.type) if source is not None else None
    if source is None or dialect is None:
        kind = source.type if source is not None else "none"
        return report(unknown=f"rivet-ci models rivet's types of PostgreSQL and MySQL sources "
                      f"only (source type {kind})")
    entry = find_source(list(catalog), source)
    if entry is None:
        return report(unknown="its source is not in the catalog")
    columns, relation, hint_relation, why = _result_columns(export, entry, dialect, query_text)
    if why is not None:
        return report(relation=relation, unknown=why)
    hints: dict[str, tuple[int, int]] = {}
    if dialect == "postgres" and hint_relation is not None:
        hints = {name: hint for name, col in hint_relation.columns.items()
                 if (hint := numeric_hint(col)) is not None}
    return report(tuple(_verdict(c, export, dialect, hints, target) for c in columns),
                  relation)


# --- the result columns --------------------------------------------------------------------------

def _fold(name: Name, dialect: Dialect) -> str:
    """An identifier as the server names it: PostgreSQL folds unquoted names to lower case."""
    return name.text.lower() if dialect == "postgres" and not name.quoted else name.text


def _relation(entry: CatalogSource, ref: TableRef | tuple[str | None, str],
              dialect: Dialect) -> tuple[str, CatalogRelation] | None:
    if isinstance(ref, TableRef):
        schema = _fold(ref.schema, dialect) if ref.schema is not None else None
        return entry.relation(schema, _fold(ref.name, dialect))
    return entry.relation(*ref)


def _result_columns(export: ExportConfig, entry: CatalogSource, dialect: Dialect,
                    query_text: str | None,
                    ) -> tuple[list[_Column], str | None, CatalogRelation | None, str | None]:
    """(result columns, the relation they come from, the relation rivet reads numeric
    precisions from, why nothing is known)."""
    if export.table is not None:
        qualifier, _, name = export.table.rpartition(".")
        found = _relation(entry, (qualifier or None, name), dialect)
        if found is None:
            return [], None, None, f"table {export.table} is not in the catalog"
        key, rel = found
        return ([_Column(n, catalogued=c) for n, c in rel.columns.items()], key, rel,
                _uncatalogued(rel, key))
    text = export.query if export.query is not None else query_text
    if text is None:
        why = ("its query_file is not read by rivet-ci check" if export.query_file is not None
               else "it reads neither one table nor a query (a multi-table `tables:` export)")
        return [], None, None, why
    return _query_columns(text, entry, dialect)


def _query_columns(text: str, entry: CatalogSource, dialect: Dialect,
                   ) -> tuple[list[_Column], str | None, CatalogRelation | None, str | None]:
    select = parse_select(text, dialect)
    if select is None:
        return [], None, None, ("rivet-ci does not read the result columns of this query (a "
                                "plain SELECT ... FROM of named relations only)")
    tables: list[tuple[TableRef, str, CatalogRelation] | tuple[TableRef, None, None]] = []
    for ref in select.tables:
        found = _relation(entry, ref, dialect)
        tables.append((ref, *found) if found is not None else (ref, None, None))
    columns: list[_Column] = []
    for item in select.items:
        if isinstance(item, Star):
            expanded, why = _star(item, select, tables, dialect)
            if why is not None:
                return [], None, None, why
            columns.extend(expanded)
        else:
            columns.append(_item_column(item, select, tables, dialect))
    names = [c.name for c in columns]
    if dialect == "mysql" and len({n.lower() for n in names if n is not None}) < len(names):
        # rivet reads a query's types as `SELECT * FROM (<query>) AS ... LIMIT 0`, which MySQL
        # refuses when two result columns share a name: rivet's report of it fails.
        return [], None, None, ("two result columns share a name, which MySQL refuses in "
                                "rivet's typing of the query: its report fails")
    relation = tables[0][1] if len(tables) == 1 else None
    hint_relation = None
    if dialect == "postgres":
        single = single_table(text)
        if single is not None:
            hinted = _relation(entry, TableRef(single[0], single[1], None), dialect)
            hint_relation = hinted[1] if hinted is not None else None
    return columns, relation, hint_relation, None


def _uncatalogued(rel: CatalogRelation, key: str) -> str | None:
    if not rel.columns:
        return f"the catalog has no columns of {key}"
    return None


def _star(star: Star, select: Select, tables: Sequence[tuple[TableRef, str | None,
                                                             CatalogRelation | None]],
          dialect: Dialect) -> tuple[list[_Column], str | None]:
    if star.qualifier is None:
        if select.opaque_from:
            return [], "`*` over a derived table or a function: its columns are not catalogued"
        if select.merges_columns and len(tables) > 1:
            return [], "`*` over a join USING/NATURAL (merged columns)"
        picked = list(tables)
    else:
        picked = [t for t in tables if _names_table(star.qualifier, t[0], dialect)]
        if len(picked) != 1:
            return [], f"`{star.qualifier.text}.*`: no single relation of that name in the query"
    out: list[_Column] = []
    for ref, key, rel in picked:
        if rel is None or key is None:
            return [], f"`*` reads {_shown(ref)}, which is not in the catalog"
        why = _uncatalogued(rel, key)
        if why is not None:
            return [], why
        out.extend(_Column(n, catalogued=c) for n, c in rel.columns.items())
    return out, None


def _shown(ref: TableRef) -> str:
    return f"{ref.schema.text}.{ref.name.text}" if ref.schema is not None else ref.name.text


def _same(a: str, b: str, dialect: Dialect) -> bool:
    return a == b if dialect == "postgres" else a.lower() == b.lower()


def _names_table(qualifier: Name, ref: TableRef, dialect: Dialect) -> bool:
    wanted = _fold(qualifier, dialect)
    if ref.alias is not None:
        return _same(_fold(ref.alias, dialect), wanted, dialect)
    return _same(_fold(ref.name, dialect), wanted, dialect)


def _item_column(item: Item, select: Select,
                 tables: Sequence[tuple[TableRef, str | None, CatalogRelation | None]],
                 dialect: Dialect) -> _Column:
    name = _item_name(item, dialect)
    expression = item.expression
    if isinstance(expression, ColumnRef):
        column, why = _resolve(expression, select, tables, dialect)
        return _Column(name, catalogued=column, unknown=why)
    if isinstance(expression, Count):  # count() is a bigint on both servers
        return _Column(name, own_type=SourceType("int8" if dialect == "postgres" else "bigint",
                                                 RivetType("int8")))
    if isinstance(expression, Cast):
        return _cast_column(name, expression, dialect)
    return _Column(name, unknown="an expression rivet-ci does not derive the type of")


def _item_name(item: Item, dialect: Dialect) -> str | None:
    """The result column's name as the server gives it (None: not derived)."""
    if item.alias is not None:
        return _fold(item.alias, dialect)
    expression = item.expression
    if dialect == "mysql":
        if isinstance(expression, ColumnRef):
            return expression.column.text
        return item.text  # MySQL names an expression by its text as written
    while isinstance(expression, Cast):  # PostgreSQL names a cast after what it casts
        operand = expression.operand
        if isinstance(operand, Cast | ColumnRef):
            expression = operand
        else:
            return None
    if isinstance(expression, ColumnRef):
        return _fold(expression.column, dialect)
    if isinstance(expression, Count):
        return "count"
    return None


def _resolve(ref: ColumnRef, select: Select,
             tables: Sequence[tuple[TableRef, str | None, CatalogRelation | None]],
             dialect: Dialect) -> tuple[CatalogColumn | None, str | None]:
    if len(ref.qualifier) > 2:
        return None, "a column reference rivet-ci does not resolve"
    if ref.qualifier:
        qualifier = ref.qualifier[-1]
        candidates = [t for t in tables if _names_table(qualifier, t[0], dialect)]
        if len(candidates) != 1:
            return None, f"`{qualifier.text}` names no single relation of the query"
    else:
        candidates = list(tables)
    wanted = _fold(ref.column, dialect)
    found: list[CatalogColumn] = []
    for table, _key, rel in candidates:
        if rel is None:
            return None, f"{_shown(table)} is not in the catalog"
        column = _column_of(rel, wanted, dialect)
        if column is not None:
            found.append(column)
    if len(found) == 1 and (ref.qualifier or not select.opaque_from):
        return found[0], None
    if len(found) > 1:
        return None, f"column {ref.column.text} is ambiguous"
    if select.opaque_from and not ref.qualifier:
        return None, f"column {ref.column.text} may come from a derived table"
    return None, f"column {ref.column.text} is not in the catalog"


def _column_of(rel: CatalogRelation, name: str, dialect: Dialect) -> CatalogColumn | None:
    if name in rel.columns:
        return rel.columns[name]
    if dialect == "mysql":
        folded = name.lower()
        for key, column in rel.columns.items():
            if key.lower() == folded:
                return column
    return None


# --- casts -------------------------------------------------------------------------------------

# PostgreSQL type spellings a cast may name, and the type the driver then receives.
_PG_SPELLINGS: dict[tuple[str, ...], str] = {
    ("smallint",): "int2", ("int2",): "int2", ("int",): "int4", ("integer",): "int4",
    ("int4",): "int4", ("bigint",): "int8", ("int8",): "int8", ("real",): "float4",
    ("float4",): "float4", ("double", "precision"): "float8", ("float8",): "float8",
    ("float",): "float8", ("numeric",): "numeric", ("decimal",): "numeric", ("text",): "text",
    ("varchar",): "varchar", ("character", "varying"): "varchar", ("char",): "bpchar",
    ("character",): "bpchar", ("bpchar",): "bpchar", ("bool",): "bool", ("boolean",): "bool",
    ("date",): "date", ("time",): "time", ("time", "without", "time", "zone"): "time",
    ("time", "with", "time", "zone"): "timetz", ("timetz",): "timetz",
    ("timestamp",): "timestamp", ("timestamp", "without", "time", "zone"): "timestamp",
    ("timestamptz",): "timestamptz", ("timestamp", "with", "time", "zone"): "timestamptz",
    ("interval",): "interval", ("uuid",): "uuid", ("json",): "json", ("jsonb",): "jsonb",
    ("bytea",): "bytea", ("name",): "name", ("oid",): "oid", ("money",): "money",
    ("xml",): "xml", ("inet",): "inet", ("cidr",): "cidr", ("macaddr",): "macaddr",
    ("bit",): "bit", ("varbit",): "varbit", ("bit", "varying"): "varbit",
    ("tsvector",): "tsvector", ("point",): "point"}


def _cast_column(name: str | None, cast: Cast, dialect: Dialect) -> _Column:
    words = cast.type_words
    if dialect == "postgres":
        array = words[-2:] == ("[", "]")
        base = words[:-2] if array else words
        if "(" in base:  # a type modifier: (n), (p,s), (p) — the wire does not carry it
            base = base[:base.index("(")] + base[base.index(")") + 1:] if ")" in base else ()
        typname = _PG_SPELLINGS.get(tuple(base))
        if typname is None or (array and words.count("[") != 1):
            return _Column(name, unknown="a cast to a type rivet-ci does not know the wire "
                           "type of")
        if typname == "float8" and base == ("float",) and "(" in words:
            return _Column(name, unknown="a cast to float(p)")
        if array:
            return _Column(name, catalogued=CatalogColumn(
                type=" ".join(words), base_type=f"_{typname}", array_of=typname))
        return _Column(name, catalogued=CatalogColumn(type=" ".join(words),
                                                      base_type=typname))
    column_type = _mysql_cast_type(words)
    if column_type is None:
        return _Column(name, unknown="a cast to a type rivet-ci does not know the metadata of")
    source = mysql_type(column_type)
    return _Column(name, own_type=source) if source is not None else _Column(
        name, unknown="a cast to a type rivet-ci does not know the metadata of")


def _mysql_cast_type(words: tuple[str, ...]) -> str | None:
    """The column type whose metadata MySQL/MariaDB give a `CAST(x AS <words>)`."""
    head, args = words[0], words[1:]
    arguments = ""
    if args[:1] == ("(",) and args[-1:] == (")",):
        arguments = "".join(args)
        args = ()
    if head == "decimal":
        inner = [a for a in arguments.strip("()").split(",") if a] if arguments else []
        if not all(a.isdigit() for a in inner) or len(inner) > 2:
            return None
        precision = inner[0] if inner else "10"
        scale = inner[1] if len(inner) > 1 else "0"
        return f"decimal({precision},{scale})"
    if not arguments and head in ("signed", "unsigned") and args in ((), ("int",),
                                                                     ("integer",)):
        return "bigint unsigned" if head == "unsigned" else "bigint"
    if not arguments and head in ("int", "integer") and not args:
        return "bigint"
    if args:
        return None
    simple = {"char": "varchar", "nchar": "varchar", "binary": "varbinary", "date": "date",
              "datetime": "datetime", "time": "time", "double": "double", "float": "float"}
    return simple.get(head)


# --- the verdict -------------------------------------------------------------------------------

def _verdict(column: _Column, export: ExportConfig, dialect: Dialect,
             hints: Mapping[str, tuple[int, int]], target: Target | None) -> ColumnVerdict:
    name = column.name
    if name is None:
        return construct(ColumnVerdict, {
            "column": "?", "unknown": column.unknown or "its result name is not derived"})
    source = column.own_type
    if source is None and column.catalogued is not None:
        if dialect == "postgres":
            source = postgres_type(column.catalogued, hints.get(name))
        else:
            source = mysql_type(column.catalogued.type)
    override_text = export.columns.get(name)
    override = column_override(override_text) if override_text is not None else None
    warnings: tuple[str, ...] = ()
    if override is not None:
        rivet = from_override(*override)
        lost = narrowing(source.rivet, rivet) if source is not None else None
        if lost is not None:
            rivet = rivet._replace(lossy=True)
            warnings = (lost,)
    elif source is not None:
        rivet = source.rivet
    else:
        why = column.unknown
        if why is None and column.catalogued is not None:
            why = (f"its type {column.catalogued.type!r} is not one rivet-ci knows how the "
                   "server describes" if dialect == "mysql" else
                   "the catalog does not record the type rivet reads (captured by an older "
                   "rivet-ci: capture it again)")
        return construct(ColumnVerdict, {"column": name,
                                         "unknown": why or "its type is not known"})
    fidelity = rivet.fidelity
    source_name = source.name if source is not None else None
    violation = format_violation = None
    refused: list[RefusedBy] = []
    if fidelity in UNSAFE_FIDELITIES:
        detail = f": {rivet.unsupported_reason}" if rivet.unsupported_reason else ""
        violation = (f"column '{name}' (source type '{source_name}'): "
                     f"fidelity={fidelity}{detail}")
        refused.append("fidelity")
    if export.format == "csv" and csv_refuses(rivet):  # a lossy column too
        format_violation = CSV_REFUSAL.format(column=name, arrow=rivet.arrow)
        refused.append("format")
    on_target = resolve_target(target, rivet, name) if target is not None else None
    if on_target is not None and on_target.status == "fail":
        refused.append("target")
    # Built from values of the fields' types, without validation (`fast_model.construct`).
    return construct(ColumnVerdict, {
        "column": name, "source_type": source_name, "rivet_type": rivet.label,
        "arrow_type": rivet.arrow, "fidelity": fidelity,
        "target_type": on_target.type if on_target else None,
        "target_status": on_target.status if on_target else None,
        "target_note": on_target.note if on_target else None,
        "autoload_type": on_target.autoload if on_target else None,
        "violation": violation, "format_violation": format_violation, "warnings": warnings,
        "refused_by": tuple(refused), "code": UNSAFE_MAPPING_CODE if refused else None,
        "override": override_text if override is not None else None, "unknown": None})
