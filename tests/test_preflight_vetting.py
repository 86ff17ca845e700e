"""Query vetting, name checks and redaction (pure: no database)."""

from __future__ import annotations

import re

import pytest

from rivet_ci.adapters.preflight.safety import (
    Dialect,
    UnsafeQueryError,
    check_column_name,
    parse_table_name,
    vet_query,
)
from rivet_ci.output.redaction import Redactor

DIALECTS: tuple[Dialect, ...] = ("postgresql", "mysql", "sqlite")

ACCEPTED = [
    ("SELECT * FROM orders", "SELECT * FROM orders"),
    ("  select id from t -- trailing comment; DROP TABLE t\n", "select id from t"),
    ("SELECT 1;", "SELECT 1"),
    ("SELECT 1;;\n", "SELECT 1"),
    ("WITH x AS (SELECT id FROM t) SELECT * FROM x",
     "WITH x AS (SELECT id FROM t) SELECT * FROM x"),
    ("(SELECT id FROM t)", "(SELECT id FROM t)"),
    ("SELECT 'a;b', 'it''s' FROM t", "SELECT 'a;b', 'it''s' FROM t"),
    ("SELECT /* ; DROP TABLE t */ 1", "SELECT   1"),
    ("SELECT '100%' AS pct, ':name' AS colon", "SELECT '100%' AS pct, ':name' AS colon"),
]

REFUSED = [
    ("DELETE FROM t", "DELETE statement"),
    ("SELECT 1; DROP TABLE t", "only one statement"),
    ("SELECT 1; -- hidden\nDROP TABLE t", "only one statement"),
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE (data-modifying)"),
    ("WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT * FROM u", "UPDATE (data-modifying)"),
    ("SELECT * INTO t2 FROM t", "SELECT ... INTO"),
    ("SELECT * FROM t FOR UPDATE", "locking clauses"),
    ("SELECT * FROM t FOR SHARE", "locking clauses"),
    ("SELECT * FROM t FOR NO KEY UPDATE", "locking clauses"),
    ("COPY t TO '/tmp/x'", "COPY statement"),
    ("EXPLAIN ANALYZE SELECT 1", "EXPLAIN statement"),
    ("TRUNCATE t", "TRUNCATE statement"),
    ("", "empty"),
    ("   -- only a comment", "empty"),
    ("SELECT pg_sleep(10)", "pg_sleep"),
    ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", "pg_terminate_backend"),
    ("SELECT SLEEP(5)", "sleep"),
    ("SELECT 'unterminated", "unterminated"),
    ("SELECT 'a\\'; DROP TABLE t; --'", "backslash before a quote"),
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("sql", "sent"), ACCEPTED)
def test_accepted_queries_are_sent_without_comments(dialect: Dialect, sql: str, sent: str) -> None:
    assert vet_query(sql, dialect).text == sent


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("sql", "reason"), REFUSED)
def test_refused_queries_say_why(dialect: Dialect, sql: str, reason: str) -> None:
    with pytest.raises(UnsafeQueryError, match="(?i)" + re.escape(reason)):
        vet_query(sql, dialect)


def test_lexing_follows_the_dialect() -> None:
    # `#` starts a comment in MySQL only; in PostgreSQL it is an operator, so the `;` is real.
    assert vet_query("SELECT 1 # ; DROP TABLE t", "mysql").text == "SELECT 1"
    with pytest.raises(UnsafeQueryError, match="only one statement"):
        vet_query("SELECT 1 # ; DROP TABLE t", "postgresql")
    # PostgreSQL nests block comments, MySQL does not.
    assert vet_query("SELECT 1 /* /* */ ; DROP */", "postgresql").text == "SELECT 1"
    with pytest.raises(UnsafeQueryError, match="only one statement"):
        vet_query("SELECT 1 /* /* */ ; DROP */", "mysql")
    # Dollar quotes are PostgreSQL strings.
    assert vet_query("SELECT $tag$ ; DROP TABLE t $tag$", "postgresql").text.endswith("$tag$")
    # MySQL executes /*! ... */ comments: refused rather than hidden.
    with pytest.raises(UnsafeQueryError, match="executable comments"):
        vet_query("SELECT 1 /*! , (SELECT 1 FROM t FOR UPDATE) */", "mysql")
    # `--` needs a space after it in MySQL: `1--1` is arithmetic there, a comment elsewhere.
    assert vet_query("SELECT 1--1", "mysql").text == "SELECT 1--1"
    assert vet_query("SELECT 1--1", "postgresql").text == "SELECT 1"


def test_relations_are_read_from_from_and_join() -> None:
    query = vet_query("SELECT * FROM public.Orders o JOIN customers c ON c.id = o.cid, extra e "
                      "WHERE o.id IN (SELECT id FROM sub)", "postgresql")
    assert query.relations == (("public", "orders"), (None, "customers"), (None, "sub"))
    assert vet_query("SELECT * FROM `Mixed`", "mysql").relations == ((None, "Mixed"),)


@pytest.mark.parametrize("name", ["orders", "public.orders", "_x$1"])
def test_plain_table_names_are_accepted(name: str) -> None:
    schema, table = parse_table_name(name)
    assert (f"{schema}." if schema else "") + table == name


@pytest.mark.parametrize("name", ["orders; DROP TABLE orders", '"orders"', "a.b.c", "o'rders",
                                  "orders--", "", "1orders", "orders )"])
def test_other_table_names_are_refused(name: str) -> None:
    with pytest.raises(UnsafeQueryError, match="not a plain name"):
        parse_table_name(name)


def test_column_names_must_be_plain() -> None:
    assert check_column_name("updated_at", "cursor_column") == "updated_at"
    with pytest.raises(UnsafeQueryError, match="cursor_column"):
        check_column_name('id"; DROP TABLE t; --', "cursor_column")


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://u:hunter2@db:5432/app", "postgresql://u:***@db:5432/app"),
    ("postgresql+psycopg://u:p@ss:w@rd@db/app?sslmode=require",
     "postgresql+psycopg://u:***@db/app?sslmode=require"),
    ("mysql://root@db/app", "mysql://root@db/app"),
    ("sqlite:////tmp/state.db", "sqlite:////tmp/state.db"),
])
def test_a_url_shows_all_but_its_password(url: str, shown: str) -> None:
    assert Redactor()(url) == shown


def test_redactor_masks_known_secrets_in_any_form() -> None:
    redact = Redactor(["S3cret/Pw"])
    text = ("login failed for S3cret/Pw; url mysql://u:S3cret%2FPw@h/d; "
            "relation \"s3cret/pw\" does not exist")
    out = redact(text)
    assert "s3cret" not in out.lower()
    assert out.count("***") == 3
