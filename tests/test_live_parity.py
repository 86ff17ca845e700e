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
from support import parity_seed
from support.live_parity import URL_ENV, Compared, Difference, agreement, compare, plan_both

SEED = 20_26_12_01
GENERATED = 6  # configs per server
PER_CONFIG = 9


@pytest.fixture(scope="module")
def pg_parity(pg_url: str) -> str:
    url = parity_seed.fresh_database(pg_url)
    parity_seed.seed_postgres(url)
    return url


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
    assert failures == []
    assert agreed == compared > GENERATED * PER_CONFIG // 2
