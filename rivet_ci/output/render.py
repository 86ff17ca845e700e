"""Rendering the comment with Jinja2, and keeping it within GitHub's size limit.

Templates live in the top-level `templates/` folder and ship inside the wheel (as
`rivet_ci/templates`). A team may pass its own template folder: its `comment.md.j2` can extend
ours as `base/comment.md.j2` and override any block. Config text is untrusted, so everything
interpolated is escaped by one rule (`finalize`, below); fragments rivet-ci builds itself are
`Md` and pass through.
"""

from __future__ import annotations

import contextlib
import functools
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import jinja2
import jinja2.sandbox
from jinja2.exceptions import SecurityError
from jinja2.loaders import split_template_path

from rivet_ci.core.comment.picture import CampaignPicture, mermaid_text
from rivet_ci.core.comment.view import (
    FIT_ORDER,
    ISOLATION_WORDS,
    ChangedRow,
    CommentView,
    WhyPart,
    isolation_words,
)
from rivet_ci.core.common.limits import CODE_SPAN_MAX_FENCE, STEP_SUMMARY_LIMIT
from rivet_ci.core.common.text import people_numbers, plural
from rivet_ci.errors import UsageError
from rivet_ci.output.sink import UntrustedPathError, read_nofollow

COMMENT_TEMPLATE = "comment.md.j2"


def builtin_template_dir() -> Path:
    package = Path(__file__).resolve().parent.parent  # rivet_ci/
    packaged = package / "templates"  # inside the wheel / image
    if packaged.is_dir():
        return packaged
    return package.parent / "templates"  # a source checkout


# -- one escaping rule ----------------------------------------------------------------------------
#
# Every `{{ value }}` a template interpolates goes through `finalize`, which escapes it as Markdown
# text: inert in a paragraph, a list item and a table cell alike. The only way around it is `Md`,
# which only the filters below construct, each building its fragment from escaped parts (code
# spans with a safe fence, links to URLs rivet-ci built). Templates cannot make an `Md` from a
# string themselves, so config text never reaches the comment as markup.

class Md(str):
    """A Markdown fragment rivet-ci built itself: `finalize` passes it through unescaped."""

    __slots__ = ()


# Backslash escapes (CommonMark: any ASCII punctuation) for everything that starts markup, a
# table cell, an autolink (`www.`, `http://`) or math (`$`); entities for HTML; a zero-width
# space after `@` and `#` keeps mentions, team mentions and issue references from being linked
# by GitHub.
_TEXT_ESCAPES = str.maketrans({
    "\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]", "!": "\\!",
    "|": "\\|", "~": "\\~", ":": "\\:", ".": "\\.", "<": "&lt;", ">": "&gt;", "&": "&amp;",
    "$": "\\$", "@": "@\u200b", "#": "#\u200b", "\r": " ", "\n": " ", "\t": " ", "\x00": "",
})
_SAFE_TEXT = re.compile(r"[A-Za-z0-9 ,/%;?'\"()+=^{}\u00a0-\uffff-]*")  # nothing to escape


@functools.lru_cache(maxsize=8192)
def _escape_text(text: str) -> str:
    return text.translate(_TEXT_ESCAPES).replace("\u2028", " ").replace("\u2029", " ")


def md_text(value: object) -> str:
    """`value` as inert Markdown text (safe in paragraphs, lists and table cells)."""
    text = str(value)
    if _SAFE_TEXT.fullmatch(text) and "\u2028" not in text and "\u2029" not in text:
        return text
    return _escape_text(text)


def finalize(value: object) -> object:
    if isinstance(value, Md):
        return value
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return md_text(value)


_CONTROL = re.compile(r"[\r\n\t\u2028\u2029\x00]")


def _code_span(value: object, *, cell: bool) -> Md:
    text = str(value)
    if _CONTROL.search(text):
        text = re.sub(r"[\r\n\t\u2028\u2029]+", " ", text).replace("\x00", "")
    if "`" not in text:  # the common case: a single backtick fence
        if cell:
            text = text.replace("|", "\\|")
        pad = "" if text.strip() else " "
        return Md(f"`{pad}{text}{pad}`")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    if longest >= CODE_SPAN_MAX_FENCE:  # no fence can hold it: escaped text instead
        return Md(md_text(text))
    if cell:  # GFM splits a table row at `|` even inside code spans unless escaped
        text = text.replace("|", "\\|")
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return Md(f"{fence}{pad}{text}{pad}{fence}")


_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def inline_code(value: object) -> Md:
    """Text whose `quoted` parts are code (a config error, a setup message): each backtick
    pair becomes a code span built by `code` (a fence longer than any backtick run inside),
    the rest is escaped text — so no backtick is ever shown and no markup can start."""
    text = str(value)
    if "`" not in text:
        return Md(md_text(text))
    out, end = [], 0
    for match in _CODE_SPAN.finditer(text):
        out.append(md_text(text[end:match.start()]))
        out.append(code(match.group(2)))
        end = match.end()
    out.append(md_text(text[end:]))
    return Md("".join(out))


def code_block(value: object, info: str = "") -> Md:
    """A fenced code block (its own paragraph), fenced longer than any backtick run in it."""
    text = re.sub(r"[\r\u2028\u2029]", "", str(value)).replace("\x00", "")
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return Md(f"{fence}{re.sub(r'[^A-Za-z0-9_-]', '', info)}\n{text}\n{fence}")


def mermaid(picture: object) -> Md:
    """The campaign picture as a ```mermaid block. Only a `CampaignPicture` is accepted: its
    labels are escaped as it is written (`core/comment/picture.mermaid_text`), and it holds no
    backtick, so the fence cannot be closed from inside."""
    if not isinstance(picture, CampaignPicture):
        return Md("")
    text = mermaid_text(picture).replace("`", "#96;")
    return Md(f"```mermaid\n{text}\n```")


def code(value: object) -> Md:
    """A code span for a list item or paragraph, whatever backticks `value` holds."""
    return _code_span(value, cell=False)


def cell_code(value: object) -> Md:
    """A code span inside a table cell."""
    return _code_span(value, cell=True)


_SAFE_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::\d+)?/[A-Za-z0-9/._~%#!$&'*+,;=:@-]*")


def link(label: object, url: object) -> Md:
    """`[label](url)` for a URL rivet-ci built (see review_comment.blob_link); the label is
    escaped unless it is already a fragment, and a URL that is not plain http(s) is dropped."""
    text = label if isinstance(label, Md) else Md(md_text(label))
    if not isinstance(url, str) or not _SAFE_URL.fullmatch(url) or "(" in url or ")" in url:
        return text
    return Md(f"[{text}]({url})")


NBSP = "\u00a0"  # keeps `76 → 22 (−54)` on one line in a narrow table column


def arrow(before: object, after: object) -> Md:
    if before is None:
        return Md("—" if after is None else md_text(after))
    if after is None or before == after:
        return Md(md_text(before))
    return Md(f"{md_text(before)}{NBSP}→{NBSP}{md_text(after)}")


def signed(value: int) -> str:
    return f"+{value:,}" if value > 0 else f"−{-value:,}" if value < 0 else "±0"


def score_change(row: ChangedRow) -> Md:
    if row.score_base is None:
        return Md(f"**{row.score_head}**{NBSP}new")
    if row.status == "not-planned":
        return Md(f"{row.score_base}{NBSP}→{NBSP}?")
    if row.score_head is None:
        return Md(f"~~{row.score_base}~~{NBSP}removed")
    if row.delta == 0:
        return Md(str(row.score_head))
    return Md(f"{row.score_base}{NBSP}→{NBSP}**{row.score_head}**{NBSP}"
              f"({signed(row.delta or 0)})")


def why(parts: Sequence[WhyPart], *, cell: bool = True,
        cache: RenderCache | None = None) -> Md:
    """A row's why: `+weak_cursor −strong_cursor`, `chunk windows 48 → 192`, `🔒 runs alone
    on replica_a` (with `cache`: each why object rendered once per rendering)."""
    return cache.why(parts, cell=cell) if cache is not None else _why(parts, cell=cell)


def _config_value(value: str | None, *, name: bool, span: Callable[[object], Md]) -> str:
    if value is None:
        return "none"
    return span(value) if name else md_text(value)


def _why(parts: Sequence[WhyPart], *, cell: bool) -> Md:
    span = cell_code if cell else code
    out = []
    config = [p for p in parts if p.kind == "config"]
    if config:  # what changed in the config first, then its effect
        out.append(Md(", ".join(
            f"{md_text(p.text)} {_config_value(p.before, name=p.name, span=span)}{NBSP}→{NBSP}"
            f"{_config_value(p.after, name=p.name, span=span)}" for p in config)
            + (" ·" if len(config) < len(parts) else "")))
    for part in parts:
        if part.kind == "config":
            continue
        if part.kind == "broken":
            out.append(Md(f"not planned: {md_text(part.text)} in "
                          f"{link(span(part.before), part.url)}"))
        elif part.kind == "added":
            out.append(link(span(f"+{part.text}"), part.url))
        elif part.kind == "removed":
            out.append(link(span(f"−{part.text}"), part.url))
        elif part.kind in ISOLATION_WORDS:  # `unknown`: beside exports its file keeps unplanned
            out.append(isolation(part.kind, part.text, cell=cell))
        elif part.kind == "detail":
            out.append(Md(f"{md_text(part.text)} {md_text(part.before)} → "
                          f"{md_text(part.after)}"))
        else:
            out.append(Md(md_text(part.text)))
    return Md(" ".join(out) if out else "—")


def isolation(kind: object, name: object = None, *, cell: bool = False) -> Md:
    """The comment's one wording of an isolation change, `kind` of `ISOLATION_WORDS`
    (core/comment/view.py): 🔒 runs alone on `replica_a`, the group's (or file's) name a code
    span; without a name, "its source group" (the legend). In a template:
    `{{ "isolation" | isolation(group) }}`."""
    if not isinstance(kind, str) or kind not in ISOLATION_WORDS:
        raise jinja2.TemplateRuntimeError(
            f"isolation: {kind!r} is none of {', '.join(ISOLATION_WORDS)}")
    return Md(isolation_words(kind, None if name is None else str(name),
                              name_as=cell_code if cell else code, text_as=md_text))


def plural_filter(count: int, singular: str, plural_form: str | None = None) -> Md:
    return Md(md_text(plural(count, singular, plural_form)))


def names(values: Sequence[object], *, limit: int = 5, total: int | None = None) -> Md:
    """`a`, `b` and 3 more — code spans, cut after `limit` (`total`: how many there are in
    all, when `values` is already a cut list)."""
    shown = [code(v) for v in list(values)[:limit]]
    rest = (len(values) if total is None else total) - len(shown)
    return Md(", ".join(shown) + (f" and {rest:,} more" if rest > 0 else ""))


def _cache(context: jinja2.runtime.Context) -> RenderCache | None:
    cache = context.get("render_cache")
    return cache if isinstance(cache, RenderCache) else None


@jinja2.pass_context
def _table_row_filter(context: jinja2.runtime.Context, r: ChangedRow) -> Md:
    cache = _cache(context)
    return cache.table_row(r) if cache is not None else table_row(r)


@jinja2.pass_context
def _details_filter(context: jinja2.runtime.Context, r: ChangedRow) -> Md:
    cache = _cache(context)
    return cache.details_entry(r) if cache is not None else details_entry(r)


@jinja2.pass_context
def _why_filter(context: jinja2.runtime.Context, parts: Sequence[WhyPart], *,
                cell: bool = True) -> Md:
    return why(parts, cell=cell, cache=_cache(context))


class RenderCache:
    """What one rendering of the comment computes once — from one view, for every output it
    is rendered into (the comment, its short form, the job summary) and every budget tried:
    each row's Markdown, its details entry and each why's. Keyed by the object (rows are shared
    by every `CommentView.with_budget` copy, whys by rows changed alike); owned by the one
    rendering that creates it, so nothing is shared between renderings by object identity."""

    def __init__(self) -> None:
        self._rows: dict[int, tuple[ChangedRow, Md]] = {}
        self._details: dict[int, tuple[ChangedRow, Md]] = {}
        self._whys: dict[tuple[int, bool], tuple[Sequence[WhyPart], Md]] = {}

    def table_row(self, r: ChangedRow) -> Md:
        hit = self._rows.get(id(r))
        if hit is None or hit[0] is not r:
            hit = self._rows[id(r)] = (r, table_row(r, self))
        return hit[1]

    def details_entry(self, r: ChangedRow) -> Md:
        hit = self._details.get(id(r))
        if hit is None or hit[0] is not r:
            hit = self._details[id(r)] = (r, details_entry(r, self))
        return hit[1]

    def why(self, parts: Sequence[WhyPart], *, cell: bool) -> Md:
        hit = self._whys.get((id(parts), cell))
        if hit is None or hit[0] is not parts:
            hit = self._whys[(id(parts), cell)] = (parts, _why(parts, cell=cell))
        return hit[1]


def table_row(r: ChangedRow, cache: RenderCache | None = None) -> Md:
    """One row of the changes table (measured per row to choose how many fit)."""
    mark = f"❌{NBSP}" if r.blocking else f"✔️{NBSP}" if r.waived else ""
    return Md(f"| {mark}{link(cell_code(r.export_name), r.url)} | {score_change(r)} | "
              f"{arrow(r.class_base, r.class_head)} | {arrow(r.cost_base, r.cost_head)} | "
              f"{arrow(r.wave_base, r.wave_head)} | {why(r.why, cache=cache)} |")


def details_entry(r: ChangedRow, cache: RenderCache | None = None) -> Md:
    """One export's entry in the "Reasons per export" section."""
    lines = [f"**{link(code(r.export_name), r.url)}** — {why(r.why, cell=False, cache=cache)}",
             ""]
    # (the kinds in the why above link to the scoring rules; these are plain code)
    lines += [f"- {code(reason.kind)} {md_text(people_numbers(reason.message))}"
              for reason in r.reasons]
    return Md("\n".join(lines))


_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")

FILTERS: dict[str, Callable[..., Any]] = {
    "code": code, "cell_code": cell_code, "link": link, "arrow": arrow,
    "score_change": score_change, "why": _why_filter, "plural": plural_filter, "names": names,
    "signed": signed, "table_row": _table_row_filter, "details_entry": _details_filter,
    "inline_code": inline_code, "code_block": code_block, "mermaid": mermaid,
    "isolation": isolation,
}


# -- limits on user templates (docs/security.md) ------------------------------------------------
RENDER_DEADLINE_S = 10.0  # per rendering of the comment, the built-in template included
MAX_RENDER_CHARS = 8 * STEP_SUMMARY_LIMIT  # a template producing more is stopped
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_SEQUENCE = 1_000_000  # longest string/list `*` may build, largest number a filter takes
_HUGE_WIDTH = re.compile(r"\d{7,}")


class TemplateLimitError(UsageError):
    """A template exceeded the render deadline or a sandbox limit."""


class _NoSymlinkLoader(jinja2.BaseLoader):
    """Templates from one directory: regular files only, never through a symlink or `..`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get_source(self, environment: jinja2.Environment,  # noqa: ARG002 (Jinja's loader)
                   template: str) -> tuple[str, str, Callable[[], bool]]:
        pieces = split_template_path(template)  # refuses `..` and absolute escapes
        path = self.root.joinpath(*pieces)
        try:
            data = read_nofollow(path, self.root, limit=MAX_TEMPLATE_BYTES)
        except UntrustedPathError as exc:  # not "not found": no other loader may stand in
            raise jinja2.TemplateError(f"template {template!r}: {exc}") from None
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
        # range() and the methods of strings and lists that size their result by an argument
        # (`ljust`, `center`, `zfill`, `format` widths...).
        # (the sandbox hands out `str.format` wrapped: the string is on the wrapped method)
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)
        if __obj is range or isinstance(owner, str | bytes | list):
            if any(_too_big(a) for a in (*args, *kwargs.values())):
                raise SecurityError(f"a number over {MAX_SEQUENCE:,} passed to a call")
            if isinstance(owner, str) and _HUGE_WIDTH.search(owner):
                raise SecurityError("a format width over 6 digits")
        return super().call(__context, __obj, *args, **kwargs)



def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` refusing numeric arguments over MAX_SEQUENCE (`center(10**9)` and friends)."""
    first = 2 if getattr(function, "jinja_pass_arg", None) is not None else 1  # after the value

    @functools.wraps(function)  # keeps Jinja's pass_context/pass_environment markers
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if any(_too_big(a) for a in (*args[first:], *kwargs.values())):
            raise SecurityError(f"filter {name!r}: a number over {MAX_SEQUENCE:,}")
        return function(*args, **kwargs)

    return bounded


class _TimeoutError(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the block after `seconds` (SIGALRM, main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 (a signal handler)
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
        autoescape=False, keep_trailing_newline=True, finalize=finalize,
    )
    if user:  # Jinja's own filters bounded; ours (FILTERS) take view data and build no sizes
        env.filters = {name: _bounded_filter(name, f) for name, f in env.filters.items()}
    env.filters.update(FILTERS)
    return env


def render_comment(view: CommentView, env: jinja2.Environment,
                   cache: RenderCache | None = None) -> str:
    started = time.monotonic()
    # Reviewed opt-outs: the marker and digest lines are built by core/marker.py and
    # core/since.py (base64 payload), the hint by review_comment.py from code spans.
    context = {"view": view, "marker": Md(view.marker), "digest": Md(view.digest),
               "render_cache": cache, "hint": Md(view.full_report_hint)}
    try:
        with _deadline(RENDER_DEADLINE_S):
            chunks, size = [], 0
            for chunk in env.get_template(COMMENT_TEMPLATE).generate(**context):
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
    except (MemoryError, OverflowError) as exc:  # the sandbox's range() cap raises the latter
        raise TemplateLimitError(f"the comment template exceeded a limit: {exc}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"comment template {exc.filename or exc.name}:{exc.lineno}: "
                         f"{exc.message}") from None
    except jinja2.TemplateError as exc:  # e.g. a user template naming a field that is not there
        raise UsageError(f"cannot render the comment template: {exc}") from None
    # Template blocks are easier to read with generous whitespace; Markdown needs one blank line.
    return _BLANK_RUNS.sub("\n\n", text).strip() + "\n"


def fit_rows(fixed: int, lengths: Sequence[int], limit: int) -> int:
    """How many rows fit after `fixed` characters (rows are kept in order)."""
    used, count = fixed, 0
    for length in lengths:
        if used + length > limit:
            break
        used += length
        count += 1
    return count


class CommentTooLongError(TemplateLimitError):
    """The comment is over its limit with every part that may go left out (a template that
    writes that much whatever the view holds)."""


def render_within_limit(
    view: CommentView, env: jinja2.Environment, limit: int, *,
    max_rows: int | None = None, cache: RenderCache | None = None,
    lengths: Sequence[int] | None = None, details: bool = True,
) -> tuple[str, CommentView]:
    """Render within `limit` characters, leaving out whole parts — never cutting a text.

    Rows are built once (the view) and measured once (`lengths`, reusable across limits). In
    order: everything, with the folded reasons per export, when it fits; else the rows that
    fit without them, chosen from their measured lengths; and when even no row at all is over
    the limit, the parts of `FIT_ORDER` go, least important first, each cut item by item
    (`fit_parts`), and the comment says what it left out. Raises `CommentTooLongError` when
    the template writes more than `limit` with all of that gone (never the built-in one: what
    always stays is bounded, core/comment/shown.py).
    """
    cap = len(view.rows) if max_rows is None else min(max_rows, len(view.rows))
    cache = cache or RenderCache()
    lengths = row_lengths(view, cache) if lengths is None else lengths
    with_details = view.with_budget(cap, True)
    # Rows and their details must fit with room to spare, else details go without rendering.
    needed = (sum(len(cache.details_entry(r)) + 2 for r in with_details.rows)
              if details and sum(lengths[:cap]) < limit else limit)
    if details and sum(lengths[:cap]) + needed < limit:
        body = render_comment(with_details, env, cache)
        if len(body) <= limit:
            return body, with_details
    bare = render_comment(view.with_budget(0, False), env, cache)
    if len(bare) > limit:
        view, bare = fit_parts(view, env, limit, cache)
    # Rows without their details: measure one row's share of `lengths` from the table alone.
    keep = fit_rows(len(bare) + 200, lengths[:cap], limit)
    chosen = view.with_budget(min(keep, cap), False)
    body = render_comment(chosen, env, cache)
    while len(body) > limit and chosen.rows:  # the estimate was short (never in practice)
        chosen = view.with_budget(len(chosen.rows) * 9 // 10, False)
        body = render_comment(chosen, env, cache)
    return body, chosen


def fit_parts(view: CommentView, env: jinja2.Environment, limit: int,
              cache: RenderCache) -> tuple[CommentView, str]:
    """`view` (and its body without rows) with the parts of `FIT_ORDER` cut, first to last,
    until the body is within `limit`: each part keeps as many of its first items as fit (a
    binary search over renderings of the row-less comment), or goes whole."""
    def bare(candidate: CommentView) -> str:
        return render_comment(candidate.with_budget(0, False), env, cache)

    body = bare(view)
    for part in FIT_ORDER:
        size = view.size(part)
        if not size:
            continue
        without = view.trimmed(part, 0)
        shorter = bare(without)
        if len(shorter) > limit:  # not enough: all of it goes, and the next part too
            view, body = without, shorter
            continue
        low, high = 0, size - 1  # `low` items fit; more than `high` do not
        found = (without, shorter)
        while low < high:
            middle = (low + high + 1) // 2
            candidate = view.trimmed(part, middle)
            text = bare(candidate)
            if len(text) <= limit:
                low, found = middle, (candidate, text)
            else:
                high = middle - 1
        return found
    raise CommentTooLongError(
        f"the comment template writes {len(body):,} characters with every section that may go "
        f"left out, over the limit of {limit:,}")


def row_lengths(view: CommentView, cache: RenderCache) -> list[int]:
    """The rendered length of each table row (with its newline), measured once per view."""
    return [len(cache.table_row(r)) + 1 for r in view.rows]
