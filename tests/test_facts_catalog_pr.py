"""The headline case of the source catalog, end to end on real PostgreSQL and MariaDB: facts
captured on the base branch by `rivet-ci facts`, then a pull request adding a heavy export on an
existing table to a source group that already has two heavy members — planned from the
catalog, so its cost, its isolation and the campaign warning are in the comment and the gate
fails under the quick start's policy; and the same pull request on a table missing from the
catalog — cost unknown, said so, and blocking (docs/facts.md, "The source catalog")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from support.action import REPO, Workspace, run_action
from support.db_seed import engine
from support.fake_github import FakeGitHub
from support.pr import Repo, run_cli

ROOT = Path(__file__).resolve().parents[1]
HEAVY_ROWS = 10_500_000  # over rivet's 10,000,000: a `huge_table`, cost class high or more
DB = "rivet_catalog_heavy"


def quick_start_policy() -> str:
    """The `fail-on:` of the quick start in docs/action.md (the policy users copy)."""
    text = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    section = text[text.index("## Quick start"):]
    match = re.search(r"^\s+fail-on: (.+)$", section, re.MULTILINE)
    assert match
    return match.group(1).split(" #")[0].strip()  # without the YAML comment


@pytest.fixture(scope="module")
def heavy_pg(pg_url: str) -> Iterator[str]:
    admin = engine(pg_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.exec_driver_sql(f"CREATE DATABASE {DB}")
    admin.dispose()
    url = sa.make_url(pg_url).set(database=DB)
    db = engine(url)
    with db.connect() as conn:
        # Unlogged: the fastest way to a real 10.5M-row table (its rows, index and statistics
        # are a table's like any other).
        conn.exec_driver_sql("CREATE UNLOGGED TABLE events (id bigint NOT NULL, kind int)")
        conn.exec_driver_sql(f"INSERT INTO events SELECT g, mod(g, 7) FROM generate_series(1, "
                             f"{HEAVY_ROWS}) g")
        conn.exec_driver_sql("ALTER TABLE events ADD PRIMARY KEY (id)")
        conn.exec_driver_sql("CREATE TABLE customers (id int PRIMARY KEY, name text)")
        conn.exec_driver_sql("INSERT INTO customers SELECT g, 'c' || g "
                             "FROM generate_series(1, 1000) g")
        conn.exec_driver_sql("VACUUM ANALYZE events, customers")
    db.dispose()
    yield url.render_as_string(hide_password=False)


@pytest.fixture(scope="module")
def heavy_mariadb(mysql_url: str) -> Iterator[str]:
    admin = engine(mysql_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {DB}")
        conn.exec_driver_sql(f"CREATE DATABASE {DB}")
    admin.dispose()
    url = sa.make_url(mysql_url).set(database=DB)
    db = engine(url)
    with db.connect() as conn:
        # MyISAM: seeded several times faster than InnoDB, with an exact TABLE_ROWS.
        conn.exec_driver_sql("CREATE TABLE events (id BIGINT NOT NULL PRIMARY KEY, kind INT)"
                             " ENGINE=MyISAM")
        conn.exec_driver_sql(f"INSERT INTO events SELECT seq, MOD(seq, 7) "
                             f"FROM seq_1_to_{HEAVY_ROWS}")
        conn.exec_driver_sql("CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(20))")
        conn.exec_driver_sql("INSERT INTO customers SELECT seq, CONCAT('c', seq) "
                             "FROM seq_1_to_1000")
        conn.exec_driver_sql("ANALYZE TABLE events, customers")
    db.dispose()
    yield url.render_as_string(hide_password=False)


def _config(engine_type: str, schema: str, *extra: dict[str, Any]) -> str:
    def export(name: str, table: str, **fields: Any) -> dict[str, Any]:
        return {"name": name, "table": f"{schema}{table}", "format": "parquet",
                "destination": {"type": "local"}, "source_group": "shop", **fields}

    exports = [
        export("events_full", "events", mode="chunked", chunk_column="id",
               chunk_size=1_000_000, chunk_checkpoint=True),
        export("events_incremental", "events", mode="incremental", cursor_column="id"),
        export("customers", "customers", mode="full"),
        *({**export(e["name"], e["table"]), **{k: v for k, v in e.items() if k != "table"}}
          for e in extra),
    ]
    document = {"source": {"type": engine_type, "url": "${SHOP_URL}"}, "exports": exports}
    return yaml.safe_dump(document, sort_keys=False)


def _workspace(tmp_path: Path, url: str, engine_type: str, schema: str) -> Workspace:
    """The configs on main, with the facts the trusted job captured from them committed."""
    repo = Repo.init(tmp_path / "workspace")
    (repo.path / "rivet").mkdir()
    (repo.path / "rivet" / "shop.yaml").write_text(_config(engine_type, schema))
    captured = run_cli(["facts", "rivet", "--output", "facts.json"], cwd=repo.path,
                       environ={"SHOP_URL": url})
    assert captured.code == 0, captured.stderr
    assert "catalogued" in captured.stderr
    facts = json.loads((repo.path / "facts.json").read_text())
    assert facts["catalog"] and url.partition("@")[0] not in json.dumps(facts)
    base = repo.commit("base", {"rivet/shop.yaml": _config(engine_type, schema),
                                "facts.json": json.dumps(facts)})
    repo.checkout("feature", new=True)
    runner = tmp_path / "runner"
    runner.mkdir()
    return Workspace(repo, base, runner)


def _plan_export(ws: Workspace, name: str) -> dict[str, Any]:
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    (found,) = [e for c in plan["configs"] for e in c["exports"] if e["export_name"] == name]
    return found  # type: ignore[no-any-return]


CASES = [("postgres", "heavy_pg", "public."), ("mysql", "heavy_mariadb", "")]


@pytest.mark.postgres
@pytest.mark.mariadb
@pytest.mark.parametrize(("engine_type", "fixture", "schema"), CASES, ids=["postgres", "mariadb"])
def test_a_new_heavy_export_is_costed_from_the_catalog_and_a_missing_table_blocks(
        engine_type: str, fixture: str, schema: str, *, request: pytest.FixtureRequest,
        gh: FakeGitHub, tmp_path: Path) -> None:
    url: str = request.getfixturevalue(fixture)
    ws = _workspace(tmp_path, url, engine_type, schema)
    policy = quick_start_policy()
    assert "unplanned-cost" in policy and "new-isolation" in policy

    # 1. A heavy export the base never had, on a table the catalog knows, in group `shop`.
    replay = {"name": "events_replay", "table": "events", "mode": "chunked",
              "chunk_column": "id", "chunk_size": 500_000, "chunk_checkpoint": True}
    head = ws.repo.commit("add events_replay", {
        "rivet/shop.yaml": _config(engine_type, schema, replay)})
    gh.add_pull(REPO, 7, head_sha=head)
    result, _ = run_action(gh, ws, head, facts="facts.json", fail_on=policy)

    assert result.code == 1, result.stdout + result.stderr
    new = _plan_export(ws, "events_replay")
    assert new["diagnostics"]["facts"]["origin"] == "catalog"
    assert new["diagnostics"]["facts"]["relation"].endswith(".events")
    # The larger of the index ends' span (ids 1..10.5M) and the catalog's estimate of the count.
    assert HEAVY_ROWS <= new["computed"]["row_estimate"] < HEAVY_ROWS * 1.02
    assert new["computed"]["chunk_count"] == 21
    rec = new["prioritization"]["export_recommendation"]
    assert rec["cost_class"] == "very_high" and rec["isolate_on_source"] is True
    (comment,) = gh.comments(REPO, 7)
    body = comment["body"]
    (tmp_path / "comment-catalog.md").write_text(body)  # rendered for review by hand
    assert "`events_replay`" in body
    assert re.search(r"\[`events_replay`\]\([^)]*\): 🔒 runs alone on `shop`", body), body
    assert re.search(r"`shop` in `rivet/shop\.yaml`: heavy exports 2 → 3", body), body
    assert "costed from the catalog of " in body.replace("\\", "")
    assert "unknown cost" not in body

    # 2. The same pull request on a table the catalog does not have: cost unknown, blocking.
    clicks = {"name": "clickstream", "table": "clickstream", "mode": "chunked",
              "chunk_column": "id", "chunk_size": 500_000}
    head = ws.repo.commit("clickstream instead", {
        "rivet/shop.yaml": _config(engine_type, schema, clicks)})
    gh.set_head(REPO, 7, head)
    result, _ = run_action(gh, ws, head, facts="facts.json", fail_on=policy)

    assert result.code == 1, result.stdout + result.stderr
    (comment,) = gh.comments(REPO, 7)
    body = comment["body"]
    (tmp_path / "comment-missing.md").write_text(body)
    text = body.replace("\\", "")  # as read: Markdown escapes dropped
    assert "1 export of unknown cost (no facts)" in text  # the verdict line
    table = "public.clickstream" if engine_type == "postgres" else f"{DB}.clickstream"
    assert f"cost unknown — no facts: table {table} is not in the catalog captured " in text
    assert f"cost unknown: no facts: table {table} is not in the catalog" in text  # its row
    assert "it joins source group 'shop', which has 2 heavy exports" in text
    blocking = text[text.index("**Blocking**"):text.index("| export |")]
    assert "❌ [`clickstream`]" in blocking and "cost unknown — no facts" in blocking
    assert _plan_export(ws, "clickstream")["diagnostics"]["facts"]["origin"] == "none"
