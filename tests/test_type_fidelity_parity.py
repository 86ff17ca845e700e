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
from typing import Any

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


# `--strict` exits as rivet's does: 1 on a fidelity or format refusal (listed in `violations`),
# 1 on a `--target` failure alone (no `violations` entry, `target_failures`), 0 otherwise.
STRICT_CASES = {
    "postgres": [
        ("fidelity", type_parity.export_of("s", query="SELECT id, n_plain FROM everything"),
         None, 1),
        ("csv", type_parity.export_of("s", "csv", query="SELECT id, a_int FROM everything"),
         None, 1),
        ("lossy", type_parity.export_of("s", table="other", columns={"amount": "decimal(11,2)"}),
         None, 1),
        ("lossy and csv", type_parity.export_of(
            "s", "csv", query="SELECT n_76_38 FROM everything",
            columns={"n_76_38": "decimal(76,39)"}), None, 1),
        ("target only", type_parity.export_of("s", query="SELECT id, n_39_0 FROM everything"),
         "bigquery", 1),
        ("name on target", type_parity.export_of(
            "s", query='SELECT "Mixed Case" FROM everything'), "snowflake", 1),
        ("clean", type_parity.export_of("s", query="SELECT id, n_10_2, e, u FROM everything"),
         "bigquery", 0),
        ("clean csv", type_parity.export_of("s", "csv", table="other",
                                            columns={"total": "decimal(20,4)"}), None, 0),
    ],
    "mysql": [
        ("fidelity", type_parity.export_of("s", query="SELECT id, g FROM everything"), None, 1),
        ("csv", type_parity.export_of("s", "csv", query="SELECT id, d65 FROM everything"), None,
         1),
        ("target only", type_parity.export_of("s", query="SELECT id, d65 FROM everything"),
         "snowflake", 1),
        ("clean", type_parity.export_of("s", query="SELECT id, d10, ub, en FROM everything"),
         "duckdb", 0),
    ],
}


def _strict_agree(config: Path, url: str, rivet_url: str, target: str | None,
                  expected: int) -> None:
    rivet = rivet_check(config, rivet_url, target, strict=True)
    ours = ours_check(config, url, target, strict=True)
    assert (rivet.returncode, ours.returncode) == (expected, expected), rivet.log[-1000:]
    assert ours.code == rivet.code == ("RIVET_TYPE_UNSAFE_MAPPING" if expected else None)
    [theirs] = rivet.exports.values()
    [mine] = ours.exports.values()
    assert [v["message"] for v in mine["violations"]] == [
        v["message"] for v in theirs["violations"]]
    assert all(v["fatal"] for v in [*mine["violations"], *theirs["violations"]])
    assert mine["target_failures"] == bool(theirs.get("target_failures"))


def _cases(kind: str) -> list[Any]:
    return [pytest.param(export, target, expected, id=case)
            for case, export, target, expected in STRICT_CASES[kind]]


@pytest.mark.postgres
@pytest.mark.parametrize(("export", "target", "expected"), _cases("postgres"))
def test_postgres_strict_exits_as_rivet_does(pg_types: str, tmp_path: Path,
                                             export: dict[str, object], target: str | None,
                                             expected: int) -> None:
    config = write_config(tmp_path, "postgres", [export])
    _strict_agree(config, pg_types, pg_types, target, expected)


@pytest.mark.mariadb
@pytest.mark.parametrize(("export", "target", "expected"), _cases("mysql"))
def test_mariadb_strict_exits_as_rivet_does(my_types: tuple[str, str], tmp_path: Path,
                                            export: dict[str, object], target: str | None,
                                            expected: int) -> None:
    url, via_proxy = my_types
    config = write_config(tmp_path, "mysql", [export])
    _strict_agree(config, url, via_proxy, target, expected)


def _types_from(config: Path, url: str, *extra: str) -> dict[str, object]:
    out = type_parity.ours_document(config, url, "--target", "bigquery", *extra)
    types = out["types"]
    assert isinstance(types, dict)
    return {k: v for k, v in types.items() if k != "from"}


@pytest.mark.postgres
@pytest.mark.mariadb
def test_a_captured_catalog_gives_the_live_verdicts(pg_types: str, my_types: tuple[str, str],
                                                    tmp_path: Path) -> None:
    """`rivet-ci facts` captures the column types in the catalog; `check --facts` over that
    file says what `check --live` says, column for column, on both servers."""
    for kind, url, exports in (("postgres", pg_types, PG_EXPORTS),
                               ("mysql", my_types[0], MY_EXPORTS)):
        directory = tmp_path / kind
        directory.mkdir()
        config = write_config(directory, kind, exports)
        captured = type_parity.capture_facts(config, url)
        assert captured == 0
        live = _types_from(config, url, "--live")
        from_file = _types_from(config, url, "--facts", "facts.json")
        assert from_file == live


@pytest.mark.postgres
def test_check_live_never_runs_an_exports_query(pg_url: str, pg_types: str,
                                                tmp_path: Path) -> None:
    """`check --live` reads the catalog only: no statement PostgreSQL ran carries the text of
    an export's query (pg_stat_statements), however it is written."""
    marker = "never_run_7f3a"
    exports = [type_parity.export_of("q", query=f"SELECT id AS {marker}, n_10_2 FROM "
                                     "everything WHERE id > 0"),
               type_parity.export_of("j", query=f"SELECT a.id AS {marker}_2 FROM everything a "
                                     "JOIN other b ON a.id = b.id")]
    config = write_config(tmp_path, "postgres", exports)
    admin = sa.create_engine(sa.make_url(pg_types), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
        document = type_parity.ours_document(config, pg_types, "--live")
        with admin.connect() as conn:
            ran = [row[0] for row in conn.exec_driver_sql(
                "SELECT query FROM pg_stat_statements WHERE dbid = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())")]
    finally:
        admin.dispose()
    assert ran, "pg_stat_statements saw nothing"
    assert [q for q in ran if marker in q] == []
    types = document["types"]
    assert isinstance(types, dict)
    assert [c["column"] for e in types["exports"] for c in e["columns"]] == [
        marker, "n_10_2", f"{marker}_2"]
