"""The pull-request comment, rendered once for every place it goes (shell, used by `action` and
`diff`): the comment (within the forge's limit, `CommentOptions.comment_limit`: 65,536
characters on GitHub), its short fallback (16,000) and the job summary (1 MB).

The view is built once with every changed row, each row is measured once, and each output keeps
the rows that fit its budget. Links point at the YAML line at the head commit, as the caller's
link builder makes them (the forge's: `adapters/github/forge.blob_linker` on GitHub).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from rivet_ci import __version__
from rivet_ci.core.comment.marker import make_marker
from rivet_ci.core.comment.since import make_digest, read_digest, since_last_push
from rivet_ci.core.comment.view import (
    TOP_ROWS_LARGE,
    CommentView,
    LinkFor,
    ViewOptions,
    build_comment_view,
    facts_description,
)
from rivet_ci.core.common.fast_model import replace
from rivet_ci.core.common.limits import STEP_SUMMARY_LIMIT
from rivet_ci.core.common.patterns import COMMIT_SHA
from rivet_ci.core.gate.diff import PlanDiff
from rivet_ci.core.gate.policy import GateResult
from rivet_ci.core.gate.waivers import DEFAULT_WAIVERS_FILE, WAIVABLE_KINDS, waiver_comment
from rivet_ci.core.plan.planner import ConfigPlan, Plan
from rivet_ci.output.redaction import Redactor
from rivet_ci.output.render import (
    CommentTooLongError,
    RenderCache,
    code,
    link,
    render_within_limit,
    row_lengths,
    template_environment,
)
from rivet_ci.review.pull_request import PullRequestPlan

if TYPE_CHECKING:  # reading a plan document back imports its definition (plan_format): not here
    from rivet_ci.core.formats.diff_reader import PullRequestRecord

SHORT_COMMENT_LIMIT = 16_000  # posted when the forge rejects the full comment as too long
# The comment's link to the scoring rules: rivet-ci's own repository, at a ref that exists.
DOCS_REPOSITORY = "rivet-ci/rivet-ci"
RULES_URL = "https://github.com/{repository}/blob/{ref}/docs/scoring-rules.md"
# The versions released as a git tag `vX.Y.Z` (the release workflow refuses to tag a version
# not listed here, so each one's tag exists once it is published).
RELEASED_VERSIONS: frozenset[str] = frozenset()
_RELEASE_REF = re.compile(r"v[0-9]+(?:\.[0-9]+){0,2}")


def docs_ref(action_repository: str | None = None, action_ref: str | None = None, *,
             version: str = __version__) -> str:
    """The ref the comment's doc links point at: the ref the workflow runs rivet-ci's action
    from (`GITHUB_ACTION_REPOSITORY` / `GITHUB_ACTION_REF`: a full commit sha or a `vX[.Y[.Z]]`
    tag the runner fetched, so it exists), else this version's tag once it is released, else
    the default branch."""
    if (action_repository or "").lower() == DOCS_REPOSITORY and action_ref and (
            is_docs_ref(action_ref)):
        return action_ref
    return f"v{version}" if version in RELEASED_VERSIONS else "main"


def is_docs_ref(ref: str) -> bool:
    """Whether `ref` names a ref of rivet-ci's repository that exists once it is used: a full
    commit sha, or a release tag `vX[.Y[.Z]]`."""
    return bool(COMMIT_SHA.fullmatch(ref) or _RELEASE_REF.fullmatch(ref))


def rules_url(ref: str | None = None) -> str:
    """The scoring rules of the running version (`docs_ref`)."""
    return RULES_URL.format(repository=DOCS_REPOSITORY, ref=ref or docs_ref())


@dataclass(frozen=True)
class Bodies:
    comment: str
    short: str
    summary: str
    view: CommentView


@dataclass(frozen=True)
class Reviewed:
    """What a pull request's comment is rendered from: its review, as this run planned it
    (`reviewed`) or as its plan.json records it (`reviewed_record`: `rivet-ci post` and
    `rivet-ci show` render the comment the action would have from it)."""

    base_sha: str
    head_sha: str
    diff: PlanDiff
    gate: GateResult
    head: Plan  # the head of the review: what the picture draws; its facts
    # The head's exports the diff does not list one by one (for "since your last push").
    unchanged: tuple[ConfigPlan, ...]
    checked: Mapping[str, int]
    waiver_problems: tuple[str, ...]
    quiet: bool


def reviewed(pr: PullRequestPlan, gate: GateResult) -> Reviewed:
    return Reviewed(
        base_sha=pr.base_sha, head_sha=pr.head_sha, diff=pr.diff, gate=gate, head=pr.head,
        unchanged=tuple(c for c in pr.head.configs if c.path in pr.diff.unchanged_files),
        checked=pr.checked(), waiver_problems=tuple(p.render() for p in pr.waiver_problems),
        quiet=pr.quiet)


def reviewed_record(record: PullRequestRecord) -> Reviewed:
    """The review a plan document records. Its diff lists only the changed exports: every
    other export of the review's head counts as unchanged (as the review compared it)."""
    listed = {(c.config_path, c.export_name) for c in record.diff.exports}
    unchanged = tuple(
        replace(c, {"exports": tuple(e for e in c.exports
                                     if (c.path, e.export_name) not in listed)})
        for c in record.head.configs)
    return Reviewed(
        base_sha=record.base_sha, head_sha=record.head_sha, diff=record.diff, gate=record.gate,
        head=record.head, unchanged=unchanged, checked=record.checked(),
        waiver_problems=tuple(p.render() for p in record.waiver_problems), quiet=record.quiet)


@functools.cache
def _builtin_environment() -> jinja2.Environment:
    """The built-in template's environment, compiled once per process (a user template dir
    gets a fresh sandboxed one every time)."""
    return template_environment(None)


def report_hint(run_url: str | None) -> str:
    """Where the action's full report is, as a Markdown fragment."""
    summary = str(link("job summary", run_url)) if run_url else "job summary"
    return f"the {summary} and {code('plan.json')}"


def local_hint(output: Path | None) -> str:
    """Where `rivet-ci diff`'s full report is: the --output file, or how to get one."""
    if output is not None:
        return f"{code(output.as_posix())} (every changed export)"
    return f"{code('rivet-ci diff --format json')} (every changed export)"


@dataclass(frozen=True)
class CommentOptions:
    """How the comment is rendered (one object for every caller: the action, `rivet-ci diff`).

    `links` gives the line-link builder for the head commit; `previous_body` is read (once)
    just before rendering: the body of this gate's comment from an earlier run."""

    gate_id: str
    comment_limit: int  # the most characters the forge takes in a comment (`Forge.comment_limit`)
    run_url: str | None = None
    links: Callable[[str], LinkFor | None] = lambda _sha: None
    template_dir: Path | None = None
    template_files: Mapping[str, bytes] | None = None
    hint: str | None = None  # where the full report is (default: `report_hint(run_url)`)
    summary_hint: str | None = None  # the same, in the job summary (default: plan.json)
    previous_body: Callable[[], str | None] = lambda: None
    # The ref of rivet-ci's repository the doc links point at (`docs_ref`).
    docs_at: str | None = None
    # Facts captured longer ago than this are shown as stale (None: never).
    facts_max_age: timedelta | None = None


def render_comments(
    review: Reviewed, options: CommentOptions, *, timestamp: str, now: datetime,
    redact: Redactor, waiver_in_pr: str = "block", waivers_file: str | None = None,
) -> Bodies:
    """Every body. The view is built once, every value redacted by `redact` and bounded before
    anything is escaped (`core/comment/shown.py`), the digest's labels redacted before they
    are compressed; the caller still writes the bodies through its output boundary."""
    previous_body = options.previous_body()
    diff = review.diff
    since = (since_last_push(read_digest(previous_body), review.head_sha, diff,
                             review.unchanged)
             if previous_body else None)
    view = build_comment_view(diff, review.gate, ViewOptions(
        gate_id=options.gate_id, marker=make_marker(options.gate_id, review.head_sha, timestamp),
        base_sha=review.base_sha, head_sha=review.head_sha,
        facts=facts_description(review.head.facts, now, max_age=options.facts_max_age),
        mask=redact, run_url=options.run_url,
        digest=make_digest(review.head_sha, diff, clean=redact, since=since), since=since,
        link=options.links(review.head_sha), rules_url=rules_url(options.docs_at),
        waiver_hints=waiver_hints(review.gate),
        full_report_hint=options.hint or report_hint(options.run_url), waiver_in_pr=waiver_in_pr,
        checked=review.checked, waiver_problems=review.waiver_problems,
        waivers_file=waivers_file or DEFAULT_WAIVERS_FILE, head=review.head,
        quiet=review.quiet))
    env = (_builtin_environment() if options.template_dir is None
           and options.template_files is None
           else template_environment(options.template_dir, files=options.template_files))
    cache = RenderCache()  # this rendering's: every body below reuses its rows
    lengths = row_lengths(view, cache)
    cap = TOP_ROWS_LARGE if view.large else None
    # A large PR's comment leads with the summary and grouped causes; its top rows' reasons
    # are in the job summary with every other row.
    comment, _ = render_within_limit(view, env, options.comment_limit, max_rows=cap,
                                     cache=cache, lengths=lengths, details=not view.large)
    try:
        short, _ = render_within_limit(view, env, SHORT_COMMENT_LIMIT, max_rows=cap,
                                       cache=cache, lengths=lengths, details=not view.large)
    except CommentTooLongError:  # a template too long for the fallback: no shorter form
        short = comment
    summary_view = view.model_copy(update={
        "full_report_hint": options.summary_hint or f"{code('plan.json')}"})
    summary, _ = render_within_limit(summary_view, env, STEP_SUMMARY_LIMIT, cache=cache,
                                     lengths=lengths)
    return Bodies(comment=comment, short=short, summary=summary, view=view)


def waiver_hints(gate: GateResult) -> dict[int, str]:
    """The waiver comment to paste, for each blocking finding a waiver can accept."""
    return {id(f): waiver_comment(f) for f in gate.blocking
            if f.kind in WAIVABLE_KINDS and f.export_name}


def comment_from_record(
    record: PullRequestRecord, options: CommentOptions, *, redact: Redactor,
    waiver_in_pr: str = "block", waivers_file: str | None = None,
    facts_at: datetime | None = None,
) -> Bodies:
    """The comment a pull request's plan.json records, rendered as the action rendered it: the
    same view and template, marked with the review's time (`generated_at`), the facts' age as
    it was then (`facts_at`: default that time)."""
    stamp = record.generated_at
    at = facts_at or datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return render_comments(reviewed_record(record), options, timestamp=stamp, now=at,
                           redact=redact, waiver_in_pr=waiver_in_pr, waivers_file=waivers_file)
