"""The rivet type of a source column, as rivet 0.32.2's drivers derive it (learned from the
binary: tests/test_type_fidelity_parity.py).

**PostgreSQL** — rivet reads the result's type OIDs (a domain arrives as its base type) and maps
the built-in types by name; an enum is `enum`, an array is a list of its element's type, and
anything else is unsupported. The wire carries no `numeric` precision: rivet looks it up in
`information_schema.columns` **by the result column's name**, in the one table of a
`SELECT ... FROM t` (`numeric_hints`), and a numeric without a usable precision there is
unsupported — `every rivet run of it fails`.

**MySQL / MariaDB** — rivet reads the result's column metadata: type code, flags (unsigned,
binary charset, enum/set) and display length, which for a table's column follow from its
`COLUMN_TYPE` (`decimal(p,s)` keeps its precision and scale).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rivet_ci.core.facts.catalog_models import CatalogColumn
from rivet_ci.core.fidelity.rivet_types import (
    DECIMAL_MAX_PRECISION,
    RivetType,
    decimal,
    list_of,
    unsupported,
)


class SourceType(NamedTuple):
    """A result column's type as rivet names it (`source_type` of the report) and maps it."""

    name: str
    rivet: RivetType


# --- PostgreSQL ----------------------------------------------------------------------------------

NUMERIC_REASON = ("precision/scale unavailable from query metadata and catalog lookup; use a "
                  "column override (e.g. columns: amount: decimal(18,2)), or a single-table "
                  "SELECT ... FROM schema.table when the DDL declares numeric precision.")
PG_UNMAPPED = "no Rivet mapping for this PostgreSQL type"
_PG_BUILTIN: dict[str, RivetType] = {
    "bool": RivetType("bool"), "int2": RivetType("int2"), "int4": RivetType("int4"),
    "int8": RivetType("int8"), "oid": RivetType("int8"), "float4": RivetType("float4"),
    "float8": RivetType("float8"), "date": RivetType("date"), "time": RivetType("time"),
    "timestamp": RivetType("timestamp"), "timestamptz": RivetType("timestamp_tz"),
    "text": RivetType("string"), "varchar": RivetType("string"),
    "bpchar": RivetType("string"), "name": RivetType("string"),
    "bytea": RivetType("binary"), "json": RivetType("json"), "jsonb": RivetType("json"),
    "uuid": RivetType("uuid"), "interval": RivetType("interval"),
    "numeric": unsupported("numeric", NUMERIC_REASON)}


def pg_wire_type(name: str, *, enum: bool) -> RivetType:
    """rivet's type for a PostgreSQL type the driver receives (not an array)."""
    if name in _PG_BUILTIN:
        return _PG_BUILTIN[name]
    if enum:
        return RivetType("enum")
    return unsupported(name, PG_UNMAPPED)


def numeric_hint(column: CatalogColumn) -> tuple[int, int] | None:
    """The precision and scale rivet's catalog lookup finds for a numeric column: those
    `information_schema.columns` reports, when rivet can hold them (precision 1..76, a scale
    that is a signed byte and not above the precision)."""
    p, s = column.numeric_precision, column.numeric_scale
    if p is None or s is None or not 0 < p <= DECIMAL_MAX_PRECISION or not -128 <= s <= 127:
        return None
    return (p, s) if s <= p else None


def postgres_type(column: CatalogColumn, hint: tuple[int, int] | None) -> SourceType | None:
    """A catalogued PostgreSQL column's type as rivet reads it (None: the catalog does not
    record the wire type — captured by an older rivet-ci). `hint`: the numeric precision
    rivet's lookup finds for the result column's name, if any."""
    name = column.base_type
    if name is None:
        return None
    if column.array_of is not None:
        element = pg_wire_type(column.array_of, enum=bool(column.enum))
        return SourceType(name, list_of(element))
    if name == "numeric" and hint is not None:
        return SourceType(name, decimal(*hint))
    return SourceType(name, pg_wire_type(name, enum=bool(column.enum)))


# --- MySQL / MariaDB -----------------------------------------------------------------------------

MYSQL_UNMAPPED = "no Rivet mapping for this MySQL type"
_MY_TYPE = re.compile(r"\s*(?P<base>[a-z][a-z0-9_]*)\s*(?:\((?P<args>[^)]*)\))?(?P<rest>.*)\Z",
                      re.IGNORECASE | re.DOTALL)
_TEXTS = frozenset({"tinytext", "text", "mediumtext", "longtext"})
_BLOBS = frozenset({"tinyblob", "blob", "mediumblob", "longblob"})
_GEOMETRY = frozenset({"geometry", "point", "linestring", "polygon", "multipoint",
                       "multilinestring", "multipolygon", "geometrycollection"})
# MariaDB's own string-like types (`uuid`, `inet4`, `inet6`) reach the client as CHAR.
_CHAR_LIKE = frozenset({"char", "uuid", "inet4", "inet6"})


def mysql_type(column_type: str) -> SourceType | None:
    """A MySQL/MariaDB column's type as rivet reads it, from its `COLUMN_TYPE`
    (`bigint(20) unsigned`, `decimal(65,30)`, `enum('a','b')`, `longtext`); None when the
    type is one rivet-ci does not know how the server describes (never a guess)."""
    match = _MY_TYPE.match(column_type)
    if match is None:
        return None
    base = match["base"].lower()
    args = [a.strip() for a in (match["args"] or "").split(",")] if match["args"] else []
    unsigned = "unsigned" in match["rest"].lower()
    suffix = " unsigned" if unsigned else ""
    width = int(args[0]) if len(args) == 1 and args[0].isdigit() else None
    if base in ("tinyint", "bool", "boolean"):
        if width == 1 or base != "tinyint":
            return SourceType("tinyint(1)", RivetType("bool"))
        return SourceType("tinyint" + suffix, RivetType("int2"))
    if base == "smallint":
        return SourceType("smallint" + suffix, RivetType("int4" if unsigned else "int2"))
    if base in ("mediumint", "int", "integer"):
        return SourceType("int" + suffix, RivetType("int8" if unsigned else "int4"))
    if base == "bigint":
        return SourceType("bigint" + suffix, RivetType("uint8" if unsigned else "int8"))
    if base == "float":
        return SourceType("float", RivetType("float4"))
    if base in ("double", "real"):
        return SourceType("double", RivetType("float8"))
    if base in ("decimal", "numeric", "dec", "fixed"):
        precision = int(args[0]) if args and args[0].isdigit() else 10
        scale = int(args[1]) if len(args) > 1 and args[1].isdigit() else 0
        if not 1 <= precision <= 65:
            return SourceType("decimal", unsupported("decimal", _MY_DECIMAL))
        return SourceType("decimal", decimal(precision, scale))
    if base == "bit":
        return (SourceType("bit(1)", RivetType("bool")) if width in (None, 1)
                else SourceType("bit", RivetType("int8")))
    if base == "year":
        return SourceType("year", RivetType("int2"))
    if base in ("enum", "set"):
        return SourceType(base, RivetType("enum"))
    if base == "json":
        return SourceType("json", RivetType("json"))
    if base in _CHAR_LIKE:
        return SourceType("char", RivetType("string"))
    if base == "varchar":
        return SourceType("varchar", RivetType("string"))
    if base in ("binary", "varbinary"):
        return SourceType(base, RivetType("binary"))
    if base in _TEXTS:
        return SourceType("blob", RivetType("text"))
    if base in _BLOBS:
        return SourceType("blob", RivetType("binary"))
    if base == "date":
        return SourceType("date", RivetType("date"))
    if base == "time":
        return SourceType("time", RivetType("time"))
    if base == "datetime":
        return SourceType("datetime", RivetType("timestamp"))
    if base == "timestamp":
        return SourceType("timestamp", RivetType("timestamp_tz"))
    if base in _GEOMETRY:
        return SourceType("unknown", unsupported("unknown", MYSQL_UNMAPPED))
    return None


_MY_DECIMAL = ("could not derive precision/scale from the MySQL column metadata; add a column "
               "override (columns: amount: decimal(18,2))")
