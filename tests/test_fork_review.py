"""The fork-safe pair end to end, against the local fake GitHub: the pull request's run (a
fork's read-only token) writes plan.json and its comment file; the trusted `workflow_run` job
renders the comment from that plan.json with `rivet-ci post` and posts it.

What the trusted job posts is exactly what the action would have posted (the comment file the
read-only run kept), on a review with everything the comment draws from its data — a narrowed
review, a config error, a cost-unknown export, a waiver line that cannot be used, the picture,
and "since your last push" on the second push — and never anything the fork wrote in its
comment file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.action import (
    PR,
    READ_ONLY,
    REPO,
    TOKEN,
    Workspace,
    example_configs,
    on_base,
    run_action,
)
from support.fake_github import FakeGitHub
from support.pr import Result, config, export, git, incremental, parse_outputs, run_cli

from rivet_ci.core.comment.marker import parse_marker

RUN_ID = 4242  # GITHUB_RUN_ID of every action run (support/action.py)
FORGED = ("<!-- rivet-ci:comment id=default head={head} at=2026-11-29T12:00:00Z -->\n"
          "### rivet-ci · extraction priority\n\n**✅ gate passed** — cc @acme/admins "
          "![ok](https://evil.example/pixel.png) [details](https://evil.example)\n"
          "<details open><summary>approved</summary>merge me</details>\n")


def workflow_run_event(path: Path, head_sha: str) -> Path:
    """The `workflow_run` (completed) payload of the fork's run: GitHub leaves
    `pull_requests` empty for a fork."""
    path.write_text(json.dumps({"action": "completed", "workflow_run": {
        "id": RUN_ID, "event": "pull_request", "status": "completed",
        "conclusion": "success", "head_branch": "feature", "head_sha": head_sha,
        "head_repository": {"full_name": "contributor/warehouse",
                            "owner": {"login": "contributor"}},
        "repository": {"full_name": REPO}, "pull_requests": []}}), encoding="utf-8")
    return path


def fork_run(gh: FakeGitHub, ws: Workspace, head: str) -> tuple[str, Path]:
    """The pull request's run with the fork's read-only token: the comment it kept, and its
    plan.json (the artifact the trusted job downloads)."""
    gh.set_head(REPO, PR, head)
    result, outputs_file = run_action(gh, ws, head, token=READ_ONLY, fork=True,
                                      fail_on="config-error")
    assert result.code in (0, 1), result.stderr
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["comment-posted"] == "false"
    comment = ws.path / outputs["comment-file"]
    return comment.read_text(encoding="utf-8"), ws.path / outputs["plan-path"]


def trusted_post(gh: FakeGitHub, ws: Workspace, plan: Path, head: str) -> Result:
    """The workflow_run job: the artifact downloaded into a directory of its own, no
    checkout of the pull request."""
    job = ws.runner_temp / f"post-{head[:7]}"
    (job / "rivet-ci-plan").mkdir(parents=True)
    (job / "rivet-ci-plan" / "plan.json").write_bytes(plan.read_bytes())
    event = workflow_run_event(job / "event.json", head)
    return run_cli(["post", "--plan", "rivet-ci-plan/plan.json", "--run-id", str(RUN_ID)],
                   cwd=job, environ={
                       "GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": REPO,
                       "GITHUB_TOKEN": TOKEN, "GITHUB_EVENT_NAME": "workflow_run",
                       "GITHUB_EVENT_PATH": str(event)})


def shared_config(*, extra: dict[str, Any] | None = None) -> str:
    """A file the pull request does not touch, sharing `replica_a` (so the review covers it,
    cut to that group's export: a narrowed review)."""
    exports = [incremental("shared_orders"), incremental("ledger", group="replica_ledger")]
    return config(*exports, *([extra] if extra else []), url_env="LEDGER_URL")


def test_the_trusted_job_posts_exactly_what_the_action_would_have(
        gh: FakeGitHub, ws: Workspace) -> None:
    replica_a, order_items, _ = example_configs()
    on_base(ws, {"rivet/shared.yaml": shared_config(),
                 "rivet/broken.yaml": config(export("audit", source_group="replica_b"))})
    git(ws.path, "merge", "-q", "--no-edit", "main")  # the pull request starts from them
    # Push 1: a second heavy export on replica_a, a new export nobody has facts for, a waiver
    # line on no export, and a file that no longer loads.
    head_a = (replica_a + order_items
              + "\n  - name: mystery\n    table: public.mystery\n    mode: full\n"
                "    source_group: replica_a\n    format: parquet\n"
                "    destination: {type: local}\n"
              + "  # rivet-ci: allow new-isolation because nothing\n")
    first = ws.repo.commit("add order_items", {
        "rivet/replica_a.yaml": head_a,
        "rivet/broken.yaml": config(export("audit", source_group="replica_b", mode="incremental"))})
    gh.add_pull(REPO, PR, head_sha=first, head_repo="contributor/warehouse")

    kept, plan = fork_run(gh, ws, first)
    for expected in ("🔒 runs alone on `replica_a`", "cost unknown", "not planned",
                     "⚠️ not used", "```mermaid", "checked 4 of 4 config files (9 exports)"):
        assert expected in kept, expected
    # The fork controls its run: whatever it leaves beside the plan is never read.
    (plan.parent / "rivet-ci-comment-default.md").write_text(FORGED.format(head=first),
                                                              encoding="utf-8")

    posted = trusted_post(gh, ws, plan, first)

    assert posted.code == 0, posted.stderr
    (comment,) = gh.comments(REPO, PR)
    assert comment["body"] == kept

    # Push 2: the action reads the comment the trusted job posted ("since your last push"),
    # and so does the trusted job.
    second = ws.repo.commit("an unindexed cursor", {"rivet/replica_a.yaml": head_a.replace(
        "cursor_column: updated_at\n    source_group: replica_a",
        "cursor_column: created_at\n    source_group: replica_a")})
    kept, plan = fork_run(gh, ws, second)
    assert "**Since your last push**" in kept

    posted = trusted_post(gh, ws, plan, second)

    assert posted.code == 0, posted.stderr
    (comment,) = gh.comments(REPO, PR)
    assert comment["body"] == kept
    marker = parse_marker(comment["body"])
    assert marker is not None and marker.head_sha == second
    for forged in ("evil.example", "@acme/admins", "<details open>", "merge me"):
        assert all(forged not in c["body"] for c in gh.comments(REPO, PR))
