"""The steps of a pull-request run on a CI forge, the same on every forge: a forge's entry point
(`github_action/` today) is wiring only — its settings (`RunSettings`), the change it reviews
(`Change`), how its runner shows a message (`Notices`), its forge client (`conversation`), its
trusted facts artifact and its effects (`Effects`, on `CiEffects`) — all given as one
`ForgeEntry` to `run_ci`.

    prepare_run: the path inputs confined, the commits (fetched when the checkout lacks them),
        the trusted side, the facts (file, artifact directory, or the forge's artifact)
    -> warn_if_stale -> config_inputs -> FactsGathering (live facts, run history)
    -> the plan of record (`write_record`), or the review (`review.effects.publish_review`)
    -> report_review (the last lines, the exit code)

Order matters for "lose nothing": plan.json, the step outputs and the comment file are written
before anything is posted (`review.effects`), so a forge outage or a read-only token never
loses the plan. Exit codes follow the gate (0 passed, 1 failed by policy); setup problems are
2; a failure to post is a warning and does not change the gate's verdict.

The trust boundary (docs/security.md): configs are filled only from `env-allow` variables;
the facts file, URL files, state databases and template dir are read from the base revision
(`rivet_ci.review.trust`); every output leaves through the redacting sink
(`rivet_ci.output.sink`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any, Protocol, Self

from pydantic import SecretStr

from rivet_ci.adapters.forge import Forge, ForgeError
from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.http import Deadline
from rivet_ci.adapters.plan_cache import PlanCache, open_cache
from rivet_ci.commands.ci_inputs import (
    ConfigInputs,
    FactsGathering,
    LoadedFacts,
    config_inputs,
    trusted_facts,
)
from rivet_ci.commands.context import Context
from rivet_ci.core.comment.view import LinkFor, checked_text
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.common.text import plural
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.formats.document import COMPACT, INDENTED, Layout, dump_json
from rivet_ci.core.formats.rivet_artifact import rivet_document
from rivet_ci.core.gate.policy import GatePolicy, GateResult, parse_policy
from rivet_ci.core.plan.planner import ConfigPlan, FactsOrigin
from rivet_ci.exit_codes import GATE_FAILED, OK, USAGE_ERROR
from rivet_ci.output.ownership import WorkspaceOwner, adopt, make_parents
from rivet_ci.output.paths import PathRefusedError, PathRule, inside, normalized
from rivet_ci.output.sink import check_parents, write_chunks, write_output
from rivet_ci.review import Report, Sides
from rivet_ci.review.comment import CommentOptions
from rivet_ci.review.effects import (
    Effects,
    OutputPaths,
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

# --- what a forge's entry point supplies ---------------------------------------------------


class RunSettings(Protocol):
    """The settings the run steps read, whatever the forge (GitHub's `ActionSettings` is one):
    the inputs by their field names, the workspace, and the paths derived from them. `model_copy`
    with `update` gives the settings with the path inputs confined (`confine_inputs`)."""

    @property
    def workspace(self) -> Path: ...
    @property
    def configs(self) -> tuple[str, ...]: ...
    @property
    def live(self) -> bool: ...
    @property
    def state_url(self) -> SecretStr | None: ...
    @property
    def comment(self) -> str: ...
    @property
    def comment_when(self) -> str: ...
    @property
    def gate_id(self) -> str: ...
    @property
    def fail_on(self) -> tuple[str, ...]: ...
    @property
    def output(self) -> Path: ...
    @property
    def rivet_compatible_artifact(self) -> Path | None: ...
    @property
    def facts(self) -> Path | None: ...
    @property
    def template_dir(self) -> Path | None: ...
    @property
    def cache_dir(self) -> Path | None: ...
    @property
    def waivers(self) -> str: ...
    @property
    def waiver_in_pr(self) -> str: ...
    @property
    def env_allow(self) -> tuple[str, ...]: ...
    @property
    def params(self) -> tuple[str, ...]: ...
    @property
    def plan_json(self) -> str: ...
    @property
    def facts_max_age(self) -> str: ...
    @property
    def facts_max_age_delta(self) -> timedelta: ...
    @property
    def output_path(self) -> Path: ...
    @property
    def rivet_artifact_path(self) -> Path | None: ...
    @property
    def comment_path(self) -> Path: ...
    @property
    def template_path(self) -> Path | None: ...
    @property
    def cache_path(self) -> Path | None: ...
    @property
    def facts_path(self) -> Path | None: ...
    @property
    def run_url(self) -> str | None: ...

    def for_output(self, path: Path) -> str:
        """`path` as an output names it (relative to the workspace when inside it)."""

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Self: ...


@dataclass(frozen=True)
class Change:
    """What the run reviews: a pull (merge) request's number and its base and head revisions,
    or — for a push, a schedule, a manual run — the commit itself (`record`: the plan of
    record, base and head both that commit)."""

    number: int | None
    base: str
    head: str
    record: bool


class Notices(Protocol):
    """How the forge's runner shows a message in the job's log (GitHub: workflow commands)."""

    def warning(self, title: str, text: str) -> None: ...

    def notice(self, title: str, text: str) -> None: ...


class ForgeEntry(Protocol):
    """A forge's entry point, as the run steps use it."""

    @property
    def settings(self) -> RunSettings: ...
    @property
    def notices(self) -> Notices: ...
    @property
    def comment_limit(self) -> int:
        """The most characters a comment may hold on the forge."""
    @property
    def docs_at(self) -> str | None:
        """The ref of rivet-ci's docs the comment links (`review.comment.docs_ref`)."""
    @property
    def forbidden_advice(self) -> str:
        """What to do when the token may not comment (ends the notice that says so)."""
    @property
    def deadline(self) -> Deadline:
        """The run's deadline for every host of the forge it talks to: its API, the storage
        an artifact download is redirected to, and its git server (a fetch of commits the
        checkout lacks)."""

    def change(self) -> Change:
        """The change this run reviews (read from the forge's event or variables)."""

    def label(self, field: str) -> str:
        """How messages name the input behind a settings field (GitHub: `fail-on`)."""

    def links(self, sha: str) -> LinkFor:
        """Links to config lines at commit `sha` on the forge."""

    def artifact_facts(self) -> LoadedFacts | None:
        """The facts of the forge's trusted artifact, when the settings ask for one."""

    def conversation(self, number: int) -> Forge | None:
        """The change's conversation through the forge's client (within the run's deadline);
        None when the run has no token to talk with."""

    def effects(self, run: CiRun) -> Effects:
        """The run's effects on this forge (most of them `CiEffects`')."""


# --- the run -------------------------------------------------------------------------------


def run_ci(entry: ForgeEntry, ctx: Context) -> int:
    """The run, from the entry's settings to the exit code (module docstring)."""
    run = prepare_run(entry, ctx)
    warn_if_stale(run, ctx, entry.notices)
    inputs = run_inputs(run.settings, ctx)
    effects = entry.effects(run)
    with tempfile.TemporaryDirectory(prefix="rivet-ci-state-") as state_dir:
        gathering = facts_gathering(run, inputs, ctx, Path(state_dir), entry.notices)
        template_files = trusted_template(run, entry.label)  # (before planning; read once)
        if run.record:  # a push, a schedule, a manual run: the whole repository, no comment
            return write_record(run, inputs, gathering, effects, ctx)
        cache = open_plan_cache(run, entry.notices)
        published = publish_review(
            Sides(run.repo, run.base_sha, run.head_sha, run.settings.configs,
                  waivers_file=run.settings.waivers, cache=cache),
            gathering.facts_source(run.facts, run.origin, run.facts_problems),
            run.policy.model_copy(update={"waiver_in_pr": run.settings.waiver_in_pr}),
            effects, paths=output_paths(run.settings), layout=run.layout,
            comment=comment_options(run, entry, template_files), redact=ctx.redact,
            clock=ctx.now, timestamp=ctx.timestamp,
            extra_findings=gathering.trust_findings)  # a PR changing what grades it: unused
    return report_review(published, run, ctx, cache)


@dataclass(frozen=True)
class CiRun:
    """What a run works on, read once at its start: the settings (paths confined), the policy,
    the change's commits, the repository and its trusted side, and the facts."""

    settings: RunSettings
    rule: PathRule
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


def prepare_run(entry: ForgeEntry, ctx: Context) -> CiRun:
    """The path rule and the confined settings, the change's commits (fetched when the
    checkout lacks them), the trusted side and the facts."""
    rule = PathRule.of(entry.settings.workspace, ctx.environ)
    settings = confine_inputs(entry.settings, rule, entry.label)
    policy = parse_policy(settings.fail_on)
    change = entry.change()
    owner = WorkspaceOwner.of(settings.workspace)
    repo = GitRepo(settings.workspace, run_as=owner.ids if owner else None,
                   fetch_deadline=entry.deadline.remaining)
    if change.record:
        repo.ensure_commit(change.head)
    else:
        repo.ensure_merge_base(change.base, change.head)
    base_sha, head_sha = repo.resolve(change.base), repo.resolve(change.head)
    trusted = TrustedFiles(repo, settings.workspace, trusted=base_sha,
                           fork_point=repo.merge_base(base_sha, head_sha) or base_sha,
                           head=head_sha, rule=rule)
    facts, facts_problems, origin = load_facts(settings, trusted, entry)
    return CiRun(settings=settings, rule=rule, policy=policy, number=change.number,
                 record=change.record, layout=COMPACT if settings.plan_json == "compact"
                 else INDENTED, owner=owner, repo=repo, base_sha=base_sha,
                 head_sha=head_sha, trusted=trusted, facts=facts,
                 facts_problems=facts_problems, origin=origin)


def confine_inputs(settings: RunSettings, rule: PathRule,
                   label: Callable[[str], str]) -> RunSettings:
    """The settings with every path input normalised by the one path rule
    (`rivet_ci.output.paths`): inside the workspace or the runner's temp directory, never
    through a symbolic link — refused (exit 2) naming the input (`label`) otherwise. Outputs may
    be a link themselves (it is replaced, never written through); trusted files are read from
    the base revision by path, and from disk (the workflow's own) checking every component."""
    update: dict[str, Any] = {
        "output": rule.confine(settings.output, label("output"), action="write",
                               links="parents")}
    if settings.rivet_compatible_artifact is not None:
        update["rivet_compatible_artifact"] = rule.confine(
            settings.rivet_compatible_artifact, label("rivet_compatible_artifact"),
            action="write", links="parents")
    for name, value in (("facts", settings.facts), ("template_dir", settings.template_dir)):
        if value is not None:
            update[name] = rule.confine(value, label(name), links="none")
    if settings.cache_dir is not None:  # checked when opened: a refused cache is not used
        update["cache_dir"] = normalized(settings.cache_dir, rule.workspace)
    waivers = rule.confine(Path(settings.waivers), label("waivers"), links="none")
    relative = waivers.relative_to(rule.workspace) if inside(waivers, rule.workspace) else None
    if relative is None or not relative.parts:
        raise PathRefusedError(f"refusing to read waivers {settings.waivers}: the waivers file is "
                          "read from the base revision, so it must be a path in the repository")
    update["waivers"] = relative.as_posix()
    return settings.model_copy(update=update)


def load_facts(settings: RunSettings, trusted: TrustedFiles, entry: ForgeEntry) -> LoadedFacts:
    """The forge's trusted facts artifact when the settings ask for one, else the facts file
    from the trusted side (`ci_inputs.trusted_facts`), else none."""
    fetched = entry.artifact_facts()
    if fetched is not None:
        return fetched
    path = settings.facts_path
    if path is None:
        return None, [], FactsOrigin(kind="none")
    return trusted_facts(path, settings.for_output(path), trusted, settings.workspace)


def warn_if_stale(run: CiRun, ctx: Context, notices: Notices) -> None:
    """A warning when the facts were captured longer ago than `facts-max-age`."""
    captured, settings = run.origin.captured_at, run.settings
    if captured is not None and captured.tzinfo is None:
        captured = captured.replace(tzinfo=UTC)  # a hand-written time without a zone
    if captured is not None and ctx.now() - captured > settings.facts_max_age_delta:
        notices.warning("rivet-ci facts",
                        f"{run.origin.path or 'facts'} captured {captured.isoformat()} are "
                        f"older than facts-max-age ({settings.facts_max_age}): recapture them")


def run_inputs(settings: RunSettings, ctx: Context) -> ConfigInputs:
    """What fills the configs (`env-allow`, `params`) and the state URL; the output
    boundary's redactor learns every credential here."""
    return config_inputs(
        env_allow=settings.env_allow, params=settings.params, environ=ctx.environ,
        state_url=settings.state_url.get_secret_value() if settings.state_url else None,
        redact=ctx.redact)


def facts_gathering(run: CiRun, inputs: ConfigInputs, ctx: Context, state_dir: Path,
                    notices: Notices) -> FactsGathering:
    settings = run.settings
    return FactsGathering(
        run.trusted, inputs, workspace=settings.workspace, configs=settings.configs,
        live=settings.live, environ=ctx.environ, redact=ctx.redact, state_dir=state_dir,
        warn=notices.warning)


def trusted_template(run: CiRun, label: Callable[[str], str]) -> dict[str, bytes] | None:
    """The template dir, from the trusted side; the workflow's own directory on disk is
    checked for links on the way to it (and read when rendering)."""
    settings = run.settings
    if settings.template_path is None:
        return None
    files = run.trusted.read_dir(settings.template_path, "template")
    if files is None:
        run.rule.confine(settings.template_path, label("template_dir"))
    return files


def open_plan_cache(run: CiRun, notices: Notices) -> PlanCache | None:
    cache, refused = open_cache(run.settings.cache_path, run.repo,
                                run.owner.adopt if run.owner is not None else None,
                                rule=run.rule)
    if refused:
        notices.warning("rivet-ci cache", refused)
    return cache


def output_paths(settings: RunSettings, *, comment: bool = True) -> OutputPaths:
    rivet_path = settings.rivet_artifact_path
    return OutputPaths(plan=settings.for_output(settings.output_path),
                       rivet_artifact=settings.for_output(rivet_path) if rivet_path else "",
                       comment_file=settings.for_output(settings.comment_path) if comment
                       else "")


def comment_options(run: CiRun, entry: ForgeEntry,
                    template_files: dict[str, bytes] | None) -> CommentOptions:
    settings = run.settings
    return CommentOptions(
        gate_id=settings.gate_id, comment_limit=entry.comment_limit,
        run_url=settings.run_url, links=entry.links,
        template_dir=None if template_files is not None else settings.template_path,
        template_files=template_files,
        previous_body=lambda: previous_comment(run, entry),
        docs_at=entry.docs_at, facts_max_age=settings.facts_max_age_delta)


# --- the effects every forge shares ---------------------------------------------------------


class CiEffects:
    """The effects every forge's runner takes the same way (`review.effects.Effects`): files
    through the output boundary (redacted, never through a symlink, handed to the workspace's
    owner) and the sticky comment through the forge's conversation. A forge's entry adds its
    step outputs, job summary and annotations."""

    def __init__(self, run: CiRun, entry: ForgeEntry, ctx: Context) -> None:
        self.run, self.entry, self.ctx = run, entry, ctx

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

    def write_comment(self, body: str) -> None:
        settings = self.run.settings
        self.write(settings.comment_path, body, root=settings.workspace)

    def post(self, report: Report, body: str, short: str) -> Posted | None:
        outcome = post_comment(self.run, self.entry, body=body, short=short, pr=report.pr,
                               timestamp=report.timestamp, ctx=self.ctx, quiet=report.quiet)
        if outcome is None:
            return None
        return Posted(url=outcome.url, shown=outcome.shown)


def previous_comment(run: CiRun, entry: ForgeEntry) -> str | None:
    """The body of this gate's comment from an earlier run, for "since your last push".

    Only read when the comment is edited in place or recreated; any failure means no previous
    comment (the section is left out), never a failed run.
    """
    settings = run.settings
    if settings.comment not in ("update", "recreate") or run.number is None:
        return None
    forge = entry.conversation(run.number)
    if forge is None:
        return None
    try:
        found = find_own_comment(forge, gate_id=settings.gate_id)
    except ForgeError as exc:
        entry.notices.notice("rivet-ci comment",
                             f"could not read the previous comment ({exc}); the comment leaves "
                             "out \"since your last push\"")
        return None
    return found.body if found is not None else None


def post_comment(run: CiRun, entry: ForgeEntry, *, body: str, short: str,
                 pr: PullRequestPlan, timestamp: str, ctx: Context,
                 quiet: bool = False) -> CommentOutcome | None:
    """The sticky comment, upserted on the change's conversation (`review.sticky`); a failure
    is a warning (the comment file is already written), never a failed run."""
    settings = run.settings
    if settings.comment == "off" or run.number is None:
        return None
    forge = entry.conversation(run.number)
    if forge is None:
        return None
    saved = settings.for_output(settings.comment_path)
    try:
        outcome = upsert_comment(
            forge, body=body, short_body=short,
            gate_id=settings.gate_id, head_sha=pr.head_sha,
            behaviour=Behaviour(settings.comment), timestamp=timestamp,
            create=not (quiet and settings.comment_when == "changed"))
    except ForgeError as exc:
        entry.notices.warning("rivet-ci comment",
                              f"could not post the comment ({exc}); it is saved in {saved}")
        return None
    if outcome.action is CommentAction.SKIPPED_QUIET:
        ctx.stdout.write("rivet-ci: no config file or finding changed: no comment created "
                         "(comment-when: changed)\n")
    if outcome.action is CommentAction.FORBIDDEN:
        entry.notices.notice("rivet-ci comment",
                             "the token may not comment (a pull request from a fork?). The "
                             f"comment is saved in {saved}{entry.forbidden_advice}")
    return outcome


# --- the end of a run ----------------------------------------------------------------------


def report_review(published: Published, run: CiRun, ctx: Context,
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


def write_record(run: CiRun, inputs: ConfigInputs, gathering: FactsGathering,
                 effects: Effects, ctx: Context) -> int:
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
                                record, gate, settings.for_output(settings.output_path)),
                            redact=ctx.redact)
    plan, exports = record.plan, record.summary["exports"]
    ctx.stdout.write(f"rivet-ci: plan of record at {record.commit[:12]}: "
                     f"{plural(len(plan.configs), 'config file')} ({exports} exports) of "
                     f"{record.matched} matching; gate {gate_word(gate)} "
                     f"(fail-on: {gate.policy}); plan: "
                     f"{settings.for_output(settings.output_path)}\n")
    for path in record.skipped_facts:
        ctx.stdout.write(f"rivet-ci: {path} is a facts document, not planned as a config\n")
    return exit_code(ctx, gate, errors)

