"""The probe-cost rules of live preflight (`rivet_ci/core/facts/probe_rules.py`), no database.

The same rules run against real PostgreSQL, MariaDB and SQLite in tests/test_preflight_*.py;
here each rule is pinned on its own.
"""

from __future__ import annotations

from rivet_ci.core.config.models import ExportConfig
from rivet_ci.core.facts.probe_rules import (
    FullScan,
    PlanFacts,
    Rel,
    RelationInfo,
    column_kind,
    has_column,
    indexed,
    min_max_probe,
    probe_needs,
    range_skip,
    rows_read,
    same_name,
)

ORDERS: Rel = ("public", "orders")
BOUND = 1_000_000  # rows; a probe may read at most half of it (SCAN_MARGIN)


def info(rows: int | None, **extra: object) -> RelationInfo:
    fields: dict[str, object] = {"columns": frozenset({"id", "updated_at", "note"}),
                                 "leading_index_columns": frozenset({"id"}),
                                 "not_null_columns": frozenset({"id"}),
                                 "integer_columns": frozenset({"id"}),
                                 "integer_primary_key": "id", **extra}
    return RelationInfo(rows=rows, **fields)  # type: ignore[arg-type]


def export(**fields: object) -> ExportConfig:
    return ExportConfig.model_validate({"name": "e", "format": "parquet",
                                        "destination": {"type": "local"}, **fields})


def test_an_indexed_column_is_always_cheap() -> None:
    infos = {ORDERS: info(10**9)}
    assert range_skip("postgresql", ORDERS, "id", PlanFacts(10**9), infos, bound=BOUND) is None


def test_an_unindexed_column_is_probed_only_below_half_the_bound() -> None:
    small = {ORDERS: info(BOUND // 2)}
    big = {ORDERS: info(BOUND // 2 + 1)}
    assert range_skip("mysql", ORDERS, "updated_at", PlanFacts(10), small, bound=BOUND) is None
    reason = range_skip("mysql", ORDERS, "updated_at", PlanFacts(10), big, bound=BOUND)
    assert reason == ("no index leads with updated_at, so min/max reads the whole table: "
                      "~500001 rows, over 500000 (the probe bound of 1000000 with a margin of "
                      "2x for estimate error)")


def test_views_missing_tables_and_unknown_sizes_are_never_probed() -> None:
    plan = PlanFacts(10)
    assert range_skip("sqlite", ORDERS, "id", plan, {}, bound=BOUND) == (
        "public.orders was not found in the catalog")
    view = {ORDERS: info(1, base_table=False)}
    assert range_skip("sqlite", ORDERS, "id", plan, view, bound=BOUND) == (
        "public.orders is a view: min/max would run its query")
    unknown = {ORDERS: info(None)}
    scan_of_unknown_size = PlanFacts(None, full_scans=(FullScan(None),))
    assert range_skip("sqlite", ORDERS, "note", scan_of_unknown_size, unknown, bound=BOUND) == (
        "no index leads with note, so min/max reads the whole table, and its size is unknown")


def test_rows_read_sums_every_partition_a_plan_reads_in_full() -> None:
    p1, p2 = ("public", "orders_p1"), ("public", "orders_p2")
    plan = PlanFacts(10, full_scans=(FullScan(p1), FullScan(p2)))
    infos = {ORDERS: info(0), p1: info(300), p2: info(400)}
    assert rows_read(ORDERS, plan, infos) == 700
    assert rows_read(ORDERS, PlanFacts(10, full_scans=(FullScan(None),)), infos) is None


def test_a_table_without_any_size_figure_is_of_unknown_size_not_empty() -> None:
    unknown = {ORDERS: info(None)}
    no_estimate = PlanFacts(None)
    assert rows_read(ORDERS, no_estimate, unknown) is None
    assert range_skip("postgresql", ORDERS, "note", no_estimate, unknown, bound=BOUND) == (
        "no index leads with note, so min/max reads the whole table, and its size is unknown")
    probe = min_max_probe("postgresql", ORDERS, {"note", "id"}, auto_key=False,
                          plan=no_estimate, infos=unknown, bound=BOUND)
    assert probe.columns == ("id",) and probe.null_checks == ()  # the index ends only


def test_one_min_max_statement_covers_every_cheap_column_and_the_auto_key() -> None:
    infos = {ORDERS: info(1_000)}
    probe = min_max_probe("postgresql", ORDERS, {"updated_at", "missing"}, auto_key=True,
                          plan=PlanFacts(1_000), infos=infos, bound=BOUND)
    assert probe.columns == ("id", "updated_at")
    assert probe.null_checks == ("updated_at",)  # id is NOT NULL; the table is small
    big = {ORDERS: info(10**8)}
    probe = min_max_probe("postgresql", ORDERS, {"updated_at"}, auto_key=False,
                          plan=PlanFacts(10**8), infos=big, bound=BOUND)
    assert probe.columns == () and probe.null_checks == ()


def test_names_compare_exactly_on_postgresql_only() -> None:
    assert not same_name("postgresql", "ID", "id") and same_name("mysql", "ID", "id")
    infos = {ORDERS: info(1)}
    assert indexed("mysql", [ORDERS], infos, "ID") is True
    assert indexed("postgresql", [ORDERS], infos, "ID") is False
    assert indexed("postgresql", [("public", "other")], infos, "id") is None
    assert has_column("postgresql", infos[ORDERS], "nope") is False
    assert has_column("postgresql", info(1, columns=None), "nope") is None
    assert column_kind("postgresql", infos[ORDERS], "id") == {
        "integer": True, "keyset_key": False, "has_nulls": False}
    assert column_kind("postgresql", None, "id") == {}


def test_probe_needs() -> None:
    assert probe_needs(export(table="orders", mode="chunked")) == (None, True, True)
    assert probe_needs(export(table="orders", mode="chunked", chunk_column="id")) == (
        "chunk_column", True, False)
    assert probe_needs(export(query="select 1", mode="incremental",
                              cursor_column="updated_at")) == ("cursor_column", False, False)
    assert probe_needs(export(table="orders")) == (None, False, False)
