"""`rivet-ci action`: the GitHub Action entrypoint — wires settings, git, facts, GitHub.

Order matters for "lose nothing": plan.json and the comment file are written before anything is
posted, so a GitHub outage or a read-only fork token never loses the plan. Exit codes follow the
gate (0 passed, 1 failed by policy); setup problems are 2; a failure to post is reported as a
warning and does not change the gate's verdict.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
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
from rivet_ci.commands.plan import facts_errors, raise_facts_error
from rivet_ci.context import Context
from rivet_ci.core.comment_view import (
    CommentView,
    build_comment_view,
    checked_text,
    facts_description,
)
from rivet_ci.core.config_loader import LoadedConfig
from rivet_ci.core.diff import Finding
from rivet_ci.core.diff_document import pull_request_document
from rivet_ci.core.document import dump_json
from rivet_ci.core.facts import FactsFile
from rivet_ci.core.marker import make_marker
from rivet_ci.core.planner import FactsOrigin
from rivet_ci.core.policy import GateResult, evaluate_gate, parse_policy
from rivet_ci.core.problems import Problem
from rivet_ci.errors import UsageError
from rivet_ci.event import read_event
from rivet_ci.exit_codes import GATE_FAILED, OK, USAGE_ERROR
from rivet_ci.live_facts import with_state_history
from rivet_ci.ownership import WorkspaceOwner, adopt, make_parents
from rivet_ci.pull_request import PullRequestPlan, plan_pull_request
from rivet_ci.redaction import redactor_for
from rivet_ci.render import STEP_SUMMARY_LIMIT, render_within_limit, template_environment
from rivet_ci.settings import ActionSettings, SettingsError, write_outputs

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
    """(PR number, base, head) from the event, with `base-ref` overriding the base.

    A payload without the fields a pull request event has is a setup error naming them.
    """
    pr = event.get("pull_request")
    if pr is not None:
        number = pr.get("number") if isinstance(pr, dict) else None
        base = pr.get("base") if isinstance(pr, dict) else None
        head = pr.get("head") if isinstance(pr, dict) else None
        base_sha = base.get("sha") if isinstance(base, dict) else None
        head_sha = head.get("sha") if isinstance(head, dict) else None
        missing = [name for name, value in (("pull_request.number", number),
                                            ("pull_request.base.sha", base_sha),
                                            ("pull_request.head.sha", head_sha))
                   if not isinstance(value, int if name.endswith("number") else str)
                   or isinstance(value, bool) or value == ""]
        if missing:
            raise UsageError(f"malformed event payload {settings.event_path}: "
                             f"{', '.join(missing)} missing or of the wrong type")
        assert isinstance(number, int) and isinstance(base_sha, str)
        assert isinstance(head_sha, str)
        return number, settings.base_ref or base_sha, head_sha
    if settings.base_ref is None:
        raise UsageError(f"event {settings.event_name!r} is not a pull request: set the "
                         f"`base-ref` input to compare against a branch or commit")
    return None, settings.base_ref, settings.sha or "HEAD"


def load_facts(settings: ActionSettings) -> tuple[FactsFile | None, list[Problem], FactsOrigin]:
    path = settings.facts_path
    if path is None:
        return None, [], FactsOrigin(kind="none")
    facts, problems = load_facts_file(path, root=settings.workspace)
    if facts is None:  # cannot be read or parsed: a setup error, never a config error of base
        raise_facts_error(problems)
    return facts, problems, FactsOrigin(kind="file", path=settings.for_output(path),
                                        captured_at=facts.captured_at)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # Workflow-command properties also end at ',' and '::', as the runner parses them.
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


# Kinds whose non-blocking `new` findings still deserve a warning on their line; the rest
# (score movements, low confidence) are notices.
WARNING_KINDS = frozenset({"config-error", "no-configs", "new-isolation", "new-warning"})


def annotation(finding: Finding, level: str = "error") -> str:
    """A workflow command on the finding's YAML line: `::error` for a blocking finding,
    `::warning` / `::notice` for a new one the policy lets pass."""
    properties = []
    if finding.file:
        properties.append(f"file={_escape_property(finding.file)}")
        if finding.line:
            properties.append(f"line={finding.line}")
    properties.append(f"title={_escape_property(f'rivet-ci {finding.kind}')}")
    return f"::{level} {','.join(properties)}::{_escape_data(finding.message)}"


def annotations_for(gate: GateResult, findings: Sequence[Finding]) -> list[str]:
    """Blocking findings as errors, other new ones as warnings or notices; at most
    `MAX_ANNOTATIONS` of each level (GitHub shows no more per step)."""
    blocking = set(gate.blocking)
    lines = [annotation(f, "error") for f in gate.blocking[:MAX_ANNOTATIONS]]
    passing = [f for f in findings if f.status == "new" and f not in blocking]
    warnings = [f for f in passing if f.kind in WARNING_KINDS]
    notices = [f for f in passing if f.kind not in WARNING_KINDS]
    lines += [annotation(f, "warning") for f in warnings[:MAX_ANNOTATIONS]]
    lines += [annotation(f, "notice") for f in notices[:MAX_ANNOTATIONS]]
    return lines


def read_settings(environ: Mapping[str, str]) -> tuple[ActionSettings, dict[str, Any]]:
    """Settings and the event payload; every problem with either is reported at once."""
    problems: list[str] = []
    settings: ActionSettings | None = None
    try:
        settings = ActionSettings.from_environ(environ)
    except SettingsError as exc:
        problems.extend(exc.problems)
    event: dict[str, Any] = {}
    event_path = environ.get("GITHUB_EVENT_PATH", "").strip()
    if event_path:
        try:
            event = read_event(Path(event_path))
        except UsageError as exc:
            problems.append(f"GITHUB_EVENT_PATH: {exc}")
    if problems or settings is None:
        raise SettingsError(problems)
    return settings, event


def run(args: argparse.Namespace, ctx: Context) -> int:
    _ = args
    settings, event = read_settings(ctx.environ)
    policy = parse_policy(settings.fail_on)
    number, base, head = pull_request_refs(event, settings)
    owner = WorkspaceOwner.of(settings.workspace)
    repo = GitRepo(settings.workspace, run_as=owner.ids if owner else None)
    repo.ensure_merge_base(base, head)
    facts, facts_problems, origin = load_facts(settings)
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
    checked = pr.checked()

    def write(path: Path, text: str) -> None:
        make_parents(path, owner)
        path.write_text(text, encoding="utf-8")
        adopt(path, owner)

    # 1. The artifact first: it must survive anything that fails later.
    write(settings.output_path, redact(dump_json(pull_request_document(
        pr.base, pr.head, pr.diff, gate, base_sha=pr.base_sha, head_sha=pr.head_sha,
        changed_files=pr.changed_files_json, generated_at=timestamp, version=__version__))))

    # 2. The comment (short enough for GitHub) and the full report (for the step summary).
    env = template_environment(settings.template_path)
    marker = make_marker(settings.gate_id, pr.head_sha, timestamp)
    facts_text = facts_description(origin, ctx.now())

    def view(rows: int | None, details: bool) -> CommentView:
        return build_comment_view(
            pr.diff, gate, gate_id=settings.gate_id, marker=marker, base_sha=pr.base_sha,
            head_sha=pr.head_sha, facts=facts_text, run_url=settings.run_url, max_rows=rows,
            show_details=details, checked=checked)

    body = redact(render_within_limit(view, env)[0])
    short = redact(render_within_limit(view, env, limit=16_000)[0])
    full = redact(render_within_limit(view, env, limit=STEP_SUMMARY_LIMIT)[0])
    write(settings.comment_path, body)
    if settings.step_summary is not None:
        existed = settings.step_summary.exists()
        with settings.step_summary.open("a", encoding="utf-8") as handle:
            handle.write(full)
        if not existed:
            adopt(settings.step_summary, owner)

    # 3. Annotations on the YAML lines: blocking as errors, other new findings as warnings or
    #    notices; and the facts file's own problems, which make this a setup error.
    for line in annotations_for(gate, pr.diff.findings):
        ctx.stdout.write(redact(line) + "\n")
    errors = facts_errors(facts_problems)
    for problem in errors[:MAX_ANNOTATIONS]:
        ctx.stdout.write(redact(annotation(Finding(
            kind="config-error", status="new", message=problem.render(), file=problem.file,
            line=problem.line))).replace("title=rivet-ci config-error", "title=rivet-ci facts")
            + "\n")

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
        **checked,
        "policy": gate.policy,
    }
    if settings.github_output is not None:
        existed = settings.github_output.exists()
        write_outputs(settings.github_output, outputs)
        if not existed:
            adopt(settings.github_output, owner)
    ctx.stdout.write(f"rivet-ci: {checked_text(checked)}; {len(pr.diff.changed_exports)} "
                     f"changed export(s); gate {outputs['gate']} (fail-on: {gate.policy}); "
                     f"plan: {outputs['plan-path']}\n")
    for path in pr.skipped_facts:
        ctx.stdout.write(f"rivet-ci: {path} is a facts document, not planned as a config\n")
    if errors:
        ctx.stderr.write(f"rivet-ci: error: the facts file has {len(errors)} problem(s):\n"
                         + "".join(f"  {redact(p.render())}\n" for p in errors))
        return USAGE_ERROR
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
