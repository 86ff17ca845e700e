"""`rivet-ci post`: the comment of a read-only run, rendered and posted by a trusted one (the
fork-safe second workflow).

A pull request from a fork runs with a read-only token, so its run cannot comment; a trusted
`workflow_run` workflow downloads that run's `plan.json` as an artifact and runs this command.
That workflow holds a write token, so it must never check out or run the pull request's code —
and it never posts anything the fork wrote either: the fork's run is the fork's (it runs the
fork's copy of the workflow), so its artifact may hold anything. This command reads `plan.json`
as data only:

- validated as strictly as the plan document's JSON Schema, then for what the schema cannot say
  (`core/formats/diff_reader.py`); anything else is refused (exit 2) naming the field;
- the comment is rendered here, by the trusted template (rivet-ci's own, or `--template-dir`
  of this workflow), through the same view as the action's — every value redacted, bounded
  and escaped — so no mention, link, image or HTML of the fork's reaches the pull request;
- the pull request comes from the triggering run (never from the artifact), and the document
  must be of the commit that run built, so a forged "newer" head cannot shadow a later real
  comment.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rivet_ci.adapters.github.client import GitHubClient, GitHubError, github_wire
from rivet_ci.adapters.github.event import read_event as read_event_file
from rivet_ci.adapters.github.forge import GitHubForge
from rivet_ci.adapters.github.models import WorkflowRun
from rivet_ci.adapters.github.pulls import AmbiguousPullError, find_pull_for_run
from rivet_ci.adapters.github.runner import DEFAULT_SERVER_URL, blob_linker
from rivet_ci.commands.context import Context
from rivet_ci.core.common.limits import MAX_JSON_INPUT_BYTES
from rivet_ci.core.common.patterns import FACTS_MAX_AGE
from rivet_ci.core.gate.waivers import DEFAULT_WAIVERS_FILE
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import OK
from rivet_ci.review.sticky import Behaviour, CommentAction, find_own_comment, upsert_comment

if TYPE_CHECKING:
    from rivet_ci.core.formats.diff_reader import PullRequestRecord

DEFAULT_API_URL = "https://api.github.com"
RENAMED = ("--comment-file is gone: `rivet-ci post` no longer posts a comment a run wrote (a "
           "fork's run may write anything). Pass the run's plan.json instead: `--plan "
           "plan.json` (docs/action.md, \"Pull requests from forks\")")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "post", help="render and post the comment of a read-only run from its plan.json "
                     "(fork-safe workflow_run)",
        description="Render the comment of a read-only pull-request run from the plan.json it "
                    "saved, and post it. Meant for a trusted `workflow_run` workflow: it reads "
                    "the file as data, renders the comment with the trusted template and never "
                    "runs pull-request code. Token from GITHUB_TOKEN, API from GITHUB_API_URL, "
                    "repository from GITHUB_REPOSITORY (or --repo).")
    p.add_argument("--plan", type=Path, metavar="PLAN_JSON",
                   help="the plan.json `rivet-ci action` wrote for the pull request (its "
                        "plan-path output); required")
    p.add_argument("--comment-file", type=Path, help=argparse.SUPPRESS)  # refused: RENAMED
    p.add_argument("--repo", metavar="OWNER/NAME",
                   help="repository of the pull request (default: GITHUB_REPOSITORY)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--pr", type=int, metavar="N",
                        help="pull request number (default: found from --run-id / the event)")
    target.add_argument("--run-id", type=int, metavar="ID",
                        help="id of the triggering workflow run; must match the workflow_run "
                             "event at GITHUB_EVENT_PATH, which names the pull request")
    p.add_argument("--id", default="default", dest="gate_id",
                   help="gate id of the comment, as the action's `id` (default: default)")
    p.add_argument("--comment", choices=("update", "recreate", "new"), default="update",
                   help="update rivet-ci's comment in place (default), recreate it at the "
                        "bottom, or always post a new one")
    # The action's inputs that shape the comment's words: give them as the plan workflow does.
    p.add_argument("--waivers", default=DEFAULT_WAIVERS_FILE, metavar="FILE",
                   help=f"the action's `waivers` input (default: {DEFAULT_WAIVERS_FILE})")
    p.add_argument("--waiver-in-pr", choices=("block", "allow"), default="block",
                   help="the action's `waiver-in-pr` input (default: block)")
    p.add_argument("--facts-max-age", default="7d", metavar="AGE",
                   help="the action's `facts-max-age` input, e.g. 36h or 7d (default: 7d)")
    p.add_argument("--template-dir", type=Path, metavar="DIR",
                   help="a folder of this workflow's own with a comment.md.j2 (the action's "
                        "`template-dir` from the default branch; never the pull request's) "
                        "(default: rivet-ci's own template)")
    p.add_argument("--docs-ref", metavar="REF",
                   help="the commit (or vX.Y.Z tag) of rivet-ci the plan workflow runs (its "
                        "`uses:` ref): the comment's links to the docs point there (default: "
                        "this version's release tag; main before its release)")


def read_plan(path: Path, cwd: Path) -> PullRequestRecord:
    """The review `path` records (`core/formats/diff_reader.read_pull_request`); a
    `UsageError` naming the file and the field when it is not a valid one."""
    from rivet_ci.core.formats.diff_reader import read_pull_request
    from rivet_ci.core.formats.plan_format import DocumentError

    target = path if path.is_absolute() else cwd / path
    try:
        with target.open("rb") as stream:
            data = stream.read(MAX_JSON_INPUT_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the plan {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_JSON_INPUT_BYTES:
        raise UsageError(f"the plan {path} is over {MAX_JSON_INPUT_BYTES:,} bytes")
    try:
        return read_pull_request(data, path=path.as_posix())
    except DocumentError as exc:
        raise UsageError(str(exc)) from None


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


def max_age(text: str) -> timedelta:
    """`36h`, `7d` (the action's `facts-max-age`)."""
    if not FACTS_MAX_AGE.fullmatch(text):
        raise UsageError(f"--facts-max-age {text!r}: give hours or days, like 36h or 7d")
    amount, unit = int(text[:-1]), text[-1]
    return timedelta(hours=amount) if unit == "h" else timedelta(days=amount)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rivet_ci.review.comment import CommentOptions, comment_from_record, is_docs_ref

    if args.comment_file is not None:
        raise UsageError(RENAMED)
    if args.plan is None:
        raise UsageError("pass --plan PLAN_JSON: the plan.json the pull request's run wrote")
    env = ctx.environ
    age = max_age(args.facts_max_age)
    if args.docs_ref is not None and not is_docs_ref(args.docs_ref):
        raise UsageError(f"--docs-ref {args.docs_ref!r}: give the full commit sha (or the "
                         "vX.Y.Z tag) of rivet-ci that the plan workflow `uses:`")
    record = read_plan(args.plan, ctx.cwd)
    repo = args.repo or env.get("GITHUB_REPOSITORY", "").strip()
    if not repo:
        raise UsageError("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY")
    token = env.get("GITHUB_TOKEN", "").strip()
    if not token:
        raise UsageError("GITHUB_TOKEN is not set: pass `GITHUB_TOKEN: ${{ github.token }}` in "
                         "the step's env (the workflow needs `pull-requests: write`)")
    api_url = env.get("GITHUB_API_URL", "").strip() or DEFAULT_API_URL
    server_url = env.get("GITHUB_SERVER_URL", "").strip() or DEFAULT_SERVER_URL
    try:
        client = GitHubClient(github_wire(api_url=api_url, token=token))
    except ValueError as exc:
        raise UsageError(str(exc)) from None

    run_event = None if args.pr is not None else workflow_run_of(
        read_event(env, ctx.cwd), args.run_id)
    run_id = args.run_id
    if run_event is not None:
        run_head = _string(run_event, "head_sha")
        if run_head is not None and run_head.lower() != record.head_sha:
            raise UsageError(
                f"{args.plan} is the plan of commit {record.head_sha[:12]}, but the "
                f"triggering run built {run_head[:12]}; refusing to post a comment for another "
                "commit")
        run_id = run_event.get("id") if isinstance(run_event.get("id"), int) else run_id
    try:
        number = args.pr if run_event is None else pull_of_run(client, repo, run_event)
        if number is None:
            ctx.stdout.write("rivet-ci: no open pull request has exactly the triggering run's "
                             "head (closed, merged or pushed to meanwhile?); nothing posted\n")
            return OK
        forge = GitHubForge(client, repo, number, server_url=server_url)

        def previous_body() -> str | None:  # for "since your last push", as the action reads it
            if args.comment == "new":
                return None
            try:
                found = find_own_comment(forge, gate_id=args.gate_id)
            except GitHubError:  # as in the action: no previous comment, never a failed run
                return None
            return found.body if found is not None else None

        options = CommentOptions(
            gate_id=args.gate_id, comment_limit=GitHubForge.comment_limit,
            run_url=(f"{server_url.rstrip('/')}/{repo}/actions/runs/{run_id}"
                     if run_id is not None else None),
            links=lambda sha: blob_linker(server_url, repo, sha),
            template_dir=None if args.template_dir is None else ctx.cwd / args.template_dir,
            previous_body=previous_body,
            docs_at=args.docs_ref,
            facts_max_age=age)
        bodies = comment_from_record(record, options, redact=ctx.redact,
                                     waiver_in_pr=args.waiver_in_pr, waivers_file=args.waivers)
        outcome = upsert_comment(forge, body=ctx.redact(bodies.comment),
                                 short_body=ctx.redact(bodies.short), gate_id=args.gate_id,
                                 head_sha=record.head_sha, behaviour=Behaviour(args.comment))
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
