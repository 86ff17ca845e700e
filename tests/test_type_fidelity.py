"""Type fidelity without a server: the pure core (`rivet_ci.core.fidelity`) and `rivet-ci check
--facts FILE` over a hand-written catalog. The rules themselves are pinned against the real
binary in tests/test_type_fidelity_parity.py; here, what the core decides on its own — what a
query's SELECT says, what stays unknown (never safe), the exit codes and the JSON shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.pr import run_cli

from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.facts.catalog_models import CatalogColumn, CatalogRelation, CatalogSource
from rivet_ci.core.fidelity.models import UNSAFE_MAPPING_CODE
from rivet_ci.core.fidelity.report import type_report
from rivet_ci.core.fidelity.rivet_types import RivetType, csv_refuses, decimal, list_of
from rivet_ci.core.fidelity.select_list import Cast, ColumnRef, Count, Other, Star, parse_select
from rivet_ci.core.fidelity.select_list import single_table as rivets_single_table
from rivet_ci.core.fidelity.sources import mysql_type, postgres_type
from rivet_ci.core.fidelity.targets import plain_identifier, resolve_target

# -- a query's SELECT, read without a database -------------------------------------------------


def test_the_select_list_of_a_plain_query_is_read_item_by_item() -> None:
    select = parse_select("SELECT id, t.amount AS a, n::numeric(10,2), CAST(x AS int) c, "
                          "count(*), sum(x), o.* FROM public.orders t JOIN other o ON t.id = o.id "
                          "WHERE t.id > 0 ORDER BY 1", "postgres")
    assert select is not None
    kinds = [type(i.expression).__name__ if not isinstance(i, Star) else "Star"
             for i in select.items]
    assert kinds == ["ColumnRef", "ColumnRef", "Cast", "Cast", "Count", "Other", "Star"]
    assert [t.name.text for t in select.tables] == ["orders", "other"]
    assert [t.alias.text if t.alias else None for t in select.tables] == ["t", "o"]
    item = select.items[1]
    assert not isinstance(item, Star)
    assert item.alias is not None and item.alias.text == "a"
    assert isinstance(item.expression, ColumnRef) and item.expression.column.text == "amount"


@pytest.mark.parametrize("sql", [
    "WITH w AS (SELECT 1) SELECT * FROM w",
    "SELECT a FROM t UNION SELECT a FROM u",
    "SELECT 1",
    "DELETE FROM t",
    "SELECT a FROM t; SELECT b FROM u",
    "SELECT $1 FROM t",
    "SELECT 'unterminated FROM t",
])
def test_a_query_that_is_not_a_plain_select_is_not_read(sql: str) -> None:
    assert parse_select(sql, "postgres") is None


def test_a_cast_type_spelled_in_words_is_not_taken_for_an_alias() -> None:
    select = parse_select("SELECT x::timestamp with time zone, y::double precision d FROM t",
                          "postgres")
    assert select is not None
    first, second = select.items
    assert not isinstance(first, Star) and not isinstance(second, Star)
    assert first.alias is None
    assert isinstance(first.expression, Cast)
    assert first.expression.type_words == ("timestamp", "with", "time", "zone")
    assert second.alias is not None and second.alias.text == "d"


def test_mysql_reads_backquoted_names_and_double_quoted_strings() -> None:
    select = parse_select('SELECT `Mixed Case`, "x" AS s, COUNT( * ) FROM `db`.`t`', "mysql")
    assert select is not None
    kinds = [type(i.expression) for i in select.items if not isinstance(i, Star)]
    assert kinds == [ColumnRef, Other, Count]
    assert select.tables[0].schema is not None and select.tables[0].schema.text == "db"


@pytest.mark.parametrize(("sql", "table"), [
    # rivet's own cases (its FROM parser for the numeric lookup), and the edges around them
    ("SELECT id, amount\nFROM transactions t\nWHERE x = 1", (None, "transactions")),
    ("SELECT id FROM public.orders WHERE 1=1", ("public", "orders")),
    ("SELECT * FROM ONLY inventory.items", ("inventory", "items")),
    ("SELECT * FROM a INNER JOIN b USING (id)", None),
    ("SELECT * FROM (SELECT * FROM foo) s", None),
    ("SELECT * FROM a, b", None),
    ("SELECT * FROM a AS x LEFT JOIN b ON true", None),
    ('SELECT "n" FROM "Sales"."Orders"', ("Sales", "Orders")),
    ("SELECT (SELECT 1 FROM z), a FROM t", (None, "t")),
    ("SELECT 'from x' FROM t", (None, "t")),
])
def test_the_numeric_lookup_reads_the_one_table_as_rivet_does(
        sql: str, table: tuple[str | None, str] | None) -> None:
    found = rivets_single_table(sql)
    got = None if found is None else (found[0].text if found[0] else None, found[1].text)
    assert got == table


# -- rivet's types ------------------------------------------------------------------------------


def test_postgres_numeric_precision_comes_from_the_lookup_by_name_only() -> None:
    column = CatalogColumn(type="numeric(10,2)", base_type="numeric", numeric_precision=10,
                           numeric_scale=2)
    with_hint = postgres_type(column, (10, 2))
    without = postgres_type(column, None)
    assert with_hint is not None and with_hint.rivet == decimal(10, 2)
    assert without is not None and without.rivet.kind == "unsupported"
    assert without.rivet.fidelity == "unsupported"


def test_postgres_arrays_enums_and_older_catalogs() -> None:
    mood_array = CatalogColumn(type="mood[]", base_type="_mood", enum=True, array_of="mood")
    found = postgres_type(mood_array, None)
    assert found is not None and found.rivet == list_of(RivetType("enum"))
    assert found.rivet.label == "list<enum>" and found.rivet.fidelity == "compatible"
    numeric_array = CatalogColumn(type="numeric(10,2)[]", base_type="_numeric",
                                  array_of="numeric")
    found = postgres_type(numeric_array, (10, 2))  # an array never takes the lookup
    assert found is not None and found.rivet.fidelity == "unsupported"
    assert found.rivet.arrow is None
    # captured before the catalog recorded the wire type: not known, never a guess
    assert postgres_type(CatalogColumn(type="numeric(10,2)"), (10, 2)) is None


@pytest.mark.parametrize(("column_type", "source", "rivet"), [
    ("decimal(65,30)", "decimal", "decimal(65,30)"),
    ("decimal(5,5) unsigned", "decimal", "decimal(5,5)"),
    ("tinyint(1)", "tinyint(1)", "bool"),
    ("tinyint(1) unsigned", "tinyint(1)", "bool"),
    ("tinyint(4) unsigned", "tinyint unsigned", "int2"),
    ("smallint(5) unsigned", "smallint unsigned", "int4"),
    ("mediumint(8) unsigned", "int unsigned", "int8"),
    ("bigint(20) unsigned", "bigint unsigned", "uint8"),
    ("bit(1)", "bit(1)", "bool"),
    ("bit(8)", "bit", "int8"),
    ("year(4)", "year", "int2"),
    ("set('a','b')", "set", "enum"),
    ("longtext", "blob", "text"),
    ("mediumblob", "blob", "binary"),
    ("binary(16)", "binary", "binary"),
    ("inet6", "char", "text"),
    ("geometry", "unknown", "unsupported(unknown)"),
    ("timestamp(6)", "timestamp", "timestamp_tz"),
])
def test_mysql_column_types_as_rivet_reads_their_metadata(column_type: str, source: str,
                                                          rivet: str) -> None:
    found = mysql_type(column_type)
    assert found is not None
    assert (found.name, found.rivet.label) == (source, rivet)


def test_a_mysql_type_rivet_ci_does_not_know_is_unknown() -> None:
    assert mysql_type("vector(3)") is None


def test_csv_refuses_wide_decimals_lists_and_nanosecond_timestamps_only() -> None:
    assert csv_refuses(decimal(39, 0)) and not csv_refuses(decimal(38, 38))
    assert csv_refuses(list_of(RivetType("int4")))
    assert csv_refuses(RivetType("timestamp_tz", nanos=True))
    assert not csv_refuses(RivetType("uuid")) and not csv_refuses(RivetType("uint8"))


def test_a_target_grades_the_column_name() -> None:
    int4 = RivetType("int4")
    lookalike = "\u0441ity"  # Cyrillic 'с'
    assert plain_identifier("city") and not plain_identifier(lookalike)
    assert resolve_target("bigquery", int4, lookalike).status == "warn"
    assert resolve_target("bigquery", int4, lookalike).note == (
        "Cyrillic look-alike letters: loads as `city`")
    assert resolve_target("snowflake", int4, lookalike).status == "fail"
    assert resolve_target("duckdb", int4, "Weird Name").status == "ok"
    assert resolve_target("clickhouse", int4, "Weird Name").status == "fail"


def test_a_lossy_or_unsupported_column_is_never_ok_on_a_target() -> None:
    narrowed = decimal(9, 2)._replace(lossy=True)
    assert resolve_target("bigquery", narrowed, "amount").status == "warn"
    assert resolve_target("bigquery", decimal(9, 2), "amount").status == "ok"


# -- the report from a catalog --------------------------------------------------------------------


def _catalog() -> list[CatalogSource]:
    orders = CatalogRelation(kind="table", columns={
        "id": CatalogColumn(type="bigint", base_type="int8"),
        "amount": CatalogColumn(type="numeric", base_type="numeric"),
        "total": CatalogColumn(type="numeric(12,2)", base_type="numeric",
                               numeric_precision=12, numeric_scale=2),
        "tags": CatalogColumn(type="text[]", base_type="_text", array_of="text"),
        "legacy": CatalogColumn(type="numeric(12,2)")})  # an older capture: no wire type
    return [CatalogSource(engine="postgres", spellings=["postgres url_env=SRC"],
                          default_schema="public", schemas=["public"],
                          relations={"public.orders": orders})]


def _config(exports: list[dict[str, Any]], source: str = "postgres") -> dict[str, Any]:
    base = {"destination": {"type": "local", "path": "./out"}, "mode": "full", "format": "parquet"}
    return {"source": {"type": source, "url_env": "SRC"},
            "exports": [{**base, **e} for e in exports]}


def _report(exports: list[dict[str, Any]], source: str = "postgres",
            target: str | None = None) -> dict[str, Any]:
    loaded = load_config_text("rivet.yaml", json.dumps(_config(exports, source)), {})
    assert not loaded.problems, loaded.problems
    report = type_report(((loaded.path, loaded.source, e) for e in loaded.exports), _catalog(),
                         target=target)  # type: ignore[arg-type]
    return {e.export: {c.column: c for c in e.columns} if e.unknown is None else e.unknown
            for e in report.exports}


def test_an_unconstrained_numeric_is_refused_and_a_declared_one_is_not() -> None:
    found = _report([{"name": "o", "table": "orders"}])["o"]
    assert found["amount"].refused_by == ("fidelity",)
    assert found["amount"].code == UNSAFE_MAPPING_CODE
    assert found["amount"].status == "unsafe"
    assert found["total"].rivet_type == "decimal(12,2)" and found["total"].status == "safe"
    assert found["legacy"].status == "unknown" and found["legacy"].refused_by == ()


def test_an_alias_loses_the_precision_as_rivet_does() -> None:
    found = _report([{"name": "q", "query": "SELECT total AS t, total FROM orders"}])["q"]
    assert found["t"].rivet_type == "unsupported(numeric)" and found["t"].status == "unsafe"
    assert found["total"].rivet_type == "decimal(12,2)"


def test_an_override_types_the_column_and_a_join_loses_the_precision() -> None:
    found = _report([{"name": "q", "query": "SELECT o.amount, p.total FROM orders o JOIN "
                      "orders p ON o.id = p.id", "columns": {"amount": "decimal(10,2)"}}])["q"]
    assert found["amount"].rivet_type == "decimal(10,2)" and found["amount"].status == "safe"
    assert found["amount"].override == "decimal(10,2)"
    assert found["total"].status == "unsafe"


def test_csv_refuses_an_array_and_a_target_failure_has_no_violation() -> None:
    found = _report([{"name": "c", "table": "orders", "format": "csv"}])["c"]
    assert found["tags"].refused_by == ("format",) and found["tags"].violation is None
    assert found["tags"].format_violation is not None and "cannot be serialized to CSV" in (
        found["tags"].format_violation)
    parquet = _report([{"name": "p", "table": "orders"}], target="snowflake")["p"]
    assert parquet["tags"].refused_by == () and parquet["tags"].target_status == "warn"


@pytest.mark.parametrize(("export", "why"), [
    ({"name": "x", "table": "clickstream"}, "table clickstream is not in the catalog"),
    ({"name": "x", "query": "WITH a AS (SELECT 1) SELECT * FROM a"},
     "rivet-ci does not read the result columns of this query"),
    ({"name": "x", "query": "SELECT * FROM (SELECT id FROM orders) s"},
     "`*` over a derived table"),
])
def test_what_rivet_ci_cannot_derive_is_unknown_never_safe(export: dict[str, Any],
                                                           why: str) -> None:
    found = _report([export])["x"]
    assert isinstance(found, str) and found.startswith(why)


def test_an_expression_is_unknown_and_its_neighbours_are_known() -> None:
    found = _report([{"name": "q", "query": "SELECT id, amount * 2 AS twice, nosuch FROM "
                      "orders"}])["q"]
    assert found["id"].status == "safe"
    assert found["twice"].status == "unknown"
    assert found["nosuch"].unknown == "column nosuch is not in the catalog"


def test_a_mysql_table_is_found_whatever_its_case() -> None:
    """The catalog's rule for MySQL names (MariaDB on Linux would refuse `ORDERS`)."""
    catalog = [CatalogSource(engine="mysql", spellings=["mysql url_env=SRC"],
                             default_schema="shop", relations={"shop.orders": CatalogRelation(
                                 kind="table", columns={"amount": CatalogColumn(
                                     type="decimal(12,2)")})})]
    loaded = load_config_text("rivet.yaml", json.dumps(_config(
        [{"name": "m", "query": "SELECT AMOUNT FROM ORDERS"}], "mysql")), {})
    report = type_report(((loaded.path, loaded.source, e) for e in loaded.exports), catalog)
    [export] = report.exports
    assert [(c.column, c.rivet_type) for c in export.columns] == [("AMOUNT", "decimal(12,2)")]


def test_a_query_files_text_is_read_only_when_the_caller_gives_it() -> None:
    loaded = load_config_text("rivet.yaml", json.dumps(_config(
        [{"name": "f", "query_file": "orders.sql"}])), {})
    exports = [(loaded.path, loaded.source, e) for e in loaded.exports]
    [unread] = type_report(exports, _catalog()).exports
    assert unread.unknown == "its query_file is not read by rivet-ci check"
    [read] = type_report(exports, _catalog(), query_texts={
        ("rivet.yaml", "f"): "SELECT id, total FROM orders"}).exports
    assert [(c.column, c.rivet_type) for c in read.columns] == [("id", "int8"),
                                                               ("total", "decimal(12,2)")]


def test_a_source_rivet_ci_does_not_model_is_unknown() -> None:
    assert _report([{"name": "m", "table": "dbo.orders"}], source="mssql")["m"] == (
        "rivet-ci models rivet's types of PostgreSQL and MySQL sources only (source type "
        "mssql)")


# -- rivet-ci check --facts FILE ---------------------------------------------------------------


def _workspace(tmp_path: Path, exports: list[dict[str, Any]]) -> Path:
    (tmp_path / "rivet.yaml").write_text(yaml.safe_dump(_config(exports), sort_keys=False))
    facts = {"format": "rivet-ci-facts/1",
             "catalog": [c.model_dump(mode="json", exclude_none=True) for c in _catalog()]}
    (tmp_path / "facts.json").write_text(json.dumps(facts))
    return tmp_path


def test_check_strict_exits_1_on_an_unconstrained_numeric_naming_export_column_and_code(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path, [{"name": "orders", "query": "SELECT id, amount FROM orders"}])
    result = run_cli(["check", "rivet.yaml", "--facts", "facts.json", "--strict"], cwd=ws)
    assert result.code == 1, result.stdout + result.stderr
    assert ("unsafe: rivet.yaml:5: orders: column 'amount' (source type 'numeric'): "
            "fidelity=unsupported") in result.stdout
    assert f"[{UNSAFE_MAPPING_CODE}]" in result.stdout
    relaxed = run_cli(["check", "rivet.yaml", "--facts", "facts.json"], cwd=ws)
    assert relaxed.code == 0  # without --strict, rivet check warns and exits 0 too


def test_check_passes_a_safe_export_under_strict(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, [{"name": "orders", "query": "SELECT id, total FROM orders"}])
    result = run_cli(["check", "rivet.yaml", "--facts", "facts.json", "--strict", "--target",
                      "BQ", "--format", "json"], cwd=ws)
    assert result.code == 0, result.stdout
    types = json.loads(result.stdout)["types"]
    assert types["target"] == "bigquery" and types["strict"] and types["code"] is None
    [export] = types["exports"]
    assert (export["export"], export["line"], export["relation"]) == ("orders", 5,
                                                                      "public.orders")
    assert [c["status"] for c in export["columns"]] == ["safe", "safe"]
    assert export["columns"][1]["target_type"] == "NUMERIC"


def test_check_json_names_the_refused_column_like_rivet(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, [{"name": "orders", "table": "orders", "format": "csv"}])
    result = run_cli(["check", "rivet.yaml", "--facts", "facts.json", "--strict", "--format",
                      "json"], cwd=ws)
    assert result.code == 1
    types = json.loads(result.stdout)["types"]
    assert types["code"] == UNSAFE_MAPPING_CODE and types["refused"] == 2
    assert types["unknown"] == 1  # the `legacy` column of an older capture
    [export] = types["exports"]
    assert [(v["column_name"], v["fidelity"], v["fatal"]) for v in export["violations"]] == [
        ("amount", "unsupported", True), ("tags", "unsupported", True)]
    refused = {c["column"]: c["refused_by"] for c in export["columns"] if c["refused_by"]}
    assert refused == {"amount": ["fidelity"], "tags": ["format"]}


def test_a_config_error_wins_over_a_fatal_mapping(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, [{"name": "orders", "table": "orders"},
                               {"name": "bad", "table": "orders", "mode": "sideways"}])
    result = run_cli(["check", "rivet.yaml", "--facts", "facts.json", "--strict"], cwd=ws)
    assert result.code == 2
    assert "unsafe: rivet.yaml:5: orders: column 'amount'" in result.stdout


@pytest.mark.parametrize("argv", [
    ["--strict"], ["--target", "bigquery"], ["--type-report"],
    ["--live", "--facts", "facts.json"], ["--facts", "facts.json", "--target", "redshift"],
])
def test_type_options_without_a_source_of_types_are_usage_errors(tmp_path: Path,
                                                                 argv: list[str]) -> None:
    ws = _workspace(tmp_path, [{"name": "orders", "table": "orders"}])
    result = run_cli(["check", "rivet.yaml", *argv], cwd=ws)
    assert result.code == 2, result.stdout + result.stderr


def test_the_type_report_lists_every_column(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, [{"name": "orders", "table": "orders"}])
    result = run_cli(["check", "rivet.yaml", "--facts", "facts.json", "--type-report",
                      "--target", "duckdb"], cwd=ws)
    assert result.code == 0
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("  Column"))
    assert lines[header].split() == ["Column", "Source", "type", "Rivet", "type", "Arrow",
                                     "type", "Fidelity", "Target", "type", "Status"]
    assert lines[header + 1].split()[:3] == ["id", "int8", "int8"]
    assert "Type fidelity (facts facts.json, target duckdb): 1 export(s), 5 column(s): " \
           "1 unsafe" in result.stdout


_SQL_WORDS = ["SELECT", "FROM", "WHERE", "JOIN", "ON", "USING", "AS", "CAST", "count", "(", ")",
              ",", ".", "*", "::", "numeric", "(10,2)", "orders", "o", "id", "amount", "total",
              "tags", "'x'", '"Q"', "`b`", "--c\n", "/*", "*/", "WITH", "UNION", "ONLY", "[]",
              "DISTINCT", "1", ";", "$1", "E'", "\\", "#", "LEFT", "NATURAL", "time", "zone"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_SQL_WORDS), max_size=18), st.sampled_from(["postgres",
                                                                            "mysql"]))
def test_any_query_text_is_read_or_left_unknown_never_a_traceback(words: list[str],
                                                                  dialect: str) -> None:
    text = " ".join(words)
    parse_select(text, dialect)  # type: ignore[arg-type]
    rivets_single_table(text)
    loaded = load_config_text("rivet.yaml", json.dumps(_config(
        [{"name": "q", "query": text or "SELECT 1"}],
        "postgres" if dialect == "postgres" else "mysql")), {})
    for export in type_report(((loaded.path, loaded.source, e) for e in loaded.exports),
                              _catalog()).exports:
        assert export.unknown is not None or all(
            c.status in ("safe", "warning", "unsafe", "unknown") for c in export.columns)
