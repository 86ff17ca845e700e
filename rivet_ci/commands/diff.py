"""`rivet-ci diff`: plan base and head from git and print exactly what would be posted."""

from __future__ import annotations

import argparse
from pathlib import Path

from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.plan_cache import open_cache
from rivet_ci.adapters.runners import comment_limit, links_from_environ
from rivet_ci.commands.context import Context
from rivet_ci.commands.options import add_param_argument, parse_params, warn_unused_params
from rivet_ci.commands.plan import facts_errors, load_facts_arg
from rivet_ci.commands.progress import SlowNotice
from rivet_ci.core.comment.view import checked_text
from rivet_ci.core.gate.policy import PolicyError, parse_policy
from rivet_ci.core.gate.waivers import DEFAULT_WAIVERS_FILE
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import GATE_FAILED, OK, USAGE_ERROR
from rivet_ci.output.sink import write_chunks
from rivet_ci.review import FactsSource, Report, Sides, review_pull_request
from rivet_ci.review.comment import CommentOptions, local_hint
from rivet_ci.review.pull_request import DEFAULT_CONFIG_GLOBS


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("diff", help="plan base and head from git; print the PR comment",
                       description="Plan the configs at --base and --head (from their merge "
                                   "base, like a pull request) and print the comment rivet-ci "
                                   "would post — without any GitHub access.")
    p.add_argument("--base", required=True, metavar="REF", help="base commit, branch or tag")
    p.add_argument("--head", default=None, metavar="REF",
                   help="head commit (default: the working tree when it has uncommitted "
                        "changes to matching files, else HEAD)")
    p.add_argument("--configs", action="append", metavar="GLOB",
                   help="config globs (repeatable; default: rivet/**/*.yaml and "
                        "**/*.rivet.yaml, as the action)")
    p.add_argument("--facts", type=Path, metavar="FILE",
                   help="facts file for both sides (default: none — low confidence)")
    p.add_argument("--fail-on", action="append", metavar="RULE", dest="fail_on",
                   help="gate policy rule (repeatable): new-isolation, new-warning, "
                        "score-drop:N, wave-later, low-confidence; added to the always-on "
                        "config-error and no-configs; `none` alone turns everything off "
                        "(default: config-error, no-configs)")
    p.add_argument("--waivers", default=DEFAULT_WAIVERS_FILE, metavar="PATH",
                   help="waivers file, read from the base revision (default: "
                        f"{DEFAULT_WAIVERS_FILE}; absent means none)")
    p.add_argument("--waiver-in-pr", choices=("block", "allow"), default="block",
                   help="whether a waiver this change adds itself applies (default: block — "
                        "reported, not applied)")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown",
                   help="print the PR comment (markdown) or the plan document with the diff "
                        "and the gate (json) (default: markdown)")
    p.add_argument("--output", type=Path, metavar="FILE",
                   help="also write plan.json here (default: none)")
    p.add_argument("--repo", type=Path, default=None, metavar="DIR",
                   help="the git repository (default: the current directory)")
    p.add_argument("--template-dir", type=Path, metavar="DIR",
                   help="folder with a comment.md.j2 that may extend base/comment.md.j2 "
                        "(default: the built-in template)")
    p.add_argument("--id", default="default", dest="gate_id",
                   help="gate id for the marker (default: default)")
    p.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                   help="reuse config plans stored here by earlier runs, keyed by git blob id "
                        "(and store new ones); see docs/action.md, \"Caching plans\" "
                        "(default: no cache)")
    add_param_argument(p)


def run(args: argparse.Namespace, ctx: Context) -> int:
    try:
        policy = parse_policy(args.fail_on or [])
    except PolicyError as exc:
        raise UsageError(str(exc)) from None
    root = args.repo or ctx.cwd
    repo = GitRepo(root)
    repo.check_repository()
    facts, facts_problems, origin = load_facts_arg(args.facts, ctx, strict=True)
    globs = tuple(args.configs or DEFAULT_CONFIG_GLOBS)
    worktree = False
    if args.head is None:
        dirty = repo.worktree_changes(globs)
        if dirty:
            worktree = True
            ctx.stderr.write(
                f"rivet-ci: planning the working tree: {len(dirty)} matching file(s) have "
                f"uncommitted changes ({', '.join(dirty[:5])}"
                f"{', ...' if len(dirty) > 5 else ''}); pass --head HEAD to plan the last "
                "commit instead\n")
    params = parse_params(args.params)
    cache, refused = open_cache(None if args.cache_dir is None else ctx.cwd / args.cache_dir,
                                repo)
    if refused:
        ctx.stderr.write(f"rivet-ci: warning: {refused}\n")

    def write_document(report: Report) -> None:
        if cache is not None:
            ctx.stderr.write(f"rivet-ci: plan cache {cache.directory}: "
                             f"{cache.stats.summary()}\n")
        warn_unused_params(params, report.pr.placeholders, ctx.stderr)
        if args.format == "json" or args.output:
            # Streamed export by export, each chunk redacted once, to the file and/or stdout.
            write_chunks(ctx.cwd / args.output if args.output else None,
                         report.document_chunks(), ctx.redact, root=ctx.cwd,
                         stream=ctx.stdout if args.format == "json" else None)

    # A line on a terminal (or with RIVET_CI_PROGRESS=1) when planning takes over a second.
    notice = SlowNotice(ctx.stderr, "planning base and head",
                        enabled=ctx.interactive or ctx.environ.get("RIVET_CI_PROGRESS") == "1")
    try:
        report = review_pull_request(
            Sides(repo, args.base, args.head or "HEAD", globs, worktree=worktree,
                  waivers_file=args.waivers or None, cache=cache,
                  full_plans=args.format == "json" or args.output is not None),
            FactsSource(facts, origin, facts_problems, environ={**ctx.environ, **(params or {})}),
            policy.model_copy(update={"waiver_in_pr": args.waiver_in_pr}),
            clock=ctx.now, timestamp=ctx.timestamp, redact=ctx.redact,
            comment=CommentOptions(
                # (the comment as the forge would take it: its limit, its links)
                gate_id=args.gate_id, comment_limit=comment_limit(ctx.environ),
                links=lambda sha: links_from_environ(ctx.environ, sha),
                template_dir=args.template_dir, hint=local_hint(args.output),
            ) if args.format == "markdown" else None,
            on_document=write_document)
    finally:
        notice.close()
    pr, gate = report.pr, report.gate
    if report.bodies is not None:
        ctx.stdout.write(report.bodies.comment)
    ctx.stderr.write(f"rivet-ci: {checked_text(pr.checked())}"
                     f"{' (working tree)' if worktree else ''}; gate "
                     f"{'passed' if gate.passed else 'failed'} (fail-on: {gate.policy})\n")
    for path in pr.skipped_facts:
        ctx.stderr.write(f"rivet-ci: {path} is a facts document, not planned as a config\n")
    errors = facts_errors(facts_problems)
    for problem in errors:
        ctx.stderr.write(f"rivet-ci: error: {problem.render()}\n")
    if errors:
        return USAGE_ERROR
    return OK if gate.passed else GATE_FAILED
