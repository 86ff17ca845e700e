"""`rivet-ci action`: the GitHub Action entrypoint — wires settings, git, facts, GitHub.

Order matters for "lose nothing": plan.json and the comment file are written before anything is
posted, so a GitHub outage or a read-only fork token never loses the plan. Exit codes follow the
gate (0 passed, 1 failed by policy); setup problems are 2; a failure to post is reported as a
warning and does not change the gate's verdict.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from rivet_ci import __version__
from rivet_ci.adapters.files import load_facts_file
from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.github import (
    Behaviour,
    CommentAction,
    CommentOutcome,
    GitHubClient,
    GitHubError,
    upsert_comment,
)
from rivet_ci.adapters.preflight.collect import collect_facts
from rivet_ci.context import Context
from rivet_ci.core.comment_view import CommentView, build_comment_view, facts_description
from rivet_ci.core.config_loader import LoadedConfig
from rivet_ci.core.diff import Finding
from rivet_ci.core.diff_document import pull_request_document
from rivet_ci.core.document import dump_json
from rivet_ci.core.facts import FactsFile
from rivet_ci.core.marker import make_marker
from rivet_ci.core.planner import FactsOrigin
from rivet_ci.core.policy import PolicyError, evaluate_gate, parse_policy
from rivet_ci.core.problems import Problem
from rivet_ci.errors import UsageError
from rivet_ci.event import read_event
from rivet_ci.exit_codes import GATE_FAILED, OK
from rivet_ci.live_facts import with_state_history
from rivet_ci.pull_request import PullRequestPlan, plan_pull_request
from rivet_ci.redaction import redactor_for
from rivet_ci.render import STEP_SUMMARY_LIMIT, render_within_limit, template_environment
from rivet_ci.settings import ActionSettings, write_outputs

MAX_ANNOTATIONS = 10
# Outcomes after which the PR shows this run's comment.
POSTED = frozenset({CommentAction.CREATED, CommentAction.UPDATED, CommentAction.UNCHANGED,
                    CommentAction.RECREATED})


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("action", help="GitHub Action entrypoint (reads INPUT_* and GITHUB_*)",
                   description="Run as the rivet-ci GitHub Action: inputs come from INPUT_<NAME> "
                               "variables, the pull request from GITHUB_EVENT_PATH.")



def pull_request_refs(event: dict[str, Any], settings: ActionSettings) -> tuple[int | None, str,
                                                                                 str]:
    """(PR number, base, head) from the event, with `base-ref` overriding the base."""
    pr = event.get("pull_request")
    if isinstance(pr, dict):
        base = settings.base_ref or str(pr["base"]["sha"])
        return int(pr["number"]), base, str(pr["head"]["sha"])
    if settings.base_ref is None:
        raise UsageError(f"event {settings.event_name!r} is not a pull request: set the "
                         f"`base-ref` input to compare against a branch or commit")
    return None, settings.base_ref, settings.sha or "HEAD"


def load_facts(settings: ActionSettings) -> tuple[FactsFile | None, list[Problem], FactsOrigin]:
    path = settings.facts_path
    if path is None:
        return None, [], FactsOrigin(kind="none")
    facts, problems = load_facts_file(path, root=settings.workspace)
    return facts, problems, FactsOrigin(kind="file", path=settings.for_output(path),
                                        captured_at=facts.captured_at if facts else None)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # Workflow-command properties also end at ',' and '::', as the runner parses them.
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    properties = []
    if finding.file:
        properties.append(f"file={_escape_property(finding.file)}")
        if finding.line:
            properties.append(f"line={finding.line}")
    properties.append(f"title={_escape_property(f'rivet-ci {finding.kind}')}")
    return f"::warning {','.join(properties)}::{_escape_data(finding.message)}"


def run(args: argparse.Namespace, ctx: Context) -> int:
    _ = args
    settings = ActionSettings.from_environ(ctx.environ)
    try:
        policy = parse_policy(settings.fail_on)
    except PolicyError as exc:
        raise UsageError(f"fail-on: {exc}") from None
    event = read_event(settings.event_path)
    number, base, head = pull_request_refs(event, settings)
    repo = GitRepo(settings.workspace)
    repo.ensure_merge_base(base, head)
    facts, facts_problems, origin = load_facts(settings)
    if settings.live and settings.facts_path is not None:
        raise UsageError("set either `facts` or `live: true`, not both")
    state_url = settings.state_url.get_secret_value() if settings.state_url else None
    # Configs are untrusted and filled from this environment: no secret leaves in any output.
    redact = redactor_for(ctx.environ, [state_url])

    def collect(configs: Sequence[LoadedConfig]) -> FactsFile:
        return collect_facts(
            [(c, settings.workspace / c.path) for c in configs], environ=ctx.environ,
            repo_root=settings.workspace, include_history=True, state_url=state_url)

    def add_history(current: FactsFile | None, configs: Sequence[LoadedConfig]) -> FactsFile:
        enriched, notes = with_state_history(current, configs, state_url,
                                             root=settings.workspace, environ=ctx.environ)
        for note in notes:
            ctx.stdout.write(f"::warning title=rivet-ci history::{redact(note)}\n")
        return enriched

    pr = plan_pull_request(repo, base=base, head=head, globs=settings.configs, facts=facts,
                           origin=origin, environ=ctx.environ, facts_problems=facts_problems,
                           collect=collect if settings.live else None,
                           add_history=add_history if state_url and not settings.live else None)
    gate = evaluate_gate(pr.diff, policy)
    timestamp = ctx.timestamp()

    # 1. The artifact first: it must survive anything that fails later.
    settings.output_path.parent.mkdir(parents=True, exist_ok=True)
    settings.output_path.write_text(redact(dump_json(pull_request_document(
        pr.base, pr.head, pr.diff, gate, base_sha=pr.base_sha, head_sha=pr.head_sha,
        changed_files=pr.changed_files_json, generated_at=timestamp, version=__version__))),
        encoding="utf-8")

    # 2. The comment (short enough for GitHub) and the full report (for the step summary).
    env = template_environment(settings.template_path)
    marker = make_marker(settings.gate_id, pr.head_sha, timestamp)
    facts_text = facts_description(origin, ctx.now())

    def view(rows: int | None, details: bool) -> CommentView:
        return build_comment_view(
            pr.diff, gate, gate_id=settings.gate_id, marker=marker, base_sha=pr.base_sha,
            head_sha=pr.head_sha, facts=facts_text, run_url=settings.run_url, max_rows=rows,
            show_details=details)

    body = redact(render_within_limit(view, env)[0])
    short = redact(render_within_limit(view, env, limit=16_000)[0])
    full = redact(render_within_limit(view, env, limit=STEP_SUMMARY_LIMIT)[0])
    settings.comment_path.write_text(body, encoding="utf-8")
    if settings.step_summary is not None:
        with settings.step_summary.open("a", encoding="utf-8") as handle:
            handle.write(full)

    # 3. Annotations on the YAML lines of new blocking findings.
    for finding in gate.blocking[:MAX_ANNOTATIONS]:
        ctx.stdout.write(redact(annotation(finding)) + "\n")

    # 4. Post (or not).
    outcome = post_comment(settings, number=number, body=body, short=short, pr=pr,
                           timestamp=timestamp, ctx=ctx)
    outputs: dict[str, str | int | bool] = {
        "plan-path": settings.for_output(settings.output_path),
        "comment-url": (outcome.url or "") if outcome else "",
        "comment-file": settings.for_output(settings.comment_path),
        "changed-exports": len(pr.diff.changed_exports),
        "new-isolations": sum(1 for c in pr.diff.exports if c.isolation == "new"),
        "new-warnings": sum(1 for w in pr.diff.warnings if w.status == "new"),
        "gate": "passed" if gate.passed else "failed",
        "comment-posted": bool(outcome and outcome.action in POSTED),
    }
    if settings.github_output is not None:
        write_outputs(settings.github_output, outputs)
    ctx.stdout.write(f"rivet-ci: {len(pr.diff.changed_exports)} changed export(s); gate "
                     f"{outputs['gate']} (fail-on: {gate.policy}); plan: {outputs['plan-path']}\n")
    return OK if gate.passed else GATE_FAILED


def post_comment(
    settings: ActionSettings, *, number: int | None, body: str, short: str,
    pr: PullRequestPlan, timestamp: str, ctx: Context,
) -> CommentOutcome | None:
    if settings.comment == "off" or number is None or settings.github_token is None:
        return None
    client = GitHubClient(api_url=settings.api_url,
                          token=settings.github_token.get_secret_value())
    try:
        outcome = upsert_comment(
            client, repo=settings.repository, number=number, body=body, short_body=short,
            gate_id=settings.gate_id, head_sha=pr.head_sha,
            behaviour=Behaviour(settings.comment), timestamp=timestamp)
    except GitHubError as exc:
        ctx.stdout.write(f"::warning title=rivet-ci comment::could not post the comment "
                         f"({exc}); it is saved in {settings.for_output(settings.comment_path)}"
                         f"\n")
        return None
    if outcome.action is CommentAction.FORBIDDEN:
        ctx.stdout.write(
            "::notice title=rivet-ci comment::the token may not comment (a pull request from a "
            "fork?). The comment is saved in "
            f"{settings.for_output(settings.comment_path)}; post it from a trusted workflow_run "
            "with `rivet-ci post` (see docs/action.md).\n")
    return outcome
