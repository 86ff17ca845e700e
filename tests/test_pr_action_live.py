"""The action with `live: true` (facts from a real PostgreSQL) and with `state-url` alone."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

from support import db_seed
from support.action import (
    PR,
    REPO,
    Workspace,
    live_orders_config,
    live_workspace,
    run_action,
)
from support.fake_github import FakeGitHub
from support.pr import Repo, config, export


def test_live_action_plans_both_sides_on_fresh_facts(
        gh: FakeGitHub, tmp_path: Path, pg_db: str) -> None:
    ws = live_workspace(tmp_path)
    head = ws.repo.commit("add sparse", {"rivet/orders.yaml": config(
        export("orders", table="public.orders", mode="incremental",
               cursor_column="updated_at", source_group="replica_a"),
        export("customers", table="public.customers", source_group="replica_a"),
        # (with a checkpoint: not downgraded to a snapshot, so the sparse range counts)
        export("sparse", table="public.sparse", mode="chunked", chunk_column="id",
               chunk_size=200_000, chunk_checkpoint=True, source_group="replica_a"),
        url_env="SRC_URL")})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, facts="", live="true", env={"SRC_URL": pg_db})
    assert result.code == 0, result.stderr + result.stdout
    plan = json.loads((ws.path / "plan.json").read_text())
    assert plan["facts"]["origin"] == "live"
    added = [e for e in plan["diff"]["exports"] if e["status"] == "added"]
    assert [e["export_name"] for e in added] == ["sparse"]
    assert "sparse_range_risk" in added[0]["reasons_added"]
    # Unchanged exports got the same live facts on both sides: no spurious changes.
    assert {e["export_name"] for e in plan["diff"]["exports"]} == {"sparse"}
    assert db_seed.PG_SECRET not in (ws.path / "plan.json").read_text() + result.stdout


def test_state_url_folds_run_history_into_both_sides(
        gh: FakeGitHub, tmp_path: Path) -> None:
    ws = live_workspace(tmp_path)
    facts = {"format": "rivet-ci-facts/1", "exports": {
        "orders": {"row_estimate": 50_000, "verdict": "EFFICIENT"},
        "customers": {"row_estimate": 50_000, "verdict": "EFFICIENT"}}}
    state = tmp_path / "state.db"
    with sqlite3.connect(state) as db:
        db.execute("CREATE TABLE export_metrics (id INTEGER PRIMARY KEY, export_name TEXT, "
                   "duration_ms INT, status TEXT, retries INT)")
        db.execute("INSERT INTO export_metrics (export_name, duration_ms, status, retries) "
                   "VALUES ('customers', 1000, 'failed', 0)")
    head = ws.repo.commit("reconcile customers", {
        "facts.yaml": json.dumps(facts),
        "rivet/orders.yaml": live_orders_config(reconcile_customers=True)})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, facts="facts.yaml", state_url=str(state))
    assert result.code == 0, result.stderr + result.stdout
    plan = json.loads((ws.path / "plan.json").read_text())
    change = next(e for e in plan["diff"]["exports"] if e["export_name"] == "customers")
    # history applies to both sides, so only the reconcile flag moves the score (−12)
    assert change["score_delta"] == -12
    assert "recent_failure_history" in [r["kind"] for r in change["head"]["reasons"]]
    assert "recent_failure_history" in [r["kind"] for r in change["base"]["reasons"]]


# -- a pull request must not choose where CI connects, nor print CI secrets ---------------------


def test_live_preflight_ignores_a_source_the_pr_redirects(
        gh: FakeGitHub, tmp_path: Path, pg_db: str) -> None:
    import socket
    import threading

    trap = socket.socket()
    trap.bind(("127.0.0.1", 0))
    trap.listen()
    trap.settimeout(0.2)
    hits: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                conn, _ = trap.accept()
            except TimeoutError:
                continue
            hits.append(conn.recv(4096).decode("latin-1"))
            conn.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    ws = live_workspace(tmp_path)
    port = trap.getsockname()[1]
    evil_source = {"type": "postgres",
                   "url": f"postgresql://thief:${{SRC_PASSWORD}}@127.0.0.1:{port}/loot"}
    exports = [export("orders", table="public.orders", mode="incremental",
                      cursor_column="updated_at", source_group="replica_a"),
               export("customers", table="public.customers", source_group="replica_a")]
    head = ws.repo.commit("point the source elsewhere", {
        "rivet/orders.yaml": yaml_config(evil_source, exports),
        "rivet/new.yaml": yaml_config(evil_source, [export("fresh", table="public.customers")]),
    })
    gh.add_pull(REPO, PR, head_sha=head)
    try:
        result, _ = run_action(gh, ws, head, facts="", live="true",
                               env={"SRC_URL": pg_db, "SRC_PASSWORD": "pr-must-not-see-this"})
    finally:
        stop.set()
        watcher.join()
        trap.close()
    assert result.code == 0, result.stderr + result.stdout
    assert hits == []  # never connected where the PR pointed
    plan = json.loads((ws.path / "plan.json").read_text())
    exports_by_name = {e["export_name"]: e for c in plan["configs"] for e in c["exports"]}
    # Existing configs were observed on the base branch's (trusted) source...
    assert exports_by_name["orders"]["diagnostics"]["verdict"] != "unknown (preflight failed)"
    # ...and a config new in the PR gets no live facts at all.
    assert "new in this pull request" in exports_by_name["fresh"]["diagnostics"]["preflight_error"]


def test_secrets_filled_into_planning_fields_never_reach_any_output(
        gh: FakeGitHub, tmp_path: Path) -> None:
    ws = live_workspace(tmp_path)
    secret_url = "postgresql://admin:Sup3rS3cretPw@replica.internal/orders"
    head = ws.repo.commit("exfiltrate", {
        "facts.yaml": json.dumps({"format": "rivet-ci-facts/1"}),
        "rivet/orders.yaml": config(
            export("orders", table="public.orders", source_group="${ORDERS_REPLICA_URL}"),
            export("customers", table="public.customers",
                   source_group="${DEPLOY_API_TOKEN}"),
            export("users", table="public.users", source_group="${DEPLOY_API_TOKEN}"),
            url_env="SRC_URL")})
    gh.add_pull(REPO, PR, head_sha=head)
    result, outputs = run_action(gh, ws, head, facts="facts.yaml", env={
        "ORDERS_REPLICA_URL": secret_url, "DEPLOY_API_TOKEN": "tok_9f8e7d6c5b4a"})
    # `${...}` in pull-request content is filled only from `env-allow` names (none here), so
    # the placeholders stay unset: environment-dependent notes (docs/configs.md), nothing to leak.
    assert result.code == 0, result.stderr + result.stdout
    written = [(ws.path / "plan.json").read_text(), result.stdout, result.stderr,
               (ws.path / "rivet-ci-comment-default.md").read_text(),
               (ws.runner_temp / "summary.md").read_text(), outputs.read_text(),
               *(c["body"] for c in gh.comments(REPO, PR))]
    assert "${DEPLOY_API_TOKEN} is not set" in written[0]
    for text in written:
        assert "Sup3rS3cretPw" not in text
        assert "tok_9f8e7d6c5b4a" not in text


def yaml_config(source: Mapping[str, object], exports: Sequence[Mapping[str, object]]) -> str:
    import yaml

    return yaml.safe_dump({"source": source, "exports": exports}, sort_keys=False)


def test_base_and_head_are_collected_in_one_session(
        gh: FakeGitHub, tmp_path: Path, pg_db: str) -> None:
    # The PR removes `customers`: its facts (base only) come from the same, single collection
    # as the head's — one engine start-up, one connection, one read-only transaction.
    ws = live_workspace(tmp_path)
    head = ws.repo.commit("drop customers", {"rivet/orders.yaml": config(
        export("orders", table="public.orders", mode="incremental",
               cursor_column="updated_at", source_group="replica_a"),
        url_env="SRC_URL")})
    gh.add_pull(REPO, PR, head_sha=head)
    admin = db_seed.engine(pg_db)
    with admin.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
    result, _ = run_action(gh, ws, head, facts="", live="true", env={"SRC_URL": pg_db})
    with admin.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT s.query, s.calls FROM pg_stat_statements s JOIN pg_database d "
            "ON d.oid = s.dbid WHERE d.datname = current_database() AND s.toplevel").all()
    admin.dispose()
    assert result.code == 0, result.stderr + result.stdout
    plan = json.loads((ws.path / "plan.json").read_text())
    removed = [e for e in plan["diff"]["exports"] if e["status"] == "removed"]
    assert [e["export_name"] for e in removed] == ["customers"]
    calls = {str(q): int(n) for q, n in rows}
    assert sum(n for q, n in calls.items() if q.startswith("EXPLAIN")) == 2
    assert sum(n for q, n in calls.items() if "set_config" in q) == 1  # one transaction
    assert sum(n for q, n in calls.items() if "pg_catalog.version()" in q) == 1  # one engine


def test_live_preflight_probes_only_the_files_in_the_review(
        gh: FakeGitHub, tmp_path: Path, pg_db: str) -> None:
    """Safe against the source: a PR changing one file probes that file and the files sharing
    a source group with it — never the rest of the repository's tables."""
    from support.pr import parse_outputs

    orders = config(
        export("orders", table="public.orders", mode="incremental",
               cursor_column="updated_at", source_group="replica_a"),
        export("customers", table="public.customers", source_group="replica_a"),
        url_env="SRC_URL")
    repo = Repo.init(tmp_path / "workspace")
    base = repo.commit("base", {
        "rivet/orders.yaml": orders,
        # shares replica_a (its other export, with no group, is in the document too)
        "rivet/audit.yaml": config(
            export("audit_log", table="public.audit_log", source_group="replica_a"),
            export("big_unindexed", table="public.big_unindexed"), url_env="SRC_URL"),
        # another group, no group: outside the review
        "rivet/events.yaml": config(
            export("events_noidx", table="public.events_noidx", source_group="replica_e"),
            export("sparse", table="public.sparse", mode="chunked", chunk_column="id",
                   chunk_size=200_000, source_group="replica_e"), url_env="SRC_URL"),
        "rivet/cursor.yaml": config(
            export("nullable_cursor", table="public.nullable_cursor"), url_env="SRC_URL"),
    })
    repo.checkout("feature", new=True)
    (tmp_path / "runner").mkdir()
    ws = Workspace(repo, base, tmp_path / "runner")
    head = ws.repo.commit("customers joins nothing new", {
        "rivet/orders.yaml": live_orders_config(reconcile_customers=True)})
    gh.add_pull(REPO, PR, head_sha=head)
    admin = db_seed.engine(pg_db)
    with admin.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
    result, output_file = run_action(gh, ws, head, facts="", live="true",
                                     env={"SRC_URL": pg_db})
    with admin.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT s.query FROM pg_stat_statements s JOIN pg_database d "
            "ON d.oid = s.dbid WHERE d.datname = current_database() AND s.toplevel "
            "AND s.query NOT LIKE '%%pg_stat_statements%%'").all()
    admin.dispose()
    assert result.code == 0, result.stderr + result.stdout
    statements = "\n".join(str(q) for (q,) in rows)
    for table in ("orders", "customers", "audit_log", "big_unindexed"):
        assert f"public.{table}" in statements, (table, statements)
    for table in ("events_noidx", "sparse", "nullable_cursor"):
        assert table not in statements, (table, statements)
    plan = json.loads((ws.path / "plan.json").read_text())
    assert plan["facts"]["origin"] == "live"
    assert [c["path"] for c in plan["configs"]] == ["rivet/audit.yaml", "rivet/orders.yaml"]
    assert [c["path"] for c in plan["base"]["configs"]] == ["rivet/audit.yaml",
                                                            "rivet/orders.yaml"]
    exports = {e["export_name"]: e for c in plan["configs"] for e in c["exports"]}
    assert set(exports) == {"orders", "customers", "audit_log", "big_unindexed"}
    assert exports["audit_log"]["diagnostics"]["verdict"] != "unknown (preflight failed)"
    assert plan["pull_request"]["review"] == {"base_files": 4, "head_files": 4,
                                              "narrowed": True}
    assert plan["summary"]["configs"] == 2
    outputs = parse_outputs(output_file.read_text(encoding="utf-8"))
    assert (outputs["head-configs"], outputs["head-exports"]) == ("2", "4")
    assert (outputs["base-configs"], outputs["base-exports"]) == ("2", "4")


def test_a_query_the_pr_wrote_is_never_run_for_its_range(
        gh: FakeGitHub, tmp_path: Path, pg_db: str) -> None:
    """Live preflight of `query:` exports reads the range as rivet does — `SELECT min(c),
    max(c) FROM (<query>) AS _rivet` — only for queries already on the base branch. A query the
    PR added or changed is only EXPLAINed: its range comes from `min`/`max` of a bare column of
    its single base table (what a `table:` export reads anyway), a join's never."""
    trusted_query = "SELECT id, customer_id, updated_at FROM orders WHERE id < 50"
    pr_join = ("SELECT o.id, o.updated_at FROM orders o JOIN customers c ON c.id = o.customer_id "
               "WHERE c.id < 3")
    pr_bare = "SELECT id, updated_at FROM orders WHERE amount = 7"

    def incremental(name: str, query: str) -> dict[str, object]:
        entry = export(name, query=query, mode="incremental", cursor_column="updated_at",
                       source_group="replica_a")
        del entry["table"]
        return entry

    repo = Repo.init(tmp_path / "workspace")
    base = repo.commit("base", {"rivet/orders.yaml": config(
        incremental("recent", trusted_query),
        incremental("changed", "SELECT id, updated_at FROM orders WHERE id < 40"),
        url_env="SRC_URL")})
    repo.checkout("feature", new=True)
    (tmp_path / "runner").mkdir()
    ws = Workspace(repo, base, tmp_path / "runner")
    head = ws.repo.commit("queries", {"rivet/orders.yaml": config(
        incremental("recent", trusted_query), incremental("changed", pr_join),
        incremental("added", pr_bare), url_env="SRC_URL")})
    gh.add_pull(REPO, PR, head_sha=head)
    admin = db_seed.engine(pg_db)
    with admin.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
    result, _ = run_action(gh, ws, head, facts="", live="true", env={"SRC_URL": pg_db})
    with admin.connect() as conn:
        ran = [str(r[0]) for r in conn.exec_driver_sql(
            "SELECT s.query FROM pg_stat_statements s JOIN pg_database d "
            "ON d.oid = s.dbid WHERE d.datname = current_database() AND s.toplevel").all()]
    admin.dispose()
    assert result.code == 0, result.stderr + result.stdout
    executed = [q for q in ran if not q.startswith("EXPLAIN")]
    # The base's query ran inside rivet's range statement; the PR's queries never ran at all.
    assert any("FROM (SELECT id, customer_id, updated_at FROM orders WHERE id <" in q
               for q in executed), executed
    assert not [q for q in executed if "JOIN customers" in q or "amount =" in q], executed
    plan = json.loads((ws.path / "plan.json").read_text())
    recs = {e["export_name"]: e for e in plan["configs"][0]["exports"]}
    # The bare column of the single table: observed from the table (strong cursor); the join:
    # range not observed, so a weaker cursor.
    assert recs["added"]["computed"]["cursor_range_observed"] is True
    assert recs["changed"]["computed"]["cursor_range_observed"] is False
    assert recs["recent"]["computed"]["cursor_range_observed"] is True


def test_the_plan_of_record_collects_live_facts_for_every_config(
        gh: FakeGitHub, tmp_path: Path, pg_db: str) -> None:
    """A push with `live: true`: every config at the commit probed once (the commit is the
    trusted side), the origin `live`, no request to GitHub, no secret in any output."""
    ws = live_workspace(tmp_path)
    head = ws.repo.commit("a second file", {"rivet/more.yaml": config(
        export("sparse", table="public.sparse", mode="chunked", chunk_column="id",
               chunk_size=200_000, chunk_checkpoint=True, source_group="replica_b"),
        url_env="SRC_URL")})
    result, _ = run_action(gh, ws, head, facts="", live="true", env={"SRC_URL": pg_db},
                           event_name="push")
    assert result.code == 0, result.stderr + result.stdout
    plan = json.loads((ws.path / "plan.json").read_text())
    assert plan["facts"]["origin"] == "live" and plan["coverage"]["scope"] == "repository"
    exports = {e["export_name"]: e for c in plan["configs"] for e in c["exports"]}
    assert set(exports) == {"orders", "customers", "sparse"}
    assert all(e["computed"]["row_estimate"] is not None for e in exports.values())
    assert "sparse_range_risk" in {r["kind"] for r in
                                   exports["sparse"]["prioritization"]["export_recommendation"]
                                   ["reasons"]}
    assert gh.requests == []
    assert db_seed.PG_SECRET not in (ws.path / "plan.json").read_text() + result.stdout
