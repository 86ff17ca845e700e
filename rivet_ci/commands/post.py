"""`rivet-ci post`: publish a comment rendered by another run (the fork-safe second workflow).

A pull request from a fork runs with a read-only token, so the action only writes its comment to
a file; a trusted `workflow_run` workflow downloads that file as an artifact and runs this
command. That workflow holds a write token, so it must never check out or run the pull request's
code, and this command only treats the file as data: it checks its size and its rivet-ci marker,
finds the pull request from the triggering run (never from the artifact), and posts it.

The artifact is written by the fork's own copy of the workflow, so anything in it may be forged.
What is checked: the body fits GitHub's limit, carries a marker for this gate id, and — when the
event names the triggering run's head commit — was rendered for that commit, so a forged "newer"
head cannot shadow a later real comment.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rivet_ci.adapters.github.client import GitHubClient, GitHubError, github_wire
from rivet_ci.adapters.github.event import read_event as read_event_file
from rivet_ci.adapters.github.forge import GitHubForge
from rivet_ci.adapters.github.models import WorkflowRun
from rivet_ci.adapters.github.pulls import AmbiguousPullError, find_pull_for_run
from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT
from rivet_ci.commands.context import Context
from rivet_ci.core.comment.marker import Marker, parse_marker
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import OK
from rivet_ci.review.sticky import Behaviour, CommentAction, upsert_comment

DEFAULT_API_URL = "https://api.github.com"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "post", help="post a comment file rendered by a read-only run (fork-safe workflow_run)",
        description="Post the comment a read-only pull-request run saved to a file. Meant for a "
                    "trusted `workflow_run` workflow: it reads the file as data and never runs "
                    "pull-request code. Token from GITHUB_TOKEN, API from GITHUB_API_URL, "
                    "repository from GITHUB_REPOSITORY (or --repo).")
    p.add_argument("--comment-file", required=True, type=Path, metavar="FILE",
                   help="the Markdown comment written by `rivet-ci action` (comment-file output)")
    p.add_argument("--repo", metavar="OWNER/NAME",
                   help="repository of the pull request (default: GITHUB_REPOSITORY)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--pr", type=int, metavar="N",
                        help="pull request number (default: found from --run-id / the event)")
    target.add_argument("--run-id", type=int, metavar="ID",
                        help="id of the triggering workflow run; must match the workflow_run "
                             "event at GITHUB_EVENT_PATH, which names the pull request")
    p.add_argument("--id", default="default", dest="gate_id",
                   help="gate id the comment must carry (default: default)")
    p.add_argument("--comment", choices=("update", "recreate", "new"), default="update",
                   help="update rivet-ci's comment in place (default), recreate it at the "
                        "bottom, or always post a new one")


def read_comment(path: Path, cwd: Path, gate_id: str) -> tuple[str, Marker]:
    """The comment body and its marker; a `UsageError` when the file cannot be posted."""
    target = path if path.is_absolute() else cwd / path
    try:
        body = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the comment file {path}: {exc}") from None
    if len(body) > GITHUB_COMMENT_LIMIT:
        raise UsageError(
            f"the comment file {path} has {len(body):,} characters, over GitHub's limit of "
            f"{GITHUB_COMMENT_LIMIT:,}; `rivet-ci action` never writes one that long, so it was "
            "not produced by rivet-ci (or was altered)")
    marker = parse_marker(body)
    if marker is None:
        raise UsageError(
            f"the comment file {path} has no rivet-ci marker (<!-- rivet-ci:comment ... -->); "
            "pass the file named by the action's `comment-file` output")
    if marker.gate_id != gate_id:
        raise UsageError(
            f"the comment file {path} is for gate id {marker.gate_id!r}, not {gate_id!r}; "
            f"pass --id {marker.gate_id} if that is the gate you mean")
    return body, marker


def read_event(environ: Mapping[str, str], cwd: Path) -> dict[str, Any] | None:
    raw = environ.get("GITHUB_EVENT_PATH", "").strip()
    if not raw:
        return None
    return read_event_file(cwd / raw, shown=raw)  # an absolute `raw` stays as it is


def workflow_run_of(event: dict[str, Any] | None, run_id: int | None) -> dict[str, Any]:
    """The `workflow_run` object of the event, checked against `--run-id` when given."""
    run = event.get("workflow_run") if event is not None else None
    if not isinstance(run, dict):
        raise UsageError(
            "cannot tell which pull request to comment on: pass --pr N, or run in a "
            "`workflow_run` workflow (GITHUB_EVENT_PATH must hold a workflow_run event)")
    if run_id is not None and run.get("id") != run_id:
        raise UsageError(
            f"--run-id {run_id} is not the run that triggered this workflow "
            f"(workflow_run.id is {run.get('id')!r}); pass "
            "${{ github.event.workflow_run.id }}")
    return run


def _string(data: Any, *keys: str) -> str | None:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, str) and data else None


def pull_of_run(client: GitHubClient, repo: str, run: dict[str, Any]) -> int | None:
    """The one open pull request of the triggering run (`find_pull_for_run`: exactly the
    payload's head repository, branch and commit), from what GitHub reports about the run in
    the event — never from the artifact. None when there is none; a `UsageError` when the
    payload cannot name one or several fit."""
    try:
        workflow_run = WorkflowRun.from_api(run, repo=repo)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise UsageError(f"the workflow_run event is malformed ({type(exc).__name__}: {exc}); "
                         "pass --pr N") from None
    if workflow_run.head_repo is None or workflow_run.head_branch is None:
        raise UsageError("the workflow_run event lacks head_repository.full_name / "
                         "head_branch, which name its pull request; pass --pr N")
    try:
        pull = find_pull_for_run(client, repo=repo, run=workflow_run)
    except AmbiguousPullError as exc:
        raise UsageError(f"{exc}; pass --pr N") from None
    return pull.number if pull is not None else None


def run(args: argparse.Namespace, ctx: Context) -> int:
    env = ctx.environ
    body, marker = read_comment(args.comment_file, ctx.cwd, args.gate_id)
    repo = args.repo or env.get("GITHUB_REPOSITORY", "").strip()
    if not repo:
        raise UsageError("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY")
    token = env.get("GITHUB_TOKEN", "").strip()
    if not token:
        raise UsageError("GITHUB_TOKEN is not set: pass `GITHUB_TOKEN: ${{ github.token }}` in "
                         "the step's env (the workflow needs `pull-requests: write`)")
    api_url = env.get("GITHUB_API_URL", "").strip() or DEFAULT_API_URL
    try:
        client = GitHubClient(github_wire(api_url=api_url, token=token))
    except ValueError as exc:
        raise UsageError(str(exc)) from None

    run_event = None if args.pr is not None else workflow_run_of(
        read_event(env, ctx.cwd), args.run_id)
    if run_event is not None:
        run_head = _string(run_event, "head_sha")
        if run_head is not None and not run_head.lower().startswith(marker.head_sha):
            raise UsageError(
                f"the comment was rendered for commit {marker.head_sha[:12]}, but the "
                f"triggering run built {run_head[:12]}; refusing to post a comment for another "
                "commit")
    try:
        number = args.pr if run_event is None else pull_of_run(client, repo, run_event)
        if number is None:
            ctx.stdout.write("rivet-ci: no open pull request has exactly the triggering run's "
                             "head (closed, merged or pushed to meanwhile?); nothing posted\n")
            return OK
        outcome = upsert_comment(GitHubForge(client, repo, number), body=body, short_body=body,
                                 gate_id=marker.gate_id, head_sha=marker.head_sha,
                                 behaviour=Behaviour(args.comment))
    except ValueError as exc:  # a malformed --repo
        raise UsageError(str(exc)) from None
    except GitHubError as exc:
        raise UsageError(f"could not post the comment: {exc}") from None
    if outcome.action is CommentAction.FORBIDDEN:
        raise UsageError(f"the token may not comment on pull request #{number}: "
                         f"{outcome.detail}; give the workflow `permissions: pull-requests: "
                         "write`")
    messages = {
        CommentAction.SKIPPED_NEWER: "a comment for a newer head commit is already there; "
                                     "left it alone",
        CommentAction.UNCHANGED: "the comment is already up to date",
    }
    done = messages.get(outcome.action, f"comment {outcome.action.value}")
    ctx.stdout.write(f"rivet-ci: pull request #{number}: {done}"
                     f"{f' ({outcome.url})' if outcome.url else ''}\n")
    return OK
