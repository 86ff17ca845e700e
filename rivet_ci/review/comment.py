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
from datetime import datetime, timedelta
from pathlib import Path

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
from rivet_ci.core.common.limits import STEP_SUMMARY_LIMIT
from rivet_ci.core.common.patterns import COMMIT_SHA
from rivet_ci.core.gate.diff import PlanDiff
from rivet_ci.core.gate.policy import GateResult
from rivet_ci.core.gate.waivers import DEFAULT_WAIVERS_FILE, WAIVABLE_KINDS, waiver_comment
from rivet_ci.core.plan.planner import Plan
from rivet_ci.output.redaction import Redactor
from rivet_ci.output.render import (
    RowCache,
    code,
    link,
    render_within_limit,
    row_lengths,
    template_environment,
)
from rivet_ci.review.pull_request import PullRequestPlan

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
            COMMIT_SHA.fullmatch(action_ref) or _RELEASE_REF.fullmatch(action_ref)):
        return action_ref
    return f"v{version}" if version in RELEASED_VERSIONS else "main"


def rules_url(ref: str | None = None) -> str:
    """The scoring rules of the running version (`docs_ref`)."""
    return RULES_URL.format(repository=DOCS_REPOSITORY, ref=ref or docs_ref())


@dataclass(frozen=True)
class Bodies:
    comment: str
    short: str
    summary: str
    view: CommentView


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
    pr: PullRequestPlan, gate: GateResult, options: CommentOptions, *, timestamp: str,
    now: datetime, redact: Redactor | None = None, waiver_in_pr: str = "block",
    waivers_file: str | None = None,
) -> Bodies:
    """Every body. With `redact`, the view is scrubbed before anything is escaped (a secret is
    masked while still plain) and the digest's labels before they are compressed; the caller
    still writes the bodies through its output boundary."""
    previous_body = options.previous_body()
    since = (since_last_push(read_digest(previous_body), pr.head_sha, pr.diff,
                             [c for c in pr.head.configs if c.path in pr.diff.unchanged_files])
             if previous_body else None)
    view = build_comment_view(pr.diff, gate, ViewOptions(
        gate_id=options.gate_id, marker=make_marker(options.gate_id, pr.head_sha, timestamp),
        base_sha=pr.base_sha, head_sha=pr.head_sha,
        facts=facts_description(pr.head.facts, now, max_age=options.facts_max_age),
        run_url=options.run_url,
        digest=make_digest(pr.head_sha, pr.diff, clean=redact or str, since=since), since=since,
        link=options.links(pr.head_sha), rules_url=rules_url(options.docs_at),
        waiver_hints=waiver_hints(gate),
        full_report_hint=options.hint or report_hint(options.run_url), waiver_in_pr=waiver_in_pr,
        checked=pr.checked(), waiver_problems=tuple(p.render() for p in pr.waiver_problems),
        waivers_file=waivers_file or DEFAULT_WAIVERS_FILE, head=pr.head, quiet=pr.quiet))
    if redact is not None:
        view = redact.scrub(view)
    env = (_builtin_environment() if options.template_dir is None
           and options.template_files is None
           else template_environment(options.template_dir, files=options.template_files))
    cache = RowCache()
    lengths = row_lengths(view, cache)
    cap = TOP_ROWS_LARGE if view.large else None
    # A large PR's comment leads with the summary and grouped causes; its top rows' reasons
    # are in the job summary with every other row.
    comment, _ = render_within_limit(view, env, options.comment_limit, max_rows=cap,
                                     cache=cache, lengths=lengths, details=not view.large)
    short, _ = render_within_limit(view, env, SHORT_COMMENT_LIMIT, max_rows=cap, cache=cache,
                                   lengths=lengths, details=not view.large)
    summary_view = view.model_copy(update={
        "full_report_hint": options.summary_hint or f"{code('plan.json')}"})
    summary, _ = render_within_limit(summary_view, env, STEP_SUMMARY_LIMIT, cache=cache,
                                     lengths=lengths)
    return Bodies(comment=comment, short=short, summary=summary, view=view)


def waiver_hints(gate: GateResult) -> dict[int, str]:
    """The waiver comment to paste, for each blocking finding a waiver can accept."""
    return {id(f): waiver_comment(f) for f in gate.blocking
            if f.kind in WAIVABLE_KINDS and f.export_name}


def comment_from_document(
    diff: PlanDiff, gate: GateResult, head: Plan, *, base_sha: str, head_sha: str,
    timestamp: str, facts_text: str, comment_limit: int, gate_id: str = "default",
    links: LinkFor | None = None, hint: str | None = None,
) -> str:
    """The comment of a pull request re-rendered from its `plan.json` (`rivet-ci show
    --format markdown`): the same view and template, without "since your last push" (the
    previous comment is not in the document). Within `comment_limit`, like the action's."""
    view = build_comment_view(diff, gate, ViewOptions(
        gate_id=gate_id, marker=make_marker(gate_id, head_sha, timestamp),
        base_sha=base_sha, head_sha=head_sha, facts=facts_text, link=links,
        rules_url=rules_url(), waiver_hints=waiver_hints(gate),
        full_report_hint=hint or f"{code('plan.json')}", head=head))
    cache = RowCache()
    body, _ = render_within_limit(view, _builtin_environment(), comment_limit,
                                  max_rows=TOP_ROWS_LARGE if view.large else None, cache=cache,
                                  details=not view.large)
    return body
