"""Live plan parity: the real `rivet plan` (rivet-cli 0.32.2) and `rivet-ci plan --live` plan the
same configs on the same databases, and agree export for export (tests/support/live_parity.py).

The tables (`support.parity_seed`) have every shape rivet's planner tells apart; the configs are
one with every shape, then configs generated from a fixed seed with `source_group`s and
`reconcile_required`. rivet stops a config at the first export it refuses: that export must be
refused by us too, with rivet's message, and the rest is planned again. Every difference that
remains is a documented deviation (docs/compatibility.md), pinned here by name.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from support import parity_seed, rivet_demo
from support.live_parity import (
    URL_ENV,
    Compared,
    Difference,
    agreement,
    compare,
    ours_plan,
    plan_both,
    rivet_plan,
    rivet_url,
)
from support.mysql_proxy import mariadb_proxy, rewrite_query
from support.real_rivet import run_rivet

SEED = 20_26_12_01
GENERATED = 6  # configs per server
PER_CONFIG = 9


@pytest.fixture(scope="module")
def pg_parity(pg_url: str) -> str:
    url = parity_seed.fresh_database(pg_url)
    parity_seed.seed_postgres(url)
    return url


@pytest.fixture(scope="module")
def my_parity(mysql_url: str) -> Iterator[tuple[str, str]]:
    """(URL rivet-ci uses, URL rivet uses: the same MariaDB through the rewriting proxy)."""
    url = parity_seed.fresh_database(mysql_url)
    parity_seed.seed_mariadb(url)
    parsed = sa.make_url(url)
    with mariadb_proxy(parsed.host or "127.0.0.1", parsed.port or 3306) as proxy:
        yield url, parsed.set(port=proxy.port).render_as_string(hide_password=False)


def my_document(exports: list[dict[str, Any]]) -> dict[str, Any]:
    return parity_seed.config_document("mysql", exports, URL_ENV)


def pg_shapes() -> dict[str, dict[str, Any]]:
    return {**parity_seed.EXPORTS, **parity_seed.PG_ONLY}


def pg_document(exports: list[dict[str, Any]]) -> dict[str, Any]:
    return parity_seed.config_document("postgres", exports, URL_ENV)


def remaining(result: Compared) -> list[Difference]:
    assert result.rivet.error is None, result.rivet.error
    assert result.ours.error is None, result.ours.error
    assert result.refusal_mismatches == []
    return compare(result.rivet, result.ours)


@pytest.mark.postgres
def test_every_shape_plans_as_rivet_plans_it_on_postgres(pg_parity: str, tmp_path: Path) -> None:
    exports = [parity_seed.export_entry(n, s, schema="public") for n, s in pg_shapes().items()]
    result = plan_both(tmp_path, pg_document, exports, pg_parity)
    diffs = remaining(result)
    assert [str(d) for d in diffs] == []
    agreed, compared = agreement(result.rivet, result.ours)
    print(f"\nagreement postgres, every shape: {agreed}/{compared} exports")
    assert compared == len(exports) - len(result.refused) and agreed == compared


def generated(seed: int, shapes: dict[str, dict[str, Any]], schema: str | None,
              ) -> Iterator[list[dict[str, Any]]]:
    yield from parity_seed.generated_configs(seed, shapes, count=GENERATED, size=PER_CONFIG,
                                             schema=schema)


@pytest.mark.postgres
def test_generated_configs_plan_as_rivet_plans_them_on_postgres(
        pg_parity: str, tmp_path: Path) -> None:
    """Seeded configs with shared source groups (heavy members included) and reconcile flags:
    per export and per campaign (waves, order, source-group warnings, isolation)."""
    failures: list[str] = []
    agreed = compared = 0
    for i, exports in enumerate(generated(SEED, pg_shapes(), "public")):
        directory = tmp_path / f"c{i}"
        directory.mkdir()
        result = plan_both(directory, pg_document, exports, pg_parity)
        failures += [f"config {i}: {d}" for d in remaining(result)]
        a, c = agreement(result.rivet, result.ours)
        agreed, compared = agreed + a, compared + c
    print(f"\nagreement postgres, {GENERATED} generated configs: {agreed}/{compared} exports")
    assert failures == []
    assert agreed == compared > GENERATED * PER_CONFIG // 2


@pytest.mark.mariadb
def test_every_shape_plans_as_rivet_plans_it_on_mariadb(
        my_parity: tuple[str, str], tmp_path: Path) -> None:
    url, via = my_parity
    exports = [parity_seed.export_entry(n, s, schema=None) for n, s in parity_seed.EXPORTS.items()]
    result = plan_both(tmp_path, my_document, exports, url, rivet_via=via)
    assert [str(d) for d in remaining(result)] == []
    agreed, compared = agreement(result.rivet, result.ours)
    print(f"\nagreement mariadb, every shape: {agreed}/{compared} exports")
    assert compared == len(exports) - len(result.refused) and agreed == compared


@pytest.mark.mariadb
def test_generated_configs_plan_as_rivet_plans_them_on_mariadb(
        my_parity: tuple[str, str], tmp_path: Path) -> None:
    url, via = my_parity
    failures: list[str] = []
    agreed = compared = 0
    for i, exports in enumerate(generated(SEED + 1, parity_seed.EXPORTS, None)):
        directory = tmp_path / f"c{i}"
        directory.mkdir()
        result = plan_both(directory, my_document, exports, url, rivet_via=via)
        failures += [f"config {i}: {d}" for d in remaining(result)]
        a, c = agreement(result.rivet, result.ours)
        agreed, compared = agreed + a, compared + c
    print(f"\nagreement mariadb, {GENERATED} generated configs: {agreed}/{compared} exports")
    assert failures == []
    assert agreed == compared > GENERATED * PER_CONFIG // 2


MISSING = {
    "missing_table": {"table": "no_such_table", "mode": "full"},
    "missing_cursor": {"table": "small", "mode": "incremental", "cursor_column": "no_such_col"},
    "missing_chunk_column": {"table": "mid", "mode": "chunked", "chunk_column": "no_such_col"},
    "ok": {"table": "small", "mode": "full"},
}


@pytest.mark.postgres
def test_an_unreadable_source_is_planned_low_confidence_where_rivet_refuses(
        pg_parity: str, tmp_path: Path) -> None:
    """Deviation (docs/compatibility.md): 0.32.2 refuses the whole plan when preflight cannot
    read the source (`RIVET_PLAN_SOURCE_UNREADABLE`); rivet-ci plans that export low-confidence
    and says why. A chunk column that does not exist is refused by both (rivet's message)."""
    exports = [parity_seed.export_entry(n, s, schema="public") for n, s in MISSING.items()]
    result = plan_both(tmp_path, pg_document, exports, pg_parity)
    assert set(result.unreadable) == {"missing_table", "missing_cursor"}
    assert all("RIVET_PLAN_SOURCE_UNREADABLE" in e for e in result.unreadable.values())
    assert set(result.refused) == {"missing_chunk_column"}
    assert result.refusal_mismatches == []  # ours: planned, verdict `unknown (preflight failed)`
    assert [str(d) for d in compare(result.rivet, result.ours)] == []


@pytest.mark.mariadb
def test_a_missing_column_plans_degraded_on_mariadb_as_rivet_does(
        my_parity: tuple[str, str], tmp_path: Path) -> None:
    """0.32.2 on MySQL/MariaDB plans an export whose cursor column is missing on the source as
    DEGRADED with nothing known (on PostgreSQL it refuses the plan); so does rivet-ci."""
    url, via = my_parity
    exports = [parity_seed.export_entry(n, s, schema=None) for n, s in MISSING.items()]
    result = plan_both(tmp_path, my_document, exports, url, rivet_via=via)
    assert set(result.unreadable) == {"missing_table"}
    assert set(result.refused) == {"missing_chunk_column"}
    assert result.refusal_mismatches == []
    assert result.rivet.artifacts["missing_cursor"]["diagnostics"]["verdict"] == "DEGRADED"
    assert [str(d) for d in compare(result.rivet, result.ours)] == []


def test_the_proxy_rewrites_only_mysqls_statement_timeout() -> None:
    """MySQL's `max_execution_time` (ms) becomes MariaDB's `max_statement_time` (s) in a
    COM_QUERY (0x03) packet; any other packet passes unchanged."""
    query = b"\x03SET SESSION max_execution_time = 30000"
    assert rewrite_query(query) == b"\x03SET SESSION max_statement_time = 30"
    assert rewrite_query(b"\x03SET max_execution_time=1500, x=1") == (
        b"\x03SET max_statement_time=1.5, x=1")
    assert rewrite_query(b"\x03SELECT 1") == b"\x03SELECT 1"
    assert rewrite_query(b"\x16max_execution_time = 5") == b"\x16max_execution_time = 5"


# --- rivet's demo (demo/demo_pipeline*.yaml), on tables of its shapes (support.rivet_demo) ------


@pytest.mark.postgres
def test_rivets_demo_plans_exactly_as_rivet_plans_it_on_postgres(
        pg_url: str, tmp_path: Path) -> None:
    url = parity_seed.fresh_database(pg_url, "rivet_demo")
    rivet_demo.seed_postgres(url)
    document = rivet_demo.postgres_demo(URL_ENV)
    result = plan_both(tmp_path, lambda exports: {**document, "exports": exports},
                       document["exports"], url)
    assert result.refused == result.unreadable == {}
    assert [str(d) for d in remaining(result)] == []
    agreed, compared = agreement(result.rivet, result.ours)
    print(f"\nagreement postgres, rivet's demo: {agreed}/{compared} exports")
    assert agreed == compared == 12


@pytest.mark.mariadb
def test_rivets_mysql_demo_plans_exactly_as_rivet_plans_it_on_mariadb(
        mysql_url: str, tmp_path: Path) -> None:
    url = parity_seed.fresh_database(mysql_url, "rivet_demo")
    rivet_demo.seed_mariadb(url)
    parsed = sa.make_url(url)
    document = rivet_demo.mysql_demo(URL_ENV)
    with mariadb_proxy(parsed.host or "127.0.0.1", parsed.port or 3306) as proxy:
        result = plan_both(tmp_path, lambda exports: {**document, "exports": exports},
                           document["exports"], url,
                           rivet_via=parsed.set(port=proxy.port).render_as_string(
                               hide_password=False))
    assert result.refused == result.unreadable == {}
    assert [str(d) for d in remaining(result)] == []
    agreed, compared = agreement(result.rivet, result.ours)
    print(f"\nagreement mariadb, rivet's demo: {agreed}/{compared} exports")
    assert agreed == compared == 8


# --- history from real runs (`rivet run` writes export_metrics beside the config) --------------

HISTORY_SEED = {
    "postgres": [
        "CREATE TABLE h_ok (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL)",
        "INSERT INTO h_ok SELECT g, timestamptz '2026-01-01' + g * interval '1 minute' "
        "FROM generate_series(1, 3000) g",
        "CREATE INDEX h_ok_updated_at ON h_ok (updated_at)",
        "CREATE TABLE h_flaky (id bigint PRIMARY KEY, v int)",
        "INSERT INTO h_flaky SELECT g, g FROM generate_series(1, 2000) g",
        "ANALYZE"],
    "mysql": [
        "CREATE TABLE h_ok (id bigint PRIMARY KEY, updated_at datetime NOT NULL, "
        "KEY h_ok_updated_at (updated_at))",
        "INSERT INTO h_ok SELECT seq, '2026-01-01' + INTERVAL seq MINUTE FROM seq_1_to_3000",
        "CREATE TABLE h_flaky (id bigint PRIMARY KEY, v int)",
        "INSERT INTO h_flaky SELECT seq, seq FROM seq_1_to_2000",
        "ANALYZE TABLE h_ok, h_flaky"],
}


def history_parity(server_url: str, source_type: str, tmp_path: Path, *,
                   proxied: bool = False) -> None:
    """Three real `rivet run`s to a local destination, then one that fails (its table renamed
    away for the run), then the table back: both planners read the same `export_metrics` of
    `.rivet_state.db` beside the config — the measured-rows overlay and the failure penalty."""
    url = parity_seed.fresh_database(server_url, "rivet_history")
    db = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with db.connect() as conn:
        for statement in HISTORY_SEED[source_type]:
            conn.exec_driver_sql(statement)
    schema = "public." if source_type == "postgres" else ""
    dest = {"format": "csv", "destination": {"type": "local", "path": "./out"}}
    config = tmp_path / "rivet.yaml"
    config.write_text(yaml.safe_dump({"source": {"type": source_type, "url_env": URL_ENV},
                                      "exports": [
        {"name": "ok_full", "table": f"{schema}h_ok", "mode": "full", **dest},
        {"name": "ok_inc", "table": f"{schema}h_ok", "mode": "incremental",
         "cursor_column": "updated_at", **dest},
        {"name": "flaky", "table": f"{schema}h_flaky", "mode": "full", **dest}]}))
    parsed = sa.make_url(url)
    with mariadb_proxy(parsed.host or "127.0.0.1", parsed.port or 3306) as proxy:
        via = (parsed.set(port=proxy.port).render_as_string(hide_password=False) if proxied
               else url)
        env = {URL_ENV: rivet_url(via)}

        def rivet_run() -> int:
            return run_rivet(["--no-notify", "run", "-c", str(config)], workdir=tmp_path,
                             env=env, network=True).returncode

        assert [rivet_run() for _ in range(3)] == [0, 0, 0]
        with db.connect() as conn:
            conn.exec_driver_sql("ALTER TABLE h_flaky RENAME TO h_flaky_gone")
        assert rivet_run() != 0
        with db.connect() as conn:
            conn.exec_driver_sql("ALTER TABLE h_flaky_gone RENAME TO h_flaky")
        db.dispose()
        rivet, ours = rivet_plan(config, via), ours_plan(config, url)
    with sqlite3.connect(tmp_path / ".rivet_state.db") as state:
        runs = state.execute(
            "SELECT export_name, status FROM export_metrics ORDER BY id").fetchall()
    assert ("flaky", "failed") in runs and runs.count(("ok_full", "success")) == 4
    assert [str(d) for d in compare(rivet, ours)] == []
    kinds = [r["kind"] for r in ours.artifacts["flaky"]["prioritization"][
        "export_recommendation"]["reasons"]]
    assert "recent_failure_history" in kinds
    assert agreement(rivet, ours) == (3, 3)
    print(f"\nagreement {source_type}, history of real runs: 3/3 exports")


@pytest.mark.postgres
def test_history_of_real_runs_plans_as_rivet_plans_it(pg_url: str, tmp_path: Path) -> None:
    history_parity(pg_url, "postgres", tmp_path)


@pytest.mark.mariadb
def test_history_of_real_runs_plans_as_rivet_plans_it_on_mariadb(
        mysql_url: str, tmp_path: Path) -> None:
    history_parity(mysql_url, "mysql", tmp_path, proxied=True)
