"""Rendering the comment with Jinja2, and keeping it within GitHub's size limit.

Templates live in the top-level `templates/` folder and ship inside the wheel (as
`rivet_ci/templates`). A team may pass its own template folder: its `comment.md.j2` can extend
ours as `base/comment.md.j2` and override any block. Config text is untrusted, so everything
interpolated is escaped for Markdown/HTML and `@` mentions are defused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox

from rivet_ci.core.comment_view import ChangedRow, CommentView
from rivet_ci.errors import UsageError

COMMENT_TEMPLATE = "comment.md.j2"
GITHUB_COMMENT_LIMIT = 65_536
STEP_SUMMARY_LIMIT = 1_000_000  # GitHub allows 1 MiB per step summary
# Tried in order until the comment fits: (rows shown, reasons shown).
SHRINK_STEPS: tuple[tuple[int | None, bool], ...] = (
    (None, True), (None, False), (500, False), (200, False), (100, False), (50, False),
    (20, False), (0, False),
)


def builtin_template_dir() -> Path:
    packaged = Path(__file__).parent / "templates"  # inside the wheel / image
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "templates"  # a source checkout


def md_inline(value: object) -> str:
    text = str(value)
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("@", "&#64;"),
                      ("\r", " "), ("\n", " ")):
        text = text.replace(raw, safe)
    return text


def md_cell(value: object) -> str:
    return md_inline(value).replace("|", "\\|")


def md_code(value: object) -> str:
    return str(value).replace("`", "'").replace("\n", " ")


def arrow(before: object, after: object) -> str:
    if before is None:
        return "—" if after is None else str(after)
    if after is None or before == after:
        return str(before)
    return f"{before} → {after}"


def score_change(row: ChangedRow) -> str:
    if row.score_base is None:
        return f"new: **{row.score_head}**"
    if row.score_head is None:
        return f"removed (was {row.score_base})"
    if row.delta == 0:
        return str(row.score_head)
    return f"{row.score_base} → **{row.score_head}** ({row.delta:+d})"


_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")

FILTERS: dict[str, Callable[..., Any]] = {
    "md_inline": md_inline, "md_cell": md_cell, "md_code": md_code, "arrow": arrow,
    "score_change": score_change,
}


def template_environment(user_dir: Path | None = None) -> jinja2.Environment:
    builtin = jinja2.FileSystemLoader(builtin_template_dir())
    loaders: list[jinja2.BaseLoader] = []
    if user_dir is not None:
        if not user_dir.is_dir():  # else a typo silently falls back to the built-in template
            raise UsageError(f"template directory {user_dir} does not exist")
        loaders.append(jinja2.FileSystemLoader(user_dir))
    loaders += [jinja2.PrefixLoader({"base": builtin}), builtin]
    # A user template may come from the pull request's own checkout: render it sandboxed, so a
    # template can lay out the view model but never reach Python internals.
    kind = jinja2.sandbox.SandboxedEnvironment if user_dir is not None else jinja2.Environment
    env = kind(
        loader=jinja2.ChoiceLoader(loaders), undefined=jinja2.StrictUndefined,
        autoescape=False, keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    return env


def render_comment(view: CommentView, env: jinja2.Environment) -> str:
    try:
        text = env.get_template(COMMENT_TEMPLATE).render(view=view)
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"comment template {exc.filename or exc.name}:{exc.lineno}: "
                         f"{exc.message}") from None
    except jinja2.TemplateError as exc:  # e.g. a user template naming a field that is not there
        raise UsageError(f"cannot render the comment template: {exc}") from None
    # Template blocks are easier to read with generous whitespace; Markdown needs one blank line.
    return _BLANK_RUNS.sub("\n\n", text).strip() + "\n"


def render_within_limit(
    make_view: Callable[[int | None, bool], CommentView], env: jinja2.Environment,
    limit: int = GITHUB_COMMENT_LIMIT,
) -> tuple[str, CommentView]:
    """Render with fewer details and rows until the body fits `limit` characters."""
    body, view = "", make_view(0, False)
    for max_rows, details in SHRINK_STEPS:
        view = make_view(max_rows, details)
        body = render_comment(view, env)
        if len(body) <= limit:
            return body, view
    # Even the shortest form is too long (thousands of config errors): cut hard, keep the marker.
    note = "\n\n_…truncated: the full report is in the job summary and `plan.json`._\n"
    return body[: limit - len(note)] + note, view
