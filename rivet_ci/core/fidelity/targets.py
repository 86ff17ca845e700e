"""What a `--target` warehouse makes of a rivet type (`rivet check --target T`, rivet 0.32.2):
its native type, the type a bare Parquet autoload gives when that differs, a status (ok, warn,
fail) and rivet's note. A `fail` column makes `rivet check --strict` exit 1 (with no entry in
`violations`). Learned from the binary over every type both servers have
(tests/test_type_fidelity_parity.py).

After the type, two rules apply to every target: a column whose fidelity `--strict` refuses is
never better than `warn`, and (every target but DuckDB) a column name `rivet load` cannot splice
into warehouse SQL unquoted fails — except on BigQuery, where a name that is plain once its
Cyrillic look-alike letters are Latin is a `warn` (it loads renamed).
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from rivet_ci.core.fidelity.rivet_types import UNSAFE_FIDELITIES, RivetType

Target = Literal["bigquery", "duckdb", "snowflake", "clickhouse"]
TargetStatus = Literal["ok", "warn", "fail"]
# Every spelling `--target` takes, and the target it names (case does not matter).
TARGET_NAMES: dict[str, Target] = {
    "bigquery": "bigquery", "bq": "bigquery", "duckdb": "duckdb", "duck": "duckdb",
    "snowflake": "snowflake", "sf": "snowflake", "clickhouse": "clickhouse", "ch": "clickhouse"}


class TargetColumn(NamedTuple):
    """A column's resolution on one target. `type`/`autoload`: None when it does not map (the
    report writes `-`); `autoload` is given only where a bare autoload differs."""

    type: str | None
    status: TargetStatus
    note: str | None = None
    autoload: str | None = None


def _ok(t: str) -> TargetColumn:
    return TargetColumn(t, "ok")


def _warn(t: str, note: str, autoload: str | None = None) -> TargetColumn:
    return TargetColumn(t, "warn", note, autoload)


def _fail(note: str) -> TargetColumn:
    return TargetColumn(None, "fail", note)


def resolve_target(target: Target, rivet: RivetType, column: str) -> TargetColumn:
    """A column of type `rivet` named `column` on `target`."""
    resolved = _RESOLVERS[target](rivet)
    if rivet.fidelity in UNSAFE_FIDELITIES and resolved.status == "ok":
        resolved = resolved._replace(status="warn")
    return _grade_name(target, resolved, column)


# --- the column name -----------------------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Cyrillic letters drawn exactly like a Latin one.
_LOOKALIKES = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405",
    "aeopcyxijsdhABEKMHOPCTXIJS")


def plain_identifier(name: str) -> bool:
    """A name `rivet load` splices into warehouse SQL unquoted: `[A-Za-z_][A-Za-z0-9_]*`."""
    return _PLAIN.match(name) is not None


def _grade_name(target: Target, resolved: TargetColumn, column: str) -> TargetColumn:
    if target == "duckdb" or plain_identifier(column):
        return resolved
    latin = column.translate(_LOOKALIKES)
    if target == "bigquery" and plain_identifier(latin):
        status: TargetStatus = "warn"
        note = f"Cyrillic look-alike letters: loads as `{latin}`"
    else:
        status, note = "fail", ("not a plain identifier: `rivet load` refuses it — rename it in "
                                "the source")
    return resolved._replace(
        status=resolved.status if resolved.status == "fail" else status,
        note=f"{note}; {resolved.note}" if resolved.note else note)


# --- the four warehouses -------------------------------------------------------------------------

def _unsupported(rivet: RivetType) -> TargetColumn:
    return _fail(rivet.reason or "no target mapping")


_BQ_PLAIN = {"bool": "BOOL", "int2": "INT64", "int4": "INT64", "int8": "INT64",
             "float4": "FLOAT64", "float8": "FLOAT64", "date": "DATE", "time": "TIME",
             "string": "STRING", "text": "STRING", "enum": "STRING", "binary": "BYTES",
             "interval": "STRING"}


def _bigquery(t: RivetType) -> TargetColumn:
    if t.kind in _BQ_PLAIN:
        return _ok(_BQ_PLAIN[t.kind])
    if t.kind == "uint8":
        return _warn("NUMERIC", "UINT64 > INT64_MAX overflows the INT64 autoload and cannot be "
                     "recovered after load — map the column to decimal(20,0) with a source "
                     "column override", "INT64")
    if t.kind == "decimal":
        p, s = t.precision or 0, t.scale or 0
        if s < 0:
            return _fail(f"BigQuery has no negative scale; decimal({p},{s}) needs a "
                         "STRING/INT64 cast")
        if p <= 29 and s <= 9:
            return _ok("NUMERIC")
        if p <= 76 and s <= 38 and p - s <= 38:
            return _ok("BIGNUMERIC")
        return _fail(f"decimal({p},{s}) exceeds BigQuery BIGNUMERIC limits (max 76,38, and at "
                     f"most 38 integer digits; this has {p - s})")
    if t.kind == "timestamp_tz":
        return _ok("TIMESTAMP")
    if t.kind == "timestamp" and t.nanos:
        return _warn("INT64", "nanosecond timestamp has no BigQuery native type — autoloads as "
                     "INT64 (raw nanos, lossless); a native TIMESTAMP via "
                     "TIMESTAMP_MICROS(DIV(col,1000)) drops sub-µs precision. Prefer `timestamp` "
                     "(microsecond) for BigQuery targets.")
    if t.kind == "timestamp":
        return _warn("DATETIME", "naive timestamp autoloads as TIMESTAMP (an instant); recover "
                     "wall-clock with DATETIME(col) after load", "TIMESTAMP")
    if t.kind == "json":
        return _warn("JSON", "Parquet JSON logical type autoloads as BYTES in BigQuery; recover "
                     "native JSON with PARSE_JSON(SAFE_CONVERT_BYTES_TO_STRING(col)) after load",
                     "BYTES")
    if t.kind == "uuid":
        return _warn("BYTES", "BigQuery has no UUID type: the column lands as its 16 bytes; "
                     "render the text in a view with TO_HEX(col)")
    if t.kind == "list":
        assert t.inner is not None
        inner = _bigquery(t.inner).type
        if inner is None:
            return _fail("ARRAY of unsupported element: -")
        return _warn(f"ARRAY<STRUCT<item {inner}>>", "arrays load as ARRAY<STRUCT<item T>> "
                     "(nested, element named `item`); flatten to a scalar array with "
                     "ARRAY(SELECT el.item FROM UNNEST(col) AS el)")
    return _unsupported(t)


_DUCK_PLAIN = {"bool": "BOOLEAN", "int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT",
               "uint8": "UBIGINT", "float4": "FLOAT", "float8": "DOUBLE", "date": "DATE",
               "time": "TIME", "timestamp_tz": "TIMESTAMPTZ", "string": "VARCHAR",
               "text": "VARCHAR", "enum": "VARCHAR", "binary": "BLOB", "json": "JSON",
               "uuid": "UUID", "interval": "INTERVAL"}


def _duckdb(t: RivetType) -> TargetColumn:
    if t.kind in _DUCK_PLAIN:
        return _ok(_DUCK_PLAIN[t.kind])
    if t.kind == "decimal":
        p, s = t.precision or 0, t.scale or 0
        if s < 0:
            return _warn("DECIMAL", f"DuckDB has no negative scale; decimal({p},{s}) loads via "
                         "cast")
        if p <= 38:
            return _ok(f"DECIMAL({p},{s})")
        return _warn("DECIMAL(38,*)", f"decimal({p},{s}) exceeds DuckDB DECIMAL(38); autoloads "
                     "as DOUBLE (lossy past 2^53) — narrow the source precision if exact "
                     "decimals matter", "DOUBLE")
    if t.kind == "timestamp":
        return _ok("TIMESTAMP_NS" if t.nanos else "TIMESTAMP")
    if t.kind == "list":
        assert t.inner is not None
        inner = _duckdb(t.inner).type
        if inner is None:
            return _fail("LIST of unsupported element: -")
        return _ok(f"{inner}[]")
    return _unsupported(t)


_SF_PLAIN = {"bool": "BOOLEAN", "int2": "NUMBER(38,0)", "int4": "NUMBER(38,0)",
             "int8": "NUMBER(38,0)", "float4": "FLOAT", "float8": "FLOAT", "date": "DATE",
             "string": "TEXT", "text": "TEXT", "enum": "TEXT", "interval": "TEXT"}


def _snowflake(t: RivetType) -> TargetColumn:
    if t.kind in _SF_PLAIN:
        return _ok(_SF_PLAIN[t.kind])
    if t.kind == "uint8":
        return _warn("NUMBER(20,0)", "UINT64 > INT64_MAX overflows the Parquet read; map to "
                     "decimal(20,0) at source", "NUMBER(38,0)")
    if t.kind == "decimal":
        p, s = t.precision or 0, t.scale or 0
        if s < 0:
            return _warn("NUMBER", f"Snowflake NUMBER has no negative scale; decimal({p},{s}) "
                         "loads via cast")
        if p > 38:
            return _fail(f"decimal({p},{s}) exceeds Snowflake NUMBER (max precision 38); "
                         "narrow the source precision, or load as FLOAT via a declared schema "
                         "(lossy)")
        return _ok(f"NUMBER({p},{s})")
    if t.kind == "time":
        return _warn("TIME", "TIME autoloads as NUMBER (µs of day); recover with "
                     "TIME_FROM_PARTS after load", "NUMBER(38,0)")
    if t.kind == "timestamp_tz":
        return _warn("TIMESTAMP_TZ", "tz timestamp autoloads as TIMESTAMP_NTZ — ALTER SESSION "
                     "SET TIMEZONE='UTC' before COPY so the instant matches", "TIMESTAMP_NTZ")
    if t.kind == "timestamp" and t.nanos:
        return _warn("TIMESTAMP_NTZ", "nanosecond timestamp autoloads as NUMBER (ns since "
                     "epoch); recover with TO_TIMESTAMP_NTZ(col, 9) after load — Snowflake "
                     "TIMESTAMP_NTZ holds full ns precision", "NUMBER(38,0)")
    if t.kind == "timestamp":
        return _warn("TIMESTAMP_NTZ", "naive timestamp autoloads as NUMBER (µs since epoch); "
                     "recover with TO_TIMESTAMP_NTZ after load", "NUMBER(38,0)")
    if t.kind == "binary":
        return _warn("BINARY", "set BINARY_AS_TEXT=FALSE in the Parquet FILE FORMAT or non-UTF8 "
                     "bytes fail to load")
    if t.kind == "json":
        return _warn("VARIANT", "JSON autoloads as TEXT; recover native VARIANT with PARSE_JSON "
                     "after load", "TEXT")
    if t.kind == "uuid":
        return _warn("TEXT", "UUID autoloads as 16-byte BINARY; recover canonical text with "
                     "HEX_ENCODE + REGEXP after load", "BINARY")
    if t.kind == "list":
        assert t.inner is not None
        if _snowflake(t.inner).type is None:
            return _fail("ARRAY of unsupported element: -")
        return _warn("ARRAY", "list autoloads as VARIANT (the JSON array); recover native ARRAY "
                     "with ::ARRAY after load", "VARIANT")
    return _unsupported(t)


_CH_PLAIN = {"bool": "Bool", "int2": "Int16", "int4": "Int32", "int8": "Int64",
             "uint8": "UInt64", "float4": "Float32", "float8": "Float64", "date": "Date32",
             "string": "String", "text": "String", "enum": "String", "binary": "String",
             "interval": "String"}
_CH_RANGE = ("DateTime64 holds 1900-01-01 to 2299-12-31; rivet load refuses a part holding a "
             "value outside it, but a load pulled through a named collection (or any other "
             "reader) gets the nearest end, silently")


def _clickhouse(t: RivetType) -> TargetColumn:
    if t.kind in _CH_PLAIN:
        return _ok(_CH_PLAIN[t.kind])
    if t.kind == "decimal":
        p, s = t.precision or 0, t.scale or 0
        if s < 0:
            width = p - s
            if width > 76:
                return _fail(f"decimal({p},{s}) needs Decimal({width}, 0) to hold its whole "
                             "numbers, past ClickHouse's precision 76")
            return _warn(f"Decimal({width}, 0)", f"ClickHouse Decimal has no negative scale; "
                         f"decimal({p},{s}) is declared Decimal({width}, 0), which holds its "
                         "whole numbers exactly")
        if p > 76:
            return _fail(f"decimal({p},{s}) exceeds ClickHouse Decimal (max precision 76); "
                         "narrow the source precision")
        return _ok(f"Decimal({p}, {s})")
    if t.kind == "time":
        return _warn("Decimal64(6)", "ClickHouse has no TIME type: rivet load declares seconds "
                     "since midnight as Decimal64, keeping the fraction; a plain Parquet "
                     "autoload reads Int64 whole seconds", "Int64")
    if t.kind in ("timestamp", "timestamp_tz"):
        digits = 9 if t.nanos else 6
        zone = ", 'UTC'" if t.kind == "timestamp_tz" else ""
        return _warn(f"DateTime64({digits}{zone})", _CH_RANGE)
    if t.kind == "json":
        return _warn("JSON", "JSON lands as String holding the valid JSON text (rivet load "
                     "declares String; a ClickHouse JSON column refuses the Parquet insert); "
                     "read it with the JSONExtract* functions", "String")
    if t.kind == "uuid":
        return _warn("UUID", "UUID autoloads as FixedString(16); recover the native UUID with "
                     "toUUID after load", "FixedString(16)")
    if t.kind == "list":
        assert t.inner is not None
        inner = _clickhouse(t.inner)
        if inner.type is None:
            return _fail("Array of unsupported element: -")
        note = ("a ClickHouse Array cannot be NULL: a NULL list loads as [], the same value as "
                "an empty list")
        if inner.note:
            note += f"; each element: {inner.note}"
        autoload = (f"Array(Nullable({inner.autoload}))" if inner.autoload is not None else None)
        return _warn(f"Array(Nullable({inner.type}))", note, autoload)
    return _unsupported(t)


_RESOLVERS = {"bigquery": _bigquery, "duckdb": _duckdb, "snowflake": _snowflake,
              "clickhouse": _clickhouse}
