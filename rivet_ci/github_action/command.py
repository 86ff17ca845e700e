"""`rivet-ci action`: the GitHub Action entrypoint — wires settings, git, facts, GitHub.

Order matters for "lose nothing": plan.json, the step outputs and the comment file are written
before anything is posted, so a GitHub outage or a read-only fork token never loses the plan.
Exit codes follow the gate (0 passed, 1 failed by policy); setup problems are 2; a failure to
post is reported as a warning and does not change the gate's verdict.

The trust boundary (docs/security.md): configs are filled only from `env-allow` variables;
the facts file, URL files, state databases and template dir are read from the base revision
(`rivet_ci.github_action.trust`); every output leaves through the redacting sink
(`rivet_ci.output.sink`).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

from rivet_ci.adapters.files import load_facts_file
from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.github.comments import (
    Behaviour,
    CommentAction,
    CommentOutcome,
    find_own_comment,
    upsert_comment,
)
from rivet_ci.adapters.github.event import PullRequestEvent, read_event
from rivet_ci.adapters.github.transport import GitHubClient, GitHubError
from rivet_ci.adapters.plan_cache import open_cache
from rivet_ci.adapters.preflight.collect import TrustedReads, collect_facts
from rivet_ci.adapters.state_history import STATE_FILE
from rivet_ci.commands.context import Context
from rivet_ci.commands.live import with_state_history
from rivet_ci.commands.plan import facts_errors, raise_facts_error
from rivet_ci.core.comment.view import checked_text
from rivet_ci.core.common.json_input import JsonInputError, load_json
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.common.text import plural
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.facts.loader import load_facts_text
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.facts.rivet_artifacts import facts_from_artifacts
from rivet_ci.core.formats.document import COMPACT, INDENTED, Layout, dump_json
from rivet_ci.core.formats.rivet_artifact import rivet_document
from rivet_ci.core.gate.diff import Finding, PlanDiff
from rivet_ci.core.gate.policy import GatePolicy, GateResult, evaluate_gate, parse_policy
from rivet_ci.core.plan.planner import FactsOrigin
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
from rivet_ci.github_action.trust import TrustedFiles, check_outside_review
from rivet_ci.output.ownership import WorkspaceOwner, adopt, make_parents
from rivet_ci.output.paths import PathRefusedError, PathRule, inside, normalized
from rivet_ci.output.redaction import MIN_SECRET_LENGTH
from rivet_ci.output.render import md_text
from rivet_ci.output.sink import check_parents, write_chunks, write_output
from rivet_ci.output.workflow_commands import workflow_command
from rivet_ci.review import FactsSource, Report, Sides, review_pull_request
from rivet_ci.review.comment import CommentOptions, blob_linker, docs_ref
from rivet_ci.review.pull_request import PullRequestPlan
from rivet_ci.review.record import RecordPlan, plan_record

# Outcomes after which the PR shows this run's comment.
POSTED = frozenset({CommentAction.CREATED, CommentAction.UPDATED, CommentAction.UNCHANGED,
                    CommentAction.RECREATED})


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


def load_facts(settings: ActionSettings, trusted: TrustedFiles,
               event: Mapping[str, Any] | None = None, ctx: Context | None = None,
               ) -> tuple[FactsFile | None, list[Problem], FactsOrigin]:
    """The facts file from the trusted side (the base revision, or the workflow's own file),
    or the trusted facts artifact of the default branch (`facts-artifact`).

    A facts file only the pull request has is not used (`trusted` records the finding).
    """
    if settings.facts_artifact is not None:
        return load_artifact_facts(settings, event or {}, ctx)
    path = settings.facts_path
    if path is None:
        return None, [], FactsOrigin(kind="none")
    shown = settings.for_output(path)
    data = trusted.read_file(path, "facts")
    if data is None and (artifacts := load_artifact_dir_facts(settings, trusted, path,
                                                              shown)) is not None:
        return artifacts
    if data is None:
        if any(f.kind == "facts-changed-in-pr" for f in trusted.findings):
            return None, [], FactsOrigin(kind="none")  # only the PR has it: not used
        raise_facts_error([Problem(file=shown, message="cannot read facts file: no such file "
                                                       "(not on the base revision either)")])
    try:
        facts, problems = load_facts_text(shown, data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        facts, problems = None, [Problem(file=shown, message=f"cannot read facts file: {exc}")]
    if facts is None:  # cannot be read or parsed: a setup error, never a config error of base
        raise_facts_error(problems)
    return facts, problems, FactsOrigin(kind="file", path=shown, captured_at=facts.captured_at)


def load_artifact_dir_facts(settings: ActionSettings, trusted: TrustedFiles, path: Path,
                            shown: str) -> tuple[FactsFile | None, list[Problem],
                                                 FactsOrigin] | None:
    """`facts` naming a directory of rivet plan artifacts (`*.json` directly in it), read from
    the trusted side like a facts file: the base revision's, or the workflow's own untracked
    directory. None when `path` is no such directory."""
    files = trusted.read_dir(path, "facts")
    problems: list[Problem] = []
    if files is None:
        if not path.is_dir():
            return None
        facts, problems = load_facts_file(path, root=settings.workspace)
    else:
        documents: list[tuple[str, object]] = []
        for name, blob in sorted(files.items()):
            if "/" in name or not name.endswith(".json"):
                continue
            try:
                documents.append((f"{shown}/{name}", load_json(blob)))
            except JsonInputError as exc:
                problems.append(Problem(file=f"{shown}/{name}", line=exc.line,
                                        message=f"cannot read rivet plan artifact: "
                                                f"{exc.message}"))
        if not documents and not problems:
            return None
        found, more = facts_from_artifacts(documents)
        facts, problems = (found if found.exports else None), [*problems, *more]
    if facts is None:
        raise_facts_error(problems)
    return facts, problems, FactsOrigin(kind="file", path=shown, captured_at=facts.captured_at)


def load_artifact_facts(settings: ActionSettings, event: Mapping[str, Any],
                        ctx: Context | None) -> tuple[FactsFile | None, list[Problem],
                                                      FactsOrigin]:
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
    client = GitHubClient(api_url=settings.api_url,
                          token=settings.github_token.get_secret_value())
    try:
        artifact = fetch_trusted_facts(client, repo=settings.repository, name=name,
                                       default_branch=default_branch,
                                       workflow=settings.facts_workflow)
    except (FactsArtifactError, GitHubError) as exc:
        raise UsageError(f"facts-artifact: {exc}") from None
    if ctx is not None:
        for reason in artifact.skipped[:10]:
            ctx.stdout.write(workflow_command(
                f"::notice title=rivet-ci facts::not used: {escape_data(reason)}") + "\n")
    facts, problems = load_facts_text(artifact.shown, artifact.text)
    if facts is None:
        raise_facts_error(problems)
    captured = facts.captured_at or artifact.created_at
    return facts, problems, FactsOrigin(kind="file", path=artifact.shown, captured_at=captured)


def trusted_state_root(trusted: TrustedFiles, paths: Sequence[str], into: Path) -> Path:
    """A directory mirroring the configs' folders with their trusted `.rivet_state.db` files.

    rivet keeps its state beside each config; a pull request may commit one, so the state
    database is taken from the base revision (or the workflow's own untracked file) and copied
    here, where the history reader opens it read-only.
    """
    for folder in sorted({Path(p).parent for p in paths}):
        data = trusted.read_file(folder / STATE_FILE, "state")
        if data is not None:
            target = into / folder / STATE_FILE
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return into


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
    settings, event = read_settings(ctx.environ)
    rule = PathRule.of(settings.workspace, ctx.environ)
    settings = confine_inputs(settings, rule)
    budget = GitHubBudget(settings.github_timeout)  # from the start of the run
    policy = parse_policy(settings.fail_on)
    number, base, head = pull_request_refs(event, settings)
    record = is_record(event, settings)
    layout = COMPACT if settings.plan_json == "compact" else INDENTED
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
    facts, facts_problems, origin = load_facts(settings, trusted, event, ctx)
    captured = origin.captured_at
    if captured is not None and captured.tzinfo is None:
        captured = captured.replace(tzinfo=UTC)  # a hand-written time without a zone
    if captured is not None and ctx.now() - captured > settings.facts_max_age_delta:
        ctx.stdout.write(workflow_command(
            f"::warning title=rivet-ci facts::{escape_data(origin.path or 'facts')} captured "
            f"{captured.isoformat()} are older than facts-max-age ({settings.facts_max_age}): "
            f"recapture them") + "\n")
    state_url = settings.state_url.get_secret_value() if settings.state_url else None
    redact = ctx.redact  # the output boundary's: every credential learnt is added to it
    redact.add(state_url)
    # `${...}` in pull-request content is filled only from the `env-allow` variables.
    allowed = {name: ctx.environ[name] for name in settings.env_allow if name in ctx.environ}
    # The workflow's `params` input wins over the environment, as `--param`. Every value the
    # workflow hands in is a secret until shown otherwise: a param whose name `env-allow`
    # does not list is masked in every output, and fills only configs the base branch has
    # unchanged — in a config the pull request changes its `${NAME}` is an error.
    params = dict(item.partition("=")[::2] for item in settings.params)
    withheld = frozenset(name for name in params if name not in settings.env_allow)
    redact.add(*(params[name] for name in withheld if len(params[name]) >= MIN_SECRET_LENGTH))
    allowed.update(params)

    def read_url_file(path: str) -> str:
        data = trusted.read_file(Path(path), "url-file")
        if data is None:
            raise FileNotFoundError(2, "not on the base revision")
        return data.decode("utf-8")

    def write(path: Path, text: str | Iterator[bytes], *, append: bool = False,
              root: Path | None = None) -> None:
        # Through the output boundary: redacted, never through a symlink. A document given
        # as chunks (`Report.document_chunks`) is written chunk by chunk.
        check_parents(path, root)
        make_parents(path, owner)
        if isinstance(text, str):
            write_output(path, text, redact, root=root, append=append)
        else:
            write_chunks(path, text, redact, root=root)
        adopt(path, owner)  # (a file replaced atomically is a new one: handed over again)

    def write_step_outputs(values: Mapping[str, str | int | bool]) -> None:
        if settings.github_output is not None:
            existed = settings.github_output.exists()
            write_outputs(settings.github_output, values, redact)
            if not existed:
                adopt(settings.github_output, owner)

    with tempfile.TemporaryDirectory(prefix="rivet-ci-state-") as state_dir:

        def history(current: FactsFile | None, configs: Sequence[LoadedConfig]) -> FactsFile:
            root = (settings.workspace if state_url else
                    trusted_state_root(trusted, [c.path for c in configs], Path(state_dir)))
            enriched, notes = with_state_history(current, configs, state_url, root=root,
                                                 environ=ctx.environ)
            for note in notes:
                ctx.stdout.write(workflow_command(
                    f"::warning title=rivet-ci history::{escape_data(note)}") + "\n")
            return enriched

        def collect(configs: Sequence[LoadedConfig], base: Sequence[LoadedConfig]) -> FactsFile:
            live = collect_facts(
                [(c, settings.workspace / c.path) for c in configs], environ=ctx.environ,
                repo_root=settings.workspace, include_history=False, redact=redact,
                read_url_file=read_url_file, placeholders=allowed,
                trusted=TrustedReads.of(base))
            return history(live, configs)

        def trust_findings() -> list[Finding]:
            # (the configs outside the review were not probed: their trusted files compared)
            check_outside_review(trusted, settings.configs, ctx.environ, url_files=settings.live,
                                 state=settings.live and not state_url)
            return trusted.findings

        # The template dir, from the trusted side (before planning; read once).
        template_files = (trusted.read_dir(settings.template_path, "template")
                          if settings.template_path is not None else None)
        if template_files is None and settings.template_path is not None:
            # the workflow's own directory, on disk: no link on the way to it either
            rule.confine(settings.template_path, "template-dir")
        outputs: dict[str, str | int | bool] = {}
        rivet_path = settings.rivet_artifact_path

        def write_document(report: Report) -> None:
            # 1. The artifact first: it must survive anything that fails later; then the
            #    outputs.
            pr, gate = report.pr, report.gate
            write(settings.output_path, report.document_chunks(layout, coverage=True),
                  root=settings.workspace)
            if rivet_path is not None:
                write(rivet_path, dump_json(rivet_document(pr.document_head.configs,
                                                           created_at=ctx.now())),
                      root=settings.workspace)
            outputs.update({
                "plan-path": settings.for_output(settings.output_path),
                "rivet-artifact-path": settings.for_output(rivet_path) if rivet_path else "",
                "comment-url": "",
                "comment-file": settings.for_output(settings.comment_path),
                "changed-exports": len(pr.diff.changed_exports),
                "new-isolations": pr.diff.new_isolations,
                "new-warnings": pr.diff.new_warnings,
                "gate": "passed" if gate.passed else "failed",
                "comment-posted": False,
                **pr.planned_counts(),
                "policy": gate.policy,
            })
            write_step_outputs(outputs)

        if record:  # a push, a schedule, a manual run: the whole repository, no comment
            return write_record(
                plan_record(repo, head_sha, settings.configs, facts=facts, origin=origin,
                            environ=allowed, facts_problems=facts_problems,
                            # (the pushed commit is the trusted side, as a PR's base is)
                            enrich=(lambda _f, configs: collect(configs, configs))
                            if settings.live
                            else history if state_url else None, live=settings.live),
                settings=settings, ctx=ctx, policy=policy, layout=layout, write=write,
                write_step_outputs=write_step_outputs, facts_problems=facts_problems)

        # 2. The comment (short enough for GitHub) and the full report (for the step summary).
        cache, refused = open_cache(settings.cache_path, repo,
                                    owner.adopt if owner is not None else None, rule=rule)
        if refused:
            ctx.stdout.write(workflow_command(
                f"::warning title=rivet-ci cache::{escape_data(refused)}") + "\n")
        report = review_pull_request(
            Sides(repo, base_sha, head_sha, settings.configs, waivers_file=settings.waivers,
                  cache=cache),
            FactsSource(facts, origin, facts_problems, environ=allowed,
                        collect=collect if settings.live else None,
                        add_history=history if state_url and not settings.live else None,
                        source_environ=ctx.environ, withheld=withheld),
            policy.model_copy(update={"waiver_in_pr": settings.waiver_in_pr}),
            clock=ctx.now, timestamp=ctx.timestamp, redact=redact,
            extra_findings=trust_findings,  # a PR changing what grades it: unused
            comment=CommentOptions(
                gate_id=settings.gate_id, run_url=settings.run_url,
                links=lambda sha: blob_linker(settings.server_url, settings.repository, sha),
                template_dir=None if template_files is not None else settings.template_path,
                template_files=template_files,
                previous_body=lambda: previous_comment(settings, number, ctx, budget),
                docs_at=docs_ref(ctx.environ.get("GITHUB_ACTION_REPOSITORY"),
                                 ctx.environ.get("GITHUB_ACTION_REF")),
                facts_max_age=settings.facts_max_age_delta),
            on_document=write_document)
    pr, gate, bodies = report.pr, report.gate, report.bodies
    assert bodies is not None
    checked = report.checked
    body, short = redact(bodies.comment), redact(bodies.short)
    write(settings.comment_path, body, root=settings.workspace)
    if settings.step_summary is not None:
        write(settings.step_summary, bodies.summary, append=True)

    # 3. Annotations on the YAML lines and on the facts file's own problems.
    errors = print_annotations(ctx, gate, pr.diff.findings, facts_problems)

    # 4. Post (or not), then the outputs that depend on it.
    outcome = post_comment(settings, number=number, body=body, short=short, pr=pr,
                           timestamp=report.timestamp, ctx=ctx, budget=budget,
                           quiet=report.quiet)
    if outcome is not None:
        outputs["comment-url"] = outcome.url or ""
        outputs["comment-posted"] = outcome.action in POSTED
        write_step_outputs({k: outputs[k] for k in ("comment-url", "comment-posted")})
    ctx.stdout.write(f"rivet-ci: {checked_text(checked)}; "
                     f"{plural(len(pr.diff.changed_exports), 'changed export')}; "
                     f"gate {outputs['gate']} (fail-on: {gate.policy}); "
                     f"plan: {outputs['plan-path']}\n")
    for path in pr.skipped_facts:
        ctx.stdout.write(f"rivet-ci: {path} is a facts document, not planned as a config\n")
    if cache is not None:
        ctx.stdout.write(f"rivet-ci: plan cache {settings.for_output(cache.directory)}: "
                         f"{cache.stats.summary()}\n")
    if errors:
        ctx.stderr.write(f"rivet-ci: error: the facts file has {len(errors)} problem(s):\n"
                         + "".join(f"  {p.render()}\n" for p in errors))
        return USAGE_ERROR
    return OK if gate.passed else GATE_FAILED


Writer = Callable[..., None]


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


def write_record(
    record: RecordPlan, *, settings: ActionSettings, ctx: Context, policy: GatePolicy,
    layout: Layout, write: Writer, write_step_outputs: Callable[[Mapping[str, str | int | bool]],
                                                                None],
    facts_problems: list[Problem],
) -> int:
    """The plan of record's outputs: plan.json (and rivet's artifact), the step outputs, the
    job summary and the annotations; no comment. The gate is the always-on rules on the
    plan's own errors (`fail-on: none` reports only)."""
    plan = record.plan
    gate = evaluate_gate(PlanDiff(exports=(), warnings=(), order_moves=(),
                                  findings=record.findings, head_problems=()), policy)
    write(settings.output_path, record.document_chunks(generated_at=ctx.timestamp(),
                                                       layout=layout),
          root=settings.workspace)
    rivet_path = settings.rivet_artifact_path
    if rivet_path is not None:
        write(rivet_path, dump_json(rivet_document(plan.configs, created_at=ctx.now())),
              root=settings.workspace)
    exports = sum(len(c.exports) for c in plan.configs)
    write_step_outputs({
        "plan-path": settings.for_output(settings.output_path),
        "rivet-artifact-path": settings.for_output(rivet_path) if rivet_path else "",
        "comment-url": "", "comment-file": "", "comment-posted": False,
        "changed-exports": 0, "new-isolations": 0, "new-warnings": 0,
        "gate": "passed" if gate.passed else "failed", "policy": gate.policy,
        "head-configs": len(plan.configs), "head-exports": exports,
        "base-configs": 0, "base-exports": 0,
    })
    commit = record.commit[:12]
    if settings.step_summary is not None:
        write(settings.step_summary, record_summary(record, gate, settings), append=True)
    errors = print_annotations(ctx, gate, record.findings, facts_problems)
    ctx.stdout.write(f"rivet-ci: plan of record at {commit}: "
                     f"{plural(len(plan.configs), 'config file')} ({exports} exports) of "
                     f"{record.matched} matching; gate {'passed' if gate.passed else 'failed'} "
                     f"(fail-on: {gate.policy}); plan: "
                     f"{settings.for_output(settings.output_path)}\n")
    for path in record.skipped_facts:
        ctx.stdout.write(f"rivet-ci: {path} is a facts document, not planned as a config\n")
    if errors:
        ctx.stderr.write(f"rivet-ci: error: the facts file has {len(errors)} problem(s):\n"
                         + "".join(f"  {p.render()}\n" for p in errors))
        return USAGE_ERROR
    return OK if gate.passed else GATE_FAILED


def record_summary(record: RecordPlan, gate: GateResult, settings: ActionSettings) -> str:
    """The job summary of a plan of record (Markdown; every value escaped)."""
    plan = record.plan
    exports = [e for c in plan.configs for e in c.exports]
    isolated = sum(1 for e in exports if e.recommendation.isolate_on_source)
    low = sum(1 for e in exports if e.recommendation.low_confidence)
    verdict = "✅ gate passed" if gate.passed else (
        f"❌ gate failed ({plural(len(gate.blocking), 'blocking finding')})")
    lines = [
        f"### rivet-ci: plan of record — {verdict}", "",
        f"Commit `{record.commit[:12]}`: {plural(len(plan.configs), 'config file')} "
        f"({plural(len(exports), 'export')}; {isolated} `isolate_on_source`, {low} low "
        f"confidence), every file matching `configs`. The plan is "
        f"{md_text(settings.for_output(settings.output_path))} (fail-on: "
        f"{md_text(gate.policy)}).", ""]
    for finding in gate.blocking[:MAX_SUMMARY_FINDINGS]:
        lines.append(f"- ❌ {md_text(finding.kind)}: {md_text(finding.message)}")
    if len(gate.blocking) > MAX_SUMMARY_FINDINGS:
        lines.append(f"- … and {len(gate.blocking) - MAX_SUMMARY_FINDINGS} more in the plan")
    return "\n".join(lines) + "\n"


MAX_SUMMARY_FINDINGS = 50


class GitHubBudget:
    """The overall deadline of the run's GitHub work (`github-timeout`): every client the run
    makes shares one end, so retries, waits and a server dripping bytes cannot add up past it."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def client(self, settings: ActionSettings) -> GitHubClient:
        assert settings.github_token is not None
        return GitHubClient(api_url=settings.api_url,
                            token=settings.github_token.get_secret_value(),
                            request_deadline=60,
                            run_deadline=max(0.0, self.end - time.monotonic()))


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
        client = budget.client(settings)
        found = find_own_comment(client, repo=settings.repository, number=number,
                                 gate_id=settings.gate_id)
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
    client = budget.client(settings)
    try:
        outcome = upsert_comment(
            client, repo=settings.repository, number=number, body=body, short_body=short,
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
