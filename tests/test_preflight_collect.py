"""Orchestration: dedup of probes, connection limits, statement economy, progress, query_file."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from support.db_seed import collect, collect_all, engine, with_required_keys, write_config

from rivet_ci.adapters.preflight.base import PreflightOptions
from rivet_ci.adapters.preflight.collect import collect_facts
from rivet_ci.core.config.models import ExportConfig

APP = "rivet-ci-preflight"
EXPORTS = [
    {"name": "orders", "table": "orders", "mode": "incremental", "cursor_column": "updated_at"},
    {"name": "customers", "table": "customers", "mode": "incremental", "cursor_column": "id"},
    {"name": "small", "mode": "incremental", "cursor_column": "id",
     "query": "SELECT id, name FROM customers WHERE id < 500"},
]


def reset_statements(url: str) -> None:
    db = engine(url)
    with db.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
    db.dispose()


def statements(url: str) -> dict[str, int]:
    """Top-level statements run in the test database since the reset: text → calls."""
    db = engine(url)
    with db.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT s.query, s.calls FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = current_database() AND s.toplevel "
            "AND s.query NOT LIKE '%pg_stat_statements%'")).all()
    db.dispose()
    out: dict[str, int] = {}
    for query, calls in rows:
        out[query] = out.get(query, 0) + int(calls)
    return out


@pytest.mark.postgres
def test_identical_probes_of_base_and_head_run_once(pg_db: str, tmp_path: Path) -> None:
    base = write_config(tmp_path / "base", EXPORTS)
    head_exports = [*EXPORTS, {"name": "added", "table": "sparse", "mode": "chunked",
                               "chunk_column": "id"}]
    head = write_config(tmp_path / "head", head_exports)
    reset_statements(pg_db)
    facts = collect_all(pg_db, [base, head])
    ran = statements(pg_db)
    explains = sum(c for q, c in ran.items() if q.startswith("EXPLAIN"))
    minmax = sum(c for q, c in ran.items()
                 if "min(" in q.lower() and not q.startswith("EXPLAIN"))
    # Three shared queries once, plus the added one, plus the query's range statement (rivet's
    # `SELECT min(id), max(id) FROM (<query>) AS _rivet`), EXPLAINed before it runs.
    assert explains == 5
    assert minmax == 4  # one per table (orders, customers, sparse), one over the query
    base_facts = facts.configs[base[0].path].exports
    head_facts = facts.configs[head[0].path].exports
    for name in ("orders", "customers", "small"):
        assert base_facts[name] == head_facts[name]
    assert "added" in head_facts and "added" not in base_facts


@pytest.mark.postgres
def test_at_most_three_statements_per_export(pg_db: str, tmp_path: Path) -> None:
    exports = [
        {"name": f"q{i}", "mode": "incremental", "cursor_column": "updated_at",
         "query": f"SELECT id, updated_at FROM orders WHERE amount = {i}"}
        for i in range(20)
    ] + [{"name": f"t{i}", "table": t, "mode": "incremental", "cursor_column": c}
         for i, (t, c) in enumerate([("orders", "updated_at"), ("customers", "id"),
                                     ("sparse", "id"), ("events_noidx", "ts")])]
    loaded = write_config(tmp_path, exports)
    reset_statements(pg_db)
    facts = collect_all(pg_db, [loaded], range_probe_row_bound=100_000)
    assert all(f.preflight_error is None for f in facts.configs[loaded[0].path].exports.values())
    total = sum(statements(pg_db).values())
    # A query's range costs three statements (its EXPLAIN, the EXPLAIN of the min/max statement
    # and, when that plan is bounded, the min/max); a table's two; plus the transactions.
    assert total <= 3 * 20 + 2 * 4 + 16, total


@pytest.mark.postgres
@pytest.mark.parametrize("limit", [1, 2])
def test_connections_per_source_group_are_bounded(
        pg_db: str, tmp_path: Path, limit: int) -> None:
    # Two spellings of the same server are two sources; one group spans both.
    other = make_url(pg_db).set(password="another-spelling").render_as_string(
        hide_password=False)
    configs = []
    for i, url_var in enumerate(["SRC_URL", "SRC_URL", "OTHER_URL", "OTHER_URL"]):
        exports = [{"name": f"e{i}_{j}", "table": "customers", "source_group": "shared",
                    "mode": "incremental", "cursor_column": "id"} for j in range(3)]
        configs.append(write_config(tmp_path / str(i), exports,
                                    source={"type": "postgres", "url_env": url_var}))
    observed: list[int] = []
    watcher = engine(pg_db)
    lock = threading.Lock()

    def progress(done: int, total: int) -> None:
        with watcher.connect() as conn:
            count = conn.execute(sa.text(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = :app"),
                {"app": APP}).scalar_one()
        with lock:
            observed.append(int(count))

    try:
        facts = collect_facts(configs, options=PreflightOptions(max_connections_per_group=limit),
                              environ={"SRC_URL": pg_db, "OTHER_URL": other}, progress=progress)
    finally:
        watcher.dispose()
    assert len(observed) == 12
    assert 1 <= max(observed) <= limit
    assert all(f.preflight_error is None for c in facts.configs.values()
               for f in c.exports.values())


def test_progress_counts_every_export_once(sqlite_db: str, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    exports = [*EXPORTS, {"name": "refused", "query": "DELETE FROM orders"}]
    loaded = write_config(tmp_path, exports)
    collect_all(sqlite_db, [loaded], progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, len(exports)) for i in range(1, len(exports) + 1)]


def test_query_file_is_read_beside_the_config_and_confined(
        sqlite_db: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pipelines" / "sql").mkdir(parents=True)
    (repo / "pipelines" / "sql" / "small.sql").write_text(
        "-- customers below 500\nSELECT id, name FROM customers WHERE id < 500;\n")
    (repo / "shared.sql").write_text("SELECT id FROM customers")
    (tmp_path / "outside.sql").write_text("SELECT 1")
    exports = [
        {"name": "inside", "query_file": "sql/small.sql", "mode": "incremental",
         "cursor_column": "id"},
        {"name": "missing", "query_file": "sql/none.sql"},
    ]
    loaded, path = write_config(repo / "pipelines", exports)
    # rivet refuses `..` and absolute query_file paths (V-E11); preflight confines them anyway,
    # should such an export ever reach it.
    escaping = [ExportConfig.model_validate(with_required_keys(e)) for e in (
        {"name": "up_in_repo", "query_file": "../shared.sql"},
        {"name": "escape", "query_file": "../../outside.sql"},
        {"name": "absolute", "query_file": str(tmp_path / "outside.sql")})]
    loaded = loaded.model_copy(update={"exports": (*loaded.exports, *escaping)})
    env = {"RIVET_CI_SOURCE_URL": sqlite_db}  # SQLite only through the override
    confined = collect_facts([(loaded, path)], environ=env).configs[loaded.path].exports
    assert confined["inside"].preflight_error is None
    # A trusted query's range is read as rivet reads it (the file is small: bounded).
    assert confined["inside"].columns["id"].range_skipped is None
    assert "outside the config's directory" in (confined["up_in_repo"].preflight_error or "")
    in_repo = collect_facts([(loaded, path)], environ=env, repo_root=repo).configs[
        loaded.path].exports
    assert in_repo["up_in_repo"].preflight_error is None
    for name in ("escape", "absolute"):
        assert "outside the repository" in (in_repo[name].preflight_error or ""), name
    assert "cannot read query_file" in (in_repo["missing"].preflight_error or "")


def test_same_export_names_in_two_configs_do_not_collide(sqlite_db: str, tmp_path: Path) -> None:
    a = write_config(tmp_path / "a", [{"name": "x", "table": "customers"}])
    b = write_config(tmp_path / "b", [{"name": "x", "table": "sparse"}])
    facts = collect_all(sqlite_db, [a, b])
    assert facts.configs[a[0].path].exports["x"].row_estimate == 1000
    assert facts.configs[b[0].path].exports["x"].row_estimate == 2000
    assert facts.exports == {}
    assert facts.for_export(b[0].path, "x") == facts.configs[b[0].path].exports["x"]


def test_a_config_cannot_point_at_a_sqlite_file(sqlite_db: str, tmp_path: Path) -> None:
    loaded = write_config(tmp_path, [{"name": "x", "table": "customers"}])
    facts = collect_facts([loaded], environ={"SRC_URL": sqlite_db})
    error = facts.configs[loaded[0].path].exports["x"].preflight_error or ""
    assert "cannot point preflight at a SQLite file" in error


def test_unsupported_source_types_are_per_export_errors(tmp_path: Path) -> None:
    facts = collect(
        "unused", tmp_path, [{"name": "x", "table": "t"}])  # url_env resolves to "unused"
    assert "cannot parse source.url_env (SRC_URL)" in (facts["x"].preflight_error or "")
    loaded = write_config(tmp_path / "m", [{"name": "x", "table": "t"}],
                          source={"type": "mongo", "url": "mongodb://h/db"})
    out = collect_facts([loaded], environ={}).configs[loaded[0].path].exports["x"]
    assert "not mongo" in (out.preflight_error or "")


def test_two_configs_with_one_path_still_finish(sqlite_db: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, [{"name": "x", "table": "customers"}])
    calls: list[tuple[int, int]] = []
    facts = collect_all(sqlite_db, [config, config],
                        progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 2), (2, 2)]
    assert facts.configs[config[0].path].exports["x"].row_estimate == 1000


def test_query_file_text_is_substituted_from_the_placeholders_given(
        sqlite_db: str, tmp_path: Path) -> None:
    # rivet substitutes `${...}` in query_file text (params, then environment; strict).
    (tmp_path / "q.sql").write_text("SELECT id FROM ${TABLE} WHERE id < 100\n")
    (tmp_path / "u.sql").write_text("SELECT id FROM ${MISSING}\n")
    loaded, path = write_config(tmp_path, [{"name": "q", "query_file": "q.sql"},
                                           {"name": "u", "query_file": "u.sql"}])
    env = {"RIVET_CI_SOURCE_URL": sqlite_db}
    facts = collect_facts([(loaded, path)], environ=env,
                          placeholders={"TABLE": "customers"}).configs[loaded.path].exports
    assert facts["q"].preflight_error is None  # EXPLAIN ran on the substituted text
    assert facts["q"].plan_uses_index is not None
    unfilled = collect_facts([(loaded, path)], environ=env).configs[loaded.path].exports
    assert unfilled["q"].preflight_error is not None  # `${TABLE}` itself is no SQL
    assert facts["u"].preflight_error == "query_file 'u.sql': ${MISSING} is not set"
