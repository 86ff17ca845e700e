"""Facts from real PostgreSQL, MariaDB and SQLite databases of known shape (`db_seed`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from support.db_seed import (
    EXPORT_DEFAULTS,
    NULLABLE_ROWS,
    ROWS,
    SPARSE_ROWS,
    SPARSE_STEP,
    collect,
    with_required_keys,
)

from rivet_ci.adapters.preflight.collect import TrustedReads
from rivet_ci.core.config.models import ExportConfig
from rivet_ci.core.facts.models import ExportFacts
from rivet_ci.core.facts.probe_rules import UNTRUSTED_QUERY_RANGE_SKIPPED
from rivet_ci.core.plan.signals import derive_signals

DIALECTS = [
    pytest.param("pg_db", marks=pytest.mark.postgres, id="postgres"),
    pytest.param("mysql_db", marks=pytest.mark.mariadb, id="mariadb"),
    pytest.param("sqlite_db", id="sqlite"),
]
# Small enough that the 300k-row tables are "large", so skipping is exercised cheaply.
BOUND = 100_000

EXPORTS: list[dict[str, Any]] = [
    {"name": "orders_full", "table": "orders"},
    {"name": "orders_by_updated", "table": "orders", "mode": "incremental",
     "cursor_column": "updated_at"},
    {"name": "orders_by_created", "table": "orders", "mode": "incremental",
     "cursor_column": "created_at"},
    {"name": "events", "table": "events_noidx", "mode": "incremental", "cursor_column": "ts"},
    {"name": "orders_chunked", "table": "orders", "mode": "chunked", "chunk_column": "id",
     "chunk_size": 100_000, "chunk_checkpoint": True},
    {"name": "sparse_chunked", "table": "sparse", "mode": "chunked", "chunk_column": "id",
     "chunk_size": 10_000, "chunk_checkpoint": True},
    {"name": "coalesce", "table": "nullable_cursor", "mode": "incremental",
     "cursor_column": "updated_at", "cursor_fallback_column": "created_at",
     "incremental_cursor_mode": "coalesce"},
    {"name": "recent_view", "table": "recent_orders"},
    {"name": "joined", "mode": "incremental", "cursor_column": "updated_at",
     "query": "SELECT o.id, o.updated_at, c.name FROM orders o "
              "JOIN customers c ON c.id = o.customer_id"},
    {"name": "small_query", "mode": "incremental", "cursor_column": "id",
     "query": "SELECT id, name FROM customers"},
]


@pytest.fixture(params=DIALECTS, scope="module")
def facts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          ) -> dict[str, ExportFacts]:
    url = request.getfixturevalue(request.param)
    return collect(url, tmp_path_factory.mktemp("cfg"), EXPORTS, range_probe_row_bound=BOUND)


def export(name: str) -> ExportConfig:
    return ExportConfig.model_validate(with_required_keys(next(e for e in EXPORTS
                                                               if e["name"] == name)))


def test_every_export_has_facts(facts: dict[str, ExportFacts]) -> None:
    assert {n: f.preflight_error for n, f in facts.items() if f.preflight_error} == {}
    assert set(facts) == {e["name"] for e in EXPORTS}


def test_row_estimates_are_within_ten_percent_after_analyze(
        facts: dict[str, ExportFacts]) -> None:
    for name, true_count in [("orders_full", ROWS), ("events", ROWS),
                             ("sparse_chunked", SPARSE_ROWS), ("coalesce", NULLABLE_ROWS)]:
        estimate = facts[name].row_estimate
        assert estimate is not None, name
        assert abs(estimate - true_count) <= 0.1 * true_count, (name, estimate)


def test_index_detection(facts: dict[str, ExportFacts]) -> None:
    assert facts["orders_by_updated"].columns["updated_at"].indexed is True
    assert facts["orders_by_created"].columns["created_at"].indexed is False
    assert facts["events"].columns["ts"].indexed is False
    assert facts["orders_chunked"].columns["id"].indexed is True  # primary key
    assert facts["coalesce"].columns["updated_at"].indexed is True
    assert facts["coalesce"].columns["created_at"].indexed is True  # the fallback, too
    # A query export: the column leads an index of a relation the query reads.
    assert facts["joined"].columns["updated_at"].indexed is True


def test_min_max_observed_on_indexed_column(facts: dict[str, ExportFacts]) -> None:
    column = facts["orders_by_updated"].columns["updated_at"]
    assert column.range_skipped is None
    assert column.min is not None and column.min.startswith("2024-01-01 00:01:00")
    assert column.max is not None and column.max.startswith("2024-07-27 08:00:00")
    assert facts["orders_chunked"].columns["id"].min == "1"
    assert facts["orders_chunked"].columns["id"].max == str(ROWS)
    # A trusted query's range is read as rivet reads it, `SELECT min(id), max(id) FROM (<query>)
    # AS _rivet`, once its EXPLAIN shows the statement is bounded (here: an index endpoint).
    small = facts["small_query"].columns["id"]
    assert (small.min, small.range_skipped) == ("1", None)
    # The join reads `orders` (300,000 rows) in full: over the bound, so it never runs.
    joined = facts["joined"].columns["updated_at"]
    assert joined.min is None and joined.range_skipped is not None


def test_an_untrusted_query_is_never_run_for_its_range(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """A query new or changed in a pull request: only a bare column of its single base table
    is read (`min`/`max` of the table, as for a `table:` export); a join never."""
    url = request.getfixturevalue("pg_db")
    facts = collect(url, tmp_path, EXPORTS, range_probe_row_bound=BOUND,
                    trusted=TrustedReads())
    small = facts["small_query"].columns["id"]
    assert (small.min, small.range_skipped) == ("1", None)  # customers.id: the table's range
    joined = facts["joined"].columns["updated_at"]
    assert (joined.min, joined.range_skipped) == (None, UNTRUSTED_QUERY_RANGE_SKIPPED)
    assert facts["joined"].row_estimate is not None  # still EXPLAINed


def test_min_max_skipped_on_large_unindexed_column(facts: dict[str, ExportFacts]) -> None:
    for name, column in [("orders_by_created", "created_at"), ("events", "ts")]:
        observed = facts[name].columns[column]
        assert observed.min is None and observed.max is None
        assert observed.range_skipped is not None
        assert f"no index leads with {column}" in observed.range_skipped
        assert str(BOUND) in observed.range_skipped
    joined = facts["joined"].columns["updated_at"]  # a query over a large table: not run
    assert joined.min is None and joined.range_skipped is not None


def test_sparse_range_detected_end_to_end(facts: dict[str, ExportFacts]) -> None:
    signals = derive_signals(export("sparse_chunked"), facts["sparse_chunked"])
    assert signals.sparse_range_risk is True
    span = SPARSE_ROWS * SPARSE_STEP - SPARSE_STEP + 1
    assert signals.chunk_count == math.ceil(span / 10_000)
    dense = derive_signals(export("orders_chunked"), facts["orders_chunked"])
    assert dense.sparse_range_risk is False


def test_chunk_count_from_real_min_max(facts: dict[str, ExportFacts]) -> None:
    signals = derive_signals(export("orders_chunked"), facts["orders_chunked"])
    assert signals.chunk_count == math.ceil(ROWS / 100_000)
    assert signals.uses_index is True
    assert signals.cursor_range_observed is True


def test_cursor_quality_from_live_facts(facts: dict[str, ExportFacts]) -> None:
    strong = derive_signals(export("orders_by_updated"), facts["orders_by_updated"])
    assert strong.cursor_quality == "strong_monotonic"
    coalesce = derive_signals(export("coalesce"), facts["coalesce"])
    assert coalesce.cursor_quality == "weak_multi_candidate"


def test_postgres_reports_row_width(facts: dict[str, ExportFacts],
                                    request: pytest.FixtureRequest) -> None:
    width = facts["orders_full"].avg_row_bytes
    if "postgres" in request.node.callspec.id:
        assert width is not None and width > 0
    else:
        assert width is None  # only Postgres plans carry a width


def test_max_connections_where_readable(facts: dict[str, ExportFacts],
                                        request: pytest.FixtureRequest) -> None:
    value = facts["orders_full"].max_connections
    if "sqlite" in request.node.callspec.id:
        assert value is None
    else:
        assert value is not None and value > 1


@pytest.mark.postgres
def test_view_over_indexed_table_reports_plan_index_use(pg_db: str, tmp_path: Path) -> None:
    facts = collect(pg_db, tmp_path, [
        {"name": "recent", "table": "recent_orders", "mode": "incremental",
         "cursor_column": "updated_at"}])["recent"]
    assert facts.plan_uses_index is True  # the view's filter is served by an index
    assert facts.columns["updated_at"].indexed is False  # a view has no index of its own
    assert derive_signals(ExportConfig.model_validate({**EXPORT_DEFAULTS,
        "name": "recent", "table": "recent_orders", "mode": "incremental",
        "cursor_column": "updated_at"}), facts).uses_index is True


def test_sqlite_without_analyze_counts_small_tables(tmp_path: Path) -> None:
    from support.db_seed import seed_sqlite

    url = seed_sqlite(tmp_path / "fresh.db", analyze=False)
    facts = collect(url, tmp_path / "cfg", [{"name": "orders", "table": "orders"}])["orders"]
    assert facts.row_estimate == ROWS  # small file: counted exactly


@pytest.mark.parametrize(("db", "schema"), [
    pytest.param("pg_db", "public", marks=pytest.mark.postgres, id="postgres"),
    pytest.param("mysql_db", "rivet_preflight", marks=pytest.mark.mariadb, id="mariadb"),
    pytest.param("sqlite_db", "main", id="sqlite"),
])
def test_qualified_and_bare_names_in_one_run(
        db: str, schema: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = request.getfixturevalue(db)
    facts = collect(url, tmp_path, [
        {"name": "bare", "table": "orders", "mode": "incremental", "cursor_column": "updated_at"},
        {"name": "qualified", "table": f"{schema}.orders", "mode": "incremental",
         "cursor_column": "updated_at"},
        {"name": "shouting", "table": "ORDERS", "mode": "incremental",
         "cursor_column": "UPDATED_AT"},  # unquoted names fold as the database folds them
    ])
    for name in ("bare", "qualified"):
        assert facts[name].preflight_error is None, facts[name].preflight_error
        assert facts[name].columns["updated_at"].indexed is True, name
        assert facts[name].columns["updated_at"].min is not None, name
    if db != "mysql_db":  # MariaDB on Linux compares table names case-sensitively
        assert facts["shouting"].columns["UPDATED_AT"].indexed is True


CHUNK_EXPORTS: list[dict[str, Any]] = [
    # No chunk_column: rivet chunks on the single-integer primary key, whose range is observed.
    {"name": "auto_pk", "table": "orders", "mode": "chunked", "chunk_size": 100_000},
    {"name": "by_time", "table": "orders", "mode": "chunked", "chunk_column": "updated_at"},
    {"name": "by_key", "table": "customers", "mode": "chunked", "chunk_by_key": "id"},
    {"name": "nullable", "table": "nullable_cursor", "mode": "incremental",
     "cursor_column": "updated_at"},
    {"name": "not_null", "table": "nullable_cursor", "mode": "chunked",
     "chunk_column": "created_at"},
    {"name": "view", "table": "recent_orders", "mode": "chunked"},
    {"name": "query", "mode": "chunked", "chunk_column": "id",
     "query": "SELECT id, name FROM customers"},
]


@pytest.mark.parametrize("db", DIALECTS)
def test_chunk_planning_facts_from_the_catalog(
        db: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # A bound of 200,000: nullable_cursor (50,000 rows, give or take InnoDB's estimate) is
    # small enough to be read in full, so its NULL check runs.
    facts = collect(request.getfixturevalue(db), tmp_path, CHUNK_EXPORTS,
                    range_probe_row_bound=200_000)
    assert {n: f.preflight_error for n, f in facts.items() if f.preflight_error} == {}
    auto = facts["auto_pk"]
    assert auto.table is not None and auto.table.integer_primary_key == "id"
    assert auto.table.rows is not None and abs(auto.table.rows - ROWS) <= ROWS // 10
    assert (auto.columns["id"].min, auto.columns["id"].max) == ("1", str(ROWS))
    assert auto.columns["id"].integer is True and auto.columns["id"].keyset_key is True
    assert auto.columns["id"].has_nulls is False
    assert facts["by_time"].columns["updated_at"].integer is False
    assert facts["by_time"].columns["updated_at"].keyset_key is False
    assert facts["by_key"].columns["id"].keyset_key is True
    # Nullable, in a table small enough to read in full: checked in the min/max statement.
    assert facts["nullable"].columns["updated_at"].has_nulls is True
    assert facts["not_null"].columns["created_at"].has_nulls is False
    view = facts["view"]
    assert view.table is not None and view.table.integer_primary_key is None
    assert "id" not in view.columns  # no key of its own: nothing auto-resolved, nothing run
    assert facts["query"].table is None  # a query has no catalog facts
    assert facts["query"].columns["id"].integer is None
