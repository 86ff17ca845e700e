"""Type fidelity parity: the real `rivet check --type-report --json [--target T] [--strict]`
(rivet-cli 0.32.2) and `rivet-ci check --live --format json` on the same configs and databases,
compared column by column (no tests here).

The tables hold every column type the two servers have that rivet maps differently (and the
ones it does not map at all); the configs read them as `table:` and `query:` exports in both
formats, with `columns:` overrides. `rivet_check` runs the binary (sandboxed by
`support.real_rivet`; network only for the loopback server this run started, through the
MariaDB proxy for MariaDB); `ours_check` runs `rivet-ci check` in-process on the same file.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from support.live_parity import rivet_url
from support.real_rivet import run_rivet

URL_ENV = "TYPES_SOURCE_URL"
TARGETS: tuple[str | None, ...] = (None, "bigquery", "duckdb", "snowflake", "clickhouse")
_DEST = {"destination": {"type": "local", "path": "./out"}}

PG_SEED = """
CREATE TYPE mood AS ENUM ('happy', 'sad');
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE DOMAIN money2 AS numeric(12,2);
CREATE DOMAIN money3 AS money2;
CREATE DOMAIN numdom AS numeric;
CREATE DOMAIN intarr AS integer[];
CREATE TYPE pair AS (a int, b text);
CREATE TABLE everything (
  id bigint PRIMARY KEY,
  n_plain numeric, n_10_2 numeric(10,2), n_38_0 numeric(38,0), n_39_0 numeric(39,0),
  n_76_38 numeric(76,38), n_77 numeric(77,0), n_1000 numeric(1000,0), n_neg numeric(10,-2),
  n_scale_over numeric(5,10), dec decimal(18,4),
  m money, iv interval, u uuid, j json, jb jsonb,
  a_int int[], a_text text[], a_num numeric[], a_num_p numeric(10,2)[], a_mood mood[],
  a_posint posint[], a_uuid uuid[], a_json jsonb[], a_ts timestamptz[], a_bool bool[],
  a_bytea bytea[], d_intarr intarr,
  b bit(8), b1 bit(1), vb varbit,
  t time, ttz timetz, ts timestamp, ts3 timestamp(3), tstz timestamptz, d date,
  x xml, tv tsvector, ip inet, cd cidr, mac macaddr, pt point, rng int4range, pr pair,
  ch "char", nm name, o oid,
  e mood, dpos posint, dmon money2, dmon3 money3, dnum numdom,
  by bytea, s smallint, i integer, r real, dp double precision, bo boolean, c char(3),
  vc varchar(10), tx text, "Mixed Case" integer, "сity" integer
);
CREATE VIEW everything_view AS SELECT id, n_10_2, n_plain, e, dmon, a_int FROM everything;
CREATE TABLE other (id bigint PRIMARY KEY, amount numeric(12,2), total numeric, label text);
CREATE SCHEMA sales;
CREATE TABLE sales.orders (id int PRIMARY KEY, amount numeric(14,2), tags text[]);
"""

MY_SEED = [
    """CREATE TABLE everything (
      id bigint PRIMARY KEY,
      d65 decimal(65,30), d10 decimal(10,2), d38 decimal(38,0), d39 decimal(39,0),
      du decimal(10,2) unsigned, dd decimal, d55 decimal(5,5), d3838 decimal(38,38),
      du65 decimal(65,30) unsigned,
      b1 bit(1), b8 bit(8), b64 bit(64), y year, st set('a','b'), en enum('x','y'), j json,
      g geometry, pt point, ls linestring,
      ub bigint unsigned, ui int unsigned, us smallint unsigned, um mediumint unsigned,
      ut tinyint unsigned, t1u tinyint(1) unsigned, ti tinyint, t1b tinyint(1), bo boolean,
      sm smallint, mi mediumint, i int,
      t6 time(6), t0 time, dt datetime, dt6 datetime(6), ts timestamp NULL, dte date,
      bin binary(16), vbin varbinary(20), bl blob, tbl tinyblob, mbl mediumblob, lbl longblob,
      tx text, lt longtext, tb text CHARACTER SET binary, c char(3), vc varchar(10),
      f float, dbl double, uu uuid, i6 inet6, i4 inet4, `Mixed Case` int
    )""",
    "CREATE TABLE other (id bigint PRIMARY KEY, amount decimal(12,2), price decimal(65,30), "
    "label varchar(20))",
    "CREATE VIEW everything_view AS SELECT id, d10, d65, en FROM everything",
]


def export_of(name: str, fmt: str = "parquet", **spec: Any) -> dict[str, Any]:
    """An export to a local destination (`mode: full` unless `spec` says otherwise)."""
    return {"name": name, "format": fmt, "mode": "full", **spec, **_DEST}


_export = export_of


# PostgreSQL: every table in both formats, overrides, and the query shapes rivet tells apart
# (its numeric precision is looked up by the result column's name in the one table of a
# `SELECT ... FROM t`). The last ones are shapes rivet-ci does not derive: `unknown`.
PG_EXPORTS = [
    _export("t_everything", table="everything"),
    _export("t_everything_csv", "csv", table="public.everything"),
    _export("t_view", table="everything_view"),
    _export("t_view_csv", "csv", table="everything_view"),
    _export("t_other", table="other"),
    _export("t_orders_csv", "csv", table="sales.orders"),
    _export("t_overrides", table="everything", columns={
        "n_plain": "decimal(20,4)", "i": "text", "u": "TEXT", "m": "decimal(12,2)",
        "ts": "timestamp_ns", "tstz": "timestamp_tz_ns", "n_neg": "decimal(5,-2)",
        "N_10_2": "int4", "a_int": "text", "nosuch": "int8"}),
    _export("t_overrides_csv", "csv", table="everything", columns={
        "ts": "timestamp_ns", "tstz": "timestamp_tz_ns", "n_39_0": "decimal(38,0)",
        "a_int": "text", "n_76_38": "decimal(76,39)"}),
    _export("q_plain", query="SELECT id, n_10_2, n_plain, dmon, e FROM public.everything"),
    _export("q_aliases", query="SELECT n_10_2 AS amount, n_plain AS n_38_0, n_10_2 n2, "
            "\"Mixed Case\" AS \"Also Mixed\" FROM everything x WHERE id > 0"),
    _export("q_casts", query="SELECT n_plain::numeric(10,2), CAST(n_plain AS numeric(5,1)) AS c2,"
            " n_10_2::int AS ni, n_10_2::numeric AS n_38_0, id::text, "
            "ts::timestamp with time zone AS tz, i::double precision, a_int::bigint[] AS ia, "
            "tx::varchar(5) AS v FROM everything"),
    _export("q_count", query="SELECT count(*), count(id) AS n FROM everything"),
    _export("q_join", query="SELECT a.id, a.n_10_2, b.amount, b.label, a.e FROM everything a "
            "JOIN other b ON a.id = b.id"),
    _export("q_quoted", query="SELECT \"n_10_2\", \"Mixed Case\", \"сity\" "
            "FROM \"public\".\"everything\""),
    _export("q_only", query="SELECT n_10_2, e, a_mood FROM ONLY everything"),
    _export("q_star_join", query="SELECT * FROM other o JOIN sales.orders s ON o.id = s.id"),
    _export("q_comma", query="SELECT o.*, s.tags FROM other o, sales.orders s WHERE o.id = s.id"),
    _export("q_view", query="SELECT * FROM everything_view"),
    _export("q_csv", "csv", query="SELECT id, a_int, n_39_0, n_38_0 FROM everything"),
    _export("q_distinct_on", query="SELECT DISTINCT ON (id) id, n_10_2 FROM everything "
            "ORDER BY id"),
    _export("q_incremental", query="SELECT id, n_10_2, n_plain, tstz FROM everything",
            mode="incremental", cursor_column="tstz"),
    _export("t_chunked_csv", "csv", table="everything", mode="chunked", chunk_column="id"),
    _export("q_override", query="SELECT n_plain AS amount, total FROM other o "
            "JOIN everything e ON o.id = e.id", columns={"amount": "decimal(10,2)"}),
    # rivet-ci does not derive these (unknown, never safe):
    _export("q_sum", query="SELECT id, sum(i) AS total FROM everything GROUP BY id"),
    _export("q_subquery", query="SELECT n_10_2 FROM (SELECT * FROM everything) s"),
    _export("q_with", query="WITH w AS (SELECT id, n_10_2 FROM everything) SELECT * FROM w"),
]
PG_UNKNOWN = {("q_sum", "total"), ("q_subquery", "n_10_2"), ("q_with", None)}

MY_EXPORTS = [
    _export("t_everything", table="everything"),
    _export("t_everything_csv", "csv", table="everything"),
    _export("t_other_csv", "csv", table="other"),
    _export("t_view", table="everything_view"),
    _export("t_overrides", "csv", table="everything", columns={
        "d65": "decimal(38,10)", "g": "text", "dt": "timestamp_ns", "ub": "int8"}),
    _export("q_plain", query="SELECT id, d65, d10 AS amount, b8, ub, `Mixed Case` "
            "FROM everything"),
    _export("q_casts", query="SELECT CAST(d65 AS DECIMAL(10,2)) AS c, CAST(id AS CHAR) AS s, "
            "CAST(id AS SIGNED) si, CAST(ub AS UNSIGNED) uu, CAST(dt AS DATE) dd, "
            "CAST(d10 AS DOUBLE) AS dbl, CAST(i AS DECIMAL(65,30)) AS wide, "
            "CAST(d55 AS DECIMAL) cd, CAST(d55 AS DECIMAL(7)) c7, CAST(id AS TIME) ct, "
            "CAST(id AS DATETIME) cdt, CAST(id AS BINARY) cb, CAST(id AS INTEGER) ci, "
            "CAST(id AS UNSIGNED INTEGER) cui, CAST(id AS CHAR(3)) cc, CAST(f AS FLOAT) cf "
            "FROM everything"),
    _export("q_count", query="SELECT count(*), COUNT( * ), count(id) n FROM everything"),
    _export("q_incremental", query="SELECT id, d65, dt FROM everything", mode="incremental",
            cursor_column="dt"),
    _export("q_join", query="SELECT a.id, a.d10, b.amount, b.price FROM everything a "
            "JOIN other b ON a.id = b.id"),
    _export("q_case", query="SELECT ID, everything.D10, `dD` FROM everything"),
    _export("q_csv", "csv", query="SELECT id, d65, d39, d10, g FROM everything"),
    _export("q_view", query="SELECT * FROM everything_view"),
    _export("q_star_join", query="SELECT * FROM other o JOIN everything_view v ON o.id = v.id"),
    # rivet-ci does not derive these (unknown, never safe):
    _export("q_expressions", query="SELECT id, d10 + 1 AS plus, COALESCE(d10, 0) c1 "
            "FROM everything"),
    _export("q_using", query="SELECT * FROM everything JOIN other USING (id)"),
]
MY_UNKNOWN = {("q_expressions", "plus"), ("q_expressions", "c1"), ("q_using", None),
              ("q_star_join", None)}


def write_config(directory: Path, source_type: str, exports: list[dict[str, Any]]) -> Path:
    path = directory / "rivet.yaml"
    path.write_text(yaml.safe_dump({"source": {"type": source_type, "url_env": URL_ENV},
                                    "exports": exports}, sort_keys=False, allow_unicode=True))
    return path


@dataclass(frozen=True)
class Check:
    """One tool's check of one config: per export the report rivet's `--json` shape has
    (`columns`, `violations`, `target_failures`), the exit status and rivet's code."""

    exports: dict[str, dict[str, Any]]
    returncode: int
    code: str | None = None
    log: str = ""
    failed: frozenset[str] = frozenset()  # rivet: exports whose type report failed (a warning)


def rivet_check(config: Path, url: str, target: str | None, *, strict: bool = False,
                export: str | None = None) -> Check:
    args = ["--json-errors", "--no-notify", "check", "-c", str(config), "--json"]
    args += ["--target", target] if target else []
    args += ["--strict"] if strict else []
    args += ["-e", export] if export else []
    done = run_rivet(args, workdir=config.parent, env={URL_ENV: rivet_url(url)}, network=True)
    exports: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            value = json.loads(line)
            if "export" in value:  # an export whose report failed prints its diagnostic only
                exports[value["export"]] = value
    failed = frozenset(re.findall(r"type report for '([^']+)' failed", done.stderr))
    return Check(exports, done.returncode, done.code, done.stderr, failed)


def _run(config: Path, url: str, args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(stdout=out, stderr=err, environ={URL_ENV: url}, cwd=config.parent,
                  now=lambda: datetime.now(UTC))
    code = run(args, ctx)
    return code, out.getvalue(), err.getvalue()


def ours_check(config: Path, url: str, target: str | None, *, strict: bool = False) -> Check:
    args = ["check", config.name, "--live", "--format", "json"]
    args += ["--target", target] if target else []
    args += ["--strict"] if strict else []
    code, out, err = _run(config, url, args)
    document = json.loads(out)
    exports = {e["export"]: e for e in document["types"]["exports"]}
    return Check(exports, code, document["types"]["code"], err)


def ours_document(config: Path, url: str, *args: str) -> dict[str, Any]:
    """`rivet-ci check CONFIG --format json ARGS` as a document (exit 0 or 1)."""
    code, out, err = _run(config, url, ["check", config.name, "--format", "json", *args])
    assert code in (0, 1), err
    value = json.loads(out)
    assert isinstance(value, dict)
    return value


def capture_facts(config: Path, url: str) -> int:
    """`rivet-ci facts CONFIG --output facts.json` beside the config; its exit status."""
    code, _, err = _run(config, url, ["facts", config.name, "--output", "facts.json"])
    assert code == 0, err
    return code


# The column fields compared, as rivet's JSON names them, and ours.
_FIELDS = {"source_type": "source_type", "rivet_type": "rivet_type",
           "arrow_type": "arrow_type", "fidelity": "fidelity", "target_type": "target_type",
           "target_status": "target_status", "target_note": "target_note",
           "autoload_type": "autoload_type", "warnings": "warnings"}


def _rivet_value(column: dict[str, Any], key: str) -> Any:
    value = column.get(key, [] if key == "warnings" else None)
    return None if value == "-" and key in ("arrow_type", "target_type") else value


@dataclass
class Comparison:
    differences: list[str] = field(default_factory=list)
    columns: int = 0  # columns compared (known on our side)
    exports: int = 0  # exports compared
    unknown: set[tuple[str, str | None]] = field(default_factory=set)  # (export, column|None)


def compare(rivet: Check, ours: Check) -> Comparison:
    """Every difference between rivet's report and ours; our unknowns are not compared, only
    listed (the caller pins them)."""
    result = Comparison()
    for name, theirs in rivet.exports.items():
        mine = ours.exports.get(name)
        if mine is None:
            result.differences.append(f"{name}: not in rivet-ci's report")
            continue
        if mine["unknown"] is not None:
            result.unknown.add((name, None))
            continue
        result.exports += 1
        names = [c["column"] for c in theirs["columns"]]
        if [c["column"] for c in mine["columns"]] != names:
            result.differences.append(f"{name}: columns rivet={names} ours="
                                      f"{[c['column'] for c in mine['columns']]}")
            continue
        known: set[str] = set()
        for a, b in zip(theirs["columns"], mine["columns"], strict=True):
            if b["unknown"] is not None:
                result.unknown.add((name, b["column"]))
                continue
            known.add(a["column"])
            result.columns += 1
            for theirs_key, ours_key in _FIELDS.items():
                if _rivet_value(a, theirs_key) != b[ours_key]:
                    result.differences.append(
                        f"{name}.{a['column']}.{theirs_key}: rivet={a.get(theirs_key)!r} "
                        f"ours={b[ours_key]!r}")
        theirs_v = [(v["column_name"], v["fidelity"], v["message"], v["fatal"])
                    for v in theirs["violations"] if v["column_name"] in known]
        mine_v = [(v["column_name"], v["fidelity"], v["message"], v["fatal"])
                  for v in mine["violations"] if v["column_name"] in known]
        if theirs_v != mine_v:
            result.differences.append(f"{name}.violations: rivet={theirs_v} ours={mine_v}")
        if bool(theirs.get("target_failures")) != mine["target_failures"] and not any(
                u[0] == name for u in result.unknown):
            result.differences.append(f"{name}.target_failures: rivet="
                                      f"{theirs.get('target_failures')} ours="
                                      f"{mine['target_failures']}")
    for name in set(ours.exports) - set(rivet.exports):
        if name in rivet.failed and ours.exports[name]["unknown"] is not None:
            result.unknown.add((name, None))  # rivet's own report of it fails: unknown
            continue
        result.differences.append(f"{name}: not in rivet's report ({rivet.log[-500:]})")
    return result
