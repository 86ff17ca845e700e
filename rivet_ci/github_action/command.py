"""`rivet-ci action`: the GitHub Action entrypoint — wires settings, git, facts, GitHub.

Order matters for "lose nothing": plan.json, the step outputs and the comment file are written
before anything is posted, so a GitHub outage or a read-only fork token never loses the plan.
Exit codes follow the gate (0 passed, 1 failed by policy); setup problems are 2; a failure to
post is reported as a warning and does not change the gate's verdict.

The trust boundary (docs/security.md): configs are filled only from `env-allow` variables;
the facts file, URL files, state databases and template dir are read from the base revision
(`rivet_ci.review.trust`); every output leaves through the redacting sink
(`rivet_ci.output.sink`).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.github.client import GitHubClient, GitHubError, github_wire
from rivet_ci.adapters.github.event import PullRequestEvent, read_event
from rivet_ci.adapters.github.forge import GitHubForge
from rivet_ci.adapters.github.runner import blob_linker
from rivet_ci.adapters.http import Deadline
from rivet_ci.adapters.plan_cache import PlanCache, open_cache
from rivet_ci.commands.ci_inputs import (
    ConfigInputs,
    FactsGathering,
    LoadedFacts,
    config_inputs,
    fetched_facts,
    trusted_facts,
)
from rivet_ci.commands.context import Context
from rivet_ci.commands.plan import facts_errors
from rivet_ci.core.comment.view import checked_text
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.common.text import plural
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.formats.document import COMPACT, INDENTED, Layout, dump_json
from rivet_ci.core.formats.rivet_artifact import rivet_document
from rivet_ci.core.gate.diff import Finding
from rivet_ci.core.gate.policy import GatePolicy, GateResult, parse_policy
from rivet_ci.core.plan.planner import ConfigPlan, FactsOrigin
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import GATE_FAILED, OK, USAGE_ERROR
from rivet_ci.github_action.annotations import (
    MAX_ANNOTATIONS,
    annotation,
    annotations_for,
    escape_data,
)
from rivet_ci.github_action.outputs import write_outputs
from rivet_ci.github_action.settings import ActionSettings, SettingsError
from rivet_ci.output.ownership import WorkspaceOwner, adopt, make_parents
from rivet_ci.output.paths import PathRefusedError, PathRule, inside, normalized
from rivet_ci.output.sink import check_parents, write_chunks, write_output
from rivet_ci.output.workflow_commands import workflow_command
from rivet_ci.review import Report, Sides
from rivet_ci.review.comment import CommentOptions, docs_ref
from rivet_ci.review.effects import (
    OutputPaths,
    OutputValue,
    Posted,
    Published,
    gate_word,
    publish_record,
    publish_review,
    record_gate,
)
from rivet_ci.review.pull_request import PullRequestPlan
from rivet_ci.review.record import plan_record, record_summary
from rivet_ci.review.sticky import (
    Behaviour,
    CommentAction,
    CommentOutcome,
    find_own_comment,
    upsert_comment,
)
from rivet_ci.review.trust import TrustedFiles


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("action", help="GitHub Action entrypoint (reads INPUT_* and GITHUB_*)",
                   description="Run as the rivet-ci GitHub Action: inputs come from INPUT_<NAME> "
                               "variables, the pull request from GITHUB_EVENT_PATH.")



def pull_request_refs(event: dict[str, Any], settings: ActionSettings) -> tuple[int | None, str,
                                                                                 str]:
    """(PR number, base, head) from the event, with `base-ref` overriding the base. An event
    that is not a pull request, without `base-ref`, plans the commit itself (the plan of
    record): base and head are both that commit (`is_record`).

    A payload without the fields a pull request event has is a setup error naming them
    (`PullRequestEvent`).
    """
    pr = PullRequestEvent.of(event, shown=f"{settings.event_path}")
    if pr is not None:
        return pr.number, settings.base_ref or pr.base_sha, pr.head_sha
    head = settings.sha or "HEAD"
    return None, settings.base_ref or head, head


def is_record(event: dict[str, Any], settings: ActionSettings) -> bool:
    """Whether this run writes the plan of record: not a pull request, and no `base-ref`."""
    return (settings.base_ref is None
            and PullRequestEvent.of(event, shown=f"{settings.event_path}") is None)


def load_facts(settings: ActionSettings, trusted: TrustedFiles, event: Mapping[str, Any],
               ctx: Context, budget: GitHubBudget) -> LoadedFacts:
    """The facts file from the trusted side (`ci_inputs.trusted_facts`), or the trusted facts
    artifact of the default branch (`facts-artifact`)."""
    if settings.facts_artifact is not None:
        return load_artifact_facts(settings, event, ctx, budget)
    path = settings.facts_path
    if path is None:
        return None, [], FactsOrigin(kind="none")
    return trusted_facts(path, settings.for_output(path), trusted, settings.workspace)


def load_artifact_facts(settings: ActionSettings, event: Mapping[str, Any], ctx: Context,
                        budget: GitHubBudget) -> LoadedFacts:
    """The facts of the newest trusted artifact (`rivet_ci.adapters.github.artifacts`): only a
    schedule, manual or push run of the default branch of this repository can have made it, so
    nothing a pull request uploads or commits is used. None usable is a setup error."""
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
        artifact = fetch_trusted_facts(budget.client(settings), repo=settings.repository,
                                       name=name, default_branch=default_branch,
                                       workflow=settings.facts_workflow)
    except (FactsArtifactError, GitHubError) as exc:
        late = (f"; the run's GitHub calls end after github-timeout "
                f"({settings.github_timeout} s)" if budget.deadline.remaining() <= 0 else "")
        raise UsageError(f"facts-artifact: {exc}{late}") from None
    for reason in artifact.refused[:10]:  # a run named like the default branch, off it
        warn(ctx, "rivet-ci facts", f"not used: {reason}")
    for reason in artifact.skipped[:10]:
        ctx.stdout.write(workflow_command(
            f"::notice title=rivet-ci facts::not used: {escape_data(reason)}") + "\n")
    return fetched_facts(artifact.shown, artifact.text, artifact.created_at)


def confine_inputs(settings: ActionSettings, rule: PathRule) -> ActionSettings:
    """The settings with every path input normalised by the one path rule
    (`rivet_ci.output.paths`): inside the workspace or the runner's temp directory, never
    through a symbolic link — refused (exit 2) naming the input otherwise. Outputs may be a
    link themselves (it is replaced, never written through); trusted files are read from the
    base revision by path, and from disk (the workflow's own) checking every component."""
    update: dict[str, Any] = {
        "output": rule.confine(settings.output, "output", action="write", links="parents")}
    if settings.rivet_compatible_artifact is not None:
        update["rivet_compatible_artifact"] = rule.confine(
            settings.rivet_compatible_artifact, "rivet-compatible-artifact", action="write",
            links="parents")
    for name, label in (("facts", "facts"), ("template_dir", "template-dir")):
        value = getattr(settings, name)
        if value is not None:
            update[name] = rule.confine(value, label, links="none")
    if settings.cache_dir is not None:  # checked when opened: a refused cache is not used
        update["cache_dir"] = normalized(settings.cache_dir, rule.workspace)
    waivers = rule.confine(Path(settings.waivers), "waivers", links="none")
    relative = waivers.relative_to(rule.workspace) if inside(waivers, rule.workspace) else None
    if relative is None or not relative.parts:
        raise PathRefusedError(f"refusing to read waivers {settings.waivers}: the waivers file is "
                          "read from the base revision, so it must be a path in the repository")
    update["waivers"] = relative.as_posix()
    return settings.model_copy(update=update)


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
    action = prepare_run(ctx)
    warn_if_stale(action, ctx)
    inputs = action_inputs(action.settings, ctx)
    effects = ActionEffects(action, ctx)
    with tempfile.TemporaryDirectory(prefix="rivet-ci-state-") as state_dir:
        gathering = action_gathering(action, inputs, ctx, Path(state_dir))
        template_files = trusted_template(action)  # (before planning; read once)
        if action.record:  # a push, a schedule, a manual run: the whole repository, no comment
            return write_record(action, inputs, gathering, effects, ctx)
        cache = open_plan_cache(action, ctx)
        published = publish_review(
            Sides(action.repo, action.base_sha, action.head_sha, action.settings.configs,
                  waivers_file=action.settings.waivers, cache=cache),
            gathering.facts_source(action.facts, action.origin, action.facts_problems),
            action.policy.model_copy(update={"waiver_in_pr": action.settings.waiver_in_pr}),
            effects, paths=output_paths(action.settings), layout=action.layout,
            comment=comment_options(action, ctx, template_files), redact=ctx.redact,
            clock=ctx.now, timestamp=ctx.timestamp,
            extra_findings=gathering.trust_findings)  # a PR changing what grades it: unused
    return report_review(published, action, ctx, cache)


@dataclass(frozen=True)
class ActionRun:
    """What a run of the action works on, read once at its start: the settings (paths
    confined), the policy, the pull request's commits, the repository and its trusted side,
    and the facts file."""

    settings: ActionSettings
    rule: PathRule
    budget: GitHubBudget
    policy: GatePolicy
    number: int | None
    record: bool
    layout: Layout
    owner: WorkspaceOwner | None
    repo: GitRepo
    base_sha: str
    head_sha: str
    trusted: TrustedFiles
    facts: FactsFile | None
    facts_problems: list[Problem]
    origin: FactsOrigin


def prepare_run(ctx: Context) -> ActionRun:
    """Settings and event, the path rule, the commits (fetched when the checkout lacks
    them), the trusted side and the facts file."""
    settings, event = read_settings(ctx.environ)
    rule = PathRule.of(settings.workspace, ctx.environ)
    settings = confine_inputs(settings, rule)
    budget = GitHubBudget(settings.github_timeout)  # from the start of the run
    policy = parse_policy(settings.fail_on)
    number, base, head = pull_request_refs(event, settings)
    record = is_record(event, settings)
    owner = WorkspaceOwner.of(settings.workspace)
    repo = GitRepo(settings.workspace, run_as=owner.ids if owner else None)
    if record:
        repo.ensure_commit(head)
    else:
        repo.ensure_merge_base(base, head)
    base_sha, head_sha = repo.resolve(base), repo.resolve(head)
    trusted = TrustedFiles(repo, settings.workspace, trusted=base_sha,
                           fork_point=repo.merge_base(base_sha, head_sha) or base_sha,
                           head=head_sha, rule=rule)
    facts, facts_problems, origin = load_facts(settings, trusted, event, ctx, budget)
    return ActionRun(settings=settings, rule=rule, budget=budget, policy=policy, number=number,
                     record=record, layout=COMPACT if settings.plan_json == "compact"
                     else INDENTED, owner=owner, repo=repo, base_sha=base_sha,
                     head_sha=head_sha, trusted=trusted, facts=facts,
                     facts_problems=facts_problems, origin=origin)


def warn_if_stale(run: ActionRun, ctx: Context) -> None:
    """A warning when the facts were captured longer ago than `facts-max-age`."""
    captured, settings = run.origin.captured_at, run.settings
    if captured is not None and captured.tzinfo is None:
        captured = captured.replace(tzinfo=UTC)  # a hand-written time without a zone
    if captured is not None and ctx.now() - captured > settings.facts_max_age_delta:
        ctx.stdout.write(workflow_command(
            f"::warning title=rivet-ci facts::{escape_data(run.origin.path or 'facts')} "
            f"captured {captured.isoformat()} are older than facts-max-age "
            f"({settings.facts_max_age}): recapture them") + "\n")


def action_inputs(settings: ActionSettings, ctx: Context) -> ConfigInputs:
    """What fills the configs (`env-allow`, `params`) and the state URL; the output
    boundary's redactor learns every credential here."""
    return config_inputs(
        env_allow=settings.env_allow, params=settings.params, environ=ctx.environ,
        state_url=settings.state_url.get_secret_value() if settings.state_url else None,
        redact=ctx.redact)


def action_gathering(action: ActionRun, inputs: ConfigInputs, ctx: Context,
                     state_dir: Path) -> FactsGathering:
    settings = action.settings
    return FactsGathering(
        action.trusted, inputs, workspace=settings.workspace, configs=settings.configs,
        live=settings.live, environ=ctx.environ, redact=ctx.redact, state_dir=state_dir,
        warn=lambda title, text: warn(ctx, title, text))


class ActionEffects:
    """The run's effects as GitHub's runner takes them (`review.effects.Effects`): files
    through the output boundary (redacted, never through a symlink, handed to the workspace's
    owner), `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, workflow commands, the sticky comment."""

    def __init__(self, run: ActionRun, ctx: Context) -> None:
        self.run, self.ctx = run, ctx

    def write(self, path: Path, text: str | Iterator[bytes], *, append: bool = False,
              root: Path | None = None) -> None:
        # Through the output boundary: redacted, never through a symlink. A document given
        # as chunks (`Report.document_chunks`) is written chunk by chunk.
        owner, redact = self.run.owner, self.ctx.redact
        check_parents(path, root)
        make_parents(path, owner)
        if isinstance(text, str):
            write_output(path, text, redact, root=root, append=append)
        else:
            write_chunks(path, text, redact, root=root)
        adopt(path, owner)  # (a file replaced atomically is a new one: handed over again)

    def write_plan(self, chunks: Iterator[bytes], configs: tuple[ConfigPlan, ...]) -> None:
        settings = self.run.settings
        self.write(settings.output_path, chunks, root=settings.workspace)
        if settings.rivet_artifact_path is not None:
            self.write(settings.rivet_artifact_path,
                       dump_json(rivet_document(configs, created_at=self.ctx.now())),
                       root=settings.workspace)

    def write_outputs(self, values: Mapping[str, OutputValue]) -> None:
        path = self.run.settings.github_output
        if path is not None:
            existed = path.exists()
            write_outputs(path, values, self.ctx.redact)
            if not existed:
                adopt(path, self.run.owner)

    def write_comment(self, body: str) -> None:
        settings = self.run.settings
        self.write(settings.comment_path, body, root=settings.workspace)

    def write_summary(self, text: str) -> None:
        if self.run.settings.step_summary is not None:
            self.write(self.run.settings.step_summary, text, append=True)

    def annotate(self, gate: GateResult, findings: Sequence[Finding]) -> list[Problem]:
        return print_annotations(self.ctx, gate, findings, self.run.facts_problems)

    def post(self, report: Report, body: str, short: str) -> Posted | None:
        outcome = post_comment(self.run.settings, number=self.run.number, body=body,
                               short=short, pr=report.pr, timestamp=report.timestamp,
                               ctx=self.ctx, budget=self.run.budget, quiet=report.quiet)
        if outcome is None:
            return None
        return Posted(url=outcome.url, shown=outcome.shown)


def warn(ctx: Context, title: str, text: str) -> None:
    """A warning on the workflow run (a `::warning` command, its text escaped)."""
    ctx.stdout.write(workflow_command(f"::warning title={title}::{escape_data(text)}") + "\n")


def trusted_template(run: ActionRun) -> dict[str, bytes] | None:
    """The template dir, from the trusted side; the workflow's own directory on disk is
    checked for links on the way to it (and read when rendering)."""
    settings = run.settings
    if settings.template_path is None:
        return None
    files = run.trusted.read_dir(settings.template_path, "template")
    if files is None:
        run.rule.confine(settings.template_path, "template-dir")
    return files


def open_plan_cache(run: ActionRun, ctx: Context) -> PlanCache | None:
    cache, refused = open_cache(run.settings.cache_path, run.repo,
                                run.owner.adopt if run.owner is not None else None,
                                rule=run.rule)
    if refused:
        ctx.stdout.write(workflow_command(
            f"::warning title=rivet-ci cache::{escape_data(refused)}") + "\n")
    return cache


def output_paths(settings: ActionSettings, *, comment: bool = True) -> OutputPaths:
    rivet_path = settings.rivet_artifact_path
    return OutputPaths(plan=settings.for_output(settings.output_path),
                       rivet_artifact=settings.for_output(rivet_path) if rivet_path else "",
                       comment_file=settings.for_output(settings.comment_path) if comment
                       else "")


def comment_options(run: ActionRun, ctx: Context,
                    template_files: dict[str, bytes] | None) -> CommentOptions:
    settings = run.settings
    return CommentOptions(
        gate_id=settings.gate_id, comment_limit=GitHubForge.comment_limit,
        run_url=settings.run_url,
        links=lambda sha: blob_linker(settings.server_url, settings.repository, sha),
        template_dir=None if template_files is not None else settings.template_path,
        template_files=template_files,
        previous_body=lambda: previous_comment(settings, run.number, ctx, run.budget),
        docs_at=docs_ref(ctx.environ.get("GITHUB_ACTION_REPOSITORY"),
                         ctx.environ.get("GITHUB_ACTION_REF")),
        facts_max_age=settings.facts_max_age_delta)


def report_review(published: Published, run: ActionRun, ctx: Context,
                  cache: PlanCache | None) -> int:
    """The run's last lines on stdout, the facts file's errors, and the exit code."""
    pr, gate, settings = published.report.pr, published.report.gate, run.settings
    ctx.stdout.write(f"rivet-ci: {checked_text(published.report.checked)}; "
                     f"{plural(len(pr.diff.changed_exports), 'changed export')}; "
                     f"gate {gate_word(gate)} (fail-on: {gate.policy}); "
                     f"plan: {settings.for_output(settings.output_path)}\n")
    for path in pr.skipped_facts:
        ctx.stdout.write(f"rivet-ci: {path} is a facts document, not planned as a config\n")
    if cache is not None:
        ctx.stdout.write(f"rivet-ci: plan cache {settings.for_output(cache.directory)}: "
                         f"{cache.stats.summary()}\n")
    return exit_code(ctx, gate, published.errors)


def exit_code(ctx: Context, gate: GateResult, errors: Sequence[Problem]) -> int:
    if errors:
        ctx.stderr.write(f"rivet-ci: error: the facts file has {len(errors)} problem(s):\n"
                         + "".join(f"  {p.render()}\n" for p in errors))
        return USAGE_ERROR
    return OK if gate.passed else GATE_FAILED


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


def write_record(run: ActionRun, inputs: ConfigInputs, gathering: FactsGathering,
                 effects: ActionEffects, ctx: Context) -> int:
    """The plan of record: every config at the commit planned whole; plan.json (and rivet's
    artifact), the step outputs, the job summary and the annotations; no comment. The gate is
    the always-on rules on the plan's own errors (`fail-on: none` reports only)."""
    settings = run.settings
    record = plan_record(run.repo, run.head_sha, settings.configs, facts=run.facts,
                         origin=run.origin, environ=inputs.allowed,
                         facts_problems=run.facts_problems, enrich=gathering.enrich_record(),
                         live=settings.live)
    gate = record_gate(record, run.policy)
    errors = publish_record(record, gate, effects, paths=output_paths(settings, comment=False),
                            layout=run.layout, generated_at=ctx.timestamp(),
                            summary=record_summary(
                                record, gate, settings.for_output(settings.output_path)))
    plan, exports = record.plan, record.summary["exports"]
    ctx.stdout.write(f"rivet-ci: plan of record at {record.commit[:12]}: "
                     f"{plural(len(plan.configs), 'config file')} ({exports} exports) of "
                     f"{record.matched} matching; gate {gate_word(gate)} "
                     f"(fail-on: {gate.policy}); plan: "
                     f"{settings.for_output(settings.output_path)}\n")
    for path in record.skipped_facts:
        ctx.stdout.write(f"rivet-ci: {path} is a facts document, not planned as a config\n")
    return exit_code(ctx, gate, errors)


class GitHubBudget:
    """The overall deadline of the run's GitHub work (`github-timeout`): every client the run
    makes shares one end (`Deadline`), so retries, waits, a server dripping bytes and the
    storage host an artifact download is redirected to cannot add up past it."""

    def __init__(self, seconds: float) -> None:
        self.deadline = Deadline(seconds)

    def client(self, settings: ActionSettings) -> GitHubClient:
        assert settings.github_token is not None
        return GitHubClient(github_wire(api_url=settings.api_url,
                                        token=settings.github_token.get_secret_value(),
                                        request_deadline=60, deadline=self.deadline))

    def forge(self, settings: ActionSettings, number: int) -> GitHubForge:
        """The pull request's conversation, through a client within the budget."""
        return GitHubForge(self.client(settings), settings.repository, number,
                           server_url=settings.server_url)


def previous_comment(settings: ActionSettings, number: int | None, ctx: Context,
                     budget: GitHubBudget) -> str | None:
    """The body of this gate's comment from an earlier run, for "since your last push".

    Only read when the comment is edited in place or recreated; any failure means no previous
    comment (the section is left out), never a failed run.
    """
    if (settings.comment not in ("update", "recreate") or number is None
            or settings.github_token is None):
        return None
    try:
        found = find_own_comment(budget.forge(settings, number), gate_id=settings.gate_id)
    except GitHubError as exc:
        ctx.stdout.write(workflow_command(
            "::notice title=rivet-ci comment::" + escape_data(
                f"could not read the previous comment ({exc}); the comment leaves out "
                "\"since your last push\"")) + "\n")
        return None
    return found.body if found is not None else None


def post_comment(
    settings: ActionSettings, *, number: int | None, body: str, short: str,
    pr: PullRequestPlan, timestamp: str, ctx: Context, budget: GitHubBudget,
    quiet: bool = False,
) -> CommentOutcome | None:
    if settings.comment == "off" or number is None or settings.github_token is None:
        return None
    forge = budget.forge(settings, number)
    try:
        outcome = upsert_comment(
            forge, body=body, short_body=short,
            gate_id=settings.gate_id, head_sha=pr.head_sha,
            behaviour=Behaviour(settings.comment), timestamp=timestamp,
            create=not (quiet and settings.comment_when == "changed"))
    except GitHubError as exc:
        ctx.stdout.write(workflow_command(
            "::warning title=rivet-ci comment::" + escape_data(
                f"could not post the comment ({exc}); it is saved in "
                f"{settings.for_output(settings.comment_path)}")) + "\n")
        return None
    if outcome.action is CommentAction.SKIPPED_QUIET:
        ctx.stdout.write("rivet-ci: no config file or finding changed: no comment created "
                         "(comment-when: changed)\n")
    if outcome.action is CommentAction.FORBIDDEN:
        ctx.stdout.write(workflow_command(
            "::notice title=rivet-ci comment::" + escape_data(
                "the token may not comment (a pull request from a fork?). The comment is saved "
                f"in {settings.for_output(settings.comment_path)}; post it from a trusted "
                "workflow_run with `rivet-ci post` (see docs/action.md).")) + "\n")
    return outcome
