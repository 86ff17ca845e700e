"""Rendering the comment with Jinja2, and keeping it within GitHub's size limit.

Templates live in the top-level `templates/` folder and ship inside the wheel (as
`rivet_ci/templates`). A team may pass its own template folder: its `comment.md.j2` can extend
ours as `base/comment.md.j2` and override any block. Config text is untrusted, so everything
interpolated is escaped for Markdown/HTML and `@` mentions are defused.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

import jinja2
import jinja2.sandbox
from jinja2.exceptions import SecurityError
from jinja2.loaders import split_template_path

from rivet_ci.core.comment_view import ChangedRow, CommentView
from rivet_ci.errors import UsageError
from rivet_ci.trust import UntrustedPathError, read_nofollow

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


# -- limits on user templates (docs/security.md) ------------------------------------------------
RENDER_DEADLINE_S = 10.0  # per rendering of the comment, the built-in template included
MAX_RENDER_CHARS = 8 * STEP_SUMMARY_LIMIT  # a template producing more is stopped
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_SEQUENCE = 1_000_000  # longest string/list `*` may build, largest number a filter takes


class TemplateLimitError(UsageError):
    """A template exceeded the render deadline or a sandbox limit."""


class _NoSymlinkLoader(jinja2.BaseLoader):
    """Templates from one directory: regular files only, never through a symlink or `..`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get_source(self, environment: jinja2.Environment,
                   template: str) -> tuple[str, str, Callable[[], bool]]:
        pieces = split_template_path(template)  # refuses `..` and absolute escapes
        path = self.root.joinpath(*pieces)
        try:
            data = read_nofollow(path, self.root, limit=MAX_TEMPLATE_BYTES)
        except UntrustedPathError as exc:
            raise jinja2.TemplateNotFound(f"{template} ({exc})") from None
        except OSError:
            raise jinja2.TemplateNotFound(template) from None
        return data.decode("utf-8", "replace"), str(path), lambda: True


def _too_big(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SEQUENCE


class _BoundedSandbox(jinja2.sandbox.SandboxedEnvironment):
    """Jinja's sandbox, plus bounds on `*`, `**` and numeric filter arguments."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any,
                   right: Any) -> Any:
        if operator == "**" and (_too_big(left) or not isinstance(right, int) or right > 64):
            raise SecurityError("`**` is limited to exponents up to 64")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if (isinstance(seq, str | list | tuple) and isinstance(times, int)
                        and len(seq) * times > MAX_SEQUENCE):
                    raise SecurityError(
                        f"`*` would build a sequence over {MAX_SEQUENCE:,} items")
            if _too_big(left) and _too_big(right):
                raise SecurityError("`*` of two large numbers")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any,  # noqa: N805
             *args: Any, **kwargs: Any) -> Any:
        if any(_too_big(a) for a in (*args, *kwargs.values())):
            raise SecurityError(f"a number over {MAX_SEQUENCE:,} passed to a call")
        return super().call(__context, __obj, *args, **kwargs)

    def call_filter(self, name: str, value: Any, args: Any = None,  # noqa: PLR0917 (Jinja's)
                    kwargs: Any = None, context: Any = None, eval_ctx: Any = None) -> Any:
        if any(_too_big(a) for a in (*(args or ()), *(kwargs or {}).values())):
            raise SecurityError(
                f"filter {name!r}: a number over {MAX_SEQUENCE:,}")
        return super().call_filter(name, value, args, kwargs, context, eval_ctx)


class _TimeoutError(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the block after `seconds` (SIGALRM, main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise _TimeoutError

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def template_environment(user_dir: Path | None = None, *,
                         files: Mapping[str, bytes] | None = None) -> jinja2.Environment:
    """The comment's Jinja environment: the built-in templates, overridden by `user_dir` (a
    directory on disk) or `files` (name -> content, e.g. a template dir at the base revision).

    User templates are sandboxed (:class:`_BoundedSandbox`) and loaded without following
    symlinks or leaving their directory.
    """
    builtin = jinja2.FileSystemLoader(builtin_template_dir())
    loaders: list[jinja2.BaseLoader] = []
    if files is not None:
        loaders.append(jinja2.DictLoader({
            name: data.decode("utf-8", "replace") for name, data in files.items()
            if len(data) <= MAX_TEMPLATE_BYTES}))
    elif user_dir is not None:
        if not user_dir.is_dir():  # else a typo silently falls back to the built-in template
            raise UsageError(f"template directory {user_dir} does not exist")
        loaders.append(_NoSymlinkLoader(user_dir))
    loaders += [jinja2.PrefixLoader({"base": builtin}), builtin]
    # A user template may come from the pull request's own checkout: render it sandboxed, so a
    # template can lay out the view model but never reach Python internals.
    user = user_dir is not None or files is not None
    kind = _BoundedSandbox if user else jinja2.Environment
    env = kind(
        loader=jinja2.ChoiceLoader(loaders), undefined=jinja2.StrictUndefined,
        autoescape=False, keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    return env


def render_comment(view: CommentView, env: jinja2.Environment) -> str:
    started = time.monotonic()
    try:
        with _deadline(RENDER_DEADLINE_S):
            chunks, size = [], 0
            for chunk in env.get_template(COMMENT_TEMPLATE).generate(view=view):
                size += len(chunk)
                if size > MAX_RENDER_CHARS:
                    raise TemplateLimitError(
                        f"the comment template produced over {MAX_RENDER_CHARS:,} characters")
                if time.monotonic() - started > RENDER_DEADLINE_S:
                    raise _TimeoutError
                chunks.append(chunk)
            text = "".join(chunks)
    except _TimeoutError:
        raise TemplateLimitError(f"the comment template did not finish within "
                                 f"{RENDER_DEADLINE_S:.0f} s") from None
    except RecursionError:
        raise TemplateLimitError("the comment template recurses too deeply (a macro calling "
                                 "itself without end?)") from None
    except MemoryError:
        raise TemplateLimitError("the comment template ran out of memory") from None
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
