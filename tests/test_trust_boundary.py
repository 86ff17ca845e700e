"""Issue 9's attacks, each reproduced against the real pieces, each failing (docs/security.md).

A pull request controls every byte of its head. These tests commit the attack into a real git
repository, run `rivet-ci action` as GitHub runs it (against the local fake GitHub, a fake
PostgreSQL listener on loopback that records what a client sends), and assert the safe outcome.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sqlite3
import struct
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.action import (
    BOT,
    PR,
    REPO,
    TOKEN,
    Workspace,
    add_order_items,
    live_orders_config,
    live_workspace,
    on_base,
    run_action,
)
from support.fake_github import FakeGitHub
from support.pr import git

from rivet_ci.adapters.github.client import GitHubClient, GitHubUnavailable, github_wire
from rivet_ci.adapters.github.forge import GitHubForge
from rivet_ci.core.comment.marker import make_marker
from rivet_ci.review.sticky import upsert_comment

DB_PASSWORD = "s3cr3t-P@ss,word&<x>"


# -- a fake PostgreSQL server that records what clients send -----------------------------------


class PgListener:
    """Accepts PostgreSQL connections on a free loopback port, asks for a cleartext password,
    records every byte received (startup packet, password message), then refuses the login."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError, struct.error):
                    self._session(conn)

    def _read(self, conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        self.received.append(data)
        return data

    def _session(self, conn: socket.socket) -> None:
        while True:  # SSL / GSS requests first: answer "no"
            (length,) = struct.unpack("!I", self._read(conn, 4))
            body = self._read(conn, length - 4)
            if struct.unpack("!I", body[:4])[0] in (80877103, 80877104):
                conn.sendall(b"N")
                continue
            break
        conn.sendall(b"R" + struct.pack("!II", 8, 3))  # AuthenticationCleartextPassword
        self._read(conn, 1)
        (length,) = struct.unpack("!I", self._read(conn, 4))
        self._read(conn, length - 4)
        error = b"SFATAL\0C28P01\0Mpassword authentication failed\0\0"
        conn.sendall(b"E" + struct.pack("!I", len(error) + 4) + error)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()

    @property
    def data(self) -> bytes:
        return b"".join(self.received)


@pytest.fixture
def listeners() -> Iterator[tuple[PgListener, PgListener]]:
    trusted, attacker = PgListener(), PgListener()
    yield trusted, attacker
    trusted.close()
    attacker.close()


PG_CONFIG = """source:
  type: postgres
  url_file: db.url
exports:
  - name: orders
    table: public.orders
    mode: full
    format: parquet
    destination: {type: local}
"""


def test_a_pr_editing_only_the_url_file_sends_no_secret_to_a_listener_it_chose(
        gh: FakeGitHub, ws: Workspace, listeners: tuple[PgListener, PgListener]) -> None:
    trusted, attacker = listeners
    password = "s3cr3tPassw0rd-url-safe"
    on_base(ws, {"rivet/pg.yaml": PG_CONFIG,
                 "db.url": f"postgresql://etl:${{DB_PASSWORD}}@127.0.0.1:{trusted.port}/orders"})
    git(ws.path, "merge", "-q", "main")  # the feature branch starts from that base
    head = ws.repo.commit("point the source elsewhere", {
        "db.url": f"postgresql://x:${{DB_PASSWORD}}${{INPUT_GITHUB-TOKEN}}@127.0.0.1:"
                  f"{attacker.port}/x",
        # (touched, so it is in the review and probed)
        "rivet/pg.yaml": PG_CONFIG + "# the source moves\n"})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, facts="", live="true",
                           env={"DB_PASSWORD": password})
    assert result.code == 0, result.stderr + result.stdout
    # The PR's listener never heard from the job; the base revision's one did (it is trusted).
    assert attacker.connections == 0 and attacker.data == b""
    assert trusted.connections >= 1
    assert password.encode() in trusted.data  # the listener records what a client sends
    for secret in (password, TOKEN):
        assert secret.encode() not in attacker.data
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    kinds = {(f["kind"], f["file"]) for f in plan["diff"]["findings"]}
    assert ("url-file-changed-in-pr", "db.url") in kinds


def test_a_url_file_change_outside_the_review_is_reported_without_connecting(
        gh: FakeGitHub, ws: Workspace, listeners: tuple[PgListener, PgListener]) -> None:
    """The PR changes only the url file of a config it does not touch: that config is outside
    the review, so nothing is probed — and the change is still reported."""
    trusted, attacker = listeners
    on_base(ws, {"rivet/pg.yaml": PG_CONFIG,
                 "db.url": f"postgresql://etl:${{DB_PASSWORD}}@127.0.0.1:{trusted.port}/orders"})
    git(ws.path, "merge", "-q", "main")
    head = ws.repo.commit("point the source elsewhere", {
        "db.url": f"postgresql://x:${{DB_PASSWORD}}@127.0.0.1:{attacker.port}/x"})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, facts="", live="true",
                           env={"DB_PASSWORD": "s3cr3t-never-sent"},
                           fail_on="url-file-changed-in-pr")
    assert result.code == 1, result.stderr + result.stdout  # blocked by the finding
    assert attacker.connections == 0 and trusted.connections == 0
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert ("url-file-changed-in-pr", "db.url") in {
        (f["kind"], f["file"]) for f in plan["diff"]["findings"]}
    assert "rivet/pg.yaml" not in {c["path"] for c in plan["configs"]}


def test_placeholders_in_pr_content_are_filled_only_from_env_allow(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = ws.repo.commit("leak", {"rivet/leak.yaml": (
        "source:\n  type: postgres\n  url_env: ORDERS_REPLICA_URL\nexports:\n"
        "  - name: leak\n    table: ${SCHEMA}.t\n    mode: full\n"
        "    source_group: ${DB_PASSWORD}\n    format: csv\n    destination: {type: stdout}\n"
        "  - name: fine\n    table: public.t\n    mode: full\n"
        "    source_group: ${SCHEMA}_group\n    format: csv\n    destination: {type: stdout}\n")})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, env_allow="SCHEMA",
                           env={"DB_PASSWORD": DB_PASSWORD, "SCHEMA": "analytics"})
    plan = (ws.path / "plan.json").read_text(encoding="utf-8")
    assert "${DB_PASSWORD} is not set" in plan  # kept as written, never filled
    assert '"analytics_group"' in plan  # the allowed name was filled
    # An unset placeholder depends on the environment: a note (docs/configs.md), not a block.
    assert result.code == 0

    refused, _ = run_action(gh, ws, head, env_allow="SCHEMA, DB_PASSWORD")
    assert refused.code == 2
    assert "env-allow" in refused.stderr and "look secret" in refused.stderr


# -- the gate cannot be bypassed through the facts file -----------------------------------------


@pytest.mark.parametrize("facts_text", [
    "format: rivet-ci-facts/1\nexports: {}\n",  # no facts: nothing looks heavy any more
    "format: [broken\n",  # unreadable: "facts problems" used to count as already on base
])
def test_editing_or_breaking_facts_in_the_pr_does_not_turn_a_blocked_pr_green(
        gh: FakeGitHub, ws: Workspace, facts_text: str) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    blocked, _ = run_action(gh, ws, head, fail_on="config-error, new-isolation")
    assert blocked.code == 1
    head = ws.repo.commit("and the facts", {"facts.yaml": facts_text})
    gh.set_head(REPO, PR, head)
    again, _ = run_action(gh, ws, head, fail_on="config-error, new-isolation", minutes=5)
    assert again.code == 1, again.stdout
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert plan["diff"]["gate"]["passed"] is False
    assert {"kind": "facts-changed-in-pr", "file": "facts.yaml", "status": "new"}.items() <= next(
        f for f in plan["diff"]["findings"] if f["kind"] == "facts-changed-in-pr").items()
    # fail-on can make the change itself blocking
    strict, _ = run_action(gh, ws, head, fail_on="facts-changed-in-pr", minutes=6)
    assert strict.code == 1


def test_a_facts_file_the_pr_adds_is_not_used(gh: FakeGitHub, ws: Workspace) -> None:
    head = ws.repo.commit("own facts", {"more-facts.yaml": "format: rivet-ci-facts/1\n"})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, facts="more-facts.yaml")
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert plan["facts"]["origin"] == "none"
    assert any(f["kind"] == "facts-changed-in-pr" for f in plan["diff"]["findings"])
    assert result.code == 0


# -- templates ------------------------------------------------------------------------------------


def test_a_pr_changing_the_template_dir_renders_the_base_template(
        gh: FakeGitHub, ws: Workspace) -> None:
    on_base(ws, {".github/rivet-ci/comment.md.j2":
                 '{% extends "base/comment.md.j2" %}{% block footer %}BASE FOOTER{% endblock %}'})
    head = ws.repo.commit("my template", {
        ".github/rivet-ci/comment.md.j2": "{% include 'leak.txt' %}",
        ".github/rivet-ci/extra.j2": "x"})
    os.symlink("/proc/self/environ", ws.path / ".github/rivet-ci/leak.txt")
    head = ws.repo.commit("symlink", {})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, template_dir=".github/rivet-ci",
                           env={"DB_PASSWORD": DB_PASSWORD})
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    assert "BASE FOOTER" in comment["body"]
    assert "PATH=" not in comment["body"]
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert any(f["kind"] == "template-changed-in-pr" for f in plan["diff"]["findings"])


def test_a_symlink_in_the_trusted_template_dir_is_never_followed(
        gh: FakeGitHub, ws: Workspace) -> None:
    (ws.path / "tpl").mkdir()
    os.symlink("/proc/self/environ", ws.path / "tpl" / "leak.txt")
    (ws.path / "tpl" / "comment.md.j2").write_text("{% include 'leak.txt' %}")
    on_base(ws, {})  # commits tpl/ (with its symlink) on the base branch
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, template_dir="tpl")
    assert result.code == 2
    assert "leak.txt" in result.stderr and "PATH=" not in result.stderr + result.stdout
    assert gh.comments(REPO, PR) == []


# -- writes -------------------------------------------------------------------------------------


def test_a_committed_plan_json_symlink_is_replaced_not_followed(
        gh: FakeGitHub, ws: Workspace, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    os.symlink(victim, ws.path / "plan.json")
    os.symlink(victim, ws.path / "rivet-ci-comment-default.md")
    head = ws.repo.commit("symlinks", {})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head)
    assert result.code == 0, result.stderr
    assert victim.read_text() == "untouched"
    assert not (ws.path / "plan.json").is_symlink()
    assert json.loads((ws.path / "plan.json").read_text())["format"] == "rivet-ci-plan/1"


def test_a_symlinked_output_directory_is_refused(
        gh: FakeGitHub, ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ws.path / "out")
    head = ws.repo.commit("symlinked dir", {})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, output="out/plan.json")
    assert result.code == 2
    assert "symbolic link" in result.stderr
    assert list(outside.iterdir()) == []


@pytest.mark.slow
def test_outputs_are_written_before_posting(gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    gh.inject(500, times=100)  # GitHub is down for the whole run
    result, outputs = run_action(gh, ws, head)
    text = outputs.read_text()
    assert "gate<<" in text and "plan-path<<" in text
    assert result.code == 0


def test_a_non_utf8_file_name_is_a_finding_not_a_crash(gh: FakeGitHub, ws: Workspace) -> None:
    name = os.fsencode(ws.path / "rivet") + b"/bad\xff.yaml"
    with open(name, "w", encoding="utf-8") as handle:
        handle.write("source: {type: postgres, url_env: X}\nexports: []\n")
    head = ws.repo.commit("odd name", {})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head)
    assert result.code == 1, result.stderr  # a new config error, not a crash (3)
    plan = (ws.path / "plan.json").read_text(encoding="utf-8")
    assert "rivet/bad\\\\xff.yaml" in plan and "not valid UTF-8" in plan


# -- the sticky comment ----------------------------------------------------------------------------


def test_a_marker_quoted_below_the_first_line_does_not_make_a_comment_ours(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    quoted = ("Deploy preview is ready.\n\n"
              + make_marker("default", head, "2026-11-29T11:00:00Z") + "\n")
    other = gh.add_comment(REPO, PR, quoted, login=BOT)
    result, _ = run_action(gh, ws, head)
    assert result.code == 0
    comments = gh.comments(REPO, PR)
    assert len(comments) == 2
    assert next(c for c in comments if c["id"] == other)["body"] == quoted


def test_a_502_after_a_successful_create_leaves_no_duplicate(gh: FakeGitHub) -> None:
    gh.add_pull(REPO, PR, head_sha="a" * 40)
    gh.inject_after_success(502, method="POST")
    client = GitHubClient(github_wire(api_url=gh.url, token=TOKEN, sleep=lambda _: None))
    outcome = upsert_comment(GitHubForge(client, REPO, PR), body="hello", short_body="hello",
                             gate_id="default", head_sha="a" * 40,
                             timestamp="2026-11-29T12:00:00Z")
    assert len(gh.comments(REPO, PR)) == 1
    assert outcome.comment_id == gh.comments(REPO, PR)[0]["id"]
    assert len(gh.requests_for("POST")) == 1


class _Drip(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "1000000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_dripping_server_cannot_hold_the_job() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Drip)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = GitHubClient(github_wire(
            api_url=f"http://127.0.0.1:{server.server_port}", token=TOKEN,
            sleep=lambda _: None, request_deadline=1.0, run_deadline=2.5))
        started = time.monotonic()
        with pytest.raises(GitHubUnavailable) as caught:
            client.get_pull(REPO, PR)
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    assert elapsed < 4.0  # the socket timeout (30 s) never fired: the deadlines did
    assert "within" in str(caught.value) or "deadline" in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_the_workspace_git_tree_holds_the_symlinks_the_tests_commit(ws: Workspace) -> None:
    # Sanity: git records a committed symlink as mode 120000 (what rivet_ci.review.trust
    # refuses).
    os.symlink("/etc/hostname", ws.path / "link")
    ws.repo.commit("link", {})
    assert git(ws.path, "ls-tree", "HEAD", "link").startswith("120000")


# -- template sandbox limits ----------------------------------------------------------------------


@pytest.mark.parametrize(("template", "message"), [
    ("{% macro r(n) %}{{ r(n) }}{% endmacro %}{{ r(1) }}", "recurses too deeply"),
    ("{{ 'x' * 100000000 }}", "would build a sequence"),
    ("{{ [1] * 100000000 }}", "would build a sequence"),
    ("{% for i in range(10 ** 9) %}{% endfor %}", "exceeded a limit"),
    ("{{ 'x'.ljust(100000000) }}", "a number over"),
    ("{{ '{:>100000000}'.format('x') }}", "format width"),
    ("{{ 'x' | center(100000000) }}", "a number over"),
    ("{{ 2 ** 100000 }}", "exponents up to 64"),
    ("{% for i in range(90000) %}{% for j in range(90000) %}{% endfor %}{% endfor %}",
     "did not finish"),
])
def test_a_template_that_burns_resources_is_stopped_with_a_clear_error(
        gh: FakeGitHub, ws: Workspace, template: str, message: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rivet_ci.output.render.RENDER_DEADLINE_S", 1.5)
    on_base(ws, {"tpl/comment.md.j2": template})
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    started = time.monotonic()
    result, _ = run_action(gh, ws, head, template_dir="tpl")
    assert result.code == 2, result.stderr  # a setup error, never a crash (3)
    assert message in result.stderr
    assert time.monotonic() - started < 30
    assert (ws.path / "plan.json").is_file()  # the plan was written before rendering


@pytest.mark.parametrize("target", ["/proc/self/environ", "/"])
def test_the_workflows_own_template_dir_refuses_symlinks_and_escapes(
        gh: FakeGitHub, ws: Workspace, target: str) -> None:
    head = add_order_items(ws)
    tpl = ws.path / ".rivet-ci-templates"  # untracked: the workflow's own directory
    tpl.mkdir()
    (tpl / "leak").symlink_to(target)
    (tpl / "comment.md.j2").write_text("{% include 'leak' %}{% include '../facts.yaml' %}")
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, template_dir=".rivet-ci-templates",
                           env={"DB_PASSWORD": DB_PASSWORD})
    assert result.code == 2
    assert "leak" in result.stderr and "symbolic link" in result.stderr
    assert "PATH=" not in result.stdout + result.stderr
    (tpl / "comment.md.j2").write_text("{% include '../facts.yaml' %}")
    escaped, _ = run_action(gh, ws, head, template_dir=".rivet-ci-templates", minutes=1)
    assert escaped.code == 2 and "facts.yaml" in escaped.stderr
    assert gh.comments(REPO, PR) == []


def test_a_state_database_the_pr_commits_is_not_used(
        gh: FakeGitHub, tmp_path: Path, pg_db: str) -> None:
    ws = live_workspace(tmp_path)
    state = tmp_path / "forged.db"
    with sqlite3.connect(state) as db:
        db.execute("CREATE TABLE export_metrics (id INTEGER PRIMARY KEY, export_name TEXT, "
                   "duration_ms INT, status TEXT, retries INT)")
        db.executemany("INSERT INTO export_metrics (export_name, duration_ms, status, retries) "
                       "VALUES (?, 1000, 'failed', 3)", [("orders",), ("customers",)] * 5)
    (ws.path / "rivet" / ".rivet_state.db").write_bytes(state.read_bytes())
    # (orders.yaml changed: in the review, so its history is read)
    head = ws.repo.commit("forged history", {
        "rivet/orders.yaml": live_orders_config(reconcile_customers=True)})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, facts="", live="true", env={"SRC_URL": pg_db})
    assert result.code == 0, result.stderr + result.stdout
    text = (ws.path / "plan.json").read_text(encoding="utf-8")
    plan = json.loads(text)
    assert ("state-changed-in-pr", "rivet/.rivet_state.db") in {
        (f["kind"], f["file"]) for f in plan["diff"]["findings"]}
    assert "recent_failure_history" not in text  # the PR's history was not read
    # The same database on the base branch is trusted, and its history is used.
    ws.repo.checkout("main")
    (ws.path / "rivet" / ".rivet_state.db").write_bytes(state.read_bytes())
    ws.base_sha = ws.repo.commit("history on base", {})
    ws.repo.checkout("feature")
    trusted, _ = run_action(gh, ws, head, facts="", live="true", env={"SRC_URL": pg_db},
                            minutes=1)
    assert trusted.code == 0, trusted.stderr
    assert "recent_failure_history" in (ws.path / "plan.json").read_text(encoding="utf-8")


def test_a_state_database_change_outside_the_review_is_reported(
        gh: FakeGitHub, tmp_path: Path, pg_db: str) -> None:
    """The PR commits only a state database beside a config it does not touch: nothing is in
    the review (nothing probed, no history read), and the change is still reported."""
    ws = live_workspace(tmp_path)
    (ws.path / "rivet" / ".rivet_state.db").write_bytes(b"SQLite format 3\0forged")
    head = ws.repo.commit("forged history", {})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, facts="", live="true", env={"SRC_URL": pg_db},
                           fail_on="state-changed-in-pr")
    assert result.code == 1, result.stderr + result.stdout  # blocked by the finding
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert plan["configs"] == [] and plan["pull_request"]["review"]["head_files"] == 1
    assert ("state-changed-in-pr", "rivet/.rivet_state.db") in {
        (f["kind"], f["file"]) for f in plan["diff"]["findings"]}


def test_every_test_named_in_the_security_doc_exists() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "security.md").read_text()
    modules = list(Path(__file__).parent.glob("test_*.py"))
    named = set(re.findall(r"\b(test_[a-z0-9_]+)\b", doc)) - {p.stem for p in modules}
    defined = {m for path in modules
               for m in re.findall(r"^def (test_[a-z0-9_]+)", path.read_text(), re.M)}
    assert named and named <= defined, sorted(named - defined)
