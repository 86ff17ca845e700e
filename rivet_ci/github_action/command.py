"""`rivet-ci action`: the GitHub Action entrypoint — GitHub's wiring of the run steps every forge
shares (`rivet_ci.commands.ci_run`):

* its settings: the `INPUT_*` and `GITHUB_*` variables (`ActionSettings`) and the event
  payload at `GITHUB_EVENT_PATH`, which names the pull request (or, for a push, a schedule or
  a manual run, the commit of the plan of record);
* its client: every GitHub call of the run — the trusted facts artifact, the previous
  comment, the post — within one deadline, `github-timeout` (`GitHubSession`);
* its runner's log: notices and warnings as workflow commands;
* its effects: `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY` and the annotations on the YAML lines,
  beside the files and the sticky comment every forge writes the same way (`CiEffects`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rivet_ci.adapters.github.client import GitHubClient, GitHubError, github_wire
from rivet_ci.adapters.github.event import PullRequestEvent, read_event
from rivet_ci.adapters.github.forge import GitHubForge
from rivet_ci.adapters.github.runner import blob_linker
from rivet_ci.adapters.http import Deadline
from rivet_ci.commands.ci_inputs import LoadedFacts, fetched_facts
from rivet_ci.commands.ci_run import Change, CiEffects, CiRun, run_ci
from rivet_ci.commands.context import Context
from rivet_ci.commands.plan import facts_errors
from rivet_ci.core.comment.view import LinkFor
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.gate.diff import Finding
from rivet_ci.core.gate.policy import GateResult
from rivet_ci.errors import UsageError
from rivet_ci.github_action.annotations import (
    MAX_ANNOTATIONS,
    annotation,
    annotations_for,
    escape_data,
)
from rivet_ci.github_action.outputs import write_outputs
from rivet_ci.github_action.settings import ActionSettings, SettingsError, input_name
from rivet_ci.output.ownership import adopt
from rivet_ci.output.workflow_commands import workflow_command
from rivet_ci.review.comment import docs_ref
from rivet_ci.review.effects import OutputValue


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("action", help="GitHub Action entrypoint (reads INPUT_* and GITHUB_*)",
                   description="Run as the rivet-ci GitHub Action: inputs come from INPUT_<NAME> "
                               "variables, the pull request from GITHUB_EVENT_PATH.")


def run(args: argparse.Namespace, ctx: Context) -> int:
    _ = args
    settings, event = read_settings(ctx.environ)
    return run_ci(GitHubEntry(settings, event, ctx), ctx)


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


class GitHubEntry:
    """GitHub's side of a run (`ci_run.ForgeEntry`)."""

    forbidden_advice = ("; upload the plan (the plan-path output) and let a trusted "
                        "workflow_run render and post the comment with `rivet-ci post --plan` "
                        "(see docs/action.md).")
    comment_limit = GitHubForge.comment_limit

    def __init__(self, settings: ActionSettings, event: dict[str, Any], ctx: Context) -> None:
        self.settings, self.event, self.ctx = settings, event, ctx
        self.notices = WorkflowNotices(ctx)
        self.session = GitHubSession(settings)  # github-timeout counts from the run's start
        self.docs_at = docs_ref(ctx.environ.get("GITHUB_ACTION_REPOSITORY"),
                                ctx.environ.get("GITHUB_ACTION_REF"))

    @property
    def deadline(self) -> Deadline:
        return self.session.deadline

    def change(self) -> Change:
        """The pull request of the event (its number, base and head, with `base-ref`
        overriding the base). An event that is not a pull request, without `base-ref`, plans
        the commit itself (the plan of record): base and head are both that commit.

        A payload without the fields a pull request event has is a setup error naming them
        (`PullRequestEvent`).
        """
        settings = self.settings
        pr = PullRequestEvent.of(self.event, shown=f"{settings.event_path}")
        if pr is not None:
            return Change(number=pr.number, base=settings.base_ref or pr.base_sha,
                          head=pr.head_sha, record=False)
        head = settings.sha or "HEAD"
        return Change(number=None, base=settings.base_ref or head, head=head,
                      record=settings.base_ref is None)

    def label(self, field: str) -> str:
        return input_name(field)

    def links(self, sha: str) -> LinkFor:
        return blob_linker(self.settings.server_url, self.settings.repository, sha)

    def artifact_facts(self) -> LoadedFacts | None:
        if self.settings.facts_artifact is None:
            return None
        return load_artifact_facts(self.settings, self.event, self.session, self.notices)

    def conversation(self, number: int) -> GitHubForge | None:
        if self.settings.github_token is None:
            return None
        return self.session.forge(number)

    def effects(self, run: CiRun) -> ActionEffects:
        return ActionEffects(run, self, self.ctx)


class WorkflowNotices:
    """Notices and warnings on the workflow run: workflow commands, their text escaped."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def warning(self, title: str, text: str) -> None:
        self.ctx.stdout.write(workflow_command(f"::warning title={title}::{escape_data(text)}")
                              + "\n")

    def notice(self, title: str, text: str) -> None:
        self.ctx.stdout.write(workflow_command(f"::notice title={title}::{escape_data(text)}")
                              + "\n")


class GitHubSession:
    """The run's GitHub calls: one deadline for all of them (`github-timeout`), counted from
    the start of the run and shared by every client the run makes (`Deadline`), so retries,
    waits, a server dripping bytes and the storage host an artifact download is redirected to
    cannot add up past it."""

    def __init__(self, settings: ActionSettings) -> None:
        self.settings = settings
        self.deadline = Deadline(settings.github_timeout)

    def client(self) -> GitHubClient:
        token = self.settings.github_token
        assert token is not None
        return GitHubClient(github_wire(api_url=self.settings.api_url,
                                        token=token.get_secret_value(),
                                        request_deadline=60, deadline=self.deadline))

    def forge(self, number: int) -> GitHubForge:
        """The pull request's conversation, through a client within the deadline."""
        return GitHubForge(self.client(), self.settings.repository, number,
                           server_url=self.settings.server_url)


def load_artifact_facts(settings: ActionSettings, event: Mapping[str, Any],
                        session: GitHubSession, notices: WorkflowNotices) -> LoadedFacts:
    """The facts of the newest trusted artifact (`rivet_ci.adapters.github.artifacts`): only a
    schedule, manual or push run of a commit on the default branch of this repository can have
    made it, so nothing a pull request uploads or commits is used. None usable is a setup
    error."""
    from rivet_ci.adapters.github.artifacts import FactsArtifactError, fetch_trusted_facts

    name = settings.facts_artifact or ""
    if settings.github_token is None:
        raise UsageError("facts-artifact: needs `github-token` (with `actions: read`)")
    repository = event.get("repository")
    default_branch = repository.get("default_branch") if isinstance(repository, dict) else None
    if not isinstance(default_branch, str) or not default_branch:
        raise UsageError("facts-artifact: the event payload names no "
                         "`repository.default_branch`")
    try:
        artifact = fetch_trusted_facts(session.client(), repo=settings.repository,
                                       name=name, default_branch=default_branch,
                                       workflow=settings.facts_workflow)
    except (FactsArtifactError, GitHubError) as exc:
        late = (f"; the run's GitHub calls end after github-timeout "
                f"({settings.github_timeout} s)" if session.deadline.remaining() <= 0 else "")
        raise UsageError(f"facts-artifact: {exc}{late}") from None
    for reason in artifact.refused[:10]:  # a run named like the default branch, off it
        notices.warning("rivet-ci facts", f"not used: {reason}")
    for reason in artifact.skipped[:10]:
        notices.notice("rivet-ci facts", f"not used: {reason}")
    return fetched_facts(artifact.shown, artifact.text, artifact.created_at)


class ActionEffects(CiEffects):
    """The run's effects as GitHub's runner takes them (`review.effects.Effects`): besides the
    files and the sticky comment (`CiEffects`), `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY` and the
    annotations."""

    def __init__(self, run: CiRun, entry: GitHubEntry, ctx: Context) -> None:
        super().__init__(run, entry, ctx)
        self.action = entry.settings

    def write_outputs(self, values: Mapping[str, OutputValue]) -> None:
        path = self.action.github_output
        if path is not None:
            existed = path.exists()
            write_outputs(path, values, self.ctx.redact)
            if not existed:
                adopt(path, self.run.owner)

    def write_summary(self, text: str) -> None:
        if self.action.step_summary is not None:
            self.write(self.action.step_summary, text, append=True)

    def annotate(self, gate: GateResult, findings: Sequence[Finding]) -> list[Problem]:
        return print_annotations(self.ctx, gate, findings, self.run.facts_problems)


def print_annotations(ctx: Context, gate: GateResult, findings: Sequence[Finding],
                      facts_problems: list[Problem]) -> list[Problem]:
    """The workflow's annotations: findings on their YAML lines (blocking as errors, other new
    ones as warnings or notices) and the facts file's own errors, which make the run a setup
    error; returns those errors."""
    for line in annotations_for(gate, findings):
        ctx.stdout.write(workflow_command(line) + "\n")
    errors = facts_errors(facts_problems)
    for problem in errors[:MAX_ANNOTATIONS]:
        ctx.stdout.write(workflow_command(annotation(Finding(
            kind="config-error", status="new", message=problem.render(), file=problem.file,
            line=problem.line)).replace("title=rivet-ci config-error", "title=rivet-ci facts"))
            + "\n")
    return errors
