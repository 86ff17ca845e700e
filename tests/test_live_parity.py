"""Live plan parity: the real `rivet plan` (rivet-cli 0.32.2) and `rivet-ci plan --live` plan the
same configs on the same databases, and agree export for export (tests/support/live_parity.py).

The tables (`support.parity_seed`) have every shape rivet's planner tells apart; the configs are
one with every shape, then configs generated from a fixed seed with `source_group`s and
`reconcile_required`. rivet stops a config at the first export it refuses: that export must be
refused by us too, with rivet's message, and the rest is planned again. Every difference that
remains is a documented deviation (docs/compatibility.md), pinned here by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from support import parity_seed
from support.live_parity import URL_ENV, Compared, Difference, agreement, compare, plan_both
from support.mysql_proxy import mariadb_proxy, rewrite_query

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
