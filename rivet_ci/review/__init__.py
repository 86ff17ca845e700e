"""The pull-request review: ONE pipeline, used by `rivet-ci action` and by `rivet-ci diff`.

    plan base and head (`plan_both_sides`) -> extra findings -> gate -> plan document
    -> marker -> view -> redact the view -> render within limits

`review_pull_request` receives every piece of I/O it needs (the git reader, the facts, the live
collector and history reader, the clock, the redactor, the previous comment) and returns the
report; it writes nothing itself. The caller writes the outputs through the output boundary.

Order matters for "lose nothing": `on_document` is called as soon as the plan document can be
built — before the previous comment is read and before the comment is rendered — so the caller
writes `plan.json` (and its step outputs) even when a user template fails later.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from rivet_ci import __version__
from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.plan_cache import PlanCache
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.formats.diff_document import pull_request_document, pull_request_document_chunks
from rivet_ci.core.formats.document import INDENTED, Layout, dump_json
from rivet_ci.core.formats.plan_format import CoverageJSON, PlanDocumentJSON
from rivet_ci.core.gate.diff import Finding
from rivet_ci.core.gate.policy import GatePolicy, GateResult, evaluate_gate
from rivet_ci.core.gate.waivers import DEFAULT_WAIVERS_FILE
from rivet_ci.core.plan.planner import FactsOrigin
from rivet_ci.output.redaction import Redactor
from rivet_ci.review.comment import Bodies, CommentOptions, render_comments, reviewed
from rivet_ci.review.pull_request import (
    FactsCollector,
    HistoryReader,
    PullRequestPlan,
    plan_pull_request,
)


@dataclass(frozen=True)
class Sides:
    """What to compare: two revisions of `repo` (head may be the working tree) and the configs."""

    repo: GitRepo
    base: str
    head: str
    globs: Sequence[str]
    worktree: bool = False
    waivers_file: str | None = DEFAULT_WAIVERS_FILE
    # Plans stored by earlier runs, by git blob id (adapters/plan_cache.py); None: no cache.
    cache: PlanCache | None = None
    # False when no plan document is written: unaffected files in the review are kept as plan
    # summaries (True: their whole plans, for the document).
    full_plans: bool = True


@dataclass(frozen=True)
class FactsSource:
    """The one facts source both sides are planned against.

    `collect` gathers live facts for both sides (replacing `facts`); `add_history` folds rivet's
    run history into `facts`. `environ` fills `${...}` in the configs; `source_environ` (default:
    the same) fills the base revision's `source:` sections live preflight connects to.
    """

    facts: FactsFile | None
    origin: FactsOrigin
    problems: Sequence[Problem] = ()
    environ: Mapping[str, str] = dataclasses.field(default_factory=dict)
    collect: FactsCollector | None = None
    add_history: HistoryReader | None = None
    source_environ: Mapping[str, str] | None = None
    # Names in `environ` that fill configs the base branch has, never a config the pull
    # request changes (the action's `params` not listed in `env-allow`): refused there.
    withheld: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Report:
    """Everything a review produced; `bodies` is None until (and unless) the comment is rendered."""

    pr: PullRequestPlan
    gate: GateResult
    policy: GatePolicy
    timestamp: str
    now: datetime
    bodies: Bodies | None = None

    @property
    def checked(self) -> dict[str, int]:
        return self.pr.checked()

    @property
    def quiet(self) -> bool:
        """Nothing to review: the PR changes no config file, and every finding is one the base
        already had (`comment-when: changed` creates no comment then)."""
        return self.pr.quiet

    def document(self) -> PlanDocumentJSON:
        """The plan document (`rivet-ci-plan/1` with the pull request's keys)."""
        pr = self.pr
        return pull_request_document(
            pr.document_base, pr.document_head, pr.diff, self.gate, base_sha=pr.base_sha,
            head_sha=pr.head_sha,
            changed_files=pr.changed_files_json, generated_at=self.timestamp,
            version=__version__, review=pr.review_json,
            waiver_problems=pr.waiver_problems)

    def document_text(self) -> str:
        return dump_json(self.document())

    def document_chunks(self, layout: Layout = INDENTED, *,
                        coverage: bool = False) -> Iterator[bytes]:
        """`document_text` as UTF-8 chunks ending with line breaks, built export by export
        (what `output.sink.write_chunks` writes); `layout`: `document.COMPACT` for the
        action's compact `plan.json`; `coverage`: add the action's `coverage` key."""
        pr = self.pr
        covered: CoverageJSON | None = None
        if coverage:
            covered = {"scope": "review", "commit": pr.head_sha,
                       "config_files": pr.review_json["head_files"],
                       "resolved_plans": layout.resolved_plans}
        return pull_request_document_chunks(
            pr.document_base, pr.document_head, pr.diff, self.gate, base_sha=pr.base_sha,
            head_sha=pr.head_sha,
            changed_files=pr.changed_files_json, generated_at=self.timestamp,
            version=__version__, review=pr.review_json, layout=layout, coverage=covered,
            waiver_problems=pr.waiver_problems)


def plan_both_sides(sides: Sides, facts: FactsSource) -> PullRequestPlan:
    """Plan base and head against one facts source (the step that decides what is planned)."""
    return plan_pull_request(
        sides.repo, base=sides.base, head=sides.head, globs=sides.globs, facts=facts.facts,
        origin=facts.origin, environ=facts.environ, facts_problems=facts.problems,
        collect=facts.collect, add_history=facts.add_history, worktree=sides.worktree,
        source_environ=facts.source_environ, waivers_file=sides.waivers_file,
        cache=sides.cache, full_plans=sides.full_plans, withheld=facts.withheld)


def review_pull_request(
    sides: Sides, facts: FactsSource, policy: GatePolicy, *,
    clock: Callable[[], datetime], timestamp: Callable[[], str], redact: Redactor,
    comment: CommentOptions | None = None,
    extra_findings: Callable[[], Sequence[Finding]] = tuple,
    on_document: Callable[[Report], None] | None = None,
) -> Report:
    """Plan both sides, gate, and (with `comment`) render the comment bodies.

    `extra_findings`, read once planning is done (planning may read trusted files), join the
    diff's findings before the gate — e.g. a PR changing the files that grade it. The bodies
    are rendered from a view the redactor has scrubbed; the caller still writes them through
    its output boundary.
    """
    pr = plan_both_sides(sides, facts)
    extra = extra_findings()
    if extra:
        pr = dataclasses.replace(pr, diff=pr.diff.model_copy(update={
            "findings": (*pr.diff.findings, *extra)}))
    gate = evaluate_gate(pr.diff, policy, pr.waivers)
    report = Report(pr=pr, gate=gate, policy=policy, timestamp=timestamp(), now=clock())
    if on_document is not None:
        on_document(report)
    if comment is None:
        return report
    bodies = render_comments(reviewed(pr, gate), comment, timestamp=report.timestamp,
                             now=report.now, redact=redact, waiver_in_pr=policy.waiver_in_pr,
                             waivers_file=sides.waivers_file)
    return dataclasses.replace(report, bodies=bodies)
