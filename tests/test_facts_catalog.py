"""The source catalog: captured from real PostgreSQL, MariaDB and SQLite, and exports planned
from it — the ones a pull request adds included (docs/facts.md#the-source-catalog)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from support.db_seed import PG_SECRET, engine, with_required_keys, write_config

from rivet_ci.adapters.preflight.catalog import capture_catalog
from rivet_ci.adapters.preflight.collect import collect_facts
from rivet_ci.core.config.loader import LoadedConfig, load_config_text
from rivet_ci.core.facts.catalog import (
    base_table,
    derive_from_catalog,
    find_source,
    source_spelling,
    url_identity,
)
from rivet_ci.core.facts.catalog_models import CatalogRelation, CatalogSource
from rivet_ci.core.facts.loader import load_facts_text
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.plan.planner import plan_config

# Exports over the seeded tables (tests/support/db_seed.py) that rivet plans from a table's
# catalog: planned from per-export facts and from the catalog alone, they must agree.
PARITY_EXPORTS: list[dict[str, Any]] = [
    {"name": "orders_chunked", "table": "orders", "mode": "chunked", "chunk_size": 50_000},
    {"name": "orders_by_id", "table": "orders", "mode": "chunked", "chunk_column": "id",
     "chunk_size": 100_000, "source_group": "g"},
    {"name": "orders_incremental", "table": "orders", "mode": "incremental",
     "cursor_column": "updated_at", "source_group": "g"},
    {"name": "sparse_chunked", "table": "sparse", "mode": "chunked", "chunk_column": "id",
     "chunk_size": 10_000},
    {"name": "customers_full", "table": "customers", "mode": "full"},
    {"name": "nullable_inc", "table": "nullable_cursor", "mode": "incremental",
     "cursor_column": "created_at"},
    {"name": "projection", "query": "SELECT id, amount FROM orders", "mode": "full"},
]


def _loaded(exports: list[dict[str, Any]], source: dict[str, Any], path: str = "cfg.yaml",
            environ: dict[str, str] | None = None) -> LoadedConfig:
    exports = exports or [{"name": "placeholder", "table": "t", "mode": "full"}]
    text = json.dumps({"source": source, "exports": [with_required_keys(e) for e in exports]})
    loaded = load_config_text(path, text, environ or {})
    assert not [p for p in loaded.problems if p.severity == "error"], loaded.problems
    return loaded


def _summary(loaded: LoadedConfig, facts: FactsFile) -> dict[str, tuple[Any, ...]]:
    plan = plan_config(loaded, facts)
    return {e.export_name: (e.recommendation.priority_score, e.recommendation.priority_class,
                            e.recommendation.cost_class, e.recommendation.risk_class,
                            e.recommendation.recommended_wave, e.recommendation.isolate_on_source)
            for e in plan.exports}


def _capture(url: str, tmp_path: Path, exports: list[dict[str, Any]], **kwargs: Any,
             ) -> tuple[LoadedConfig, FactsFile]:
    """Per-export facts and the catalog of `url`, as `rivet-ci facts` captures them."""
    environ = {"SRC_URL": url}
    source = {"type": "postgres" if url.startswith("postgres") else "mysql",
              "url": "${SRC_URL}"}
    override = url if url.startswith("sqlite") else None
    loaded, path = write_config(tmp_path, exports, source=source, environ=environ)
    written = _loaded(exports, source, path=loaded.path)  # no environment: the spelling
    facts = collect_facts([(loaded, path)], environ=environ, source_url_override=override)
    catalog, warnings = capture_catalog([(loaded, written.source)], environ=environ,
                                        source_url_override=override, **kwargs)
    assert warnings == []
    return loaded, facts.model_copy(update={"catalog": catalog})


def _catalog_only(facts: FactsFile) -> FactsFile:
    """What a pull request sees for exports its base never had: the catalog, no entries."""
    return FactsFile(format="rivet-ci-facts/1", captured_at=facts.captured_at,
                     catalog=facts.catalog)


# --- pure rules --------------------------------------------------------------------------------


def test_base_table_is_found_only_for_a_single_table() -> None:
    def export(**kw: Any) -> Any:
        return _loaded([{"name": "e", "mode": "full", **kw}],
                       {"type": "postgres", "url": "postgresql://h/db"}).exports[0]

    assert base_table(export(table="s.orders")) == ("s", "orders", False)
    assert base_table(export(query="SELECT a, b FROM public.orders o")) == (
        "public", "orders", False)
    assert base_table(export(query="select * from orders where id > 5 -- x")) == (
        None, "orders", True)
    assert base_table(export(query="SELECT * FROM a JOIN b ON a.id = b.id")) is None
    assert base_table(export(query="SELECT * FROM a, b")) is None
    assert base_table(export(query="SELECT * FROM (SELECT 1) x")) is None
    assert base_table(export(query="SELECT (SELECT max(id) FROM b) FROM a")) is None
    assert base_table(export(query="SELECT count(*) FROM orders")) == (None, "orders", True)


def test_a_source_is_found_by_spelling_or_identity_never_by_guess() -> None:
    env_source = _loaded([], {"type": "postgres", "url": "${ORDERS_URL}"}).source
    spelled = source_spelling(env_source)
    assert spelled == "postgres url=${ORDERS_URL}"
    literal = _loaded([], {"type": "postgres",
                           "url": "postgresql://etl:hunter2@db1:6432/shop"}).source
    assert "hunter2" not in (source_spelling(literal) or "")
    assert url_identity("postgresql+psycopg://u:p@db1:6432/shop") == (
        "postgres", "db1", 6432, "shop")
    one = CatalogSource(engine="postgres", host="db1", port=6432, database="shop",
                        spellings=[spelled or ""])
    other = one.model_copy(update={"spellings": []})
    assert find_source([one], env_source) is one
    assert find_source([other], literal) is other  # by engine, host, port, database
    assert find_source([other, other.model_copy()], literal) is None  # ambiguous: no guess
    assert find_source([other], env_source) is None


def test_a_table_missing_from_the_catalog_has_no_facts_and_says_why() -> None:
    loaded = _loaded([{"name": "clicks", "table": "public.clickstream", "mode": "full"}],
                     {"type": "postgres", "url": "${U}"})
    catalog = [CatalogSource(engine="postgres", spellings=["postgres url=${U}"],
                             default_schema="public", schemas=["public"],
                             relations={"public.orders": CatalogRelation(kind="table",
                                                                         rows=10)})]
    derived = derive_from_catalog(loaded.exports[0], loaded.source, catalog)
    assert derived.facts is None
    assert derived.provenance.facts == "none"
    assert derived.provenance.why_unknown == "table public.clickstream is not in the catalog"
    plan = plan_config(loaded, FactsFile(format="rivet-ci-facts/1", catalog=catalog))
    (export,) = plan.exports
    assert export.recommendation.low_confidence
    assert export.preflight_error == ("no facts for this export: table public.clickstream is "
                                      "not in the catalog")


def test_the_catalog_section_round_trips_through_the_facts_loader() -> None:
    catalog = CatalogSource(engine="mysql", host="h", port=3306, database="d",
                            relations={"d.t": CatalogRelation(kind="table", rows=3)})
    facts = FactsFile(format="rivet-ci-facts/1", catalog=[catalog])
    text = json.dumps({"format": facts.format,
                       **facts.model_dump(mode="json", exclude_none=True)})
    loaded, problems = load_facts_text("f.json", text)
    assert problems == [] and loaded == facts
    bad = text.replace('"kind": "table"', '"kind": "tabel"')
    assert load_facts_text("f.json", bad)[0] is None


# --- real databases ----------------------------------------------------------------------------


def _pg_seq_reads(url: str) -> dict[str, tuple[int, int]]:
    db = engine(url)
    try:
        with db.connect() as conn:
            conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
            rows = conn.exec_driver_sql(
                "SELECT relname, seq_scan, seq_tup_read FROM pg_stat_user_tables").all()
    finally:
        db.dispose()
    return {str(n): (int(s), int(r)) for n, s, r in rows}


@pytest.mark.postgres
def test_postgres_catalog_shape_and_no_full_scan(pg_db: str, tmp_path: Path) -> None:
    before = _pg_seq_reads(pg_db)
    loaded, _ = write_config(tmp_path, [{"name": "o", "table": "orders", "mode": "full"}],
                                source={"type": "postgres", "url": "${SRC_URL}"},
                                environ={"SRC_URL": pg_db})
    written = _loaded([], {"type": "postgres", "url": "${SRC_URL}"})
    (source,), warnings = capture_catalog([(loaded, written.source)],
                                          environ={"SRC_URL": pg_db})
    assert warnings == []
    assert (source.engine, source.host, source.database) == ("postgres", "127.0.0.1",
                                                             "rivet_preflight")
    assert source.spellings == ["postgres url=${SRC_URL}"]
    text = source.model_dump_json()
    assert PG_SECRET not in text
    assert source.default_schema == "public" and source.schemas == ["public"]
    orders = source.relations["public.orders"]
    assert orders.kind == "table" and orders.rows == 300_000
    assert orders.avg_row_bytes is not None and 20 < orders.avg_row_bytes < 60
    assert orders.integer_primary_key == "id"
    assert orders.columns["id"].type == "bigint" and orders.columns["id"].nullable is False
    assert orders.columns["id"].keyset_key is True
    assert (orders.columns["id"].min, orders.columns["id"].max) == ("1", "300000")
    assert orders.columns["updated_at"].min is not None  # index-leading timestamp
    assert orders.columns["created_at"].min is None  # no index: its ends are never read
    assert {tuple(ix.columns): ix.unique for ix in orders.indexes} == {
        ("id",): True, ("updated_at",): False}
    assert source.relations["public.recent_orders"].kind == "view"
    assert source.relations["public.recent_orders"].rows is None
    assert source.max_connections is not None and source.max_connections >= 1
    # The servers' own statistics: no table was read in full (the largest has 1M rows).
    deadline = time.monotonic() + 5
    after = _pg_seq_reads(pg_db)
    while after == before and time.monotonic() < deadline:
        time.sleep(0.1)
        after = _pg_seq_reads(pg_db)
    for table in ("orders", "big_unindexed", "events_noidx", "sparse", "customers"):
        assert after.get(table, (0, 0))[1] == before.get(table, (0, 0))[1], table


@pytest.mark.postgres
def test_postgres_partitions_are_catalogued(pg_url: str, tmp_path: Path) -> None:
    admin = engine(pg_url)
    with admin.connect() as conn:
        conn.exec_driver_sql("DROP DATABASE IF EXISTS rivet_catalog_parts WITH (FORCE)")
        conn.exec_driver_sql("CREATE DATABASE rivet_catalog_parts")
    admin.dispose()
    url = sa.make_url(pg_url).set(database="rivet_catalog_parts").render_as_string(
        hide_password=False)
    db = engine(url)
    with db.connect() as conn:
        conn.exec_driver_sql("CREATE SCHEMA sales")
        conn.exec_driver_sql("CREATE TABLE sales.events (id bigint NOT NULL, at date NOT NULL)"
                             " PARTITION BY RANGE (at)")
        conn.exec_driver_sql("CREATE TABLE sales.events_a PARTITION OF sales.events FOR VALUES"
                             " FROM ('2025-01-01') TO ('2026-01-01')")
        conn.exec_driver_sql("CREATE TABLE sales.events_b PARTITION OF sales.events FOR VALUES"
                             " FROM ('2026-01-01') TO ('2027-01-01')")
        conn.exec_driver_sql("CREATE INDEX ON sales.events (at)")
        conn.exec_driver_sql("INSERT INTO sales.events SELECT g, date '2025-01-01' + mod(g, 600)"
                             " FROM generate_series(1, 6000) g")
        conn.exec_driver_sql("CREATE TABLE public.other (id int)")
        conn.exec_driver_sql("VACUUM ANALYZE sales.events_a, sales.events_b")
    db.dispose()
    exports = [{"name": "ev", "table": "sales.events", "mode": "incremental",
                "cursor_column": "at"}]
    loaded, facts = _capture(url, tmp_path, exports)
    (source,) = facts.catalog
    assert source.schemas == ["sales"]  # only the schemas the configs touch
    assert "public.other" not in source.relations
    events = source.relations["sales.events"]
    assert events.kind == "partitioned_table"
    assert (events.columns["at"].min, events.columns["at"].max) == ("2025-01-01", "2026-08-23")
    parts = {k: r for k, r in source.relations.items() if r.kind == "partition"}
    assert {r.partition_of for r in parts.values()} == {"sales.events"}
    assert sum(r.rows or 0 for r in parts.values()) == 6000
    # Planned from the catalog: the partitions' sum is the estimate of the whole.
    plan = plan_config(loaded, _catalog_only(facts))
    (export,) = plan.exports
    assert export.signals is not None and export.signals.row_estimate == 6000
    assert export.facts_provenance is not None and export.facts_provenance.facts == "catalog"
    assert export.signals.cursor_quality == "strong_monotonic"


@pytest.mark.postgres
def test_postgres_plan_from_catalog_matches_plan_from_export_facts(
        pg_db: str, tmp_path: Path) -> None:
    loaded, facts = _capture(pg_db, tmp_path, PARITY_EXPORTS)
    assert _summary(loaded, _catalog_only(facts)) == _summary(loaded, facts)
    plan = plan_config(loaded, _catalog_only(facts))
    for export in plan.exports:
        assert export.facts_provenance is not None
        assert export.facts_provenance.facts == "catalog", export.export_name
        assert export.facts_provenance.relation is not None


@pytest.mark.mariadb
def test_mariadb_catalog_and_parity_without_reading_a_table(
        mysql_db: str, tmp_path: Path) -> None:
    db = engine(mysql_db)
    with db.connect() as conn:
        conn.exec_driver_sql("SET GLOBAL userstat = 1")
        conn.exec_driver_sql("FLUSH TABLE_STATISTICS")
    try:
        written = _loaded([], {"type": "mysql", "url": "${SRC_URL}"})
        loaded, _ = write_config(tmp_path / "only", [{"name": "o", "table": "orders",
                                                      "mode": "full"}],
                                 source={"type": "mysql", "url": "${SRC_URL}"},
                                 environ={"SRC_URL": mysql_db})
        (source,), warnings = capture_catalog([(loaded, written.source)],
                                              environ={"SRC_URL": mysql_db})
        with db.connect() as conn:
            read = {str(t): int(n) for t, n in conn.execute(sa.text(
                "SELECT table_name, rows_read FROM information_schema.TABLE_STATISTICS "
                "WHERE table_schema = DATABASE()")).all()}
    finally:
        with db.connect() as conn:
            conn.exec_driver_sql("SET GLOBAL userstat = 0")
        db.dispose()
    assert warnings == []
    assert source.engine == "mysql" and source.default_schema == "rivet_preflight"
    orders = source.relations["rivet_preflight.orders"]
    assert orders.kind == "table" and orders.rows is not None
    assert 250_000 < orders.rows < 350_000  # InnoDB's estimate
    assert orders.integer_primary_key == "id" and orders.unique_key == "id"
    assert (orders.columns["id"].min, orders.columns["id"].max) == ("1", "300000")
    assert orders.columns["updated_at"].min == "2024-01-01 00:01:00"
    assert orders.columns["created_at"].min is None
    assert orders.columns["customer_id"].type == "int(11)"
    assert source.relations["rivet_preflight.recent_orders"].kind == "view"
    # Index ends only: the two ends of each index-leading column read, never a table.
    for key, relation in source.relations.items():
        ends = sum(1 for c in relation.columns.values() if c.min is not None)
        assert read.get(key.split(".")[1], 0) <= 2 * ends, (key, read)
    assert read.get("events_noidx", 0) == 0 and read.get("orders", 0) <= 4

    loaded, facts = _capture(mysql_db, tmp_path, PARITY_EXPORTS)
    assert _summary(loaded, _catalog_only(facts)) == _summary(loaded, facts)


def test_sqlite_catalog_via_the_override(sqlite_db: str, tmp_path: Path) -> None:
    loaded, facts = _capture(sqlite_db, tmp_path, PARITY_EXPORTS[:5])
    (source,) = facts.catalog
    assert source.engine == "sqlite" and source.default_schema == "main"
    orders = source.relations["main.orders"]
    assert orders.rows == 300_000 and orders.integer_primary_key == "id"
    assert (orders.columns["id"].min, orders.columns["id"].max) == ("1", "300000")
    assert source.relations["main.recent_orders"].kind == "view"
    assert _summary(loaded, _catalog_only(facts)) == _summary(loaded, facts)


@pytest.mark.postgres
def test_facts_cli_captures_the_catalog_and_a_new_export_is_planned_from_it(
        pg_db: str, tmp_path: Path) -> None:
    import io

    import yaml

    from rivet_ci.cli import run
    from rivet_ci.commands.context import Context

    def cli(argv: list[str], environ: dict[str, str]) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = run(argv, Context(stdout=out, stderr=err, environ=environ, cwd=tmp_path))
        return code, out.getvalue(), err.getvalue()

    def write(exports: list[dict[str, Any]]) -> None:
        config = {"source": {"type": "postgres", "url": "${SHOP_URL}"},
                  "exports": [with_required_keys(e) for e in exports]}
        (tmp_path / "rivet.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    write([{"name": "customers", "table": "customers", "mode": "full"}])
    code, _, err = cli(["facts", "rivet.yaml", "--output", "facts.json"], {"SHOP_URL": pg_db})
    assert code == 0, err
    assert "catalogued" in err
    text = (tmp_path / "facts.json").read_text()
    assert PG_SECRET not in text
    captured = json.loads(text)
    assert captured["catalog"][0]["spellings"] == ["postgres url=${SHOP_URL}"]
    # The pull request adds an export the base never had; its job has no secret.
    write([{"name": "customers", "table": "customers", "mode": "full"},
           {"name": "orders_new", "table": "public.orders", "mode": "chunked",
            "chunk_column": "id", "chunk_size": 10_000, "source_group": "g"}])
    code, out, err = cli(["plan", "rivet.yaml", "--facts", "facts.json", "--format", "json"], {})
    assert code == 0, err
    exports = {e["export_name"]: e for c in json.loads(out)["configs"] for e in c["exports"]}
    new = exports["orders_new"]
    assert new["diagnostics"]["facts"]["origin"] == "catalog"
    assert new["diagnostics"]["facts"]["relation"] == "public.orders"
    assert new["computed"]["row_estimate"] == 300_000
    assert new["computed"]["chunk_count"] == 30
    assert exports["customers"]["diagnostics"]["facts"]["origin"] == "export"


def test_a_projection_query_gets_its_tables_range_a_filtered_one_does_not() -> None:
    from rivet_ci.core.facts.catalog_models import CatalogColumn, CatalogIndex

    relation = CatalogRelation(
        kind="table", rows=500_000,
        columns={"updated_at": CatalogColumn(type="timestamp", nullable=False,
                                             min="2024-01-01 00:00:00",
                                             max="2026-11-01 00:00:00")},
        indexes=[CatalogIndex(columns=["updated_at"])])
    catalog = [CatalogSource(engine="postgres", spellings=["postgres url=${U}"],
                             default_schema="public", relations={"public.t": relation})]
    loaded = _loaded([
        {"name": "whole", "query": "SELECT id, updated_at FROM t", "mode": "incremental",
         "cursor_column": "updated_at"},
        {"name": "recent", "query": "SELECT * FROM t WHERE updated_at > now() - interval '1 day'",
         "mode": "incremental", "cursor_column": "updated_at"}],
        {"type": "postgres", "url": "${U}"})
    whole, recent = (derive_from_catalog(e, loaded.source, catalog) for e in loaded.exports)
    assert whole.facts is not None and recent.facts is not None
    assert whole.facts.columns["updated_at"].min == "2024-01-01 00:00:00"
    assert whole.provenance.inputs["range"] == "catalog"
    assert recent.facts.columns["updated_at"].min is None
    assert recent.provenance.inputs["range"] == "unknown"
    assert recent.provenance.inputs["row_estimate"] == "catalog-table-count"
    assert recent.facts.columns["updated_at"].indexed is True
