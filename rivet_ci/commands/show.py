"""`rivet-ci show`: print a plan document — ours, or rivet's own `rivet plan --format json`.

Teams that already run rivet can hand rivet-ci their artifacts: a single export object, an array
of them, or an old artifact without `integrity` / `campaign` / `strategy_rationale`. `--format
json` converts any of them to a `rivet-ci-plan/1` document.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rivet_ci import __version__
from rivet_ci.commands.context import Context
from rivet_ci.core.formats.document import PlanReadError, dump_json, plan_document, read_plan_text
from rivet_ci.core.formats.pretty import problem_lines, render_pretty
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("show", help="print a plan JSON (rivet-ci's or rivet's own)",
                       description="Read a rivet-ci plan document or a rivet plan artifact and "
                                   "print it as Priority / Campaign blocks or as rivet-ci-plan/1.")
    p.add_argument("plan", type=Path, metavar="PLAN_JSON",
                   help="a rivet-ci plan.json, or rivet's `rivet plan --format json` output")
    p.add_argument("--format", choices=("pretty", "json", "markdown"), default="pretty",
                   help="what `plan` prints (pretty), a rivet-ci-plan/1 document (json), or "
                        "the pull-request comment re-rendered from an action's or "
                        "`rivet-ci diff --output` plan.json (markdown) (default: pretty)")


def _load_json(text: str) -> Any:
    """One JSON value, or — rivet before 0.10 printed a multi-export plan as objects back to
    back — several concatenated objects, read as an array."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise
    decoder = json.JSONDecoder()
    items: list[Any] = []
    index = 0
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index == len(text):
            break
        value, index = decoder.raw_decode(text, index)
        items.append(value)
    return items


def run(args: argparse.Namespace, ctx: Context) -> int:
    path: Path = args.plan if args.plan.is_absolute() else ctx.cwd / args.plan
    try:
        text = path.read_text(encoding="utf-8")
        # Our document is validated from the text against its one definition (the field path
        # of every mismatch is named); rivet's artifacts are read from the decoded data.
        data = _load_json(text)
        plan = read_plan_text(text, path=args.plan.as_posix(), data=data)
    except OSError as exc:
        raise UsageError(f"cannot read {args.plan}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{args.plan}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except PlanReadError as exc:
        raise UsageError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read {args.plan}: not UTF-8 ({exc.reason} at byte "
                         f"{exc.start})") from None
    except RecursionError:
        raise UsageError(f"{args.plan}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits, a lone surrogate
        raise UsageError(f"{args.plan}: invalid JSON: {exc}") from None
    if args.format == "markdown":
        ctx.stdout.write(_markdown(text, args.plan.as_posix(), ctx))
    elif args.format == "json":
        ctx.stdout.write(dump_json(plan_document(plan, generated_at=ctx.timestamp(),
                                                 version=__version__)))
    else:
        ctx.stdout.write(render_pretty(plan))
        for line in problem_lines(plan):  # as `plan` does: problems once, on stderr
            ctx.stderr.write(line + "\n")
    return OK


def _markdown(text: str, name: str, ctx: Context) -> str:
    """The comment a pull request's plan document records, rendered as the action rendered it
    (`rivet_ci.core.formats.diff_reader`: validated, read back into the review's models)."""
    from rivet_ci.adapters.runners import comment_limit, links_from_environ
    from rivet_ci.core.formats.diff_reader import read_pull_request
    from rivet_ci.core.formats.plan_format import DocumentError
    from rivet_ci.output.render import code
    from rivet_ci.review.comment import CommentOptions, comment_from_record

    try:
        record = read_pull_request(text, path=name)
    except DocumentError as exc:
        raise UsageError(str(exc)) from None
    links = links_from_environ(ctx.environ, record.head_sha)
    options = CommentOptions(gate_id="default", comment_limit=comment_limit(ctx.environ),
                             links=lambda _sha: links, hint=str(code(name)))
    return comment_from_record(record, options, redact=ctx.redact).comment
