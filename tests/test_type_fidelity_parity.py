"""Type fidelity parity: the real `rivet check --type-report --json [--target T] [--strict]`
(rivet-cli 0.32.2) and `rivet-ci check --live --format json` agree column by column on tables of
every type both servers have, read as `table:` and `query:` exports in both formats, with
`columns:` overrides, for every `--target` (tests/support/type_parity.py).

Every column rivet-ci derives agrees with the binary on every field (source type, rivet type,
Arrow type, fidelity, the target's type, status, note and autoload type), every export on its
`violations` and `target_failures`; `--strict` exits as rivet's does. The columns rivet-ci does
not derive are pinned by name (`unknown`, never safe): docs/compatibility.md#type-fidelity.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from support import parity_seed, type_parity
from support.mysql_proxy import mariadb_proxy
from support.type_parity import (
    MY_EXPORTS,
    MY_UNKNOWN,
    PG_EXPORTS,
    PG_UNKNOWN,
    TARGETS,
    compare,
    ours_check,
    rivet_check,
    write_config,
)

TYPES_DB = "rivet_ci_types"


@pytest.fixture(scope="module")
def pg_types(pg_url: str) -> str:
    url = parity_seed.fresh_database(pg_url, TYPES_DB)
    parity_seed.seed_postgres(url, type_parity.PG_SEED)
    return url


@pytest.fixture(scope="module")
def my_types(mysql_url: str) -> Iterator[tuple[str, str]]:
    """(URL rivet-ci uses, URL rivet uses: the same MariaDB through the rewriting proxy)."""
    url = parity_seed.fresh_database(mysql_url, TYPES_DB)
    parity_seed.seed_mariadb(url, type_parity.MY_SEED)
    parsed = sa.make_url(url)
    with mariadb_proxy(parsed.host or "127.0.0.1", parsed.port or 3306) as proxy:
        yield url, parsed.set(port=proxy.port).render_as_string(hide_password=False)


def _agree(config: Path, url: str, rivet_url: str, target: str | None,
           expected_unknown: set[tuple[str, str | None]]) -> type_parity.Comparison:
    rivet = rivet_check(config, rivet_url, target)
    assert rivet.returncode == 0, rivet.log[-2000:]
    ours = ours_check(config, url, target)
    assert ours.returncode == 0, ours.log[-2000:]
    result = compare(rivet, ours)
    assert result.differences == []
    assert result.unknown == expected_unknown
    print(f"target {target or '-'}: {result.exports} exports, {result.columns} columns agree; "
          f"{len(result.unknown)} unknown")
    return result


@pytest.mark.postgres
@pytest.mark.parametrize("target", TARGETS)
def test_postgres_types_map_as_rivet_maps_them(pg_types: str, tmp_path: Path,
                                               target: str | None) -> None:
    config = write_config(tmp_path, "postgres", PG_EXPORTS)
    result = _agree(config, pg_types, pg_types, target, PG_UNKNOWN)
    assert result.columns > 250


@pytest.mark.mariadb
@pytest.mark.parametrize("target", TARGETS)
def test_mariadb_types_map_as_rivet_maps_them(my_types: tuple[str, str], tmp_path: Path,
                                              target: str | None) -> None:
    url, via_proxy = my_types
    config = write_config(tmp_path, "mysql", MY_EXPORTS)
    result = _agree(config, url, via_proxy, target, MY_UNKNOWN)
    assert result.columns > 150
